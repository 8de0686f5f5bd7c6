#!/usr/bin/env bash
# A kernel against PyTorch, on one thread and on every CPU: the tables of issue 22.
#
#   bash bench/threads_vs_torch.sh TASK KERNEL [CASES] [CAP_S]
#   e.g. bash bench/threads_vs_torch.sh tasks/swi_glu campaigns/swi_glu/final/kernel.cpp all 1
#
# Two judge runs of the same kernel, each a gate (1 measurement + CONFIRM=1 confirmation job per case):
#   1 thread:  --threads 1   against PyTorch at one thread   (--torch-threads 1)
#   all CPUs:  --threads all against PyTorch at its default  (--torch-threads default)
# and a markdown table per case: speedup with its 95% interval and verdict, and the fraction of
# the roofline certified at that thread count (docs/kb.md).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TEMPER="${TEMPER:-$ROOT/build/temper}"
TASK="${1:?usage: threads_vs_torch.sh TASK KERNEL [CASES] [CAP_S]}"
KERNEL="${2:?usage: threads_vs_torch.sh TASK KERNEL [CASES] [CAP_S]}"
CASES="${3:-all}"
CAP="${4:-1}"
CONFIRM="${CONFIRM:-1}" # confirmation jobs per case (0: measurement only, verdicts unconfirmed)
[ -x "$TEMPER" ] || { echo "build temper first ($TEMPER)" >&2; exit 2; }
OUT="$(mktemp -d /tmp/temper-threads.XXXXXX)"
trap 'rm -rf "$OUT"' EXIT

cases=(--cases "$CASES")
[ "$CASES" = all ] && cases=()
for arm in one all; do
  threads=1 torch=1
  [ "$arm" = all ] && threads=all torch=default
  start=$(date +%s)
  "$TEMPER" judge "$TASK" "$KERNEL" "${cases[@]}" --threads "$threads" --reference torch \
    --torch-threads "$torch" --cap "$CAP" --measure-jobs 1 --confirm-jobs "$CONFIRM" --json "$OUT/$arm.json" --quiet >"$OUT/$arm.log" 2>&1
  echo "$arm: $(( $(date +%s) - start )) s" >&2
done

python3 - "$OUT/one.json" "$OUT/all.json" <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
def row(c):
    t = c.get("timing") or {}
    if c.get("status") != "PASSED" or "speedup" not in t:
        return c.get("status", "?"), ""
    s, (lo, hi) = t["speedup"], t.get("ci", [None, None])
    v = t.get("verdict", "") + ("" if t.get("confirmed") else "?")
    rf = t.get("roofline_fraction")
    return f"{s:.2f}x [{lo:.2f}, {hi:.2f}] {v}", (f"{100 * rf:.0f}%" if rf else "-")
names = [r["context"]["reference"].get("torch", "PyTorch") for r in runs]
print(f"| case | dtype | shape | 1 thread vs {names[0]} | roofline | all CPUs vs {names[1]} | roofline |")
print("|---:|---|---|---|---:|---|---:|")
by_id = [{c["case_id"]: c for c in r["cases"]} for r in runs]
for cid, c in by_id[0].items():
    a, ra = row(c)
    b, rb = row(by_id[1].get(cid, {}))
    print(f"| {cid} | {'/'.join(c.get('dtypes', []))} | {' '.join(str(s) for s in c.get('shapes', []))} | {a} | {ra} | {b} | {rb} |")
for name, r in zip(("1 thread", "all CPUs"), runs):
    t = r.get("timing") or {}
    v = t.get("verdicts", {})
    print(f"\n{name}: geomean {t.get('geomean_speedup', float('nan')):.2f}x, FASTER {v.get('FASTER', 0)}, SLOWER {v.get('SLOWER', 0)}, "
          f"SAME {v.get('SAME', 0)}, AMBIGUOUS {v.get('AMBIGUOUS', 0)}; roofline {t.get('roofline', {}).get('source', '-')}")
PY
