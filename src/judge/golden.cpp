#include "judge/golden.h"

#include "backend/forkserver.h"
#include "util/cache_limit.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/mapped_file.h"

#include <temper/bundle.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <string_view>
#include <unistd.h>

namespace temper::judge {

namespace fs = std::filesystem;

namespace {

// Goldens allocate their inputs, outputs and bundles afresh on every run, and a sampled check
// runs one per checked call: on 4 KiB pages most of a large case's golden is page faults
// (docs/benchmarks.md). glibc's malloc asks for transparent huge pages with this tunable;
// settings a user already has are kept.
std::pair<std::string, std::string> golden_malloc_tunables() {
  std::string tunables = "glibc.malloc.hugetlb=1";
  if (const char* have = std::getenv("GLIBC_TUNABLES"); have && *have) {
    if (std::string_view(have).find("glibc.malloc.hugetlb") != std::string_view::npos) tunables = have;
    else tunables = std::string(have) + ":" + tunables;
  }
  return {"GLIBC_TUNABLES", tunables};
}

constexpr std::chrono::milliseconds kGoldenTimeout = std::chrono::seconds(1800);

int index_of(GoldenPrecision p) { return p == GoldenPrecision::Fp64 ? 0 : 1; }

temper_bundle::Attr to_bundle_attr(const std::string& name, const core::AttrValue& v) {
  temper_bundle::Attr a;
  a.name = name;
  a.kind = std::string(core::attr_kind_name(v.kind));
  a.i = v.i;
  a.f = v.f;
  a.s = v.s;
  a.ints = v.ints;
  a.floats = v.floats;
  return a;
}

// The header, then the file mapped once: each output's float64 values are a view of it (no
// copy, no fresh pages; the bundle's data is 64-byte aligned).
Expected<GoldenResult> read_outputs(const fs::path& file) {
  temper_bundle::Bundle b;
  if (std::string err = temper_bundle::read_bundle(file.string(), b, false); !err.empty()) return fail("{}", err);
  TEMPER_TRY_ASSIGN(std::shared_ptr<const util::MappedFile> mapped, util::MappedFile::open(file));
  GoldenResult r;
  for (auto& t : b.tensors) {
    if (t.dtype != "float64") return fail("{}: golden output {} is {}, expected float64", file.string(), t.name, t.dtype);
    GoldenOutput o;
    o.name = t.name;
    o.shape = t.shape;
    std::string dtype_name = "float32";
    for (const auto& a : b.attrs)
      if (a.name == "dtype." + t.name) dtype_name = a.s;
    auto dt = core::parse_dtype(dtype_name);
    if (!dt) return fail("{}: golden output {} has unknown dtype '{}'", file.string(), t.name, dtype_name);
    o.dtype = *dt;
    size_t n = static_cast<size_t>(t.data_size / 8);
    if (static_cast<int64_t>(n) != core::numel(o.shape)) {
      return fail("{}: golden output {} has {} values for shape {}", file.string(), t.name, n, core::shape_string(o.shape));
    }
    if (t.data_offset + n * 8 > mapped->size()) return fail("{}: truncated data for golden output {}", file.string(), t.name);
    if (t.data_offset % alignof(double) != 0) return fail("{}: golden output {} is not aligned", file.string(), t.name);
    o.values = GoldenValues(mapped, reinterpret_cast<const double*>(mapped->data() + t.data_offset), n);
    r.outputs.push_back(std::move(o));
  }
  if (r.outputs.empty()) return fail("{}: the golden produced no outputs", file.string());
  return r;
}

// Goldens of large cases are hundreds of MB each and every job seed adds more: the cache keeps
// the most recently used within $TEMPER_GOLDEN_CACHE_MB (0: unbounded), by default half the room
// its filesystem has, between 8 and 32 GiB. A bound below one run's working set (SwiGLU's 20
// cases: 11 GB) evicts, least recently used first, exactly the goldens the next run needs, and
// every correctness check computes them all again (docs/benchmarks.md).
uint64_t golden_cache_limit(const fs::path& dir) {
  return util::cache_limit_from_env("TEMPER_GOLDEN_CACHE_MB", util::disk_share_mib(dir, 8192, 32768));
}

} // namespace

GoldenValues::GoldenValues(std::vector<double> values) {
  auto held = std::make_shared<const std::vector<double>>(std::move(values));
  m_data = held->data();
  m_size = held->size();
  m_owner = std::move(held);
}

bool operator==(const GoldenValues& a, const GoldenValues& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

GoldenRunner::GoldenRunner(const core::Task& task, build::CompileCache& cache, util::ProcessRunner& runner,
                           fs::path cache_dir)
    : m_task(task), m_cache(cache), m_runner(runner), m_cache_dir(std::move(cache_dir)) {
  // A fake runner sees every golden command: no servers behind its back.
  m_servers_off = dynamic_cast<util::RealProcessRunner*>(&runner) == nullptr;
}

Status GoldenRunner::prepare() {
  if (m_task.config.golden.empty()) {
    return fail("task {} has no golden: add `golden: golden.cpp` to its temper.yaml, or a golden.py beside proto.yaml",
                m_task.dir.string());
  }
  if (is_python_golden(m_task.config.golden)) {
    TEMPER_TRY_ASSIGN(m_python, prepare_python_golden(m_task));
    m_forkserver = std::make_shared<backend::Forkserver>();
    for (int k = 0; k < 2; ++k) {
      m_exe[k] = m_python->argv[1];
      m_exe_key[k] = m_python->key + (k == 0 ? "/fp64" : "/lowp");
    }
    return {};
  }
  std::vector<build::CompileRequest> reqs(2);
  for (int k = 0; k < 2; ++k) {
    auto& r = reqs[k];
    // The cache key covers the command line: one spelling of the path (canonical), so
    // `temper judge tasks/x` and a campaign's absolute task path share one golden build.
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(fs::absolute(m_task.config.golden, ec), ec);
    r.source = ec ? m_task.config.golden : canonical;
    r.kind = build::ArtifactKind::Executable;
    // The oracle must be IEEE-exact and reproducible: no contraction into FMAs, no -march.
    r.flags = {"-O2", "-ffp-contract=off"};
    r.defines = {{"TEMPER_GOLDEN_MAIN", ""}};
    if (k == 1) r.defines.emplace_back("TEMPER_GOLDEN_LOWP", "");
    r.label = k == 0 ? "golden" : "golden (low precision)";
  }
  auto results = m_cache.compile_all(reqs, 2);
  for (int k = 0; k < 2; ++k) {
    if (!results[k]) return tl::unexpected(results[k].error());
    const auto& r = *results[k];
    if (!r.ok) return fail("the golden {} does not compile:\n{}", m_task.config.golden.string(), r.diagnostics);
    m_exe[k] = r.artifact;
    m_exe_key[k] = r.key;
    m_compile_seconds += r.cache_hit ? 0.0 : r.seconds;
  }
  return {};
}

std::string GoldenRunner::key(const core::Case& c, const std::vector<core::HostTensor>& inputs,
                              GoldenPrecision precision) const {
  util::Hasher h;
  h.add("golden-key-v1").add(m_exe_key[index_of(precision)]);
  for (const auto& [name, value] : c.attrs) h.add(name).add(value.to_json().dump());
  for (const auto& t : inputs) {
    h.add(t.spec.name).add(std::string(core::dtype_name(t.spec.dtype))).add(core::shape_string(t.spec.shape));
    h.add_raw(t.buffer.data(), t.spec.bytes());
  }
  // Which inputs are lists or absent (plain cases add nothing, so their keys are unchanged).
  if (!c.plain_inputs())
    for (const auto& slot : c.slots) h.add(std::string(core::input_kind_name(slot.kind))).add(std::to_string(slot.count));
  return h.hex();
}

fs::path GoldenRunner::cached_path(const std::string& id) const { return m_cache_dir / id.substr(0, 2) / (id + ".bundle"); }

Expected<GoldenResult> GoldenRunner::outputs(const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                             GoldenPrecision precision) {
  int k = index_of(precision);
  if (m_exe[k].empty()) return fail("GoldenRunner::prepare() was not called");
  fs::path cached = cached_path(key(c, inputs, precision));
  std::error_code ec;
  if (fs::is_regular_file(cached, ec)) {
    auto r = read_outputs(cached);
    if (r) {
      util::touch_for_lru(cached);
      r->cache_hit = true;
      remember_specs(c, *r);
      return r;
    }
    fs::remove(cached, ec); // unreadable: recompute
  }
  auto r = compute(c, inputs, k, cached, true);
  if (r) remember_specs(c, *r);
  return r;
}

void GoldenRunner::remember_specs(const core::Case& c, const GoldenResult& r) {
  std::vector<core::TensorSpec> specs;
  for (const auto& o : r.outputs) specs.push_back(core::TensorSpec{o.name, o.dtype, o.shape});
  const std::lock_guard lock(m_specs_mu);
  m_specs.try_emplace(c.id, std::move(specs));
}

std::optional<std::vector<core::TensorSpec>> GoldenRunner::output_specs(const core::Case& c) const {
  const std::lock_guard lock(m_specs_mu);
  auto it = m_specs.find(c.id);
  if (it == m_specs.end()) return std::nullopt;
  return it->second;
}

Expected<GoldenResult> GoldenRunner::outputs_uncached(const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                                      GoldenPrecision precision) {
  int k = index_of(precision);
  if (m_exe[k].empty()) return fail("GoldenRunner::prepare() was not called");
  return compute(c, inputs, k, {}, true);
}

Expected<std::vector<GoldenRunner::Pair>> GoldenRunner::outputs_uncached_pairs(
    const core::Case& c, const std::vector<const std::vector<core::HostTensor>*>& sets, bool low_precision) {
  if (m_exe[0].empty()) return fail("GoldenRunner::prepare() was not called");
  std::vector<Pair> out(sets.size());
  if (sets.empty()) return out;
  if (!m_python) {
    TEMPER_TRY_ASSIGN(std::optional<std::vector<Pair>> served, pairs_by_server(c, sets, low_precision));
    if (served) return std::move(*served);
  }
  util::TempDir tmp("temper-golden");
  auto file = [&](size_t i, std::string_view what) { return tmp.path() / fmt::format("{}{}.bundle", what, i); };
  for (size_t i = 0; i < sets.size(); ++i) TEMPER_TRY(write_inputs(c, *sets[i], file(i, "in")));
  auto run = [&](int k, bool both) -> Expected<double> {
    util::Command cmd;
    if (m_python) {
      cmd.argv = m_python->argv; // INPUT FP64_OUT LOWP_OUT per set: one run writes both
    } else {
      cmd.argv = {m_exe[k].string()}; // INPUT OUTPUT per set (include/temper/golden.h)
    }
    for (size_t i = 0; i < sets.size(); ++i) {
      cmd.argv.push_back(file(i, "in").string());
      cmd.argv.push_back(file(i, k == 0 ? "fp64" : "lowp").string());
      if (both) cmd.argv.push_back(file(i, "lowp").string());
    }
    return run_command(c, std::move(cmd));
  };
  const double share = 1.0 / static_cast<double>(sets.size());
  TEMPER_TRY_ASSIGN(double seconds, run(0, m_python.has_value()));
  for (size_t i = 0; i < sets.size(); ++i) {
    TEMPER_TRY_ASSIGN(out[i].fp64, read_outputs(file(i, "fp64")));
    out[i].fp64.seconds = seconds * share;
  }
  if (!low_precision) return out;
  double lowp_seconds = 0;
  if (!m_python) {
    TEMPER_TRY_ASSIGN(lowp_seconds, run(1, false));
  }
  for (size_t i = 0; i < sets.size(); ++i) {
    TEMPER_TRY_ASSIGN(out[i].lowp, read_outputs(file(i, "lowp")));
    out[i].lowp->seconds = lowp_seconds * share;
  }
  return out;
}

std::unique_ptr<GoldenServer> GoldenRunner::acquire_server(int k) {
  if (m_servers_off) return nullptr;
  // The allocator keeps what the golden frees (no mmap'd chunks, no trimming): the next golden
  // of the case finds its pages already there.
  auto tunables = golden_malloc_tunables();
  tunables.second += ":glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=" + std::to_string(uint64_t{1} << 46);
  auto server = GoldenServerPool::instance().take(m_exe[k], {tunables});
  if (!server) {
    m_servers_off = true; // processes of their own from now on, as before servers
    return nullptr;
  }
  return std::move(*server);
}

void GoldenRunner::release_server(int k, std::unique_ptr<GoldenServer> server) {
  GoldenServerPool::instance().give(m_exe[k], std::move(server));
}

Expected<std::optional<double>> GoldenRunner::run_on_server(GoldenServer& server, const core::Case& c,
                                                            const std::vector<core::HostTensor>& inputs, const fs::path& output) {
  TEMPER_TRY(write_inputs(c, inputs, server.input_file(), true));
  Expected<double> seconds = server.run(output, kGoldenTimeout);
  if (seconds) return std::optional<double>(*seconds);
  if (!server.usable()) return std::optional<double>(); // a process of its own reports the failure as usual
  return fail("the golden of task {} failed on case {}:\n{}", m_task.op.name, c.id, seconds.error().message);
}

Expected<std::optional<std::vector<GoldenRunner::Pair>>> GoldenRunner::pairs_by_server(
    const core::Case& c, const std::vector<const std::vector<core::HostTensor>*>& sets, bool low_precision) {
  std::vector<Pair> out(sets.size());
  for (int k = 0; k < (low_precision ? 2 : 1); ++k) {
    std::unique_ptr<GoldenServer> server = acquire_server(k);
    if (!server) return std::nullopt;
    for (size_t i = 0; i < sets.size(); ++i) {
      const fs::path output = server->output_file();
      Expected<std::optional<double>> seconds = run_on_server(*server, c, *sets[i], output);
      if (!seconds || !*seconds) {
        release_server(k, std::move(server));
        if (!seconds) return tl::unexpected(seconds.error());
        return std::nullopt;
      }
      TEMPER_TRY_ASSIGN(GoldenResult r, read_outputs(output));
      r.seconds = **seconds;
      if (!r.outputs.empty()) server->hold(output, r.outputs.front().values.owner());
      if (k == 0) out[i].fp64 = std::move(r);
      else out[i].lowp = std::move(r);
    }
    release_server(k, std::move(server));
  }
  return out;
}

Expected<GoldenResult> GoldenRunner::ensure(const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                            GoldenPrecision precision) {
  int k = index_of(precision);
  if (m_exe[k].empty()) return fail("GoldenRunner::prepare() was not called");
  fs::path cached = cached_path(key(c, inputs, precision));
  std::error_code ec;
  if (fs::is_regular_file(cached, ec) && fs::file_size(cached, ec) > 0 && !ec) {
    util::touch_for_lru(cached);
    GoldenResult r;
    r.cache_hit = true;
    return r;
  }
  return compute(c, inputs, k, cached, false);
}

Expected<GoldenResult> GoldenRunner::compute(const core::Case& c, const std::vector<core::HostTensor>& inputs, int k,
                                             const fs::path& cached, bool read) {
  util::TempDir tmp("temper-golden");
  fs::path in_file = tmp.path() / "inputs.bundle";
  fs::path out_file = tmp.path() / "outputs.bundle";
  std::optional<double> served;
  if (std::unique_ptr<GoldenServer> server = m_python ? nullptr : acquire_server(k)) {
    Expected<std::optional<double>> seconds = run_on_server(*server, c, inputs, out_file);
    release_server(k, std::move(server));
    TEMPER_TRY_ASSIGN(served, std::move(seconds));
  }
  if (!served) {
    TEMPER_TRY(write_inputs(c, inputs, in_file));
    const int other = 1 - k;
    const fs::path other_cached = m_python && !cached.empty() ? cached_path(key(c, inputs, other == 0 ? GoldenPrecision::Fp64
                                                                                   : GoldenPrecision::LowPrecision))
                                           : fs::path();
    TEMPER_TRY_ASSIGN(served, run_golden(c, in_file, k, out_file, other_cached));
  }
  const double seconds = *served;
  GoldenResult r;
  if (read) {
    TEMPER_TRY_ASSIGN(r, read_outputs(out_file));
  }
  r.seconds = seconds;
  if (cached.empty()) return r; // outputs_uncached
  TEMPER_TRY(util::make_dirs(cached.parent_path()));
  publish(out_file, cached);
  util::prune_cache(m_cache_dir, golden_cache_limit(m_cache_dir), cached);
  return r;
}

Status GoldenRunner::write_inputs(const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                  const fs::path& file, bool in_place) const {
  temper_bundle::Bundle in;
  for (const auto& [name, value] : c.attrs) in.attrs.push_back(to_bundle_attr(name, value));
  for (const auto& t : inputs) {
    temper_bundle::Tensor bt;
    bt.name = t.spec.name;
    bt.dtype = std::string(core::dtype_name(t.spec.dtype));
    bt.shape = t.spec.shape;
    bt.view = t.buffer.data(); // written from the tensor itself: no copy of a large case's inputs
    bt.view_size = t.spec.bytes();
    in.tensors.push_back(std::move(bt));
  }
  // Tensor lists and absent optional inputs travel as groups (bundle version 2); a case of plain
  // tensors writes version 1, byte for byte as before.
  if (!c.plain_inputs()) {
    for (size_t s = 0; s < c.slots.size(); ++s) {
      const core::InputSlot& slot = c.slots[s];
      std::string name = s < m_task.op.inputs.size() ? m_task.op.inputs[s].name : "in" + std::to_string(s);
      in.groups.push_back(temper_bundle::Group{name, std::string(core::input_kind_name(slot.kind)), slot.first, slot.count});
    }
  }
  if (std::string err = temper_bundle::write_bundle(file.string(), in, in_place); !err.empty()) return fail("{}", err);
  return {};
}

Expected<std::vector<GoldenResult>> GoldenRunner::ensure_sets(
    const core::Case& c, int count, const std::function<std::vector<core::HostTensor>(int)>& make_set,
    bool low_precision) {
  std::vector<GoldenResult> out(static_cast<size_t>(std::max(count, 0)));
  if (!m_python) {
    for (int k = 0; k < count; ++k) {
      auto inputs = make_set(k);
      TEMPER_TRY_ASSIGN(out[k], ensure(c, inputs, GoldenPrecision::Fp64));
      if (low_precision) {
        TEMPER_TRY_ASSIGN(GoldenResult lp, ensure(c, inputs, GoldenPrecision::LowPrecision));
        out[k].seconds += lp.seconds;
      }
    }
    return out;
  }
  if (m_exe[0].empty()) return fail("GoldenRunner::prepare() was not called");
  util::TempDir tmp("temper-golden");
  std::vector<std::pair<int, fs::path[2]>> misses; // set, cached fp64 and low-precision paths
  util::Command cmd;
  cmd.argv = m_python->argv;
  for (int k = 0; k < count; ++k) {
    auto inputs = make_set(k);
    fs::path cached[2] = {cached_path(key(c, inputs, GoldenPrecision::Fp64)),
                          cached_path(key(c, inputs, GoldenPrecision::LowPrecision))};
    std::error_code ec;
    bool hit = fs::is_regular_file(cached[0], ec) && (!low_precision || fs::is_regular_file(cached[1], ec));
    if (hit) {
      util::touch_for_lru(cached[0]);
      if (low_precision) util::touch_for_lru(cached[1]);
      out[k].cache_hit = true;
      continue;
    }
    fs::path in_file = tmp.path() / fmt::format("in{}.bundle", k);
    TEMPER_TRY(write_inputs(c, inputs, in_file));
    cmd.argv.push_back(in_file.string()); // the runner takes INPUT FP64_OUT LOWP_OUT per set
    cmd.argv.push_back((tmp.path() / fmt::format("out{}.fp64", k)).string());
    cmd.argv.push_back((tmp.path() / fmt::format("out{}.lowp", k)).string());
    misses.emplace_back();
    misses.back().first = k;
    misses.back().second[0] = cached[0];
    misses.back().second[1] = cached[1];
  }
  if (misses.empty()) return out;
  TEMPER_TRY_ASSIGN(const double seconds, run_command(c, std::move(cmd)));
  for (const auto& [k, cached] : misses) {
    TEMPER_TRY(util::make_dirs(cached[0].parent_path()));
    TEMPER_TRY(util::make_dirs(cached[1].parent_path()));
    publish(tmp.path() / fmt::format("out{}.fp64", k), cached[0]);
    publish(tmp.path() / fmt::format("out{}.lowp", k), cached[1]);
    out[static_cast<size_t>(k)].seconds = seconds / static_cast<double>(misses.size()); // one process, shared
  }
  util::prune_cache(m_cache_dir, golden_cache_limit(m_cache_dir), misses.back().second[0]);
  return out;
}

Expected<double> GoldenRunner::run_golden(const core::Case& c, const fs::path& in_file, int k, const fs::path& out_file,
                                          const fs::path& other_cached) {
  util::Command cmd;
  fs::path other_file = out_file.parent_path() / "other.bundle";
  if (m_python) {
    // One process writes both precisions: importing torch costs more than most cases' golden.
    cmd.argv = m_python->argv;
    cmd.argv.push_back(in_file.string());
    cmd.argv.push_back((k == 0 ? out_file : other_file).string());
    cmd.argv.push_back((k == 0 ? other_file : out_file).string());
  } else {
    cmd.argv = {m_exe[k].string(), in_file.string(), out_file.string()};
  }
  TEMPER_TRY_ASSIGN(const double seconds, run_command(c, std::move(cmd)));
  if (m_python && !other_cached.empty()) {
    if (util::make_dirs(other_cached.parent_path())) publish(other_file, other_cached);
  }
  return seconds;
}

Expected<double> GoldenRunner::run_command(const core::Case& c, util::Command cmd) {
  cmd.env_set.push_back(golden_malloc_tunables());
  cmd.timeout = kGoldenTimeout;
  util::ProcessResult pr = m_python ? run_python(cmd) : m_runner.run(cmd);
  if (!pr.ok()) {
    return fail("the golden of task {} failed on case {} ({}):\n{}", m_task.op.name, c.id, pr.describe(), pr.output);
  }
  return pr.seconds;
}

util::ProcessResult GoldenRunner::run_python(const util::Command& cmd) {
  const size_t base = m_python->argv.size();
  if (m_forkserver && cmd.argv.size() > base) {
    // The server is the runner's command; each run's bundle paths travel on its fd 3.
    std::vector<std::string> server(cmd.argv.begin(), cmd.argv.begin() + static_cast<std::ptrdiff_t>(base));
    std::string paths;
    for (size_t i = base; i < cmd.argv.size(); ++i) paths += cmd.argv[i] + '\0';
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
    for (const auto& setting : cmd.env_set) {
      const std::string prefix = setting.first + "=";
      std::erase_if(env, [&](const std::string& have) { return have.rfind(prefix, 0) == 0; });
      env.push_back(prefix + setting.second);
    }
    auto forked = backend::run_forked(*m_forkserver, server.front(), server, env, paths,
                                      cmd.timeout.value_or(std::chrono::hours(1)), cmd.max_output_bytes);
    if (forked) return *forked;
  }
  return m_runner.run(cmd);
}

// Caching is best effort: a copy under a private name, then one rename; the result stands either way.
// `file` is a golden's output in a temporary directory: moved into the cache where both lie on
// one filesystem (a large case's is hundreds of MB), else copied beside the entry and renamed
// over it. Either way a reader sees a whole file, old or new.
void GoldenRunner::publish(const fs::path& file, const fs::path& cached) {
  std::error_code ec;
  fs::rename(file, cached, ec);
  if (!ec) return;
  ec.clear();
  fs::path staged = cached;
  staged += ".tmp." + std::to_string(::getpid());
  fs::copy_file(file, staged, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(staged, cached, ec);
  if (ec) fs::remove(staged, ec);
}

} // namespace temper::judge
