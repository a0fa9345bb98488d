"""cache= on Dense.open, Ragged.open and open_dataset: a node-local cache
shared by processes. The same bytes as a local read; a second process reads
only from the cache (its counters show no misses); the option survives
pickling; zrecord.cache_stats() counts requests, bytes, hits, misses."""

import multiprocessing as mp
import os
import pickle
import time

import numpy as np
import pytest

import zrecord
from rangeserver import RangeServer
from zrecord import Dense, Ragged


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    rng = np.random.default_rng(3)
    images = rng.integers(0, 255, (3000, 3, 16, 16), dtype=np.uint8)
    with Dense.create(root / "images", np.uint8, (3, 16, 16)) as w:
        w.append(images)
    seqs = [rng.integers(0, 50_000, n % 37 + 1, dtype=np.int32) for n in range(3000)]
    with Ragged.create(root / "tokens", np.int32) as w:
        w.append(seqs)
    zrecord.write_dataset(root / "ds", {"image": images, "tokens": seqs}, rows_per_shard=1000)
    server = RangeServer(root)
    yield root, server.url, images, seqs
    server.close()


def _delta(before):
    after = zrecord.cache_stats()
    return {k: after[k] - before[k] for k in after}


def _read_all(url, cache, queue):
    before = zrecord.cache_stats()
    ds = Dense.open(url, cache=cache)
    queue.put((ds[np.arange(len(ds))].tobytes(), _delta(before)))


def test_stores_read_through_the_cache_and_a_second_process_finds_every_block(served, tmp_path):
    root, url, images, seqs = served
    cache = tmp_path / "cache"
    before = zrecord.cache_stats()
    ds = Dense.open(f"{url}/images/", cache=cache, cache_limit="64MiB")
    idx = np.random.default_rng(0).integers(0, len(images), 500)
    assert ds[idx].tobytes() == images[idx].tobytes()
    assert ds[np.arange(len(ds))].tobytes() == images.tobytes()
    first = _delta(before)
    assert first["misses"] > 0 and first["gets"] > 0 and first["bytes_fetched"] > 0
    assert any(name.endswith(".blk") for name in os.listdir(cache / "blocks"))

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_read_all, args=(f"{url}/images/", str(cache), queue)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join()
    for data, counts in results:
        assert data == images.tobytes()
        assert counts["misses"] == 0 and counts["hits"] > 0, counts
        assert counts["gets"] <= 2, counts  # one version read per file read

    tokens = Ragged.open(f"{url}/tokens/", cache=cache)
    got = tokens[[5, 3, 2999]]
    assert all(a.tobytes() == seqs[i].tobytes() for a, i in zip(got, [5, 3, 2999]))


def test_the_cache_travels_with_a_pickled_reader(served, tmp_path):
    _, url, images, _ = served
    cache = tmp_path / "cache"
    ds = Dense.open(f"{url}/images/", cache=cache, cache_limit=1 << 30)
    assert ds[[7, 1]].tobytes() == images[[7, 1]].tobytes()
    again = pickle.loads(pickle.dumps(ds))
    assert again._cache == str(cache) and again._cache_limit == 1 << 30
    before = zrecord.cache_stats()
    assert again[[7, 1]].tobytes() == images[[7, 1]].tobytes()
    assert _delta(before)["hits"] > 0


def test_a_dataset_reads_its_shards_through_the_cache(served, tmp_path):
    _, url, images, seqs = served
    cache = tmp_path / "cache"
    ds = zrecord.open_dataset(f"{url}/ds/", cache=cache, cache_limit="1GiB")
    idx = [2999, 0, 1500, 1000]
    assert ds["image"][idx].tobytes() == images[idx].tobytes()
    assert all(a.tobytes() == seqs[i].tobytes() for a, i in zip(ds["tokens"][idx], idx))
    assert len([n for n in os.listdir(cache / "blocks") if n.endswith(".blk")]) >= 6
    again = pickle.loads(pickle.dumps(ds))
    before = zrecord.cache_stats()
    assert again["image"][idx].tobytes() == images[idx].tobytes()
    assert _delta(before)["misses"] == 0


def test_bad_cache_settings_are_refused(served, tmp_path):
    _, url, _, _ = served
    with pytest.raises(ValueError):
        Dense.open(f"{url}/images/", cache=tmp_path, cache_limit="12 parsecs")
    with pytest.raises(ValueError):
        Dense.open(f"{url}/images/", cache=tmp_path, cache_limit=-1)


@pytest.mark.parametrize("kind", ["store", "dataset"])
def test_the_loader_fetches_the_coming_steps_into_the_cache(kind, tmp_path):
    """The DataLoader knows its next steps (the sampler is a pure function of
    the step): over a cached store or dataset column, its look-ahead fetches
    blocks that no worker has reached. Sequential batches of 256 records of
    4 KiB, one 4 MiB block every 4 steps; the consumer takes one batch, so
    the workers stay within block 0 while the look-ahead (8 steps past the
    window) reaches blocks 1 and 2."""
    rows = np.random.default_rng(5).integers(0, 255, (12_288, 4096), dtype=np.uint8)
    root = tmp_path / "served"
    if kind == "store":
        with Dense.create(root / "s", np.uint8, (4096,), codec="raw") as w:
            w.append(rows)
    else:
        zrecord.write_dataset(root / "s", {"x": rows}, codec="raw", rows_per_shard=6_144)
    server = RangeServer(root)
    try:
        cache = tmp_path / "cache"
        if kind == "store":
            reader = Dense.open(f"{server.url}/s/", cache=cache)
        else:
            reader = zrecord.open_dataset(f"{server.url}/s/", cache=cache)["x"]
        with zrecord.DataLoader({"x": reader}, batch_size=256, prefetch_size=1, mode=0,
                                transform_workers=1, gather_workers=1) as loader:
            first = next(loader)
            assert first["x"].tobytes() == rows[:256].tobytes()
            deadline = time.monotonic() + 60
            while loader.fetched_ahead < 2 * (4 << 20):
                assert time.monotonic() < deadline, f"fetched ahead: {loader.fetched_ahead} bytes"
                time.sleep(0.01)
            for step in range(1, 12):
                got = next(loader)["x"]
                assert got.tobytes() == rows[step * 256:(step + 1) * 256].tobytes()
    finally:
        server.close()
