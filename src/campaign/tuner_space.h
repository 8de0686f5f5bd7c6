// What the tuner Student tunes (docs/campaigns.md, "The tuner Student"): the kernel it starts
// from, the fixed-knob block it writes in front of a submission, and the space of variants: the
// knobs the kernel declares (build/knobs.h), narrowed or fixed by the milestone's `knobs`,
// filtered by the kernel's constraints on a case, enumerated when small and sampled (seeded)
// when large.
#pragma once

#include "build/knobs.h"
#include "core/expr.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace temper::campaign::tuner {

inline constexpr std::string_view kBlockBegin = "// temper-tuner: begin fixed knobs";
inline constexpr std::string_view kBlockEnd = "// temper-tuner: end fixed knobs";

// A source split into the tuner's block (its #define values) and everything else.
struct SplitSource {
  std::string body;             // the source without the block: what the tuner probes
  build::KnobValues fixed;      // the block's values (empty when there was no block)
};
SplitSource strip_block(std::string_view source);

// `body` with the block for `values` in front.
std::string with_block(std::string_view body, const build::KnobValues& values);

struct TunerKernel {
  std::filesystem::path file;   // where it came from in the workspace
  std::string origin;           // "starter" or "accepted M1"
  std::string body;             // without the tuner block
  build::KnobValues incumbent;  // the block's values, when it had one
};

// The kernel per the contract: src/starter/*.cpp (exactly one file), else the newest
// src/accepted/M<i>.cpp (highest i), else an error saying what is missing.
Expected<TunerKernel> pick_kernel(const std::filesystem::path& workspace);

// Narrows `space` by a milestone's `knobs` object (NAME -> array of values, or one value that
// fixes the knob; values compared as text). A name the kernel does not declare or a value it
// does not list is an error. A default outside the narrowed values moves to the first of them.
Expected<build::KnobSpace> narrow_space(build::KnobSpace space, const nlohmann::json& milestone_knobs);

// When the milestone has a `knobs` object, fixes every knob it does not name to its value in
// `incumbent` (the fixed-knob block of the accepted kernel the milestone continues from), so a
// milestone searches what it names and keeps what earlier milestones chose. Returns the names it
// fixed. Without a `knobs` object nothing is fixed (the kernel's whole space); knobs the
// incumbent lacks, or whose value the kernel no longer lists, keep their declared values.
std::vector<std::string> keep_incumbent(build::KnobSpace& space, const nlohmann::json& milestone_knobs,
                                        const build::KnobValues& incumbent);

// Text of a JSON knob value: "1" for 1 and "1", "0.5" for 0.5.
Expected<std::string> knob_value_text(const nlohmann::json& value);

// The variants to measure first on a case: every valid combination when at most `limit` are
// valid, else `limit` of them drawn at random with `seed` (reproducible). `incumbent` (completed
// with defaults, when valid and in the space) comes first.
struct VariantDraw {
  std::vector<build::KnobValues> variants;
  size_t valid = 0;        // valid combinations in the space (counted up to the enumeration bound)
  bool exhaustive = false;
};
Expected<VariantDraw> draw_variants(const build::KnobSpace& space, const build::KnobValues& incumbent,
                                    const core::ExprScope& case_scope, size_t limit, uint64_t seed);

// `values` completed with the space's defaults for knobs it leaves out; knobs the space does not
// declare are dropped.
build::KnobValues complete(const build::KnobSpace& space, const build::KnobValues& values);

// Whether every value is one the (narrowed) space lists.
bool in_space(const build::KnobSpace& space, const build::KnobValues& values);

} // namespace temper::campaign::tuner
