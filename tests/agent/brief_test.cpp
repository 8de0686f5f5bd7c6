#include "agent/brief.h"

#include <gtest/gtest.h>

namespace brief_test {

using namespace temper::agent;

TEST(Brief, RendersPlaceholders) {
  auto r = render_brief("Task {{task}}, milestone {{ milestone }}; {{task}} again. Set {x} stays, {{ not a name }} too.",
                        {{"task", "swi_glu"}, {"milestone", "M1"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "Task swi_glu, milestone M1; swi_glu again. Set {x} stays, {{ not a name }} too.");
  EXPECT_EQ(*render_brief("unclosed {{task", {}), "unclosed {{task");
}

TEST(Brief, MissingValuesAreNamed) {
  auto r = render_brief("{{a}} {{b}} {{c}}", {{"b", "1"}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("a, c"), std::string::npos);
}

// Every template in briefs/ renders with exactly the variables docs/agents.md lists for it.
TEST(Brief, RepositoryTemplatesRenderWithTheirDocumentedVariables) {
  const std::map<std::string, std::vector<std::string>> documented = {
      {"teacher", {"task_name", "target", "files", "plan_format", "previous_errors", "budget"}},
      {"teacher_revision",
       {"task_name", "target", "files", "trigger", "trigger_detail", "plan_format", "previous_errors", "budget"}},
      {"student", {"task_name", "target", "milestone_id", "milestone", "files", "candidate_file", "compile_command", "budget"}},
  };
  for (const auto& [name, vars] : documented) {
    BriefVars values;
    for (const auto& v : vars) values[v] = "<" + v + ">";
    auto r = render_brief_template(name, values);
    ASSERT_TRUE(r) << name << ": " << r.error().message;
    for (const auto& v : vars) EXPECT_NE(r->find("<" + v + ">"), std::string::npos) << name << " never uses " << v;
    EXPECT_EQ(r->find("{{"), std::string::npos) << name;
  }
  EXPECT_FALSE(render_brief_template("no_such_brief", {}));
}

} // namespace brief_test
