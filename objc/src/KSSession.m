/* KSModel, KSSessionOptions and KSSession over kestrel/engine.h (manual retain/release). */
#import "KSPrivate.h"

#include <stdio.h>
#include <string.h>

#include "kestrel/engine.h"

@interface KSModel ()
- (const ks_model *)ks_handle;
@end

@implementation KSModel

- (instancetype)initWithContentsOfFile:(NSString *)path error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    if (path == nil) {
        ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, "KSModel: path is nil");
        return ks__objc_abandon(self);
    }
    ks_model *model = NULL;
    ks_status st = ks_model_load_file([path UTF8String], NULL, &model);
    if (!ks__objc_ok(st, NULL, error)) return ks__objc_abandon(self);
    _model = model;
    return self;
}

- (void)dealloc {
    ks_model_destroy((ks_model *)_model);
    [super dealloc];
}

- (const ks_model *)ks_handle {
    return (const ks_model *)_model;
}

- (NSUInteger)numInputs {
    return ks_model_num_inputs((const ks_model *)_model);
}

- (NSUInteger)numOutputs {
    return ks_model_num_outputs((const ks_model *)_model);
}

@end

@implementation KSSessionOptions

@synthesize numThreads = _numThreads;
@synthesize precision = _precision;
@synthesize backend = _backend;

- (id)copyWithZone:(NSZone *)zone {
    KSSessionOptions *copy = [[[self class] allocWithZone:zone] init];
    copy->_numThreads = _numThreads;
    copy->_precision = _precision;
    copy->_backend = _backend;
    return copy;
}

@end

/* Tensor `index` (input or output) of the last reshape, or NO and *error. */
static BOOL ks_objc_tensor(ks_session *s, BOOL input, NSUInteger index, ks_tensor *tensor,
                           NSError **error) {
    if (index > UINT32_MAX)
        return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, "KSSession: index out of range");
    ks_status st = input ? ks_session_input(s, (uint32_t)index, tensor)
                         : ks_session_output(s, (uint32_t)index, tensor);
    return ks__objc_ok(st, s, error);
}

@implementation KSSession

@synthesize model = _model;

- (instancetype)initWithModel:(KSModel *)model
                      options:(KSSessionOptions *)options
                        error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    if (model == nil) {
        ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, "KSSession: model is nil");
        return ks__objc_abandon(self);
    }
    ks_session_desc desc;
    memset(&desc, 0, sizeof(desc));
    if (options != nil) {
        desc.num_threads = options.numThreads;
        desc.precision = (ks_precision)options.precision;
        desc.backend = (ks_backend)options.backend;
    }
    ks_session *session = NULL;
    ks_status st = ks_session_create([model ks_handle], &desc, &session);
    if (!ks__objc_ok(st, NULL, error)) return ks__objc_abandon(self);
    _session = session;
    _model = [model retain];
    return self;
}

- (void)dealloc {
    /* The session first: it uses the model. */
    ks_session_destroy((ks_session *)_session);
    [_model release];
    [super dealloc];
}

- (KSBackend)backend {
    return (KSBackend)ks_session_backend((const ks_session *)_session);
}

- (BOOL)reshapeWithError:(NSError **)error {
    return ks__objc_ok(ks_session_reshape((ks_session *)_session, NULL), _session, error);
}

- (BOOL)runWithError:(NSError **)error {
    return ks__objc_ok(ks_session_run((ks_session *)_session), _session, error);
}

- (BOOL)setInputData:(NSData *)data atIndex:(NSUInteger)index error:(NSError **)error {
    if (data == nil)
        return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, "KSSession: input data is nil");
    ks_tensor t;
    if (!ks_objc_tensor((ks_session *)_session, YES, index, &t, error)) return NO;
    if ([data length] != t.size_bytes) {
        char msg[200];
        snprintf(msg, sizeof(msg), "KSSession: input %lu '%s' holds %zu bytes, the data has %lu",
                 (unsigned long)index, t.info.name, t.size_bytes, (unsigned long)[data length]);
        return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, msg);
    }
    memcpy(t.data, [data bytes], t.size_bytes);
    return YES;
}

- (NSData *)outputDataAtIndex:(NSUInteger)index error:(NSError **)error {
    ks_tensor t;
    if (!ks_objc_tensor((ks_session *)_session, NO, index, &t, error)) return nil;
    return [NSData dataWithBytes:t.data length:t.size_bytes];
}

@end
