#!/usr/bin/env bash
# End-to-end tests of the web viewer (www/) in headless Chromium, driven by
# Playwright (playwright-core, Debian's /usr/bin/chromium; no browser download).
#
# Starts, on loopback ports:
#   - the viewer's own server (`zrecord serve`, the embedded viewer at /),
#     root = the loaderx fixtures;
#   - a second `zrecord serve` on `zrecord demo --no-serve` stores (with the
#     demo dataset: image, label, caption and caption-tokens side by side);
#   - one nginx with five servers: CORS + Range (fixtures, the dataset
#     fixture dataset-v1, a 200,000-record store, scratch stores), no CORS
#     headers, no Range support (max_ranges 0),
#     gzip on, and the same CORS server again for the access-log count;
# runs `node --test tests/viewer/`, and stops every server by its PID.
# Screenshots land in target/viewer-screenshots/.
#
# Needs chromium and nginx (bash .ci/install puts them there).
#
#   scripts/test-viewer.sh                 run every test
#   scripts/test-viewer.sh FILE...         run these test files only
#   scripts/test-viewer.sh --serve         start the servers, write their
#       addresses to target/viewer-test/env.sh and wait (for development:
#       `. target/viewer-test/env.sh; node --test tests/viewer/x.test.mjs`)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

die() { echo "test-viewer: $*" >&2; exit 1; }
step() { printf '\n==> %s\n' "$*"; }

command -v chromium >/dev/null || [ -x /usr/bin/chromium ] || die "chromium is missing (run: bash .ci/install)"
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || die "nginx is missing (run: bash .ci/install)"
command -v node >/dev/null || die "node is missing"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

fixtures=$(cd "$repo/tests/fixtures/loaderx-2.0.1" 2>/dev/null && pwd) \
  || die "fixtures not found at tests/fixtures/loaderx-2.0.1"

step "playwright-core (npm, no browser download)"
if { [ ! -d node_modules/playwright-core ] || [ ! -x node_modules/.bin/wasm-opt ] || [ ! -d node_modules/aws4fetch ]; }; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent
fi

step "viewer bundle (www/app.bundle.js) up to date"
node scripts/bundle-viewer.mjs --check

step "wasm reader (pkg/)"
if [ ! -f pkg/zrecord_bg.wasm ] || [ ! -f pkg/zrecord.js ]; then
  [ -x scripts/build-pkg.sh ] || [ -f scripts/build-pkg.sh ] || die "pkg/ is missing and there is no scripts/build-pkg.sh to build it"
  bash scripts/build-pkg.sh
fi

step "zrecord (the viewer's server) and the test store writer"
cargo build --quiet --bin zrecord --example big_store
bin=${CARGO_TARGET_DIR:-$repo/target}/debug/examples
zrecord=${CARGO_TARGET_DIR:-$repo/target}/debug/zrecord

work=$repo/target/viewer-test
shots=$repo/target/viewer-screenshots
mkdir -p "$work" "$shots"
rm -rf "$work/nginx" "$work/scratch" "$work/demo"
mkdir -p "$work/nginx/logs" "$work/nginx/tmp" "$work/scratch" "$work/site"
"$zrecord" demo --no-serve --dir "$work/demo" >/dev/null

big=$work/big/tokens-200k
if [ ! -f "$big/meta.zr" ] || [ "$(stat -c %s "$big/meta.zr")" != 3204096 ]; then
  step "a 200,000-record store"
  rm -rf "$work/big"
  mkdir -p "$work/big"
  "$bin/big_store" "$big" 200000
fi
ln -sfn "$fixtures" "$work/site/fixtures"
ln -sfn "$repo/tests/fixtures/dataset-v1" "$work/site/dataset-v1"
ln -sfn "$repo/tests/fixtures/dataset-arrow" "$work/site/dataset-arrow"
ln -sfn "$work/big" "$work/site/big"
ln -sfn "$work/scratch" "$work/site/scratch"

# Free loopback ports (the kernel picks them; closed again before use).
read -r p_cors p_nocors p_norange p_gzip < <(node -e '
  const net = require("net");
  const ps = [];
  const next = () => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { ps.push(s); if (ps.length < 4) next(); else { console.log(ps.map((x) => x.address().port).join(" ")); ps.forEach((x) => x.close()); } }); };
  next();')

cors='add_header Access-Control-Allow-Origin "*" always;
      add_header Access-Control-Allow-Headers "Range" always;
      add_header Access-Control-Expose-Headers "Content-Range, Content-Length, ETag, Accept-Ranges, Content-Encoding" always;
      if ($request_method = OPTIONS) { return 204; }'
n=$work/nginx
cat > "$n/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $n/nginx.pid;
error_log $n/logs/error.log;
events { worker_connections 256; }
http {
  client_body_temp_path $n/tmp/body;
  proxy_temp_path $n/tmp/proxy;
  fastcgi_temp_path $n/tmp/fastcgi;
  uwsgi_temp_path $n/tmp/uwsgi;
  scgi_temp_path $n/tmp/scgi;
  gzip off;
  etag on;
  types { application/octet-stream zr; }
  default_type application/octet-stream;
  # CORS and Range: what a store host should do.
  server {
    listen 127.0.0.1:$p_cors;
    root $work/site;
    access_log $n/logs/cors.log;
    location / {
      $cors
    }
  }
  # No CORS headers: a page on another origin may not read the answers.
  server {
    listen 127.0.0.1:$p_nocors;
    root $work/site;
    access_log $n/logs/nocors.log;
  }
  # Ignores Range: always the whole file with 200.
  server {
    listen 127.0.0.1:$p_norange;
    root $work/site;
    access_log $n/logs/norange.log;
    max_ranges 0;
    location / {
      $cors
    }
  }
  # Compresses on the fly.
  server {
    listen 127.0.0.1:$p_gzip;
    root $work/site;
    access_log $n/logs/gzip.log;
    gzip on;
    gzip_min_length 0;
    gzip_types application/octet-stream;
    location / {
      $cors
    }
  }
}
EOF

pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

step "start nginx and the viewer server"
"$NGINX" -p "$n" -c "$n/nginx.conf" 2>"$n/logs/stderr.log" &
pids+=($!)
"$zrecord" serve "$fixtures" --port 0 >"$work/serve.out" 2>"$work/serve.log" &
pids+=($!)
"$zrecord" serve "$work/demo" --port 0 >"$work/demo-serve.out" 2>"$work/demo-serve.log" &
pids+=($!)

wait_http() {
  for _ in $(seq 100); do
    if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.status < 500 ? 0 : 1), () => process.exit(1))' "$1"; then return 0; fi
    sleep 0.1
  done
  die "no answer from $1 (see $work)"
}
# Its first line is `viewer: URL`.
for _ in $(seq 100); do [ -s "$work/serve.out" ] && break; sleep 0.1; done
viewer=$(sed -n '1s/^viewer: //p' "$work/serve.out")
[ -n "$viewer" ] || die "zrecord serve did not start: $(cat "$work/serve.log")"
wait_http "$viewer"
for _ in $(seq 100); do [ -s "$work/demo-serve.out" ] && break; sleep 0.1; done
demo_viewer=$(sed -n '1s/^viewer: //p' "$work/demo-serve.out")
[ -n "$demo_viewer" ] || die "zrecord serve (demo) did not start: $(cat "$work/demo-serve.log")"
wait_http "$demo_viewer"
for p in $p_cors $p_nocors $p_norange $p_gzip; do wait_http "http://127.0.0.1:$p/fixtures/dense-u8-img-raw/meta.zr"; done

export VIEWER_URL=$viewer
export DEMO_VIEWER_URL=$demo_viewer
export DEMO_DIR=$work/demo
export ZRECORD=$zrecord
export STORE_CORS=http://127.0.0.1:$p_cors
export STORE_NOCORS=http://127.0.0.1:$p_nocors
export STORE_NORANGE=http://127.0.0.1:$p_norange
export STORE_GZIP=http://127.0.0.1:$p_gzip
export CORS_ACCESS_LOG=$n/logs/cors.log
export FIXTURES=$fixtures
export SCRATCH=$work/scratch
export SCREENSHOTS=$shots
export ZRECORD=$zrecord

if [ "${1:-}" = "--serve" ]; then
  env | grep -E '^(VIEWER_URL|DEMO_VIEWER_URL|DEMO_DIR|ZRECORD|STORE_[A-Z]+|CORS_ACCESS_LOG|FIXTURES|SCRATCH|SCREENSHOTS)=' | sed 's/^/export /' > "$work/env.sh"
  echo "servers up; environment in $work/env.sh; viewer at $viewer"
  wait
  exit 0
fi

step "viewer end-to-end tests (headless Chromium)"
if [ $# -gt 0 ]; then
  node --test --test-concurrency=1 "$@"
else
  node --test --test-concurrency=1 tests/viewer/
fi
