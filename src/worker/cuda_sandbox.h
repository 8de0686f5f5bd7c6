// temper-cuda-worker's sandbox: Landlock only. The ruleset is computed as plain data first
// (cuda_landlock_rules, testable without applying it), then applied (install_cuda_sandbox).
//
// It goes on after the driver and runtime are loaded, the device is initialized, the buffers,
// stream and events exist and the watchdog runs, and before the artifact is opened: so the
// candidate's code, its static constructors included, only ever runs inside it. Landlock binds
// the calling thread (the main thread, which calls the kernel) and the threads it creates later;
// the threads the driver started during cuInit stay outside it unless the kernel offers ABI 8
// (TSYNC), which puts every thread of the process in the domain.
//
// No seccomp filter: the driver needs ioctls on its device files, large and fixed mmaps, threads
// of its own and, in places, syscalls that differ between driver versions; a deny-list that
// keeps all that working (and keeps working on the next driver) has not been worked out on GPU
// machines. The static boundary checks still run before the worker starts.
#pragma once

#include "worker/landlock.h"

#include <string>
#include <vector>

namespace temper::worker {

// What the CUDA worker's ruleset is computed from.
struct CudaSandboxPaths {
  std::string artifact;                     // the kernel's shared object: granted as this one file
  std::vector<std::string> library_dirs;    // the loaded driver's and runtime's directories, $CUDA_HOME
  std::vector<std::string> protected_paths; // never inside a granted directory: the cache, the vault, HOME, the task
  std::string dev_dir = "/dev";             // where the nvidia* device files are listed
};

struct CudaRuleset {
  std::vector<LandlockRule> rules; // canonical paths that exist, one rule each
  std::vector<std::string> dropped; // "PATH (covers PROTECTED)": rules left out to keep a protected path closed
};

// The rules: read, write and device ioctls on <dev>/nvidia* (the control, GPU, UVM and modeset
// nodes and nvidia-caps), read and write on <dev>/null and <dev>/zero, files in <dev>/shm; read
// on <dev>/urandom, /proc, /sys, the loader's cache and configuration and /etc/nvidia; read and
// execute on /usr, /lib*, /opt and `library_dirs`; read and execute on the artifact file (never
// its directory, which is added to the protected paths). Paths that do not exist are skipped. A
// rule on a directory that is, or lies above, a protected path is dropped, whatever it is.
CudaRuleset cuda_landlock_rules(const CudaSandboxPaths& paths);

struct CudaSandboxResult {
  std::string error;       // Landlock is present but could not be applied: LOAD fails (fail closed)
  std::string description; // one line for LOADED: what is enforced, or why nothing is
};

// Computes the rules for this process (the directories of the loaded libcuda, libcudart and
// libnvidia-*, $CUDA_HOME; protecting the artifact's directory, the user's home, the working
// directory, the temporary directory and temper's cache and home when their variables are set)
// and applies them to the calling thread (every thread with ABI 8). A kernel without Landlock is
// no error: the description says "Landlock unavailable". TEMPER_CUDA_SANDBOX=off skips it all,
// for diagnosing a driver that the rules break.
CudaSandboxResult install_cuda_sandbox(const std::string& artifact);

} // namespace temper::worker
