/* Helpers shared by the delivery tests: keys, an in-memory model, packages, scratch folders. */
#ifndef KESTREL_DELIVERY_TEST_UTIL_H
#define KESTREL_DELIVERY_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "package.h"

/* A deterministic Ed25519 key pair from one seed byte. */
void dt_keypair(uint8_t seed, uint8_t pk[32], uint8_t sk[64]);
/* A .ksm built in memory: y[1,4] = relu(x[1,4] + bias), free with free(). */
uint8_t *dt_model(float bias, size_t *size_out);
/* selftest.kst for dt_model(bias): input {0.5, -1, 2, -3}, expected relu(x + expect_bias). */
uint8_t *dt_selftest(const char *model_name, float expect_bias, size_t *size_out);
/* A signed package of up to 4 files (name/data/size triples), free with free(). */
uint8_t *dt_package(const uint8_t sk[64], const char *id, uint32_t major, uint32_t minor,
                    uint32_t patch, uint64_t issued, uint32_t num_files,
                    const ks__pkg_src_file *files, size_t *size_out);
/* The usual test package: model.ksm (dt_model(bias)) and notes/readme.txt. */
uint8_t *dt_simple_package(const uint8_t sk[64], uint32_t major, uint64_t issued, float bias,
                           size_t *size_out);
/* A fresh empty folder KS_BINARY_DIR/NAME (removed first). Static storage per call. */
const char *dt_fresh_dir(const char *name, char *buf, size_t cap);
void dt_remove_tree(const char *path);
/* Path of a model under the build's bundles/ksm (KS_TEST_BUNDLES_DIR overrides), or NULL when
 * missing (the caller skips with a message). */
const char *dt_bundle_file(const char *rel, char *buf, size_t cap);
/* Whole file into malloc'd memory, NULL on failure. */
uint8_t *dt_read(const char *path, size_t *size_out);

#endif
