"""The DataLoader: step order, resumption, sharding, transforms, shutdown."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from zrecord import DataLoader, Dense, Ragged, Sampler, ZrecordError

N = 500


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    root = tmp_path_factory.mktemp("loader")
    ids = np.arange(N, dtype=np.int64)
    images = np.broadcast_to(ids.astype(np.uint8)[:, None, None], (N, 4, 4)).copy()
    with Dense.create(root / "id", np.int64, ()) as w:
        w.append(ids)
    with Dense.create(root / "img", np.uint8, (4, 4), codec="raw") as w:
        w.append(images)
    with Ragged.create(root / "seq", np.int32) as w:
        w.append([np.full(i % 7 + 1, i, dtype=np.int32) for i in range(N)])
    return root


def open_all(root):
    return {"id": Dense.open(root / "id"), "img": Dense.open(root / "img"), "seq": Ragged.open(root / "seq")}


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_batches_come_in_step_order(streams, mode):
    # Slow, out-of-order transforms on 4 threads cannot reorder the steps.
    def jitter(batch):
        time.sleep(np.random.default_rng(int(batch["id"][0])).random() * 0.01)
        return batch

    sampler = Sampler(N, 32, mode, 3)
    with DataLoader(open_all(streams), transform_workers=4, batch_size=32, mode=mode, seed=3,
                    transform=jitter, gather_workers=3) as loader:
        for step in range(40):
            assert loader.step == step
            batch = next(loader)
            want = sampler.next()
            assert batch["id"].tolist() == want.tolist()
            assert np.array_equal(batch["img"][:, 0, 0], want.astype(np.uint8))
            assert [int(r[0]) for r in batch["seq"]] == want.tolist()
            assert [len(r) for r in batch["seq"]] == [int(i) % 7 + 1 for i in want]


def test_resume_from_a_step(streams):
    with DataLoader(open_all(streams), batch_size=16, mode=1, seed=11) as loader:
        first = [next(loader)["id"].copy() for _ in range(12)]
        assert loader.step == 12
    with DataLoader(open_all(streams), batch_size=16, mode=1, seed=11, start_step=7) as resumed:
        assert resumed.step == 7
        for k in range(7, 12):
            assert np.array_equal(next(resumed)["id"], first[k])


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_sharding_by_rank_and_world(streams, mode):
    world = 4
    with DataLoader(open_all(streams), batch_size=32, mode=mode, seed=2) as whole:
        glob = [next(whole)["id"].tolist() for _ in range(10)]
    parts = []
    for rank in range(world):
        with DataLoader(open_all(streams), batch_size=32, mode=mode, seed=2, rank=rank, world=world) as shard:
            parts.append([next(shard)["id"].tolist() for _ in range(10)])
    for step in range(10):
        assert sum((parts[r][step] for r in range(world)), []) == glob[step]


def test_packed_ragged_batches(streams):
    with DataLoader({"seq": Ragged.open(streams / "seq")}, batch_size=8, mode=0, ragged="packed") as loader:
        values, offsets, shapes = next(loader)["seq"]
        assert offsets.tolist() == [0, 1, 3, 6, 10, 15, 21, 28, 29]
        assert shapes[:, 0].tolist() == [1, 2, 3, 4, 5, 6, 7, 1]
        assert values[offsets[3]:offsets[4]].tolist() == [3, 3, 3, 3]


def test_transform_error_at_its_step(streams):
    def fail_at_5(batch):
        if batch["id"][0] == 5 * 4:
            raise KeyError("step five")
        return batch

    loader = DataLoader({"id": Dense.open(streams / "id")}, transform_workers=3, batch_size=4, mode=0,
                        transform=fail_at_5)
    for step in range(5):
        assert next(loader)["id"][0] == step * 4
    with pytest.raises(KeyError, match="step five"):
        next(loader)
    with pytest.raises(StopIteration):
        next(loader)
    loader.close()


def test_close_is_prompt(streams):
    loader = DataLoader(open_all(streams), batch_size=64, prefetch_size=8, mode=1)
    next(loader)
    started = time.monotonic()
    loader.close()
    assert time.monotonic() - started < 2.0
    assert all(not t.is_alive() for t in loader.threads)
    with pytest.raises(StopIteration):
        next(loader)


def test_close_from_another_thread_wakes_the_consumer(streams):
    release = threading.Event()

    def blocked(batch):
        release.wait(5)
        return batch

    loader = DataLoader({"id": Dense.open(streams / "id")}, transform_workers=1, batch_size=4, transform=blocked)
    result = []
    consumer = threading.Thread(target=lambda: result.append(next(loader, "stopped")))
    consumer.start()
    time.sleep(0.2)
    closer = threading.Thread(target=loader.close)
    closer.start()
    consumer.join(2)
    assert result == ["stopped"]
    release.set()
    closer.join(5)
    assert not closer.is_alive()


INTERRUPT = textwrap.dedent(r"""
    import sys, time
    from zrecord import DataLoader, Dense
    def slow(batch):
        time.sleep(0.2)
        return batch
    loader = DataLoader({"id": Dense.open(sys.argv[1])}, batch_size=8, transform=slow, transform_workers=1)
    print("iterating", flush=True)
    try:
        for batch in loader:
            pass
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        t = time.monotonic()
        threads = [th for th in loader.threads if th.is_alive()]
        print("alive", len(threads), flush=True)
        raise
""")


def test_keyboard_interrupt_stops_the_loader(streams):
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPT, str(streams / "id")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "iterating"
    time.sleep(0.5)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    took = time.monotonic() - sent
    assert "interrupted" in out and "alive 0" in out, (out, err)
    assert "KeyboardInterrupt" in err
    assert proc.returncode != 0
    assert took < 5, took


INTERRUPT_NATIVE = textwrap.dedent(r"""
    import sys
    import numpy as np
    from zrecord import DataLoader, Dense
    # Interrupt while the consumer waits inside the native loader: one huge
    # Dense batch keeps the gather busy.
    loader = DataLoader({"id": Dense.open(sys.argv[1])}, batch_size=1 << 22, transform_workers=1,
                        prefetch_size=1, mode=1)
    print("iterating", flush=True)
    for batch in loader:
        print("batch", flush=True)
""")


def test_keyboard_interrupt_while_gathering(streams):
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPT_NATIVE, str(streams / "id")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "iterating"
    time.sleep(0.3)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert "KeyboardInterrupt" in err, (out, err)
    assert time.monotonic() - sent < 10


def test_loaderx_arguments_are_checked(streams):
    with pytest.raises(ValueError, match="opened for reading"):
        DataLoader({"x": object()})
    with pytest.raises(ValueError, match="rank"):
        DataLoader({"id": Dense.open(streams / "id")}, batch_size=32, rank=4, world=4)
    with pytest.raises(TypeError):
        len(DataLoader({"id": Dense.open(streams / "id")}, batch_size=4))
