#include "exec/slurm_client.h"

#include "util/text.h"

#include <fmt/format.h>

#include <chrono>
#include <set>
#include <sstream>

namespace temper::exec {

using nlohmann::json;

namespace {

constexpr std::chrono::milliseconds kClientTimeout{60'000};

std::string first_line(const std::string& text) {
  auto end = text.find('\n');
  return text.substr(0, end);
}

std::string trim(const std::string& s) { return std::string(util::trim(s)); }

} // namespace

json ExecutorSettings::to_json() const {
  json j = {{"kind", kind}, {"max_jobs", max_jobs}};
  if (!partition.empty()) j["partition"] = partition;
  if (!account.empty()) j["account"] = account;
  if (!constraint.empty()) j["constraint"] = constraint;
  if (!bin_dir.empty()) j["bin_dir"] = bin_dir.string();
  return j;
}

Expected<ExecutorSettings> ExecutorSettings::from_json(const json& j) {
  ExecutorSettings s;
  if (j.is_null()) return s;
  if (!j.is_object()) return fail("executor: expected an object");
  s.kind = j.value("kind", "local");
  s.partition = j.value("partition", "");
  s.account = j.value("account", "");
  s.constraint = j.value("constraint", "");
  s.max_jobs = j.value("max_jobs", 4);
  s.bin_dir = j.value("bin_dir", "");
  TEMPER_TRY(s.validate());
  return s;
}

Status ExecutorSettings::validate() const {
  if (kind != "local" && kind != "slurm") return fail("--executor must be local or slurm, not '{}'", kind);
  if (max_jobs < 1 || max_jobs > 1000) return fail("--max-jobs must be between 1 and 1000, not {}", max_jobs);
  auto plain = [](const std::string& v) {
    for (char c : v) {
      if (c == '\n' || c == '\r' || c == '\'' || c == '"' || c == '\\') return false;
    }
    return true;
  };
  if (!plain(partition) || !plain(account) || !plain(constraint)) return fail("--partition, --account and --constraint take plain names");
  if (kind == "local" && (!partition.empty() || !account.empty() || !constraint.empty()))
    return fail("--partition, --account and --constraint need --executor slurm");
  return {};
}

bool slurm_state_final(const std::string& state) {
  static const std::set<std::string> kFinal = {"COMPLETED", "FAILED",   "CANCELLED",     "TIMEOUT",  "NODE_FAIL",
                                                "PREEMPTED", "BOOT_FAIL", "OUT_OF_MEMORY", "DEADLINE", "REVOKED", "SPECIAL_EXIT"};
  // sacct prints "CANCELLED by 0".
  return kFinal.count(state.substr(0, state.find(' '))) > 0;
}

std::string SlurmClient::program(const std::string& name) const {
  if (!m_settings.bin_dir.empty()) return (m_settings.bin_dir / name).string();
  return name;
}

Status SlurmClient::available() const {
  if (!m_settings.bin_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(m_settings.bin_dir / "sbatch", ec)) return fail("no sbatch in {}", m_settings.bin_dir.string());
    return {};
  }
  if (util::find_program("sbatch").empty()) return fail("sbatch is not on PATH: the slurm executor needs Slurm's client commands (Debian: slurm-client)");
  return {};
}

Expected<std::string> SlurmClient::submit(const std::filesystem::path& script, const std::filesystem::path& cwd) {
  util::Command cmd;
  cmd.argv = {program("sbatch"), "--parsable", script.string()};
  cmd.cwd = cwd;
  cmd.timeout = kClientTimeout;
  auto r = m_runner.run(cmd);
  if (!r.ok()) return fail("sbatch {} failed ({}): {}", script.string(), r.describe(), trim(r.output));
  // "123" or "123;cluster"; warnings may come first on their own lines.
  std::istringstream in(r.output);
  std::string line, id;
  while (std::getline(in, line)) {
    line = trim(line);
    std::string head = line.substr(0, line.find(';'));
    if (!head.empty() && head.find_first_not_of("0123456789_") == std::string::npos) id = head;
  }
  if (id.empty()) return fail("sbatch printed no job id: {}", trim(r.output));
  return id;
}

Expected<std::map<std::string, SlurmJobState>> SlurmClient::query(const std::vector<std::string>& ids) {
  std::map<std::string, SlurmJobState> out;
  if (ids.empty()) return out;
  std::string list;
  for (const auto& id : ids) list += (list.empty() ? "" : ",") + id;
  util::Command cmd;
  cmd.argv = {program("squeue"), "--noheader", "--states=all", "--jobs=" + list, "--format=%i|%T|%N|%r"};
  cmd.timeout = kClientTimeout;
  auto r = m_runner.run(cmd);
  // One id the controller does not know makes squeue fail; several make it list the rest.
  if (!r.ok()) {
    if (r.output.find("Invalid job id") != std::string::npos) return out;
    return fail("squeue failed ({}): {}", r.describe(), trim(first_line(r.output)));
  }
  std::istringstream in(r.output);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream fields(trim(line));
    for (std::string part; std::getline(fields, part, '|');) f.push_back(part);
    if (f.size() < 2) continue;
    SlurmJobState s{f[0], f[1], f.size() > 2 ? f[2] : "", f.size() > 3 ? f[3] : ""};
    if (s.node == "(null)") s.node.clear();
    out[s.id] = s;
  }
  return out;
}

std::optional<std::string> SlurmClient::accounting_state(const std::string& id) {
  util::Command cmd;
  cmd.argv = {program("sacct"), "--noheader", "--parsable2", "--allocations", "--jobs=" + id, "--format=State"};
  cmd.timeout = kClientTimeout;
  auto r = m_runner.run(cmd);
  if (!r.ok()) return std::nullopt; // no sacct, or accounting disabled
  std::string state = trim(first_line(r.output));
  if (state.empty()) return std::nullopt;
  return state;
}

Status SlurmClient::cancel(const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  util::Command cmd;
  cmd.argv = {program("scancel")};
  cmd.argv.insert(cmd.argv.end(), ids.begin(), ids.end());
  cmd.timeout = kClientTimeout;
  auto r = m_runner.run(cmd);
  if (!r.ok()) return fail("scancel failed ({}): {}", r.describe(), trim(r.output));
  return {};
}

} // namespace temper::exec
