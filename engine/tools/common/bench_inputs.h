/* Inputs of a benchmark run (ks-bench): each model input's shape (from an .npy file, a
 * NAME=AxBxC spec, or the model's own with dynamic dimensions 1), the .npy data, and seeded
 * random data for the rest.
 *
 *     ks_npy npys[n] = {0};  ks_tensor_shape shapes[n];
 *     ks__bench_prepare_inputs(model, &specs, npys, shapes, err, sizeof(err));
 *     ks_session_reshape(s, shapes);
 *     ks__bench_fill_inputs(s, n, npys, &range, seed, err, sizeof(err));
 *
 * Random data: float inputs that look like images (rank 4 with 1, 3 or 4 channels in the last or
 * second position) are uniform in [0,1], which is inside the valid range of models normalised to
 * [0,1] as well as [-1,1]; other float inputs are uniform in [-1,1]; u8/i8 use their full range
 * (quantized inputs are meant to be fed raw); integer index-like inputs are 0; bool is 0/1. A
 * given range overrides the float range. Thread safety: no shared state. */
#ifndef KESTREL_BENCH_INPUTS_H
#define KESTREL_BENCH_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kestrel/engine.h"
#include "npy.h"

/* The input options of a run; the strings are borrowed. */
typedef struct ks__bench_input_specs {
    const char *const *files; /* NAME=FILE.npy, or FILE.npy by position (all or none named) */
    int num_files;
    const char *const *shapes; /* NAME=AxBxC (x, X or , between dims) */
    int num_shapes;
} ks__bench_input_specs;

/* Decides every input's shape into shapes[ks_model_num_inputs(model)] and reads the .npy files
 * into npys (free each with ks_npy_free, also on failure). */
ks_status ks__bench_prepare_inputs(const ks_model *model, const ks__bench_input_specs *specs,
                                   ks_npy *npys, ks_tensor_shape *shapes, char *err,
                                   size_t err_cap);

/* "1x3x224x224" -> shape; false when malformed. */
bool ks__bench_parse_dims(const char *s, ks_tensor_shape *shape);

typedef struct ks__bench_range {
    bool given; /* false: the per-input heuristic above */
    float lo, hi;
} ks__bench_range;

/* Fills t with random data from the splitmix64 state *rng (seed it with the run's seed). */
void ks__bench_fill_random(const ks_tensor *t, const ks__bench_range *range, uint64_t *rng);

/* Copies npys[i] into each input i (of num_inputs) of the reshaped session s that has one,
 * random data (one stream from seed, in input order) into the others. */
ks_status ks__bench_fill_inputs(ks_session *s, uint32_t num_inputs, const ks_npy *npys,
                                const ks__bench_range *range, uint64_t seed, char *err,
                                size_t err_cap);

#endif
