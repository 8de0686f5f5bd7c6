#!/usr/bin/env bash
# Packs a temper build for a GPU machine that cannot build it (no -dev packages, no package
# registry there: ../shared/reference/gpu-device.md): the executables and the unit tests
# stripped, the fake CUDA libraries the tests use, the non-system shared libraries they need,
# and where the build expects its source and build directories (compiled in). About 17 MB.
#
#   bash bench/cuda_pack.sh [BUILD_DIR] [PACK_DIR]     (defaults: build, build-pack)
#
# There: bash bench/cuda_device_check.sh with BUILD_DIR=PACK_DIR links those paths and sets
# LD_LIBRARY_PATH.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${1:-build}"
PACK="${2:-build-pack}"
rm -rf "$PACK"
mkdir -p "$PACK/tests" "$PACK/lib"
for b in temper temper-worker temper-cuda-worker temper-profile-driver harness; do
  [ -f "$BUILD/$b" ] && strip -o "$PACK/$b" "$BUILD/$b"
done
strip -o "$PACK/tests/temper_unit_tests" "$BUILD/tests/temper_unit_tests"
[ -d "$BUILD/fake-cuda" ] && cp -r "$BUILD/fake-cuda" "$PACK/"
# Every library outside the C/C++ runtime that a packed binary links.
for b in "$PACK"/temper* "$PACK/tests/temper_unit_tests"; do
  ldd "$b" | awk '/=> \//{print $3}'
done | sort -u | grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*|libpthread|libdl|librt)\.so' | while read -r lib; do
  cp -L "$lib" "$PACK/lib/"
done
# Where the build was configured: the executables look for the source tree and the build
# directory at these absolute paths (TEMPER_SOURCE_DIR, TEMPER_BINARY_DIR).
printf '%s\n%s\n' "$ROOT" "$(cd "$BUILD" && pwd)" >"$PACK/built-at.txt"
du -sh "$PACK"
