// The knowledge base's target for kernels that run on a GPU (the cuda backend): its class is
// the device's, nvidia-<sm>-<name> (nvidia-sm90-h200 for an "NVIDIA H200" of compute
// capability 9.0), so GPU figures are proposed, certified, shared and looked up like a CPU
// class's, and re-certified on another device of the class (its id is the device's).
#pragma once

#include "backend/cuda_device.h"
#include "kb/target.h"

#include <string>

namespace temper::kb {

// "nvidia-sm90-h200" from ("NVIDIA H200", "sm_90"): the name lower-cased without its vendor,
// every run of other characters than letters and digits one dash.
std::string cuda_target_class(const std::string& device_name, const std::string& arch);

// The fingerprint of a supported device: its class, and an id over its name, compute
// capability, SM count and L2 size (not the host's CPU: a GPU's figures do not depend on it).
TargetFingerprint cuda_target(const backend::CudaDevice& device);

} // namespace temper::kb
