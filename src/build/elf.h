// A small reader for ELF64 little-endian shared objects (x86-64, and any other 64-bit
// little-endian machine): what a kernel artifact asks the dynamic loader for (DT_NEEDED
// libraries, undefined dynamic symbols) and what it offers (defined, exported dynamic symbols).
// The judge's boundary checks rest on it.
//
// It reads what the loader reads: the PT_DYNAMIC segment and the tables its entries point at,
// reached through the PT_LOAD segments. Section headers, which the loader ignores and a tool
// like `nm -D` trusts, play no part. Every read is bounds-checked against the file: a truncated
// or malformed file is an Error, never a crash or an endless loop.
#pragma once

#include "util/error.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace temper::build {

enum class SymbolBinding { Global, Weak, Unique };

struct ElfSymbol {
  std::string name;    // without any version suffix: "dlopen", never "dlopen@GLIBC_2.34"
  std::string version; // "GLIBC_2.34"; empty when the symbol is unversioned
  std::string library; // imports: the library the version belongs to ("libc.so.6"), if versioned
  SymbolBinding binding = SymbolBinding::Global;
};

struct ElfInfo {
  uint16_t machine = 0;                  // e_machine (62: x86-64)
  std::string soname;                    // DT_SONAME, empty when absent
  std::vector<std::string> needed;       // DT_NEEDED, in file order
  std::vector<std::string> search_paths; // DT_RPATH and DT_RUNPATH values, as written
  // DT_AUXILIARY, DT_FILTER, DT_AUDIT, DT_DEPAUDIT: other ways to make the loader open a file.
  std::vector<std::string> loader_refs;
  std::vector<ElfSymbol> imports; // undefined dynamic symbols (global and weak)
  std::vector<ElfSymbol> exports; // defined dynamic symbols others can bind to

  const ElfSymbol* find_import(std::string_view name) const;
  const ElfSymbol* find_export(std::string_view name) const;
};

// Parses an image held in memory.
Expected<ElfInfo> parse_elf(std::string_view bytes);

// Reads and parses a file; the message names the file.
Expected<ElfInfo> read_elf(const std::filesystem::path& file);

} // namespace temper::build
