#include "agent/harness_protocol.h"

#include <gtest/gtest.h>

namespace harness_protocol_test {

using namespace temper::agent;
using nlohmann::json;

TEST(HarnessProtocol, RequestRoundTripKeepsEveryField) {
  HarnessRequest r;
  r.op = "probe";
  r.file = "/ws/kernel.cpp";
  r.case_id = 3;
  r.grid = {"TILE=16,32", "UNROLL=2"};
  auto back = HarnessRequest::from_json(r.to_json());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->op, "probe");
  EXPECT_EQ(back->file, "/ws/kernel.cpp");
  EXPECT_EQ(back->case_id, 3);
  EXPECT_EQ(back->grid, r.grid);

  HarnessRequest e;
  e.op = "escalate";
  e.text = "the tiling decision D2 caps the speedup";
  auto eb = HarnessRequest::from_json(json::parse(e.to_json().dump()));
  ASSERT_TRUE(eb);
  EXPECT_EQ(eb->text, e.text);
  EXPECT_FALSE(eb->case_id);
}

TEST(HarnessProtocol, ProbeVariantsRoundTripAndValidate) {
  HarnessRequest r;
  r.op = "probe";
  r.file = "/ws/k.cpp";
  r.variants = {{{"UNROLL", "2"}, {"NT_STORES", "1"}}, {{"UNROLL", "4"}, {"NT_STORES", "0"}}};
  auto back = HarnessRequest::from_json(json::parse(r.to_json().dump()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->variants, r.variants);
  // Numbers are taken as their text.
  auto num = HarnessRequest::from_json(json::parse(R"({"protocol":1,"op":"probe","file":"a","variants":[{"UNROLL":2}]})"));
  ASSERT_TRUE(num) << num.error().message;
  EXPECT_EQ(num->variants[0].at("UNROLL"), "2");
  auto error_of = [](const char* text) {
    auto e = HarnessRequest::from_json(json::parse(text));
    return e ? std::string() : e.error().message;
  };
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","variants":{"U":"1"}})").find("array"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","variants":[{}]})").find("names no knob"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","variants":[{"9U":"1"}]})").find("identifier"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","variants":[{"U":"1 2"}]})").find("whitespace"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","variants":[{"U":true}]})").find("string or a number"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","grid":["U=1"],"variants":[{"U":"1"}]})").find("not both"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"submit","file":"a","variants":[{"U":"1"}]})").find("takes no variants"), std::string::npos);
  auto parsed = parse_variant("A=1,B=x");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->size(), 2u);
  EXPECT_FALSE(parse_variant("A=1,A=2"));
  EXPECT_FALSE(parse_variant("A"));
}

// A probe of several cases at once (a tuner's rung, run side by side on a cluster).
TEST(HarnessProtocol, ProbeOfSeveralCases) {
  HarnessRequest r;
  r.op = "probe";
  r.file = "/ws/k.cpp";
  r.cases = {3, 4};
  auto back = HarnessRequest::from_json(json::parse(r.to_json().dump()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->cases, (std::vector<int64_t>{3, 4}));
  EXPECT_FALSE(back->case_id);
  auto error_of = [](const std::string& text) {
    auto q = HarnessRequest::from_json(json::parse(text));
    return q ? std::string("<accepted>") : q.error().message;
  };
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","case":1,"cases":[2]})").find("not both"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","cases":[]})").find("non-empty"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","cases":[-1]})").find("non-empty"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"submit","file":"a","cases":[1]})").find("takes no cases"), std::string::npos);
}

TEST(HarnessProtocol, ResponseRoundTrip) {
  HarnessResponse r;
  r.ok = true;
  r.message = "M1 accepted";
  r.body = {{"verdict", "FASTER"}, {"speedup", 1.25}};
  auto back = HarnessResponse::from_json(json::parse(r.to_json().dump()));
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->ok);
  EXPECT_EQ(back->message, "M1 accepted");
  EXPECT_EQ(back->body["verdict"], "FASTER");
}

TEST(HarnessProtocol, RejectsMalformedRequests) {
  auto error_of = [](const std::string& text) -> std::string {
    auto r = HarnessRequest::from_json(json::parse(text));
    return r ? std::string("<accepted>") : r.error().message;
  };
  EXPECT_NE(error_of(R"([1,2])").find("JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"op":"status"})").find("protocol"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":99,"op":"status"})").find("not supported"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1})").find("op"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"rm -rf"})").find("unknown op"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"submit"})").find("needs a file"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"submit","file":7})").find("non-empty string"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"status","file":"a"})").find("takes no file"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"submit","file":"a","case":1})").find("takes no case"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","case":-1})").find("non-negative"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","grid":"X=1"})").find("array"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","grid":["X"]})").find("NAME=v1"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","grid":["X=1,,2"]})").find("empty value"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"probe","file":"a","grid":["9X=1"]})").find("identifier"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"escalate"})").find("reason"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"submit","file":"a","text":"x"})").find("takes no text"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol":1,"op":"status","extra":1})").find("unknown request field \"extra\""),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"protocol":1,"op":"ref-time","case":2})"), "<accepted>");
}

TEST(HarnessProtocol, RejectsMalformedResponses) {
  EXPECT_FALSE(HarnessResponse::from_json(json::parse(R"({"protocol":1,"message":"x"})")));
  EXPECT_FALSE(HarnessResponse::from_json(json::parse(R"({"protocol":1,"ok":"yes","message":"x"})")));
  EXPECT_FALSE(HarnessResponse::from_json(json::parse(R"({"protocol":1,"ok":true})")));
  EXPECT_FALSE(HarnessResponse::from_json(json::parse(R"("ok")")));
  auto no_body = HarnessResponse::from_json(json::parse(R"({"protocol":1,"ok":false,"message":"m"})"));
  ASSERT_TRUE(no_body);
  EXPECT_TRUE(no_body->body.is_null());
}

} // namespace harness_protocol_test
