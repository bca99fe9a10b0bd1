/* Objective-C binding: live swap of the task models (-swapModelAtPath:error:,
 * -swapModelAtPath:key:error:, modelGeneration) with the build's real bundles on the astronaut
 * photo: a face detector swapped from the short-range to the full-range bundle while another
 * thread keeps detecting, bad versions, an encrypted version (ks-protect, as test_encrypted), and
 * every task once. */
#import "objc_test.h"

#define WORK KS_OBJC_WORK_DIR "/swap"

static NSString *bundle(const char *name) {
    return
        [[KSModels directory] stringByAppendingPathComponent:[NSString stringWithUTF8String:name]];
}

/* Boxes and scores of one frame (bit-exact comparison); nil when the detect failed. */
static NSData *flat(NSArray *faces) {
    if (faces == nil) return nil;
    NSMutableData *out = [NSMutableData data];
    for (KSFace *face in faces) {
        KSBox b = face.box;
        float score = face.score;
        [out appendBytes:&b length:sizeof(b)];
        [out appendBytes:&score length:sizeof(score)];
    }
    return out;
}

static KSFaceDetector *detector(NSString *path) {
    KSFaceDetectorOptions *o = [[[KSFaceDetectorOptions alloc] init] autorelease];
    o.modelPath = path;
    NSError *error = nil;
    KSFaceDetector *det = [[KSFaceDetector alloc] initWithOptions:o error:&error];
    CHECK_OK(det != nil, error);
    return [det autorelease];
}

/* One frame of a fresh detector of `path` (retained by the autorelease pool). */
static NSData *detect_once(NSString *path, KSImage *photo) {
    NSError *error = nil;
    NSArray *faces = [detector(path) detectInImage:photo timestampUs:0 error:&error];
    CHECK_OK([faces count] == 1, error);
    return flat(faces);
}

static BOOL contains(NSError *error, NSString *text) {
    return error != nil && [[error localizedDescription] rangeOfString:text].location != NSNotFound;
}

/* The detect loop of another thread: runs until `stop`, keeping every frame's result. */
@interface DetectLoop : NSObject {
  @public
    KSFaceDetector *det;
    KSImage *photo;
    NSMutableArray *results; /* NSData per frame, guarded by lock */
    NSLock *lock;
    int stop, frames, failures, done; /* __atomic */
}
@end

@implementation DetectLoop
- (void)run:(id)unused {
    NSAutoreleasePool *outer = [[NSAutoreleasePool alloc] init];
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
        NSError *error = nil;
        NSData *r = flat([det detectInImage:photo timestampUs:0 error:&error]);
        if (r == nil) {
            fprintf(stderr, "detect failed: %s\n", [[error localizedDescription] UTF8String]);
            __atomic_add_fetch(&failures, 1, __ATOMIC_ACQ_REL);
        } else {
            [lock lock];
            [results addObject:r];
            [lock unlock];
        }
        __atomic_add_fetch(&frames, 1, __ATOMIC_ACQ_REL);
        [pool drain];
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    [outer drain];
}
@end

/* Waits (up to 60 s) until the loop ran `target` frames or failed. */
static void wait_frames(DetectLoop *loop, int target) {
    for (int i = 0; i < 30000; i++) {
        if (__atomic_load_n(&loop->frames, __ATOMIC_ACQUIRE) >= target ||
            __atomic_load_n(&loop->failures, __ATOMIC_ACQUIRE) > 0)
            return;
        [NSThread sleepForTimeInterval:0.002];
    }
    CHECK(!"timed out waiting for frames");
}

static void test_swap_while_detecting(KSImage *photo) {
    NSString *shortRange = bundle("face_detector_short.ksb");
    NSString *fullRange = bundle("face_detector_full.ksb");
    NSData *wantShort = detect_once(shortRange, photo);
    NSData *wantFull = detect_once(fullRange, photo);
    CHECK(wantShort != nil && wantFull != nil && ![wantShort isEqualToData:wantFull]);

    DetectLoop *loop = [[DetectLoop alloc] init];
    loop->det = [detector(shortRange) retain];
    loop->photo = [photo retain];
    loop->results = [[NSMutableArray alloc] init];
    loop->lock = [[NSLock alloc] init];
    if (loop->det == nil) return;
    CHECK(loop->det.modelGeneration == 0);
    [NSThread detachNewThreadSelector:@selector(run:) toTarget:loop withObject:nil];
    wait_frames(loop, 2);
    NSError *error = nil;
    CHECK_OK([loop->det swapModelAtPath:fullRange error:&error], error); /* while it detects */
    wait_frames(loop, __atomic_load_n(&loop->frames, __ATOMIC_ACQUIRE) + 3);
    __atomic_store_n(&loop->stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 30000 && !__atomic_load_n(&loop->done, __ATOMIC_ACQUIRE); i++)
        [NSThread sleepForTimeInterval:0.002];
    CHECK(__atomic_load_n(&loop->done, __ATOMIC_ACQUIRE));
    CHECK(loop->failures == 0);
    /* Every frame is one version's result; once the new one came, the old never again. */
    BOOL switched = NO, mixed = NO, other = NO;
    for (NSData *r in loop->results) {
        BOOL isFull = [r isEqualToData:wantFull];
        other |= !isFull && ![r isEqualToData:wantShort];
        mixed |= switched && !isFull;
        switched |= isFull;
    }
    CHECK(!other && !mixed && switched);
    CHECK(loop->det.modelGeneration == 1);
    fprintf(stderr, "swap during %lu frames, generation %llu\n",
            (unsigned long)[loop->results count], (unsigned long long)loop->det.modelGeneration);
    [loop->det release];
    [loop->photo release];
    [loop->results release];
    [loop->lock release];
    [loop release];
}

static void test_bad_versions(KSImage *photo) {
    NSString *shortRange = bundle("face_detector_short.ksb");
    NSData *want = detect_once(shortRange, photo);
    KSFaceDetector *det = detector(shortRange);
    NSError *error = nil;
    NSString *missing = @WORK "/no_such_version.ksb";
    CHECK(![det swapModelAtPath:missing error:&error]);
    CHECK([error code] == KSErrorCodeIOError && contains(error, missing));
    fprintf(stderr, "expected error: %s\n", [[error localizedDescription] UTF8String]);
    error = nil;
    CHECK(![det swapModelAtPath:bundle("face_landmarker.ksb") error:&error]); /* another task's */
    CHECK(error != nil && contains(error, @"face detector bundle"));
    error = nil;
    NSData *shortKey = [NSData dataWithBytes:"12345" length:5];
    CHECK(![det swapModelAtPath:shortRange key:shortKey error:&error]);
    CHECK([error code] == KSErrorCodeInvalidArgument && contains(error, @"5 bytes"));
    error = nil;
    NSString *nilPath = nil;
    CHECK(![det swapModelAtPath:nilPath error:&error]);
    CHECK([error code] == KSErrorCodeInvalidArgument);
    CHECK(![det swapModelAtPath:missing error:NULL]); /* a NULL error pointer is fine */
    /* The detector runs its version on. */
    CHECK([flat([det detectInImage:photo timestampUs:0 error:&error]) isEqualToData:want]);
    CHECK(det.modelGeneration == 0);
}

static void test_encrypted_version(KSImage *photo) {
#ifdef KS_PROTECT_TOOL
    NSString *plain = bundle("ksm/face_detection_short_range.ksm");
    NSString *enc = @WORK "/fd.enc.ksm";
    CHECK(ks_test_run("%s keygen " WORK "/app.key && %s keygen " WORK "/other.key", KS_PROTECT_TOOL,
                      KS_PROTECT_TOOL) == 0);
    CHECK(ks_test_run("%s encrypt --key-file " WORK "/app.key %s %s", KS_PROTECT_TOOL,
                      [plain UTF8String], [enc UTF8String]) == 0);
    NSData *key = ks_test_read(@WORK "/app.key");
    NSData *other = ks_test_read(@WORK "/other.key");
    NSData *keyBefore = [NSData dataWithData:key];
    CHECK([key length] == KS_TASK_KEY_LENGTH && [other length] == KS_TASK_KEY_LENGTH);
    /* The .ksm replaces the model of the default bundle (face_detector_short.ksb). */
    NSError *error = nil;
    KSFaceDetector *det = [[KSFaceDetector alloc] initWithOptions:nil error:&error];
    CHECK_OK(det != nil, error);
    if (det == nil) return;
    NSData *before = flat([det detectInImage:photo timestampUs:0 error:&error]);
    CHECK(![det swapModelAtPath:enc error:&error]);
    CHECK([error code] == KSErrorCodeInvalidArgument && contains(error, @"needs its key"));
    error = nil;
    CHECK(![det swapModelAtPath:enc key:other error:&error]);
    CHECK([error code] == KSErrorCodeTampered && contains(error, enc));
    CHECK(det.modelGeneration == 0);
    error = nil;
    CHECK_OK([det swapModelAtPath:enc key:key error:&error], error);
    CHECK([key isEqualToData:keyBefore]); /* read, not changed */
    CHECK([flat([det detectInImage:photo timestampUs:0 error:&error]) isEqualToData:before]);
    CHECK(det.modelGeneration == 1);
    [det release];
#else
    (void)photo;
    fprintf(stderr, "encrypted swap skipped: ks-protect not built\n");
#endif
}

static void test_every_task(KSImage *photo) {
    NSError *error = nil;
    KSFaceLandmarker *fl = [[KSFaceLandmarker alloc] initWithOptions:nil error:&error];
    CHECK_OK(fl != nil, error);
    CHECK(![fl swapModelAtPath:bundle("face_detector_short.ksb") error:&error]);
    CHECK_OK([fl swapModelAtPath:bundle("face_landmarker.ksb") error:&error], error);
    CHECK([[fl detectInImage:photo timestampUs:0 error:&error] count] == 1);
    CHECK(fl.modelGeneration == 1);
    [fl release];

    KSPoseLandmarker *pl = [[KSPoseLandmarker alloc] initWithOptions:nil error:&error];
    CHECK_OK([pl swapModelAtPath:bundle("pose_landmarker_full.ksb") error:&error], error);
    CHECK_OK([pl detectInImage:photo timestampUs:0 error:&error] != nil, error);
    CHECK(pl.modelGeneration == 1);
    [pl release];

    KSHandLandmarker *hl = [[KSHandLandmarker alloc] initWithOptions:nil error:&error];
    CHECK_OK([hl swapModelAtPath:bundle("hand_landmarker_full.ksb") error:&error], error);
    CHECK_OK([hl detectInImage:photo timestampUs:0 error:&error] != nil, error);
    CHECK(hl.modelGeneration == 1);
    [hl release];

    KSSegmenter *seg = [[KSSegmenter alloc] initWithOptions:nil error:&error];
    CHECK_OK([seg swapModelAtPath:bundle("selfie_segmenter_landscape.ksb") error:&error], error);
    KSMask *mask = [seg segmentImage:photo timestampUs:0 error:&error];
    CHECK_OK(mask != nil && mask.width == photo.width, error);
    CHECK(seg.modelGeneration == 1);
    [seg release];

    KSImageClassifier *cls = [[KSImageClassifier alloc] initWithOptions:nil error:&error];
    CHECK_OK([cls swapModelAtPath:bundle("classifier_mobilenet_v2.ksb") error:&error], error);
    CHECK_OK([[cls classifyImage:photo timestampUs:0 error:&error] count] > 0, error);
    CHECK(cls.modelGeneration == 1);
    [cls release];

    KSObjectDetector *od = [[KSObjectDetector alloc] initWithOptions:nil error:&error];
    CHECK(od.modelGeneration == 0);
    CHECK_OK([od swapModelAtPath:bundle("object_detector_nanodet.ksb") error:&error], error);
    CHECK_OK([od detectInImage:photo timestampUs:0 error:&error] != nil, error);
    CHECK(od.modelGeneration == 1);
    [od release];
}

int main(void) {
    NSAutoreleasePool *outer = [[NSAutoreleasePool alloc] init];
#ifdef GNUSTEP
    GSDebugAllocationActive(YES);
#endif
    const char *needed[] = {"face_detector_short.ksb",
                            "face_detector_full.ksb",
                            "face_landmarker.ksb",
                            "pose_landmarker_full.ksb",
                            "hand_landmarker_full.ksb",
                            "selfie_segmenter_landscape.ksb",
                            "classifier_mobilenet_v2.ksb",
                            "object_detector_nanodet.ksb",
                            "ksm/face_detection_short_range.ksm"};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof(needed) / sizeof(needed[0]); i++)
        rc = ks_test_models(needed[i]);
    if (rc != 0) {
        [outer drain];
        return rc;
    }
    CHECK(ks_test_run("rm -rf " WORK " && mkdir -p " WORK) == 0);
    NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
    KSImage *photo = ks_test_load(ASTRONAUT);
    CHECK(photo != nil);
    if (photo != nil) {
        test_swap_while_detecting(photo);
        test_bad_versions(photo);
        test_encrypted_version(photo);
        test_every_task(photo);
    }
    [pool drain];
#ifdef GNUSTEP
    /* Every object made by the binding is gone once the pools are drained. */
    Class classes[] = {[KSImage class],          [KSFace class],
                       [KSFaceDetector class],   [KSFaceLandmarker class],
                       [KSPoseLandmarker class], [KSHandLandmarker class],
                       [KSSegmenter class],      [KSImageClassifier class],
                       [KSObjectDetector class], [KSFaceDetectorOptions class]};
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        int live = GSDebugAllocationCount(classes[i]);
        if (live != 0)
            fprintf(stderr, "leak: %d live %s\n", live, [NSStringFromClass(classes[i]) UTF8String]);
        CHECK(live == 0);
    }
#endif
    [outer drain];
    return ks_test_finish("objc_test_swap");
}
