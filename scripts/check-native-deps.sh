#!/usr/bin/env bash
# A Rust user depending on zrecord with `default-features = false,
# features = ["native"]` must get neither the CLI's crates nor the server's,
# and build.rs must embed no viewer: this checks both stay true. (rustix and
# libc are allowed: the writer's fallocate and the reader's page-cache calls,
# src/local/sys.rs, need them natively.)
set -euo pipefail
cd "$(dirname "$0")/.."

tree=$(cargo tree --no-default-features -e normal --features native --prefix none --format '{p}')
bad=$(grep -E '^(clap|indicatif|sha2|tokio|hyper|hyper-util|bytes|httpdate|http-range-header|rlimit|ureq) ' <<<"$tree" || true)
if [ -n "$bad" ]; then
  echo "check-native-deps: the native feature alone pulls in CLI or server crates:" >&2
  echo "$bad" >&2
  exit 1
fi
# The viewer's assets are embedded only when the serve feature is on: the
# list build.rs writes for a native-only build must be empty.
out_dir=$(cargo check --quiet --lib --no-default-features --features native --message-format=json \
  | grep '"reason":"build-script-executed"' | grep '/zrecord#\|zrecord@\|zrecord ' \
  | sed -n 's/.*"out_dir":"\([^"]*\)".*/\1/p' | tail -1)
[ -n "$out_dir" ] && [ -f "$out_dir/viewer_assets.rs" ] || { echo "check-native-deps: no build-script output found" >&2; exit 1; }
if grep -q include_bytes "$out_dir/viewer_assets.rs"; then
  echo "check-native-deps: a native-only build embeds the viewer ($out_dir/viewer_assets.rs)" >&2
  exit 1
fi
echo "native only: $(wc -l <<<"$tree") crates, none of the CLI or server ones; no viewer embedded"
