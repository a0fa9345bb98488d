"""What zrecord adds to loaderx's API: zero-copy Dense results, the GIL
released during gathers and appends, gathers into caller buffers, packed
Ragged batches, the map-style dataset protocol; and the halves of the excepted
loaderx tests that do not depend on loaderx's internals."""

import pickle
import sys
import threading
import time

import numpy as np
import pytest

from zrecord import Dense, Ragged, Sampler, ZrecordError


@pytest.fixture(scope="module")
def tokens(tmp_path_factory):
    root = tmp_path_factory.mktemp("extra")
    rng = np.random.default_rng(0)
    data = (rng.zipf(1.3, size=(20000, 512)) % 50257).astype(np.int32)
    with Dense.create(root / "tok", np.int32, (512,), codec="zstd") as w:
        w.append(data)
    return root / "tok", data


def _root_base(a):
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


def test_dense_result_is_not_copied(tokens):
    path, data = tokens
    with Dense.open(path) as ds:
        a = ds[[5, 0, 5]]
        b = ds[[5, 0, 5]]
    assert np.array_equal(a, data[[5, 0, 5]])
    # The reader decodes straight into the array NumPy allocated: the array
    # owns its memory, no other object holds the records.
    assert a.flags.owndata and a.base is None
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned
    assert not np.shares_memory(a, b)
    a[:] = 0  # writable, and the next gather is unaffected
    assert np.array_equal(b, data[[5, 0, 5]])


def test_big_dense_batches_reuse_rust_buffers(tokens):
    # Batches of 4 MiB and more are gathered into a recycled Rust buffer
    # (resident pages, nothing zeroed): the array owns it through its base,
    # and a buffer goes back to the pool only when its last array is gone.
    path, data = tokens
    with Dense.open(path) as ds:
        rng = np.random.default_rng(3)
        kept = None
        for size in (4096, 3000, 5000, 2100, 4096, 2500):
            idx = rng.integers(0, len(ds), size)
            a = ds[idx]
            assert a.shape == (size, 512) and a.dtype == np.int32
            assert a.flags.c_contiguous and a.flags.writeable
            assert type(_root_base(a)).__name__ == "Pooled"
            assert np.array_equal(a, data[idx])
            if size == 3000:
                kept, kept_idx = a, idx
            del a
        assert np.array_equal(kept, data[kept_idx])


def test_loader_and_ragged_batches_own_the_rust_buffer(tokens, tmp_path):
    # Batches the Rust loader gathered reach NumPy without a copy: NumPy owns
    # the Vec the reader filled (rust-numpy's PySliceContainer is the root
    # base). A Ragged gather writes each record once into one buffer that a
    # Pooled base owns (recycled once every record array is gone): every
    # record views it, writable, aligned, apart from the others.
    from zrecord import DataLoader
    path, data = tokens
    with DataLoader({"t": Dense.open(path)}, batch_size=8, mode=0) as loader:
        a = next(loader)["t"]
    assert np.array_equal(a, data[:8])
    assert type(_root_base(a)).__name__ == "PySliceContainer"
    for codec in ("raw", "zstd"):
        with Ragged.create(tmp_path / codec, np.int32, codec=codec) as w:
            w.append([np.arange(5, dtype=np.int32), np.arange(3, dtype=np.int32)])
        with Ragged.open(tmp_path / codec) as rs:
            first, second = rs[[0, 1]]
            values, _, _ = rs.gather([0, 1], packed=True)
        root = _root_base(first)
        assert type(root).__name__ == "Pooled"
        assert _root_base(second) is root
        assert type(_root_base(values)).__name__ == "Pooled"
        for r in (first, second, values):
            assert r.flags.c_contiguous and r.flags.writeable and r.flags.aligned
        assert not np.shares_memory(first, second)
        first[:] = -1
        assert second.tolist() == [0, 1, 2] and values.tolist() == [0, 1, 2, 3, 4, 0, 1, 2]


def test_big_ragged_batches_reuse_buffers_only_when_released(tmp_path):
    # Batches of 4 MiB and more go into recycled buffers: one the user still
    # holds a record of is never handed to another gather.
    rng = np.random.default_rng(5)
    recs = [rng.integers(0, 255, (3, int(h), 100), dtype=np.uint8) for h in rng.integers(60, 200, 300)]
    for codec in ("raw", "zstd"):
        with Ragged.create(tmp_path / codec, np.uint8, codec=codec) as w:
            w.append(recs)
        with Ragged.open(tmp_path / codec) as ds:
            kept = ds[list(range(300))][7]
            kept_before = kept.copy()
            for _ in range(12):
                idx = rng.integers(0, 300, 300)
                for packed in (False, True):
                    got = ds.gather(idx, packed=packed)
                    if packed:
                        values, offsets, shapes = got
                        got = [values[offsets[k]:offsets[k + 1]].reshape(shapes[k]) for k in range(len(idx))]
                    assert all(np.array_equal(g, recs[i]) for g, i in zip(got, idx))
                    del got
            assert np.array_equal(kept, kept_before)


@pytest.mark.parametrize("codec", ["raw", "zstd"])
@pytest.mark.parametrize("dtype", ["|i1", "<i2", ">i4", "<f8", "<c16", "S3"])
def test_ragged_records_of_every_alignment_and_rank(tmp_path, codec, dtype):
    # Compressed records stay where they were decoded (their shape prefix in
    # the gap before the payload): every payload must still be aligned for
    # its dtype, whatever the rank; the packed form packs them.
    rng = np.random.default_rng(1)
    dt = np.dtype(dtype)
    recs = []
    for i in range(60):
        shape = tuple(int(d) for d in rng.integers(1, 5, i % 4))
        recs.append(np.array(rng.integers(0, 100, shape), dtype=dt).reshape(shape))
    with Ragged.create(tmp_path / "r", dt, codec=codec) as w:
        w.append(recs)
    with Ragged.open(tmp_path / "r") as ds:
        idx = rng.integers(0, 60, 200)
        listed = ds[idx]
        values, offsets, shapes = ds.gather(idx, packed=True)
        for k, i in enumerate(idx):
            assert listed[k].dtype == dt and listed[k].shape == recs[i].shape
            assert listed[k].flags.aligned and listed[k].flags.writeable
            assert np.array_equal(listed[k], recs[i])
            shape = tuple(int(d) for d in shapes[k] if d >= 0)
            assert np.array_equal(values[offsets[k]:offsets[k + 1]].reshape(shape), recs[i])
        assert values.dtype == dt and offsets[-1] == len(values)


def test_gather_into_caller_buffer(tokens):
    path, data = tokens
    with Dense.open(path) as ds:
        out = np.full((4, 512), -1, dtype=np.int32)
        assert ds.gather([7, 8, 7, 1], out=out) is out
        assert np.array_equal(out, data[[7, 8, 7, 1]])
        for bad in (np.empty((4, 512), np.int64), np.empty((3, 512), np.int32),
                    np.empty((512, 4), np.int32).T):
            with pytest.raises(ValueError):
                ds.gather([7, 8, 7, 1], out=bad)
        with pytest.raises(IndexError):
            ds.gather([len(ds)], out=np.empty((1, 512), np.int32))


def _counter_progress_during(call):
    """How far a pure-Python thread counts while `call()` runs on this thread."""
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.05)
    before = count[0]
    call()
    after = count[0]
    stop.set()
    t.join()
    return after - before


def test_gil_released_during_a_gather(tokens):
    # While a native call holds the GIL, another Python thread cannot run at
    # all; while our gather runs, it keeps counting. Compare counting rates
    # against a GIL-holding C call (a 300 MB bytes repeat), not absolutes.
    path, _ = tokens
    with Dense.open(path) as ds:
        idx = np.random.default_rng(1).integers(0, len(ds), 20000)
        best_ratio = 0.0
        for _ in range(3):
            start = time.perf_counter()
            held = _counter_progress_during(lambda: b"\x01" * 300_000_000)
            held_rate = held / (time.perf_counter() - start)
            start = time.perf_counter()
            released = _counter_progress_during(lambda: [ds[idx] for _ in range(3)])
            released_rate = released / (time.perf_counter() - start)
            best_ratio = max(best_ratio, released_rate / max(held_rate, 1.0))
            if best_ratio > 10:
                break
    assert best_ratio > 10, best_ratio


def _paired_speedup(work, rounds=3):
    """Best ratio of (2 calls on one thread) / (1 call on each of 2 threads)."""
    best = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        work()
        serial = time.perf_counter() - start
        threads = [threading.Thread(target=work) for _ in range(2)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        parallel = time.perf_counter() - start
        best = max(best, serial / parallel)
    return best


def test_two_threads_gather_faster_than_one(tokens):
    path, _ = tokens
    with Dense.open(path) as ds:
        # Batches below the reader's own fan-out threshold (16 KiB decoded
        # for compressed Dense rows: 6 rows of 2 KiB here), so each gather
        # runs on its caller's thread: only releasing the GIL can overlap them.
        batches = [np.random.default_rng(k).integers(0, len(ds), 6).astype(np.uint64) for k in range(1600)]
        store = ds._store

        def gathers():
            # The native call itself: ds[b]'s own index checks (a few NumPy
            # calls, with the GIL) take about as long as decoding 6 small
            # rows, and how well two threads interleave those depends on
            # the interpreter's GIL hand-offs, not on the reader.
            out = np.empty((6, *ds.item_shape), ds.dtype).reshape(-1).view(np.uint8)
            for b in batches:
                store.gather_dense_into(b, out)

        def python_work():  # the GIL-holding baseline, about as long
            s = 0
            for i in range(400_000):
                s += i

        # Other processes share the 2 cores: retry, and judge against the
        # GIL-holding baseline measured at the same moment.
        ours, baseline = 0.0, 0.0
        for _attempt in range(10):
            ours = _paired_speedup(gathers, rounds=2)
            baseline = _paired_speedup(python_work, rounds=2)
            if ours > baseline * 1.2:
                break
    assert ours > baseline * 1.2, f"2 threads: gathers {ours:.2f}x, GIL-holding baseline {baseline:.2f}x"


def test_gil_released_during_append(tmp_path):
    data = np.random.default_rng(2).integers(0, 255, (400, 150528), dtype=np.uint8)
    with Dense.create(tmp_path / "w", np.uint8, (150528,), codec="zstd") as w:
        counted = _counter_progress_during(lambda: w.append(data))
    assert counted > 1000, counted


def test_append_while_other_threads_use_the_array_and_the_writer(tmp_path):
    # An append larger than one copy round (256 MiB): the rows are copied
    # with the GIL held, and between rounds, with the writer locked, the GIL
    # is taken back. Meanwhile one thread overwrites rows of the very array
    # being appended and another asks the writer its len(): no deadlock (the
    # writer's lock is never waited for with the GIL held), and every row
    # written is whole, as the array held it: its index (old) or -1 (new).
    width = 16  # 128-byte rows: NumPy writes each one without releasing the GIL
    rows = (288 << 20) // (8 * width)
    data = np.repeat(np.arange(rows, dtype=np.int64)[:, None], width, axis=1)
    stop = threading.Event()

    def scribble():
        rng = np.random.default_rng(3)
        while not stop.is_set():
            data[int(rng.integers(rows))] = -1

    def lengths(w):
        while not stop.is_set():
            len(w)
            time.sleep(0.001)

    with Dense.create(tmp_path / "w", np.int64, (width,), codec="raw") as w:
        threads = [threading.Thread(target=scribble), threading.Thread(target=lengths, args=(w,))]
        for t in threads:
            t.start()
        try:
            w.append(data)
        finally:
            stop.set()
            for t in threads:
                t.join(10)
        assert len(w) == rows
    with Dense.open(tmp_path / "w") as ds:
        got = ds[:]
    old = (got == np.arange(rows, dtype=np.int64)[:, None]).all(axis=1)
    new = (got == -1).all(axis=1)
    assert (old | new).all(), np.flatnonzero(~(old | new))[:10]
    del got, data


def test_a_record_is_appended_as_it_was_at_one_moment(tmp_path):
    # Another thread sweeps over the record being appended, again and again,
    # writing generation g over it 256 items at a time (each write under the
    # GIL). The append copies the record while it holds the GIL, so what is
    # stored is the record at one moment: at most two generations, the newer
    # one a prefix. (Reading the array without the GIL while encoding it, as
    # before, stored several generations, the newest last.)
    n = 1 << 22  # 32 MiB of int64: encoding takes far longer than a sweep
    record = np.zeros(n, dtype=np.int64)
    started, stop = threading.Event(), threading.Event()

    def sweep():
        g = 0
        while not stop.is_set():
            g -= 1
            for k in range(0, n, 256):
                record[k:k + 256] = g
                started.set()
                if stop.is_set():
                    return

    with Ragged.create(tmp_path / "r", np.int64, codec="zstd") as w:
        thread = threading.Thread(target=sweep)
        thread.start()
        started.wait(5)
        try:
            w.append([record])
        finally:
            stop.set()
            thread.join(10)
    with Ragged.open(tmp_path / "r") as ds:
        got = ds[0]
    generations, first = np.unique(got, return_index=True)  # newest first
    assert len(generations) <= 2, generations
    if len(generations) == 2:
        newer, older = generations
        k = int((got == newer).sum())
        assert newer == older - 1 and (got[:k] == newer).all(), (generations, first)


def test_ragged_packed_and_list_agree(tmp_path):
    recs = [np.arange(i % 9 + 1, dtype=np.int16).reshape(-1) if i % 3 else
            np.arange(2 * (i % 4 + 1), dtype=np.int16).reshape(2, -1) for i in range(100)]
    with Ragged.create(tmp_path / "r", np.int16, codec="raw") as w:
        w.append(recs)
    with Ragged.open(tmp_path / "r") as ds:
        idx = [5, 3, 99, 3, 0]
        values, offsets, shapes = ds.gather(idx, packed=True)
        listed = ds.gather(idx)
        assert shapes.shape == (5, 2)
        for k, i in enumerate(idx):
            shape = tuple(int(d) for d in shapes[k] if d >= 0)
            assert shape == recs[i].shape
            assert np.array_equal(values[offsets[k]:offsets[k + 1]].reshape(shape), recs[i])
            assert np.array_equal(listed[k], recs[i])
        v, o, s = ds.gather([], packed=True)
        assert len(v) == 0 and o.tolist() == [0] and s.shape[0] == 0


def test_ragged_strided_and_odd_itemsize_records(tmp_path):
    source = np.arange(2 * 5 * 4, dtype=np.int32).reshape(2, 5, 4)
    record = source[:, ::2, ::-1]
    expected = record.copy()
    with Ragged.create(tmp_path / "s", np.int32, codec="raw") as w:
        w.append([record])
    source[:] = -1
    with Ragged.open(tmp_path / "s") as ds:
        assert np.array_equal(ds[0], expected)
    # 3-byte items are padded in the packed batch: the packed form compacts.
    strs = [np.array([b"ab", b"cde"], dtype="S3"), np.array([b"x"], dtype="S3")]
    with Ragged.create(tmp_path / "b", "S3") as w:
        w.append(strs)
    with Ragged.open(tmp_path / "b") as ds:
        values, offsets, _ = ds.gather([0, 1, 0], packed=True)
        assert values.tolist() == [b"ab", b"cde", b"x", b"ab", b"cde"]
        assert offsets.tolist() == [0, 2, 3, 5]
        assert [r.tolist() for r in ds[[1, 0]]] == [[b"x"], [b"ab", b"cde"]]


def test_append_owns_its_input_and_validates_before_writing(tmp_path):
    w = Ragged.create(tmp_path / "o", np.int32, codec="raw")
    records = [np.arange(i + 2, dtype=np.int32) for i in range(4)]
    expected = [r.copy() for r in records]
    w.append(iter(records))
    for r in records:
        r[:] = -1

    def mixed():
        yield np.arange(4, dtype=np.int32)
        yield np.arange(4, dtype=np.float32)

    with pytest.raises(ValueError):
        w.append(mixed())
    for bad in (b"bytes", [1, 2, 3]):
        with pytest.raises(TypeError):
            w.append([bad])
    assert len(w) == 4
    w.close()
    with Ragged.open(tmp_path / "o") as ds:
        assert all(np.array_equal(a, b) for a, b in zip(ds[:], expected))


def test_map_style_dataset_protocol(tokens):
    # What torch.utils.data.DataLoader uses, without torch: len, getitem
    # with an int, and the batched __getitems__ with a list of indices.
    path, data = tokens
    ds = Dense.open(path)
    assert len(ds) == 20000
    assert np.array_equal(ds[3], data[3])
    assert np.array_equal(ds.__getitems__([4, 2]), data[[4, 2]])
    # batch_size=None with our sampler as torch's `sampler`: each index batch
    # is one dataset[...] call.
    sampler = map(np.copy, Sampler(len(ds), 64, Sampler.Mode.IID, seed=1))
    for _, idx in zip(range(3), sampler):
        assert np.array_equal(ds[idx], data[idx.astype(np.int64)])
    # Workers started with spawn receive the dataset pickled: it reopens.
    again = pickle.loads(pickle.dumps(ds))
    assert np.array_equal(again[[1, 2]], data[[1, 2]])
    w = Dense.create(path.parent / "never", np.int32, (2,))
    with pytest.raises(TypeError):
        pickle.dumps(w)
    w.close()


def test_errors_name_store_and_check(tmp_path):
    w = Dense.create(tmp_path / "busy", np.uint8, (2,), codec="raw")
    with pytest.raises(ZrecordError) as err:
        Dense.open(tmp_path / "busy")
    assert err.value.code == -13 and str(tmp_path / "busy") in str(err.value)
    w.close()
    with pytest.raises(ZrecordError) as err:
        Dense.create(tmp_path / "busy", np.uint8, (2,))
    assert err.value.code == -12 and "already exists" in str(err.value)
