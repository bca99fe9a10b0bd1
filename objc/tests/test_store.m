/* Objective-C binding: KSStore over real signed packages. Keys and packages are made in the
 * setup with the build's ks-sign (keygen + sign; the payload the real face detector model and a
 * small file): install v1 then v2 (NSData, file), refuse tampered, foreign-key, downgraded and
 * truncated packages with their causes in the NSError, roll back, mark bad, check, lock; the
 * observer's events (installs, a failed self-test, markBad), an observer that raises and one that
 * calls its own store. */
#import "objc_test.h"

#define WORK KS_OBJC_WORK_DIR "/store"
#define MODEL "ksm/face_detection_short_range.ksm"

#if defined(KS_SIGN_TOOL) /* else main skips: a build without libsodium has no ks-sign */
static BOOL refused(NSError *error, KSDeliveryError why, KSErrorCode code) {
    if (error == nil) {
        fprintf(stderr, "expected a refusal (%ld), got success\n", (long)why);
        return NO;
    }
    NSNumber *cause = [[error userInfo] objectForKey:KSErrorDeliveryErrorKey];
    NSString *name = [[error userInfo] objectForKey:KSErrorDeliveryErrorNameKey];
    BOOL ok = [[error domain] isEqualToString:KSErrorDomain] && [error code] == code &&
              cause != nil && [cause integerValue] == why && [name length] > 0 &&
              [[error localizedDescription] length] > 0;
    if (!ok)
        fprintf(stderr, "refusal: code %ld cause %ld (%s): %s; expected code %ld cause %ld\n",
                (long)[error code], (long)[cause integerValue], [name UTF8String],
                [[error localizedDescription] UTF8String], (long)code, (long)why);
    return ok;
}

static NSData *sign(const char *key, const char *version, int issued, const char *name) {
    if (ks_test_run("%s sign --key " WORK "/%s.sec " WORK "/pkg " WORK "/%s --id face "
                    "--version %s --issued %d",
                    KS_SIGN_TOOL, key, name, version, issued) != 0)
        return nil;
    return ks_test_read([NSString stringWithFormat:@"%s/%s", WORK, name]);
}

/* A KSKeyProvider that returns `key` (nil: none) and records the names it was asked for. */
@interface TestStoreKeys : NSObject <KSKeyProvider> {
  @public
    NSData *key;
    NSMutableArray *asked;
}
@end

@implementation TestStoreKeys
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
    return key;
}
@end

static void put_u32(NSMutableData *d, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    [d appendBytes:b length:4];
}

static void put_u64(NSMutableData *d, uint64_t v) {
    put_u32(d, (uint32_t)v);
    put_u32(d, (uint32_t)(v >> 32));
}

/* A selftest.kst (docs/delivery.md, "Self-test") of the face detector model `path` on a
 * deterministic input, recorded through KSSession (ks-sign selftest records the input after the
 * run, when the session may have reused its memory). Its one input is 1x128x128x3 f32; the
 * floats are little-endian, as on every target here. `offset` is added to every expected output
 * (non-zero: a self-test that fails). nil on failure. */
static NSData *golden_selftest(NSString *path, const char *name, float offset) {
    NSError *error = nil;
    KSModel *model = [[[KSModel alloc] initWithContentsOfFile:path error:&error] autorelease];
    KSSession *s = model != nil ? [[[KSSession alloc] initWithModel:model options:nil
                                                              error:&error] autorelease]
                                : nil;
    CHECK_OK(s != nil && [s reshapeWithError:&error], error);
    if (s == nil) return nil;
    NSMutableData *input = [NSMutableData dataWithLength:128 * 128 * 3 * sizeof(float)];
    float *x = (float *)[input mutableBytes];
    for (NSUInteger j = 0; j < [input length] / sizeof(float); j++)
        x[j] = sinf(0.37f * (float)j);
    CHECK_OK([s setInputData:input atIndex:0 error:&error] && [s runWithError:&error], error);
    NSMutableData *kst = [NSMutableData dataWithBytes:"KSTT" length:4];
    put_u32(kst, 1);
    uint16_t n = (uint16_t)strlen(name);
    uint8_t nb[2] = {(uint8_t)n, (uint8_t)(n >> 8)};
    [kst appendBytes:nb length:2];
    [kst appendBytes:name length:n];
    put_u32(kst, 1);
    put_u32(kst, 0);
    put_u64(kst, [input length]);
    [kst appendData:input];
    put_u32(kst, (uint32_t)model.numOutputs);
    for (NSUInteger i = 0; i < model.numOutputs; i++) {
        NSData *y = [s outputDataAtIndex:i error:&error];
        CHECK_OK(y != nil, error);
        if (y == nil) return nil;
        float tolerance = 1e-4f;
        put_u32(kst, (uint32_t)i);
        [kst appendBytes:&tolerance length:4];
        put_u64(kst, [y length]);
        NSMutableData *expected = [NSMutableData dataWithData:y];
        float *e = (float *)[expected mutableBytes];
        for (NSUInteger j = 0; j < [expected length] / sizeof(float); j++)
            e[j] += offset;
        [kst appendData:expected];
    }
    return kst;
}

/* Records what a store reports, as "EVENT id version: message"; raises after recording when
 * `raise` is set; calls `store` (not retained) back when it is set, recording the error. */
@interface TestStoreObserver : NSObject <KSStoreObserver> {
  @public
    NSMutableArray *events, *packages;
    BOOL raise;
    KSStore *store;
    NSError *callbackError;
}
@end

@implementation TestStoreObserver
- (instancetype)init {
    self = [super init];
    if (self != nil) {
        events = [[NSMutableArray alloc] init];
        packages = [[NSMutableArray alloc] init];
    }
    return self;
}
- (void)dealloc {
    [events release];
    [packages release];
    [callbackError release];
    [super dealloc];
}
- (void)storeDidReportEvent:(KSStoreEvent)event
                    package:(KSPackageInfo *)package
                    message:(NSString *)message {
    const char *name = event == KSStoreEventInstalled    ? "INSTALLED"
                       : event == KSStoreEventRolledBack ? "ROLLED_BACK"
                                                         : "?";
    [events addObject:[NSString stringWithFormat:@"%s %@ %@: %@", name, package.packageId,
                                                 package.versionString, message]];
    [packages addObject:package];
    if (store != nil) {
        NSError *error = nil;
        KSPackageInfo *info = [store currentPackage:@"face" error:&error];
        if (info == nil) callbackError = [error retain];
    }
    if (raise)
        [NSException raise:@"TestObserverBroke"
                    format:@"observer broke on %@", package.versionString];
}
@end

/* The reason part of a recorded event ("EVENT id version: " dropped). */
static NSString *event_reason(NSString *event, NSString *prefix) {
    return [event hasPrefix:prefix] ? [event substringFromIndex:[prefix length]] : nil;
}

/* Runs one store call that is expected to raise the observer's exception: returns its reason
 * (nil when nothing was raised). */
#define RAISED(call, reason_out)                                                                   \
    do {                                                                                           \
        reason_out = nil;                                                                          \
        @try {                                                                                     \
            (void)(call);                                                                          \
        } @catch (NSException * raised) {                                                          \
            if ([[raised name] isEqualToString:@"TestObserverBroke"])                              \
                reason_out = [raised reason];                                                      \
        }                                                                                          \
    } while (0)

/* Package "stface" with the face detector model and its self-test: 1.0.0 with the model's golden
 * outputs (passes), 2.0.0 with every expected output off by one (fails). */
static BOOL selftest_packages(NSData **v1_out, NSData **v2_out) {
    NSString *plain = [[KSModels directory] stringByAppendingPathComponent:@MODEL];
    if (ks_test_run("mkdir -p " WORK "/st/pkg && cp %s " WORK "/st/pkg/model.ksm",
                    [plain UTF8String]) != 0)
        return NO;
    for (int v = 1; v <= 2; v++) {
        NSData *golden = golden_selftest(plain, "model.ksm", v == 1 ? 0.0f : 1.0f);
        if (golden == nil || ![golden writeToFile:@WORK "/st/pkg/selftest.kst" atomically:NO] ||
            ks_test_run("%s sign --key " WORK "/release.sec " WORK "/st/pkg " WORK
                        "/st/v%d.kspkg --id stface --version %d.0.0 --issued %d",
                        KS_SIGN_TOOL, v, v, 100 * v) != 0)
            return NO;
    }
    *v1_out = ks_test_read(@WORK "/st/v1.kspkg");
    *v2_out = ks_test_read(@WORK "/st/v2.kspkg");
    return *v1_out != nil && *v2_out != nil;
}

/* The observer hears installs, a failed self-test and markBad; one that raises does not unwind
 * through the C store (its exception comes out of the store call afterwards, the change made);
 * one that calls its own store gets KSErrorCodeInvalidState instead of a deadlock. */
static void test_events(NSArray *keys, NSData *v1, NSData *v2) {
    NSData *st1 = nil, *st2 = nil;
    CHECK(selftest_packages(&st1, &st2));
    if (st1 == nil || st2 == nil) return;
    NSError *error = nil;
    TestStoreObserver *rec = [[[TestStoreObserver alloc] init] autorelease];
    KSStore *store = [[KSStore alloc] initWithDirectory:@WORK "/events"
                                            trustedKeys:keys
                                            keyProvider:nil
                                               observer:rec
                                                  error:&error];
    CHECK_OK(store != nil, error);
    if (store == nil) return;
    KSPackageInfo *i1 = [store installData:v1 error:&error];
    CHECK_OK(i1 != nil, error);
    CHECK([rec->events count] == 1 &&
          [[rec->events objectAtIndex:0] isEqualToString:@"INSTALLED face 1.0.0: installed"]);
    CHECK([[rec->packages lastObject] isEqual:i1] && [[rec->packages lastObject] issued] == 100);
    KSPackageInfo *i2 = [store installFile:@WORK "/v2.kspkg" error:&error];
    CHECK_OK(i2 != nil, error);
    CHECK([rec->events count] == 2 &&
          [[rec->events lastObject] isEqualToString:@"INSTALLED face 2.0.0: installed"]);
    CHECK([[rec->packages lastObject] isEqual:i2]);
    /* Nothing to do, refused, rolled back without marking bad: no event. */
    CHECK([store installData:v2 error:&error] != nil);
    CHECK([store installData:v1 error:&error] == nil);
    CHECK_OK([store rollbackPackage:@"face" error:&error], error);
    CHECK([rec->events count] == 2);
    CHECK([store installData:v2 error:&error] != nil);
    CHECK_OK([store markBadPackage:@"face" reason:@"no face on the reference photo" error:&error],
             error);
    CHECK([rec->events count] == 4);
    NSString *last = [rec->events lastObject];
    CHECK([last hasPrefix:@"ROLLED_BACK face 2.0.0: "] &&
          [last rangeOfString:@"no face on the reference photo"].location != NSNotFound);
    CHECK([[rec->packages lastObject] isEqual:i2]);
    /* A failing self-test: refused, ROLLED_BACK with the self-test's reason, 1.0.0 stays. */
    CHECK([store installData:st1 error:&error] != nil);
    error = nil;
    CHECK([store installData:st2 error:&error] == nil);
    CHECK(refused(error, KSDeliveryErrorSelftestFailed, KSErrorCodeChecksumMismatch));
    CHECK([rec->events count] == 6);
    NSString *why = event_reason([rec->events lastObject], @"ROLLED_BACK stface 2.0.0: ");
    CHECK(why != nil && [why hasPrefix:@"stface 2.0.0: self-test failed: model.ksm: output"]);
    CHECK([why isEqualToString:[store lastRollbackOfPackage:@"stface" error:&error]]);
    CHECK([[[store currentPackage:@"stface" error:&error] versionString] isEqualToString:@"1.0.0"]);
    [store release];

    /* An observer that raises: the call raises after the store finished; the change stands. */
    TestStoreObserver *broke = [[[TestStoreObserver alloc] init] autorelease];
    broke->raise = YES;
    store = [[KSStore alloc] initWithDirectory:@WORK "/raising"
                                   trustedKeys:keys
                                   keyProvider:nil
                                      observer:broke
                                         error:&error];
    CHECK_OK(store != nil, error);
    if (store == nil) return;
    NSString *reason = nil;
    RAISED([store installData:v1 error:&error], reason);
    CHECK(reason != nil && [reason isEqualToString:@"observer broke on 1.0.0"]);
    CHECK([[[store currentPackage:@"face" error:&error] versionString] isEqualToString:@"1.0.0"]);
    CHECK_OK([store checkPackage:@"face" error:&error], error);
    RAISED([store installFile:@WORK "/v2.kspkg" error:&error], reason);
    CHECK(reason != nil && [reason isEqualToString:@"observer broke on 2.0.0"]);
    CHECK([[[store currentPackage:@"face" error:&error] versionString] isEqualToString:@"2.0.0"]);
    CHECK([[[store previousPackage:@"face" error:&error] versionString] isEqualToString:@"1.0.0"]);
    CHECK_OK([store rollbackPackage:@"face" error:&error], error); /* reports nothing */
    RAISED([store installData:st1 error:&error], reason);
    CHECK(reason != nil);
    RAISED([store installData:st2 error:&error], reason); /* self-test fails */
    CHECK(reason != nil && [reason isEqualToString:@"observer broke on 2.0.0"]);
    CHECK([[[store currentPackage:@"stface" error:&error] versionString] isEqualToString:@"1.0.0"]);
    why = [store lastRollbackOfPackage:@"stface" error:&error];
    CHECK(why != nil && [why rangeOfString:@"self-test failed"].location != NSNotFound);
    error = nil;
    CHECK([store installData:st2 error:&error] == nil); /* marked bad all the same */
    CHECK(refused(error, KSDeliveryErrorKnownBad, KSErrorCodeInvalidState));
    RAISED([store markBadPackage:@"face" reason:@"bad" error:&error], reason);
    CHECK(reason != nil && [reason isEqualToString:@"observer broke on 1.0.0"]);
    error = nil;
    CHECK([store currentPackage:@"face" error:&error] == nil);
    CHECK(refused(error, KSDeliveryErrorNotInstalled, KSErrorCodeInvalidArgument));
    CHECK([broke->events count] == 5);
    [store release];

    /* An observer that calls its own store: refused, no deadlock; the install is done. */
    TestStoreObserver *reentrant = [[[TestStoreObserver alloc] init] autorelease];
    store = [[KSStore alloc] initWithDirectory:@WORK "/reentrant"
                                   trustedKeys:keys
                                   keyProvider:nil
                                      observer:reentrant
                                         error:&error];
    CHECK_OK(store != nil, error);
    if (store == nil) return;
    reentrant->store = store;
    CHECK_OK([store installData:v1 error:&error] != nil, error);
    CHECK([reentrant->events count] == 1 && reentrant->callbackError != nil &&
          [reentrant->callbackError code] == KSErrorCodeInvalidState);
    CHECK([[reentrant->callbackError localizedDescription] rangeOfString:@"observer"].location !=
          NSNotFound);
    CHECK([[[store currentPackage:@"face" error:&error] versionString] isEqualToString:@"1.0.0"]);
    [store release];
}

#if defined(KS_PROTECT_TOOL)

/* A package whose self-test model is encrypted: refused with NoKey without a provider, with a
 * wrong key and with a provider that has none; installed with the right key, asked by name. */
static void test_encrypted_selftest(NSArray *keys) {
    NSString *plain = [[KSModels directory] stringByAppendingPathComponent:@MODEL];
    CHECK(ks_test_run("mkdir -p " WORK "/enc/pkg && %s keygen " WORK
                      "/enc/app.key && %s keygen " WORK "/enc/other.key",
                      KS_PROTECT_TOOL, KS_PROTECT_TOOL) == 0);
    CHECK(ks_test_run("%s encrypt --key-file " WORK "/enc/app.key %s " WORK "/enc/pkg/model.ksm",
                      KS_PROTECT_TOOL, [plain UTF8String]) == 0);
    NSData *golden = golden_selftest(plain, "model.ksm", 0.0f);
    CHECK(golden != nil && [golden writeToFile:@WORK "/enc/pkg/selftest.kst" atomically:NO]);
    CHECK(ks_test_run("%s sign --key " WORK "/release.sec " WORK "/enc/pkg " WORK
                      "/enc/enc.kspkg --id encface --version 1.0.0 --encryption-key-name app-key",
                      KS_SIGN_TOOL) == 0);
    NSData *pkg = ks_test_read(@WORK "/enc/enc.kspkg");
    NSData *appKey = ks_test_read(@WORK "/enc/app.key");
    NSData *otherKey = ks_test_read(@WORK "/enc/other.key");
    CHECK(pkg != nil && [appKey length] == 32 && [otherKey length] == 32);
    if (pkg == nil) return;
    NSError *error = nil;
    TestStoreKeys *right = [[[TestStoreKeys alloc] initWithKey:appKey] autorelease];
    TestStoreKeys *wrong = [[[TestStoreKeys alloc] initWithKey:otherKey] autorelease];
    TestStoreKeys *none = [[[TestStoreKeys alloc] initWithKey:nil] autorelease];
    id<KSKeyProvider> providers[] = {nil, wrong, none, right};
    for (int i = 0; i < 4; i++) {
        KSStore *store = [[KSStore alloc] initWithDirectory:@WORK "/enc/store"
                                                trustedKeys:keys
                                                keyProvider:providers[i]
                                                      error:&error];
        CHECK_OK(store != nil, error);
        error = nil;
        KSPackageInfo *info = [store installData:pkg error:&error];
        if (i < 3) {
            CHECK(info == nil && refused(error, KSDeliveryErrorNoKey, KSErrorCodeInvalidArgument));
            CHECK(i != 0 || strstr([[error localizedDescription] UTF8String], "app-key") != NULL);
        } else {
            CHECK_OK(info != nil && [info.encryptionKeyName isEqualToString:@"app-key"], error);
            CHECK([right->asked count] == 1 &&
                  [[right->asked objectAtIndex:0] isEqualToString:@"app-key"]);
        }
        [store release];
    }
    CHECK([wrong->asked count] == 1 && [none->asked count] == 1);
}
#endif

static void test_store(void) {
    NSString *model = [[KSModels directory] stringByAppendingPathComponent:@MODEL];
    CHECK(ks_test_run("rm -rf " WORK " && mkdir -p " WORK "/pkg/notes") == 0);
    CHECK(ks_test_run("cp %s " WORK "/pkg/detector.ksm && printf 'short range' > " WORK
                      "/pkg/notes/readme.txt",
                      [model UTF8String]) == 0);
    CHECK(ks_test_run("%s keygen " WORK "/release && %s keygen " WORK "/other", KS_SIGN_TOOL,
                      KS_SIGN_TOOL) == 0);
    NSData *v1 = sign("release", "1.0.0", 100, "v1.kspkg");
    NSData *v2 = sign("release", "2.0.0", 200, "v2.kspkg");
    NSData *foreign = sign("other", "3.0.0", 300, "v3.kspkg");
    CHECK(v1 != nil && v2 != nil && foreign != nil);
    if (v1 == nil || v2 == nil || foreign == nil) return;
    NSError *error = nil;
    NSString *hex = [NSString stringWithContentsOfFile:@WORK "/release.pub"
                                              encoding:NSUTF8StringEncoding
                                                 error:NULL];
    NSData *pub = [KSStore publicKeyFromHex:hex error:&error];
    CHECK_OK(pub != nil && [pub length] == 32, error);
    if (pub == nil) return;
    NSArray *keys = [NSArray arrayWithObject:pub];

    KSStore *store = [[KSStore alloc] initWithDirectory:@WORK "/store"
                                            trustedKeys:keys
                                                  error:&error];
    CHECK_OK(store != nil, error);
    if (store == nil) return;

    /* Nothing installed yet. */
    error = nil;
    CHECK([store currentPackage:@"face" error:&error] == nil);
    CHECK(refused(error, KSDeliveryErrorNotInstalled, KSErrorCodeInvalidArgument));

    KSPackageInfo *i1 = [store installData:v1 error:&error];
    CHECK_OK(i1 != nil, error);
    CHECK([i1.packageId isEqualToString:@"face"] && [i1.versionString isEqualToString:@"1.0.0"]);
    CHECK(i1.issued == 100 && i1.numFiles == 2 && [i1.digest length] == 32 &&
          [i1.keyId length] == 8);
    CHECK([[store currentPackage:@"face" error:&error] isEqual:i1]);
    NSString *path = [store pathOfFile:@"detector.ksm" inPackage:@"face" error:&error];
    CHECK_OK(path != nil, error);
    CHECK([ks_test_read(path) isEqualToData:ks_test_read(model)]);

    /* v2 from the downloaded file. */
    KSPackageInfo *i2 = [store installFile:@WORK "/v2.kspkg" error:&error];
    CHECK_OK(i2 != nil && [i2.versionString isEqualToString:@"2.0.0"], error);
    CHECK([[[store previousPackage:@"face" error:&error] versionString] isEqualToString:@"1.0.0"]);
    CHECK_OK([store checkPackage:@"face" error:&error], error);
    CHECK([[store installData:v2 error:&error] isEqual:i2]); /* already current: nothing to do */

    /* Refusals, each with its cause; v2 stays. */
    NSMutableData *bad = [NSMutableData dataWithData:v2];
    ((uint8_t *)[bad mutableBytes])[[bad length] - 100] ^= 1;
    error = nil;
    CHECK([store installData:bad error:&error] == nil);
    CHECK(refused(error, KSDeliveryErrorHashMismatch, KSErrorCodeChecksumMismatch));
    CHECK(strstr([[error localizedDescription] UTF8String], "detector.ksm") != NULL);
    bad = [NSMutableData dataWithData:v2];
    ((uint8_t *)[bad mutableBytes])[32 + 1 + 4] ^= 1; /* the manifest's version */
    error = nil;
    CHECK([store installData:bad error:&error] == nil);
    CHECK(refused(error, KSDeliveryErrorBadSignature, KSErrorCodeTampered));
    error = nil;
    CHECK([store installData:foreign error:&error] == nil);
    CHECK(refused(error, KSDeliveryErrorUnknownKey, KSErrorCodeTampered));
    error = nil;
    CHECK([store installData:v1 error:&error] == nil);
    CHECK(refused(error, KSDeliveryErrorDowngrade, KSErrorCodeInvalidState));
    error = nil;
    CHECK([store installData:[v2 subdataWithRange:NSMakeRange(0, [v2 length] - 10)]
                       error:&error] == nil);
    CHECK(refused(error, KSDeliveryErrorMalformed, KSErrorCodeInvalidModel));
    error = nil;
    CHECK([store installFile:@WORK "/missing.kspkg" error:&error] == nil);
    CHECK(error != nil && [error code] == KSErrorCodeIOError);
    CHECK([[store currentPackage:@"face" error:&error] isEqual:i2]);
    CHECK_OK([store checkPackage:@"face" error:&error], error);

    /* Roll back; then v2 again, marked bad by the app: v1 back, v2 never again. */
    CHECK_OK([store rollbackPackage:@"face" error:&error], error);
    CHECK([[store currentPackage:@"face" error:&error] isEqual:i1]);
    error = nil;
    CHECK(![store rollbackPackage:@"face" error:&error]);
    CHECK(refused(error, KSDeliveryErrorNoPrevious, KSErrorCodeInvalidArgument));
    CHECK([[store lastRollbackOfPackage:@"face" error:&error] isEqualToString:@""]);
    CHECK([store installData:v2 error:&error] != nil);
    CHECK_OK([store markBadPackage:@"face" reason:@"no face on the reference photo" error:&error],
             error);
    CHECK([[store currentPackage:@"face" error:&error] isEqual:i1]);
    NSString *why = [store lastRollbackOfPackage:@"face" error:&error];
    CHECK(why != nil &&
          [why rangeOfString:@"no face on the reference photo"].location != NSNotFound);
    error = nil;
    CHECK([store installData:v2 error:&error] == nil);
    CHECK(refused(error, KSDeliveryErrorKnownBad, KSErrorCodeInvalidState));

    /* One store per folder. */
    error = nil;
    KSStore *second = [[KSStore alloc] initWithDirectory:@WORK "/store"
                                             trustedKeys:keys
                                                   error:&error];
    CHECK(second == nil && error != nil && [error code] == KSErrorCodeInvalidState);

    /* An installed file changed on disk. */
    path = [store pathOfFile:@"notes/readme.txt" inPackage:@"face" error:&error];
    CHECK(path != nil && ks_test_run("printf 'S' | dd of=%s bs=1 count=1 conv=notrunc 2>/dev/null",
                                     [path UTF8String]) == 0);
    error = nil;
    CHECK(![store checkPackage:@"face" error:&error]);
    CHECK(refused(error, KSDeliveryErrorStoreCorrupt, KSErrorCodeChecksumMismatch));
    [store release];

    /* Released: the folder opens again, with v1 current. */
    store = [[KSStore alloc] initWithDirectory:@WORK "/store" trustedKeys:keys error:&error];
    CHECK_OK(store != nil, error);
    CHECK([[[store currentPackage:@"face" error:&error] versionString] isEqualToString:@"1.0.0"]);
    [store release];

    /* Bad arguments. */
    error = nil;
    CHECK([[KSStore alloc] initWithDirectory:@WORK "/x"
                                 trustedKeys:[NSArray arrayWithObject:[NSData data]]
                                       error:&error] == nil);
    CHECK(error != nil && [error code] == KSErrorCodeInvalidArgument);
    error = nil;
    CHECK([[KSStore alloc] initWithDirectory:@WORK "/x" trustedKeys:[NSArray array]
                                       error:&error] == nil);
    CHECK(error != nil && [error code] == KSErrorCodeInvalidArgument);
    error = nil;
    CHECK([KSStore publicKeyFromHex:@"abc" error:&error] == nil && error != nil);
    CHECK([KSStore maxPackageBytes] > (1ull << 30));
    test_events(keys, v1, v2);
#if defined(KS_PROTECT_TOOL)
    test_encrypted_selftest(keys);
#endif
    CHECK(ks_test_run("rm -rf " WORK) == 0);
}
#endif

int main(void) {
#if !defined(KS_SIGN_TOOL)
    fprintf(stderr, "SKIP: ks-sign (the delivery module) is not built\n");
    return KS_TEST_SKIP;
#else
    NSAutoreleasePool *outer = [[NSAutoreleasePool alloc] init];
#ifdef GNUSTEP
    GSDebugAllocationActive(YES);
#endif
    int rc = ks_test_models(MODEL);
    if (rc != 0) {
        [outer drain];
        return rc;
    }
    NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
    test_store();
    [pool drain];
#ifdef GNUSTEP
    Class classes[] = {
        [KSStore class], [KSPackageInfo class], [TestStoreKeys class], [TestStoreObserver class]};
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        int live = GSDebugAllocationCount(classes[i]);
        if (live != 0)
            fprintf(stderr, "leak: %d live %s\n", live, [NSStringFromClass(classes[i]) UTF8String]);
        CHECK(live == 0);
    }
#endif
    [outer drain];
    return ks_test_finish("objc_test_store");
#endif
}
