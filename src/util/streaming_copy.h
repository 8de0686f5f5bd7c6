// Copies and fills that leave the destination out of the caches (non-temporal stores): the judge
// writes a timed call's inputs after the cold-cache step, so the kernel still finds them in
// memory, not in a cache the judge warmed.
#pragma once

#include <cstddef>

namespace temper::util {

// memcpy, with the destination written around the caches. Ends with a store fence.
void copy_streaming(void* dst, const void* src, size_t n);

// memset to `byte`, likewise.
void fill_streaming(void* dst, unsigned char byte, size_t n);

} // namespace temper::util
