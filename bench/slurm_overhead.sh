#!/usr/bin/env bash
# What sending judge runs to Slurm costs against running them in temper itself, on a one-node
# Slurm started here (scripts/slurm_test_cluster.sh; needs root and Debian's slurm packages).
#
#   bash bench/slurm_overhead.sh [CASES]        e.g. bash bench/slurm_overhead.sh 7,13
#
# The same short campaign three times, one after the other on the same machine: the Teacher
# writes a two-milestone plan, the Student probes a 4-variant grid on the last case and submits
# (command-line agents, no LLM); final report without PyTorch. Arms: --executor local; slurm
# with --max-jobs 1; slurm with --max-jobs 2. On one node with --exclusive the jobs still run
# one at a time, so this measures the cluster path's own cost (submission, scheduling, polling,
# a temper process per job, merging), not what parallel nodes gain. Prints a markdown table:
# campaign wall seconds, judge runs, cluster submissions, queue seconds, overhead per
# submission against the local arm.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TEMPER="${TEMPER:-$ROOT/build/temper}"
CASES="${1:-7,13}"
[ -x "$TEMPER" ] || { echo "build temper first ($TEMPER)" >&2; exit 2; }
OUT="$(mktemp -d /tmp/temper-slurm-bench.XXXXXX)"
trap 'bash "$ROOT/scripts/slurm_test_cluster.sh" stop "$OUT/cluster" >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$OUT"' EXIT
eval "$(bash "$ROOT/scripts/slurm_test_cluster.sh" start "$OUT/cluster")" || exit 3

last=${CASES##*,}
mkdir -p "$OUT/kit"
cp "$ROOT/tasks/swi_glu/kernels/rows.cpp" "$OUT/kit/rows.cpp"
python3 - "$OUT/kit/plan.json" "$last" <<'PY'
import json, sys
last = int(sys.argv[2])
def milestone(i, acc):
    return {"id": i, "title": "milestone " + i, "requirements": ["the rows kernel"], "contract": "kernel.h ABI",
            "acceptance": acc, "budget": {"attempts": 3, "seconds": 3600}, "depends_on": ["D1"]}
plan = {"schema_version": 1, "kind": "temper.plan",
        "decisions": [{"id": "D1", "title": "rows", "choice": "one streaming pass over rows", "rationale": "memory-bound",
                       "evidence": {"measurements": ["ref-time"]}}],
        "milestones": [milestone("M0", {"correctness": {"cases": "all"}}),
                       milestone("M1", {"correctness": {"cases": "all"},
                                        "performance": {"tier": "gate", "cases": "all", "min_speedup": 0.01, "against": "reference"}})]}
json.dump(plan, open(sys.argv[1], "w"), indent=2)
PY
echo "cp $OUT/kit/plan.json plan.json" > "$OUT/kit/teacher.sh"
cat > "$OUT/kit/student.sh" <<SH
cp $OUT/kit/rows.cpp kernel.cpp
./harness probe kernel.cpp --case $last --grid UNROLL=1,2 --grid PF_DIST=0,4096
./harness submit kernel.cpp
SH

run_arm() { # name, extra flags...
  local name=$1; shift
  local start=$(date +%s.%N)
  TEMPER_SANDBOX_RO="$OUT/kit" "$TEMPER" run "$ROOT/tasks/swi_glu" --teacher "cmd:sh $OUT/kit/teacher.sh" \
    --student "cmd:sh $OUT/kit/student.sh" --dir "$OUT/$name" --cases "$CASES" --cap 0.5 --measure-jobs 1 \
    --confirm-jobs 1 --no-vs-torch --no-sandbox --quiet "$@" >"$OUT/$name.log" 2>&1 || { echo "$name failed:"; tail -5 "$OUT/$name.log"; }
  echo "$name $(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$(date +%s.%N)")" >> "$OUT/walls"
  "$TEMPER" status "$OUT/$name" --json > "$OUT/$name.status.json"
}
run_arm local
run_arm slurm1 --executor slurm --max-jobs 1
run_arm slurm2 --executor slurm --max-jobs 2

python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
walls = dict(l.split() for l in open(os.path.join(out, "walls")))
rows = {}
for name in ("local", "slurm1", "slurm2"):
    st = json.load(open(os.path.join(out, name + ".status.json")))
    c = st["costs"]
    rows[name] = (float(walls[name]), st["counts"]["judge_runs"], c.get("cluster_jobs", 0), c.get("queue_s", 0.0), c.get("judge_s", 0.0))
base = rows["local"][0]
print("| arm | wall s | judge runs | Slurm submissions | queue s | judge s | wall over local per submission |")
print("|---|---|---|---|---|---|---|")
for name, (wall, runs, jobs, queue, judge) in rows.items():
    per = f"{(wall - base) / jobs:+.2f} s" if jobs else "-"
    print(f"| {name} | {wall:.1f} | {runs} | {jobs} | {queue:.1f} | {judge:.1f} | {per} |")
PY
