// The host's side of the device-content library (device/device_content.cu): the same mix and
// the same hash, bit for bit, so the judge can rebuild any timed call's inputs for its sampled
// check and compare outputs it fetched with the hashes the worker computed on the device. Also
// the library's source, which the judge compiles with nvcc for the device at hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace temper::backend::device_content {

// The library's source text (device/device_content.cu), built into temper.
std::string_view library_source();

// dst[i] = element i of `a` when bit i of the call's seed stream is set, else of `b`; elements
// of `elem_bytes` bytes, `bytes` in all (temper_dc_mix).
void mix(unsigned char* dst, const unsigned char* a, const unsigned char* b, size_t bytes, size_t elem_bytes, uint64_t seed);

// Whether element i takes draw 0 (`a`).
bool takes_first(uint64_t seed, uint64_t element);

// One buffer's hash before combining (temper_dc_hash's per-buffer step).
uint64_t hash_bytes(const unsigned char* p, size_t bytes);

// Folds buffers' hashes in order, as temper_dc_hash does: start from 0.
uint64_t combine(uint64_t h, uint64_t buffer_hash, size_t buffer_bytes);

// The seed of one timed call of a job.
uint64_t call_seed(uint64_t job_seed, int64_t case_id, int content);

} // namespace temper::backend::device_content
