#!/usr/bin/env bash
# The probe's race (issue 23): `temper probe` on one SwiGLU case with the bundled starter's
# streaming knobs (18 variants), first with --no-race (every variant timed and checked in full),
# then with the race (a variant clearly behind the best checked one stops early, unchecked), same
# seed, same grid, one after the other. Prints per run: wall time, the timing and checking time
# summed over variants, variants behind, checks run, and the top three of each ranking.
#   bench/probe_race.sh [CASE] [BUILD_DIR]        e.g. bench/probe_race.sh 3
# THREADS=N|all (default all, as `make run`), CAP=seconds per arm (default 1, as `make run`).
# The first run computes the correctness goldens (cached for the second): compare the timing and
# check sums, not only the walls.
set -euo pipefail
case_id=${1:-3}
build=${2:-build}
cd "$(dirname "$0")/.."
task="$PWD/tasks/swi_glu"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
grid=(--grid NT_STORES=0,1 --grid HALF_EXP_DEGREE=3,4,6 --grid PF_DIST=0,4096,16384)
for mode in no-race race; do
  flag=()
  [ "$mode" = no-race ] && flag=(--no-race)
  start=$(date +%s.%N)
  "$build/temper" probe "$task" "$task/kernels/rows.cpp" --case "$case_id" "${grid[@]}" --seed 1 \
    --threads "${THREADS:-all}" --cap "${CAP:-1}" --quiet --json "$out/$mode.json" "${flag[@]}" > "$out/$mode.txt" || true
  end=$(date +%s.%N)
  python3 - "$out/$mode.json" "$mode" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
mode, wall = sys.argv[2], float(sys.argv[4]) - float(sys.argv[3])
timing = check = 0.0
checks = proved = 0
for v in r["variants"]:
    t = v.get("timing") or {}
    timing += t.get("wall_seconds", 0)
    checks += t.get("rechecks", 0)
    check += t.get("check_seconds", 0)
    proved += t.get("proved_by_identity", 0)
top = [f'{v["label"]} {v["timing"]["speedup"]:.2f}x' for v in r["variants"][:3] if v.get("timing")]
print(f'{mode:8} wall {wall:6.1f} s  probe {r["summary"]["wall_seconds"]:6.1f} s  timed {r["summary"]["timed"]}'
      f'  behind {r["summary"].get("behind", 0)}  rechecks {checks} (proved by identity {proved})  timing {timing:6.1f} s  checks {check:6.1f} s')
print("         top 3: " + "; ".join(top))
PY
done
