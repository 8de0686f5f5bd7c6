#include "judge/profile/remarks.h"

#include "util/fs.h"

namespace temper::judge::profile {

std::vector<std::string> remark_flags(const std::string& program) {
  std::string name = std::filesystem::path(program).filename().string();
  if (name.find("clang") != std::string::npos) return {"-Rpass=loop-vectorize", "-Rpass-missed=loop-vectorize"};
  return {"-fopt-info-vec"};
}

VectorizationRemarks parse_remarks(std::string_view output, std::vector<std::string> flags) {
  VectorizationRemarks r;
  r.flags = std::move(flags);
  while (!output.empty()) {
    size_t nl = output.find('\n');
    std::string_view line = output.substr(0, nl);
    output.remove_prefix(nl == std::string_view::npos ? output.size() : nl + 1);
    bool gcc = line.find(": optimized:") != std::string_view::npos || line.find(": missed:") != std::string_view::npos ||
               line.find(": note:") != std::string_view::npos;
    bool clang = line.find("remark:") != std::string_view::npos;
    if (!gcc && !clang) continue;
    // g++: "loop vectorized using 64 byte vectors"; clang: "vectorized loop (vectorization width: 16, ...)".
    if (line.find("loop vectorized") != std::string_view::npos || line.find("vectorized loop") != std::string_view::npos) {
      ++r.vectorized_loops;
    }
    if (r.lines.size() < kMaxRemarkLines) r.lines.emplace_back(line);
    else r.truncated = true;
  }
  return r;
}

Expected<VectorizationRemarks> collect_remarks(const build::CompilerSpec& compiler, const build::CompileRequest& request,
                                               util::ProcessRunner& runner) {
  util::TempDir dir("temper-remarks");
  std::vector<std::string> flags = remark_flags(compiler.program);
  std::vector<std::string> argv = build::compile_command(compiler, request, dir.path() / "artifact");
  argv.insert(argv.end(), flags.begin(), flags.end());
  util::Command cmd;
  cmd.argv = argv;
  cmd.timeout = std::chrono::seconds(300);
  util::ProcessResult r = runner.run(cmd);
  if (!r.ok()) return fail("the remarks compile failed ({}): {}", r.describe(), r.output.substr(0, 500));
  return parse_remarks(r.output, std::move(flags));
}

void add_remarks(const VectorizationRemarks& remarks, MetricSet& out) {
  out.set("compile.vectorized_loops", remarks.vectorized_loops);
  out.attachments()["vectorization_remarks"] = {
      {"flags", remarks.flags}, {"lines", remarks.lines}, {"truncated", remarks.truncated}};
}

} // namespace temper::judge::profile
