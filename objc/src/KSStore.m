/* KSStore and KSPackageInfo over ks_store (kestrel/delivery.h), manual retain/release. Without
 * the delivery module (KS_WITH_SODIUM=OFF) every call fails with KSErrorCodeUnsupported.
 *
 * The key provider and the observer run inside a C store call with the store's lock held. What
 * they raise must not unwind through the C store (its mutex would stay locked and its buffers
 * leak), so it is caught, kept in _pendingException and raised again after the call, and a call
 * to the same store from them would deadlock on _lock, so it is refused (ks_objc_busy_store). */
#import "KSPrivate.h"

#include <stdlib.h>
#include <string.h>

#if defined(KS_OBJC_HAVE_DELIVERY)
#include "kestrel/delivery.h"
_Static_assert(KSDeliveryErrorNoKey == (NSInteger)KS_DELIVERY_NO_KEY, "delivery error values");
_Static_assert(KSDeliveryErrorStoreCorrupt == (NSInteger)KS_DELIVERY_STORE_CORRUPT,
               "delivery error values");
_Static_assert(KSStoreInstallAllowDowngrade == KS_STORE_ALLOW_DOWNGRADE, "install flags");
_Static_assert(KSStoreInstallSkipSelftest == KS_STORE_SKIP_SELFTEST, "install flags");
_Static_assert(KSStoreEventInstalled == (NSInteger)KS_STORE_EVENT_INSTALLED, "store events");
_Static_assert(KSStoreEventRolledBack == (NSInteger)KS_STORE_EVENT_ROLLED_BACK, "store events");
#endif

NSString *const KSErrorDeliveryErrorKey = @"KSDeliveryError";
NSString *const KSErrorDeliveryErrorNameKey = @"KSDeliveryErrorName";

/* The names of ks_delivery_error_string, for builds without the module too. */
static const char *ks_objc_delivery_name(NSInteger why) {
#if defined(KS_OBJC_HAVE_DELIVERY)
    return ks_delivery_error_string((ks_delivery_error)why);
#else
    return why == 0 ? "ok" : "unknown";
#endif
}

/* *error from status, cause and message, with the cause in userInfo. Returns NO. */
static BOOL ks_objc_store_fail(NSError **error, ks_status status, NSInteger why,
                               const char *message) {
    if (error == NULL) return NO;
    NSError *base = nil;
    ks__objc_fail(&base, status, message);
    NSMutableDictionary *info = [NSMutableDictionary dictionaryWithDictionary:[base userInfo]];
    [info setObject:[NSNumber numberWithInteger:why] forKey:KSErrorDeliveryErrorKey];
    [info setObject:[NSString stringWithUTF8String:ks_objc_delivery_name(why)]
             forKey:KSErrorDeliveryErrorNameKey];
    *error = [NSError errorWithDomain:KSErrorDomain code:[base code] userInfo:info];
    return NO;
}

@interface KSPackageInfo (KSPrivate)
- (instancetype)ks_initWithInfo:(const void *)info;
@end

@implementation KSPackageInfo

/* `info`: a ks_package_info (void here so that builds without the module compile). */
- (instancetype)ks_initWithInfo:(const void *)info {
    self = [super init];
    if (self == nil) return nil;
#if defined(KS_OBJC_HAVE_DELIVERY)
    const ks_package_info *c = info;
    _packageId = [[NSString alloc] initWithUTF8String:c->id];
    _encryptionKeyName = [[NSString alloc] initWithUTF8String:c->encryption_key_name];
    _major = c->version_major;
    _minor = c->version_minor;
    _patch = c->version_patch;
    _minRuntime = c->min_runtime;
    _numFiles = c->num_files;
    _issued = c->issued;
    _payloadBytes = c->payload_bytes;
    _keyId = [[NSData alloc] initWithBytes:c->key_id length:KS_PACKAGE_KEY_ID_BYTES];
    _digest = [[NSData alloc] initWithBytes:c->digest length:KS_PACKAGE_DIGEST_BYTES];
#endif
    return self;
}

- (void)dealloc {
    [_packageId release];
    [_encryptionKeyName release];
    [_keyId release];
    [_digest release];
    [super dealloc];
}

- (NSString *)packageId {
    return _packageId;
}
- (uint32_t)major {
    return _major;
}
- (uint32_t)minor {
    return _minor;
}
- (uint32_t)patch {
    return _patch;
}
- (NSString *)versionString {
    return [NSString
        stringWithFormat:@"%u.%u.%u", (unsigned)_major, (unsigned)_minor, (unsigned)_patch];
}
- (uint32_t)minRuntime {
    return _minRuntime;
}
- (uint64_t)issued {
    return _issued;
}
- (NSData *)keyId {
    return _keyId;
}
- (NSString *)encryptionKeyName {
    return _encryptionKeyName;
}
- (uint32_t)numFiles {
    return _numFiles;
}
- (uint64_t)payloadBytes {
    return _payloadBytes;
}
- (NSData *)digest {
    return _digest;
}

- (BOOL)isEqual:(id)other {
    return [other isKindOfClass:[KSPackageInfo class]] &&
           [_digest isEqual:((KSPackageInfo *)other)->_digest];
}

- (NSUInteger)hash {
    return [_digest hash];
}

- (NSString *)description {
    return [NSString stringWithFormat:@"<KSPackageInfo %@ %@, %u file(s), %llu bytes>", _packageId,
                                      [self versionString], (unsigned)_numFiles,
                                      (unsigned long long)_payloadBytes];
}

@end

#if defined(__BLOCKS__)
/* A KSStoreEventHandler as a KSStoreObserver, so that the store keeps one kind of observer. */
@interface KSStoreBlockObserver : NSObject <KSStoreObserver> {
  @private
    KSStoreEventHandler _handler;
}
- (instancetype)initWithHandler:(KSStoreEventHandler)handler;
@end

@implementation KSStoreBlockObserver
- (instancetype)initWithHandler:(KSStoreEventHandler)handler {
    self = [super init];
    if (self != nil) _handler = [handler copy];
    return self;
}
- (void)dealloc {
    [_handler release];
    [super dealloc];
}
- (void)storeDidReportEvent:(KSStoreEvent)event
                    package:(KSPackageInfo *)package
                    message:(NSString *)message {
    _handler(event, package, message);
}
@end
#endif

#if defined(KS_OBJC_HAVE_DELIVERY)

/* An autoreleased KSPackageInfo from the C struct. */
static KSPackageInfo *ks_objc_package_info(const ks_package_info *c) {
    return [[[KSPackageInfo alloc] ks_initWithInfo:c] autorelease];
}

/* The store whose key provider or observer this thread is running (nil: none). */
static _Thread_local KSStore *ks_objc_busy_store;

#endif

@implementation KSStore

+ (uint64_t)maxPackageBytes {
#if defined(KS_OBJC_HAVE_DELIVERY)
    return 32u + KS_PACKAGE_SIGNATURE_BYTES + KS_PACKAGE_MAX_MANIFEST_BYTES +
           KS_PACKAGE_MAX_PAYLOAD_BYTES;
#else
    return 0;
#endif
}

+ (NSData *)publicKeyFromHex:(NSString *)hex error:(NSError **)error {
    NSString *h =
        [hex stringByTrimmingCharactersInSet:[NSCharacterSet whitespaceAndNewlineCharacterSet]];
    const char *s = [h UTF8String];
    size_t n = s != NULL ? strlen(s) : 0;
    if (n != 64) {
        char msg[128];
        snprintf(msg, sizeof(msg), "public key: %zu characters; expected 64 hex digits", n);
        ks_objc_store_fail(error, KS_STATUS_INVALID_ARGUMENT, 0, msg);
        return nil;
    }
    uint8_t key[32];
    for (size_t i = 0; i < 32; i++) {
        unsigned v = 0;
        for (size_t j = 0; j < 2; j++) {
            char c = s[2 * i + j];
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0) {
                char msg[96];
                snprintf(msg, sizeof(msg), "public key: character %zu (0x%02x) is not hex",
                         2 * i + j, (unsigned)(unsigned char)c);
                ks_objc_store_fail(error, KS_STATUS_INVALID_ARGUMENT, 0, msg);
                return nil;
            }
            v = v << 4 | (unsigned)d;
        }
        key[i] = (uint8_t)v;
    }
    return [NSData dataWithBytes:key length:sizeof(key)];
}

#if defined(KS_OBJC_HAVE_DELIVERY)

#define KS_STORE ((ks_store *)_store)

/* Takes _lock for one C store call; NO with KSErrorCodeInvalidState when this thread is inside
 * this store's key provider or observer (it holds the lock: taking it again would deadlock). */
- (BOOL)ks_lock:(NSError **)error {
    if (ks_objc_busy_store == self)
        return ks_objc_store_fail(error, KS_STATUS_INVALID_STATE, 0,
                                  "KSStore: called from its own observer or key provider, inside "
                                  "the store call that is running it");
    [_lock lock];
    return YES;
}

/* Releases _lock, then raises what the key provider or observer raised during the call. */
- (void)ks_unlock {
    id pending = _pendingException;
    _pendingException = nil;
    [_lock unlock];
    if (pending != nil) @throw [pending autorelease];
}

/* Runs a callback of the app (key provider, observer) inside a C store call: marks this thread
 * busy with the store (restoring what it was: a callback may use another store) and keeps what
 * it raises for -ks_unlock, the first one only. */
- (void)ks_callOut:(void (*)(KSStore *store, void *arg))body arg:(void *)arg {
    KSStore *outer = ks_objc_busy_store;
    ks_objc_busy_store = self;
    NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
    @try {
        body(self, arg);
    } @catch (id raised) {
        if (_pendingException == nil) _pendingException = [raised retain];
    }
    [pool drain];
    ks_objc_busy_store = outer;
}

/* The store's refusal of the call that just failed (the caller holds _lock). */
- (BOOL)ks_fail:(ks_status)status error:(NSError **)error {
    return ks_objc_store_fail(error, status, (NSInteger)ks_store_last_refusal(KS_STORE),
                              ks_last_error(KS_STORE));
}

typedef struct ks_objc_key_call {
    const char *key_name;
    uint8_t *key_out;
    int rc;
} ks_objc_key_call;

static void ks_objc_ask_key(KSStore *store, void *arg) {
    ks_objc_key_call *call = arg;
    NSString *name = [NSString stringWithUTF8String:call->key_name != NULL ? call->key_name : ""];
    NSData *key = name != nil ? [store->_keyProvider keyForEntryName:name] : nil;
    if (key != nil && [key length] == KS_TASK_KEY_BYTES) {
        [key getBytes:call->key_out length:KS_TASK_KEY_BYTES];
        call->rc = 0;
    }
}

/* ks_store_key_fn over the KSKeyProvider: called inside an install, on the installing thread,
 * with the store's lock held (user: the KSStore). A provider that raises has no key. */
static int ks_objc_store_key(void *user, const char *key_name, uint8_t key_out[32]) {
    ks_objc_key_call call = {key_name, key_out, 1};
    [(KSStore *)user ks_callOut:ks_objc_ask_key arg:&call];
    return call.rc;
}

typedef struct ks_objc_event_call {
    ks_store_event event;
    const ks_package_info *info;
    const char *message;
} ks_objc_event_call;

static void ks_objc_tell_observer(KSStore *store, void *arg) {
    const ks_objc_event_call *call = arg;
    NSString *message = [NSString stringWithUTF8String:call->message != NULL ? call->message : ""];
    [store->_observer storeDidReportEvent:(KSStoreEvent)call->event
                                  package:ks_objc_package_info(call->info)
                                  message:message != nil ? message : @""];
}

/* ks_store_event_fn over the KSStoreObserver: called inside an install or markBad, on that
 * call's thread, with the store's lock held (user: the KSStore). */
static void ks_objc_store_event(void *user, ks_store_event event, const ks_package_info *info,
                                const char *message) {
    KSStore *store = user;
    if (store->_observer == nil || info == NULL) return;
    ks_objc_event_call call = {event, info, message};
    [store ks_callOut:ks_objc_tell_observer arg:&call];
}

- (instancetype)initWithDirectory:(NSString *)directory
                      trustedKeys:(NSArray *)trustedKeys
                            error:(NSError **)error {
    return [self initWithDirectory:directory trustedKeys:trustedKeys keyProvider:nil error:error];
}

- (instancetype)initWithDirectory:(NSString *)directory
                      trustedKeys:(NSArray *)trustedKeys
                      keyProvider:(id<KSKeyProvider>)keyProvider
                            error:(NSError **)error {
    return [self initWithDirectory:directory
                       trustedKeys:trustedKeys
                       keyProvider:keyProvider
                          observer:nil
                             error:error];
}

#if defined(__BLOCKS__)
- (instancetype)initWithDirectory:(NSString *)directory
                      trustedKeys:(NSArray *)trustedKeys
                      keyProvider:(id<KSKeyProvider>)keyProvider
                     eventHandler:(KSStoreEventHandler)eventHandler
                            error:(NSError **)error {
    KSStoreBlockObserver *observer =
        eventHandler != nil
            ? [[[KSStoreBlockObserver alloc] initWithHandler:eventHandler] autorelease]
            : nil;
    return [self initWithDirectory:directory
                       trustedKeys:trustedKeys
                       keyProvider:keyProvider
                          observer:observer
                             error:error];
}
#endif

- (instancetype)initWithDirectory:(NSString *)directory
                      trustedKeys:(NSArray *)trustedKeys
                      keyProvider:(id<KSKeyProvider>)keyProvider
                         observer:(id<KSStoreObserver>)observer
                            error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    NSUInteger count = [trustedKeys count];
    if (directory == nil || count == 0) {
        ks_objc_store_fail(error, KS_STATUS_INVALID_ARGUMENT, 0,
                           "KSStore: a directory and at least one trusted public key are needed");
        return ks__objc_abandon(self);
    }
    NSMutableData *keys = [NSMutableData dataWithLength:count * KS_PACKAGE_PUBLIC_KEY_BYTES];
    for (NSUInteger i = 0; i < count; i++) {
        id key = [trustedKeys objectAtIndex:i];
        if (![key isKindOfClass:[NSData class]] ||
            [(NSData *)key length] != KS_PACKAGE_PUBLIC_KEY_BYTES) {
            char msg[160];
            snprintf(msg, sizeof(msg),
                     "KSStore: trusted key %lu is not an NSData of %u bytes (an Ed25519 public "
                     "key)",
                     (unsigned long)i, KS_PACKAGE_PUBLIC_KEY_BYTES);
            ks_objc_store_fail(error, KS_STATUS_INVALID_ARGUMENT, 0, msg);
            return ks__objc_abandon(self);
        }
        [(NSData *)key getBytes:(uint8_t *)[keys mutableBytes] + i * KS_PACKAGE_PUBLIC_KEY_BYTES
                         length:KS_PACKAGE_PUBLIC_KEY_BYTES];
    }
    ks_store_desc desc;
    memset(&desc, 0, sizeof(desc));
    desc.trusted_keys = [keys bytes];
    desc.num_trusted_keys = (uint32_t)count;
    desc.user = self; /* not retained: the store is destroyed in dealloc */
    if (keyProvider != nil) {
        _keyProvider = [keyProvider retain];
        desc.key_provider = ks_objc_store_key;
    }
    if (observer != nil) {
        _observer = [observer retain];
        desc.on_event = ks_objc_store_event;
    }
    ks_store *store = NULL;
    ks_status st = ks_store_open([directory fileSystemRepresentation], &desc, &store);
    if (st != KS_STATUS_OK) {
        ks_objc_store_fail(error, st, 0, ks_last_error(NULL));
        return ks__objc_abandon(self);
    }
    _store = store;
    _lock = [[NSLock alloc] init];
    return self;
}

- (void)dealloc {
    ks_store_destroy(KS_STORE);
    [_lock release];
    [_keyProvider release];
    [_observer release];
    [_pendingException release];
    [super dealloc];
}

- (KSPackageInfo *)installData:(NSData *)data error:(NSError **)error {
    return [self installData:data flags:0 error:error];
}

- (KSPackageInfo *)installData:(NSData *)data
                         flags:(KSStoreInstallFlags)flags
                         error:(NSError **)error {
    if (data == nil) {
        ks_objc_store_fail(error, KS_STATUS_INVALID_ARGUMENT, 0, "KSStore: nil data");
        return nil;
    }
    ks_package_info info;
    if (![self ks_lock:error]) return nil;
    ks_status st =
        ks_store_install_buffer(KS_STORE, [data bytes], [data length], (uint32_t)flags, &info);
    if (st != KS_STATUS_OK) [self ks_fail:st error:error];
    [self ks_unlock];
    return st == KS_STATUS_OK ? ks_objc_package_info(&info) : nil;
}

- (KSPackageInfo *)installFile:(NSString *)path error:(NSError **)error {
    return [self installFile:path flags:0 error:error];
}

- (KSPackageInfo *)installFile:(NSString *)path
                         flags:(KSStoreInstallFlags)flags
                         error:(NSError **)error {
    if (path == nil) {
        ks_objc_store_fail(error, KS_STATUS_INVALID_ARGUMENT, 0, "KSStore: nil path");
        return nil;
    }
    ks_package_info info;
    if (![self ks_lock:error]) return nil;
    ks_status st =
        ks_store_install_file(KS_STORE, [path fileSystemRepresentation], (uint32_t)flags, &info);
    if (st != KS_STATUS_OK) [self ks_fail:st error:error];
    [self ks_unlock];
    return st == KS_STATUS_OK ? ks_objc_package_info(&info) : nil;
}

- (KSPackageInfo *)ks_package:(NSString *)packageId previous:(int)previous error:(NSError **)error {
    if (packageId == nil) {
        ks_objc_store_fail(error, KS_STATUS_INVALID_ARGUMENT, 0, "KSStore: nil package id");
        return nil;
    }
    ks_package_info info;
    if (![self ks_lock:error]) return nil;
    ks_status st = ks_store_current(KS_STORE, [packageId UTF8String], previous, &info);
    if (st != KS_STATUS_OK) [self ks_fail:st error:error];
    [self ks_unlock];
    return st == KS_STATUS_OK ? ks_objc_package_info(&info) : nil;
}

- (KSPackageInfo *)currentPackage:(NSString *)packageId error:(NSError **)error {
    return [self ks_package:packageId previous:0 error:error];
}

- (KSPackageInfo *)previousPackage:(NSString *)packageId error:(NSError **)error {
    return [self ks_package:packageId previous:1 error:error];
}

- (NSString *)pathOfFile:(NSString *)name inPackage:(NSString *)packageId error:(NSError **)error {
    if (name == nil || packageId == nil) {
        ks_objc_store_fail(error, KS_STATUS_INVALID_ARGUMENT, 0, "KSStore: nil name or id");
        return nil;
    }
    char path[4096];
    if (![self ks_lock:error]) return nil;
    ks_status st =
        ks_store_file_path(KS_STORE, [packageId UTF8String], [name UTF8String], path, sizeof(path));
    if (st != KS_STATUS_OK) [self ks_fail:st error:error];
    [self ks_unlock];
    return st == KS_STATUS_OK ? [NSString stringWithUTF8String:path] : nil;
}

/* rollback (0), mark bad (1) or check (2) of `packageId`. */
- (BOOL)ks_call:(int)which
        package:(NSString *)packageId
         reason:(NSString *)reason
          error:(NSError **)error {
    if (packageId == nil) {
        return ks_objc_store_fail(error, KS_STATUS_INVALID_ARGUMENT, 0, "KSStore: nil package id");
    }
    const char *cid = [packageId UTF8String];
    if (![self ks_lock:error]) return NO;
    ks_status st = which == 0 ? ks_store_rollback(KS_STORE, cid)
                   : which == 1
                       ? ks_store_mark_bad(KS_STORE, cid, reason != nil ? [reason UTF8String] : "")
                       : ks_store_check(KS_STORE, cid);
    if (st != KS_STATUS_OK) [self ks_fail:st error:error];
    [self ks_unlock];
    return st == KS_STATUS_OK;
}

- (BOOL)rollbackPackage:(NSString *)packageId error:(NSError **)error {
    return [self ks_call:0 package:packageId reason:nil error:error];
}

- (BOOL)markBadPackage:(NSString *)packageId reason:(NSString *)reason error:(NSError **)error {
    return [self ks_call:1 package:packageId reason:reason error:error];
}

- (BOOL)checkPackage:(NSString *)packageId error:(NSError **)error {
    return [self ks_call:2 package:packageId reason:nil error:error];
}

- (NSString *)lastRollbackOfPackage:(NSString *)packageId error:(NSError **)error {
    if (packageId == nil) {
        ks_objc_store_fail(error, KS_STATUS_INVALID_ARGUMENT, 0, "KSStore: nil package id");
        return nil;
    }
    char reason[1024];
    if (![self ks_lock:error]) return nil;
    ks_status st = ks_store_last_rollback(KS_STORE, [packageId UTF8String], reason, sizeof(reason));
    if (st != KS_STATUS_OK) [self ks_fail:st error:error];
    [self ks_unlock];
    return st == KS_STATUS_OK ? [NSString stringWithUTF8String:reason] : nil;
}

#else /* !KS_OBJC_HAVE_DELIVERY */

static BOOL ks_objc_no_store(NSError **error) {
    return ks_objc_store_fail(error, KS_STATUS_UNSUPPORTED, 0,
                              "KSStore: this build has no delivery module (KS_WITH_SODIUM=OFF)");
}

- (instancetype)initWithDirectory:(NSString *)directory
                      trustedKeys:(NSArray *)trustedKeys
                            error:(NSError **)error {
    return [self initWithDirectory:directory trustedKeys:trustedKeys keyProvider:nil error:error];
}
- (instancetype)initWithDirectory:(NSString *)directory
                      trustedKeys:(NSArray *)trustedKeys
                      keyProvider:(id<KSKeyProvider>)keyProvider
                            error:(NSError **)error {
    return [self initWithDirectory:directory
                       trustedKeys:trustedKeys
                       keyProvider:keyProvider
                          observer:nil
                             error:error];
}
#if defined(__BLOCKS__)
- (instancetype)initWithDirectory:(NSString *)directory
                      trustedKeys:(NSArray *)trustedKeys
                      keyProvider:(id<KSKeyProvider>)keyProvider
                     eventHandler:(KSStoreEventHandler)eventHandler
                            error:(NSError **)error {
    return [self initWithDirectory:directory
                       trustedKeys:trustedKeys
                       keyProvider:keyProvider
                          observer:nil
                             error:error];
}
#endif
- (instancetype)initWithDirectory:(NSString *)directory
                      trustedKeys:(NSArray *)trustedKeys
                      keyProvider:(id<KSKeyProvider>)keyProvider
                         observer:(id<KSStoreObserver>)observer
                            error:(NSError **)error {
    self = [super init];
    ks_objc_no_store(error);
    return ks__objc_abandon(self);
}
- (void)dealloc {
    [_lock release];
    [super dealloc];
}
- (KSPackageInfo *)installData:(NSData *)data error:(NSError **)error {
    ks_objc_no_store(error);
    return nil;
}
- (KSPackageInfo *)installData:(NSData *)data
                         flags:(KSStoreInstallFlags)flags
                         error:(NSError **)error {
    ks_objc_no_store(error);
    return nil;
}
- (KSPackageInfo *)installFile:(NSString *)path error:(NSError **)error {
    ks_objc_no_store(error);
    return nil;
}
- (KSPackageInfo *)installFile:(NSString *)path
                         flags:(KSStoreInstallFlags)flags
                         error:(NSError **)error {
    ks_objc_no_store(error);
    return nil;
}
- (KSPackageInfo *)currentPackage:(NSString *)packageId error:(NSError **)error {
    ks_objc_no_store(error);
    return nil;
}
- (KSPackageInfo *)previousPackage:(NSString *)packageId error:(NSError **)error {
    ks_objc_no_store(error);
    return nil;
}
- (NSString *)pathOfFile:(NSString *)name inPackage:(NSString *)packageId error:(NSError **)error {
    ks_objc_no_store(error);
    return nil;
}
- (BOOL)rollbackPackage:(NSString *)packageId error:(NSError **)error {
    return ks_objc_no_store(error);
}
- (BOOL)markBadPackage:(NSString *)packageId reason:(NSString *)reason error:(NSError **)error {
    return ks_objc_no_store(error);
}
- (NSString *)lastRollbackOfPackage:(NSString *)packageId error:(NSError **)error {
    ks_objc_no_store(error);
    return nil;
}
- (BOOL)checkPackage:(NSString *)packageId error:(NSError **)error {
    return ks_objc_no_store(error);
}

#endif

@end
