"""A store opened in a parent and used in a forked child works; what cannot
work (a DataLoader's threads, a writer) raises ZrecordError. Never a hang."""

import multiprocessing as mp
import os
import signal
import time

import numpy as np
import pytest

from zrecord import DataLoader, Dense, Ragged, ZrecordError


def wait_child(pid, timeout):
    """waitpid with a deadline: a child still running then is a deadlock."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0, status
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"forked child {pid} still running after {timeout} s: deadlock")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("fork")
    data = (np.arange(4000 * 2048, dtype=np.int64) % 251).astype(np.uint8).reshape(4000, 2048)
    with Dense.create(root / "d", np.uint8, (2048,), codec="zstd") as w:
        w.append(data)
    with Ragged.create(root / "r", np.int32) as w:
        w.append([np.arange(i % 50 + 1, dtype=np.int32) for i in range(4000)])
    return root, data


def run_in_child(fn, timeout=60):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            msg = fn()
            os.write(w, msg.encode())
            code = 0
        except BaseException as exc:  # noqa: BLE001
            os.write(w, f"raised {type(exc).__name__}: {exc}".encode())
        finally:
            os._exit(code)
    os.close(w)
    wait_child(pid, timeout)
    out = os.read(r, 1 << 16).decode()
    os.close(r)
    return out


def test_store_opened_in_parent_reads_in_child(store):
    root, data = store
    ds = Dense.open(root / "d")
    rs = Ragged.open(root / "r")
    idx = np.random.default_rng(0).integers(0, 4000, 3000)
    # A big gather first: the parent's rayon pool now has threads, which
    # the child does not.
    assert np.array_equal(ds[idx], data[idx])

    def child():
        big = ds[idx]          # large enough to run across threads
        small = ds[idx[:5]]
        recs = rs[idx[:500]]
        ok = (np.array_equal(big, data[idx]) and np.array_equal(small, data[idx[:5]])
              and all(len(r) == i % 50 + 1 for r, i in zip(recs, idx[:500])))
        # A grandchild too.
        r2, w2 = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w2, b"1" if np.array_equal(ds[idx], data[idx]) else b"0")
            os._exit(0)
        os.waitpid(pid, 0)
        return "ok" if ok and os.read(r2, 1) == b"1" else "bad"

    assert run_in_child(child) == "ok"
    # And the parent still reads.
    assert np.array_equal(ds[idx], data[idx])


def evict(path):
    """Drop a store's files from the page cache (a no-op on tmpfs)."""
    for name in os.listdir(path):
        fd = os.open(os.path.join(path, name), os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def test_cold_gathers_in_parent_then_child(store):
    """A cold batch's reads go through the calling thread's io_uring ring
    and a pool thread (src/local/uring.rs, src/local/cold.rs; the pool of
    read threads where io_uring is refused): a child forked after the
    parent made its ring and pools makes its own, and so does a
    grandchild, each reading cold after an eviction."""
    root, data = store
    evict(root / "d")
    evict(root / "r")
    ds = Dense.open(root / "d")
    rs = Ragged.open(root / "r")
    idx = np.random.default_rng(1).integers(0, 4000, 256)
    assert np.array_equal(ds[idx], data[idx])
    assert all(len(r) == i % 50 + 1 for r, i in zip(rs[idx], idx))

    def child():
        evict(root / "d")
        evict(root / "r")
        ok = np.array_equal(ds[idx[::-1]], data[idx[::-1]])
        ok = ok and all(len(r) == i % 50 + 1 for r, i in zip(rs[idx[::-1]], idx[::-1]))
        r2, w2 = os.pipe()
        pid = os.fork()
        if pid == 0:
            evict(root / "d")
            os.write(w2, b"1" if np.array_equal(ds[idx], data[idx]) else b"0")
            os._exit(0)
        os.waitpid(pid, 0)
        return "ok" if ok and os.read(r2, 1) == b"1" else "bad"

    assert run_in_child(child) == "ok"
    evict(root / "d")
    assert np.array_equal(ds[idx], data[idx])


def test_dataloader_in_forked_child_raises(store):
    root, _ = store
    loader = DataLoader({"d": Dense.open(root / "d")}, batch_size=64)
    next(loader)

    def child():
        try:
            next(loader)
        except ZrecordError as exc:
            return "ZrecordError: " + str(exc)
        return "no error"

    out = run_in_child(child)
    assert out.startswith("ZrecordError") and "forked" in out, out
    next(loader)  # the parent's loader is untouched
    loader.close()


def test_dataloader_created_in_child_works(store):
    root, data = store
    ds = Dense.open(root / "d")

    def child():
        with DataLoader({"d": ds}, batch_size=128, mode=0) as loader:
            return "ok" if np.array_equal(next(loader)["d"], data[:128]) else "bad"

    assert run_in_child(child) == "ok"


def test_writer_in_forked_child_raises(tmp_path):
    w = Dense.create(tmp_path / "w", np.uint8, (4,), codec="raw")
    w.append(np.zeros((2, 4), np.uint8))

    def child():
        try:
            w.append(np.zeros((1, 4), np.uint8))
        except ZrecordError as exc:
            return "ZrecordError: " + str(exc)
        return "no error"

    out = run_in_child(child)
    assert out.startswith("ZrecordError") and "forked child" in out, out
    w.append(np.ones((1, 4), np.uint8))
    w.close()
    with Dense.open(tmp_path / "w") as r:
        assert len(r) == 3


def _gather_sum(args):
    ds, idx = args
    return int(ds[idx].astype(np.int64).sum())


def test_multiprocessing_fork_pool(store):
    root, data = store
    ds = Dense.open(root / "d")
    ds[np.arange(3000)]  # warm the parent's thread pool
    chunks = [np.arange(k, 4000, 7) for k in range(7)]
    with mp.get_context("fork").Pool(2) as pool:
        got = pool.map_async(_gather_sum, [(ds, c) for c in chunks]).get(timeout=120)
    assert got == [int(data[c].astype(np.int64).sum()) for c in chunks]


def test_multiprocessing_spawn_pool_pickles_readers(store):
    root, data = store
    ds = Dense.open(root / "d")
    with mp.get_context("spawn").Pool(1) as pool:
        got = pool.map_async(_gather_sum, [(ds, np.arange(10))]).get(timeout=120)
    assert got == [int(data[:10].astype(np.int64).sum())]
