#include "core/csv_reader.h"

#include <algorithm>
#include <string>
#include <csv.h>

namespace temper::core {

namespace {

struct State {
  CsvResult* out = nullptr;
  CsvRecord current;
  int line = 0;            // line of the chunk being fed
  int record_newlines = 0; // line breaks inside the current record's quoted fields
};

void on_field(void* data, size_t len, void* user) {
  auto* st = static_cast<State*>(user);
  std::string field(static_cast<const char*>(data), len);
  st->record_newlines += static_cast<int>(std::count(field.begin(), field.end(), '\n'));
  st->current.fields.push_back(std::move(field));
}

void on_record(int /*terminator*/, void* user) {
  auto* st = static_cast<State*>(user);
  // libcsv reports a record when it meets its terminator, on the line being fed; quoted line
  // breaks inside the record put its start that many lines earlier.
  st->current.line = st->line - st->record_newlines;
  st->out->records.push_back(std::move(st->current));
  st->current = CsvRecord{};
  st->record_newlines = 0;
}

// Python's csv module, which writes and reads CANN-Bench's files, keeps text that follows a
// closing quote as part of the field: `"a,b" | tail` reads as `a,b | tail` (the official
// strided_slice/cases.csv has such a cell). RFC 4180, and libcsv in strict mode, call it an
// error; rewriting the field as `"a,b | tail"` first makes both agree with Python. Nothing else
// changes: line breaks stay where they were, so line numbers hold.
std::string close_quotes_at_field_end(std::string_view text) {
  enum class At { FieldStart, Unquoted, Quoted, AfterClose };
  std::string out;
  out.reserve(text.size() + 8);
  At st = At::FieldStart;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool ends_field = c == ',' || c == '\n' || c == '\r';
    switch (st) {
    case At::FieldStart:
      st = c == '"' ? At::Quoted : ends_field ? At::FieldStart : At::Unquoted;
      out += c;
      break;
    case At::Unquoted:
      if (ends_field)
        st = At::FieldStart;
      out += c;
      break;
    case At::Quoted:
      if (c != '"') {
        out += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        out += "\"\"";
        ++i;
      } else if (i + 1 == text.size() || text[i + 1] == ',' || text[i + 1] == '\n' || text[i + 1] == '\r') {
        out += c;
        st = At::Unquoted; // closed; the next character ends the field
      } else {
        st = At::AfterClose; // the quote closes the field later, where the field ends
      }
      break;
    case At::AfterClose:
      if (ends_field) {
        out += '"';
        out += c;
        st = At::FieldStart;
      } else {
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
      }
      break;
    }
  }
  if (st == At::AfterClose)
    out += '"';
  return out;
}

} // namespace

CsvResult parse_csv(std::string_view raw) {
  CsvResult result;
  if (raw.substr(0, 3) == "\xEF\xBB\xBF")
    raw.remove_prefix(3);
  const std::string normalized = close_quotes_at_field_end(raw);
  std::string_view text = normalized;

  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0) {
    result.error = "cannot initialize the CSV parser";
    return result;
  }
  State st;
  st.out = &result;
  // Feed one line at a time so a record's terminator is seen while its line is current.
  size_t pos = 0;
  while (pos < text.size() && result.ok()) {
    size_t end = text.find('\n', pos);
    end = end == std::string_view::npos ? text.size() : end + 1;
    ++st.line;
    size_t len = end - pos;
    if (csv_parse(&parser, text.data() + pos, len, on_field, on_record, &st) != len) {
      result.error_line = st.line;
      result.error = csv_error(&parser) == CSV_EPARSE ? "malformed CSV: a quote inside an unquoted "
                                                        "field"
                                                      : csv_strerror(csv_error(&parser));
    }
    pos = end;
  }
  if (result.ok() && csv_fini(&parser, on_field, on_record, &st) != 0) {
    // Point at the line where the open quote started: the end of the text, less the line
    // breaks the unfinished field has swallowed (libcsv keeps them in its entry buffer).
    auto* buf = reinterpret_cast<const char*>(parser.entry_buf);
    auto swallowed = buf ? std::count(buf, buf + parser.entry_pos, '\n') : 0;
    auto end_line = 1 + std::count(text.begin(), text.end(), '\n');
    result.error_line = static_cast<int>(end_line - swallowed);
    result.error = "malformed CSV: a quoted field is not closed";
  }
  csv_free(&parser);
  if (!result.ok())
    result.records.clear();
  return result;
}

} // namespace temper::core
