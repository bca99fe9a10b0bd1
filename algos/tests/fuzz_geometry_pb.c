/* libFuzzer target for the geometry_pipeline_metadata reader: any byte string must parse or fail
 * with a status, never crash, read out of bounds or leak. Seed with
 * models/face_landmarks/geometry_pipeline_metadata_landmarks.binarypb. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "face_geometry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ks__face_geometry_metadata *md = NULL;
    char err[256];
    if (ks__face_geometry_parse(NULL, data, size, &md, err, sizeof(err)) == KS_STATUS_OK) {
        /* Touch every array so ASan sees any size/offset mistake. */
        volatile float acc = 0.0f;
        for (uint32_t i = 0; i < md->num_vertices * 5u; i++)
            acc += md->vertices[i];
        for (uint32_t i = 0; i < md->num_indices; i++)
            acc += md->vertices[5u * md->indices[i]];
        for (uint32_t i = 0; i < md->num_basis; i++)
            acc += md->vertices[5u * md->basis_ids[i]] * md->basis_weights[i];
        (void)acc;
        ks__face_geometry_metadata_destroy(md);
    }
    return 0;
}
