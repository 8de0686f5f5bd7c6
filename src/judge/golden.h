// Golden outputs: the task's golden compiled as an executable (fp64, and a low-precision build
// for the standards that compare against a same-precision computation), or its golden.py run by
// the Python golden runner (python_golden.h: one process writes both), run in its own process
// on the judge's inputs, results cached on disk by content key.
// Goldens are trusted task code, but they still run out of process so a faulty one is an error
// message, not a crash of temper.
#pragma once

#include "build/compile_cache.h"
#include "judge/golden_server.h"
#include "judge/python_golden.h"
#include "core/task.h"
#include "core/tensor.h"
#include "util/error.h"

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace temper::backend {
class Forkserver;
}

namespace temper::judge {

// A golden output's values, read-only: a view of the golden's output file mapped from the page
// cache (a large case's golden is hundreds of MB, and reading it into fresh memory costs more
// than computing it), or values held in memory.
class GoldenValues {
public:
  GoldenValues() = default;
  explicit GoldenValues(std::vector<double> values);
  // `count` doubles at `data`, kept valid by `owner`.
  GoldenValues(std::shared_ptr<const void> owner, const double* data, size_t count)
      : m_owner(std::move(owner)), m_data(data), m_size(count) {}

  const double* data() const { return m_data; }
  size_t size() const { return m_size; }
  // What keeps the values valid (the mapped file), for a holder that must know when they are released.
  std::weak_ptr<const void> owner() const { return m_owner; }
  bool empty() const { return m_size == 0; }
  const double* begin() const { return m_data; }
  const double* end() const { return m_data + m_size; }
  const double& operator[](size_t i) const { return m_data[i]; }
  // Bit for bit (a NaN equals the same NaN).
  friend bool operator==(const GoldenValues& a, const GoldenValues& b);

private:
  std::shared_ptr<const void> m_owner;
  const double* m_data = nullptr;
  size_t m_size = 0;
};

struct GoldenOutput {
  std::string name;
  core::Dtype dtype = core::Dtype::F32; // the dtype the candidate must produce
  core::Shape shape;
  GoldenValues values;                  // fp64 (or low-precision values widened)
};

struct GoldenResult {
  std::vector<GoldenOutput> outputs;
  double seconds = 0; // time the golden took when it ran; 0 on a cache hit
  bool cache_hit = false;
};

enum class GoldenPrecision { Fp64, LowPrecision };

class GoldenRunner {
public:
  GoldenRunner(const core::Task& task, build::CompileCache& cache, util::ProcessRunner& runner,
               std::filesystem::path cache_dir);

  // Compiles both builds (cached), or for a golden.py checks it can run here (no torch_npu, the
  // runner's environment). Errors name the golden file and say what to fix.
  Status prepare();

  // The golden outputs for one case on `inputs`: from the cache (keyed by the golden build,
  // the case's attributes and the input bytes), or by running the golden and caching the result.
  Expected<GoldenResult> outputs(const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                 GoldenPrecision precision);

  // The golden outputs on `inputs` computed now and not cached: for values that occur once (the
  // timing job's sampled check), which would only churn the cache.
  Expected<GoldenResult> outputs_uncached(const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                          GoldenPrecision precision);
  // Both precisions (the low one only when `low_precision`), not cached, for several input sets
  // of one case: what a sampled check needs for its checked calls. One golden process per
  // precision for all of them (a golden.py: one fork for both): a process start costs more than
  // a small case's golden, and a sampled check asks for up to a hundred. Each pair's seconds are
  // its share of the processes' time.
  struct Pair {
    GoldenResult fp64;
    std::optional<GoldenResult> lowp;
  };
  Expected<std::vector<Pair>> outputs_uncached_pairs(const core::Case& c,
                                                     const std::vector<const std::vector<core::HostTensor>*>& sets,
                                                     bool low_precision);

  // Makes sure the golden outputs are in the cache without reading them back: a cache hit only
  // checks that the bundle exists (outputs() reads it when the check needs it, and recomputes
  // an unreadable one). The result has no outputs, only seconds and cache_hit.
  Expected<GoldenResult> ensure(const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                GoldenPrecision precision);

  // ensure() for `count` input sets of one case, both precisions when `low_precision`: a Python
  // golden computes every missing set in one process (one interpreter start and one import of
  // torch instead of one per set); a C++ golden runs one process per set, as ensure() does.
  // make_set(k) makes set k, called once per set and only while it is needed.
  Expected<std::vector<GoldenResult>> ensure_sets(const core::Case& c, int count,
                                                  const std::function<std::vector<core::HostTensor>(int)>& make_set,
                                                  bool low_precision);

  double compile_seconds() const { return m_compile_seconds; }

  // The outputs' names, dtypes and shapes for case `c` as an earlier outputs() call of this
  // runner found them (the correctness phase's), or none yet: a timing job lays out its arena
  // from them instead of running the golden on values of its own (a large case's golden costs
  // seconds). Shapes follow from the case, not from the values.
  std::optional<std::vector<core::TensorSpec>> output_specs(const core::Case& c) const;

private:
  std::string key(const core::Case& c, const std::vector<core::HostTensor>& inputs, GoldenPrecision precision) const;
  std::filesystem::path cached_path(const std::string& id) const;
  // Runs the golden and caches its outputs (unless `cached` is empty); reads them back only when
  // `read` is set.
  Expected<GoldenResult> compute(const core::Case& c, const std::vector<core::HostTensor>& inputs, int k,
                                 const std::filesystem::path& cached, bool read);
  Status write_inputs(const core::Case& c, const std::vector<core::HostTensor>& inputs,
                      const std::filesystem::path& file, bool in_place = false) const;
  // outputs_uncached_pairs through golden servers (C++ goldens, a real process runner): none
  // when no server can be had or one broke, and the caller runs golden processes instead.
  Expected<std::optional<std::vector<Pair>>> pairs_by_server(const core::Case& c,
                                                              const std::vector<const std::vector<core::HostTensor>*>& sets,
                                                              bool low_precision);
  // One golden on `server`: the inputs written over its input file, the outputs into `output`.
  // Its seconds; none when the server broke (it has ended); an error when the golden failed.
  Expected<std::optional<double>> run_on_server(GoldenServer& server, const core::Case& c,
                                                const std::vector<core::HostTensor>& inputs,
                                                const std::filesystem::path& output);
  std::unique_ptr<GoldenServer> acquire_server(int k);
  void release_server(int k, std::unique_ptr<GoldenServer> server);
  // Runs the command; a Python golden writes both precisions, and the other one is cached too.
  Expected<double> run_golden(const core::Case& c, const std::filesystem::path& in_file, int k,
                              const std::filesystem::path& out_file, const std::filesystem::path& other_cached);
  static void publish(const std::filesystem::path& file, const std::filesystem::path& cached);
  void remember_specs(const core::Case& c, const GoldenResult& r);
  // A golden.py's command: forked from the runner's forkserver, which imported torch once for
  // this GoldenRunner (a timing job's sampled check runs a golden per checked call), else run
  // as a process of its own.
  util::ProcessResult run_python(const util::Command& cmd);
  // Runs a golden command (golden.py's through run_python) with the golden's allocator settings
  // and time limit: its seconds, or the golden's failure with its output.
  Expected<double> run_command(const core::Case& c, util::Command cmd);

  const core::Task& m_task;
  build::CompileCache& m_cache;
  util::ProcessRunner& m_runner;
  std::filesystem::path m_cache_dir;
  std::filesystem::path m_exe[2];
  std::string m_exe_key[2];
  std::optional<PythonGolden> m_python; // set when the golden is a golden.py
  std::shared_ptr<backend::Forkserver> m_forkserver; // with m_python
  double m_compile_seconds = 0;
  // Golden servers come from GoldenServerPool (a sampled check runs its batches on several
  // threads, each on a server of its own), unless the process runner is a fake or a server
  // could not start.
  std::atomic<bool> m_servers_off{false};
  mutable std::mutex m_specs_mu; // outputs() runs on several threads (a judge's cases)
  std::map<int64_t, std::vector<core::TensorSpec>> m_specs;
};

} // namespace temper::judge
