#include "judge/seal.h"

#include "build/compile_cache.h"
#include "build/elf.h"
#include "core/task_loader.h"
#include "judge/boundary.h"
#include "judge/common.h"
#include "util/fs.h"
#include "util/hash.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <unistd.h>

namespace temper::judge {

namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = "manifest.json";

Expected<SealedRef> from_json(const nlohmann::json& j, const fs::path& dir) {
  try {
    if (j.at("schema_version").get<int>() != kSealSchemaVersion) {
      return fail("{}: manifest schema_version {} is not {}", dir.string(), j.at("schema_version").dump(), kSealSchemaVersion);
    }
    SealedRef r;
    r.name = j.at("name").get<std::string>();
    r.dir = dir;
    r.source_sha = j.at("source_sha").get<std::string>();
    r.content_hash = j.at("content_hash").get<std::string>();
    r.compiler = j.at("compiler").at("program").get<std::string>();
    r.compiler_version = j.at("compiler").at("version").get<std::string>();
    r.compiler_key = j.at("compiler").at("key").get<std::string>();
    r.flags = j.at("flags").get<std::vector<std::string>>();
    r.cuda_arch = j.at("compiler").value("cuda_arch", "");
    r.origin = j.at("origin").get<std::string>();
    r.date = j.at("date").get<std::string>();
    r.task = j.at("task").at("name").get<std::string>();
    r.task_dir = j.at("task").at("dir").get<std::string>();
    r.specialized = j.at("specialized").get<bool>();
    for (const auto& [id, rel] : j.at("cases").items()) r.case_artifacts[std::stoll(id)] = dir / rel.get<std::string>();
    return r;
  } catch (const std::exception& e) {
    return fail("{}: malformed manifest: {}", (dir / kManifest).string(), e.what());
  }
}

// Copies a file, or fails saying which.
Status copy_file(const fs::path& from, const fs::path& to, fs::perms perms) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return fail("cannot copy {} to {}: {}", from.string(), to.string(), ec.message());
  fs::permissions(to, perms, ec);
  return {};
}

} // namespace

nlohmann::json SealedRef::to_json() const {
  nlohmann::json cases = nlohmann::json::object();
  for (const auto& [id, path] : case_artifacts) cases[std::to_string(id)] = path.lexically_relative(dir).string();
  nlohmann::json compiler_json = {{"program", compiler}, {"version", compiler_version}, {"key", compiler_key}};
  if (!cuda_arch.empty()) compiler_json["cuda_arch"] = cuda_arch;
  return {{"schema_version", kSealSchemaVersion},
          {"kind", "temper.sealed_reference"},
          {"name", name},
          {"source_sha", source_sha},
          {"content_hash", content_hash},
          {"compiler", compiler_json},
          {"flags", flags},
          {"origin", origin},
          {"date", date},
          {"task", {{"name", task}, {"dir", task_dir.string()}}},
          {"specialized", specialized},
          {"cases", cases}};
}

fs::path default_store() {
  if (const char* h = std::getenv("TEMPER_HOME"); h && *h) return fs::path(h) / "refs";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".temper" / "refs";
}

bool valid_sealed_name(std::string_view name) {
  if (name.empty() || name.size() > 100 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}

Expected<SealedRef> read_manifest(const fs::path& dir) {
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(dir / kManifest));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return fail("{}: the manifest is not JSON", (dir / kManifest).string());
  return from_json(j, dir);
}

Expected<SealedRef> seal(const SealOptions& opt, util::ProcessRunner& runner) {
  if (!valid_sealed_name(opt.name)) {
    return fail("'{}' is not a valid sealed name: use letters, digits, '.', '_' and '-', not starting with '.'", opt.name);
  }
  std::error_code ec;
  if (!fs::is_regular_file(opt.source, ec)) return fail("reference source {} is not a file", opt.source.string());
  const fs::path store = opt.store.empty() ? default_store() : opt.store;
  const fs::path final_dir = store / opt.name;
  if (fs::exists(final_dir, ec)) return fail("the store {} already has a reference named '{}'", store.string(), opt.name);

  TEMPER_TRY_ASSIGN(core::Task task, core::load_task(opt.task_dir));
  if (task.cases.empty()) return fail("task {} has no cases", opt.task_dir.string());
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(opt.source));
  build::CompileCache cache(util::cache_root() / "compile", opt.compiler, runner);
  TEMPER_TRY_ASSIGN(build::CompilerIdentity compiler_id, build::identify_compiler(opt.compiler.program, runner));

  // Every case the task has, built as the judge builds a reference (judge.cpp).
  const bool specialized = build::wants_specialization(text);
  std::vector<build::CompileRequest> reqs;
  for (const auto& c : task.cases) {
    build::CompileRequest r;
    r.source = opt.source;
    r.label = fmt::format("sealing {} case {}", opt.name, c.id);
    if (specialized) r.defines = build::specialization_defines(task.op, c);
    reqs.push_back(std::move(r));
    if (!specialized) break;
  }
  auto builds = cache.compile_all(reqs, job_count(opt.jobs));
  for (auto& b : builds) {
    if (!b) return tl::unexpected(b.error());
    if (!b->ok) return fail("the reference does not compile ({}); nothing was sealed:\n{}", b->label, b->diagnostics);
    TEMPER_TRY(build::read_elf(b->artifact)); // a readable shared object, or say so now
  }

  // Assemble privately, then publish with one rename.
  TEMPER_TRY(util::make_dirs(store));
  const fs::path tmp = store / fmt::format(".{}.{}.tmp", opt.name, ::getpid());
  fs::remove_all(tmp, ec);
  TEMPER_TRY(util::make_dirs(tmp / "artifacts"));
  TEMPER_TRY(util::make_dirs(tmp / "vault"));
  fs::permissions(tmp / "vault", fs::perms::owner_all, ec);

  SealedRef ref;
  ref.name = opt.name;
  ref.dir = final_dir;
  ref.source_sha = util::hash_hex(text);
  ref.compiler = opt.compiler.program;
  ref.compiler_version = compiler_id.version;
  ref.compiler_key = compiler_id.key;
  ref.flags = opt.compiler.flags;
  if (opt.compiler.kind == build::CompilerKind::Cuda) ref.cuda_arch = opt.compiler.cuda_arch; // check_sealed_target reads it
  ref.origin = opt.origin.empty() ? fs::absolute(opt.source).lexically_normal().string() : opt.origin;
  ref.date = utc_now();
  ref.task = task.op.name;
  ref.task_dir = fs::absolute(task.dir).lexically_normal();
  ref.specialized = specialized;
  util::Hasher content;
  content.add("sealed-reference-v1");
  for (size_t k = 0; k < builds.size(); ++k) {
    const std::string file = specialized ? fmt::format("case-{}.so", task.cases[k].id) : std::string("kernel.so");
    TEMPER_TRY(copy_file(builds[k]->artifact, tmp / "artifacts" / file, fs::perms::owner_read | fs::perms::owner_exec));
    TEMPER_TRY_ASSIGN(std::string bytes, util::read_file(builds[k]->artifact));
    content.add(file).add(bytes);
    if (specialized) ref.case_artifacts[task.cases[k].id] = final_dir / "artifacts" / file;
  }
  if (!specialized) {
    for (const auto& c : task.cases) ref.case_artifacts[c.id] = final_dir / "artifacts" / "kernel.so";
  }
  ref.content_hash = content.hex();
  nlohmann::json manifest = ref.to_json();
  TEMPER_TRY(util::write_file_atomic(tmp / kManifest, manifest.dump(2) + "\n"));

  const fs::path vaulted = tmp / "vault" / opt.source.filename();
  TEMPER_TRY(copy_file(opt.source, vaulted, fs::perms::owner_read));
  fs::rename(tmp, final_dir, ec);
  if (ec) {
    fs::remove_all(tmp, ec);
    return fail("the store {} already has a reference named '{}'", store.string(), opt.name);
  }
  // Only once the entry is published is the caller's copy removed.
  if (!opt.keep_source) {
    fs::remove(opt.source, ec);
    if (ec) return fail("sealed as '{}', but cannot remove the source {}: {}", opt.name, opt.source.string(), ec.message());
  }
  return ref;
}

Status check_sealed_target(const SealedRef& ref, const build::CompilerSpec& compiler) {
  const std::string& arch = compiler.kind == build::CompilerKind::Cuda ? compiler.cuda_arch : std::string();
  if (ref.cuda_arch == arch) return {};
  auto target = [](const std::string& a) { return a.empty() ? std::string("the CPU") : "CUDA " + a; };
  return fail("refusing to compare builds for different targets: the sealed reference '{}' was built for {}, the candidate "
              "for {} (--backend, --cuda-arch)",
              ref.name, target(ref.cuda_arch), target(arch));
}

Expected<SealedRef> find_sealed(const fs::path& store, std::string_view name) {
  if (!valid_sealed_name(name)) return fail("'{}' is not a sealed reference name", name);
  std::error_code ec;
  const fs::path dir = store / std::string(name);
  if (!fs::is_regular_file(dir / kManifest, ec)) {
    std::vector<std::string> names;
    if (auto all = list_sealed(store)) {
      for (const auto& r : *all) names.push_back(r.name);
    }
    return fail("no sealed reference '{}' in {} ({})", name, store.string(),
                names.empty() ? std::string("it has none; seal one with `temper seal`")
                              : fmt::format("it has: {}", fmt::join(names, ", ")));
  }
  return read_manifest(dir);
}

Expected<std::vector<SealedRef>> list_sealed(const fs::path& store) {
  std::vector<SealedRef> out;
  std::error_code ec;
  if (!fs::is_directory(store, ec)) return out;
  for (const auto& e : fs::directory_iterator(store, ec)) {
    const std::string n = e.path().filename().string();
    if (!valid_sealed_name(n) || !fs::is_regular_file(e.path() / kManifest, ec)) continue;
    TEMPER_TRY_ASSIGN(SealedRef r, read_manifest(e.path()));
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const SealedRef& a, const SealedRef& b) { return a.name < b.name; });
  return out;
}

Expected<fs::path> sealed_artifact(const SealedRef& ref, int64_t case_id) {
  auto it = ref.case_artifacts.find(case_id);
  if (it == ref.case_artifacts.end()) return fail("sealed reference '{}' has no artifact for case {}", ref.name, case_id);
  std::error_code ec;
  if (!fs::is_regular_file(it->second, ec)) return fail("sealed reference '{}': artifact {} is missing", ref.name, it->second.string());
  return it->second;
}

Expected<std::set<std::string>> sealed_exports(const SealedRef& ref) {
  std::set<std::string> out;
  std::set<fs::path> seen;
  for (const auto& [id, path] : ref.case_artifacts) {
    if (!seen.insert(path).second) continue;
    TEMPER_TRY_ASSIGN(build::ElfInfo elf, build::read_elf(path));
    out.merge(callable_exports(elf));
  }
  return out;
}

} // namespace temper::judge
