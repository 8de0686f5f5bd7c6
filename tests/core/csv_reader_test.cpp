#include "core/csv_reader.h"

#include <gtest/gtest.h>

namespace temper::core::csv_reader_test {
namespace {

using Fields = std::vector<std::string>;

TEST(CsvReader, PlainAndQuotedFields) {
  auto r = parse_csv("a,b,c\n1,\"x, y\",\"say \"\"hi\"\"\"\n");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].fields, (Fields{"a", "b", "c"}));
  EXPECT_EQ(r.records[1].fields, (Fields{"1", "x, y", "say \"hi\""}));
  EXPECT_EQ(r.records[0].line, 1);
  EXPECT_EQ(r.records[1].line, 2);
}

TEST(CsvReader, CrlfAndMissingFinalNewline) {
  auto r = parse_csv("a,b\r\n1,2\r\n3,4");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[1].fields, (Fields{"1", "2"}));
  EXPECT_EQ(r.records[2].fields, (Fields{"3", "4"}));
  EXPECT_EQ(r.records[2].line, 3);
}

TEST(CsvReader, EmbeddedLineBreaksKeepLineNumbers) {
  auto r = parse_csv("h1,h2\n\"two\nlines\",x\n\nlast,\"a\r\nb\"\nafter,y\n");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.records.size(), 4u);
  EXPECT_EQ(r.records[1].fields, (Fields{"two\nlines", "x"}));
  EXPECT_EQ(r.records[1].line, 2);
  EXPECT_EQ(r.records[2].fields, (Fields{"last", "a\r\nb"}));
  EXPECT_EQ(r.records[2].line, 5); // the blank line 4 makes no record
  EXPECT_EQ(r.records[3].line, 7);
}

TEST(CsvReader, EmptyFieldsAndByteOrderMark) {
  auto r = parse_csv("\xEF\xBB\xBFid,note\n1,\n2,\"\"\n");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0].fields, (Fields{"id", "note"}));
  EXPECT_EQ(r.records[1].fields, (Fields{"1", ""}));
  EXPECT_EQ(r.records[2].fields, (Fields{"2", ""}));
}

TEST(CsvReader, JsonCellsAsCannBenchWritesThem) {
  auto r = parse_csv("input_shape,attrs\n\"[[1024, 2048]]\",\"{\"\"dim\"\": -1}\"\n[[7]],{}\n");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.records[1].fields, (Fields{"[[1024, 2048]]", "{\"dim\": -1}"}));
  EXPECT_EQ(r.records[2].fields, (Fields{"[[7]]", "{}"}));
}

TEST(CsvReader, StrayQuoteIsAnErrorWithItsLine) {
  auto r = parse_csv("a,b\n1,2\n3,4\"5\n");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_line, 3);
  EXPECT_TRUE(r.records.empty());
}

// Python's csv module keeps text after a closing quote in the field; CANN-Bench's
// strided_slice/cases.csv has `"L-...-stride=2,4" | baseline_kernels: ...` as a note.
TEST(CsvReader, TextAfterAClosingQuoteBelongsToTheFieldAsInPython) {
  auto r = parse_csv("a,b,c\n\"x,y\" | tail,2,\"q\"\"r\"\n\"x\"y\"z,\"end\" t\n\"last\"more");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.records.size(), 4u);
  EXPECT_EQ(r.records[1].fields, (Fields{"x,y | tail", "2", "q\"r"}));
  EXPECT_EQ(r.records[2].fields, (Fields{"xy\"z", "end t"}));
  EXPECT_EQ(r.records[2].line, 3);
  EXPECT_EQ(r.records[3].fields, (Fields{"lastmore"}));
}

TEST(CsvReader, UnclosedQuoteReportsWhereItOpened) {
  auto r = parse_csv("a,b\n1,2\n3,\"open\nstill open\n");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_line, 3);
  EXPECT_NE(r.error.find("not closed"), std::string::npos);
}

} // namespace
} // namespace temper::core::csv_reader_test
