#!/usr/bin/env python3
"""zrecord's Ray Data sink and source against Lance's (``write_lance`` /
``read_lance``) and Parquet's (``write_parquet`` / ``read_parquet``), on one
local Ray instance, and random batches of 256 from what was written:
zrecord's ``open_dataset`` against Lance's ``take``.

    python benches/ray/bench.py --quick                          # smoke run (scripts/test)
    python benches/ray/bench.py --json out.json --md out.md      # full run (docs/ARROW_RAY.md)

Needs ``zrecord`` (with ``pip install ./python[ray]``) and ``pylance``.

Methodology:

* one Ray instance, ``ray.init(num_cpus=2)`` (this machine's cores), its
  workers started and warmed up (imports) before any timing;
* workloads: 147 KiB CHW uint8 images from loaderx's generator
  (``make_vision_records``, as ``benches/python/bench.py``) and 2 KiB int32
  token blocks (Zipf ids), each with an int64 label; every system gets the
  same materialized Ray dataset of ``pyarrow`` blocks (the record a
  ``fixed_size_list``), no compression (zrecord ``codec="raw"``, Lance's and
  Parquet's defaults);
* write: ``write_datasink(zrecord.ray.DatasetSink(...))``,
  ``write_lance``, ``write_parquet``, each into a fresh directory, timed to
  the call's return; best of ``--reps`` (``write_lance`` through a shim:
  ``lance_compat`` below);
* read through Ray: ``zrecord.ray.read_dataset``, ``ray.data.read_lance``,
  ``ray.data.read_parquet``, each consumed whole by
  ``iter_batches(batch_size=256, batch_format="numpy")``; the labels read
  must be every label written (a mismatch fails the run); best of ``--reps``;
* random batches: ``--batches`` batches of 256 seeded random indices,
  ``open_dataset(uri)[column][idx]`` against
  ``lance.dataset(uri).take(idx, columns=[column])`` made a NumPy array;
  every batch checked against the source; records/s over all batches.
"""

import argparse
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
from bench import make_vision_records, zipf_tokens  # noqa: E402
from timing import save_results  # noqa: E402

BATCH = 256


def workloads(quick):
    n_img, n_tok = (64, 2_048) if quick else (2_048, 131_072)
    rng = np.random.default_rng(0)
    images = np.stack(make_vision_records()([(3, 224, 224)] * n_img, 7)).reshape(n_img, -1)
    tokens = zipf_tokens(rng, n_tok * 512).reshape(n_tok, 512)
    return {"images": images, "tokens": tokens}


def blocks(records, k):
    """``k`` Arrow blocks: ``x`` (fixed_size_list of the record) and ``label``."""
    n, width = records.shape
    step = -(-n // k)
    out = []
    for lo in range(0, n, step):
        part = records[lo:lo + step]
        x = pa.FixedSizeListArray.from_arrays(pa.array(part.reshape(-1)), width)
        out.append(pa.table({"x": x, "label": np.arange(lo, lo + len(part), dtype=np.int64)}))
    return out


def lance_compat():
    """Ray 2.60's ``write_lance`` passes ``storage_options_provider=None`` to
    ``lance.fragment.write_fragments`` and ``LanceDataset.commit``, which
    pylance 14.0.2 (the field bench's) do not take: drop that argument when
    it is ``None``, in every Ray worker (``worker_process_setup_hook``) and here."""
    import lance
    import lance.fragment

    def shim(original):
        if getattr(original, "zrecord_compat", False):
            return original

        def call(*args, storage_options_provider=None, **kwargs):
            if storage_options_provider is not None:
                kwargs["storage_options_provider"] = storage_options_provider
            return original(*args, **kwargs)
        call.zrecord_compat = True
        return call
    lance.fragment.write_fragments = shim(lance.fragment.write_fragments)
    lance.LanceDataset.commit = staticmethod(shim(lance.LanceDataset.commit))


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def best(reps, fn):
    return min(fn() for _ in range(reps))


def run(name, records, work, reps, batches):
    import lance
    import ray
    import zrecord
    import zrecord.ray as zray

    ds = ray.data.from_arrow(blocks(records, 8)).materialize()
    n, mib = len(records), records.nbytes / (1 << 20)
    paths = {s: str(work / f"{name}-{s}") for s in ("zrecord", "lance", "parquet")}
    writes = {
        "zrecord": lambda p: ds.write_datasink(zray.DatasetSink(p, codec="raw")),
        "lance": lambda p: ds.write_lance(p),
        "parquet": lambda p: ds.write_parquet(p),
    }

    def write(system):
        def once():
            shutil.rmtree(paths[system], ignore_errors=True)
            return timed(lambda: writes[system](paths[system]))
        return once
    reads = {
        "zrecord": lambda: zray.read_dataset(paths["zrecord"]),
        "lance": lambda: ray.data.read_lance(paths["lance"]),
        "parquet": lambda: ray.data.read_parquet(paths["parquet"]),
    }

    def read(system):
        def once():
            labels = []
            t = timed(lambda: labels.extend(
                b["label"] for b in reads[system]().iter_batches(batch_size=BATCH, batch_format="numpy")))
            got = np.sort(np.concatenate(labels))
            if not (got == np.arange(n)).all():
                raise SystemExit(f"{name}: {system} read back other labels")
            return t
        return once

    rows = []
    for system in writes:
        w = best(reps, write(system))
        r = best(reps, read(system))
        rows.append({"workload": name, "system": system, "records": n, "MiB": round(mib, 1),
                     "write_s": round(w, 3), "write_MiB_s": round(mib / w, 1),
                     "read_s": round(r, 3), "read_MiB_s": round(mib / r, 1)})
    rng = np.random.default_rng(1)
    idxs = [rng.integers(0, n, BATCH) for _ in range(batches)]
    ours = zrecord.open_dataset(paths["zrecord"])["x"]
    theirs = lance.dataset(paths["lance"])

    def ours_batch(idx):
        return ours[idx]

    def lance_batch(idx):
        col = theirs.take(idx, columns=["x"])["x"].combine_chunks()
        return col.values.to_numpy().reshape(len(idx), -1)
    take = {}
    for system, fn in (("zrecord", ours_batch), ("lance", lance_batch)):
        for idx in idxs[:2]:
            if not (fn(idx) == records[idx]).all():
                raise SystemExit(f"{name}: {system} random batch differs from the source")
        t = timed(lambda: [fn(idx) for idx in idxs])
        take[system] = batches * BATCH / t
    for row in rows:
        row["random_rec_s"] = round(take[row["system"]]) if row["system"] in take else None
    return rows


def markdown(rows, cmd):
    out = [f"Command: `{cmd}`", "", f"Machine: {platform.platform()}, 2 cores; Ray {__import__('ray').__version__}, "
           f"pylance {__import__('lance').__version__}, pyarrow {pa.__version__}", "",
           "| workload | system | records | MiB | write MiB/s | read via Ray MiB/s | random batches of 256, records/s |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['workload']} | {r['system']} | {r['records']:,} | {r['MiB']} | {r['write_MiB_s']} | "
                   f"{r['read_MiB_s']} | {r['random_rec_s'] or '—'} |")
    for w in dict.fromkeys(r["workload"] for r in rows):
        by = {r["system"]: r for r in rows if r["workload"] == w}
        z, lance = by["zrecord"], by["lance"]
        out.append(f"\n{w}: write {z['write_MiB_s'] / lance['write_MiB_s']:.2f}x write_lance, "
                   f"read {z['read_MiB_s'] / lance['read_MiB_s']:.2f}x read_lance, "
                   f"random batches {z['random_rec_s'] / lance['random_rec_s']:.1f}x Lance take")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small data, 1 rep (smoke run)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()
    reps, batches = (1, 10) if args.quick else (args.reps, args.batches)
    import ray
    lance_compat()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"worker_process_setup_hook": lance_compat})
    ray.data.DataContext.get_current().enable_progress_bars = False
    work = Path(tempfile.mkdtemp(prefix="zrecord-ray-bench-"))
    # Warm-up, untimed: the workers start and import pyarrow, zrecord and lance.
    ray.data.range(8, override_num_blocks=8).map_batches(lambda b: (lance_compat(), b)[1]).materialize()
    try:
        rows = [r for name, records in workloads(args.quick).items()
                for r in run(name, records, work, reps, batches)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
        ray.shutdown()
    cmd = "python benches/ray/bench.py " + " ".join(sys.argv[1:])
    save_results(args, markdown(rows, cmd), {"command": cmd, "rows": rows})


if __name__ == "__main__":
    main()
