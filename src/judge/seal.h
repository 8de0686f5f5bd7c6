// Sealed references: a reference kernel built once for every case of its task (per-case
// specialization as the judge does it, through the compile cache), kept as artifacts with a
// manifest, its source moved into a vault that no command prints. From then on the reference is
// a black box, known by name: it can be run, timed, profiled and disassembled, never read.
//
// Store layout (a store is $TEMPER_HOME/refs by default, CAMPAIGN/vault in a campaign):
//   STORE/NAME/manifest.json         schema_version, name, hashes, compiler, flags, origin, date,
//                                    task, per-case artifact paths (relative to STORE/NAME)
//   STORE/NAME/artifacts/*.so        the built kernels (copies, independent of the compile cache)
//   STORE/NAME/vault/SOURCE          the source, mode 0400 in a 0700 directory
// A sealed reference is published by one rename of a private directory: it is complete or absent.
#pragma once

#include "build/compiler.h"
#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace temper::judge {

inline constexpr int kSealSchemaVersion = 1;

struct SealedRef {
  std::string name;
  std::filesystem::path dir;             // STORE/NAME
  std::string source_sha;                // content hash of the source (util::hash_hex)
  std::string content_hash;              // hash over every artifact's bytes: the reference's identity
  std::string compiler;                  // the program, as given ("g++")
  std::string compiler_version;          // first line of --version
  std::string compiler_key;              // build::CompilerIdentity::key
  std::vector<std::string> flags;
  std::string cuda_arch;                 // built by nvcc for this architecture ("sm_90"); empty: a CPU build
  std::string origin;                    // where it came from (the source path, or a campaign's label)
  std::string date;                      // UTC, when sealed
  std::string task;                      // operator name
  std::filesystem::path task_dir;        // absolute
  bool specialized = false;              // built once per case
  std::map<int64_t, std::filesystem::path> case_artifacts; // absolute paths, every case of the task

  nlohmann::json to_json() const;        // the manifest (artifact paths relative to dir)
};

struct SealOptions {
  std::filesystem::path task_dir;
  std::filesystem::path source;
  std::string name;                      // letters, digits, '.', '_', '-'; not starting with '.'
  std::filesystem::path store;           // empty: default_store()
  build::CompilerSpec compiler;
  std::string origin;                    // empty: the source's absolute path
  bool keep_source = false;              // copy the source into the vault instead of moving it
  int jobs = 0;                          // parallel compiles; 0: one per core
};

// $TEMPER_HOME/refs, or ~/.temper/refs.
std::filesystem::path default_store();

// Whether `name` is a valid sealed name (see SealOptions::name).
bool valid_sealed_name(std::string_view name);

// Builds the reference for every case of the task, checks each build, writes the store entry
// and moves (or copies) the source into its vault. Refuses an existing name and a source that
// does not compile (the message carries the diagnostics: the source is still the caller's).
Expected<SealedRef> seal(const SealOptions& options, util::ProcessRunner& runner);

// A sealed reference by name; the error says which names the store has.
Expected<SealedRef> find_sealed(const std::filesystem::path& store, std::string_view name);

// Every sealed reference in the store, by name. A missing store is an empty list.
Expected<std::vector<SealedRef>> list_sealed(const std::filesystem::path& store);

// The artifact the judge runs for one case.
Expected<std::filesystem::path> sealed_artifact(const SealedRef& ref, int64_t case_id);

// The symbols a candidate must not import (judge::callable_exports over every artifact).
Expected<std::set<std::string>> sealed_exports(const SealedRef& ref);

// Refuses a sealed reference built for another target than `compiler` builds for (the CPU, or
// a CUDA architecture): the judge and the probe compare only builds for the same one.
Status check_sealed_target(const SealedRef& ref, const build::CompilerSpec& compiler);

// The manifest of a store entry, for callers that only want the facts (`ref list`).
Expected<SealedRef> read_manifest(const std::filesystem::path& dir);

} // namespace temper::judge
