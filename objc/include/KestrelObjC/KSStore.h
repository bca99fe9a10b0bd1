/* Kestrel Objective-C API: the on-device store of signed packages (KSStore over ks_store,
 * kestrel/delivery.h; docs/delivery.md and docs/objc.md "Store").
 *
 * Usage (manual retain/release shown; under ARC drop the release calls):
 *     NSData *pub = [KSStore publicKeyFromHex:kReleasePubHex error:&error]; // ks-sign keygen
 *     KSStore *store = [[KSStore alloc] initWithDirectory:dir trustedKeys:@[ pub ] error:&error];
 *     // NSURLSession delivered `body` (NSData) or a downloaded file at `location`:
 *     KSPackageInfo *info = [store installData:body error:&error];
 *     if (info == nil)  // nothing changed; e.g. "hash mismatch: file 'face.ksb' (...)"
 *         NSLog(@"%@ (%@)", error.localizedDescription,
 *               error.userInfo[KSErrorDeliveryErrorNameKey]);
 *     NSString *bundle = [store pathOfFile:@"face_landmarker.ksb" inPackage:@"face" error:NULL];
 *     [store release];
 *
 * Every refusal returns nil / NO with an NSError in KSErrorDomain whose code is the C ks_status
 * and whose userInfo holds the cause: KSErrorDeliveryErrorKey (NSNumber of KSDeliveryError) and
 * KSErrorDeliveryErrorNameKey (e.g. "hash mismatch"); the installed version is untouched.
 *
 * Events (ks_store_desc.on_event): a block (where the compiler has blocks) or a <KSStoreObserver>
 * given at init is told of each version that becomes current (KSStoreEventInstalled) and each
 * version marked bad by a failed self-test or markBadPackage: (KSStoreEventRolledBack, with the
 * reason), on the thread of the call, inside it:
 *     KSStore *store = [[KSStore alloc] initWithDirectory:dir trustedKeys:@[ pub ] keyProvider:nil
 *         eventHandler:^(KSStoreEvent event, KSPackageInfo *package, NSString *message) {
 *             NSLog(@"%@ %@: %@", package.packageId, package.versionString, message);
 *         } error:&error];
 *
 * Thread safety: a KSStore may be used from any number of threads at once; its calls are
 * serialized (as ks_store's are), and the error each call returns is its own. One folder is
 * opened by one store at a time, across processes too (a second init fails with
 * KSErrorCodeInvalidState until the first is deallocated).
 */
#ifndef KESTREL_OBJC_KSSTORE_H
#define KESTREL_OBJC_KSSTORE_H

#import "KSBase.h"

NS_ASSUME_NONNULL_BEGIN

/* userInfo keys of the store's NSErrors: the cause as NSNumber (KSDeliveryError) and its name. */
extern NSString *const KSErrorDeliveryErrorKey;
extern NSString *const KSErrorDeliveryErrorNameKey;

/* Why the store refused (the C ks_delivery_error; docs/delivery.md, "Refusals"). */
typedef NS_ENUM(NSInteger, KSDeliveryError) {
    KSDeliveryErrorNone = 0,
    KSDeliveryErrorMalformed = 1,       /* not a package, truncated, bad structure */
    KSDeliveryErrorTooLarge = 2,        /* a size limit */
    KSDeliveryErrorUnknownKey = 3,      /* signed by a key that is not trusted */
    KSDeliveryErrorBadSignature = 4,    /* altered header or manifest */
    KSDeliveryErrorSizeMismatch = 5,    /* the manifest's sizes disagree with the payload */
    KSDeliveryErrorHashMismatch = 6,    /* a file's SHA-256 differs from the manifest's */
    KSDeliveryErrorUnsafePath = 7,      /* a path that could escape the store or collide */
    KSDeliveryErrorRuntimeTooOld = 8,   /* the package needs a newer Kestrel */
    KSDeliveryErrorDowngrade = 9,       /* older than the installed version */
    KSDeliveryErrorReplay = 10,         /* signed before a package the store already accepted */
    KSDeliveryErrorKnownBad = 11,       /* this exact package failed before */
    KSDeliveryErrorSelftestFailed = 12, /* its self-test failed: marked bad, not installed */
    KSDeliveryErrorNotInstalled = 13,   /* no such package id or file */
    KSDeliveryErrorNoPrevious = 14,     /* rollback without a kept previous version */
    KSDeliveryErrorIO = 15,             /* a file system call failed; the store is unchanged */
    KSDeliveryErrorStoreCorrupt = 16,   /* an installed file no longer matches its manifest */
    KSDeliveryErrorNoKey = 17,          /* the self-test's encrypted model has no (working) key */
};

/* Install flags (KS_STORE_*). */
typedef NS_OPTIONS(NSUInteger, KSStoreInstallFlags) {
    KSStoreInstallAllowDowngrade = 1u << 0, /* accept a version older than the installed one */
    KSStoreInstallSkipSelftest = 1u << 1,   /* install without running the package's self-test */
};

/* What a package's signed manifest says (ks_package_info). Immutable. */
@interface KSPackageInfo : NSObject {
  @private
    NSString *_packageId, *_encryptionKeyName;
    uint32_t _major, _minor, _patch, _minRuntime, _numFiles;
    uint64_t _issued, _payloadBytes;
    NSData *_keyId, *_digest;
}
@property(nonatomic, readonly) NSString *packageId;
@property(nonatomic, readonly) uint32_t major;
@property(nonatomic, readonly) uint32_t minor;
@property(nonatomic, readonly) uint32_t patch;
/* "major.minor.patch" */
@property(nonatomic, readonly) NSString *versionString;
/* Oldest Kestrel that may use it, as KS_VERSION_HEX (major << 16 | minor << 8 | patch). */
@property(nonatomic, readonly) uint32_t minRuntime;
/* The signer's monotonic stamp (ks-sign: Unix seconds); orders replays. */
@property(nonatomic, readonly) uint64_t issued;
/* First 8 bytes of SHA-256 of the signer's public key. */
@property(nonatomic, readonly) NSData *keyId;
/* Key name of the package's encrypted models ("" when none). */
@property(nonatomic, readonly) NSString *encryptionKeyName;
@property(nonatomic, readonly) uint32_t numFiles;
@property(nonatomic, readonly) uint64_t payloadBytes;
/* SHA-256 of the signed header and manifest: identifies one signed package (isEqual: on it). */
@property(nonatomic, readonly) NSData *digest;
KS_INIT_UNAVAILABLE
@end

/* What the store reports to its observer (the C ks_store_event). */
typedef NS_ENUM(NSInteger, KSStoreEvent) {
    KSStoreEventInstalled = 0, /* a version became current: an install committed it */
    /* a version was marked bad: its self-test failed during an install (the previous version
     * stays current) or the app called markBadPackage: (the previous version is current again) */
    KSStoreEventRolledBack = 1,
};

/* Told what the store did (ks_store_desc.on_event), for compilers without blocks (GNUstep's gcc)
 * or for an object: see -initWithDirectory:trustedKeys:keyProvider:observer:error:. */
@protocol KSStoreObserver <NSObject>
/* `package`: the signed manifest of the version installed or marked bad; `message`: why
 * ("installed", the self-test's failure "face 3.0.0: self-test failed: ..." or the markBad
 * reason after the package and version). */
- (void)storeDidReportEvent:(KSStoreEvent)event
                    package:(KSPackageInfo *)package
                    message:(NSString *)message;
@end

#if defined(__BLOCKS__)
/* The block form of KSStoreObserver. */
typedef void (^KSStoreEventHandler)(KSStoreEvent event, KSPackageInfo *package, NSString *message);
#endif

@interface KSStore : NSObject {
  @private
    void *_store;
    NSLock *_lock;
    id _keyProvider;
    id _observer;         /* a KSStoreObserver, or the wrapper of a KSStoreEventHandler */
    id _pendingException; /* what the key provider or observer threw in the current call */
}

/* The largest package the store accepts (header, signature, the largest manifest and payload:
 * about 1 GiB). */
+ (uint64_t)maxPackageBytes;

/* The 32 bytes of an Ed25519 public key written as 64 hex digits (ks-sign keygen's NAME.pub);
 * surrounding white space is ignored. nil with KSErrorCodeInvalidArgument otherwise. */
+ (NSData *KS_NULLABLE)publicKeyFromHex:(NSString *)hex error:(NSError **)error;

/* Opens (creating it if needed, one level) the store folder `directory`, private to the app,
 * and removes what interrupted installs left. `trustedKeys`: one or more NSData of 32 bytes
 * (Ed25519 public keys; several while keys rotate), copied. */
- (instancetype KS_NULLABLE)initWithDirectory:(NSString *)directory
                                  trustedKeys:(KS_ARRAY(NSData *) *)trustedKeys
                                        error:(NSError **)error;
/* The same, with the key provider of the store's self-tests of encrypted models
 * (ks_store_desc.key_provider; retained until the store is deallocated): when a package's
 * self-test model is a ks-protect file, the store asks [keyProvider keyForEntryName:name] with the
 * key name its manifest records (KSPackageInfo.encryptionKeyName, ks-sign sign
 * --encryption-key-name), on the installing thread, inside the install. The key stays in memory
 * for the self-test and is wiped after. nil, a key of another size or one that does not open the
 * model refuses the install with KSDeliveryErrorNoKey (the package is not marked bad). */
- (instancetype KS_NULLABLE)initWithDirectory:(NSString *)directory
                                  trustedKeys:(KS_ARRAY(NSData *) *)trustedKeys
                                  keyProvider:(id<KSKeyProvider> KS_NULLABLE)keyProvider
                                        error:(NSError **)error;
/* The same (keyProvider may be nil), with an observer of the store's events
 * (ks_store_desc.on_event; retained until the store is deallocated): KSStoreEventInstalled when
 * an install makes a version current, KSStoreEventRolledBack when a version is marked bad (its
 * self-test failed during an install, or markBadPackage:), each with the version's KSPackageInfo
 * and a message saying why. Installing the version that is already current, a refusal and
 * rollbackPackage: report nothing.
 *
 * The observer (like the key provider) is called on the thread of the store call, inside it,
 * with the store busy: a call to this store from it fails with KSErrorCodeInvalidState. An
 * exception it (or the key provider) raises is caught before it could unwind through the C store
 * and raised again by the store call once the store has finished and unlocked, instead of a
 * return value: the store's change stands (the event reports something already committed;
 * currentPackage: shows it). An observer that retains the store makes a retain cycle. */
- (instancetype KS_NULLABLE)initWithDirectory:(NSString *)directory
                                  trustedKeys:(KS_ARRAY(NSData *) *)trustedKeys
                                  keyProvider:(id<KSKeyProvider> KS_NULLABLE)keyProvider
                                     observer:(id<KSStoreObserver> KS_NULLABLE)observer
                                        error:(NSError **)error NS_DESIGNATED_INITIALIZER;
#if defined(__BLOCKS__)
/* The same with the observer as a block (copied; nil: none). A block that captures the store
 * strongly makes a retain cycle (capture it __weak, or __block under manual retain/release). */
- (instancetype KS_NULLABLE)initWithDirectory:(NSString *)directory
                                  trustedKeys:(KS_ARRAY(NSData *) *)trustedKeys
                                  keyProvider:(id<KSKeyProvider> KS_NULLABLE)keyProvider
                                 eventHandler:(KSStoreEventHandler KS_NULLABLE)eventHandler
                                        error:(NSError **)error;
#endif
KS_INIT_UNAVAILABLE

/* Verifies the package completely, then installs it as the current version of its id; the
 * current version becomes the previous one (kept), the one before is deleted. The package that
 * is already current: nothing to do, its info. `data` is not kept (an NSURLSession body may be
 * passed as is; a discontiguous NSData is read once into one buffer). */
- (KSPackageInfo *KS_NULLABLE)installData:(NSData *)data error:(NSError **)error;
- (KSPackageInfo *KS_NULLABLE)installData:(NSData *)data
                                    flags:(KSStoreInstallFlags)flags
                                    error:(NSError **)error;
/* The same from a file the app downloaded (e.g. NSURLSession's downloadTask location; read
 * whole, so at most +maxPackageBytes). */
- (KSPackageInfo *KS_NULLABLE)installFile:(NSString *)path error:(NSError **)error;
- (KSPackageInfo *KS_NULLABLE)installFile:(NSString *)path
                                    flags:(KSStoreInstallFlags)flags
                                    error:(NSError **)error;

/* The current (or the kept previous) version of `packageId`, re-read from the store with its
 * signature re-verified; nil with KSDeliveryErrorNotInstalled when there is none. */
- (KSPackageInfo *KS_NULLABLE)currentPackage:(NSString *)packageId error:(NSError **)error;
- (KSPackageInfo *KS_NULLABLE)previousPackage:(NSString *)packageId error:(NSError **)error;

/* Absolute path of file `name` (a path in the package) of the current version of `packageId`;
 * it stays valid while that version is current or previous. */
- (NSString *KS_NULLABLE)pathOfFile:(NSString *)name
                          inPackage:(NSString *)packageId
                              error:(NSError **)error;

/* Makes the previous version current again (KSDeliveryErrorNoPrevious when none is kept). */
- (BOOL)rollbackPackage:(NSString *)packageId error:(NSError **)error;
/* Marks the current version bad (never installed again) and rolls back to the previous one (or
 * none): for an app whose own first-load check failed. `reason` is kept (lastRollback...). */
- (BOOL)markBadPackage:(NSString *)packageId
                reason:(NSString *KS_NULLABLE)reason
                 error:(NSError **)error;
/* Why `packageId` was last rolled back (self-test or markBad); "" when it never was. */
- (NSString *KS_NULLABLE)lastRollbackOfPackage:(NSString *)packageId error:(NSError **)error;
/* Re-hashes every file of the current version (KSDeliveryErrorStoreCorrupt on a difference). */
- (BOOL)checkPackage:(NSString *)packageId error:(NSError **)error;
@end

NS_ASSUME_NONNULL_END

#endif /* KESTREL_OBJC_KSSTORE_H */
