#!/usr/bin/env bash
# Builds the Python package (python/) with clang and installs it into a venv,
# then checks that clang compiled its libzstd.
#
#   bash scripts/install-python.sh VENV
#
# The compiler is named, not found: CC=clang, so the same command gives the
# same build whatever else the machine has (no clang: it fails, it does not
# fall back). clang's libzstd compresses images 18% faster than GCC's at
# level 19 with a dictionary, token blocks at loaderx's (Zig, i.e. clang)
# speed, and decodes as fast (benches/zstd_cc/, benches/results/zstd_cc.md).
# cc-rs tells cargo to rerun zstd-sys's build when CC changes, so libzstd
# built earlier by another compiler is rebuilt, never reused. Other builds
# (cargo build, the CLI, the benches) use the platform's `cc`, cc-rs's
# default; this build has its own target dir so that the two do not rebuild
# each other's C code (and everything above it) in turn.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:?usage: scripts/install-python.sh VENV}

command -v clang >/dev/null || { echo "install-python: clang is missing (run: bash .ci/install)" >&2; exit 1; }
target=${CARGO_TARGET_DIR:-$PWD/target}/python
CC=clang CARGO_TARGET_DIR=$target "$venv/bin/pip" install -q ./python

# The module pip installed must hold code clang compiled; it alone cannot
# tell whose (ring's C code is in it too, and the linker's GCC start files),
# so every libzstd.a built in this target dir (only this script builds
# there) must be clang's, object by object.
so=$("$venv/bin/python" -c 'import zrecord._native as m; print(m.__file__)')
readelf -p .comment "$so" | grep -q 'clang version' || { echo "install-python: $so holds no code compiled by clang" >&2; exit 1; }
libs=("$target"/release/build/zstd-sys-*/out/libzstd.a)
[ -f "${libs[0]}" ] || { echo "install-python: no libzstd.a under $target/release/build" >&2; exit 1; }
for a in "${libs[@]}"; do
  comment=$(readelf -p .comment "$a" 2>/dev/null)
  if [[ $comment != *'clang version'* || $comment == *GCC:* ]]; then
    echo "install-python: $a was not compiled by clang alone:" >&2
    echo "$comment" | grep -E 'clang|GCC' | sort | uniq -c >&2
    exit 1
  fi
done
echo "installed $so (libzstd compiled by $(clang --version | sed -n 1p))"
