#!/usr/bin/env bash
# The official CANN-Bench corpus (issue 20): for every task under ../shared/cann-bench/tasks
# (levels 1-4), whether `temper task check` accepts it unchanged, how many cases it loads, which
# input features its cases use (tensor lists, absent optional inputs, per-input value ranges)
# and whether the operator gives its own precision thresholds. Prints a markdown table and a
# count; exits 1 when any task does not check clean.
#
#   bench/cann_bench_formats.sh [--build DIR] [--tasks DIR]
set -euo pipefail

build=build
tasks="$(cd "$(dirname "$0")/.." && pwd)/../shared/cann-bench/tasks"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --tasks) tasks="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
temper="$build/temper"
[[ -x "$temper" ]] || { echo "no $temper: build first" >&2; exit 2; }
[[ -d "$tasks" ]] || { echo "no task directory $tasks" >&2; exit 2; }

echo "| task | check | cases | lists | absent inputs | per-input ranges | own thresholds |"
echo "|---|---|---|---|---|---|---|"
total=0 clean=0
for dir in "$tasks"/level*/*/; do
  [[ -f "$dir/proto.yaml" ]] || continue
  total=$((total + 1))
  name="${dir#"$tasks"/}"; name="${name%/}"
  if "$temper" task check "$dir" >/dev/null 2>&1; then
    clean=$((clean + 1)); check=clean
    json="$("$temper" task show "$dir" --json)"
    read -r cases lists absent ranges own < <(jq -r '
      def is_list: type == "array" and length > 0 and (.[0] | type) == "array";
      [(.cases | length),
       ([.cases[] | select(any(.input_shape[]; is_list))] | length),
       ([.cases[] | select(any(.input_shape[]; . == null))] | length),
       ([.cases[] | select((.value_range | length) > 0 and (.value_range[0] | type) != "number" and (.value_range[0] | type) != "string")] | length),
       (if (.operator.precision_thresholds | length) > 0 then "yes" else "-" end)] | @tsv' <<<"$json")
  else
    check="FAILS"; cases=- lists=- absent=- ranges=- own=-
  fi
  echo "| $name | $check | $cases | $lists | $absent | $ranges | $own |"
done
echo
echo "$clean of $total tasks check clean"
[[ $clean -eq $total ]]
