"""Checked reads: a store our writer sealed (sums.zr) opened with
verify=True checks every record it reads; a record whose bytes changed
raises ZrecordError naming it, and an unsealed store does not open."""

import shutil
import struct

import numpy as np
import pytest

import zrecord
from conftest import FIXTURES


def _damage(store, index):
    """Flip a byte in the middle of record `index`'s stored bytes."""
    meta = (store / "meta.zr").read_bytes()
    offset, phys = struct.unpack_from("<QI", meta, 4096 + 16 * index)
    data = bytearray((store / "data.zr").read_bytes())
    data[offset + phys // 2] ^= 0x20
    (store / "data.zr").write_bytes(bytes(data))


@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_verify_reads_sealed_stores_and_names_changed_records(tmp_path, codec):
    path = tmp_path / "s"
    rows = np.arange(40 * 6, dtype=np.int32).reshape(40, 6)
    with zrecord.Dense.create(path, np.int32, (6,), codec=codec) as w:
        w.append(rows)
    assert (path / "sums.zr").exists(), "the writer seals the store"
    store = zrecord.Dense.open(path, verify=True)
    np.testing.assert_array_equal(store[np.arange(40)], rows)
    _damage(path, 7)
    plain = zrecord.Dense.open(path)
    assert plain[3].tolist() == rows[3].tolist()
    checked = zrecord.Dense.open(path, verify=True)
    np.testing.assert_array_equal(checked[[1, 2]], rows[[1, 2]])
    with pytest.raises(zrecord.ZrecordError, match="record 7"):
        checked[[6, 7, 8]]


def test_verify_refuses_an_unsealed_store(tmp_path):
    path = tmp_path / "loaderx"
    shutil.copytree(FIXTURES / "ragged-i32-tokens-zstd", path)
    assert len(zrecord.Ragged.open(path)) > 0
    with pytest.raises((zrecord.ZrecordError, FileNotFoundError), match="zrecord seal"):
        zrecord.Ragged.open(path, verify=True)
