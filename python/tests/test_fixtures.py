"""Every loaderx 2.0.1 fixture read through both classes, byte for byte
against the manifest's expected bytes; unpublished and damaged stores."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import FIXTURES, manifest
from zrecord import Dense, Ragged, ZrecordError

STORES = manifest()["stores"]
UNPUBLISHED = manifest()["unpublished"]


def expected_records(store):
    blob = (FIXTURES / store["expected"]).read_bytes()
    return [(tuple(r["shape"]), blob[r["offset"]:r["offset"] + r["nbytes"]]) for r in store["records"]]


@pytest.mark.parametrize("store", STORES, ids=[s["name"] for s in STORES])
def test_fixture_byte_for_byte(store):
    path = FIXTURES / store["name"]
    records = expected_records(store)
    n = store["len"]
    dense = store["kind"] == "dense"
    cls, other = (Dense, Ragged) if dense else (Ragged, Dense)
    with cls.open(path) as ds:
        assert len(ds) == n
        assert ds.dtype == np.dtype(store["dtype"])
        assert ds.dtype.str == np.dtype(store["dtype"]).str
        assert ds.codec == store["codec"]
        assert ds.has_dict() == (store["codec"] == "zstd_dict")
        order = list(range(n))[::-1] + list(range(0, n, 3))
        if dense:
            assert ds.item_shape == tuple(store["item_shape"])
            whole = ds[:]
            assert whole.shape == (n, *ds.item_shape)
            assert whole.tobytes() == b"".join(b for _, b in records)
            picked = ds[order]
            assert picked.tobytes() == b"".join(records[i][1] for i in order)
            out = np.empty((len(order), *ds.item_shape), dtype=ds.dtype)
            assert ds.gather(order, out=out) is out
            assert out.tobytes() == picked.tobytes()
            for i in range(n):
                # ds[i] of a scalar store is a NumPy scalar (as in loaderx),
                # whose bytes NumPy may trim (b"beta" for S5): compare ds[[i]].
                assert np.shape(ds[i]) == records[i][0]
                assert ds[[i]].tobytes() == records[i][1]
        else:
            got = ds[order]
            assert isinstance(got, list) and len(got) == len(order)
            for rec, i in zip(got, order):
                assert rec.shape == records[i][0]
                assert rec.dtype == ds.dtype
                assert rec.tobytes() == records[i][1]
            values, offsets, shapes = ds.gather(order, packed=True)
            assert values.dtype == ds.dtype and offsets.dtype == np.int64
            assert len(offsets) == len(order) + 1
            for k, i in enumerate(order):
                rec = values[offsets[k]:offsets[k + 1]]
                shape = tuple(int(d) for d in shapes[k] if d >= 0)
                assert shape == records[i][0]
                assert rec.tobytes() == records[i][1]
    with pytest.raises(ValueError, match="schema fields") as err:
        other.open(path)
    assert isinstance(err.value, ZrecordError) and str(path) in str(err.value)


@pytest.mark.parametrize("name", UNPUBLISHED)
@pytest.mark.parametrize("cls", [Dense, Ragged])
def test_unpublished_build_never_opens(name, cls):
    # loaderx opens such a build as an empty store; we refuse it.
    with pytest.raises(ZrecordError) as err:
        cls.open(FIXTURES / name)
    assert "unpublished" in str(err.value) and name in str(err.value)
    assert err.value.code == -8


def test_missing_store_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        Dense.open(tmp_path / "absent")
    assert not (tmp_path / "absent").exists()


def _copy(tmp_path, name):
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    return dst


def test_damaged_files_raise_zrecord_error_naming_store_and_check(tmp_path):
    # Truncated meta.zr: refused at open.
    meta_cut = _copy(tmp_path, "dense-u8-img-zstd")
    with open(meta_cut / "meta.zr", "r+b") as f:
        f.truncate(20)
    with pytest.raises(ZrecordError) as err:
        Dense.open(meta_cut)
    assert str(meta_cut) in str(err.value) and "header" in str(err.value)

    # A damaged frame: refused at the gather that reads it, naming the record.
    frame = _copy(tmp_path, "ragged-i32-tokens-zstd")
    meta = (frame / "meta.zr").read_bytes()
    offset = int.from_bytes(meta[4096 + 16 * 5:4096 + 16 * 5 + 8], "little")
    with open(frame / "data.zr", "r+b") as f:
        f.seek(offset)
        f.write(b"oops")
    with Ragged.open(frame) as ds:
        ds[[0, 1]]
        with pytest.raises(ZrecordError) as err:
            ds[[4, 5]]
    assert str(frame) in str(err.value) and "record 5" in str(err.value)
    assert err.value.code == -7

    # data.zr cut short: refused at open.
    short = _copy(tmp_path, "dense-f32-zstd")
    with open(short / "data.zr", "r+b") as f:
        f.truncate(10)
    with pytest.raises(ZrecordError) as err:
        Dense.open(short)
    assert str(short) in str(err.value)


FUZZ = r"""
import os, random, shutil, sys, tempfile
import numpy as np
from zrecord import Dense, Ragged, ZrecordError
src, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
outcomes = {"ok": 0, "error": 0}
for trial in range(60):
    tmp = tempfile.mkdtemp()
    dst = os.path.join(tmp, "s")
    shutil.copytree(src, dst)
    name = rng.choice([n for n in os.listdir(dst) if os.path.getsize(os.path.join(dst, n))])
    with open(os.path.join(dst, name), "r+b") as f:
        size = os.path.getsize(os.path.join(dst, name))
        for _ in range(rng.randint(1, 8)):
            f.seek(rng.randrange(size))
            f.write(bytes([rng.randrange(256)]))
    for cls in (Dense, Ragged):
        try:
            with cls.open(dst) as ds:
                n = len(ds)
                if n:
                    ds[np.arange(n)]
                    ds[[rng.randrange(n) for _ in range(5)]]
            outcomes["ok"] += 1
        except (ZrecordError, ValueError, IndexError, FileNotFoundError):
            outcomes["error"] += 1
    shutil.rmtree(tmp)
print(outcomes)
"""


@pytest.mark.parametrize("name", ["dense-u8-img-zstd_dict", "ragged-i32-tokens-zstd", "dense-f32-zstd",
                                  "ragged-f32-mixed-rank-raw"])
def test_damaged_bytes_never_crash_the_interpreter(name):
    # In a child interpreter: a crash would be a signal, not an exception.
    out = subprocess.run([sys.executable, "-c", FUZZ, str(FIXTURES / name), "7"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "error" in out.stdout
