// `temper task golden DIR [--cases LIST]`: runs the task's golden (golden.cpp or golden.py) on
// each selected case's first input set and prints the seconds it took and what it returned, so a
// task author sees whether the golden runs before judging anything (bench/cann_bench_corpus.sh).
#include "build/compile_cache.h"
#include "cli/case_list.h"
#include "cli/commands.h"
#include "core/inputs.h"
#include "core/task_loader.h"
#include "judge/golden.h"
#include "util/fs.h"
#include "util/process.h"

#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

namespace temper::cli {

namespace {

struct GoldenArgs {
  std::string dir;
  std::string cases;
  uint64_t seed = 1;
  bool json = false;
};

std::string outputs_text(const judge::GoldenResult& r) {
  std::string s;
  for (const auto& o : r.outputs)
    s += fmt::format("{}{} {} {}", s.empty() ? "" : ", ", o.name, core::dtype_name(o.dtype), core::shape_string(o.shape));
  return s;
}

int run_golden(const GoldenArgs& a) {
  auto task = core::load_task(a.dir);
  if (!task) {
    std::cerr << task.error().message << "\n";
    return kExitUsage;
  }
  std::vector<const core::Case*> cases;
  if (a.cases.empty() || a.cases == "all") {
    for (const auto& c : task->cases) cases.push_back(&c);
  } else {
    auto ids = parse_case_list(a.cases);
    if (!ids) {
      std::cerr << "temper: --cases: " << ids.error().message << "\n";
      return kExitUsage;
    }
    for (int64_t id : *ids) {
      const core::Case* c = task->find_case(id);
      if (!c) {
        std::cerr << fmt::format("temper: task {} has no case {}\n", task->op.name, id);
        return kExitUsage;
      }
      cases.push_back(c);
    }
  }
  util::ProcessRunner& runner = util::default_process_runner();
  build::CompileCache cache(util::cache_root() / "compile", build::CompilerSpec{}, runner);
  judge::GoldenRunner golden(*task, cache, runner, util::cache_root() / "golden");
  if (auto prepared = golden.prepare(); !prepared) {
    std::cerr << "temper: " << prepared.error().message << "\n";
    return kExitUsage;
  }
  nlohmann::json rows = nlohmann::json::array();
  int failed = 0;
  for (const core::Case* c : cases) {
    auto inputs = core::generate_inputs(task->op, *c, a.seed, 0);
    auto r = golden.outputs(*c, inputs, judge::GoldenPrecision::Fp64);
    nlohmann::json row = {{"case_id", c->id}, {"ok", bool(r)}};
    if (r) {
      row["seconds"] = r->seconds;
      row["cache_hit"] = r->cache_hit;
      row["outputs"] = outputs_text(*r);
    } else {
      ++failed;
      row["error"] = r.error().message;
    }
    if (!a.json) {
      std::cout << (r ? fmt::format("case {:>3}  {:7.2f} s{}  {}\n", c->id, r->seconds, r->cache_hit ? " (cached)" : "",
                                    outputs_text(*r))
                      : fmt::format("case {:>3}  FAILED  {}\n", c->id, r.error().message));
    }
    rows.push_back(std::move(row));
  }
  if (a.json) {
    nlohmann::json doc = {{"schema_version", 1}, {"task", task->op.name}, {"golden", task->config.golden.string()},
                          {"seed", a.seed}, {"cases", rows}};
    std::cout << doc.dump(2) << "\n";
  }
  return failed ? kExitFailed : kExitOk;
}

} // namespace

void register_task_golden_command(CLI::App& task, Action& action) {
  auto args = std::make_shared<GoldenArgs>();
  CLI::App* cmd = task.add_subcommand("golden", "Run the task's golden on each case's first input set; print seconds and outputs");
  cmd->add_option("dir", args->dir, "Task directory")->required();
  cmd->add_option("--cases", args->cases, "Cases to run, e.g. 1,5,12 or 1-4 (default: all)");
  cmd->add_option("--seed", args->seed, "Input seed (default 1)");
  cmd->add_flag("--json", args->json, "Print a JSON document (schema_version 1) instead of lines");
  cmd->callback([args, &action] { action = [args] { return run_golden(*args); }; });
}

} // namespace temper::cli
