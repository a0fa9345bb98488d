"""What NumPy users expect of a store: negative indices, index arrays that
keep their shape, IndexError for any integer out of range, ``np.asarray``
in one gather, ``.shape`` and a telling ``repr``; a Sampler whose iteration
yields arrays the caller owns; options that survive pickling."""

import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from zrecord import Dense, Ragged, Sampler, ZrecordError


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("manners")
    data = np.arange(50 * 2 * 3, dtype=np.int32).reshape(50, 2, 3)
    with Dense.create(root / "dense", np.int32, (2, 3)) as w:
        w.append(data)
    recs = [np.arange(i % 7 + 1, dtype=np.int16) + i for i in range(50)]
    with Ragged.create(root / "ragged", np.int16) as w:
        w.append(recs)
    return root, data, recs


def test_negative_indices_count_from_the_end(stores):
    root, data, recs = stores
    with Dense.open(root / "dense") as ds:
        assert np.array_equal(ds[-1], data[-1])
        assert np.array_equal(ds[-3:], data[-3:])
        assert np.array_equal(ds[-10:-4:2], data[-10:-4:2])
        assert np.array_equal(ds[[-1, 0, -50]], data[[-1, 0, -50]])
        assert np.array_equal(ds[np.array([-2, 3], np.int8)], data[[-2, 3]])
        assert np.array_equal(ds[::-1], data[::-1])
        for bad in (-51, [-51], np.array([3, -51])):
            with pytest.raises(IndexError):
                ds[bad]
    with Ragged.open(root / "ragged") as rs:
        assert np.array_equal(rs[-1], recs[-1])
        assert all(np.array_equal(a, b) for a, b in zip(rs[-3:], recs[-3:]))


def test_index_arrays_keep_their_shape(stores):
    root, data, recs = stores
    idx = np.array([[3, 1, 4], [1, 5, 9]])
    with Dense.open(root / "dense") as ds:
        got = ds[idx]
        assert got.shape == (2, 3, 2, 3)
        assert np.array_equal(got, data[idx])
        assert np.array_equal(ds.gather(idx), data[idx])
        out = np.empty((2, 3, 2, 3), np.int32)
        assert ds.gather(idx, out=out) is out and np.array_equal(out, data[idx])
        assert ds[[[7]]].shape == (1, 1, 2, 3)
        assert ds[np.zeros((0, 4), np.int64)].shape == (0, 4, 2, 3)
    with Ragged.open(root / "ragged") as rs:
        got = rs[idx]
        assert [len(row) for row in got] == [3, 3]
        assert all(np.array_equal(got[a][b], recs[idx[a, b]]) for a in range(2) for b in range(3))
        with pytest.raises(ValueError):
            rs.gather(idx, packed=True)
        assert rs[np.zeros((2, 0), np.int64)] == [[], []]
        assert rs[np.zeros((0, 3), np.int64)] == []
        assert len(rs[np.zeros((2, 1, 3), np.int64)][1][0]) == 3


def test_huge_integers_are_index_errors(stores):
    root, _, _ = stores
    with Dense.open(root / "dense") as ds, Ragged.open(root / "ragged") as rs:
        for store in (ds, rs):
            for bad in (2**70, -(2**70), [2**70], [0, 2**70], np.uint64(2**64 - 1), 2**64):
                with pytest.raises(IndexError):
                    store[bad]


def test_asarray_is_one_gather_and_dense_has_shape(stores):
    root, data, _ = stores
    with Dense.open(root / "dense") as ds:
        assert ds.shape == (50, 2, 3) == data.shape
        assert np.array_equal(np.asarray(ds), data)
        assert np.asarray(ds, dtype=np.float64).dtype == np.float64
        assert np.array(ds).shape == (50, 2, 3)


def test_asarray_is_as_fast_as_a_full_slice(tmp_path):
    # Without __array__ NumPy walks the store record by record (7x slower here).
    data = np.random.default_rng(0).integers(0, 255, (20000, 64), dtype=np.uint8)
    with Dense.create(tmp_path / "d", np.uint8, (64,), codec="raw") as w:
        w.append(data)
    with Dense.open(tmp_path / "d") as ds:

        def best(fn):
            times = []
            for _ in range(5):
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
            return min(times)

        sliced, converted = best(lambda: ds[:]), best(lambda: np.asarray(ds))
        assert converted < 3 * sliced + 0.005, (converted, sliced)


def test_repr_tells_length_dtype_shape_and_codec(stores):
    root, _, _ = stores
    with Dense.open(root / "dense", verify=True) as ds:
        text = repr(ds)
        for part in ("Dense(", "dense", "50 records", "dtype=int32", "shape=(50, 2, 3)", "codec='zstd'",
                     "verify=True"):
            assert part in text, text
    with Ragged.open(root / "ragged") as rs:
        text = repr(rs)
        for part in ("Ragged(", "50 records", "dtype=int16", "ragged", "codec='zstd'"):
            assert part in text, text
    assert "closed" in repr(rs)


def test_a_regular_file_is_not_a_store_directory(tmp_path):
    path = tmp_path / "file.bin"
    path.write_bytes(b"not a store")
    for cls in (Dense, Ragged):
        with pytest.raises(ZrecordError, match="not a store directory"):
            cls.open(path)
    with pytest.raises(FileNotFoundError):
        Dense.open(tmp_path / "missing")


def test_sampler_iteration_yields_arrays_the_caller_owns():
    for mode in (Sampler.Mode.SEQUENTIAL, Sampler.Mode.IID, Sampler.Mode.CYCLIC):
        sampler = Sampler(1000, 32, mode, seed=3)
        batches = [b for _, b in zip(range(20), sampler)]
        fresh = Sampler(1000, 32, mode, seed=3)
        expected = [fresh.next().copy() for _ in range(20)]
        assert all(np.array_equal(a, b) for a, b in zip(batches, expected))
        assert len({id(b) for b in batches}) == 20
        assert not any(np.shares_memory(a, b) for a in batches for b in batches if a is not b)
        assert not any(np.shares_memory(b, sampler.indices) for b in batches)
    # next() keeps loaderx's borrowed view (documented).
    sampler = Sampler(1000, 32, Sampler.Mode.IID)
    assert np.shares_memory(sampler.next(), sampler.indices)


def test_pickled_sealed_store_still_catches_a_flipped_byte(tmp_path):
    data = np.random.default_rng(1).integers(0, 255, (40, 256), dtype=np.uint8)
    for cls, write in ((Dense, lambda w: w.append(data)), (Ragged, lambda w: w.append(list(data)))):
        path = tmp_path / cls.__name__
        args = (np.uint8, (256,)) if cls is Dense else (np.uint8,)
        with cls.create(path, *args, codec="raw") as w:
            write(w)
        checked = cls.open(path, verify=True)
        clone = pickle.loads(pickle.dumps(checked))
        assert "verify=True" in repr(clone)
        with open(path / "data.zr", "r+b") as f:  # in place: readers map the file
            f.seek((path / "data.zr").stat().st_size - 1)  # a payload byte
            byte = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([byte[0] ^ 0xFF]))
        for store in (checked, clone, cls.open(path, verify=True)):
            with pytest.raises(ZrecordError, match="checksum mismatch"):
                store[list(range(40))]
        plain = pickle.loads(pickle.dumps(cls.open(path)))
        assert "verify" not in repr(plain)
        plain[list(range(40))]  # unchecked: reads the changed bytes, as asked


def _rss_file():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("RssFile:"))


def test_backend_pread_reads_without_mapping_and_survives_pickling(tmp_path):
    """``backend="pread"`` reads the same records without mapping the store
    (the process's file-backed resident memory does not grow by the store,
    where the default map's does), and travels with a pickled reader."""
    data = np.random.default_rng(3).integers(0, 255, (512, 16384), dtype=np.uint8)  # 8 MiB
    with Dense.create(tmp_path / "d", np.uint8, (16384,), codec="raw") as w:
        w.append(data)
    idx = np.arange(len(data))
    grown = {}
    for backend in ("pread", "mmap"):
        ds = Dense.open(tmp_path / "d", backend=backend)
        before = _rss_file()
        assert np.array_equal(ds[idx], data)
        grown[backend] = _rss_file() - before
        clone = pickle.loads(pickle.dumps(ds))
        assert np.array_equal(clone[[5, 0]], data[[5, 0]])
        assert ("backend='pread'" in repr(clone)) == (backend == "pread"), repr(clone)
        ds.close()
        clone.close()
    assert grown["pread"] < 2 << 20 <= 6 << 20 <= grown["mmap"], grown
    with pytest.raises(ValueError, match="backend"):
        Ragged.open(tmp_path / "d", backend="io_uring")


def test_cold_reads_choose_how_out_of_memory_batches_read_and_survive_pickling(tmp_path):
    """``cold_reads`` reaches the reader: with ``"direct"`` a batch read
    after the store's pages were evicted leaves them out of the page cache
    (the next gather finds them cold again), with ``"buffered"`` it brings
    them in; both read the same bytes, and the choice travels with a
    pickled reader."""
    data = np.random.default_rng(4).integers(0, 255, (512, 16384), dtype=np.uint8)  # 8 MiB
    with Dense.create(tmp_path / "d", np.uint8, (16384,), codec="raw") as w:
        w.append(data)
    idx = np.random.default_rng(5).permutation(len(data))[:256]
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches" / "python"))
    from cold import evict

    def read_from_device(i):
        """Bytes read from storage to read record `i` with a buffered pread."""
        fd = os.open(tmp_path / "d" / "data.zr", os.O_RDONLY)
        try:
            before = _read_bytes()
            os.pread(fd, 16384, int(i) * 16384)
            return _read_bytes() - before
        finally:
            os.close(fd)

    evict(tmp_path / "d")
    if read_from_device(idx[-1]) == 0:
        pytest.skip("this file system keeps no evictable page cache (tmpfs?)")
    for how in ("buffered", "direct"):
        evict(tmp_path / "d")
        ds = Dense.open(tmp_path / "d", cold_reads=how)
        assert np.array_equal(ds[idx], data[idx])
        assert ("cold_reads=" in repr(ds)) and how in repr(ds), repr(ds)
        clone = pickle.loads(pickle.dumps(ds))
        assert repr(clone) == repr(ds)
        assert np.array_equal(clone[idx[:8]], data[idx[:8]])
        clone.close()
        ds.close()
        # What the gather left in the page cache: its records, or none.
        read = read_from_device(idx[0])
        if how == "buffered":
            assert read == 0, "a buffered cold read leaves its record cached"
        else:
            assert read >= 16384, "a direct cold read leaves nothing cached"
    with pytest.raises(ValueError, match="cold_reads"):
        Dense.open(tmp_path / "d", cold_reads="sometimes")


def test_a_dataset_takes_cold_reads_for_every_shard_and_keeps_it_when_pickled(tmp_path):
    """``open_dataset(..., cold_reads=...)`` reaches every shard's store: a
    cold batch read ``"direct"`` leaves its shards' pages out of the page
    cache, ``"buffered"`` brings them in; the choice travels with a pickled
    dataset and a pickled column."""
    import zrecord

    data = np.random.default_rng(6).integers(0, 255, (512, 16384), dtype=np.uint8)  # 8 MiB
    root = tmp_path / "ds"
    zrecord.write_dataset(root, {"x": data}, codec="raw", rows_per_shard=128)
    idx = np.random.default_rng(7).permutation(len(data))[:256]
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches" / "python"))
    from cold import evict

    ds = zrecord.open_dataset(root)
    shards = [root / path / "x" for path, _ in ds.shards]
    assert len(shards) == 4
    shard, start = ds.shard_of(int(idx[0]))

    def read_from_device():
        """Bytes read from storage to read record ``idx[0]`` with a buffered pread."""
        fd = os.open(shards[shard] / "data.zr", os.O_RDONLY)
        try:
            before = _read_bytes()
            os.pread(fd, 16384, (int(idx[0]) - start) * 16384)
            return _read_bytes() - before
        finally:
            os.close(fd)

    for s in shards:
        evict(s)
    if read_from_device() == 0:
        pytest.skip("this file system keeps no evictable page cache (tmpfs?)")
    for how in ("buffered", "direct"):
        for s in shards:
            evict(s)
        ds = zrecord.open_dataset(root, cold_reads=how)
        assert np.array_equal(ds["x"][idx], data[idx])
        clones = [pickle.loads(pickle.dumps(ds))["x"], pickle.loads(pickle.dumps(ds["x"]))]
        for clone in clones:
            assert np.array_equal(clone[idx[:8]], data[idx[:8]])
            assert clone._reopen[1][-1] == how
        # Every map of the shards closed: a mapped page is never evicted.
        del ds, clones, clone
        read = read_from_device()
        if how == "buffered":
            assert read == 0, "a buffered cold read leaves its record cached"
        else:
            assert read >= 16384, "a direct cold read leaves nothing cached"
    with pytest.raises(ValueError, match="cold_reads"):
        zrecord.open_dataset(root, cold_reads="sometimes")


def _read_bytes():
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("read_bytes:"))
