#include "build/elf.h"

#include "util/fs.h"

#include <elf.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <optional>

namespace temper::build {

namespace {

static_assert(std::endian::native == std::endian::little,
              "the reader copies little-endian file structures straight into host structs");

// Bounds no real artifact or system library comes near (libstdc++ has about 7,000 dynamic
// symbols); they cap the work a corrupt or hostile file can make us do.
constexpr uint64_t kMaxSymbols = uint64_t{1} << 22;
constexpr uint64_t kMaxDynamicEntries = uint64_t{1} << 16;
constexpr uint64_t kMaxVersionEntries = uint64_t{1} << 16;
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;

// The file, and the PT_LOAD segments that map virtual addresses onto it.
class Image {
public:
  explicit Image(std::string_view bytes) : m_bytes(bytes) {}

  template <typename T>
  bool read(uint64_t off, T& out) const {
    if (off > m_bytes.size() || sizeof(T) > m_bytes.size() - off) return false;
    std::memcpy(&out, m_bytes.data() + off, sizeof(T));
    return true;
  }

  // The file offset of `len` bytes at `vaddr`, when they lie inside one segment's file image.
  std::optional<uint64_t> offset_of(uint64_t vaddr, uint64_t len) const {
    for (const auto& s : m_loads) {
      if (vaddr < s.p_vaddr) continue;
      uint64_t into = vaddr - s.p_vaddr;
      if (into >= s.p_filesz || len > s.p_filesz - into) continue;
      return s.p_offset + into;
    }
    return std::nullopt;
  }

  template <typename T>
  bool read_va(uint64_t vaddr, T& out) const {
    auto off = offset_of(vaddr, sizeof(T));
    return off && read(*off, out);
  }

  // A NUL-terminated string at `index` of a string table of `size` bytes at file offset `table`.
  std::optional<std::string> string_at(uint64_t table, uint64_t size, uint64_t index) const {
    if (index >= size || table > m_bytes.size() || size > m_bytes.size() - table) return std::nullopt;
    std::string_view rest = m_bytes.substr(table + index, size - index);
    size_t end = rest.find('\0');
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(rest.substr(0, end));
  }

  size_t size() const { return m_bytes.size(); }
  void add_load(const Elf64_Phdr& p) { m_loads.push_back(p); }

private:
  std::string_view m_bytes;
  std::vector<Elf64_Phdr> m_loads;
};

// What the dynamic section points at; addresses are virtual, 0 when absent.
struct DynamicTable {
  uint64_t strtab = 0, strsz = 0;
  uint64_t symtab = 0, syment = sizeof(Elf64_Sym);
  uint64_t hash = 0, gnu_hash = 0;
  uint64_t versym = 0, verneed = 0, verneednum = 0, verdef = 0, verdefnum = 0;
  std::vector<uint64_t> needed, search_paths, loader_refs; // string table indices
  std::optional<uint64_t> soname;
};

Expected<DynamicTable> read_dynamic(const Image& img, const Elf64_Phdr& dyn) {
  DynamicTable t;
  const uint64_t count = std::min(dyn.p_memsz / sizeof(Elf64_Dyn), kMaxDynamicEntries);
  for (uint64_t k = 0; k < count; ++k) {
    Elf64_Dyn d;
    if (!img.read_va(dyn.p_vaddr + k * sizeof(Elf64_Dyn), d)) return fail("dynamic entry {} lies outside the file", k);
    const uint64_t v = d.d_un.d_val;
    switch (d.d_tag) {
    case DT_NULL: return t;
    case DT_STRTAB: t.strtab = v; break;
    case DT_STRSZ: t.strsz = v; break;
    case DT_SYMTAB: t.symtab = v; break;
    case DT_SYMENT: t.syment = v; break;
    case DT_HASH: t.hash = v; break;
    case DT_GNU_HASH: t.gnu_hash = v; break;
    case DT_VERSYM: t.versym = v; break;
    case DT_VERNEED: t.verneed = v; break;
    case DT_VERNEEDNUM: t.verneednum = v; break;
    case DT_VERDEF: t.verdef = v; break;
    case DT_VERDEFNUM: t.verdefnum = v; break;
    case DT_NEEDED: t.needed.push_back(v); break;
    case DT_SONAME: t.soname = v; break;
    case DT_RPATH:
    case DT_RUNPATH: t.search_paths.push_back(v); break;
    case DT_AUXILIARY:
    case DT_FILTER:
    case DT_AUDIT:
    case DT_DEPAUDIT: t.loader_refs.push_back(v); break;
    default: break;
    }
  }
  return fail("the dynamic section has no DT_NULL terminator");
}

// The number of dynamic symbols. ELF records it only implicitly: DT_HASH's chain count, or for
// DT_GNU_HASH one past the last symbol of the longest-indexed chain (undefined symbols come
// before `symoffset`, so they are counted too). The larger count wins when both exist.
Expected<uint64_t> symbol_count(const Image& img, const DynamicTable& t) {
  uint64_t count = 0;
  if (t.hash) {
    uint32_t head[2];
    if (!img.read_va(t.hash, head)) return fail("the DT_HASH table lies outside the file");
    count = head[1];
  }
  if (t.gnu_hash) {
    uint32_t head[4]; // nbuckets, symoffset, bloom words, bloom shift
    if (!img.read_va(t.gnu_hash, head)) return fail("the DT_GNU_HASH table lies outside the file");
    const uint64_t nbuckets = head[0], symoffset = head[1];
    if (nbuckets > kMaxSymbols) return fail("the DT_GNU_HASH table claims {} buckets", nbuckets);
    const uint64_t buckets = t.gnu_hash + 16 + uint64_t{head[2]} * 8;
    uint64_t last = 0;
    for (uint64_t b = 0; b < nbuckets; ++b) {
      uint32_t v;
      if (!img.read_va(buckets + 4 * b, v)) return fail("a DT_GNU_HASH bucket lies outside the file");
      last = std::max<uint64_t>(last, v);
    }
    uint64_t gnu_count = symoffset;
    if (last != 0) {
      if (last < symoffset) return fail("a DT_GNU_HASH bucket points below the first hashed symbol");
      const uint64_t chains = buckets + 4 * nbuckets;
      for (uint64_t i = last;; ++i) {
        uint32_t v;
        if (i - last > kMaxSymbols || !img.read_va(chains + 4 * (i - symoffset), v)) {
          return fail("a DT_GNU_HASH chain runs outside the file");
        }
        if (v & 1) {
          gnu_count = i + 1;
          break;
        }
      }
    }
    count = std::max(count, gnu_count);
  }
  if (!t.hash && !t.gnu_hash) return fail("there is a symbol table but neither DT_HASH nor DT_GNU_HASH to size it");
  if (count > kMaxSymbols) return fail("the hash table claims {} symbols", count);
  return count;
}

struct VersionName {
  std::string name;
  std::string library; // for needed versions
};

using VersionMap = std::map<uint16_t, VersionName>;

// Version indices the file needs from its libraries (DT_VERNEED) and defines (DT_VERDEF).
Expected<VersionMap> read_versions(const Image& img, const DynamicTable& t, uint64_t strtab_off) {
  VersionMap out;
  auto str = [&](uint64_t index) { return img.string_at(strtab_off, t.strsz, index); };
  uint64_t steps = 0;
  uint64_t at = t.verneed;
  for (uint64_t n = 0; t.verneed && n < t.verneednum; ++n) {
    Elf64_Verneed vn;
    if (++steps > kMaxVersionEntries || !img.read_va(at, vn)) return fail("a DT_VERNEED entry lies outside the file");
    auto file = str(vn.vn_file);
    if (!file) return fail("a DT_VERNEED entry names a string outside the string table");
    uint64_t aux = at + vn.vn_aux;
    for (uint16_t a = 0; a < vn.vn_cnt; ++a) {
      Elf64_Vernaux x;
      if (++steps > kMaxVersionEntries || !img.read_va(aux, x)) return fail("a DT_VERNEED auxiliary entry lies outside the file");
      auto name = str(x.vna_name);
      if (!name) return fail("a needed version names a string outside the string table");
      out[static_cast<uint16_t>(x.vna_other & 0x7fff)] = {*name, *file};
      if (x.vna_next == 0) break;
      aux += x.vna_next;
    }
    if (vn.vn_next == 0) break;
    at += vn.vn_next;
  }
  at = t.verdef;
  for (uint64_t n = 0; t.verdef && n < t.verdefnum; ++n) {
    Elf64_Verdef vd;
    if (++steps > kMaxVersionEntries || !img.read_va(at, vd)) return fail("a DT_VERDEF entry lies outside the file");
    // Index 1 is the file's own base version: a symbol carrying it is simply unversioned.
    if (vd.vd_cnt > 0 && !(vd.vd_flags & VER_FLG_BASE)) {
      Elf64_Verdaux a;
      if (!img.read_va(at + vd.vd_aux, a)) return fail("a DT_VERDEF auxiliary entry lies outside the file");
      auto name = str(a.vda_name);
      if (!name) return fail("a defined version names a string outside the string table");
      out[static_cast<uint16_t>(vd.vd_ndx & 0x7fff)] = {*name, {}};
    }
    if (vd.vd_next == 0) break;
    at += vd.vd_next;
  }
  return out;
}

Expected<ElfInfo> parse_image(std::string_view bytes) {
  Image img(bytes);
  Elf64_Ehdr eh;
  if (bytes.size() < 4 || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return fail("not an ELF file");
  if (!img.read(0, eh)) return fail("truncated ELF header");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return fail("not a 64-bit ELF file");
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return fail("not a little-endian ELF file");
  if (eh.e_type != ET_DYN && eh.e_type != ET_EXEC) return fail("not a shared object or executable (ELF type {})", eh.e_type);
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) return fail("unexpected program header size {}", eh.e_phentsize);

  ElfInfo info;
  info.machine = eh.e_machine;
  std::optional<Elf64_Phdr> dynamic;
  for (uint64_t k = 0; k < eh.e_phnum; ++k) {
    Elf64_Phdr ph;
    if (eh.e_phoff > img.size() || !img.read(eh.e_phoff + k * sizeof(Elf64_Phdr), ph)) {
      return fail("program header {} lies outside the file", k);
    }
    if (ph.p_type == PT_LOAD) {
      if (ph.p_offset > img.size() || ph.p_filesz > img.size() - ph.p_offset) {
        return fail("a loadable segment lies outside the file");
      }
      img.add_load(ph);
    } else if (ph.p_type == PT_DYNAMIC) {
      // The loader uses the last one; two would make "what it sees" ambiguous.
      if (dynamic) return fail("two PT_DYNAMIC segments");
      dynamic = ph;
    }
  }
  if (!dynamic) return fail("no dynamic segment (statically linked?)");

  TEMPER_TRY_ASSIGN(DynamicTable t, read_dynamic(img, *dynamic));
  if (!t.strtab) return fail("the dynamic section has no string table");
  auto strtab_at = img.offset_of(t.strtab, t.strsz);
  if (!strtab_at) return fail("the dynamic string table lies outside the file");
  auto str = [&](uint64_t index) -> Expected<std::string> {
    auto s = img.string_at(*strtab_at, t.strsz, index);
    if (!s) return fail("a dynamic entry names a string outside the string table");
    return *s;
  };
  for (uint64_t i : t.needed) {
    TEMPER_TRY_ASSIGN(std::string s, str(i));
    info.needed.push_back(std::move(s));
  }
  for (uint64_t i : t.search_paths) {
    TEMPER_TRY_ASSIGN(std::string s, str(i));
    info.search_paths.push_back(std::move(s));
  }
  for (uint64_t i : t.loader_refs) {
    TEMPER_TRY_ASSIGN(std::string s, str(i));
    info.loader_refs.push_back(std::move(s));
  }
  if (t.soname) {
    TEMPER_TRY_ASSIGN(info.soname, str(*t.soname));
  }
  if (!t.symtab) return info;

  if (t.syment != sizeof(Elf64_Sym)) return fail("unexpected symbol entry size {}", t.syment);
  TEMPER_TRY_ASSIGN(uint64_t count, symbol_count(img, t));
  TEMPER_TRY_ASSIGN(VersionMap versions, read_versions(img, t, *strtab_at));
  for (uint64_t k = 1; k < count; ++k) { // entry 0 is the null symbol
    Elf64_Sym s;
    if (!img.read_va(t.symtab + k * sizeof(Elf64_Sym), s)) return fail("dynamic symbol {} lies outside the file", k);
    TEMPER_TRY_ASSIGN(std::string name, str(s.st_name));
    name = name.substr(0, name.find('@')); // dynamic names carry no version; be sure of it
    if (name.empty()) continue;
    const unsigned bind = ELF64_ST_BIND(s.st_info), type = ELF64_ST_TYPE(s.st_info);
    const unsigned visibility = ELF64_ST_VISIBILITY(s.st_other);
    ElfSymbol sym;
    sym.name = std::move(name);
    if (bind == STB_GLOBAL) sym.binding = SymbolBinding::Global;
    else if (bind == STB_WEAK) sym.binding = SymbolBinding::Weak;
    else if (bind == STB_GNU_UNIQUE) sym.binding = SymbolBinding::Unique;
    else continue; // local symbols bind nothing across objects
    if (t.versym) {
      uint16_t v;
      if (!img.read_va(t.versym + 2 * k, v)) return fail("the version of dynamic symbol {} lies outside the file", k);
      if (auto it = versions.find(static_cast<uint16_t>(v & 0x7fff)); it != versions.end()) {
        sym.version = it->second.name;
        sym.library = it->second.library;
      }
    }
    if (s.st_shndx == SHN_UNDEF) {
      info.imports.push_back(std::move(sym));
    } else if ((visibility == STV_DEFAULT || visibility == STV_PROTECTED) && type != STT_SECTION && type != STT_FILE) {
      sym.library.clear();
      info.exports.push_back(std::move(sym));
    }
  }
  return info;
}

const ElfSymbol* find_named(const std::vector<ElfSymbol>& symbols, std::string_view name) {
  auto it = std::find_if(symbols.begin(), symbols.end(), [&](const ElfSymbol& s) { return s.name == name; });
  return it == symbols.end() ? nullptr : &*it;
}

} // namespace

const ElfSymbol* ElfInfo::find_import(std::string_view name) const { return find_named(imports, name); }
const ElfSymbol* ElfInfo::find_export(std::string_view name) const { return find_named(exports, name); }

Expected<ElfInfo> parse_elf(std::string_view bytes) { return parse_image(bytes); }

Expected<ElfInfo> read_elf(const std::filesystem::path& file) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) return fail("cannot read {}: {}", file.string(), ec.message());
  if (size > kMaxFileBytes) return fail("{} is {} bytes, too large for a kernel artifact", file.string(), size);
  TEMPER_TRY_ASSIGN(std::string bytes, util::read_file(file));
  auto info = parse_image(bytes);
  if (!info) return fail("{}: {}", file.string(), info.error().message);
  return info;
}

} // namespace temper::build
