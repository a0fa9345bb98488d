#!/usr/bin/env python3
"""Open stores with the real loaderx 2.0.1 and check every record's bytes.

    python loaderx_verify.py MANIFEST

MANIFEST is a JSON file in the format of tests/fixtures/loaderx-2.0.1/manifest.json:

    {"loaderx": "2.0.1", "stores": [STORE, ...], "unpublished": [NAME, ...]}

where each STORE names a store directory (relative to the manifest) and says
what loaderx must find in it:

    name        the store's directory
    kind        "dense" or "ragged"
    dtype       the NumPy dtype string as persisted ("<f4", "|S5", ">i4", ...)
    item_shape  dense only: the shape of every record
    codec       "raw", "zstd" or "zstd_dict"
    len         the record count
    expected    a file holding every record's payload bytes, concatenated in
                index order (C order, the dtype's own byte order)
    records     [{"shape": [...], "offset": int, "nbytes": int}, ...]: where
                each record's bytes lie in `expected`

"unpublished" stores are not opened here. The tests write such a manifest for
the stores zrecord wrote and run this script in the venv `.ci/install` makes,
so loaderx itself is the judge of byte compatibility.

Prints one line per store ("NAME: ok" or "NAME: FAIL why"), then
"P passed, F failed"; exits 1 when any store failed, 2 on a wrong loaderx.
"""

import json
import os
import sys

import numpy as np

import loaderx
from loaderx.zrecord import Dense, Ragged


def check_store(root, s):
    """Problems loaderx finds in store `s` of the manifest rooted at `root` (empty: none)."""
    with open(os.path.join(root, s["expected"]), "rb") as f:
        expected = f.read()
    cls = Dense if s["kind"] == "dense" else Ragged
    with cls.open(os.path.join(root, s["name"])) as store:
        problems = []
        if store.dtype.str != s["dtype"]:
            problems.append(f"dtype {store.dtype.str} != {s['dtype']}")
        if store.codec != s["codec"]:
            problems.append(f"codec {store.codec} != {s['codec']}")
        if len(store) != s["len"]:
            problems.append(f"len {len(store)} != {s['len']}")
        if s["kind"] == "dense" and list(store.item_shape) != s["item_shape"]:
            problems.append(f"item_shape {tuple(store.item_shape)} != {tuple(s['item_shape'])}")
        if problems or not s["len"]:
            return problems
        # One gather of every record in a shuffled order: exercises loaderx's
        # batch path, not just record-at-a-time reads.
        order = np.random.default_rng(0).permutation(s["len"])
        batch = store[order]
        for pos, i in enumerate(order):
            want = s["records"][i]
            record = batch[pos]
            if isinstance(batch, np.ndarray):
                # Indexing a |S or <U array gives a NumPy scalar that drops
                # trailing NULs; view it as the stored item again.
                record = np.asarray(record, dtype=batch.dtype)
            got = record.tobytes()
            if list(record.shape) != want["shape"]:
                return [f"record {i}: shape {list(record.shape)} != {want['shape']}"]
            if got != expected[want["offset"]:want["offset"] + want["nbytes"]]:
                return [f"record {i}: bytes differ"]
        return []


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    if loaderx.__version__ != "2.0.1":
        print(f"needs loaderx 2.0.1, found {loaderx.__version__}", file=sys.stderr)
        return 2
    manifest_path = argv[1]
    root = os.path.dirname(os.path.abspath(manifest_path))
    with open(manifest_path) as f:
        stores = json.load(f)["stores"]
    failed = 0
    for s in stores:
        try:
            problems = check_store(root, s)
        except Exception as exc:  # report every store, not only the first to fail
            problems = [f"{type(exc).__name__}: {exc}"]
        failed += bool(problems)
        print(f"{s['name']}: " + ("ok" if not problems else "FAIL " + "; ".join(problems)))
    print(f"{len(stores) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
