#!/usr/bin/env bash
# Installs the Debian packages temper needs to build and test, skipping what is present.
# Idempotent and quiet when nothing is missing, so `make run` and `make test` can call it every time.
set -euo pipefail

packages=(
  build-essential g++ clang cmake ninja-build pkg-config binutils
  nlohmann-json3-dev libcli11-dev libfmt-dev libexpected-dev libyaml-cpp-dev
  libseccomp-dev libsqlite3-dev libxxhash-dev libcsv-dev libgtest-dev libgmock-dev libbenchmark-dev
  valgrind ccache bubblewrap
  python3 python3-venv
  chromium  # headless, for the HTML report tests (tests/report); they skip without it
  slurmctld slurmd slurm-client munge  # a one-node Slurm for the scale-out test (docs/scale-out.md); it skips without it
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# The Python goldens' environment (pinned PyTorch, outside the clone, docs/goldens.md). Without it
# temper still builds and runs; tasks whose golden is a golden.py say how to get it, their tests skip.
golden_venv() {
  bash "$(dirname "${BASH_SOURCE[0]}")/setup_golden_venv.sh" ||
    echo "setup: the golden runner's Python environment could not be installed; goldens written in Python (golden.py) stay unavailable" >&2
}

if [ "${#missing[@]}" -eq 0 ]; then
  golden_venv
  exit 0
fi

echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
golden_venv
