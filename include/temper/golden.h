// The golden-writer API. A task's golden is one C++ file that defines
//
//     void temper_golden_compute(temper_golden::Context& ctx);
//
// reading inputs and attributes from ctx and adding outputs to it. temper compiles the file
// twice: once with `real` = double (the fp64 golden, the correctness oracle) and once with
// TEMPER_GOLDEN_LOWP defined, where `real` = float and round() rounds to the output dtype, to get
// the same-precision CPU computation that the cann-bench and flashattention standards compare
// against. Write the golden from the operator's public semantics, plainly: it is the oracle.
//
// When temper compiles a golden it defines TEMPER_GOLDEN_MAIN, which adds a main() that reads an
// input bundle (argv[1]) and writes the output bundle (argv[2]); further INPUT OUTPUT pairs are
// computed in the same process, in order.
#ifndef TEMPER_GOLDEN_H
#define TEMPER_GOLDEN_H

#include <temper/bundle.h>
#include <temper/half.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <fcntl.h>
#include <stdexcept>
#include <sys/mman.h>
#include <unistd.h>
#include <string>
#include <string_view>
#include <vector>

namespace temper_golden {

#ifdef TEMPER_GOLDEN_LOWP
using real = float;
inline constexpr bool lowp = true;
#else
using real = double;
inline constexpr bool lowp = false;
#endif

// A dense row-major array of `real`, remembering the dtype it came from or will be stored as.
struct Array {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<real> data;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int rank() const { return static_cast<int>(shape.size()); }
  // Row-major strides in elements.
  std::vector<int64_t> strides() const {
    std::vector<int64_t> s(shape.size(), 1);
    for (int d = rank() - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
    return s;
  }
};

// Rounds v to the precision of dtype in the low-precision build; the identity in the fp64 build.
// A string_view, so that a literal dtype costs no allocation per element.
inline real round(real v, std::string_view dtype) {
  if constexpr (!lowp) {
    (void)dtype;
    return v;
  } else {
    float f = static_cast<float>(v);
    if (dtype == "float16") return temper_f16_to_f32(temper_f32_to_f16(f));
    if (dtype == "bfloat16") return temper_bf16_to_f32(temper_f32_to_bf16(f));
    return f;
  }
}

class Context {
public:
  std::vector<Array> inputs; // every input tensor, flat: a list's elements in order, none for an absent input
  std::vector<Array> outputs;
  std::vector<temper_bundle::Attr> attrs;
  // Which inputs the tensors belong to when the case has a tensor list or an absent optional
  // input (bundle version 2); empty when each tensor is its own input.
  std::vector<temper_bundle::Group> groups;

  // Whether declared input `name` is present (a task without groups: whether a tensor has it).
  bool has_input(const std::string& name) const {
    for (const auto& g : groups)
      if (g.name == name) return g.kind != "absent";
    for (const auto& a : inputs)
      if (a.name == name) return true;
    return false;
  }
  // The tensors of declared input `name`: a list's elements, one tensor, or none when absent.
  std::vector<const Array*> input_list(const std::string& name) const {
    std::vector<const Array*> out;
    for (const auto& g : groups)
      if (g.name == name) {
        for (size_t k = 0; k < g.count; ++k) out.push_back(&inputs.at(g.first + k));
        return out;
      }
    for (const auto& a : inputs)
      if (a.name == name) out.push_back(&a);
    return out;
  }

  const Array& input(size_t k) const {
    if (k >= inputs.size()) throw std::runtime_error("golden asked for input " + std::to_string(k) + " of " + std::to_string(inputs.size()));
    return inputs[k];
  }
  Array& add_output(const std::string& name, std::vector<int64_t> shape, const std::string& dtype) {
    Array a;
    a.name = name;
    a.dtype = dtype;
    a.shape = std::move(shape);
    a.data.assign(static_cast<size_t>(a.numel()), real(0));
    outputs.push_back(std::move(a));
    return outputs.back();
  }
  const temper_bundle::Attr* find_attr(const std::string& name) const {
    for (const auto& a : attrs)
      if (a.name == name) return &a;
    return nullptr;
  }
  int64_t attr_int(const std::string& name, int64_t dflt) const {
    const auto* a = find_attr(name);
    if (!a) return dflt;
    return a->kind == "float" ? static_cast<int64_t>(a->f) : a->i;
  }
  double attr_float(const std::string& name, double dflt) const {
    const auto* a = find_attr(name);
    if (!a) return dflt;
    return a->kind == "float" ? a->f : static_cast<double>(a->i);
  }
  bool attr_bool(const std::string& name, bool dflt) const { return attr_int(name, dflt ? 1 : 0) != 0; }
};

namespace detail {

inline double load(const unsigned char* p, const std::string& dtype, size_t i) {
  if (dtype == "float32") { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
  if (dtype == "float64") { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
  if (dtype == "float16") { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return temper_f16_to_f32(v); }
  if (dtype == "bfloat16") { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return temper_bf16_to_f32(v); }
  if (dtype == "int8") return static_cast<int8_t>(p[i]);
  if (dtype == "uint8" || dtype == "bool") return p[i];
  if (dtype == "int16") { int16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
  if (dtype == "int32") { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
  if (dtype == "int64") { int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
  throw std::runtime_error("golden: unsupported input dtype " + dtype);
}

// Widens n stored elements of type T to `real`, the dtype resolved once per tensor rather than
// per element: the sampled checks of a timing job run a golden per checked call.
template <class T, class Widen>
void widen(const unsigned char* p, size_t n, real* out, Widen w) {
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + sizeof(T) * i, sizeof(T));
    out[i] = static_cast<real>(w(v));
  }
}

inline size_t stored_size(const std::string& dtype) {
  if (dtype == "float64" || dtype == "int64") return 8;
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "float16" || dtype == "bfloat16" || dtype == "int16") return 2;
  if (dtype == "int8" || dtype == "uint8" || dtype == "bool") return 1;
  throw std::runtime_error("golden: unsupported input dtype " + dtype);
}

// The input bundle's file, mapped read-only: its tensors are converted straight from the page
// cache, with no copy of the stored bytes (a large case's inputs are hundreds of MB).
class MappedFile {
public:
  explicit MappedFile(const char* path) {
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(std::string("cannot open ") + path);
    off_t end = ::lseek(fd, 0, SEEK_END);
    m_size = end > 0 ? static_cast<size_t>(end) : 0;
    if (m_size > 0) {
      void* p = ::mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        throw std::runtime_error(std::string("cannot map ") + path);
      }
      m_data = static_cast<const unsigned char*>(p);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (m_data) ::munmap(const_cast<unsigned char*>(m_data), m_size);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const unsigned char* data() const { return m_data; }
  size_t size() const { return m_size; }

private:
  const unsigned char* m_data = nullptr;
  size_t m_size = 0;
};

inline void load_all(const unsigned char* p, const std::string& dtype, size_t n, real* out) {
  auto same = [](auto v) { return static_cast<double>(v); };
  if (dtype == "float32") return widen<float>(p, n, out, [](float v) { return v; });
  if (dtype == "float64") return widen<double>(p, n, out, same);
  if (dtype == "float16") return widen<uint16_t>(p, n, out, [](uint16_t v) { return temper_f16_to_f32(v); });
  if (dtype == "bfloat16") return widen<uint16_t>(p, n, out, [](uint16_t v) { return temper_bf16_to_f32(v); });
  if (dtype == "int8") return widen<int8_t>(p, n, out, same);
  if (dtype == "uint8" || dtype == "bool") return widen<uint8_t>(p, n, out, same);
  if (dtype == "int16") return widen<int16_t>(p, n, out, same);
  if (dtype == "int32") return widen<int32_t>(p, n, out, same);
  if (dtype == "int64") return widen<int64_t>(p, n, out, same);
  throw std::runtime_error("golden: unsupported input dtype " + dtype);
}

// The stored form of an output: float64, rounded to the output dtype in the low-precision build.
inline void store_all(const Array& a, unsigned char* out) {
  const size_t n = a.data.size();
  if constexpr (!lowp) {
    std::memcpy(out, a.data.data(), n * sizeof(double));
  } else {
    auto put = [&](auto round_one) {
      for (size_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(round_one(static_cast<float>(a.data[i])));
        std::memcpy(out + 8 * i, &v, 8);
      }
    };
    if (a.dtype == "float16") put([](float f) { return temper_f16_to_f32(temper_f32_to_f16(f)); });
    else if (a.dtype == "bfloat16") put([](float f) { return temper_bf16_to_f32(temper_f32_to_bf16(f)); });
    else put([](float f) { return f; });
  }
}

// One input bundle in, one output bundle out.
inline void run_one(const char* in_path, const char* out_path, void (*fn)(Context&), bool in_place = false) {
  temper_bundle::Bundle in;
  std::string err = temper_bundle::read_bundle(in_path, in, false);
  if (!err.empty()) throw std::runtime_error(err);
  Context ctx;
  ctx.attrs = in.attrs;
  ctx.groups = in.groups;
  {
    MappedFile file(in_path);
    for (auto& t : in.tensors) {
      Array a;
      a.name = t.name;
      a.dtype = t.dtype;
      a.shape = t.shape;
      size_t n = static_cast<size_t>(a.numel());
      if (n * stored_size(t.dtype) > t.data_size || t.data_offset + t.data_size > file.size()) {
        throw std::runtime_error(std::string(in_path) + ": truncated data for tensor " + t.name);
      }
      a.data.resize(n);
      load_all(file.data() + t.data_offset, t.dtype, n, a.data.data());
      ctx.inputs.push_back(std::move(a));
    }
  }
  fn(ctx);
  temper_bundle::Bundle out;
  for (auto& a : ctx.outputs) {
    temper_bundle::Tensor t;
    t.name = a.name;
    t.shape = a.shape;
    // The fp64 build stores float64; the low-precision build stores values already rounded to
    // the output dtype, as float64 too, so the reader has one format to handle.
    t.dtype = "float64";
    if constexpr (!lowp) {
      t.view = reinterpret_cast<const unsigned char*>(a.data.data()); // already float64: no copy
      t.view_size = a.data.size() * sizeof(double);
    } else {
      t.bytes.resize(a.data.size() * 8);
      store_all(a, t.bytes.data());
      std::vector<real>().swap(a.data);
    }
    out.tensors.push_back(std::move(t));
    temper_bundle::Attr dt;
    dt.name = "dtype." + a.name;
    dt.kind = "string";
    dt.s = a.dtype;
    out.attrs.push_back(dt);
  }
  err = temper_bundle::write_bundle(out_path, out, in_place);
  if (!err.empty()) throw std::runtime_error(err);
}

// --serve: requests on fd 3, a socket, one line each, "INPUT\tOUTPUT"; one reply line each,
// "ok" or "error MESSAGE". The judge's sampled check runs a golden per checked call, and a
// process kept between them reuses its memory (with the allocator told never to give it back):
// on a VM, the fresh pages a new process touches cost more than a large case's golden itself.
// The output is written over the file's last contents (the judge maps an output only until it
// asks for the next). End of file on fd 3 ends the server.
inline int serve(void (*fn)(Context&)) {
  std::string pending;
  char chunk[4096];
  for (;;) {
    size_t eol;
    while ((eol = pending.find('\n')) == std::string::npos) {
      ssize_t got = ::read(3, chunk, sizeof chunk);
      if (got == 0) return 0;
      if (got < 0) {
        if (errno == EINTR) continue;
        return 1;
      }
      pending.append(chunk, static_cast<size_t>(got));
    }
    const std::string line = pending.substr(0, eol);
    pending.erase(0, eol + 1);
    std::string reply = "ok\n";
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      reply = "error malformed request\n";
    } else {
      try {
        run_one(line.substr(0, tab).c_str(), line.substr(tab + 1).c_str(), fn, true);
      } catch (const std::exception& e) {
        reply = std::string("error ") + e.what();
        for (char& ch : reply)
          if (ch == '\n') ch = ' ';
        reply += '\n';
      }
    }
    std::fflush(stdout);
    for (size_t sent = 0; sent < reply.size();) {
      ssize_t put = ::write(3, reply.data() + sent, reply.size() - sent);
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) return 1;
      sent += static_cast<size_t>(put);
    }
  }
}

// INPUT OUTPUT, repeated: the judge's sampled check asks for the goldens of many calls at once,
// and one process for all of them costs one start instead of one each.
inline int run_main(int argc, char** argv, void (*fn)(Context&)) {
  if (argc == 2 && std::string_view(argv[1]) == "--serve") return serve(fn);
  if (argc < 3 || argc % 2 == 0) {
    std::fprintf(stderr, "usage: %s INPUT_BUNDLE OUTPUT_BUNDLE [INPUT_BUNDLE OUTPUT_BUNDLE]...\n       %s --serve\n", argv[0], argv[0]);
    return 2;
  }
  try {
    for (int k = 1; k + 1 < argc; k += 2) run_one(argv[k], argv[k + 1], fn);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "golden: %s\n", e.what());
    return 1;
  }
  return 0;
}

} // namespace detail
} // namespace temper_golden

void temper_golden_compute(temper_golden::Context& ctx);

#ifdef TEMPER_GOLDEN_MAIN
int main(int argc, char** argv) { return temper_golden::detail::run_main(argc, argv, &temper_golden_compute); }
#endif

#endif // TEMPER_GOLDEN_H
