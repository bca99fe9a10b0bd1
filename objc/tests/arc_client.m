/* Compiled (syntax only) by the objc_headers_arc test: the public headers under ARC with
 * nullability completeness checks, for an Apple target, against a minimal stand-in Foundation
 * (arc_stub/). The client uses the API the way an ARC app does: no retain/release. */
#import <KestrelObjC/KestrelObjC.h>

int ks_arc_client(KSImage *image);

int ks_arc_client(KSImage *image) {
    NSError *error = nil;
    KSFaceLandmarkerOptions *options = [[KSFaceLandmarkerOptions alloc] init];
    options.mode = KSRunningModeVideo;
    options.modelPath = nil;
    KSFaceLandmarker *landmarker = [[KSFaceLandmarker alloc] initWithOptions:options error:&error];
    if (landmarker == nil) return -1;
    NSArray<KSFaceMesh *> *faces = [landmarker detectInImage:image timestampUs:0 error:&error];
    float sum = 0.0f;
    for (KSFaceMesh *face in faces) {
        const KSPoint3 *points = face.landmarks;
        sum += points[0].x + face.poseMatrix[3] + face.expressions.smile;
    }
    __weak KSFaceLandmarker *weakLandmarker = landmarker;
    (void)weakLandmarker;
    KSSegmenter *segmenter = [[KSSegmenter alloc] initWithOptions:nil error:NULL];
    KSMask *_Nullable mask = [segmenter segmentImage:image timestampUs:0 error:&error];
    KSEffect *effect = [[KSEffect alloc] initWithContentsOfFile:@"fx.kfx" error:&error];
    if (effect != nil && faces != nil) {
        KSEffectRenderer *renderer = [[KSEffectRenderer alloc] initWithEffect:effect
                                                                      options:nil
                                                                        error:&error];
        [renderer renderFaces:faces
                         mask:mask
                cameraTexture:1
                        width:640
                       height:480
                  timestampUs:0
                outputTexture:0
                        error:&error];
    }
    KSModel *model = [[KSModel alloc] initWithContentsOfFile:@"m.ksm" error:&error];
    KSSessionOptions *sessionOptions = [[KSSessionOptions alloc] init];
    sessionOptions.backend = KSBackendAuto;
    if (model != nil) {
        KSSession *session = [[KSSession alloc] initWithModel:model
                                                      options:sessionOptions
                                                        error:&error];
        if (session != nil && [session reshapeWithError:&error] && [session runWithError:NULL]) {
            NSData *_Nullable out = [session outputDataAtIndex:0 error:&error];
            sum += (out != nil) + (session.backend == KSBackendCPU);
        }
    }
    /* Encrypted models: a key, or a provider block (copied by the options). */
    KSFaceDetectorOptions *encrypted = [[KSFaceDetectorOptions alloc] init];
    NSData *appKey = [[NSData alloc] init];
    encrypted.key = appKey;
    __block int asked = 0;
    encrypted.keyProvider = ^NSData *_Nullable(NSString *entryName) {
        asked++;
        return entryName != nil ? appKey : nil;
    };
    KSFaceDetector *detector = [[KSFaceDetector alloc] initWithOptions:encrypted error:&error];
    /* The store: install the bytes a download delivered, find a file of the current version. */
    NSData *pub = [KSStore publicKeyFromHex:(NSString *)@"00" error:&error];
    KSStore *store = pub != nil ? [[KSStore alloc] initWithDirectory:(NSString *)@"/tmp/ks"
                                                         trustedKeys:@[ pub ]
                                                               error:&error]
                                : nil;
    KSPackageInfo *_Nullable info = [store installData:pub
                                                 flags:KSStoreInstallAllowDowngrade
                                                 error:&error];
    NSString *_Nullable path = [store pathOfFile:(NSString *)@"face.ksb"
                                       inPackage:info.packageId
                                           error:&error];
    sum += (path != nil) + (detector != nil) + asked + (info.major > 1u);
    /* Live swap: a newer version of the detector's model, from any thread; a newer effect. */
    if (path != nil && [detector swapModelAtPath:(NSString *)path error:&error] &&
        [detector swapModelAtPath:(NSString *)path key:nil error:NULL])
        sum += (float)detector.modelGeneration;
    KSImageClassifier *classifier = [[KSImageClassifier alloc] initWithOptions:nil error:&error];
    sum += [classifier swapModelAtPath:@"c.ksb" key:appKey error:&error];
    if (effect != nil) {
        KSEffectRenderer *swapped = [[KSEffectRenderer alloc] initWithEffect:effect
                                                                     options:nil
                                                                       error:&error];
        sum += [swapped swapEffect:effect error:&error] && swapped.effect == effect;
    }
    /* The store's events as a block (copied by the store). */
    __block int events = 0;
    KSStore *observed = [[KSStore alloc]
        initWithDirectory:(NSString *)@"/tmp/ks-events"
              trustedKeys:@[ (NSData *)pub ]
              keyProvider:nil
             eventHandler:^(KSStoreEvent event, KSPackageInfo *package, NSString *message) {
               events += event == KSStoreEventRolledBack && package.numFiles > 0u && message != nil;
             }
                    error:&error];
    __weak KSStore *weakStore = observed;
    (void)weakStore;
    sum += events;
    return (int)faces.count + (sum > 0.0f);
}
