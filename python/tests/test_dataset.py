"""Datasets from Python: shards written by many processes and committed by
one, read byte for byte against the source arrays; racing committers; a
killed writer; refused schemas; the Sampler, the DataLoader, pickling and
fork over a dataset as over one store."""

import json
import multiprocessing as mp
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import zrecord
from zrecord import DataLoader, Dense, Ragged, Sampler, ZrecordError


def shard_data(k, n=None):
    """Shard ``k``'s records: Dense float32 (n, 3, 4), Dense uint8 (n, 16),
    Ragged uint16 records of shapes (m,) and (m, 2)."""
    rng = np.random.default_rng(k)
    n = n if n is not None else 40 + 7 * k
    return {
        "x": rng.standard_normal((n, 3, 4)).astype(np.float32),
        "img": rng.integers(0, 8, (n, 16), dtype=np.uint8),
        "tokens": [rng.integers(0, 60000, (1 + (i + k) % 9,) if i % 3 else (1 + i % 4, 2),
                                dtype=np.uint16) for i in range(n)],
    }


CODECS = {"x": "raw", "img": "zstd", "tokens": "zstd"}


def concat(parts):
    return {
        "x": np.concatenate([p["x"] for p in parts]),
        "img": np.concatenate([p["img"] for p in parts]),
        "tokens": [t for p in parts for t in p["tokens"]],
    }


def check_reads(ds, want):
    n = len(want["x"])
    assert len(ds) == n
    idx = np.random.default_rng(0).integers(0, n, 300)
    for name in ("x", "img"):
        got = ds[name][idx]
        assert got.dtype == want[name].dtype and got.tobytes() == want[name][idx].tobytes()
        out = np.empty_like(want[name][idx])
        assert ds[name].gather(idx, out=out) is out
        assert out.tobytes() == want[name][idx].tobytes()
    got = ds["tokens"][idx]
    for g, i in zip(got, idx):
        assert g.shape == want["tokens"][i].shape and g.tobytes() == want["tokens"][i].tobytes()
    values, offsets, shapes = ds["tokens"].gather(idx, packed=True)
    for k, i in enumerate(idx):
        assert values[offsets[k]:offsets[k + 1]].tobytes() == want["tokens"][i].tobytes()
    assert ds[int(idx[0])]["x"].tobytes() == want["x"][idx[0]].tobytes()
    batch = ds.gather(idx[:10], columns=["img"])
    assert list(batch) == ["img"] and batch["img"].tobytes() == want["img"][idx[:10]].tobytes()


def _write_one(args):
    root, k = args
    return zrecord.write_shard(root, shard_data(k), codecs=CODECS)


def test_eight_processes_write_shards_one_commits(tmp_path):
    root = str(tmp_path / "ds")
    with mp.get_context("spawn").Pool(8) as pool:
        infos = pool.map(_write_one, [(root, k) for k in range(8)])
    assert len({i.path for i in infos}) == 8
    assert [i.length for i in infos] == [len(shard_data(k)["x"]) for k in range(8)]
    assert pickle.loads(pickle.dumps(infos[0])) == infos[0]
    assert zrecord.commit(root, infos) == 1
    ds = zrecord.open_dataset(root)
    assert ds.version == 1 and ds.columns == ["x", "img", "tokens"]
    assert ds.shards == [(i.path, i.length) for i in infos]
    assert isinstance(ds["x"], Dense) and isinstance(ds["tokens"], Ragged)
    assert ds["x"].codec == "raw" and ds["img"].codec == "zstd"
    check_reads(ds, concat([shard_data(k) for k in range(8)]))
    first = infos[0].length
    assert ds.shard_of(0) == (0, 0) and ds.shard_of(first) == (1, first)
    with pytest.raises(IndexError):
        ds.shard_of(len(ds))
    with pytest.raises(KeyError, match="no column 'nope'"):
        ds["nope"]


def test_write_dataset_cuts_shards_and_reads_back(tmp_path):
    parts = [shard_data(k) for k in range(3)]
    ds = zrecord.write_dataset(tmp_path / "ds", iter(parts), rows_per_shard=16, codec="raw")
    assert ds.version == 1
    want = []
    for p in parts:
        n = len(p["x"])
        want += [16] * (n // 16) + ([n % 16] if n % 16 else [])
    assert [n for _, n in ds.shards] == want
    check_reads(ds, concat(parts))


def _append_one(root, k, barrier, out):
    info = zrecord.write_shard(root, shard_data(k), codecs=CODECS)
    barrier.wait()
    try:
        version = zrecord.commit(root, [info], mode="append")
    except ZrecordError:  # a lost race, said clearly: retry
        version = zrecord.commit(root, [info], mode="append")
    out.put((info.path, version))


def test_two_committers_appending_at_once_keep_both_shards(tmp_path):
    root = str(tmp_path / "ds")
    zrecord.commit(root, [zrecord.write_shard(root, shard_data(100), codecs=CODECS)])
    ctx = mp.get_context("spawn")
    for round_ in range(3):
        barrier, out = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_append_one, args=(root, 10 * round_ + k, barrier, out))
                 for k in range(2)]
        for p in procs:
            p.start()
        got = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(60)
            assert p.exitcode == 0
        assert sorted(v for _, v in got) == [2 + 2 * round_, 3 + 2 * round_]
        paths = [p for p, _ in zrecord.open_dataset(root).shards]
        assert all(p in paths for p, _ in got)
    ds = zrecord.open_dataset(root)
    assert ds.version == 7 and len(ds.shards) == 7


def test_uncommitted_shard_is_invisible_and_older_versions_stay_readable(tmp_path):
    root = tmp_path / "ds"
    first = zrecord.write_dataset(root, shard_data(1), codec="zstd")
    n1 = len(first)
    zrecord.write_shard(root, shard_data(2))  # never committed
    ds = zrecord.open_dataset(root)
    assert ds.version == 1 and len(ds) == n1 and len(ds.shards) == 1
    second = zrecord.write_dataset(root, shard_data(3), mode="append")
    assert second.version == 2 and len(second) == n1 + len(shard_data(3)["x"])
    old = zrecord.open_dataset(root, version=1)
    assert old.version == 1 and len(old) == n1
    assert old["x"][list(range(n1))].tobytes() == shard_data(1)["x"].tobytes()
    check_reads(zrecord.open_dataset(root), concat([shard_data(1), shard_data(3)]))
    with pytest.raises(FileNotFoundError, match="no version 9"):
        zrecord.open_dataset(root, version=9)
    with pytest.raises(ZrecordError):
        zrecord.write_dataset(root, shard_data(4))  # create on an existing dataset
    over = zrecord.write_dataset(root, shard_data(5), mode="overwrite")
    assert over.version == 3 and len(over) == len(shard_data(5)["x"])


def test_writer_killed_mid_shard_leaves_the_dataset_unchanged(tmp_path):
    root = tmp_path / "ds"
    before = zrecord.write_dataset(root, shard_data(1))
    shards_dir = root / "shards"
    existing = set(os.listdir(shards_dir))
    script = textwrap.dedent(f"""
        import numpy as np, zrecord
        big = np.random.default_rng(0).integers(0, 4, (600_000, 1024), dtype=np.uint8)
        zrecord.write_shard({str(root)!r}, {{"x": big}}, codec="zstd")
        print("finished", flush=True)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while set(os.listdir(shards_dir)) == existing and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(60) == -signal.SIGKILL
    assert child.stdout.read() == b""  # killed before it finished the shard
    assert len(set(os.listdir(shards_dir)) - existing) == 1  # its debris
    ds = zrecord.open_dataset(root)
    assert ds.version == before.version and ds.shards == before.shards
    check_reads(ds, shard_data(1))
    assert zrecord.write_dataset(root, shard_data(2), mode="append").version == 2
    # gc removes the killed writer's debris, and only that.
    committed = {path for path, _ in zrecord.open_dataset(root).shards}
    debris = sorted(f"shards/{d}" for d in set(os.listdir(shards_dir)) - existing
                    if f"shards/{d}" not in committed)
    assert len(debris) == 1
    assert zrecord.gc(root, 3600) == []
    assert zrecord.gc(root, 0, dry_run=True) == debris and (root / debris[0]).is_dir()
    assert zrecord.gc(root, 0) == debris and not (root / debris[0]).exists()
    check_reads(zrecord.open_dataset(root), concat([shard_data(1), shard_data(2)]))
    with pytest.raises(ZrecordError, match="not a dataset"):
        zrecord.gc(tmp_path, 0)


def test_mismatched_schema_at_commit_names_shard_and_column(tmp_path):
    root = tmp_path / "ds"
    good = zrecord.write_shard(root, shard_data(1), codecs=CODECS)
    data = shard_data(2)
    data["img"] = data["img"].astype(np.int16)
    bad = zrecord.write_shard(root, data, codecs=CODECS)
    with pytest.raises(ZrecordError) as exc:
        zrecord.commit(root, [good, bad])
    assert bad.path in str(exc.value) and "img" in str(exc.value) and "dtype" in str(exc.value)
    other = zrecord.write_shard(root, shard_data(3), codec="zstd")  # x zstd, not raw
    with pytest.raises(ZrecordError, match=f"(?s){other.path}.*\"x\".*codec"):
        zrecord.commit(root, [good, other])
    assert not (root / "zrecord.json").exists()


def test_unequal_columns_are_refused_before_anything_is_written(tmp_path):
    root = tmp_path / "ds"
    zrecord.write_dataset(root, shard_data(1))
    listed = sorted(os.listdir(root / "shards"))
    with pytest.raises(ValueError, match="x: 5, tokens: 4"):
        zrecord.write_shard(root, {"x": np.zeros((5, 2), np.float32),
                                   "tokens": [np.ones(3, np.uint16)] * 4})
    with pytest.raises(ValueError, match="x: 5, tokens: 4"):
        zrecord.write_dataset(root, {"x": np.zeros((5, 2), np.float32),
                                     "tokens": [np.ones(3, np.uint16)] * 4}, mode="append")
    with pytest.raises(ValueError):
        zrecord.write_shard(tmp_path / "none", {"x": np.zeros((5, 2), np.float32),
                                                "y": np.zeros(6, np.uint8)})
    assert sorted(os.listdir(root / "shards")) == listed
    assert not (tmp_path / "none").exists()


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """The same records as a 5-shard dataset and as one store per column."""
    root = tmp_path_factory.mktemp("twins")
    parts = [shard_data(k) for k in range(5)]
    ds = zrecord.write_dataset(root / "ds", parts, codec="zstd")
    every = concat(parts)
    with Dense.create(root / "x", np.float32, (3, 4)) as w:
        w.append(every["x"])
    with Ragged.create(root / "tokens", np.uint16) as w:
        w.append(every["tokens"])
    return ds, Dense.open(root / "x"), Ragged.open(root / "tokens")


def test_sampler_over_a_dataset_reads_what_over_one_store(twins):
    ds, x, tokens = twins
    assert len(ds) == len(x)
    for mode in (Sampler.Mode.SEQUENTIAL, Sampler.Mode.IID, Sampler.Mode.CYCLIC):
        a, b = Sampler(len(ds), 32, mode, seed=7), Sampler(len(x), 32, mode, seed=7)
        for _ in range(12):
            i, j = a.next().copy(), b.next()
            assert np.array_equal(i, j)
            assert ds["x"][i].tobytes() == x[j].tobytes()
            assert all(p.tobytes() == q.tobytes() for p, q in zip(ds["tokens"][i], tokens[j]))
            got = ds.__getitems__(i)
            assert got["x"].tobytes() == x[j].tobytes()


def test_dataloader_over_a_dataset_yields_what_over_one_store(twins):
    ds, x, tokens = twins
    kwargs = dict(batch_size=24, mode=2, seed=3, transform_workers=2, prefetch_size=2)
    with DataLoader({"x": ds["x"], "tokens": ds["tokens"]}, **kwargs) as a, \
            DataLoader({"x": x, "tokens": tokens}, **kwargs) as b:
        for _ in range(15):
            p, q = next(a), next(b)
            assert p["x"].tobytes() == q["x"].tobytes()
            assert [t.tobytes() for t in p["tokens"]] == [t.tobytes() for t in q["tokens"]]
    with DataLoader(ds, batch_size=8, ragged="packed") as whole:
        batch = next(whole)
        assert set(batch) == {"x", "img", "tokens"} and isinstance(batch["tokens"], tuple)


def test_dataset_and_columns_pickle_and_survive_fork(twins):
    ds, x, _ = twins
    idx = [5, 0, len(ds) - 1, 77]
    again = pickle.loads(pickle.dumps(ds))
    assert again.version == ds.version and again.uri == ds.uri
    assert again["x"][idx].tobytes() == x[idx].tobytes()
    column = pickle.loads(pickle.dumps(ds["x"]))
    assert isinstance(column, Dense) and column[idx].tobytes() == x[idx].tobytes()
    want = x[idx].tobytes()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        ok = ds["x"][idx].tobytes() == want and ds[idx]["x"].tobytes() == want
        os.write(w, b"ok" if ok else b"bad")
        os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and os.read(r, 8) == b"ok"
    os.close(r)


def test_write_shard_to_a_bucket_then_commit_and_read(moto):
    uri = f"{moto}/datasets/train"
    infos = [zrecord.write_shard(uri, shard_data(k), codecs=CODECS) for k in range(2)]
    with pytest.raises(FileNotFoundError):  # nothing is visible before the commit
        zrecord.open_dataset(uri)
    assert zrecord.commit(uri, infos) == 1
    ds = zrecord.open_dataset(uri)
    assert ds.shards == [(i.path, i.length) for i in infos]
    check_reads(ds, concat([shard_data(k) for k in range(2)]))
    more = zrecord.write_dataset(uri, shard_data(5), mode="append", codecs=CODECS)
    assert more.version == 2 and len(more.shards) == 3
    assert len(zrecord.open_dataset(uri, version=1)) == len(ds)


def test_a_shared_dictionary_is_one_per_column_and_shards_may_bring_their_own(tmp_path):
    """``dictionaries=`` makes a column zstd_dict in every shard, with the
    same dict.zr bytes (the manifest names it once); a shard with another
    dictionary commits too, and then each shard reads with its own."""
    parts = [shard_data(k, 60) for k in range(3)]
    d1 = zrecord.train_dict([t for p in parts for t in p["tokens"]], "fast")
    root = tmp_path / "ds"
    ds = zrecord.write_dataset(root, parts, codecs=CODECS, dictionaries={"tokens": d1})
    want = concat(parts)
    idx = np.arange(len(ds))[::-1]
    got = ds["tokens"].gather(idx)
    assert [g.tobytes() for g in got] == [want["tokens"][i].tobytes() for i in idx]
    dicts = {p.read_bytes() for p in root.glob("shards/*/tokens/dict.zr")}
    assert dicts == {bytes(d1)} and len(list(root.glob("shards/*/tokens/dict.zr"))) == 3
    d2 = zrecord.train_dict([t for k in (5, 6) for t in shard_data(k, 60)["tokens"]], "fast")
    assert bytes(d2) != bytes(d1)
    manifest = json.loads((root / "zrecord.json").read_text())
    tokens_spec = next(c for c in manifest["columns"] if c["name"] == "tokens")
    assert tokens_spec["codec"] == "zstd_dict" and tokens_spec["dict"]["size"] == len(d1)
    other = zrecord.write_shard(root, shard_data(9, 10), codecs=CODECS, dictionaries={"tokens": d2})
    zrecord.commit(root, [other], mode="append")
    manifest = json.loads((root / "zrecord.json").read_text())
    assert "dict" not in next(c for c in manifest["columns"] if c["name"] == "tokens")
    check_reads(zrecord.open_dataset(root), concat(parts + [shard_data(9, 10)]))
    with pytest.raises(ValueError, match="nope"):
        zrecord.write_shard(root, shard_data(9, 10), dictionaries={"nope": d1})
