#!/usr/bin/env bash
# Correctness judging benchmark: `temper judge TASK TASK/reference.cpp --jobs N` on the bundled
# tasks, in three cache states, each in a fresh compile/golden cache of its own:
#   cold         fresh TEMPER_CACHE_DIR: cold compile cache and cold goldens (new secret seed)
#   warm         the same cache again: compile and goldens all hits
#   golden_cold  the same cache with only golden/ deleted: warm compile, cold goldens
# Figures come from the JSON reports (summary, cases[].compile/golden/kernel_seconds/
# wall_seconds) and from the progress lines on stderr, time-stamped as they arrive: the
# golden phase of each run and, in the golden_cold run (where compiling costs nothing), each
# case's golden time, reconstructed from the order in which the judge's worker threads take
# cases (see the analysis at the end).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/judge_correctness.sh [options]

  --build DIR        build directory holding temper and temper-worker (default: build)
  --tasks LIST       comma-separated task names under tasks/ (default: swi_glu,gqa)
  --cases TASK=LIST  cases for one task, e.g. gqa=1-7,11-20 (default: all); repeatable
  --jobs N           --jobs for temper judge (default: 2)
  --states LIST      cache states to run, in order (default: cold,warm,golden_cold)
  --out FILE         results JSON (default: bench/results/judge_correctness-<UTC date>.json)
  --keep             keep the temporary cache directories
  -h, --help         this text

Each task gets a fresh cache directory under ${TMPDIR:-/tmp}; the states share it in order.
Writes the results JSON and prints a markdown summary (also saved next to it as .md).
EOF
}

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="build"
tasks="swi_glu,gqa"
jobs=2
states="cold,warm,golden_cold"
out=""
keep=0
declare -A case_sel=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --tasks) tasks="$2"; shift 2 ;;
    --cases) case_sel["${2%%=*}"]="${2#*=}"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --states) states="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
  esac
done

cd "$repo"
[[ "$build" = /* ]] || build="$repo/$build"
temper="$build/temper"
[[ -x "$temper" && -x "$build/temper-worker" ]] || { echo "no temper/temper-worker in $build; build them first" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed for the analysis" >&2; exit 2; }
date_utc="$(date -u +%Y-%m-%d)"
[[ -n "$out" ]] || out="bench/results/judge_correctness-$date_utc.json"
mkdir -p "$(dirname "$out")"
work="$(mktemp -d "${TMPDIR:-/tmp}/temper-bench-corr.XXXXXX")"
echo "work directory: $work" >&2

# Prefixes every line of stdin with the wall clock ($EPOCHREALTIME, no fork per line).
stamp() { while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done; }
load1() { cut -d' ' -f1 /proc/loadavg; }

runs_file="$work/runs.tsv"
: >"$runs_file"
IFS=',' read -r -a task_list <<<"$tasks"
IFS=',' read -r -a state_list <<<"$states"
for task in "${task_list[@]}"; do
  cache="$work/cache-$task"
  mkdir -p "$cache"
  sel="${case_sel[$task]:-}"
  for state in "${state_list[@]}"; do
    case "$state" in
      cold) rm -rf "$cache"; mkdir -p "$cache" ;;
      warm) ;;
      golden_cold) rm -rf "$cache/golden" ;;
      *) echo "unknown state: $state" >&2; exit 2 ;;
    esac
    tag="$task-$state"
    args=(judge "tasks/$task" "tasks/$task/reference.cpp" --jobs "$jobs" --json "$work/$tag.json")
    [[ -z "$sel" ]] || args+=(--cases "$sel")
    echo "[$(date -u +%H:%M:%S)] $tag: temper ${args[*]} (load $(load1))" >&2
    load_before="$(load1)"
    t0="$EPOCHREALTIME"
    rc=0
    TEMPER_CACHE_DIR="$cache" "$temper" "${args[@]}" 2>&1 >"$work/$tag.out" | stamp >"$work/$tag.log" || rc=$?
    t1="$EPOCHREALTIME"
    load_after="$(load1)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$task" "$state" "$t0" "$t1" "$rc" "$load_before" "$load_after" "$sel" >>"$runs_file"
    echo "[$(date -u +%H:%M:%S)] $tag: exit $rc, $(python3 -c "print(f'{$t1-$t0:.1f}')") s (load $load_after)" >&2
  done
done

python3 - "$work" "$out" "$jobs" <<'EOF'
import json, sys, os, re, platform

work, out, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = []
for line in open(os.path.join(work, "runs.tsv")):
    task, state, t0, t1, rc, lb, la, sel = line.rstrip("\n").split("\t")
    t0, t1 = float(t0), float(t1)
    rep = json.load(open(os.path.join(work, f"{task}-{state}.json")))
    stamped = []
    for l in open(os.path.join(work, f"{task}-{state}.log")):
        ts, _, msg = l.rstrip("\n").partition(" ")
        stamped.append((float(ts) - t0, msg))
    cases = rep["cases"]
    ids = [c["case_id"] for c in cases]
    done = {}
    for ts, msg in stamped:
        m = re.match(r"golden outputs: case (\d+) done", msg)
        if m: done[int(m.group(1))] = ts
    compiled = [ts for ts, msg in stamped if msg.startswith("compiled ")]
    checked = [ts for ts, msg in stamped if msg.startswith("checked case ")]
    golden_end = max(done.values()) if done else None
    # The judge's worker threads take cases in selection order from one counter: the first
    # `jobs` cases start together when the golden phase starts; case k >= jobs starts when the
    # (k - jobs)-th golden (in completion order) finishes. The phase start is the last
    # "compiled" line: exact when the golden build is a cache hit (warm compile), too early
    # when the golden's own (silent) compile is still running.
    phase_start = max(compiled) if compiled else 0.0
    golden_case = {}
    if len(done) == len(ids):
        finished = sorted(done.values())
        for k, cid in enumerate(ids):
            start = phase_start if k < jobs else finished[k - jobs]
            golden_case[cid] = done[cid] - start
    runs.append({
        "task": task, "state": state, "exit": int(rc), "cases_selected": sel or "all",
        "load1_before": float(lb), "load1_after": float(la),
        "wall_s": t1 - t0,
        "report_wall_s": rep["summary"]["wall_seconds"],
        "passed": rep["summary"]["passed"], "cases": rep["summary"]["cases"],
        "compile_s_summary": rep["summary"]["compile_seconds"],
        "golden_compile_s": rep["summary"]["golden_compile_seconds"],
        "compile_phase_end_s": phase_start,
        "golden_phase_end_s": golden_end,
        "check_phase_s": (t1 - t0 - golden_end) if golden_end is not None else None,
        "golden_s_reconstructed_valid": state != "cold",
        "per_case": [{
            "case_id": c["case_id"], "status": c["status"],
            "compile_s": c["compile"]["seconds"], "compile_cache_hit": c["compile"]["cache_hit"],
            "golden_s_report": c["golden"]["seconds"], "golden_cache_hits_report": c["golden"]["cache_hits"],
            "golden_s_reconstructed": golden_case.get(c["case_id"]),
            "kernel_s": c["kernel_seconds"], "check_wall_s": c["wall_seconds"],
        } for c in cases],
        "context": {"host": rep["context"]["host"].get("cpu_model"),
                    "logical_cpus": rep["context"]["host"].get("logical_cpus"),
                    "compiler": rep["context"]["compiler"]["version"],
                    "temper_version": rep["context"]["temper_version"],
                    "trials": rep["context"]["trials"]},
    })

result = {"benchmark": "judge_correctness", "jobs": jobs, "runs": runs}
with open(out, "w") as f:
    json.dump(result, f, indent=1)
    f.write("\n")

md = []
md.append("| task | state | cases | passed | wall s | compile phase s | golden phase ends s | check phase s | compile s (report) | golden compile s | load1 before/after |")
md.append("|---|---|---|---|---|---|---|---|---|---|---|")
for r in runs:
    md.append(f"| {r['task']} | {r['state']} | {r['cases']} | {r['passed']} | {r['wall_s']:.1f} | {r['compile_phase_end_s']:.1f} | "
              f"{(r['golden_phase_end_s'] or 0):.1f} | {(r['check_phase_s'] or 0):.1f} | {r['compile_s_summary']:.2f} | "
              f"{r['golden_compile_s']:.2f} | {r['load1_before']:.2f}/{r['load1_after']:.2f} |")
for task in dict.fromkeys(r["task"] for r in runs):
    by = {r["state"]: r for r in runs if r["task"] == task}
    md.append("")
    md.append(f"{task}: per case (golden s reconstructed from the golden_cold run; kernel s = median of the trials, cold run; check s = the case's worker phase)")
    md.append("")
    md.append("| case | status | golden s (golden_cold) | golden s in report (cold) | kernel s | check s (cold) | check s (warm) |")
    md.append("|---|---|---|---|---|---|---|")
    base = by.get("cold") or next(iter(by.values()))
    gc = {c["case_id"]: c for c in by["golden_cold"]["per_case"]} if "golden_cold" in by else {}
    wm = {c["case_id"]: c for c in by["warm"]["per_case"]} if "warm" in by else {}
    for c in base["per_case"]:
        g = gc.get(c["case_id"], {}).get("golden_s_reconstructed")
        w = wm.get(c["case_id"], {}).get("check_wall_s")
        md.append(f"| {c['case_id']} | {c['status']} | {'' if g is None else f'{g:.2f}'} | {c['golden_s_report']:.2f} "
                  f"({c['golden_cache_hits_report']} hits) | {c['kernel_s']:.4f} | {c['check_wall_s']:.2f} | {'' if w is None else f'{w:.2f}'} |")
text = "\n".join(md) + "\n"
with open(os.path.splitext(out)[0] + ".md", "w") as f:
    f.write(text)
print(text)
print(f"results: {out}")
EOF

if [[ $keep -eq 0 ]]; then rm -rf "$work"; else echo "kept: $work" >&2; fi
