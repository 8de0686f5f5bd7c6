#!/usr/bin/env bash
# What each knob of tasks/swi_glu/kernels/rows.cpp does to the kernel itself, side by side in one
# run: builds bench/swiglu_rows_stream.cpp once per variant below and runs every variant on
# every shape, interleaved, ROUNDS times (default 3), pinned to one CPU (default the last). Prints
# GB/s (input plus output bytes per second of the thread's CPU time), the median over rounds of
# each round's median call. The figures behind decisions D5 and D6 of plan 01.
#   bench/swiglu_rows_stream.sh            ROUNDS=5 CPU=0 CXX=clang++ bench/swiglu_rows_stream.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
cpu=${CPU:-$(($(nproc) - 1))}
cxx=${CXX:-g++}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# name|defines: the M2 knobs of the 2026-12-03 make run's M1 kernel, then one change at a time.
variants='nt|-DUNROLL=1 -DNT_STORES=1 -DNT_MIN_MB=4
nt+pf4k|-DUNROLL=1 -DNT_STORES=1 -DNT_MIN_MB=4 -DPF_DIST=4096
nt+pf16k|-DUNROLL=1 -DNT_STORES=1 -DNT_MIN_MB=4 -DPF_DIST=16384
pf4k+bf16cvt|-DUNROLL=1 -DNT_STORES=1 -DNT_MIN_MB=4 -DPF_DIST=4096 -DBF16_CVT=1
+exp2deg4|-DUNROLL=1 -DNT_STORES=1 -DNT_MIN_MB=4 -DPF_DIST=4096 -DBF16_CVT=1 -DHALF_EXP_DEGREE=4
+exp2deg3|-DUNROLL=1 -DNT_STORES=1 -DNT_MIN_MB=4 -DPF_DIST=4096 -DBF16_CVT=1 -DHALF_EXP_DEGREE=3
+exp2deg3+pairs|-DUNROLL=1 -DNT_STORES=1 -DNT_MIN_MB=4 -DPF_DIST=4096 -DBF16_CVT=1 -DHALF_EXP_DEGREE=3 -DBF16_PAIRS=1'
# rows cols dtype mode reps: the large cases' row lengths (2 and 18, 5, 3, 4) cold, and a
# cache-resident shape warm, where arithmetic alone sets the pace.
shapes='2048 4096 f32 cold 20
2039 65520 f32 cold 8
4096 8192 bf16 cold 12
1 134217728 f16 cold 6
512 2048 f32 warm 60
512 2048 bf16 warm 60
512 2048 f16 warm 60'

names=()
while IFS='|' read -r name defines; do
  # shellcheck disable=SC2086
  "$cxx" -std=c++20 -O3 -march=native -Iinclude -DTEMPER_ROWS_SOURCE='"tasks/swi_glu/kernels/rows.cpp"' -I. \
    $defines bench/swiglu_rows_stream.cpp -o "$dir/$name"
  names+=("$name")
done <<<"$variants"

echo "swiglu_rows_stream: ${#names[@]} variants x $(wc -l <<<"$shapes") shapes x $rounds rounds on CPU $cpu ($(date -u +%FT%TZ), $(git rev-parse --short HEAD))" >&2
for ((r = 1; r <= rounds; ++r)); do
  while read -r rows cols dtype mode reps; do
    for name in "${names[@]}"; do
      gbps=$(taskset -c "$cpu" "$dir/$name" "$rows" "$cols" "$dtype" "$mode" "$reps" | awk '{print $2}')
      echo "$rows x $cols $dtype $mode|$name|$gbps" >>"$dir/results"
    done
  done <<<"$shapes"
  echo "round $r of $rounds done" >&2
done

# One row per shape, one column per variant: the median GB/s over rounds.
printf '%-28s' "shape (GB/s)"
for name in "${names[@]}"; do printf ' %18s' "$name"; done
echo
while read -r rows cols dtype mode reps; do
  shape="$rows x $cols $dtype $mode"
  printf '%-28s' "$shape"
  for name in "${names[@]}"; do
    med=$(awk -F'|' -v s="$shape" -v n="$name" '$1 == s && $2 == n {print $3}' "$dir/results" | sort -g |
      awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
    printf ' %18s' "$med"
  done
  echo
done <<<"$shapes"
