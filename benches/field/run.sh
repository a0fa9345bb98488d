#!/usr/bin/env bash
# The field benchmark's one entry command: sets up its venv (idempotent: each
# step is skipped when what it installs is there), builds zrecord's Python
# package into it (with clang, scripts/install-python.sh), and runs
# benches/field/field.py with the arguments given.
#
#   bash benches/field/run.sh                  # full run
#   bash benches/field/run.sh --quick          # smoke run (scripts/test)
#   bash benches/field/run.sh --json out.json --md out.md
#   bash benches/field/run.sh --cold           # warm and cold rounds (evicted stores), device limit
#
# Environment: ZRECORD_FIELD_VENV (venv to use, default
# ~/.cache/zrecord/venv-field), ZRECORD_FIELD_NO_BUILD=1 (zrecord is already
# installed in that venv: skip building it), ZRECORD_LOADERX_SDIST, ZRECORD_BIN
# (the CLI --cold runs for the device limit; default: PATH, then target/).
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=${ZRECORD_FIELD_VENV:-$HOME/.cache/zrecord/venv-field}
# Pinned so runs compare; every one is a PyPI wheel for CPython 3.9+ on x86-64 Linux.
PEERS=(numpy msgpack maturin loaderx==2.0.1 lmdb==3.0.0 pyarrow==26.0.1 h5py==3.16.0 array-record==0.8.6
       tiledb==0.36.1 pylance==14.0.2 zstandard==0.25.0)
CHECK='import numpy, loaderx, lmdb, pyarrow, pyarrow.parquet, h5py, tiledb, lance, zstandard
from array_record.python.array_record_module import ArrayRecordReader
assert loaderx.__version__ == "2.0.1" and lance.__version__ == "14.0.2" and pyarrow.__version__ == "26.0.1"'
if ! "$VENV/bin/python" -c "$CHECK" 2>/dev/null; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "${PEERS[@]}"
fi

# loaderx 2.0.1's sdist: its scripts/_bench_common.py holds the image generator.
SDIST=${ZRECORD_LOADERX_SDIST:-$HOME/.cache/zrecord/loaderx-2.0.1-sdist}
if [ ! -f "$SDIST/scripts/_bench_common.py" ]; then
  tmp=$(mktemp -d)
  "$VENV/bin/pip" download -q --no-deps --no-binary :all: loaderx==2.0.1 -d "$tmp"
  mkdir -p "$SDIST"
  tar xzf "$tmp"/loaderx-2.0.1.tar.gz -C "$SDIST" --strip-components=1
  rm -rf "$tmp"
fi
export ZRECORD_LOADERX_SDIST=$SDIST

if [ "${ZRECORD_FIELD_NO_BUILD:-0}" != 1 ]; then
  # With CC=clang, as scripts/test builds it (scripts/install-python.sh says why).
  bash scripts/install-python.sh "$VENV"
fi

# Nothing here calls BLAS (copies, fancy indexing, codecs), so the machine's
# OPENBLAS_CORETYPE setting, if any, is left as it is.
exec "$VENV/bin/python" benches/field/field.py "$@"
