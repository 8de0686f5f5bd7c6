// A case's hardware lower bound from the task's cost model (bytes moved, flops, expressions of
// the case's shapes and dtypes) and the machine's certified peaks: max(bytes / bandwidth,
// flops / peak flops). The peaks come from the knowledge base (src/kb), which sits above the
// judge; the judge only takes the numbers, so it never reads the KB itself.
#pragma once

#include "core/task.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace temper::judge {

struct Roofline {
  double bytes_per_s = 0; // sustained memory bandwidth at the task's thread count; 0: unknown
  double flops_per_s = 0; // peak arithmetic throughput at the task's thread count; 0: unknown
  std::string source;     // where the figures came from ("hw_kb x86_64-zen5-avx512: bw-triad-1t, fma-peak-1t")

  nlohmann::json to_json() const;
};

struct CaseBound {
  double seconds = 0;
  double bytes = 0;
  double flops = 0;
  std::string limiter; // "memory" or "compute", plus ", flops unbounded" when a side had no figure
};

// The bound for one case, or an error saying why there is none (no cost model, no figure for
// either side of the model, an expression that does not evaluate). A side whose figure is
// missing is left out (limiter says "..., flops unbounded").
Expected<CaseBound> roofline_bound(const core::Task& task, const core::Case& c, const Roofline& roofline);

} // namespace temper::judge
