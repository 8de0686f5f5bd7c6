#!/usr/bin/env bash
# One short check of the CUDA backend on a machine with an NVIDIA GPU (docs/cuda.md): builds
# temper (or uses a build dir that came along), probes the GPU, runs the CUDA tests, and judges
# the tiled SwiGLU fixture against the naive one (correctness plus one short paired timing job
# per case). Every step is printed, has a time limit and keeps going after a failure; the
# results land in one directory:
#
#   bash bench/cuda_device_check.sh [RESULTS_DIR]     (default: $OUT if set, else bench/results/cuda-<date>)
#
# Sized for a few minutes on a fresh machine with 16 cores: the build is the long part.
# Environment: BUILD_DIR (default build-device), JOBS (default nproc), CASES (default 1,2,5).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RESULTS="${1:-${OUT:-$ROOT/bench/results/cuda-$(date -u +%Y%m%dT%H%M%SZ)}}"
BUILD_DIR="${BUILD_DIR:-build-device}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
CASES="${CASES:-1,2,5}"
mkdir -p "$RESULTS"
SUMMARY="$RESULTS/summary.txt"
: >"$SUMMARY"
export TEMPER_CACHE_DIR="${TEMPER_CACHE_DIR:-$(mktemp -d /tmp/temper-cuda-check.XXXXXX)}"
# nvcc where the toolkit usually is, if PATH lacks it.
for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
  [ -x "$d/nvcc" ] && case ":$PATH:" in *":$d:"*) ;; *) PATH="$PATH:$d" ;; esac
done
export PATH

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
step env 60 bash -c 'uname -a; nproc; free -g; nvidia-smi || echo "nvidia-smi: not available";
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
step probe 90 "$BUILD_DIR/temper-cuda-worker" --probe
cp "$RESULTS/probe.log" "$RESULTS/probe.json" 2>/dev/null

# --- tests: the CUDA ones (they skip what this machine lacks, and say why) --------------------
step tests 300 "$BUILD_DIR/tests/temper_unit_tests" --gtest_filter='Cuda*:PtxasResources*' \
  --gtest_output="json:$RESULTS/tests.json"

# --- a small paired judgement: tiled against naive --------------------------------------------
step judge 420 "$BUILD_DIR/temper" judge tasks/swi_glu tests/fixtures/cuda/swi_glu_tiled.cu --backend cuda \
  --cases "$CASES" --reference tests/fixtures/cuda/swi_glu_naive.cu --measure-jobs 1 --confirm-jobs 1 --cap 3 \
  --json "$RESULTS/judge-tiled-vs-naive.json"
# The task's own CUDA reference, correctness only (cheap): the bundled baseline must pass.
step reference 240 "$BUILD_DIR/temper" judge tasks/swi_glu tasks/swi_glu/reference.cu --backend cuda \
  --cases "$CASES" --json "$RESULTS/judge-reference.json"

note "done in $(($(date +%s) - T0)) s; results in $RESULTS"
ls -l "$RESULTS" | tee -a "$SUMMARY"
