"""zrecord.ray on a real local Ray (2 CPUs, started and stopped here): the
sink commits once, in block order, locally and in moto's S3; a write task
that fails leaves the dataset as it was; read_dataset returns every record
once, in order, and streaming_split(2, equal=True) covers it; importing
zrecord alone does not import Ray."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
ray = pytest.importorskip("ray")
pq = pytest.importorskip("pyarrow.parquet")

import zrecord  # noqa: E402
import zrecord.ray as zray  # noqa: E402

N = 100_000


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    # FailingSink goes to the workers by value (they cannot import this file).
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    yield
    ray.shutdown()


def mixed_table(n, seed=0):
    rng = np.random.default_rng(seed)
    lens = 1 + np.arange(n) % 7
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    return pa.table({
        "id": np.arange(n, dtype=np.int64),
        "x": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 4).astype(np.float32)), 4),
        "caption": pa.array([f"caption {i}" for i in range(n)]),
        "tokens": pa.ListArray.from_arrays(pa.array(offsets),
                                           pa.array(rng.integers(0, 50_000, int(offsets[-1]), dtype=np.int32))),
        "img": pa.FixedShapeTensorArray.from_numpy_ndarray(rng.integers(0, 255, (n, 2, 3), dtype=np.uint8)),
    })


def blocks(table, k):
    step = -(-table.num_rows // k)
    return [table.slice(i, step) for i in range(0, table.num_rows, step)]


def test_importing_zrecord_does_not_import_ray():
    code = "import sys, zrecord, pyarrow; assert 'ray' not in sys.modules, 'ray imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_sink_refuses_a_shard_size_that_writes_nothing(tmp_path):
    # rows_per_shard=-1 cut every block into no shards: the job "succeeded"
    # and committed nothing. Refused when the sink is made, as write_dataset does.
    for bad in (-1, 0, 2.5, True):
        with pytest.raises(ValueError, match="rows_per_shard must be a positive integer"):
            zray.DatasetSink(str(tmp_path / "ds"), rows_per_shard=bad)
    assert zray.DatasetSink(str(tmp_path / "ds"), rows_per_shard=4.0).rows_per_shard == 4


def test_sink_writes_8_blocks_as_one_version_and_reads_back_in_order(local_ray, tmp_path):
    table = mixed_table(N)
    uri = str(tmp_path / "ds")
    sink = zray.DatasetSink(uri, codecs={"x": "raw"})
    ray.data.from_arrow(blocks(table, 8)).write_datasink(sink)
    ds = zrecord.open_dataset(uri)
    assert ds.version == 1 and len(ds.shards) == 8 and len(ds) == N
    assert ds.to_arrow().equals(table), "the dataset differs from the table"
    # Back through Ray: every record once, in order, as NumPy columns.
    got = list(zray.read_dataset(uri, columns=["id", "caption", "img"]).iter_batches(
        batch_size=10_000, batch_format="numpy"))
    ids = np.concatenate([b["id"] for b in got])
    assert (ids == np.arange(N)).all()
    assert got[3]["caption"][7] == "caption 30007"
    assert (np.concatenate([b["img"] for b in got]) == ds["img"][:]).all()


def test_sink_from_a_parquet_file(local_ray, tmp_path):
    table = mixed_table(N, seed=1).drop_columns(["img"])
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=12_500)
    uri = str(tmp_path / "ds")
    ray.data.read_parquet(str(tmp_path / "in.parquet")).write_datasink(zray.DatasetSink(uri))
    assert zrecord.open_dataset(uri).to_arrow().equals(table)


class FailingSink(zray.DatasetSink):
    """Writes its first block's shard, then fails (on the task holding row 3,000)."""

    def write(self, blocks, ctx):
        blocks = list(blocks)
        result = super().write(blocks[:1], ctx)
        if any(3_000 in b["id"].to_pylist() for b in blocks):
            raise RuntimeError("injected failure after a shard was written")
        return result


def test_a_failed_task_leaves_the_dataset_as_it_was(local_ray, tmp_path):
    table = mixed_table(4_000)
    uri = str(tmp_path / "ds")
    ray.data.from_arrow(blocks(table, 2)).write_datasink(zray.DatasetSink(uri))
    before = sorted(os.listdir(tmp_path / "ds" / "shards"))
    with pytest.raises(Exception, match="injected failure"):
        ray.data.from_arrow(blocks(mixed_table(4_000, seed=2), 4)).write_datasink(
            FailingSink(uri, mode="append"))
    ds = zrecord.open_dataset(uri)
    assert ds.version == 1 and ds.to_arrow().equals(table)
    # The failed job's shards are on disk, in no version; gc removes them.
    leftover = sorted(set(os.listdir(tmp_path / "ds" / "shards")) - set(before))
    assert leftover and sorted(p.split("/")[-1] for p in zrecord.gc(uri, 0)) == leftover


def test_read_tasks_cut_at_shard_boundaries_or_within_a_big_shard():
    # Shards of 100: cuts near a boundary move to it; none is lost or doubled.
    assert zray._cuts(1_000, 4, list(range(0, 1_001, 100))) == [0, 200, 500, 700, 1_000]
    # One shard of 1,000: cut within it, equally.
    assert zray._cuts(1_000, 4, [0, 1_000]) == [0, 250, 500, 750, 1_000]
    # Many small shards: every range starts on a boundary.
    bounds = list(range(0, 1_001, 10))
    assert all(c in bounds for c in zray._cuts(1_000, 7, bounds))


def test_read_dataset_in_order_and_streaming_split_covers_it(local_ray, tmp_path, monkeypatch):
    uri = tmp_path / "ds"
    zrecord.write_dataset(uri, {"id": np.arange(1_000), "tokens": [np.arange(1 + i % 5) for i in range(1_000)]},
                          rows_per_shard=150)
    # 1,000 small records are one read task of TASK_BYTES: smaller tasks, so
    # that the order is the tasks' order, not one task's.
    monkeypatch.setattr(zray, "TASK_BYTES", 1)
    assert len(zray._Source(str(uri), None, None).get_read_tasks(6)) == 6
    rows = list(zray.read_dataset(str(uri), override_num_blocks=6).iter_rows())
    assert [r["id"] for r in rows] == list(range(1_000))
    assert (rows[999]["tokens"] == np.arange(5)).all()
    splits = zray.read_dataset(str(uri), columns=["id"]).streaming_split(2, equal=True)
    seen = [[], []]

    def consume(k):
        for batch in splits[k].iter_batches(batch_size=64, batch_format="numpy"):
            seen[k].extend(batch["id"].tolist())
    threads = [threading.Thread(target=consume, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(seen[0]) == len(seen[1]) == 500
    assert sorted(seen[0] + seen[1]) == list(range(1_000))


def test_sink_and_source_on_s3(local_ray, moto):
    # Ray's workers started before moto: its endpoint and keys go to the tasks.
    env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    remote = {"runtime_env": {"env_vars": env}}
    table = mixed_table(3_000, seed=3)
    uri = f"{moto}/ray/ds"
    ray.data.from_arrow(blocks(table, 3)).write_datasink(zray.DatasetSink(uri), ray_remote_args=remote)
    ds = zrecord.open_dataset(uri)
    assert len(ds.shards) == 3 and ds.to_arrow().equals(table)
    ids = [r["id"] for r in zray.read_dataset(uri, columns=["id"], runtime_env=remote["runtime_env"]).iter_rows()]
    assert ids == list(range(3_000))


def make_images(folder, sizes, fmt="png"):
    """Files the test decodes itself with Pillow: name -> (h, w, 3) uint8."""
    from PIL import Image
    folder.mkdir()
    rng = np.random.default_rng(len(sizes))
    want = {}
    for k, (h, w) in enumerate(sizes):
        path = folder / f"img{k}.{fmt}"
        Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(path)
        want[str(path)] = np.asarray(Image.open(path).convert("RGB"))
    return want


def by_path(ds):
    t = ds.to_arrow(columns=["path"])["path"].to_pylist()
    return {p: ds["image"][i] for i, p in enumerate(t)}


def test_images_of_one_and_of_many_shapes(local_ray, tmp_path):
    pytest.importorskip("PIL")
    same = make_images(tmp_path / "same", [(6, 8)] * 4, "jpeg")
    mixed = make_images(tmp_path / "mixed", [(6, 8), (5, 3), (9, 2)])
    with pytest.raises(zrecord.ZrecordError, match=r"ragged=\[\.\.\.\]"):
        ray.data.read_images(str(tmp_path / "mixed"), include_paths=True, mode="RGB").write_datasink(
            zray.DatasetSink(str(tmp_path / "refused")))
    assert not (tmp_path / "refused" / "zrecord.json").exists()
    for folder, want, kind in [("same", same, "dense"), ("mixed", mixed, "ragged")]:
        uri = str(tmp_path / f"ds-{folder}")
        ray.data.read_images(str(tmp_path / folder), include_paths=True, mode="RGB").write_datasink(
            zray.DatasetSink(uri, ragged=["image"] if kind == "ragged" else None))
        ds = zrecord.open_dataset(uri)
        assert (type(ds["image"]).__name__.lower(), ds["image"].dtype) == (kind, np.uint8)
        got = by_path(ds)
        assert sorted(p.split("/")[-1] for p in got) == sorted(p.split("/")[-1] for p in want)
        for p, img in got.items():
            assert (img == want["/" + p.lstrip("/")]).all(), p


def test_a_resumed_conversion_skips_what_was_committed(local_ray, tmp_path):
    pytest.importorskip("PIL")
    want = make_images(tmp_path / "in", [(4, 4)] * 6)
    files = sorted(want)
    uri = str(tmp_path / "ds")
    # The first run committed its first part, then died.
    ray.data.read_images(files[:2], include_paths=True).write_datasink(
        zray.DatasetSink(uri, mode="append", key="path"))
    assert zray.committed_keys(uri, "path") == set(files[:2])   # the local paths, as given
    # The rerun converts everything, part by part: nothing twice.
    for part in (files[:3], files[3:]):
        ray.data.read_images(part, include_paths=True).write_datasink(
            zray.DatasetSink(uri, mode="append", key="path"))
    ds = zrecord.open_dataset(uri)
    paths = ds.to_arrow(columns=["path"])["path"].to_pylist()
    assert len(paths) == 6 and len(set(paths)) == 6 and ds.version == 3
