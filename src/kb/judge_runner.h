// The production ProbeRunner: an entry's probe is judged by the judge itself. The probe's task
// directory is an ordinary temper task; paired probes time b (candidate) against a (reference);
// measure probes time the kernel against itself, so both arms are samples of the same
// micro-kernel under the same cold- or warm-cache protocol. Correctness is checked first, as for
// any kernel, so a micro-kernel the compiler hollowed out cannot produce a figure. Metric probes
// run the judge with its profile phase (judge/profile/), one judge run per job, and read the
// metric (and its per-call values) from the profiled case.
#pragma once

#include "kb/certify.h"
#include "util/process.h"

#include <filesystem>
#include <string>

namespace temper::kb {

struct JudgeRunnerOptions {
  std::filesystem::path worker_exe; // default: temper-worker beside the running binary
  std::filesystem::path reports_dir; // where each probe's judge report is kept; empty: not kept
  bool progress = true;
  std::string temper_version = "dev";
  std::string backend = "cpu"; // cuda: probe kernels (.cu) built with nvcc and run on the GPU
};

class JudgeProbeRunner final : public ProbeRunner {
public:
  JudgeProbeRunner(JudgeRunnerOptions options, util::ProcessRunner& runner) : m_options(std::move(options)), m_runner(runner) {}
  Expected<ProbeOutcome> run(const Entry& entry) override;

private:
  Expected<ProbeOutcome> run_metric(const Entry& entry);

  JudgeRunnerOptions m_options;
  util::ProcessRunner& m_runner;
};

} // namespace temper::kb
