#include "campaign/reference_store.h"

#include "judge/seal.h"
#include "util/fs.h"
#include "util/hash.h"

namespace temper::campaign {

namespace {

SealedReference from_sealed(const judge::SealedRef& r, const std::filesystem::path& store) {
  return SealedReference{r.name, r.origin, r.source_sha, store};
}

} // namespace

nlohmann::json SealedReference::to_json() const { return {{"id", id}, {"label", label}, {"sha", sha}}; }

Expected<SealedReference> SealedReferenceStore::seal(const std::filesystem::path& source, const std::string& id,
                                                     const std::string& label) {
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(source));
  const std::string sha = util::hash_hex(text);
  std::error_code ec;
  // An entry is published by one rename, so one that exists is complete: a resume after a kill
  // between sealing and recording it finds it here.
  if (std::filesystem::exists(m_store / id / "manifest.json", ec)) {
    TEMPER_TRY_ASSIGN(judge::SealedRef existing, judge::find_sealed(m_store, id));
    if (existing.source_sha == sha) return from_sealed(existing, m_store);
    return fail("the campaign's store {} already holds reference {} with other content", m_store.string(), id);
  }
  judge::SealOptions o;
  o.task_dir = m_task_dir;
  o.source = source;
  o.name = id;
  o.store = m_store;
  o.compiler = m_compiler;
  o.origin = label;
  o.keep_source = true; // the task's reference and the attempts' candidates stay where they are
  o.jobs = m_jobs;
  TEMPER_TRY_ASSIGN(judge::SealedRef sealed, judge::seal(o, m_runner));
  return from_sealed(sealed, m_store);
}

Expected<SealedReference> SealedReferenceStore::get(const std::string& id) {
  TEMPER_TRY_ASSIGN(judge::SealedRef r, judge::find_sealed(m_store, id));
  return from_sealed(r, m_store);
}

} // namespace temper::campaign
