// Deterministic input generation: values from a case's value_range, reproducible from a secret
// job seed combined with the public case id, the trial number and the input's position.
#pragma once

#include "core/task.h"
#include "core/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace temper::core {

// Mixes the job seed (secret), case id (public), trial and input index into one seed.
uint64_t derive_seed(uint64_t job_seed, int64_t case_id, int trial, int input_index);

// A short public name for a job seed, for reports: identifies the job without revealing it.
std::string seed_id(uint64_t job_seed);

// Fills `t` with values for `range`:
//  - finite [lo, hi]: uniform; [0, 0] gives zeros;
//  - [nan, nan]: all NaN;
//  - an infinite bound (e.g. [-inf, inf]): about 1 in 8 elements +inf or -inf on the infinite
//    side(s); the rest finite, with magnitudes spread evenly over octaves from 2^-8 to 1e4, so
//    sums of two inputs stay finite even in fp16 and infinities in outputs come from inputs.
// Values are rounded to the tensor's dtype; integers are uniform over the rounded range.
// Generation is parallel over blocks and independent of thread count.
void fill_input(HostTensor& t, const ValueRange& range, uint64_t seed);

// Generates every tensor of case `c` for one trial, flat as in Case::input_shapes (a list's
// elements in order, nothing for an absent input), each from its own value range.
std::vector<HostTensor> generate_inputs(const Operator& op, const Case& c, uint64_t job_seed, int trial);

// Refills `inputs` (from generate_inputs for the same case) in place with the values of another
// trial: what generate_inputs would give, without allocating. The timing job draws fresh values
// for every call this way.
void regenerate_inputs(std::vector<HostTensor>& inputs, const Case& c, uint64_t job_seed, int trial);

// Whether fill_input draws uniform floating-point values eight at a time (AVX-512 F, DQ, BW and
// VL); the bytes are the scalar path's either way. allow_vector_fill(false) forces the
// scalar path (tests compare the two).
bool vector_fill_available();
void allow_vector_fill(bool allow);

} // namespace temper::core
