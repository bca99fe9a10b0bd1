/* Kestrel Objective-C API: the engine, for models the tasks do not cover. KSModel is a loaded
 * .ksm file; KSSession runs it. Wraps kestrel/engine.h (a subset: the model's own input shapes,
 * tensors copied in and out as NSData).
 *
 * Usage:
 *     KSModel *model = [[KSModel alloc] initWithContentsOfFile:@"blazeface.ksm" error:&error];
 *     KSSessionOptions *o = [[KSSessionOptions alloc] init];
 *     o.backend = KSBackendAuto;                   // timed at init: the CPU or the GPU
 *     KSSession *s = [[KSSession alloc] initWithModel:model options:o error:&error];
 *     [s reshapeWithError:&error];                 // plans for the model's own input shapes
 *     [s setInputData:pixels atIndex:0 error:&error];
 *     [s runWithError:&error];
 *     NSData *scores = [s outputDataAtIndex:1 error:&error];
 *     NSLog(@"ran on %ld", (long)s.backend);
 *
 * Thread safety: a KSModel is immutable and may be shared by sessions on any threads; a KSSession
 * is used by one thread at a time.
 */
#ifndef KESTREL_OBJC_KSSESSION_H
#define KESTREL_OBJC_KSSESSION_H

#import "KSBase.h"

NS_ASSUME_NONNULL_BEGIN

/* A loaded model (immutable). Weights are mapped from the file, not copied. */
@interface KSModel : NSObject {
  @private
    void *_model;
}
- (instancetype KS_NULLABLE)initWithContentsOfFile:(NSString *)path
                                             error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE
@property(nonatomic, readonly) NSUInteger numInputs;
@property(nonatomic, readonly) NSUInteger numOutputs;
@end

/* Session options (ks_session_desc); 0 means the default. Copied by the session at init. */
@interface KSSessionOptions : NSObject <NSCopying> {
  @private
    int32_t _numThreads;
    KSPrecision _precision;
    KSBackend _backend;
}
/* Threads that split each op's work; 0: 1. */
@property(nonatomic, assign) int32_t numThreads;
/* How a quantized model's int8 layers run; float models are not affected. */
@property(nonatomic, assign) KSPrecision precision;
/* CPU (default), Vulkan, OpenCL (refused) or Auto. */
@property(nonatomic, assign) KSBackend backend;
@end

@interface KSSession : NSObject {
  @private
    void *_session;
    KSModel *_model;
}
/* Retains `model` (the C model must outlive the session). options nil: all defaults. A backend
 * this build or device lacks: nil and KSErrorCodeUnsupported, the message naming it. */
- (instancetype KS_NULLABLE)initWithModel:(KSModel *)model
                                  options:(KSSessionOptions *KS_NULLABLE)options
                                    error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE

@property(nonatomic, readonly) KSModel *model;
/* Where the session runs: KSBackendCPU or a GPU backend, never KSBackendAuto (Auto's choice). */
@property(nonatomic, readonly) KSBackend backend;

/* Plans the session for the model's own (static) input shapes. Call before the first input. */
- (BOOL)reshapeWithError:(NSError **)error;
/* Copies `data` into input `index`; its length must be the tensor's byte size exactly. */
- (BOOL)setInputData:(NSData *)data atIndex:(NSUInteger)index error:(NSError **)error;
- (BOOL)runWithError:(NSError **)error;
/* A copy of output `index` (its raw bytes: floats for an f32 tensor), or nil and *error. */
- (NSData *KS_NULLABLE)outputDataAtIndex:(NSUInteger)index error:(NSError **)error;
@end

NS_ASSUME_NONNULL_END

#endif /* KESTREL_OBJC_KSSESSION_H */
