#!/usr/bin/env bash
# Build the browser package pkg/ (wasm-bindgen API of src/wasm/, ruzstd
# decoder) reproducibly. With --check, build into a scratch directory and fail
# if the committed pkg/ differs from the fresh build.
#
# Reproducible: source paths are remapped (no checkout path or cargo home in
# the .wasm), one codegen unit, no debug info, tool versions pinned by
# Cargo.lock, .ci/install (wasm-pack 0.15.1, wasm-bindgen 0.2.130) and
# package-lock.json (binaryen 132).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
check=0
[ "${1:-}" = "--check" ] && check=1

export CARGO_PROFILE_RELEASE_DEBUG=false
# Speed, then size: rustc at opt-level 3 and binaryen's wasm-opt -O3 decode
# about 30% faster in Chromium than opt-level "z" at the same size (299 vs
# 298 KB; medians of 5 interleaved rounds of the remote bench's decode rows).
export CARGO_PROFILE_RELEASE_OPT_LEVEL=3
export CARGO_PROFILE_RELEASE_LTO=true
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1
export CARGO_PROFILE_RELEASE_PANIC=abort
export CARGO_PROFILE_RELEASE_STRIP=symbols
cargo_home=${CARGO_HOME:-$HOME/.cargo}
export RUSTFLAGS="--remap-path-prefix=$root=/zrecord --remap-path-prefix=$cargo_home=/cargo --remap-path-prefix=$HOME=/home"
# A separate target dir: these flags would otherwise invalidate other builds.
export CARGO_TARGET_DIR=${ZRECORD_PKG_TARGET:-${CARGO_TARGET_DIR:-$root/target}/pkg-build}

out=$root/pkg
if [ $check = 1 ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  out=$scratch/pkg
fi

cargo fetch --quiet
wasm-pack build --target web --mode no-install --release --out-dir "$out" . -- --no-default-features
# wasm-pack writes a .gitignore of '*' into the package (pkg/ is committed)
# and copies the crate's README.md, which would go stale with every edit.
rm -f "$out/.gitignore" "$out/README.md"

wasm=$out/zrecord_bg.wasm
# wasm-opt from npm's binaryen, pinned in package.json (Debian's is too old
# for this module). The features are those rustc's wasm32 target emits.
wasm_opt=$root/node_modules/.bin/wasm-opt
[ -x "$wasm_opt" ] || { echo "build-pkg: $wasm_opt is missing: run npm ci (or bash .ci/install)" >&2; exit 1; }
"$wasm_opt" -O3 --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-reference-types --enable-multivalue --enable-mutable-globals "$wasm" -o "$wasm.opt"
mv "$wasm.opt" "$wasm"
echo "pkg: $(wc -c < "$wasm") bytes zrecord_bg.wasm, $(gzip -9 -c "$wasm" | wc -c) gzipped"

if [ $check = 1 ]; then
  if ! diff -r "$root/pkg" "$out"; then
    echo "pkg/ is stale or the build is not reproducible: run scripts/build-pkg.sh and commit pkg/" >&2
    exit 1
  fi
  echo "pkg/ matches a fresh build"
fi
