// The knowledge base on disk: hw_kb/<target-class>/<entry-id>/. Loading reports every entry's
// problems (file:line) instead of stopping at the first; listing, proposing, exporting and the
// roofline peaks all read through here.
#pragma once

#include "core/task_loader.h"
#include "judge/roofline.h"
#include "kb/entry.h"
#include "kb/target.h"
#include "util/error.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace temper::kb {

// $TEMPER_KB, else ./hw_kb when it exists, else the source tree's hw_kb/ recorded at build time.
std::filesystem::path default_kb_root();

// The user's own knowledge base, $TEMPER_HOME/hw_kb (default ~/.temper/hw_kb): entries certified
// on this machine for what the repository's hw_kb/ lacks (`temper kb bootstrap`), kept out of
// the source tree.
std::filesystem::path user_kb_root();

// Whether two knowledge-base roots are one directory (equal paths, or both exist and are the same file).
bool same_root(const std::filesystem::path& a, const std::filesystem::path& b);

// What commands read when no knowledge base is named: default_kb_root(), then the user's
// (which shadows it entry by entry). $TEMPER_KB alone when it is set.
std::vector<std::filesystem::path> default_kb_roots();

struct KnowledgeBase {
  std::filesystem::path root;             // the first of roots: where `propose` files entries
  std::vector<std::filesystem::path> roots;
  std::vector<Entry> entries;             // valid entries, sorted by target then id
  std::vector<core::Diagnostic> problems; // of the entries that did not load

  const Entry* find(const std::string& id) const;
  Entry* find(const std::string& id);
};

KnowledgeBase load_kb(const std::filesystem::path& root);
// Several knowledge bases read as one: an entry of a later root replaces the entry with the same
// id from an earlier one (the user's re-certification of a repository entry on this machine).
KnowledgeBase load_kb(const std::vector<std::filesystem::path>& roots);

// Validates DIR as an entry (id, target, probe files) and files it under root/<target>/<id>/
// with status proposed and no evidence; a directory already in place is validated and reset.
// Errors list every problem, one per line.
Expected<std::filesystem::path> propose_entry(const std::filesystem::path& root, const std::filesystem::path& dir);

// The certified entries of a target class as one Markdown document for an agent's workspace;
// entries whose certification is stale here are left out (and counted in a closing line).
std::string export_markdown(const KnowledgeBase& kb, const std::string& target_class, const TargetFingerprint& here);

// The probe task's thread count (its temper.yaml), 1 when it cannot be read.
int probe_threads(const Entry& e);

// The roofline peaks at `threads` threads from the certified, non-stale measure entries of this
// target: the highest bandwidth figure measured with at most that many threads (for memory) and
// the highest flops figure scaled by threads over the probe's threads (for compute). Empty
// figures where none is certified.
judge::Roofline roofline_from_kb(const KnowledgeBase& kb, const TargetFingerprint& here, int threads);

} // namespace temper::kb
