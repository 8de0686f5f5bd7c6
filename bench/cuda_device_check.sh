#!/usr/bin/env bash
# One short check of the CUDA backend on a machine with an NVIDIA GPU (docs/cuda.md): uses a
# build that came along (a pack from bench/cuda_pack.sh, or a build dir) or builds temper,
# probes the GPU, runs the CUDA tests, measures what the judge costs per timed call
# (bench/cuda_judge_cost.sh: all 20 SwiGLU cases, tiled against naive, one measurement and one
# confirmation job each), judges the task's own CUDA reference and, with CAMPAIGN=1, runs a CUDA
# campaign on SwiGLU (temper run --backend cuda). Every step is printed, has a
# time limit and keeps going after a failure; the results land in one directory:
#
#   bash bench/cuda_device_check.sh [RESULTS_DIR]     (default: $OUT if set, else bench/results/cuda-<date>)
#
# With a pack it needs no build and no package registry, and fits in 8 minutes (the campaign's
# CAMPAIGN_LIMIT, default 7 minutes, comes on top).
# Environment: BUILD_DIR (default build-pack if there, else build-device), JOBS (default nproc),
# CASES (default all 20), HOST_CASES (the old host-copy path, for comparison: default 1,2,4).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RESULTS="${1:-${OUT:-$ROOT/bench/results/cuda-$(date -u +%Y%m%dT%H%M%SZ)}}"
if [ -z "${BUILD_DIR:-}" ]; then
  BUILD_DIR=build-device
  [ -f build-pack/built-at.txt ] && BUILD_DIR=build-pack
fi
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
CASES="${CASES:-1-20}"
HOST_CASES="${HOST_CASES:-1,2}"
mkdir -p "$RESULTS"
SUMMARY="$RESULTS/summary.txt"
: >"$SUMMARY"
export TEMPER_CACHE_DIR="${TEMPER_CACHE_DIR:-$(mktemp -d /tmp/temper-cuda-check.XXXXXX)}"
# nvcc where the toolkit usually is, if PATH lacks it.
for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
  [ -x "$d/nvcc" ] && case ":$PATH:" in *":$d:"*) ;; *) PATH="$PATH:$d" ;; esac
done
export PATH

# A pack: its libraries, and the absolute paths its executables were built for (the source tree
# and the build directory) pointing here.
if [ -f "$BUILD_DIR/built-at.txt" ]; then
  export LD_LIBRARY_PATH="$ROOT/$BUILD_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  SRC_AT=$(sed -n 1p "$BUILD_DIR/built-at.txt")
  BIN_AT=$(sed -n 2p "$BUILD_DIR/built-at.txt")
  if [ "$SRC_AT" != "$ROOT" ] && [ ! -e "$SRC_AT" ]; then
    mkdir -p "$(dirname "$SRC_AT")" 2>/dev/null && ln -s "$ROOT" "$SRC_AT" || echo "cannot link $SRC_AT to $ROOT: tests that read fixtures will fail"
  fi
  REL_BIN="${BIN_AT#$SRC_AT/}"
  [ -e "$ROOT/$REL_BIN" ] || ln -s "$ROOT/$BUILD_DIR" "$ROOT/$REL_BIN"
fi

T0=$(date +%s)
note() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$SUMMARY"; }
# step NAME LIMIT_S COMMAND...: runs with a time limit, output to RESULTS/NAME.log, status in the summary.
step() {
  local name="$1" limit="$2"
  shift 2
  note "== $name: $*"
  timeout --kill-after=10 "$limit" "$@" >"$RESULTS/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$RESULTS/$name.log"
  note "-- $name: exit $rc$([ $rc -eq 124 ] && echo ' (timed out)')"
  return $rc
}

note "cuda_device_check in $ROOT, results in $RESULTS, git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
step env 30 bash -c 'uname -a; nproc; free -g; nvidia-smi || echo "nvidia-smi: not available";
  for t in nvcc cmake ninja g++ clang++ pkg-config ccache; do printf "%s: " $t; command -v $t || echo missing; done;
  nvcc --version 2>/dev/null | tail -2; cmake --version 2>/dev/null | head -1; g++ --version 2>/dev/null | head -1;
  ls -l /usr/local/cuda*/lib64/libcudart.so* 2>/dev/null; ldconfig -p 2>/dev/null | grep -E "libcuda\.so|libcudart" || true'

# --- build ---------------------------------------------------------------------------------
have_build() { [ -x "$BUILD_DIR/temper" ] && [ -x "$BUILD_DIR/temper-cuda-worker" ] && [ -x "$BUILD_DIR/tests/temper_unit_tests" ] &&
  "$BUILD_DIR/temper" --help >/dev/null 2>&1; }
configure() {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEMPER_BUILD_BENCH=OFF -DTEMPER_WERROR=OFF
}
build() { cmake --build "$BUILD_DIR" -j "$JOBS" --target temper temper-worker temper-cuda-worker temper_unit_tests; }
if have_build; then
  note "using the build that came along in $BUILD_DIR"
else
  if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null || ! configure >"$RESULTS/configure.log" 2>&1; then
    # Missing tools or libraries: the setup script installs them where a package mirror is reachable.
    step setup 240 bash scripts/setup.sh || note "setup failed (no package mirror?); trying to build with what is here"
    step configure 120 configure
  else
    note "configured $BUILD_DIR"
  fi
  step build 420 build
fi
if ! have_build; then
  note "RESULT: no usable build; see configure.log/build.log. Nothing else can run."
  exit 1
fi

# --- device --------------------------------------------------------------------------------
step probe 60 "$BUILD_DIR/temper-cuda-worker" --probe
cp "$RESULTS/probe.log" "$RESULTS/probe.json" 2>/dev/null

# --- tests: the CUDA ones (they skip what this machine lacks, and say why) --------------------
step tests 180 "$BUILD_DIR/tests/temper_unit_tests" --gtest_filter='Cuda*:PtxasResources*:DeviceContent*:DeviceTiming*' \
  --gtest_output="json:$RESULTS/tests.json"

# --- what the judge costs: tiled against naive, inputs made on the device, then on the host ----
export CASES HOST_CASES LIMIT="${LIMIT:-240}" HOST_LIMIT="${HOST_LIMIT:-100}"
step cost 360 bash bench/cuda_judge_cost.sh "$RESULTS" "$BUILD_DIR/temper"
# The task's own CUDA reference, correctness only (cheap): the bundled baseline must pass.
step reference 90 "$BUILD_DIR/temper" judge tasks/swi_glu tasks/swi_glu/reference.cu --backend cuda \
  --cases "${REFERENCE_CASES:-1,2,5}" --json "$RESULTS/judge-reference.json"

# --- a CUDA campaign (CAMPAIGN=1; minutes more): the bundled plan and starter, tuned on the GPU --
if [ "${CAMPAIGN:-0}" = 1 ]; then
  step campaign "${CAMPAIGN_LIMIT:-420}" "$BUILD_DIR/temper" run tasks/swi_glu --backend cuda --cases "${CAMPAIGN_CASES:-2,3,4,5,9,12,20}" \
    --dir "$RESULTS/campaign" --budget "wall=${CAMPAIGN_WALL:-6m}" --measure-jobs 1 --confirm-jobs 1 --cap 2 --no-vs-torch
  cp "$RESULTS/campaign/final/summary.json" "$RESULTS/campaign-summary.json" 2>/dev/null
fi

note "done in $(($(date +%s) - T0)) s; results in $RESULTS"
ls -l "$RESULTS" | tee -a "$SUMMARY"
