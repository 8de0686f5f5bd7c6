#include "campaign/reference_store.h"

#include "util/fs.h"
#include "util/hash.h"

namespace temper::campaign {

nlohmann::json SealedReference::to_json() const { return {{"id", id}, {"label", label}, {"sha", sha}}; }

Expected<SealedReference> VaultReferenceStore::seal(const std::filesystem::path& source, const std::string& id,
                                                    const std::string& label) {
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(source));
  const std::string sha = util::hash_hex(text);
  if (auto existing = get(id)) {
    if (existing->sha == sha) return existing;
    return fail("vault: reference {} exists with other content", id);
  }
  const auto dir = m_dir / id;
  TEMPER_TRY(util::make_dirs(dir));
  // Source first, then meta.json: an entry without meta.json is incomplete and sealed again.
  TEMPER_TRY(util::write_file_atomic(dir / "reference.cpp", text));
  SealedReference r{id, label, dir / "reference.cpp", sha};
  TEMPER_TRY(util::write_file_atomic(dir / "meta.json", r.to_json().dump(2) + "\n"));
  return r;
}

Expected<SealedReference> VaultReferenceStore::get(const std::string& id) {
  const auto dir = m_dir / id;
  if (!std::filesystem::exists(dir / "meta.json")) return fail("vault: no sealed reference '{}'", id);
  TEMPER_TRY_ASSIGN(std::string meta, util::read_file(dir / "meta.json"));
  try {
    auto j = nlohmann::json::parse(meta);
    return SealedReference{j.at("id"), j.at("label"), dir / "reference.cpp", j.at("sha")};
  } catch (const nlohmann::json::exception& e) {
    return fail("vault: {}/meta.json: {}", id, e.what());
  }
}

} // namespace temper::campaign
