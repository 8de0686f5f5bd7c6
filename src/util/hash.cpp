#include "util/hash.h"

#include <fmt/format.h>
#include <xxhash.h>

namespace temper::util {

struct Hasher::State {
  XXH3_state_t* s = XXH3_createState();
  ~State() { XXH3_freeState(s); }
};

Hasher::Hasher() : m_state(std::make_unique<State>()) { XXH3_128bits_reset(m_state->s); }
Hasher::~Hasher() = default;

Hasher& Hasher::add_raw(const void* data, size_t size) {
  XXH3_128bits_update(m_state->s, data, size);
  return *this;
}

Hasher& Hasher::add(std::string_view bytes) {
  uint64_t n = bytes.size();
  add_raw(&n, sizeof n);
  return add_raw(bytes.data(), bytes.size());
}

Hasher& Hasher::add(int64_t value) { return add_raw(&value, sizeof value); }

std::string Hasher::hex() const {
  XXH128_hash_t h = XXH3_128bits_digest(m_state->s);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::string hash_hex(std::string_view bytes) {
  Hasher h;
  h.add(bytes);
  return h.hex();
}

uint64_t hash64(const void* data, size_t size, uint64_t seed) { return XXH3_64bits_withSeed(data, size, seed); }

} // namespace temper::util
