/* A tiny XCTest-free harness for the Objective-C binding's tests: CHECK prints the failed
 * condition and counts it; main returns non-zero if any failed (77 = skipped, for ctest). */
#ifndef KESTREL_OBJC_TEST_H
#define KESTREL_OBJC_TEST_H

#import <KestrelObjC/KestrelObjC.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_io.h"

#if defined(GNUSTEP) && defined(NDEBUG)
/* NSDebug.h declares the allocation counters only without NDEBUG; gnustep-base always has them. */
GS_EXPORT BOOL GSDebugAllocationActive(BOOL active);
GS_EXPORT int GSDebugAllocationCount(Class c);
#endif

#define KS_TEST_SKIP 77
#define ASTRONAUT KS_SOURCE_DIR "/models/images/skimage_astronaut.png"

static int g_checks, g_failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        g_checks++;                                                                                \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            g_failures++;                                                                          \
        }                                                                                          \
    } while (0)

/* CHECK that also prints an NSError when the condition fails. */
#define CHECK_OK(cond, err)                                                                        \
    do {                                                                                           \
        g_checks++;                                                                                \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #cond,           \
                    (err) != nil ? [[(err) localizedDescription] UTF8String] : "no error");        \
            g_failures++;                                                                          \
        }                                                                                          \
    } while (0)

/* Loads a photo with the tools' decoder and wraps it without copying: the NSData takes over the
 * malloc'ed pixels (freeWhenDone) and the KSImage retains that NSData. Autoreleased. */
static inline KSImage *ks_test_load(const char *path) {
    ks_image_buf buf;
    char err[256];
    if (ks_image_load(path, 0, &buf, err, sizeof(err)) != KS_STATUS_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, err);
        return nil;
    }
    int bpp = buf.image.format == KS_PIXEL_FORMAT_RGBA  ? 4
              : buf.image.format == KS_PIXEL_FORMAT_RGB ? 3
                                                        : 1;
    NSUInteger size =
        (NSUInteger)buf.image.width_px * (NSUInteger)buf.image.height_px * (NSUInteger)bpp;
    NSData *data = [NSData dataWithBytesNoCopy:buf.pixels length:size freeWhenDone:YES];
    NSError *error = nil;
    KSImage *image = [[KSImage alloc] initWithData:data
                                            format:(KSPixelFormat)buf.image.format
                                             width:buf.image.width_px
                                            height:buf.image.height_px
                                             error:&error];
    if (image == nil) fprintf(stderr, "KSImage: %s\n", [[error localizedDescription] UTF8String]);
    return [image autorelease];
}

/* Points the tasks at the build's bundles unless KESTREL_MODELS_DIR is set; 0 if `bundle` is
 * there, else prints why and returns KS_TEST_SKIP. */
static inline int ks_test_models(const char *bundle) {
    if (getenv("KESTREL_MODELS_DIR") == NULL) [KSModels setDirectory:@KS_BUNDLES_DIR error:NULL];
    NSString *path = [[KSModels directory]
        stringByAppendingPathComponent:[NSString stringWithUTF8String:bundle]];
    if (![[NSFileManager defaultManager] fileExistsAtPath:path]) {
        fprintf(stderr,
                "SKIP: %s not found (build the ks_bundles target; models from "
                "scripts/setup)\n",
                [path UTF8String]);
        return KS_TEST_SKIP;
    }
    return 0;
}

static inline int ks_test_box_contains(KSBox b, float x, float y, float margin) {
    return x >= b.x - margin && x <= b.x + b.width + margin && y >= b.y - margin &&
           y <= b.y + b.height + margin;
}

#ifdef GNUSTEP
/* Live instances of GNUstep's concrete NSData classes (what the results' buffers are). */
static inline int ks_test_data_count(void) {
    const char *names[] = {"NSDataMalloc", "NSMutableDataMalloc", "NSDataStatic"};
    int total = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        Class c = NSClassFromString([NSString stringWithUTF8String:names[i]]);
        if (c != Nil) total += GSDebugAllocationCount(c);
    }
    return total;
}
#endif

/* Runs a shell command made with printf-style arguments (the build's tools: paths without
 * spaces or quotes); its exit status (0 = success), -1 when it could not run. Prints the command
 * when it fails. */
static inline int ks_test_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int ks_test_run(const char *fmt, ...) {
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(cmd)) return -1;
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* Reads a whole file into an autoreleased NSData (nil when it cannot). */
static inline NSData *ks_test_read(NSString *path) {
    return [NSData dataWithContentsOfFile:path];
}

static inline int ks_test_finish(const char *name) {
    fprintf(stderr, "%s: %d checks, %d failed\n", name, g_checks, g_failures);
    fflush(stderr);
    return g_failures == 0 ? 0 : 1;
}

#endif /* KESTREL_OBJC_TEST_H */
