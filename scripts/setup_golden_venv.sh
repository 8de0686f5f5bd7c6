#!/usr/bin/env bash
# Makes the Python golden runner's virtual environment (pinned PyTorch, CPU use) outside the clone,
# in ${XDG_CACHE_HOME:-~/.cache}/temper/venv-<hash of runners/golden/requirements.txt>, so clean
# clones and CI reuse it. Idempotent and quiet when done; prints nothing unless it installs.
# Temper finds the same directory by default (TEMPER_GOLDEN_VENV overrides it).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$repo/runners/golden/requirements.txt"
hash="$(sha256sum "$requirements" | cut -c1-16)"
venv="${TEMPER_GOLDEN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/temper/venv-$hash}"

# The marker, a copy of the requirements, is written last: an interrupted install is redone rather
# than used, and temper finds the environment by comparing the marker with its requirements file.
marker="$venv/.temper-requirements"
if cmp -s "$requirements" "$marker"; then
  exit 0
fi

# The Debian interpreter, not whatever `python3` a user's PATH puts first: the venv must outlive it.
python=/usr/bin/python3
[ -x "$python" ] || python="$(command -v python3)"

echo "setup: creating the golden runner's Python environment in $venv (PyTorch, a few GB, once)"
start=$SECONDS
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
"$venv/bin/python" -c "import torch, numpy"
cp "$requirements" "$marker"
echo "setup: golden environment ready in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1))"
