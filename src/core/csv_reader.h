// RFC 4180 CSV reading on top of libcsv, keeping each record's line number for diagnostics.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace temper::core {

struct CsvRecord {
  int line = 0; // 1-based line where the record starts
  std::vector<std::string> fields;
};

struct CsvResult {
  std::vector<CsvRecord> records; // blank lines produce no record
  int error_line = 0;             // 1-based line of the first syntax error
  std::string error;              // empty when the text parsed

  bool ok() const { return error.empty(); }
};

// Parses quoted fields (with doubled quotes and embedded line breaks), LF or CRLF records, and
// an optional UTF-8 byte-order mark. Text after a closing quote belongs to the field, as
// Python's csv module reads it (`"a,b" c` is `a,b c`). Otherwise strict: a quote inside an
// unquoted field or an unterminated quoted field is a syntax error. Spaces around unquoted
// fields are trimmed.
CsvResult parse_csv(std::string_view text);

} // namespace temper::core
