// How the judge starts the PyPTO runner (judge/pypto_backend): which time a sample is in each
// mode (--pypto-time), and what the runner is told.
#include "judge/pypto_backend.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace pypto_backend_test {

using namespace temper;

namespace {

core::Operator swi_glu_op() {
  core::Operator op;
  op.name = "SwiGlu";
  op.schema = "swi_glu(Tensor input, int dim=-1) -> Tensor output";
  return op;
}

judge::PyptoOptions options(const std::string& mode, const std::string& time = "") {
  judge::PyptoOptions o;
  o.mode = mode;
  o.time = time;
  o.python = "/bin/sh"; // only its being executable is checked here
  return o;
}

std::string flag_value(const judge::RunnerLaunch& l, const std::string& flag) {
  auto it = std::find(l.args.begin(), l.args.end(), flag);
  return it == l.args.end() || it + 1 == l.args.end() ? "" : *(it + 1);
}

} // namespace

TEST(PyptoBackend, TimeKindFollowsModeUnlessAsked) {
  const core::Operator op = swi_glu_op();
  auto npu = judge::pypto_launch(options("npu"), op);
  ASSERT_TRUE(npu) << npu.error().message;
  EXPECT_EQ(npu->time_kind, "device");
  EXPECT_TRUE(npu->device_profiles());
  EXPECT_EQ(flag_value(*npu, "--time"), "device");
  EXPECT_EQ(flag_value(*npu, "--entry"), "swi_glu");

  auto npu_host = judge::pypto_launch(options("npu", "host"), op);
  ASSERT_TRUE(npu_host) << npu_host.error().message;
  EXPECT_EQ(npu_host->time_kind, "host");
  EXPECT_FALSE(npu_host->device_profiles());
  EXPECT_EQ(flag_value(*npu_host, "--time"), "host");

  auto plain = judge::pypto_launch(options("plain"), op);
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->time_kind, "host");
  auto plain_device = judge::pypto_launch(options("plain", "device"), op);
  ASSERT_TRUE(plain_device) << plain_device.error().message;
  EXPECT_TRUE(plain_device->device_profiles());

  auto sim = judge::pypto_launch(options("sim"), op);
  ASSERT_TRUE(sim) << sim.error().message;
  EXPECT_EQ(sim->time_kind, "simulated");
  EXPECT_EQ(flag_value(*sim, "--time"), "");
}

TEST(PyptoBackend, SimTakesNoTimeAndUnknownTimesAreRefused) {
  const core::Operator op = swi_glu_op();
  auto sim = judge::pypto_launch(options("sim", "device"), op);
  ASSERT_FALSE(sim);
  EXPECT_NE(sim.error().message.find("--pypto-time applies to npu and plain"), std::string::npos) << sim.error().message;
  auto odd = judge::pypto_launch(options("npu", "wall"), op);
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().message.find("unknown PyPTO time 'wall'"), std::string::npos) << odd.error().message;
}

} // namespace pypto_backend_test
