// The tensor bundle file: named tensors plus operator attributes in one file, with a text header
// and 64-byte aligned raw data. temper uses it to hand inputs to a golden and to cache golden
// outputs; goldens read and write it through golden.h. Header-only, standard library only, so a
// golden compiles with nothing but this directory on the include path.
//
//   TEMPER-BUNDLE 1
//   attr <name> int|float|bool|string|ints|floats <value...>
//   tensor <name> <dtype> <rank> <dim...> <offset> <nbytes>
//   end
//   <zero padding to a multiple of 64 bytes, then data; offsets are relative to the data start>
//
// Version 2 (written only when a bundle has groups, below) adds two header lines, so that a
// bundle can carry an operator's inputs (or outputs) as it declares them, not only as tensors:
//
//   list <name> <count>   the next <count> tensor lines are the elements of tensor list <name>,
//                         in order (named <name>[0], <name>[1], ...; a list may be empty)
//   absent <name>         optional input <name> is left out in this case: no tensor, no data
//
// In a version 2 bundle every declared input appears, in declaration order, as one tensor line,
// one list line with its element lines, or one absent line. `Bundle::tensors` stays flat (every
// tensor line, in order) and `Bundle::groups` says which tensors belong to which input. A
// version 1 bundle has no groups: each tensor is its own input. Readers accept both versions.
#ifndef TEMPER_BUNDLE_H
#define TEMPER_BUNDLE_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace temper_bundle {

struct Attr {
  std::string name;
  std::string kind; // int, float, bool, string, ints, floats
  int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

struct Tensor {
  std::string name;
  std::string dtype; // float32, float16, bfloat16, float64, int8, ... as in proto.yaml
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
  // Writing: when set, the data is these `view_size` bytes instead of `bytes` (no copy of a large
  // tensor into the bundle). Reading: where the data lies in the file (data_offset from the
  // file's start), filled by read_bundle, which leaves `bytes` empty when told not to read data.
  const unsigned char* view = nullptr;
  size_t view_size = 0;
  uint64_t data_offset = 0;
  uint64_t data_size = 0;

  size_t size() const { return view ? view_size : bytes.size(); }
  const unsigned char* data() const { return view ? view : bytes.data(); }
};

// One declared input (or output) of a version 2 bundle and its tensors.
struct Group {
  std::string name;
  std::string kind;  // "tensor", "list" or "absent"
  size_t first = 0;  // index of its first tensor in Bundle::tensors
  size_t count = 0;  // 1 for a tensor, the list's length, 0 when absent
};

struct Bundle {
  std::vector<Attr> attrs;
  std::vector<Tensor> tensors;
  std::vector<Group> groups; // empty: every tensor is its own input (version 1)
};

inline std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Writes the bundle to path. Returns an empty string on success, else what went wrong.
// `in_place`: an existing file is overwritten and cut to size rather than truncated first, so
// its pages are reused (a golden server writes each output over the last; on a VM fresh pages
// cost more than the bytes). Only for a file no reader holds mapped.
inline std::string write_bundle(const std::string& path, const Bundle& b, bool in_place = false) {
  // Groups must cover the tensors in order, so that the element lines follow their list line.
  size_t next = 0;
  for (const Group& g : b.groups) {
    bool ok = g.first == next && g.first + g.count <= b.tensors.size() &&
              (g.kind == "list" || (g.kind == "tensor" && g.count == 1) || (g.kind == "absent" && g.count == 0));
    if (!ok) return "bundle group '" + g.name + "' does not follow the tensors in order";
    next += g.count;
  }
  if (!b.groups.empty() && next != b.tensors.size()) return "bundle groups do not cover every tensor";
  std::ostringstream h;
  h << (b.groups.empty() ? "TEMPER-BUNDLE 1\n" : "TEMPER-BUNDLE 2\n");
  for (const Attr& a : b.attrs) {
    h << "attr " << a.name << ' ' << a.kind;
    if (a.kind == "int" || a.kind == "bool") h << ' ' << a.i;
    else if (a.kind == "float") h << ' ' << format_double(a.f);
    else if (a.kind == "string") h << ' ' << a.s;
    else if (a.kind == "ints") {
      h << ' ' << a.ints.size();
      for (int64_t v : a.ints) h << ' ' << v;
    } else if (a.kind == "floats") {
      h << ' ' << a.floats.size();
      for (double v : a.floats) h << ' ' << format_double(v);
    }
    h << '\n';
  }
  uint64_t offset = 0;
  auto tensor_line = [&](const Tensor& t) {
    h << "tensor " << t.name << ' ' << t.dtype << ' ' << t.shape.size();
    for (int64_t d : t.shape) h << ' ' << d;
    h << ' ' << offset << ' ' << t.size() << '\n';
    offset += (t.size() + 63) / 64 * 64;
  };
  if (b.groups.empty()) {
    for (const Tensor& t : b.tensors) tensor_line(t);
  } else {
    for (const Group& g : b.groups) {
      if (g.kind == "absent") h << "absent " << g.name << '\n';
      if (g.kind == "list") h << "list " << g.name << ' ' << g.count << '\n';
      for (size_t k = 0; k < g.count; ++k) tensor_line(b.tensors[g.first + k]);
    }
  }
  h << "end\n";
  std::string header = h.str();
  header.resize((header.size() + 63) / 64 * 64, '\0');
  std::ofstream out;
  if (in_place) out.open(path, std::ios::binary | std::ios::in | std::ios::out); // fails when absent
  if (!out.is_open()) out.open(path, std::ios::binary | std::ios::trunc);
  if (!out) return "cannot open " + path + " for writing";
  uint64_t total = header.size();
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  static const char zeros[64] = {};
  for (const Tensor& t : b.tensors) {
    out.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.size()));
    size_t pad = (64 - t.size() % 64) % 64;
    out.write(zeros, static_cast<std::streamsize>(pad));
    total += t.size() + pad;
  }
  out.flush();
  if (!out) return "write failed: " + path;
  out.close();
  if (in_place) {
    std::error_code ec;
    std::filesystem::resize_file(path, total, ec);
    if (ec) return "cannot cut " + path + " to size: " + ec.message();
  }
  return {};
}

// Reads a bundle. Returns an empty string on success, else what went wrong.
// `with_data` false: the header only, each tensor's data_offset and data_size set and its bytes
// left empty, for a reader that maps or reads the data where it needs it.
inline std::string read_bundle(const std::string& path, Bundle& b, bool with_data = true) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open " + path;
  std::string line;
  if (!std::getline(in, line) || (line != "TEMPER-BUNDLE 1" && line != "TEMPER-BUNDLE 2")) return path + ": not a temper bundle";
  const bool grouped = line == "TEMPER-BUNDLE 2";
  size_t list_left = 0; // element lines still owed to the last list line
  struct Pending {
    uint64_t offset, nbytes;
  };
  std::vector<Pending> pending;
  size_t header_bytes = line.size() + 1;
  bool ended = false;
  while (std::getline(in, line)) {
    header_bytes += line.size() + 1;
    if (line == "end") {
      ended = true;
      break;
    }
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word == "attr") {
      Attr a;
      ls >> a.name >> a.kind;
      if (a.kind == "int" || a.kind == "bool") ls >> a.i;
      else if (a.kind == "float") ls >> a.f;
      else if (a.kind == "string") {
        std::getline(ls, a.s);
        if (!a.s.empty() && a.s[0] == ' ') a.s.erase(0, 1);
      } else if (a.kind == "ints" || a.kind == "floats") {
        size_t n = 0;
        ls >> n;
        for (size_t k = 0; k < n; ++k) {
          if (a.kind == "ints") {
            int64_t v = 0;
            ls >> v;
            a.ints.push_back(v);
          } else {
            double v = 0;
            ls >> v;
            a.floats.push_back(v);
          }
        }
      } else {
        return path + ": unknown attr kind '" + a.kind + "'";
      }
      if (ls.fail()) return path + ": malformed attr line: " + line;
      b.attrs.push_back(std::move(a));
    } else if (word == "tensor") {
      Tensor t;
      size_t rank = 0;
      ls >> t.name >> t.dtype >> rank;
      t.shape.resize(rank);
      for (auto& d : t.shape) ls >> d;
      Pending p{};
      ls >> p.offset >> p.nbytes;
      if (ls.fail()) return path + ": malformed tensor line: " + line;
      pending.push_back(p);
      b.tensors.push_back(std::move(t));
      if (list_left > 0) {
        --list_left;
      } else if (grouped) {
        b.groups.push_back(Group{b.tensors.back().name, "tensor", b.tensors.size() - 1, 1});
      }
    } else if (grouped && list_left == 0 && (word == "list" || word == "absent")) {
      Group g;
      g.kind = word;
      g.first = b.tensors.size();
      ls >> g.name;
      if (word == "list") ls >> g.count;
      if (ls.fail() || g.name.empty()) return path + ": malformed " + word + " line: " + line;
      list_left = g.count;
      b.groups.push_back(std::move(g));
    } else {
      return path + ": unexpected header line: " + line;
    }
  }
  if (!ended) return path + ": truncated header";
  if (list_left > 0) return path + ": a list has fewer element lines than its count";
  uint64_t data_start = (header_bytes + 63) / 64 * 64;
  for (size_t k = 0; k < pending.size(); ++k) {
    b.tensors[k].data_offset = data_start + pending[k].offset;
    b.tensors[k].data_size = pending[k].nbytes;
    if (!with_data) continue;
    in.seekg(static_cast<std::streamoff>(data_start + pending[k].offset));
    b.tensors[k].bytes.resize(pending[k].nbytes);
    in.read(reinterpret_cast<char*>(b.tensors[k].bytes.data()), static_cast<std::streamsize>(pending[k].nbytes));
    if (!in) return path + ": truncated data for tensor " + b.tensors[k].name;
  }
  return {};
}

} // namespace temper_bundle

#endif // TEMPER_BUNDLE_H
