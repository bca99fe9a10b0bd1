/* Objective-C binding: encrypted models (ks-protect) through KSTaskOptions.key and the key
 * provider, with the real face detector model encrypted in the setup by the build's ks-protect
 * (as algos/tests/run_vision_key.cmake does), on the astronaut photo. The block form of the
 * provider needs a compiler with blocks (clang on Apple): GNUstep's gcc runtime has none, so the
 * KSKeyProvider object form, which shares the native path, is what runs here; the block property
 * is compiled by objc_headers_arc. */
#import "objc_test.h"

#define WORK KS_OBJC_WORK_DIR "/encrypted"
#define PLAIN_MODEL "ksm/face_detection_short_range.ksm"

/* A KSKeyProvider that returns `key` (nil: none) and records the names it was asked for. */
@interface TestKeyProvider : NSObject <KSKeyProvider> {
  @public
    NSData *key;
    NSMutableArray *asked;
}
@end

@implementation TestKeyProvider
- (instancetype)initWithKey:(NSData *)k {
    self = [super init];
    if (self != nil) {
        key = [k retain];
        asked = [[NSMutableArray alloc] init];
    }
    return self;
}
- (void)dealloc {
    [key release];
    [asked release];
    [super dealloc];
}
- (NSData *)keyForEntryName:(NSString *)entryName {
    [asked addObject:entryName];
    return key != nil ? [NSData dataWithData:key] : nil; /* a fresh, autoreleased copy */
}
@end

/* The faces' boxes, scores and keypoints, flattened (for bit-exact comparison); nil on error. */
static NSData *detect(KSFaceDetectorOptions *options, KSImage *photo, NSError **error) {
    KSFaceDetector *det = [[KSFaceDetector alloc] initWithOptions:options error:error];
    if (det == nil) return nil;
    NSArray *faces = [det detectInImage:photo timestampUs:0 error:error];
    NSMutableData *out = [NSMutableData data];
    for (KSFace *face in faces) {
        KSBox b = face.box;
        float score = face.score;
        [out appendBytes:&b length:sizeof(b)];
        [out appendBytes:&score length:sizeof(score)];
        for (int k = 0; k < KS_FACE_NUM_KEYPOINTS; k++) {
            KSPoint2 p = [face keypoint:(KSFaceKeypoint)k];
            [out appendBytes:&p length:sizeof(p)];
        }
    }
    [det release];
    return faces != nil ? out : nil;
}

static BOOL contains(NSError *error, const char *text) {
    NSString *d = [error localizedDescription];
    return d != nil && strstr([d UTF8String], text) != NULL;
}

static void test_encrypted(KSImage *photo) {
    NSString *models = [KSModels directory];
    NSString *plain = [models stringByAppendingPathComponent:@PLAIN_MODEL];
    NSString *enc = @WORK "/fd.enc.ksm";
    CHECK(ks_test_run("rm -rf " WORK " && mkdir -p " WORK) == 0);
    CHECK(ks_test_run("%s keygen " WORK "/app.key && %s keygen " WORK "/other.key", KS_PROTECT_TOOL,
                      KS_PROTECT_TOOL) == 0);
    CHECK(ks_test_run("%s encrypt --key-file " WORK "/app.key %s %s", KS_PROTECT_TOOL,
                      [plain UTF8String], [enc UTF8String]) == 0);
    NSMutableData *key = [NSMutableData dataWithData:ks_test_read(@WORK "/app.key")];
    NSData *other = ks_test_read(@WORK "/other.key");
    CHECK([key length] == KS_TASK_KEY_LENGTH && [other length] == KS_TASK_KEY_LENGTH);
    NSData *keyBefore = [NSData dataWithData:key];
    NSError *error = nil;

    KSFaceDetectorOptions *opts = [[[KSFaceDetectorOptions alloc] init] autorelease];
    opts.modelPath = plain;
    NSData *want = detect(opts, photo, &error);
    CHECK_OK(want != nil && [want length] > 0, error);

    /* The key: identical results, bit for bit; the NSData is the caller's, untouched. */
    opts.modelPath = enc;
    opts.key = key;
    NSData *got = detect(opts, photo, &error);
    CHECK_OK(got != nil, error);
    CHECK([got isEqualToData:want]);
    CHECK([key isEqualToData:keyBefore]);
    KSFaceDetectorOptions *copy = [[opts copy] autorelease];
    CHECK(copy.key == opts.key); /* copies share the NSData, never copy its bytes */

    /* A plain model ignores the key. */
    opts.modelPath = plain;
    got = detect(opts, photo, &error);
    CHECK_OK(got != nil && [got isEqualToData:want], error);

    /* The provider object: asked once, with the model's name. */
    TestKeyProvider *provider = [[[TestKeyProvider alloc] initWithKey:key] autorelease];
    opts.modelPath = enc;
    opts.key = nil;
    opts.keyProviderObject = provider;
    got = detect(opts, photo, &error);
    CHECK_OK(got != nil && [got isEqualToData:want], error);
    CHECK([provider->asked count] == 1 && [[provider->asked objectAtIndex:0] isEqualToString:enc]);
    /* The key wins over the provider. */
    opts.key = key;
    got = detect(opts, photo, &error);
    CHECK_OK(got != nil && [got isEqualToData:want], error);
    CHECK([provider->asked count] == 1);

    /* A wrong key: Tampered, with the C message. */
    opts.key = other;
    error = nil;
    CHECK(detect(opts, photo, &error) == nil);
    CHECK(error != nil && [error code] == KSErrorCodeTampered && contains(error, "does not open"));
    opts.key = nil;
    TestKeyProvider *wrong = [[[TestKeyProvider alloc] initWithKey:other] autorelease];
    opts.keyProviderObject = wrong;
    error = nil;
    CHECK(detect(opts, photo, &error) == nil);
    CHECK(error != nil && [error code] == KSErrorCodeTampered);

    /* No key: InvalidArgument "needs its key"; a provider without one: "refused model". */
    opts.keyProviderObject = nil;
    error = nil;
    CHECK(detect(opts, photo, &error) == nil);
    CHECK(error != nil && [error code] == KSErrorCodeInvalidArgument &&
          contains(error, "needs its key"));
    TestKeyProvider *none = [[[TestKeyProvider alloc] initWithKey:nil] autorelease];
    opts.keyProviderObject = none;
    error = nil;
    CHECK(detect(opts, photo, &error) == nil);
    CHECK(error != nil && [error code] == KSErrorCodeInvalidArgument &&
          contains(error, "refused model"));
    /* Keys of the wrong size, from the options and from a provider. */
    TestKeyProvider *shortKey =
        [[[TestKeyProvider alloc] initWithKey:[NSData dataWithBytes:"0123456789abcdef"
                                                             length:16]] autorelease];
    opts.keyProviderObject = shortKey;
    error = nil;
    CHECK(detect(opts, photo, &error) == nil);
    CHECK(error != nil && [error code] == KSErrorCodeInvalidArgument &&
          contains(error, "16 bytes"));
    opts.keyProviderObject = nil;
    opts.key = [NSData dataWithBytes:"0123456789abcdef" length:16];
    error = nil;
    CHECK(detect(opts, photo, &error) == nil);
    CHECK(error != nil && [error code] == KSErrorCodeInvalidArgument &&
          contains(error, "16 bytes"));
    [key resetBytesInRange:NSMakeRange(0, [key length])]; /* the app wipes its key */
    CHECK(ks_test_run("rm -rf " WORK) == 0);
}

int main(void) {
#if !defined(KS_PROTECT_TOOL)
    fprintf(stderr, "SKIP: ks-protect is not built\n");
    return KS_TEST_SKIP;
#else
    NSAutoreleasePool *outer = [[NSAutoreleasePool alloc] init];
#ifdef GNUSTEP
    GSDebugAllocationActive(YES);
#endif
    int rc = ks_test_models("face_detector_short.ksb");
    if (rc == 0) rc = ks_test_models(PLAIN_MODEL);
    if (rc != 0) {
        [outer drain];
        return rc;
    }
    NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
    KSImage *photo = ks_test_load(ASTRONAUT);
    CHECK(photo != nil);
    if (photo != nil) test_encrypted(photo);
    [pool drain];
#ifdef GNUSTEP
    Class classes[] = {[KSFaceDetector class],
                       [KSFaceDetectorOptions class],
                       [TestKeyProvider class],
                       [KSFace class],
                       [KSImage class]};
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        int live = GSDebugAllocationCount(classes[i]);
        if (live != 0)
            fprintf(stderr, "leak: %d live %s\n", live, [NSStringFromClass(classes[i]) UTF8String]);
        CHECK(live == 0);
    }
#endif
    [outer drain];
    return ks_test_finish("objc_test_encrypted");
#endif
}
