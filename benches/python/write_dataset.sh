#!/usr/bin/env bash
# The dataset-writing benchmark's one entry command: sets up its venv
# (idempotent: skipped when the pinned peers are there), builds zrecord's
# Python package into it (with clang, scripts/install-python.sh), and runs
# benches/python/write_dataset.py with the arguments given.
#
#   bash benches/python/write_dataset.sh                  # full run (~1.3 GB a write)
#   bash benches/python/write_dataset.sh --quick          # smoke run, every row checked
#   bash benches/python/write_dataset.sh --json out.json --md out.md
#
# Its own venv, not the package venv: mosaicml-streaming 0.13.0 pins
# numpy < 2.2 and pulls torch (PyPI's, with its CUDA wheels: several GB), which
# MDSWriter's modules import. Environment: ZRECORD_WRITE_VENV (default
# ~/.cache/zrecord/venv-write), ZRECORD_WRITE_NO_BUILD=1 (zrecord is already
# installed in that venv: skip building it).
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=${ZRECORD_WRITE_VENV:-$HOME/.cache/zrecord/venv-write}
# Pinned so runs compare (pylance and pyarrow as benches/field/run.sh pins them).
PEERS=(numpy msgpack maturin mosaicml-streaming==0.13.0 pylance==14.0.2 pyarrow==26.0.1)
CHECK='import numpy, lance, pyarrow, streaming
from streaming import MDSWriter, LocalDataset
from streaming.base.util import merge_index
assert streaming.__version__ == "0.13.0" and lance.__version__ == "14.0.2" and pyarrow.__version__ == "26.0.1"'
if ! "$VENV/bin/python" -c "$CHECK" 2>/dev/null; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "${PEERS[@]}"
fi

if [ "${ZRECORD_WRITE_NO_BUILD:-0}" != 1 ]; then
  bash scripts/install-python.sh "$VENV"
fi

exec "$VENV/bin/python" benches/python/write_dataset.py "$@"
