/* libFuzzer target for the landmark fixture reader (ar_render/tools/landmark_fixture.c). Seeds:
 * the JSON files of ar_render/tests/fixtures. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "landmark_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static ks_ar_fixture fx;
    char err[256];
    (void)ks_ar_fixture_parse((const char *)data, size, &fx, err, sizeof(err));
    return 0;
}
