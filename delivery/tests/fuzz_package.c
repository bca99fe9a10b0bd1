/* libFuzzer target for the package reader: the structural parser (what `ks-sign info` and the
 * store's installed manifests go through), the full verification of the input re-signed with the
 * fuzzer's own trusted key (so that mutations get past the signature to the manifest, size, path
 * and hash checks), and the self-test parser. None may crash, leak or read out of bounds. */
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kestrel/delivery.h"
#include "package.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t pk[32], sk[64];
    static int ready;
    if (!ready) {
        uint8_t seed[32];
        memset(seed, 1, sizeof(seed));
        if (sodium_init() < 0 || crypto_sign_seed_keypair(pk, sk, seed) != 0) abort();
        ready = 1;
    }
    ks__pkg *pkg = malloc(sizeof(*pkg));
    uint8_t *copy = malloc(size ? size : 1);
    if (!pkg || !copy) {
        free(pkg);
        free(copy);
        return 0;
    }
    char err[256];
    ks_delivery_error why;
    if (ks__pkg_parse(data, size, true, pkg, &why, err, sizeof(err)) == KS_STATUS_OK) {
        for (uint32_t i = 0; i < pkg->num_files; i++) /* every file lies inside the input */
            if (pkg->files[i].data < data ||
                pkg->files[i].data + pkg->files[i].size_bytes > data + size)
                abort();
    }
    ks__pkg_verify(data, size, pk, 1, pkg, &why, err, sizeof(err));
    memcpy(copy, data, size);
    if (ks__pkg_resign(copy, size, sk) == KS_STATUS_OK &&
        ks__pkg_verify(copy, size, pk, 1, pkg, &why, err, sizeof(err)) == KS_STATUS_OK &&
        (pkg->num_files == 0 || pkg->num_files > KS_PACKAGE_MAX_FILES))
        abort();
    ks_package_info info;
    ks_package_inspect(data, size, &info);
    char name[300];
    ks_package_file_name(data, size, 0, name, sizeof(name));
    free(pkg);
    free(copy);
    /* The self-test parsers, against a folder without models: parse errors and "cannot load". */
    bool key_problem;
    if (size >= 4 && memcmp(data, "KSTT", 4) == 0)
        ks__selftest_run(data, size, "/nonexistent-ks-fuzz", NULL, &key_problem, err, sizeof(err));
    if (size >= 4 && memcmp(data, "KSTF", 4) == 0)
        ks__selftest_face_run(data, size, "/nonexistent-ks-fuzz", NULL, &key_problem, err,
                              sizeof(err));
    return 0;
}
