// Bootstrapping a machine's roofline: on a machine whose target class has no certified roofline
// figures here, take the roofline probes (measure entries with figure.roofline) of the nearest
// class that has them, file them for this class in the user's knowledge base, and certify them
// here through the judge. Entries of this class that are certified on another machine (stale
// here) are re-certified as copies in the user's knowledge base, so the repository's files stay
// as they are.
//
// Planning and materializing are separate from running, so the plan can be shown (`--plan`) and
// tested without a judge. Each entry is written as soon as it is decided: an interrupted
// bootstrap resumes by running it again.
#pragma once

#include "kb/certify.h"
#include "kb/store.h"
#include "kb/target.h"
#include "util/error.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace temper::kb {

// The class whose roofline entries serve `target_class` best, among the classes of `kb` with at
// least one certified roofline entry (itself excluded): the same architecture and no wider
// vector ISA tier always (an avx512 class's probes use instructions an avx2 machine lacks); then
// the same CPU vendor, the same ISA tier, the nearest generation (zen4 is nearer zen5 than zen2),
// the most roofline entries, the name. None when no class qualifies.
std::optional<std::string> nearest_class(const KnowledgeBase& kb, const std::string& target_class);

// The measure entries of a class whose figure feeds the roofline (figure.roofline set).
std::vector<const Entry*> roofline_entries(const KnowledgeBase& kb, const std::string& target_class);

struct BootstrapItem {
  enum class Action {
    Have,    // certified on this machine already: nothing to do
    Certify, // this class's entry in the destination knowledge base: certify it in place
    Shadow,  // this class's entry elsewhere (the repository): copy it to the destination, certify the copy
    Derive,  // the nearest class's entry: file it for this class in the destination, certify it
    Skip,    // cannot run here (reason says why)
  };
  Action action = Action::Skip;
  std::string id;        // the entry's id for this class
  const Entry* source = nullptr;
  std::string reason;    // Have, Skip: why
};
std::string_view action_name(BootstrapItem::Action a); // have, certify, copy, derive, skip

struct BootstrapPlan {
  std::string target_class;
  std::string source_class; // the nearest class entries are derived from; empty when none is needed or found
  std::vector<BootstrapItem> items;
  int to_run() const;       // Certify + Shadow + Derive
};

// What bootstrapping would do on `here`, writing into `destination` (a knowledge-base root).
// `from`: the class to derive from instead of the nearest one.
BootstrapPlan plan_bootstrap(const KnowledgeBase& kb, const TargetFingerprint& here, const std::filesystem::path& destination,
                             const std::string& from = {});

// The id a derived entry gets: the source's id without its class prefix (zen5-), with this
// class's microarch in front (zen4-bw-read-1t).
std::string derived_id(const std::string& source_id, const std::string& source_class, const std::string& target_class);

// The factor a derived entry's accepted range is widened by on each side: the nearest class's
// range was fixed from its own microarchitecture, and the roofline uses the measured figure,
// not the range, so the range stays a sanity bound.
inline constexpr double kDerivedRangeWidening = 4;

// Files the item's entry in `destination` (Shadow: a copy; Derive: id, target, claim and range
// rewritten for this class, status proposed, no evidence) with `cap_s` seconds per arm when set,
// and returns it loaded from there. Certify: the entry itself (its cap rewritten when set).
Expected<Entry> materialize(const BootstrapItem& item, const BootstrapPlan& plan, const std::filesystem::path& destination,
                            std::optional<double> cap_s);

struct BootstrapRow {
  std::string id;
  std::string action;  // as action_name
  std::string outcome; // certified, refuted, ambiguous, proposed (not run), error, have, skip
  std::string detail;  // the decision's reason or the error
  std::filesystem::path dir;
};

struct BootstrapOptions {
  std::filesystem::path destination;
  std::optional<double> cap_s; // seconds per arm for every probe run
  bool certify = true;         // false: file the entries as proposed and stop
  // Called before each probe runs (index from 1, count, item) and after it is decided.
  std::function<void(int, int, const BootstrapItem&)> on_start;
  std::function<void(const BootstrapRow&)> on_done;
};

// Runs a plan: materializes each item and certifies it through `runner`, writing each entry as
// soon as it is decided. A probe that cannot run is an error row; the rest still run.
std::vector<BootstrapRow> run_bootstrap(const BootstrapPlan& plan, ProbeRunner& runner, const TargetFingerprint& here,
                                        const BootstrapOptions& options);

} // namespace temper::kb
