#!/usr/bin/env bash
# Judges the GQA starter kernels (tasks/gqa/kernels) at their defaults and at every declared
# knob value: the variants below cover each value of each knob at least once (unlisted knobs
# keep their defaults). Correctness only; prints one "N of M cases passed" line per variant.
#   bench/gqa_kernel_knobs.sh [CASES] [BUILD_DIR]     e.g. bench/gqa_kernel_knobs.sh 1,7,11,18
# All 20 cases (the default) need every GQA golden: minutes when they are not cached yet (the
# first variant computes them; the rest read them from $TEMPER_CACHE_DIR). JOBS=N: parallel
# cases per judge run (default 1). OUT=DIR keeps each variant's JSON report (default: a temporary
# directory); a variant with failures also prints each failing case with its status.
set -euo pipefail
cases=${1:-1-20}
build=${2:-build}
cd "$(dirname "$0")/.."
# The task by its absolute path, as `temper run` names it: the golden's build (and so the golden
# cache key) depends on how the task path is spelled, and a campaign's goldens are then reused.
task="$PWD/tasks/gqa"
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
n=0
while IFS='|' read -r kernel defines; do
  n=$((n + 1))
  report="$out/variant-$n.json"
  line=$(nice "$build/temper" judge "$task" "$task/kernels/$kernel" --cases "$cases" -j "${JOBS:-1}" \
           --flags "-O3 -march=native $defines" --json "$report" 2>&1 | grep -E "cases passed" || echo "judge failed")
  echo "$kernel [${defines:-defaults}]: $line"
  if [ -f "$report" ]; then
    python3 -c 'import json,sys
for c in json.load(open(sys.argv[1])).get("cases", []):
    if c.get("status") != "PASSED": print("  case %s: %s %s" % (c.get("case_id"), c.get("status"), c.get("message", "")[:200]))' "$report"
  fi
done <<'LIST'
blocked.cpp|
blocked.cpp|-DBLOCK_M=16 -DBLOCK_KV=16 -DQK_KEYS=8 -DPV_ROWS=6 -DDECODE_MAX_S=1
blocked.cpp|-DBLOCK_M=256 -DBLOCK_KV=256 -DQK_KEYS=2 -DPV_ROWS=2 -DDECODE_MAX_S=16
blocked.cpp|-DBLOCK_M=32 -DBLOCK_KV=128 -DQK_KEYS=4
blocked.cpp|-DBLOCK_M=128 -DBLOCK_KV=32 -DPV_ROWS=6
rowwise.cpp|
rowwise.cpp|-DKEY_UNROLL=1 -DPV_VECS=2
rowwise.cpp|-DKEY_UNROLL=8 -DPV_VECS=4
rowwise.cpp|-DKEY_UNROLL=2
LIST
