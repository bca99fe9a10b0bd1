/* Objective-C binding: every task on the real astronaut photo (skimage), the engine classes and
 * the backend choice, errors, options copying, zero-copy images with strides, and no leaked
 * objects. Expected values follow the C tests (algos/tests/test_face.c, test_pose.c,
 * test_segment.c). */
#import "objc_test.h"

/* The astronaut's face (see algos/tests/test_face.c). */
#define FACE_CX 225.0f
#define FACE_CY 128.0f
#define FACE_TOL_PX 15.0f

static void test_face_detector(KSImage *photo) {
    NSError *error = nil;
    KSFaceDetector *det = [[KSFaceDetector alloc] initWithOptions:nil error:&error];
    CHECK_OK(det != nil, error);
    if (det == nil) return;
    NSArray *faces = [det detectInImage:photo timestampUs:0 error:&error];
    CHECK_OK(faces != nil, error);
    CHECK([faces count] == 1);
    if ([faces count] >= 1) {
        KSFace *face = [faces objectAtIndex:0];
        KSBox b = face.box;
        fprintf(stderr, "face: %s\n", [[face description] UTF8String]);
        CHECK(fabsf(b.x + b.width / 2 - FACE_CX) < FACE_TOL_PX);
        CHECK(fabsf(b.y + b.height / 2 - FACE_CY) < FACE_TOL_PX);
        CHECK(b.width > 50.0f && b.width < 200.0f);
        CHECK(face.score > 0.5f && face.score <= 1.0f);
        CHECK(face.trackingId == -1);
        for (int k = 0; k < KS_FACE_NUM_KEYPOINTS - 2; k++) { /* eyes, nose, mouth */
            KSPoint2 p = [face keypoint:(KSFaceKeypoint)k];
            CHECK(ks_test_box_contains(b, p.x, p.y, 0.0f));
        }
        KSPoint2 none = [face keypoint:(KSFaceKeypoint)99];
        CHECK(none.x == 0.0f && none.y == 0.0f);
    }
    [det release];
}

static void test_face_landmarker(KSImage *photo) {
    NSError *error = nil;
    KSFaceLandmarker *lm = [[KSFaceLandmarker alloc] initWithOptions:nil error:&error];
    CHECK_OK(lm != nil, error);
    if (lm == nil) return;
    NSArray *meshes = [lm detectInImage:photo timestampUs:0 error:&error];
    CHECK_OK(meshes != nil, error);
    CHECK([meshes count] == 1);
    if ([meshes count] >= 1) {
        KSFaceMesh *mesh = [meshes objectAtIndex:0];
        fprintf(stderr, "mesh: %s\n", [[mesh description] UTF8String]);
        KSBox b = mesh.box;
        CHECK(mesh.numLandmarks == 468);
        CHECK([mesh.landmarksData length] == 468 * sizeof(KSPoint3));
        CHECK(fabsf(b.x + b.width / 2 - FACE_CX) < FACE_TOL_PX);
        CHECK(fabsf(b.y + b.height / 2 - FACE_CY) < 2 * FACE_TOL_PX);
        /* Every landmark lies in a box around the face (landmarks of a frontal face fill it). */
        KSBox face = {FACE_CX - 80.0f, FACE_CY - 100.0f, 160.0f, 200.0f};
        int inside = 0;
        const KSPoint3 *pts = mesh.landmarks;
        for (NSUInteger i = 0; i < mesh.numLandmarks; i++)
            inside += ks_test_box_contains(face, pts[i].x, pts[i].y, 0.0f) &&
                      ks_test_box_contains(b, pts[i].x, pts[i].y, 1.0f);
        CHECK(inside == 468);
        KSPoint3 nose = [mesh landmarkAtIndex:1];
        CHECK(nose.x == pts[1].x && nose.y == pts[1].y);
        KSPoint3 none = [mesh landmarkAtIndex:468];
        CHECK(none.x == 0.0f && none.y == 0.0f && none.z == 0.0f);
        CHECK(fabsf(mesh.yawDegrees) < 45.0f && fabsf(mesh.pitchDegrees) < 45.0f &&
              fabsf(mesh.rollDegrees) < 45.0f);
        /* The face is in front of the camera (which looks down -z). */
        CHECK(mesh.poseMatrix[11] < 0.0f);
        CHECK(mesh.projectionMatrix[0] > 0.0f);
        KSFaceExpressions e = mesh.expressions;
        CHECK(e.mouthOpen >= 0.0f && e.mouthOpen <= 1.0f && e.smile >= 0.0f && e.smile <= 1.0f);
        CHECK(mesh.score > 0.5f);
    }
    [lm release];

    /* Irises: 478 points. */
    KSFaceLandmarkerOptions *opts = [[KSFaceLandmarkerOptions alloc] init];
    opts.refineLandmarks = YES;
    lm = [[KSFaceLandmarker alloc] initWithOptions:opts error:&error];
    [opts release];
    CHECK_OK(lm != nil, error);
    meshes = [lm detectInImage:photo timestampUs:0 error:&error];
    CHECK_OK([meshes count] == 1, error);
    if ([meshes count] == 1) CHECK([[meshes objectAtIndex:0] numLandmarks] == 478);
    [lm release];
}

static void test_pose(KSImage *photo) {
    NSError *error = nil;
    KSPoseLandmarkerOptions *opts = [[KSPoseLandmarkerOptions alloc] init];
    opts.outputSegmentation = YES;
    KSPoseLandmarker *pl = [[KSPoseLandmarker alloc] initWithOptions:opts error:&error];
    [opts release];
    CHECK_OK(pl != nil, error);
    if (pl == nil) return;
    NSArray *poses = [pl detectInImage:photo timestampUs:0 error:&error];
    CHECK_OK(poses != nil, error);
    CHECK([poses count] == 1);
    if ([poses count] >= 1) {
        KSPose *pose = [poses objectAtIndex:0];
        fprintf(stderr, "pose: %s\n", [[pose description] UTF8String]);
        CHECK(pose.numLandmarks == 33);
        KSBox b = pose.box;
        CHECK(b.width > 0.0f && b.height > 0.0f && b.x >= 0.0f && b.y >= 0.0f);
        CHECK(b.x + b.width <= photo.width + 0.01f && b.y + b.height <= photo.height + 0.01f);
        KSPoseLandmark nose = [pose landmarkAtIndex:0];
        CHECK(fabsf(nose.x - FACE_CX) < 30.0f && fabsf(nose.y - FACE_CY) < 40.0f);
        CHECK(nose.visibility > 0.5f);
        /* Shoulders below the face. */
        CHECK(pose.landmarks[11].y > FACE_CY && pose.landmarks[12].y > FACE_CY);
        KSPoint3 hip = [pose worldLandmarkAtIndex:23];
        CHECK(fabsf(hip.x) < 0.5f && fabsf(hip.y) < 0.5f); /* meters, origin between the hips */
        CHECK(pose.mask != nil);
        if (pose.mask != nil) {
            CHECK(pose.mask.width == photo.width && pose.mask.height == photo.height);
            CHECK([pose.mask probabilityAtX:225 y:150] > 0.5f);
            CHECK(pose.mask.personFraction > 0.2f && pose.mask.personFraction < 0.9f);
        }
    }
    [pl release];
}

static void test_segmenter(KSImage *photo) {
    NSError *error = nil;
    KSSegmenterOptions *opts = [[KSSegmenterOptions alloc] init];
    opts.outputBytes = YES;
    KSSegmenter *seg = [[KSSegmenter alloc] initWithOptions:opts error:&error];
    [opts release];
    CHECK_OK(seg != nil, error);
    if (seg == nil) return;
    KSMask *mask = [seg segmentImage:photo timestampUs:0 error:&error];
    CHECK_OK(mask != nil, error);
    if (mask != nil) {
        fprintf(stderr, "mask: %s\n", [[mask description] UTF8String]);
        CHECK(mask.width == photo.width && mask.height == photo.height);
        CHECK([mask.data length] == (NSUInteger)mask.width * (NSUInteger)mask.height * 4u);
        CHECK(mask.bytes != nil && [mask.bytes length] == (NSUInteger)mask.width * mask.height);
        CHECK(mask.personFraction > 0.3f && mask.personFraction < 0.8f);
        CHECK([mask probabilityAtX:225 y:120] > 0.9f);
        CHECK([mask probabilityAtX:470 y:60] < 0.1f);
        CHECK([mask probabilityAtX:-1 y:0] == 0.0f);
        const uint8_t *bytes = (const uint8_t *)[mask.bytes bytes];
        CHECK(bytes[120 * mask.width + 225] > 229);
    }
    [seg release];
}

static void test_hands_objects_classes(KSImage *photo) {
    NSError *error = nil;
    KSHandLandmarker *hl = [[KSHandLandmarker alloc] initWithOptions:nil error:&error];
    CHECK_OK(hl != nil, error);
    NSArray *hands = [hl detectInImage:photo timestampUs:0 error:&error];
    CHECK_OK(hands != nil, error);
    for (KSHand *hand in hands) {
        CHECK(hand.numLandmarks == 21);
        CHECK(hand.handedness == KSHandednessLeft || hand.handedness == KSHandednessRight);
        CHECK(ks_test_box_contains(hand.box, hand.landmarks[0].x, hand.landmarks[0].y, 1.0f));
    }
    fprintf(stderr, "hands: %lu\n", (unsigned long)[hands count]);
    [hl release];

    if (ks_test_models("object_detector_yolox.ksb") == 0) {
        KSObjectDetector *od = [[KSObjectDetector alloc] initWithOptions:nil error:&error];
        CHECK_OK(od != nil, error);
        NSArray *objects = [od detectInImage:photo timestampUs:0 error:&error];
        CHECK_OK(objects != nil, error);
        BOOL person = NO;
        float last = 2.0f;
        for (KSDetectedObject *o in objects) {
            fprintf(stderr, "object: %s\n", [[o description] UTF8String]);
            person |= [o.label isEqualToString:@"person"] && o.score > 0.5f;
            CHECK(o.score <= last);
            last = o.score;
        }
        CHECK(person);
        [od release];
    }
    if (ks_test_models("classifier_mobilenet_v2.ksb") == 0) {
        KSImageClassifier *cls = [[KSImageClassifier alloc] initWithOptions:nil error:&error];
        CHECK_OK(cls != nil, error);
        NSArray *top = [cls classifyImage:photo timestampUs:0 error:&error];
        CHECK_OK([top count] == 5, error);
        float last = 2.0f;
        for (KSCategory *c in top) {
            CHECK(c.score >= 0.0f && c.score <= last && [c.label length] > 0);
            last = c.score;
        }
        if ([top count] > 0)
            fprintf(stderr, "top class: %s\n", [[[top objectAtIndex:0] description] UTF8String]);
        /* the uint8 MobileNet's int8 layers in fp32 (F32) or per layer the faster (Fastest):
         * the same top class, its score within 0.05 */
        KSPrecision precisions[2] = {KSPrecisionF32, KSPrecisionFastest};
        for (int k = 0; k<2 && [top count]> 0; k++) {
            KSImageClassifierOptions *o = [[KSImageClassifierOptions alloc] init];
            o.precision = precisions[k];
            KSImageClassifierOptions *copy = [o copy];
            CHECK(copy.precision == precisions[k]);
            KSImageClassifier *c2 = [[KSImageClassifier alloc] initWithOptions:copy error:&error];
            CHECK_OK(c2 != nil, error);
            NSArray *t2 = [c2 classifyImage:photo timestampUs:0 error:&error];
            CHECK_OK([t2 count] == [top count], error);
            KSCategory *a = [top objectAtIndex:0], *b = [t2 objectAtIndex:0];
            CHECK([a.label isEqualToString:b.label] && fabsf(a.score - b.score) <= 0.05f);
            [c2 release];
            [copy release];
            [o release];
        }
        [cls release];
    }
}

/* An RGBA copy with padded rows, wrapped through the pointer + owner initializer: same faces. */
static void test_strided_rgba(KSImage *photo) {
    NSError *error = nil;
    int32_t w = photo.width, h = photo.height, stride = w * 4 + 64;
    NSMutableData *rgba = [NSMutableData dataWithLength:(NSUInteger)stride * (NSUInteger)h];
    /* photo is RGB: rebuild it from the face detector's view of the same bytes. */
    ks_image_buf buf;
    char err[256];
    if (ks_image_load(ASTRONAUT, 0, &buf, err, sizeof(err)) != KS_STATUS_OK) {
        CHECK(0);
        return;
    }
    uint8_t *dst = (uint8_t *)[rgba mutableBytes];
    for (int32_t y = 0; y < h; y++)
        for (int32_t x = 0; x < w; x++) {
            const uint8_t *s = buf.pixels + ((size_t)y * (size_t)w + (size_t)x) * 3;
            uint8_t *d = dst + (size_t)y * (size_t)stride + (size_t)x * 4;
            d[0] = s[0], d[1] = s[1], d[2] = s[2], d[3] = 255;
        }
    ks_image_buf_free(&buf);
    const void *planes[1] = {dst};
    int32_t strides[1] = {stride};
    KSImage *image = [[KSImage alloc] initWithPlanes:planes
                                             strides:strides
                                           numPlanes:1
                                              format:KSPixelFormatRGBA
                                               width:w
                                              height:h
                                               owner:rgba
                                               error:&error];
    CHECK_OK(image != nil, error);
    CHECK(image.strideBytes == stride && image.format == KSPixelFormatRGBA);
    KSFaceDetector *det = [[KSFaceDetector alloc] initWithOptions:nil error:&error];
    NSArray *faces = [det detectInImage:image timestampUs:0 error:&error];
    CHECK_OK([faces count] == 1, error);
    if ([faces count] == 1) {
        KSBox b = [[faces objectAtIndex:0] box];
        CHECK(fabsf(b.x + b.width / 2 - FACE_CX) < FACE_TOL_PX);
    }
    [det release];
    [image release];

    /* The same bytes in a too-short NSData are refused with a message. */
    NSData *shortData = [NSData dataWithBytes:dst length:100];
    image = [[KSImage alloc] initWithData:shortData
                                   format:KSPixelFormatRGBA
                                    width:w
                                   height:h
                                    error:&error];
    CHECK(image == nil);
    CHECK([[error domain] isEqualToString:KSErrorDomain] &&
          [error code] == KSErrorCodeInvalidArgument);
    CHECK([[error localizedDescription] rangeOfString:@"needs at least"].location != NSNotFound);
    /* NV21 in one buffer: Y then interleaved VU. */
    NSData *nv21 = [NSMutableData dataWithLength:(NSUInteger)(w * h + w * ((h + 1) / 2))];
    image = [[KSImage alloc] initWithData:nv21
                                   format:KSPixelFormatNV21
                                    width:w
                                   height:h
                                    error:&error];
    CHECK_OK(image != nil, error);
    [image release];
    image = [[KSImage alloc] initWithData:nv21
                                   format:KSPixelFormatNV21
                                    width:w + 2
                                   height:h
                                    error:&error];
    CHECK(image == nil && [error code] == KSErrorCodeInvalidArgument);
}

/* The photo as NV21 (BT.601 video range, chroma from 2x2 means) in one NSData, and rotated 90
 * degrees counter-clockwise with KSRotation90 (clockwise) undoing it: the face comes back at the
 * same upright position. Exercises the YUV plane layout and the orientation options. */
static void test_nv21_rotated(void) {
    NSError *error = nil;
    ks_image_buf buf;
    char err[256];
    if (ks_image_load(ASTRONAUT, 0, &buf, err, sizeof(err)) != KS_STATUS_OK) {
        CHECK(0);
        return;
    }
    const int32_t w = buf.image.width_px, h = buf.image.height_px; /* rotated: h x w */
    const int32_t rw = h, rh = w;
    /* Rotate counter-clockwise: upright (x, y) lands at (y, w - 1 - x). */
    uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
    for (int32_t y = 0; y < h; y++)
        for (int32_t x = 0; x < w; x++)
            memcpy(rgb + ((size_t)(w - 1 - x) * (size_t)rw + (size_t)y) * 3,
                   buf.pixels + ((size_t)y * (size_t)w + (size_t)x) * 3, 3);
    ks_image_buf_free(&buf);
    const int32_t cw = (rw + 1) / 2, ch = (rh + 1) / 2;
    NSMutableData *nv21 = [NSMutableData dataWithLength:(NSUInteger)(rw * rh + 2 * cw * ch)];
    uint8_t *yp = (uint8_t *)[nv21 mutableBytes], *vu = yp + (size_t)rw * (size_t)rh;
    for (int32_t y = 0; y < rh; y++)
        for (int32_t x = 0; x < rw; x++) {
            const uint8_t *p = rgb + ((size_t)y * (size_t)rw + (size_t)x) * 3;
            yp[(size_t)y * (size_t)rw + (size_t)x] =
                (uint8_t)(16.5f + (65.738f * p[0] + 129.057f * p[1] + 25.064f * p[2]) / 256.0f);
        }
    for (int32_t y = 0; y < ch; y++)
        for (int32_t x = 0; x < cw; x++) {
            float r = 0, g = 0, b = 0;
            for (int k = 0; k < 4; k++) {
                int32_t sx = 2 * x + (k & 1), sy = 2 * y + (k >> 1);
                if (sx >= rw) sx = rw - 1;
                if (sy >= rh) sy = rh - 1;
                const uint8_t *p = rgb + ((size_t)sy * (size_t)rw + (size_t)sx) * 3;
                r += p[0] / 4.0f, g += p[1] / 4.0f, b += p[2] / 4.0f;
            }
            uint8_t *d = vu + ((size_t)y * (size_t)cw + (size_t)x) * 2;
            d[0] = (uint8_t)(128.5f + (112.439f * r - 94.154f * g - 18.285f * b) / 256.0f);
            d[1] = (uint8_t)(128.5f + (-37.945f * r - 74.494f * g + 112.439f * b) / 256.0f);
        }
    free(rgb);
    KSImage *image = [[KSImage alloc] initWithData:nv21
                                            format:KSPixelFormatNV21
                                             width:rw
                                            height:rh
                                             error:&error];
    CHECK_OK(image != nil, error);
    KSFaceLandmarkerOptions *opts = [[KSFaceLandmarkerOptions alloc] init];
    opts.rotation = KSRotation90;
    KSFaceLandmarker *lm = [[KSFaceLandmarker alloc] initWithOptions:opts error:&error];
    [opts release];
    CHECK_OK(lm != nil, error);
    NSArray *meshes = [lm detectInImage:image timestampUs:0 error:&error];
    CHECK_OK([meshes count] == 1, error);
    if ([meshes count] == 1) {
        KSBox b = [[meshes objectAtIndex:0] box];
        fprintf(stderr, "nv21 rotated: mesh box [%.1f %.1f %.1f %.1f]\n", b.x, b.y, b.width,
                b.height);
        CHECK(fabsf(b.x + b.width / 2 - FACE_CX) < FACE_TOL_PX);
        CHECK(fabsf(b.y + b.height / 2 - FACE_CY) < 2 * FACE_TOL_PX);
    }
    /* Without the rotation option the face is found sideways, elsewhere. */
    KSFaceDetector *det = [[KSFaceDetector alloc] initWithOptions:nil error:&error];
    NSArray *faces = [det detectInImage:image timestampUs:0 error:&error];
    CHECK_OK(faces != nil, error);
    for (KSFace *face in faces)
        CHECK(fabsf(face.box.x + face.box.width / 2 - FACE_CX) > FACE_TOL_PX ||
              fabsf(face.box.y + face.box.height / 2 - FACE_CY) > FACE_TOL_PX);
    [det release];
    [lm release];
    [image release];
}

/* Runs `s` once on `input` (the model's own shapes) and returns output 0, or nil. */
static NSData *ks_test_run_session(KSSession *s, NSData *input) {
    NSError *error = nil;
    BOOL ok = [s reshapeWithError:&error] && [s setInputData:input atIndex:0 error:&error] &&
              [s runWithError:&error];
    CHECK_OK(ok, error);
    NSData *out = ok ? [s outputDataAtIndex:0 error:&error] : nil;
    CHECK_OK(out != nil, error);
    return out;
}

/* The backend choice (ks_backend): the CPU by default, OpenCL refused with its name, and Auto
 * (timed at init: the CPU, or Vulkan where a device opens and is faster) giving the CPU's results
 * on a session (BlazeFace short range, from the bundles' ksm/) and on a task. */
static void test_backend(KSImage *photo) {
    NSError *error = nil;
    KSTaskOptions *topts = [[KSTaskOptions alloc] init];
    CHECK(topts.backend == KSBackendCPU);
    topts.backend = KSBackendAuto;
    KSTaskOptions *tcopy = [topts copy];
    CHECK(tcopy.backend == KSBackendAuto);
    [tcopy release];
    [topts release];

    NSString *path =
        [[KSModels directory] stringByAppendingPathComponent:@"ksm/face_detection_short_range.ksm"];
    KSModel *model = [[KSModel alloc] initWithContentsOfFile:path error:&error];
    CHECK_OK(model != nil, error);
    if (model == nil) return;
    CHECK(model.numInputs == 1 && model.numOutputs >= 2);
    KSSession *cpu = [[KSSession alloc] initWithModel:model options:nil error:&error];
    CHECK_OK(cpu != nil, error);
    CHECK(cpu.backend == KSBackendCPU && cpu.model == model);

    KSSessionOptions *sopts = [[KSSessionOptions alloc] init];
    CHECK(sopts.backend == KSBackendCPU);
    sopts.backend = KSBackendOpenCL;
    error = nil;
    KSSession *refused = [[KSSession alloc] initWithModel:model options:sopts error:&error];
    CHECK(refused == nil && [error code] == KSErrorCodeUnsupported);
    CHECK([[error localizedDescription] rangeOfString:@"opencl"].location != NSNotFound);
    fprintf(stderr, "expected error: %s\n", [[error localizedDescription] UTF8String]);
    sopts.backend = KSBackendAuto;
    KSSessionOptions *scopy = [sopts copy];
    [sopts release];
    CHECK(scopy.backend == KSBackendAuto);
    KSSession *autoSession = [[KSSession alloc] initWithModel:model options:scopy error:&error];
    [scopy release];
    CHECK_OK(autoSession != nil, error);
    KSBackend chosen = autoSession.backend;
    CHECK(chosen == KSBackendCPU || chosen == KSBackendVulkan);
    fprintf(stderr, "backend auto: %s\n", chosen == KSBackendCPU ? "cpu" : "vulkan");

    NSMutableData *input = [NSMutableData dataWithLength:128 * 128 * 3 * sizeof(float)];
    float *in = (float *)[input mutableBytes];
    for (size_t i = 0; i < 128 * 128 * 3; i++)
        in[i] = sinf((float)i * 0.007f);
    NSData *want = cpu != nil ? ks_test_run_session(cpu, input) : nil;
    NSData *got = autoSession != nil ? ks_test_run_session(autoSession, input) : nil;
    CHECK(want != nil && got != nil && [want length] == [got length] && [want length] > 0);
    if (want != nil && got != nil && [want length] == [got length]) {
        const float *a = (const float *)[want bytes], *b = (const float *)[got bytes];
        size_t n = [want length] / sizeof(float), bad = 0;
        for (size_t i = 0; i < n; i++) /* the CPU exactly; a GPU within float rounding */
            bad += chosen == KSBackendCPU
                       ? a[i] != b[i]
                       : !(fabsf(a[i] - b[i]) <= 1e-3f * fmaxf(1.0f, fabsf(a[i])));
        CHECK(bad == 0);
    }
    /* An input of the wrong size is refused with both sizes. */
    error = nil;
    CHECK(![cpu setInputData:[NSData dataWithBytes:in length:12] atIndex:0 error:&error]);
    CHECK([error code] == KSErrorCodeInvalidArgument &&
          [[error localizedDescription] rangeOfString:@"196608"].location != NSNotFound);
    [autoSession release];
    [cpu release];
    [model release]; /* the sessions are gone; a session would have kept it */

    /* Tasks: OpenCL refused by name, Auto finds the CPU's face. */
    KSFaceDetectorOptions *dopts = [[KSFaceDetectorOptions alloc] init];
    dopts.backend = KSBackendOpenCL;
    error = nil;
    KSFaceDetector *det = [[KSFaceDetector alloc] initWithOptions:dopts error:&error];
    CHECK(det == nil && [error code] == KSErrorCodeUnsupported);
    CHECK([[error localizedDescription] rangeOfString:@"opencl"].location != NSNotFound);
    dopts.backend = KSBackendAuto;
    KSFaceDetector *cpuDet = [[KSFaceDetector alloc] initWithOptions:nil error:&error];
    det = [[KSFaceDetector alloc] initWithOptions:dopts error:&error];
    [dopts release];
    CHECK_OK(cpuDet != nil && det != nil, error);
    NSArray *wantFaces = [cpuDet detectInImage:photo timestampUs:0 error:&error];
    NSArray *gotFaces = [det detectInImage:photo timestampUs:0 error:&error];
    CHECK_OK(wantFaces != nil && gotFaces != nil, error);
    CHECK([wantFaces count] == 1 && [gotFaces count] == [wantFaces count]);
    for (NSUInteger i = 0; i < [wantFaces count] && i < [gotFaces count]; i++) {
        KSFace *fa = [wantFaces objectAtIndex:i], *fb = [gotFaces objectAtIndex:i];
        CHECK(fabsf(fa.box.x - fb.box.x) < 0.5f && fabsf(fa.box.y - fb.box.y) < 0.5f &&
              fabsf(fa.box.width - fb.box.width) < 0.5f &&
              fabsf(fa.box.height - fb.box.height) < 0.5f);
        CHECK(fabsf(fa.score - fb.score) < 1e-3f);
    }
    [det release];
    [cpuDet release];
}

static void test_errors(KSImage *photo) {
    NSError *error = nil;
    KSFaceDetectorOptions *opts = [[KSFaceDetectorOptions alloc] init];
    opts.modelPath = @"/nonexistent/dir/face.ksb";
    KSFaceDetector *det = [[KSFaceDetector alloc] initWithOptions:opts error:&error];
    CHECK(det == nil);
    CHECK(error != nil && [[error domain] isEqualToString:KSErrorDomain]);
    CHECK([error code] == KSErrorCodeIOError);
    CHECK([[error localizedDescription] rangeOfString:@"/nonexistent/dir/face.ksb"].location !=
          NSNotFound);
    CHECK([[[error userInfo] objectForKey:KSErrorStatusNameKey] length] > 0);
    fprintf(stderr, "expected error: %s (%ld)\n", [[error localizedDescription] UTF8String],
            (long)[error code]);
    /* NULL error pointers are allowed. */
    CHECK([[KSFaceDetector alloc] initWithOptions:opts error:NULL] == nil);
    [opts release];

    /* A file that is not a bundle. */
    KSPoseLandmarkerOptions *popts = [[KSPoseLandmarkerOptions alloc] init];
    popts.modelPath = @ASTRONAUT;
    error = nil;
    KSPoseLandmarker *pl = [[KSPoseLandmarker alloc] initWithOptions:popts error:&error];
    CHECK(pl == nil && error != nil && [error code] != 0);
    CHECK([[error localizedDescription] length] > 0);
    [popts release];

    /* Options are copied at init: later edits do not matter; copies keep every field. */
    KSFaceLandmarkerOptions *lopts = [[KSFaceLandmarkerOptions alloc] init];
    lopts.mode = KSRunningModeVideo;
    lopts.maxResults = 2;
    lopts.refineLandmarks = YES;
    lopts.modelPath = nil;
    KSFaceLandmarkerOptions *copy = [lopts copy];
    CHECK(copy.mode == KSRunningModeVideo && copy.maxResults == 2 && copy.refineLandmarks);
    CHECK([copy isKindOfClass:[KSFaceLandmarkerOptions class]]);
    [copy release];
    KSFaceLandmarker *lm = [[KSFaceLandmarker alloc] initWithOptions:lopts error:&error];
    CHECK_OK(lm != nil, error);
    lopts.modelPath = @"/nonexistent.ksb";
    [lopts release];
    /* VIDEO mode: timestamps must increase. */
    NSArray *a = [lm detectInImage:photo timestampUs:1000 error:&error];
    CHECK_OK(a != nil && [a count] == 1, error);
    if ([a count] == 1) {
        CHECK([[a objectAtIndex:0] trackingId] >= 1);
        CHECK([[a objectAtIndex:0] numLandmarks] == 478);
    }
    error = nil;
    NSArray *b = [lm detectInImage:photo timestampUs:1000 error:&error];
    CHECK(b == nil && [error code] == KSErrorCodeInvalidState);
    fprintf(stderr, "expected error: %s\n", [[error localizedDescription] UTF8String]);
    /* A nil image is an argument error, not a crash. */
    error = nil;
    KSImage *nothing = nil;
    CHECK([lm detectInImage:nothing timestampUs:5000 error:&error] == nil);
    CHECK([error code] == KSErrorCodeInvalidArgument);
    [lm release];
}

int main(void) {
    NSAutoreleasePool *outer = [[NSAutoreleasePool alloc] init];
#ifdef GNUSTEP
    GSDebugAllocationActive(YES);
#endif
    int rc = ks_test_models("face_landmarker.ksb");
    if (rc == 0) rc = ks_test_models("selfie_segmenter.ksb");
    if (rc == 0) rc = ks_test_models("pose_landmarker_full.ksb");
    if (rc != 0) {
        [outer drain];
        return rc;
    }
    fprintf(stderr, "Kestrel %s, models in %s\n", [[KSModels libraryVersion] UTF8String],
            [[KSModels directory] UTF8String]);
#ifdef GNUSTEP
    int data_before = ks_test_data_count();
#endif
    NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
    KSImage *photo = ks_test_load(ASTRONAUT);
    CHECK(photo != nil);
    if (photo != nil) {
        CHECK(photo.width == 512 && photo.height == 512 && photo.format == KSPixelFormatRGB);
        test_face_detector(photo);
        test_face_landmarker(photo);
        test_pose(photo);
        test_segmenter(photo);
        test_hands_objects_classes(photo);
        test_strided_rgba(photo);
        test_nv21_rotated();
        test_backend(photo);
        test_errors(photo);
    }
    [pool drain];
#ifdef GNUSTEP
    /* Every object made by the binding is gone once the pools are drained. */
    Class classes[] = {[KSImage class],
                       [KSFace class],
                       [KSFaceMesh class],
                       [KSFaceDetector class],
                       [KSFaceLandmarker class],
                       [KSPose class],
                       [KSPoseLandmarker class],
                       [KSMask class],
                       [KSSegmenter class],
                       [KSHand class],
                       [KSHandLandmarker class],
                       [KSDetectedObject class],
                       [KSObjectDetector class],
                       [KSCategory class],
                       [KSImageClassifier class],
                       [KSTaskOptions class],
                       [KSFaceLandmarkerOptions class],
                       [KSFaceDetectorOptions class],
                       [KSModel class],
                       [KSSessionOptions class],
                       [KSSession class]};
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        int live = GSDebugAllocationCount(classes[i]);
        if (live != 0)
            fprintf(stderr, "leak: %d live %s\n", live, [NSStringFromClass(classes[i]) UTF8String]);
        CHECK(live == 0);
    }
    /* The NSData buffers the results held (landmarks, masks) are gone too. */
    int data_after = ks_test_data_count();
    if (data_after != data_before)
        fprintf(stderr, "leak: %d NSData before, %d after\n", data_before, data_after);
    CHECK(data_after == data_before);
#endif
    [outer drain];
    return ks_test_finish("objc_test_tasks");
}
