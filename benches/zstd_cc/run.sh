#!/usr/bin/env bash
# What the C compiler alone does to libzstd: the libzstd sources zstd-sys
# builds (its version from Cargo.lock) compiled with gcc (what zstd-sys's
# `cc` picks here), clang and zig cc (loaderx's wheel is built by Zig, i.e.
# clang) when present, then one thread compressing and decompressing
# loaderx's images (benches/field/vision.py) with each, interleaved.
#
#   bash benches/zstd_cc/run.sh [IMAGES]        # default 200 images (and 15x as many token blocks), ~4 min
#
# Needs a Python with numpy and zrecord (for the dictionary): $PYTHON, default
# the venv .ci/install makes. clang: `apt-get install clang`; zig: `pip
# install ziglang` into that venv.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-$HOME/.cache/zrecord/venv-py/bin/python}
images=${1:-200}
version=$(grep -A1 '^name = "zstd-sys"' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
lib=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/zstd-sys-"$version"/zstd/lib | head -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PYTHON" - "$work" "$images" <<'PY'
import sys
sys.path[:0] = ["benches/field", "benches/python"]
import numpy as np
from vision import dense_images
from bench import zipf_tokens
import zrecord
work, n = sys.argv[1], int(sys.argv[2])
imgs = dense_images(n, 7)
open(f"{work}/images.bin", "wb").write(imgs.tobytes())
open(f"{work}/images.dict", "wb").write(zrecord.train_dict(imgs))
tokens = zipf_tokens(np.random.default_rng(3), 15 * n * 512).reshape(15 * n, 512)
open(f"{work}/tokens.bin", "wb").write(tokens.tobytes())
open(f"{work}/tokens.dict", "wb").write(zrecord.train_dict(tokens))
PY
sources=("$lib"/common/*.c "$lib"/compress/*.c "$lib"/decompress/*.c "$lib"/decompress/*.S)
declare -A cc=([gcc]="gcc")
for c in clang clang-14 clang-15 clang-16 clang-17 clang-18 clang-19; do
    command -v "$c" >/dev/null && { cc[clang]="$c"; break; }
done
"$PYTHON" -m ziglang version >/dev/null 2>&1 && cc[zig]="$PYTHON -m ziglang cc -target x86_64-linux-gnu"
for name in "${!cc[@]}"; do
    echo "building with ${cc[$name]}: $(${cc[$name]} --version 2>/dev/null | head -n 1)" >&2
    ${cc[$name]} -O3 -fPIC -I"$lib" -o "$work/codec-$name" benches/zstd_cc/codec.c "${sources[@]}" -lpthread
done
pin=(); command -v taskset >/dev/null && pin=(taskset -c 1)
echo "libzstd from zstd-sys $version, $images images of 147 KiB and $((15 * images)) token blocks of 2 KiB, one thread, best of 3; MB/s of decoded bytes"
echo
echo "| compiler | codec | compress MB/s | decompress MB/s | frames, bytes |"
echo "|---|---|---:|---:|---:|"
for round in 1 2; do
    for name in "${!cc[@]}"; do
        "${pin[@]}" "$work/codec-$name" "$work/images.bin" "$work/images.dict" 150528 3 "$name, images (run $round)"
        "${pin[@]}" "$work/codec-$name" "$work/tokens.bin" "$work/tokens.dict" 2048 3 "$name, token blocks (run $round)"
    done
done
