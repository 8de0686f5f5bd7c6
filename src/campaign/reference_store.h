// Where a campaign's sealed references live. The orchestrator asks the store to seal a kernel
// (the task's reference at the start, each round's promoted candidate later) and, to run the
// judge, for the sealed entry: its name and store, never a source path. The judge takes it as
// `temper judge --reference NAME --store DIR` does (its artifacts are timed, their exports feed
// calls_reference, the candidate must be built with the sealed compiler and flags). Agents never
// see the store: it is CAMPAIGN/refs, outside every workspace, and no sandbox binds it.
#pragma once

#include "build/compiler.h"
#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace temper::campaign {

struct SealedReference {
  std::string id;                // R0 (the starting reference), R1 (promoted by round 1), ...: its name in the store
  std::string label;             // where it came from ("task reference", "round 1 attempt 7 (M2)")
  std::string sha;               // content hash of the source (the source itself stays in the vault)
  std::filesystem::path store;   // the store that holds it

  nlohmann::json to_json() const; // id, label, sha: nothing that leads to the source
};

class ReferenceStore {
public:
  virtual ~ReferenceStore() = default;
  // Seals `source` under `id` (idempotent: sealing the same content again returns the entry;
  // other content under an existing id is an error). The caller's source is left in place.
  virtual Expected<SealedReference> seal(const std::filesystem::path& source, const std::string& id,
                                         const std::string& label) = 0;
  virtual Expected<SealedReference> get(const std::string& id) = 0;
};

// The judge's sealed store (judge/seal.h): every case's artifact built with the campaign's
// compiler and flags, a manifest (name, hashes, compiler, flags, origin = the label, task), and
// a copy of the source in the entry's vault/.
class SealedReferenceStore final : public ReferenceStore {
public:
  SealedReferenceStore(std::filesystem::path store, std::filesystem::path task_dir, build::CompilerSpec compiler,
                       util::ProcessRunner& runner, int jobs = 0)
      : m_store(std::move(store)), m_task_dir(std::move(task_dir)), m_compiler(std::move(compiler)), m_runner(runner), m_jobs(jobs) {}
  Expected<SealedReference> seal(const std::filesystem::path& source, const std::string& id,
                                 const std::string& label) override;
  Expected<SealedReference> get(const std::string& id) override;

private:
  std::filesystem::path m_store;
  std::filesystem::path m_task_dir;
  build::CompilerSpec m_compiler;
  util::ProcessRunner& m_runner;
  int m_jobs;
};

} // namespace temper::campaign
