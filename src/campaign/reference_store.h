// Where sealed references live. The orchestrator asks the store to seal a kernel (the task's
// reference at the start, each round's promoted candidate later) and, to run the judge, for a
// path to the sealed source. Agents never see it: the store lives under CAMPAIGN/vault/, which
// no sandbox binds. The sealed store of the seal layer replaces VaultReferenceStore on merge.
#pragma once

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace temper::campaign {

struct SealedReference {
  std::string id;                 // R0 (the starting reference), R1 (promoted by round 1), ...
  std::string label;              // where it came from ("task reference", "round 1 attempt 7")
  std::filesystem::path source;   // for the judge only
  std::string sha;                // content hash of the source

  nlohmann::json to_json() const; // without the source path
};

class ReferenceStore {
public:
  virtual ~ReferenceStore() = default;
  // Seals `source` under `id` (idempotent: sealing the same content again returns the entry).
  virtual Expected<SealedReference> seal(const std::filesystem::path& source, const std::string& id,
                                         const std::string& label) = 0;
  virtual Expected<SealedReference> get(const std::string& id) = 0;
};

// Copies sources into DIR/<id>/reference.cpp with a meta.json.
class VaultReferenceStore final : public ReferenceStore {
public:
  explicit VaultReferenceStore(std::filesystem::path dir) : m_dir(std::move(dir)) {}
  Expected<SealedReference> seal(const std::filesystem::path& source, const std::string& id,
                                 const std::string& label) override;
  Expected<SealedReference> get(const std::string& id) override;

private:
  std::filesystem::path m_dir;
};

} // namespace temper::campaign
