#include "cli/ref_profile.h"

#include "cli/commands.h"

#include <fmt/format.h>

namespace temper::cli {

int profile_sealed(const judge::SealedRef& ref, int64_t case_id, const std::filesystem::path& /*artifact*/,
                   std::ostream& /*out*/, std::ostream& err) {
  err << fmt::format("temper: ref profile {} --case {}: unsupported: this build has no profiling module; "
                     "`temper ref time` and `temper ref disasm` work\n",
                     ref.name, case_id);
  return kExitUsage;
}

} // namespace temper::cli
