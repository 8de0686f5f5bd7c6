// Content hashing for cache keys and fingerprints (XXH3-128, hex encoded).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace temper::util {

class Hasher {
public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  // Adds a field; each field is length-prefixed so ("ab","c") and ("a","bc") differ.
  Hasher& add(std::string_view bytes);
  Hasher& add(int64_t value);
  Hasher& add_raw(const void* data, size_t size);
  std::string hex() const; // 32 hex digits

private:
  struct State;
  std::unique_ptr<State> m_state;
};

std::string hash_hex(std::string_view bytes);
uint64_t hash64(const void* data, size_t size, uint64_t seed = 0);

} // namespace temper::util
