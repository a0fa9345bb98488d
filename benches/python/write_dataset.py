#!/usr/bin/env python3
"""Writing one dataset from 2 processes against one writer process: zrecord
(``write_dataset``; ``write_shard`` in each process, then one ``commit``)
beside MDS (``streaming.MDSWriter``; a subdirectory per process, then
``merge_index``) and Lance (``lance.write_dataset``; ``write_fragments`` in
each process, then one ``LanceDataset.commit``), on the same records.

    bash benches/python/write_dataset.sh --reps 3        # full run (1.2 GiB a write, ~15 min)
    bash benches/python/write_dataset.sh --quick         # smoke run (24 MiB, every row checked)
    bash benches/python/write_dataset.sh --json out.json --md out.md
    python benches/python/write_dataset.py --quick --systems zrecord,lance   # scripts/test

(``write_dataset.sh`` makes the venv; this file runs with any Python that has
``zrecord`` and the peers it is asked to run: ``mosaicml-streaming`` for
``mds``, ``pylance`` for ``lance``.)

Methodology:

* records: image-like Dense ``uint8`` 64x64x3 (12 KiB; gradients, a
  rectangle, 2% noise; zstd level 3 makes them ~1.5x smaller), an ``int64`` label and a
  Ragged ``int32`` token sequence (16..512 Zipf-distributed ids, median 129),
  from seeded NumPy, held in memory before any timing;
* each system writes in its natural way with its columns: zrecord's three
  columns (Dense, Dense, Ragged), MDS encodings ``ndarray:uint8:64,64,3``,
  ``int64`` and ``ndarray:int32`` (one ``write`` per sample: that is MDS's
  API), Lance a fixed-size list (raw) or ``large_binary`` with
  ``lance-encoding:compression=zstd`` (zstd; pylance ignores that metadata on
  a fixed-size list) for the image, ``large_binary`` for the tokens, file
  format 2.1, as ``benches/field/`` does;
* codecs: raw (no compression) and zstd at each system's default level (3);
* 1 process: the whole dataset written in one process. 2 processes: two
  forked worker processes (the records inherited, not pickled) each write
  one half, then their parent commits what they return (zrecord's
  ``ShardInfo``, Lance's fragment JSON, MDS's ``index.json`` paths). zrecord
  writes 2 shards in both modes (``rows_per_shard`` = half), so the datasets
  are the same. Each row runs in a fresh forked process of its own;
* timed from the first write call to the commit's return, page cache and
  all (no fsync: none of the three syncs); not timed: starting the workers
  and importing each system's modules (torch, for MDS: seconds), as a real
  job's workers have them loaded; ``sync`` runs untimed before each write;
* every write is read back through the system's own reader (zrecord's
  ``open_dataset``, MDS's ``LocalDataset`` after decompressing its shards,
  ``lance.dataset(...).take``) and compared with the source: every row in
  ``--quick``, 2,000 random rows plus the first and last otherwise; a
  mismatch fails the run;
* ``--reps`` writes of each row (default 3; rows in reverse order on even
  passes), best kept; ``x vs 1 proc`` is the 2-process records/s over the 1-process one,
  ``zrecord x`` zrecord's records/s over the row's, same codec and processes.
"""

import argparse
import json
import multiprocessing as mp
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench import token_lengths, zipf_tokens  # noqa: E402  (the token data the Python bench uses)
from timing import save_results  # noqa: E402

SYSTEMS = ["zrecord", "mds", "lance"]
CODECS = ["raw", "zstd"]
SHAPE = (64, 64, 3)
MIB = 1 << 20

# The records, set before any worker forks (workers inherit them).
DATA = None


class Records:
    """The records every system writes: images (n, 64, 64, 3) uint8, labels
    (n,) int64, tokens as one int32 payload with int64 offsets (views
    ``tokens[i]`` for the systems that take a list)."""

    def __init__(self, n, seed=0):
        rng = np.random.default_rng(seed)
        self.n = n
        self.images = make_images(rng, n)
        self.labels = rng.integers(0, 1000, n).astype(np.int64)
        lengths = token_lengths(rng, n)
        self.payload = zipf_tokens(rng, int(lengths.sum())).astype(np.int32)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.tokens = [self.payload[self.offsets[i]:self.offsets[i + 1]] for i in range(n)]
        self.logical = self.images.nbytes + self.labels.nbytes + self.payload.nbytes

    def halves(self):
        h = (self.n + 1) // 2
        return [(0, h), (h, self.n)]

    def check(self, system, idx, images, labels, tokens):
        """Raise unless the rows read back equal the source rows ``idx``."""
        want = self.images[idx]
        if images.shape != want.shape or images.dtype != want.dtype or not np.array_equal(images, want):
            bad = [int(i) for k, i in enumerate(idx)
                   if k >= len(images) or not np.array_equal(images[k], want[k])]
            raise SystemExit(f"{system}: image rows differ from the source "
                             f"({images.shape} {images.dtype} read; first bad row: {bad[:1]})")
        if not np.array_equal(np.asarray(labels, np.int64), self.labels[idx]):
            raise SystemExit(f"{system}: labels differ from the source")
        if len(tokens) != len(idx):
            raise SystemExit(f"{system}: {len(tokens)} token rows read, {len(idx)} asked")
        for k, i in enumerate(idx):
            t = np.asarray(tokens[k])
            if t.dtype != np.int32 or not np.array_equal(t, self.tokens[i]):
                raise SystemExit(f"{system}: tokens of row {i} differ from the source")


def make_images(rng, n):
    """Image-like records: per-channel gradients, one solid rectangle and 2%
    noise pixels each: zstd level 3 shrinks them about 1.5x, as it does
    photos."""
    h, w, c = SHAPE
    out = np.empty((n, h, w, c), np.uint8)
    yy = np.arange(h, dtype=np.float32)[None, :, None, None]
    xx = np.arange(w, dtype=np.float32)[None, None, :, None]
    step = 2048
    for s in range(0, n, step):
        m = min(step, n - s)
        base = rng.uniform(0, 255, (m, 1, 1, c)).astype(np.float32)
        dy = rng.uniform(-2, 2, (m, 1, 1, c)).astype(np.float32)
        dx = rng.uniform(-2, 2, (m, 1, 1, c)).astype(np.float32)
        img = base + dy * yy + dx * xx
        np.clip(img, 0, 255, out=img)
        block = img.astype(np.uint8)
        y0, x0 = rng.integers(0, h // 2, m), rng.integers(0, w // 2, m)
        y1, x1 = y0 + rng.integers(4, h // 2, m), x0 + rng.integers(4, w // 2, m)
        ys, xs = np.arange(h)[None, :, None], np.arange(w)[None, None, :]
        rect = ((ys >= y0[:, None, None]) & (ys < y1[:, None, None])
                & (xs >= x0[:, None, None]) & (xs < x1[:, None, None]))
        color = rng.integers(0, 256, (m, c), dtype=np.uint8)
        block[rect] = np.repeat(color, rect.reshape(m, -1).sum(1), axis=0)
        noise = rng.random((m, h, w)) < 0.02
        block[noise] = rng.integers(0, 256, (int(noise.sum()), c), dtype=np.uint8)
        out[s:s + m] = block
    return out


# --- zrecord ---------------------------------------------------------------

def zrecord_columns(s, e):
    d = DATA
    return {"image": d.images[s:e], "label": d.labels[s:e], "tokens": d.tokens[s:e]}


def zrecord_one(root, codec):
    import zrecord

    h = DATA.halves()[0][1]
    zrecord.write_dataset(root, zrecord_columns(0, DATA.n), codec=codec, rows_per_shard=h)


def zrecord_part(root, codec, part):
    import zrecord

    s, e = DATA.halves()[part]
    return zrecord.write_shard(root, zrecord_columns(s, e), codec=codec)


def zrecord_commit(root, codec, results):
    import zrecord

    zrecord.commit(root, results, mode="create")


def zrecord_read(root, codec, idx):
    import zrecord

    ds = zrecord.open_dataset(root)
    if len(ds) != DATA.n:
        raise SystemExit(f"zrecord: {len(ds)} records, {DATA.n} written")
    return ds["image"][idx], ds["label"][idx], ds["tokens"][idx]


# --- MDS (mosaicml-streaming) ----------------------------------------------

MDS_COLUMNS = {"image": "ndarray:uint8:%d,%d,%d" % SHAPE, "label": "int64", "tokens": "ndarray:int32"}


def mds_write(out, codec, s, e):
    from streaming import MDSWriter

    d = DATA
    with MDSWriter(out=out, columns=MDS_COLUMNS, compression=None if codec == "raw" else "zstd") as w:
        for i in range(s, e):
            w.write({"image": d.images[i], "label": int(d.labels[i]), "tokens": d.tokens[i]})


def mds_one(root, codec):
    mds_write(root, codec, 0, DATA.n)


def mds_part(root, codec, part):
    s, e = DATA.halves()[part]
    out = os.path.join(root, f"part-{part}")
    mds_write(out, codec, s, e)
    return os.path.join(out, "index.json")


def mds_commit(root, codec, results):
    from streaming.base.util import merge_index

    merge_index(list(results), root, keep_local=True)


def mds_read(root, codec, idx):
    from streaming import LocalDataset

    if codec != "raw":
        # What StreamingDataset does after a download: decompress each shard.
        import zstd

        for dirpath, _, files in os.walk(root):
            for f in files:
                if f.endswith(".mds.zstd"):
                    with open(os.path.join(dirpath, f), "rb") as src:
                        raw = zstd.decompress(src.read())
                    with open(os.path.join(dirpath, f[:-len(".zstd")]), "wb") as dst:
                        dst.write(raw)
    ds = LocalDataset(local=root)
    if len(ds) != DATA.n:
        raise SystemExit(f"mds: {len(ds)} records, {DATA.n} written")
    rows = [ds[int(i)] for i in idx]
    return (np.stack([r["image"] for r in rows]), [r["label"] for r in rows], [r["tokens"] for r in rows])


# --- Lance -----------------------------------------------------------------

def lance_table(codec, s, e):
    """Rows s..e as an Arrow table, zero-copy over the NumPy source."""
    import pyarrow as pa

    d = DATA
    n = e - s
    per = int(np.prod(SHAPE))
    images = d.images[s:e].reshape(-1)
    offs = d.offsets[s:e + 1] - d.offsets[s]
    payload = d.payload[d.offsets[s]:d.offsets[e]]
    tokens = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offs * 4), pa.py_buffer(payload.view(np.uint8))])
    if codec == "raw":
        image = pa.FixedSizeListArray.from_arrays(pa.array(images), per)
        meta = {"lance-encoding:compression": "none"}
    else:
        image = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), n,
            [None, pa.py_buffer(np.arange(n + 1, dtype=np.int64) * per), pa.py_buffer(images)])
        meta = {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "3"}
    schema = pa.schema([pa.field("image", image.type, metadata=meta),
                        pa.field("label", pa.int64()),
                        pa.field("tokens", pa.large_binary(), metadata=meta)])
    return pa.table([image, pa.array(d.labels[s:e]), tokens], schema=schema)


def lance_one(root, codec):
    import lance

    lance.write_dataset(lance_table(codec, 0, DATA.n), root, data_storage_version="2.1")


def lance_part(root, codec, part):
    from lance.fragment import write_fragments

    s, e = DATA.halves()[part]
    frags = write_fragments(lance_table(codec, s, e), root, mode="create", data_storage_version="2.1")
    return [f.to_json() for f in frags]


def lance_commit(root, codec, results):
    import lance
    from lance.fragment import FragmentMetadata

    frags = [FragmentMetadata.from_json(json.dumps(f)) for part in results for f in part]
    schema = lance_table(codec, 0, 1).schema
    lance.LanceDataset.commit(root, lance.LanceOperation.Overwrite(schema, frags))


def lance_read(root, codec, idx):
    import lance

    ds = lance.dataset(root)
    if ds.count_rows() != DATA.n:
        raise SystemExit(f"lance: {ds.count_rows()} records, {DATA.n} written")
    t = ds.take(idx, columns=["image", "label", "tokens"])
    img = t.column("image").combine_chunks()
    if codec == "raw":
        images = img.flatten().to_numpy().reshape(len(idx), *SHAPE)
    else:
        images = np.stack([np.frombuffer(v.as_buffer(), np.uint8).reshape(SHAPE) for v in img])
    tokens = [np.frombuffer(v.as_buffer(), np.int32) for v in t.column("tokens").combine_chunks()]
    return images, t.column("label").to_numpy(), tokens


WRITERS = {
    "zrecord": (zrecord_one, zrecord_part, zrecord_commit, zrecord_read),
    "mds": (mds_one, mds_part, mds_commit, mds_read),
    "lance": (lance_one, lance_part, lance_commit, lance_read),
}


# What each system's writer imports, imported before the clock starts (in
# every worker too): a worker of a real job has its modules loaded already.
MODULES = {"zrecord": ["zrecord"], "mds": ["streaming", "streaming.base.util"],
           "lance": ["lance", "lance.fragment", "pyarrow"]}


def _load(system, barrier=None):
    import importlib

    for m in MODULES[system]:
        importlib.import_module(m)
    if barrier is not None:
        barrier.wait()


def _part(args):
    system, root, codec, part = args
    return WRITERS[system][1](root, codec, part)


def write(system, root, codec, procs):
    """Write the dataset to ``root`` (fresh); return the seconds it took,
    from the first write call (every process started and its modules
    loaded) to the commit's return."""
    one, _, commit, _ = WRITERS[system]
    if procs == 1:
        _load(system)
        t0 = time.perf_counter()
        one(root, codec)
        return time.perf_counter() - t0
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(procs + 1)
    with ctx.Pool(procs, initializer=_load, initargs=(system, barrier)) as pool:
        _load(system, barrier)  # the committer's modules too (after the fork: Lance is not fork-safe)
        t0 = time.perf_counter()
        results = pool.map(_part, [(system, root, codec, p) for p in range(procs)], chunksize=1)
        commit(root, codec, results)
        return time.perf_counter() - t0


def measure(system, root, codec, procs, idx):
    """One timed write, then the read-back check; returns (seconds, bytes on disk)."""
    shutil.rmtree(root, ignore_errors=True)
    os.sync()
    secs = write(system, root, codec, procs)
    disk = disk_bytes(root)
    DATA.check(system, idx, *WRITERS[system][3](root, codec, idx))
    shutil.rmtree(root, ignore_errors=True)
    return secs, disk


def in_child(fn, *args):
    """``fn(*args)`` in a forked process of its own, so that this process
    never loads a system's runtime (Lance warns that it is not fork-safe) and
    each write starts as a fresh script would (workers fork before any
    system has run in their parent)."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child():
        try:
            send.send(("ok", fn(*args)))
        except BaseException as e:  # noqa: BLE001  (reported by the parent)
            send.send(("error", f"{type(e).__name__}: {e}"))

    p = ctx.Process(target=child)
    p.start()
    send.close()
    try:
        status, value = recv.recv()
    except EOFError:
        status, value = "error", "the process died"
    p.join()
    if status != "ok":
        raise SystemExit(f"{args[0]} {args[2]} {args[3]} proc: {value}")
    return value


def disk_bytes(root):
    total = 0
    for dirpath, _, files in os.walk(root):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
    return total


def check_rows(n, quick):
    if quick:
        return np.arange(n)
    rng = np.random.default_rng(1)
    return np.unique(np.concatenate([[0, n - 1], rng.integers(0, n, 2000)]))


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run(args):
    global DATA
    t0 = time.perf_counter()
    DATA = Records(args.records, seed=0)
    print(f"records: {DATA.n:,}, {DATA.logical / MIB:,.1f} MiB logical "
          f"(image {np.prod(SHAPE):,} B, label 8 B, tokens median "
          f"{int(np.median(np.diff(DATA.offsets)))} ids); generated in {time.perf_counter() - t0:.1f} s",
          flush=True)
    rows = [(s, c, p) for s in args.systems for c in args.codecs for p in (1, 2)]
    best = {}
    disk = {}
    idx = check_rows(DATA.n, args.quick)
    base = Path(args.dir or tempfile.mkdtemp(prefix="zrecord-write-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        for rep in range(args.reps):
            for system, codec, procs in (rows if rep % 2 == 0 else rows[::-1]):
                root = str(base / f"{system}-{codec}-{procs}")
                secs, disk[(system, codec)] = in_child(measure, system, root, codec, procs, idx)
                key = (system, codec, procs)
                best[key] = min(secs, best.get(key, float("inf")))
                print(f"  pass {rep + 1}: {system:8} {codec:4} {procs} proc  {secs:7.3f} s  "
                      f"{DATA.n / secs / 1e3:8.1f} krec/s  {DATA.logical / secs / MIB:8.1f} MiB/s  "
                      f"(checked {len(idx):,} rows)", flush=True)
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    table = []
    for system, codec, procs in rows:
        secs = best[(system, codec, procs)]
        one = best[(system, codec, 1)]
        z = best.get(("zrecord", codec, procs))
        table.append({
            "system": system, "codec": codec, "procs": procs, "seconds": secs,
            "records_per_s": DATA.n / secs, "mib_per_s": DATA.logical / secs / MIB,
            "disk_mib": disk[(system, codec)] / MIB,
            "speedup": one / secs if procs == 2 else None,
            "zrecord_ratio": secs / z if z is not None and system != "zrecord" else None,
        })
    return table


def markdown(table, meta):
    names = {"zrecord": "zrecord", "mds": "MDS (MDSWriter)", "lance": "Lance"}
    out = [f"# Writing one dataset from 1 and 2 processes: {', '.join(names[s] for s in meta['systems'])} — "
           f"{meta['records']:,} records, "
           f"{meta['logical_mib']:,.1f} MiB logical, best of {meta['reps']}, {meta['cpus']} cores",
           "",
           f"{meta['date']}; load average {meta['load_start']} at the start, {meta['load_end']} at the end; "
           + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + f", Python {meta['python']}.",
           "",
           f"`{meta['command']}`",
           "",
           "| system | codec | processes | s | krecords/s | MiB/s | disk MiB | × vs 1 proc | zrecord × |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in table:
        sp = f"{r['speedup']:.2f}×" if r["speedup"] else "–"
        zr = f"{r['zrecord_ratio']:.2f}×" if r["zrecord_ratio"] else "–"
        out.append(f"| {r['system']} | {r['codec']} | {r['procs']} | {r['seconds']:.2f} | "
                   f"{r['records_per_s'] / 1e3:,.1f} | {r['mib_per_s']:,.1f} | {r['disk_mib']:,.1f} | {sp} | {zr} |")
    return "\n".join(out) + "\n"


def versions(systems):
    import zrecord

    out = {"zrecord": getattr(zrecord, "__version__", "?")}
    if "mds" in systems:
        import streaming

        out["mosaicml-streaming"] = streaming.__version__
    if "lance" in systems:
        import lance

        out["pylance"] = lance.__version__
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 2,000 records, every row checked")
    ap.add_argument("--records", type=int, help="records (default 100,000; --quick 2,000)")
    ap.add_argument("--reps", type=int, help="writes per row, best kept (default 3; --quick 1)")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--dir", help="where to write (default: a temporary directory)")
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()
    args.records = args.records or (2000 if args.quick else 100_000)
    args.reps = args.reps or (1 if args.quick else 3)
    args.systems = args.systems.split(",")
    args.codecs = args.codecs.split(",")
    for s in args.systems:
        if s not in SYSTEMS:
            raise SystemExit(f"unknown system {s!r} ({', '.join(SYSTEMS)})")
    for c in args.codecs:
        if c not in CODECS:
            raise SystemExit(f"unknown codec {c!r} ({', '.join(CODECS)})")
    load_start = loadavg()
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    table = run(args)
    meta = {
        "records": args.records, "systems": args.systems, "logical_mib": DATA.logical / MIB, "reps": args.reps,
        "cpus": os.cpu_count(), "date": f"{start} – {time.strftime('%H:%M UTC', time.gmtime())}",
        "load_start": load_start, "load_end": loadavg(), "versions": versions(args.systems),
        "python": platform.python_version(),
        "command": "bash benches/python/write_dataset.sh " + " ".join(sys.argv[1:]),
    }
    print()
    save_results(args, markdown(table, meta), {"meta": meta, "rows": table})


if __name__ == "__main__":
    main()
