#!/usr/bin/env bash
# Every official CANN-Bench task as it is (../shared/cann-bench/tasks/level*/*): does it load
# (`temper task check`), and does its golden run (`temper task golden`: golden.py through the
# Python golden runner, fp64 and same-precision runs in one process), with the golden's seconds
# per case, and, for the tasks temper has a candidate kernel for, the judge's verdict on it
# (correctness against the official golden.py and thresholds, on the same cases). Prints a
# markdown table for docs/benchmarks.md.
#
#   bash bench/cann_bench_corpus.sh [CASES]    (default CASES: all; e.g. 1,2 for a quick pass)
#   ONLY='level1/gelu|level2/arg_max' bash bench/cann_bench_corpus.sh 1,2,3   (a subset of tasks)
#
# Goldens run with an empty golden cache (a temporary TEMPER_CACHE_DIR), so every figure is a
# real run: interpreter start, `import torch` and both precisions.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TEMPER="${TEMPER:-$ROOT/build/temper}"
TASKS="${TASKS_DIR:-$ROOT/../shared/cann-bench/tasks}"
CASES="${1:-all}"
[ -x "$TEMPER" ] || { echo "build temper first ($TEMPER)" >&2; exit 2; }
[ -d "$TASKS" ] || { echo "no official tasks at $TASKS" >&2; exit 2; }
export TEMPER_CACHE_DIR="$(mktemp -d /tmp/temper-corpus.XXXXXX)"
trap 'rm -rf "$TEMPER_CACHE_DIR"' EXIT

# Candidates temper has for official tasks (the bundled tasks' kernels are written for the same
# operators; the fixtures are made to pass or to fail in a known way).
declare -A CANDIDATES=(
  [level1/swi_glu]="tasks/swi_glu/kernels/rows.cpp"
  [level4/gqa]="tasks/gqa/kernels/blocked.cpp"
  [level2/arg_max]="tests/fixtures/official/arg_max_last_tie.cpp"
  [level1/gelu]="tests/fixtures/official/gelu_scaled.cpp"
)

# "rows.cpp: 3/3 passed", or which cases failed and with what.
judge_candidate() {
  local dir="$1" cand="$2" report="$TEMPER_CACHE_DIR/candidate.json"
  local cases=(--cases "$CASES")
  [ "$CASES" = all ] && cases=()
  "$TEMPER" judge "$dir" "$ROOT/$cand" "${cases[@]}" --json "$report" --quiet >/dev/null 2>&1
  python3 - "$report" "$(basename "$cand")" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print(f"{sys.argv[2]}: no report"); sys.exit()
cases = d["cases"]
ok = [c for c in cases if c["status"] == "PASSED"]
bad = [f'{c["case_id"]} {c["status"]}' for c in cases if c["status"] != "PASSED"]
print(f"{sys.argv[2]}: {len(ok)}/{len(cases)} passed" + (" (" + ", ".join(bad) + ")" if bad else ""))
PY
}

echo "| task | check | golden | cases run | golden s per case (median, max) | candidate: judged | first problem |"
echo "|---|---|---|---|---|---|---|"
loads=0 runs=0 total=0
for dir in "$TASKS"/level*/*/; do
  dir="${dir%/}"
  name="${dir#"$TASKS"/}"
  [[ -n "${ONLY:-}" && ! "$name" =~ ^(${ONLY})$ ]] && continue
  total=$((total + 1))
  check_out="$("$TEMPER" task check "$dir" 2>&1)"
  if [ $? -ne 0 ]; then
    first="$(printf '%s\n' "$check_out" | head -1 | sed "s#$dir/##; s/|/\\\\|/g" | cut -c1-100)"
    echo "| $name | fails | – | – | – | – | $first |"
    continue
  fi
  loads=$((loads + 1))
  json="$("$TEMPER" task golden "$dir" --cases "$CASES" --json 2>&1)"
  row="$(printf '%s' "$json" | python3 -c '
import json, statistics, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("fails\t0\t–\t" + sys.argv[1]); sys.exit()
ok = [c for c in d["cases"] if c["ok"]]
secs = sorted(c["seconds"] for c in ok)
bad = [c for c in d["cases"] if not c["ok"]]
first = bad[0]["error"].strip().splitlines()[-1][:100] if bad else ""
status = "runs" if not bad else ("fails" if not ok else "partly")
times = f"{statistics.median(secs):.2f}, {secs[-1]:.2f}" if secs else "–"
n = len(d["cases"])
print(f"{status}\t{len(ok)}/{n}\t{times}\t{first}")
' "$(printf '%s' "$json" | tail -1 | cut -c1-100)")"
  IFS=$'\t' read -r status count times first <<<"$row"
  [ "$status" = runs ] && runs=$((runs + 1))
  candidate="–"
  [ -n "${CANDIDATES[$name]:-}" ] && candidate="$(judge_candidate "$dir" "${CANDIDATES[$name]}")"
  echo "| $name | ok | $status | $count | $times | $candidate | ${first//|/\\|} |"
done
echo
echo "$loads of $total tasks load; the goldens of $runs run on every selected case."
