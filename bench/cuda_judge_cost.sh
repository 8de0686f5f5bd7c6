#!/usr/bin/env bash
# What the CUDA judge costs per timed call, against the kernel's own time (issue: a GPU judge
# that costs little). Judges the tiled SwiGLU fixture against the naive one with one
# measurement and one confirmation job per case, once per content maker, and writes per case:
# the kernels' mean times, the judge's wall time per timed call (both arms, cold-L2 step, input
# making, protocol round trip and hashing included), the sampled check's seconds, and the whole
# judgement's wall time.
#
#   bash bench/cuda_judge_cost.sh RESULTS_DIR [TEMPER]        (needs a GPU; TEMPER default build/temper)
#
# Environment: CASES (default all 20), MAKERS (default "device host"), HOST_CASES (the cases the
# slow host path runs, default 1,2,4), CAP (seconds per arm, default 3), LIMIT (seconds per
# judgement on the device path, default 300; HOST_LIMIT the same on the host path, default LIMIT).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RESULTS="${1:?usage: cuda_judge_cost.sh RESULTS_DIR [TEMPER]}"
TEMPER="${2:-build/temper}"
CASES="${CASES:-1-20}"
MAKERS="${MAKERS:-device host}"
HOST_CASES="${HOST_CASES:-1,2,4}"
CAP="${CAP:-3}"
LIMIT="${LIMIT:-300}"
HOST_LIMIT="${HOST_LIMIT:-$LIMIT}"
mkdir -p "$RESULTS"

for maker in $MAKERS; do
  cases="$CASES" limit="$LIMIT"
  [ "$maker" = host ] && cases="$HOST_CASES" limit="$HOST_LIMIT"
  start=$(date +%s.%N)
  timeout --kill-after=10 "$limit" "$TEMPER" judge tasks/swi_glu tests/fixtures/cuda/swi_glu_tiled.cu --backend cuda \
    --reference tests/fixtures/cuda/swi_glu_naive.cu --cases "$cases" --measure-jobs 1 --confirm-jobs 1 --cap "$CAP" \
    --content-maker "$maker" --json "$RESULTS/cost-$maker.json" >"$RESULTS/cost-$maker.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  echo "{\"maker\": \"$maker\", \"cases\": \"$cases\", \"exit\": $rc, \"wall_s\": $(awk "BEGIN{print $end - $start}")}" >"$RESULTS/cost-$maker.run.json"
  echo "content maker $maker: exit $rc, $(awk "BEGIN{print $end - $start}") s"
done

python3 - "$RESULTS" $MAKERS <<'PY'
import json, os, sys
results, makers = sys.argv[1], sys.argv[2:]
rows = []
for maker in makers:
    run = json.load(open(os.path.join(results, f"cost-{maker}.run.json")))
    path = os.path.join(results, f"cost-{maker}.json")
    if not os.path.exists(path):
        print(f"{maker}: no report (exit {run['exit']}, {run['wall_s']:.0f} s)")
        continue
    report = json.load(open(path))
    print(f"\ncontent maker: {maker}   judgement wall {run['wall_s']:.1f} s (exit {run['exit']}), cases {run['cases']}")
    print(f"{'case':>4} {'ref us':>9} {'cand us':>9} {'wall/call us':>12} {'overhead us':>11} {'calls':>6} {'check s':>8} {'verdict':>9} {'speedup':>8}")
    for c in report.get("cases", []):
        t = c.get("timing")
        if not t:
            print(f"{c['case_id']:>4} {c['status']}")
            continue
        for job in t["jobs"]:
            ref, cand = job["reference"], job["candidate"]
            act = job.get("activity", {})
            calls = act.get("reference", {}).get("timed_calls", 0) + act.get("candidate", {}).get("timed_calls", 0)
            wall = ref["wall_seconds"] + cand["wall_seconds"]
            per_call = wall / calls if calls else float("nan")
            mean_kernel = (ref["mean"] * ref["n"] + cand["mean"] * cand["n"]) / max(ref["n"] + cand["n"], 1)
            row = {"maker": maker, "case": c["case_id"], "kind": job["kind"], "ref_us": ref["mean"] * 1e6,
                   "cand_us": cand["mean"] * 1e6, "wall_per_call_us": per_call * 1e6,
                   "overhead_us": (per_call - mean_kernel) * 1e6, "calls": calls, "check_s": job["check"]["seconds"],
                   "verdict": job["verdict"], "job_wall_s": job["wall_seconds"]}
            rows.append(row)
            print(f"{c['case_id']:>4} {row['ref_us']:>9.1f} {row['cand_us']:>9.1f} {row['wall_per_call_us']:>12.1f} "
                  f"{row['overhead_us']:>11.1f} {calls:>6} {row['check_s']:>8.2f} {job['verdict']:>9} {t.get('speedup') or 0:>8.3f}")
json.dump(rows, open(os.path.join(results, "cost-summary.json"), "w"), indent=1)
PY
