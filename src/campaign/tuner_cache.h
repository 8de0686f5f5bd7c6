// The tuner's measurement cache: one probe result of one variant on one case, keyed by the task
// (name and a hash of its definition files), the case, the target, the reference it was
// measured against, the candidate (its source without the tuner block) and the knob values. One
// JSON file per entry under CACHE/tuner/ (util::cache_root()), written atomically, so a kill
// never leaves a torn entry and two runs never corrupt each other. Only measured correct
// variants and failures (with their status) are stored: a variant that passed but was not timed
// is measured again next time.
#pragma once

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace temper::campaign::tuner {

struct CacheKey {
  std::string task;       // task name
  std::string task_hash;  // hash of its definition files (task_definition_hash)
  int64_t case_id = 0;
  std::string target;     // the kb layer's target fingerprint id
  std::string reference;  // hash of the reference source the speedup is against
  std::string candidate;  // hash of the candidate source without the tuner block
  std::string knobs;      // build::knob_label of the full assignment

  nlohmann::json to_json() const;
  std::string digest() const; // 32 hex digits over every field
};

struct Measurement {
  std::string status;                 // PASSED, COMPILE_ERROR, INCORRECT_NUMERICAL, ...
  std::optional<double> speedup;      // paired speedup over the reference (timed variants)
  std::optional<double> ci_lo, ci_hi; // its 95% interval, when determined
  std::string verdict;                // FASTER | SLOWER | SAME | AMBIGUOUS
  std::string message;                // why it failed
  bool cached = false;                // read from the cache (not stored)

  bool timed() const { return status == "PASSED" && speedup.has_value(); }
  // TOO_SLOW says the cap could not hold a verdict on this run (a loaded machine, a slow
  // reference), not that the variant is bad: it is neither cached nor a reason to drop it.
  bool too_slow() const { return status == "TOO_SLOW"; }
  bool cacheable() const { return timed() || (!status.empty() && status != "PASSED" && !too_slow()); }
  nlohmann::json to_json() const;
  static Measurement from_json(const nlohmann::json& j);
};

// Hash of a task's definition: every regular file at the top of the task directory except its
// prose (*.md), in name order, names and contents.
Expected<std::string> task_definition_hash(const std::filesystem::path& task_dir);

class TunerCache {
public:
  explicit TunerCache(std::filesystem::path dir) : m_dir(std::move(dir)) {}
  // An entry whose stored key differs from `key` (a digest collision) or that cannot be read
  // is a miss.
  std::optional<Measurement> get(const CacheKey& key) const;
  // Stores a cacheable measurement; others are ignored.
  Status put(const CacheKey& key, const Measurement& m) const;
  const std::filesystem::path& dir() const { return m_dir; }

private:
  std::filesystem::path file_of(const CacheKey& key) const;
  std::filesystem::path m_dir;
};

} // namespace temper::campaign::tuner
