// The profile collectors: the static classifier on known instruction sequences and on real
// kernels, the cache-simulation and remark parsers, and the perf_event counters (a hardware
// counter this machine cannot open is reported unsupported, never zero).
#include "build/compiler.h"
#include "judge/profile/cache_sim.h"
#include "judge/profile/perf_counters.h"
#include "judge/profile/remarks.h"
#include "judge/profile/static_mix.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <unistd.h>

namespace temper::judge::profile::profile_collectors_test {
namespace {

namespace fs = std::filesystem;

TEST(StaticClassifier, ClassifiesSingleInstructions) {
  EXPECT_EQ(classify("vaddps", "%zmm1,%zmm2,%zmm3"), InstructionKind::Vec512);
  EXPECT_EQ(classify("vmovups", "(%rax),%zmm0{%k1}{z}"), InstructionKind::Vec512);
  EXPECT_EQ(classify("vcvtps2pd", "%ymm0,%zmm1"), InstructionKind::Vec512); // the widest register counts
  EXPECT_EQ(classify("vfmadd231ps", "%ymm1,%ymm2,%ymm3"), InstructionKind::Vec256);
  EXPECT_EQ(classify("mulps", "%xmm1,%xmm0"), InstructionKind::Vec128);
  EXPECT_EQ(classify("vpxor", "%xmm0,%xmm0,%xmm0"), InstructionKind::Vec128);
  EXPECT_EQ(classify("vaddss", "%xmm0,%xmm1,%xmm1"), InstructionKind::ScalarFp);
  EXPECT_EQ(classify("mulsd", "0x8(%rax),%xmm0"), InstructionKind::ScalarFp);
  EXPECT_EQ(classify("cvtsi2ssl", "%eax,%xmm0"), InstructionKind::ScalarFp);
  EXPECT_EQ(classify("vfmadd132ss", "%xmm2,%xmm1,%xmm0"), InstructionKind::ScalarFp);
  EXPECT_EQ(classify("fmulp", "%st,%st(1)"), InstructionKind::ScalarFp);
  EXPECT_EQ(classify("movsl", "%ds:(%rsi),%es:(%rdi)"), InstructionKind::Other); // a string move, not movss
  EXPECT_EQ(classify("paddsw", "%xmm1,%xmm0"), InstructionKind::Vec128);          // saturating add, not scalar fp
  EXPECT_EQ(classify("mov", "%rsp,%rbp"), InstructionKind::Other);
}

// Real objdump -d --wide output of a small AVX-512 function, with the runtime's helpers around it.
constexpr const char* kDisassembly = R"(
v.so:     file format elf64-x86-64


Disassembly of section .init:

0000000000001000 <_init>:
    1000:	f3 0f 1e fa          	endbr64
    1004:	48 83 ec 08          	sub    $0x8,%rsp

Disassembly of section .plt:

0000000000001020 <.plt>:
    1020:	ff 35 e2 2f 00 00    	push   0x2fe2(%rip)        # 4008 <_GLOBAL_OFFSET_TABLE_+0x8>

Disassembly of section .text:

00000000000010f0 <frame_dummy>:
    10f0:	e9 7b ff ff ff       	jmp    1070 <register_tm_clones>

0000000000001100 <k>:
    1100:	85 f6                	test   %esi,%esi
    1102:	7e 42                	jle    1146 <k+0x46>
    1116:	66 2e 0f 1f 84 00 00 00 00 00 	cs nopw 0x0(%rax,%rax,1)
    1120:	62 f1 7c 48 10 00    	vmovups (%rax),%zmm0
    1126:	0f 18 88 00 01 00 00 	prefetcht0 0x100(%rax)
    1131:	62 f2 7d 48 98 c0    	vfmadd132ps %zmm0,%zmm0,%zmm0
    1137:	62 f1 7c 48 2b 40 ff 	vmovntps %zmm0,-0x40(%rax)
    1141:	75 dd                	jne    1120 <k+0x20>
    1143:	c5 f8 77             	vzeroupper
    1146:	c5 fa 10 05 b2 0e 00 00 	vmovss 0xeb2(%rip),%xmm0        # 2000 <_fini+0xea8>
    114e:	c5 fa 58 07          	vaddss (%rdi),%xmm0,%xmm0
    1152:	c4 e2 79 2a 07       	vmovntdqa (%rdi),%xmm0
    1157:	c3                   	ret

Disassembly of section .fini:

0000000000001158 <_fini>:
    1158:	f3 0f 1e fa          	endbr64
)";

TEST(StaticClassifier, CountsTheKernelsCodeOnly) {
  InstructionMix m = classify_disassembly(kDisassembly);
  EXPECT_EQ(m.functions, 1); // k; not _init, .plt, frame_dummy, _fini
  EXPECT_EQ(m.instructions, 13);
  EXPECT_EQ(m.code_bytes, 2 + 2 + 10 + 6 + 7 + 6 + 7 + 2 + 3 + 8 + 4 + 5 + 1);
  EXPECT_EQ(m.vec512, 3);
  EXPECT_EQ(m.vec128, 1); // vmovntdqa on xmm
  EXPECT_EQ(m.scalar_fp, 2);
  EXPECT_EQ(m.fma, 1);
  EXPECT_EQ(m.nontemporal_stores, 1); // vmovntps; vmovntdqa is a load
  EXPECT_EQ(m.prefetches, 1);
  EXPECT_EQ(m.vec256, 0);
}

// Builds a fixture kernel into `dir` with g++ and the given flags.
fs::path build_fixture(const char* name, std::vector<std::string> flags, const fs::path& dir) {
  build::CompilerSpec spec;
  spec.flags = std::move(flags);
  build::CompileRequest rq;
  rq.source = fs::path(TEMPER_SOURCE_DIR) / "tests/fixtures/profile" / name;
  fs::path out = dir / (std::string(name) + ".so");
  util::Command cmd;
  cmd.argv = build::compile_command(spec, rq, out);
  cmd.timeout = std::chrono::seconds(120);
  util::ProcessResult r = util::default_process_runner().run(cmd);
  EXPECT_TRUE(r.ok()) << r.output;
  return out;
}

TEST(StaticClassifier, ScalarAndAvx512KernelsShowTheirMix) {
  util::TempDir dir("temper-static-test");
  auto scalar = analyze_artifact(build_fixture("scalar_loop.cpp", {"-O2", "-fno-tree-vectorize"}, dir.path()),
                                 util::default_process_runner());
  ASSERT_TRUE(scalar) << scalar.error().message;
  EXPECT_GT(scalar->scalar_fp, 0);
  EXPECT_EQ(scalar->vec512, 0);
  EXPECT_EQ(scalar->vec256, 0);
  EXPECT_EQ(scalar->nontemporal_stores, 0);
  EXPECT_GT(scalar->code_bytes, 0);

  // Only disassembled: compiling for AVX-512 does not need a CPU that has it.
  auto wide = analyze_artifact(build_fixture("avx512_loop.cpp", {"-O2", "-mavx512f"}, dir.path()), util::default_process_runner());
  ASSERT_TRUE(wide) << wide.error().message;
  EXPECT_GT(wide->vec512, 0);
  EXPECT_GT(wide->fma, 0);
  EXPECT_GT(wide->nontemporal_stores, 0);
  EXPECT_GT(wide->prefetches, 0);

  MetricSet m;
  add_static_metrics(*wide, m);
  EXPECT_EQ(*m.find("static.vec512_ops")->number, static_cast<double>(wide->vec512));
}

TEST(CacheSimOutput, ParsesCallgrindTotals) {
  constexpr const char* kCallgrind = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\n"
                                     "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n"
                                     "summary: 1 2 3 4 5 6 7 8 9\nfl=(1) ???\nfn=(1) temper_kernel\n0 5 1\n"
                                     "totals: 1000 400 200 3 120 60 2 30 10\n";
  auto t = parse_cache_sim_output(kCallgrind);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->at("Ir"), 1000u);
  EXPECT_EQ(t->at("D1mr"), 120u);
  MetricSet m;
  add_cache_sim_metrics(*t, m);
  EXPECT_EQ(*m.find("cg.Ir")->number, 1000);
  EXPECT_EQ(*m.find("cg.D1mr")->number, 120);
  EXPECT_EQ(*m.find("cg.D1mw")->number, 60);
  EXPECT_EQ(*m.find("cg.LLmr")->number, 32); // ILmr + DLmr
  EXPECT_EQ(*m.find("cg.LLmw")->number, 10);
}

TEST(CacheSimOutput, ParsesCachegrindSummaryAndRejectsGarbage) {
  // cachegrind's order, and valgrind drops trailing zero counts.
  auto t = parse_cache_sim_output("desc: I1 cache: 32768 B, 64 B, 8-way associative\ncmd: x\n"
                                  "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\nsummary: 500 5 4 100 20 2\n");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->at("D1mr"), 20u);
  EXPECT_EQ(t->at("DLmw"), 0u);
  EXPECT_FALSE(parse_cache_sim_output("no events here\n"));
  EXPECT_FALSE(parse_cache_sim_output("events: Ir\n"));
  EXPECT_FALSE(parse_cache_sim_output("events: Ir\nsummary: abc\n"));
}

TEST(VectorizationRemarks, ParsesGccAndClangLines) {
  auto g = parse_remarks("k.cpp:7:22: optimized: loop vectorized using 64 byte vectors\n"
                         "k.cpp:7:22: optimized:  loop versioned for vectorization because of possible aliasing\n"
                         "In function 'int temper_kernel(const temper_args*)':\n",
                         remark_flags("g++"));
  EXPECT_EQ(g.vectorized_loops, 1);
  EXPECT_EQ(g.lines.size(), 2u);
  EXPECT_EQ(g.flags, std::vector<std::string>{"-fopt-info-vec"});
  auto c = parse_remarks("k.cpp:7:3: remark: vectorized loop (vectorization width: 16, interleaved count: 2) "
                         "[-Rpass=loop-vectorize]\nk.cpp:9:3: remark: loop not vectorized [-Rpass-missed=loop-vectorize]\n",
                         remark_flags("/usr/bin/clang++"));
  EXPECT_EQ(c.vectorized_loops, 1);
  EXPECT_EQ(c.lines.size(), 2u);
  EXPECT_EQ(c.flags.front(), "-Rpass=loop-vectorize");
}

TEST(PerfCounters, HardwareCounterWithoutPmuIsUnsupportedNotZero) {
  ProcessCounters counters(::getpid());
  auto before = counters.read();
  volatile double sink = 0;
  // Spin for 20 ms of this process's CPU time, not wall time: on a loaded machine 20 ms of wall
  // time may hold only a few ms of CPU, and the task clock counts CPU time.
  const std::clock_t until = std::clock() + CLOCKS_PER_SEC / 50;
  while (std::clock() < until) sink = sink + 1.0;
  auto after = counters.read();
  MetricSet m;
  counters.add_metrics({{before, after}}, m);
  for (const auto& def : metric_registry()) {
    if (def.name.substr(0, 3) == "hw." || def.name.substr(0, 3) == "sw.") {
      EXPECT_NE(m.find(def.name), nullptr) << def.name;
    }
  }
  if (auto why = ProcessCounters::hardware_unsupported_reason()) {
    const MetricValue* cycles = m.find("hw.cycles");
    ASSERT_NE(cycles, nullptr);
    EXPECT_FALSE(cycles->supported()) << "reported " << cycles->text() << " on a machine without hardware counters";
    EXPECT_NE(cycles->reason.find("perf_event_open"), std::string::npos) << cycles->reason;
    EXPECT_FALSE(m.find("hw.ipc")->supported());
    EXPECT_EQ(cycles->text().rfind("unsupported: ", 0), 0u);
  } else {
    EXPECT_GT(*m.find("hw.cycles")->number, 0) << "this machine has hardware counters; they must count";
  }
  const MetricValue* clock = m.find("sw.task_clock_ms");
  if (clock->supported()) {
    EXPECT_GT(*clock->number, 5.0); // 20 ms of spinning
    // The per-call values behind the median are kept (kb metric probes put an interval on them).
    const nlohmann::json& calls = m.attachments()["per_call"]["sw.task_clock_ms"];
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_DOUBLE_EQ(calls[0].get<double>(), *clock->number);
  } else {
    EXPECT_NE(clock->reason.find("perf_event_open"), std::string::npos);
  }
}

} // namespace
} // namespace temper::judge::profile::profile_collectors_test
