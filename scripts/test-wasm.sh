#!/usr/bin/env bash
# The wasm test suite (tests/wasm_node.rs, tests/wasm_browser.rs): nginx
# serves the loaderx fixtures and the dataset fixture on 127.0.0.1, the suite reads them through the
# JavaScript API in Node and in headless Chromium (whose page comes from
# wasm-bindgen-test's own server: the store is cross-origin).
# Needs nginx, node, chromium + chromedriver, wasm-pack and wasm-bindgen-cli
# (.ci/install). Fails loudly when one is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# nginx serves tests/fixtures: the loaderx stores and the dataset fixture.
fixtures=$(cd "$root/tests/fixtures" && pwd)

for tool in wasm-pack wasm-bindgen-test-runner node chromedriver; do
  command -v "$tool" >/dev/null || { echo "test-wasm: $tool is missing (run .ci/install)" >&2; exit 1; }
done
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "test-wasm: nginx is missing (run .ci/install)" >&2; exit 1; }

tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -e "s|@TMP@|$tmp|g" -e "s|@PORT@|$port|g" -e "s|@ROOT@|$fixtures|g" \
  scripts/nginx.conf.in > "$tmp/nginx.conf"
"$nginx" -p "$tmp" -e "$tmp/error.log" -c "$tmp/nginx.conf" &
pid=$!
stop() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap stop EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/error.log" >&2; exit 1; }
  sleep 0.1
done

export ZRECORD_TEST_URL=http://127.0.0.1:$port/loaderx-2.0.1
export ZRECORD_TEST_DATASET_URL=http://127.0.0.1:$port/dataset-v1
cargo fetch --quiet
wasm-pack test --node --mode no-install . --no-default-features --test wasm_node
wasm-pack test --headless --chrome --mode no-install . --no-default-features --test wasm_browser
# The committed package itself (pkg/, as users import it), in Node.
node tests/pkg_smoke.mjs
