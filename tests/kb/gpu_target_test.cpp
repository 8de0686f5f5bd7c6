// The knowledge base's GPU targets (kb/gpu_target.h): the class a device's entries are filed
// under, and an id that is the device's alone.
#include "kb/gpu_target.h"

#include <gtest/gtest.h>

namespace temper::kb::gpu_target_test {

namespace {

backend::CudaDevice device(const std::string& name, const std::string& arch, int sms) {
  backend::CudaDevice d;
  d.supported = true;
  d.name = name;
  d.arch = arch;
  d.l2_bytes = 62914560;
  d.probe = {{"device", name}, {"compute_capability", "9.0"}, {"sm_count", sms}, {"l2_bytes", d.l2_bytes}};
  return d;
}

} // namespace

TEST(GpuTarget, TheClassIsTheArchitectureAndTheDeviceName) {
  EXPECT_EQ(cuda_target_class("NVIDIA H200", "sm_90"), "nvidia-sm90-h200"); // hw_kb/nvidia-sm90-h200
  EXPECT_EQ(cuda_target_class("NVIDIA H100 80GB HBM3", "sm_90"), "nvidia-sm90-h100-80gb-hbm3");
  EXPECT_EQ(cuda_target_class("NVIDIA GeForce RTX 4090", "sm_89"), "nvidia-sm89-geforce-rtx-4090");
  EXPECT_EQ(cuda_target_class("temper fake GPU", "sm_90a"), "nvidia-sm90a-temper-fake-gpu");
  EXPECT_EQ(cuda_target_class("", ""), "nvidia-unknown-gpu");
}

TEST(GpuTarget, TheFingerprintIsTheDevices) {
  const TargetFingerprint h200 = cuda_target(device("NVIDIA H200", "sm_90", 132));
  EXPECT_EQ(h200.target_class(), "nvidia-sm90-h200");
  EXPECT_EQ(h200.to_json()["device_class"], "nvidia-sm90-h200");
  EXPECT_NE(h200.device.find("132 SMs"), std::string::npos) << h200.device;
  // The same device again: the same id (its certified entries stay certified); another part of
  // the class (fewer SMs enabled): another id, so its entries are stale there until re-certified.
  EXPECT_EQ(cuda_target(device("NVIDIA H200", "sm_90", 132)).id(), h200.id());
  EXPECT_NE(cuda_target(device("NVIDIA H200", "sm_90", 114)).id(), h200.id());
  // A CPU fingerprint is unchanged by the new fields.
  TargetFingerprint cpu;
  cpu.arch = "x86_64";
  EXPECT_EQ(cpu.to_json().count("device_class"), 0u);
}

} // namespace temper::kb::gpu_target_test
