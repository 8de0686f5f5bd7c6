// Brief templates: markdown files in the repository's briefs/ directory with {{name}}
// placeholders that the campaign fills (docs/agents.md lists each template's variables).
#pragma once

#include "util/error.h"

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace temper::agent {

using BriefVars = std::map<std::string, std::string>;

// Replaces every {{name}} (spaces inside the braces allowed) with vars[name]. A placeholder
// without a value is an error naming all of them, so no agent ever reads a half-filled brief.
// Text inside {{ }} that is not an identifier is left alone.
Expected<std::string> render_brief(std::string_view text, const BriefVars& vars);

// The directory of brief templates: $TEMPER_BRIEFS_DIR, else the repository's briefs/.
std::filesystem::path briefs_dir();

// Loads briefs_dir()/NAME.md and renders it.
Expected<std::string> render_brief_template(std::string_view name, const BriefVars& vars);

} // namespace temper::agent
