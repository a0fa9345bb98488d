#!/usr/bin/env python3
"""zrecord's Python package side by side with loaderx 2.0.1, through Python.

    python benches/python/bench.py              # full run (a few minutes)
    python benches/python/bench.py --quick      # smoke run (the test suite's)
    python benches/python/bench.py --json out.json --md out.md

Run it with the Python that has ``zrecord`` installed (``pip install
./python``); loaderx runs in its own venv (``.ci/install`` makes it) as a peer
process, ``benches/compare_peers.py`` (the same peer the Rust harness uses),
answering one JSON command per line.

Methodology (loaderx's README, as the Rust harness ``benches/compare.rs``):

* the same data for both systems, written to .npy files the peer loads, and
  the same IID index batches of 256 (drawn by our sampler; the peer checks that
  loaderx's own sampler draws the same);
* writes timed from the first append through ``close()`` (publication), with
  the same append chunks, twice per system in ABBA order (best of two;
  five, alternating, for writes under half a second);
  dictionary training (``train_dict``, default tier) timed apart;
* before timing, each system reads its whole store once (warm page cache) and
  its first batches are checked against the source records;
* gathers through ``store[batch]`` (``__getitem__``), timed in interleaved
  rounds until each row has at least 2 s; throughput is of logical (decoded)
  bytes; ``vs loaderx`` is the median of per-round throughput ratios;
* Dense workloads also gather smaller batches (the first 8 to 64 indices of
  the same batches), 1 s a row.

Workloads: 147 KiB CHW uint8 images from loaderx's own ``make_vision_records``
(its sdist's ``scripts/_bench_common.py``), 2 KiB int32 token blocks (Dense,
512 Zipf-distributed ids), and Ragged int32 token sequences (16..512 ids,
median 129).
"""

import argparse
import ast
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import zrecord
from zrecord import Dense, Ragged, Sampler, train_dict

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benches"))
from timing import time_batches  # noqa: E402  (the timed loop loaderx's side uses too)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import mixture  # noqa: E402  (the mixture rows)
HOME = Path(os.environ.get("HOME", "/root"))
CODECS = ["raw", "zstd", "zstd_dict"]
BATCH = 256
# Writes shorter than this (seconds) are timed five times per system, not two.
SHORT_WRITE_S = 0.5
# Smaller batches (the first indices of the same batches), timed SWEEP_S
# seconds a row: training on images often takes 8 to 64 a step.
SWEEP = {"dense-vision": [8, 32, 64], "dense-tokens": [16, 64]}
SWEEP_S = 1.0
TARGETS = {  # workload -> codec -> least gather ratio vs loaderx (same codec)
    "dense-tokens": {"raw": 1.5, "zstd": 1.2, "zstd_dict": 1.2},
    "ragged-tokens": {"raw": 1.5, "zstd": 1.2, "zstd_dict": 1.2},
    "dense-vision": {"raw": 1.1, "zstd": 1.1, "zstd_dict": 1.1},
}


def loaderx_python():
    venv = Path(os.environ.get("ZRECORD_VENV", HOME / ".cache/zrecord/venv-loaderx"))
    python = Path(os.environ.get("ZRECORD_LOADERX_PYTHON", venv / "bin/python"))
    if not python.exists():
        raise SystemExit(f"{python} missing: run .ci/install (it sets up loaderx 2.0.1)")
    return python


def make_vision_records():
    """loaderx's own image generator, taken from its sdist (whose module
    imports loaderx, which this venv does not have: only the function is run)."""
    sdist = Path(os.environ.get("ZRECORD_LOADERX_SDIST", HOME / ".cache/zrecord/loaderx-2.0.1-sdist"))
    source = (sdist / "scripts" / "_bench_common.py").read_text()
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "make_vision_records")
    namespace = {"np": np}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "_bench_common.py", "exec"), namespace)
    return namespace["make_vision_records"]


def zipf_tokens(rng, count):
    # A discretised Pareto tail (exponent 1.3) modulo GPT-2's vocabulary, as
    # benches/common (the Rust harness) makes its tokens.
    u = rng.random(count)
    x = np.minimum(u ** (-1 / 0.3), 1e18)
    return (x.astype(np.uint64) % 50257).astype("<i4")


def token_lengths(rng, n):
    kx = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.97, 1.0]
    ky = [16, 28, 75, 129, 175, 254, 330, 512]
    return np.round(np.interp(rng.random(n), kx, ky)).astype(np.int64)


class Workload:
    def __init__(self, name, n, seed):
        self.name = name
        rng = np.random.default_rng(seed)
        if name == "dense-vision":
            images = make_vision_records()([(3, 224, 224)] * n, seed)
            self.array = np.stack(images)
        elif name == "dense-tokens":
            self.array = zipf_tokens(rng, n * 512).reshape(n, 512)
        else:
            lengths = token_lengths(rng, n)
            payload = zipf_tokens(rng, int(lengths.sum()))
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            self.payload, self.shapes = payload, lengths.astype(np.uint64).reshape(n, 1)
            self.records = [payload[offsets[i]:offsets[i + 1]] for i in range(n)]
            self.array = None
        self.dense = self.array is not None
        self.n = n
        self.record_bytes = (np.full(n, self.array[0].nbytes) if self.dense
                             else np.array([r.nbytes for r in self.records]))
        self.logical = int(self.record_bytes.sum())

    def source(self):
        return self.array if self.dense else self.records

    def chunks(self):
        step = 1024 if self.name != "dense-vision" else 64
        return [[s, min(s + step, self.n)] for s in range(0, self.n, step)]

    def save(self, work, batches):
        if self.dense:
            np.save(work / "data.npy", self.array)
        else:
            np.save(work / "payload.npy", self.payload)
            np.save(work / "shapes.npy", self.shapes)
        np.save(work / "batches.npy", batches)

    def same(self, got, batch):
        if self.dense:
            want = self.array[batch.astype(np.intp)]
            return got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)
        return len(got) == len(batch) and all(
            g.shape == self.records[i].shape and np.array_equal(g, self.records[i]) for g, i in zip(got, batch))


class Peer:
    """loaderx 2.0.1 in its venv, driven through benches/compare_peers.py."""

    def __init__(self, work, seed):
        self.proc = subprocess.Popen(
            [str(loaderx_python()), str(REPO / "benches" / "compare_peers.py"), "serve", "--dir", str(work),
             "--seed", str(seed)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        hello = json.loads(self.proc.stdout.readline())
        assert hello.get("ready"), hello

    def __call__(self, cmd, **kw):
        self.proc.stdin.write(json.dumps({"cmd": cmd, **kw}) + "\n")
        self.proc.stdin.flush()
        resp = json.loads(self.proc.stdout.readline())
        if "error" in resp:
            raise RuntimeError(f"loaderx peer: {cmd}: {resp['error']}")
        return resp

    def close(self):
        try:
            self.proc.stdin.write('{"cmd": "quit"}\n')
            self.proc.stdin.close()
            self.proc.wait(30)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def disk_bytes(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def write_ours(w, path, codec):
    shutil.rmtree(path, ignore_errors=True)
    d = None
    train_s = None
    if codec == "zstd_dict":
        t0 = time.perf_counter()
        d = train_dict(w.source())
        train_s = time.perf_counter() - t0
    if w.dense:
        ds = Dense.create(path, w.array.dtype, w.array.shape[1:], codec=codec, dict_bytes=d)
    else:
        ds = Ragged.create(path, np.int32, codec=codec, dict_bytes=d)
    src = w.source()
    t0 = time.perf_counter()
    for start, end in w.chunks():
        ds.append(src[start:end])
    ds.close()
    return {"write_s": time.perf_counter() - t0, "train_s": train_s, "disk_bytes": disk_bytes(path)}


def run_workload(name, n, args, work_root):
    seed = 7
    print(f"\n== {name}: generating {n} records", file=sys.stderr, flush=True)
    w = Workload(name, n, seed)
    nbatches = max(64, min(4096, 4 * n // BATCH))
    sampler = Sampler(n, BATCH, Sampler.Mode.IID, seed)
    batches = np.stack([sampler.next().copy() for _ in range(nbatches)])
    work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=work_root))
    w.save(work, batches)
    peer = Peer(work, seed)
    rows, sweep = [], []
    try:
        assert peer("sampler", count=min(64, nbatches))["checked"] > 0
        for codec in CODECS:
            print(f"   {codec}: writing", file=sys.stderr, flush=True)
            # ABBA: ours, loaderx, loaderx, ours; each system's best of two,
            # so a burst of load from other processes does not pick a winner.
            # Writes under SHORT_WRITE_S get three more pairs (best of five):
            # page-cache write-back makes any one of them up to 10x slower.
            writes = {"ours": [], "theirs": []}

            def write(who):
                if who == "ours":
                    writes[who].append(write_ours(w, work / f"zrecord-{codec}", codec))
                else:
                    writes[who].append(peer("write", codec=codec, chunks=w.chunks()))

            for who in (["ours", "theirs", "theirs", "ours"] if args.write_pairs else ["ours", "theirs"]):
                write(who)
            if args.write_pairs and max(r["write_s"] for rs in writes.values() for r in rs) < SHORT_WRITE_S:
                for who in ["theirs", "ours", "ours", "theirs", "theirs", "ours"]:
                    write(who)
            ours_w = min(writes["ours"], key=lambda r: r["write_s"])
            theirs_w = min(writes["theirs"], key=lambda r: r["write_s"])
            # Open, warm (read everything once), check.
            cls = Dense if w.dense else Ragged
            store = cls.open(work / f"zrecord-{codec}")
            fn = store.__getitem__
            for start in range(0, n, BATCH):
                fn(np.arange(start, min(start + BATCH, n), dtype=np.uint64))
            check = min(args.check, nbatches)
            for k in range(check):
                if not w.same(fn(batches[k]), batches[k]):
                    raise AssertionError(f"zrecord {name}/{codec}: batch {k} differs from the source")
            peer("prepare", system="loaderx", codec=codec, check=check)
            print(f"   {codec}: gathering", file=sys.stderr, flush=True)
            ours_lat, theirs_lat, ours_bytes, theirs_bytes, ratios = race(w, fn, peer, codec, batches, args)
            for size in SWEEP.get(name, []):
                o_lat, t_lat, o_b, t_b, r = race(w, fn, peer, codec, batches, args, size, min(SWEEP_S, args.min_s))
                sweep.append({"workload": name, "codec": codec, "batch": size,
                              "zrecord_mib_s": o_b / (1 << 20) / sum(o_lat),
                              "loaderx_mib_s": t_b / (1 << 20) / sum(t_lat),
                              "vs_loaderx": float(np.median(r))})
            store.close()
            mib = 1 << 20
            for system, wr, lat, nbytes in (("zrecord", ours_w, ours_lat, ours_bytes),
                                            ("loaderx-2.0.1", theirs_w, theirs_lat, theirs_bytes)):
                rows.append({
                    "workload": name, "system": system, "codec": codec,
                    "write_mib_s": w.logical / mib / wr["write_s"],
                    "train_s": wr["train_s"],
                    "gather_mib_s": nbytes / mib / sum(lat),
                    "krecords_s": len(lat) * BATCH / sum(lat) / 1e3,
                    "p95_ms": float(np.percentile(lat, 95) * 1e3),
                    "disk_mib": wr["disk_bytes"] / mib,
                    "timed_s": sum(lat),
                    "vs_loaderx": float(np.median(ratios)) if system == "zrecord" else None,
                    "write_vs_loaderx": theirs_w["write_s"] / ours_w["write_s"] if system == "zrecord" else None,
                })
    finally:
        peer.close()
        shutil.rmtree(work, ignore_errors=True)
    return {"workload": name, "records": n, "logical_mib": w.logical / (1 << 20),
            "mean_record_bytes": w.logical / n, "rows": rows, "by_batch": sweep}


def race(w, fn, peer, codec, batches, args, size=None, min_s=None):
    """Time our gathers and the peer's in interleaved rounds until each side
    has `min_s` (default `args.min_s`) seconds, on the same batches (their
    first `size` indices when given). Returns both sides' per-batch seconds
    and bytes, and the per-round throughput ratios."""
    nbatches = len(batches)
    cut = slice(None) if size is None else slice(size)
    ours_lat, theirs_lat, ratios = [], [], []
    ours_bytes = theirs_bytes = 0
    cursor = 0
    per_round = (min_s or args.min_s) / args.rounds
    for _ in range(args.rounds):
        first = cursor
        lat, cursor = time_batches(fn, batches, cursor, per_round, cut)
        our_b = sum(int(w.record_bytes[batches[k % nbatches][cut]].sum()) for k in range(first, cursor))
        resp = peer("gather", system="loaderx", codec=codec, min_s=per_round, batch=size)
        their_b = sum(int(w.record_bytes[batches[k % nbatches][cut]].sum())
                      for k in range(resp["first"], resp["first"] + resp["count"]))
        ours_lat += lat
        theirs_lat += resp["lat"]
        ours_bytes += our_b
        theirs_bytes += their_b
        ratios.append((our_b / sum(lat)) / (their_b / sum(resp["lat"])))
    return ours_lat, theirs_lat, ours_bytes, theirs_bytes, ratios


def markdown(results, meta):
    out = []
    for res in results:
        out.append(f"**{res['workload']}** — {res['records']} records, {res['logical_mib']:.1f} MiB logical "
                   f"(mean {res['mean_record_bytes']:.0f} B per record)\n")
        out.append("| system | codec | write MiB/s | gather MiB/s | krecords/s | p95 ms | disk MiB "
                   "| gather vs loaderx | write vs loaderx |")
        out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in res["rows"]:
            vs = f"{r['vs_loaderx']:.2f}×" if r["vs_loaderx"] is not None else "–"
            wv = f"{r['write_vs_loaderx']:.2f}×" if r["write_vs_loaderx"] is not None else "–"
            out.append(f"| {r['system']} | {r['codec']} | {r['write_mib_s']:.1f} | {r['gather_mib_s']:.1f} | "
                       f"{r['krecords_s']:.1f} | {r['p95_ms']:.3f} | {r['disk_mib']:.1f} | {vs} | {wv} |")
        out.append("")
    sweep = [r for res in results for r in res.get("by_batch", [])]
    if sweep:
        out.append("**Smaller batches** (the first indices of the same batches)\n")
        out.append("| workload | codec | batch | zrecord MiB/s | loaderx MiB/s | gather vs loaderx |")
        out.append("|---|---|---:|---:|---:|---:|")
        for r in sweep:
            out.append(f"| {r['workload']} | {r['codec']} | {r['batch']} | {r['zrecord_mib_s']:.1f} | "
                       f"{r['loaderx_mib_s']:.1f} | {r['vs_loaderx']:.2f}× |")
        out.append("")
    out.append("**Targets (through Python, median of per-round ratios)**\n")
    out.append("| target | measured | goal | |")
    out.append("|---|---:|---:|---|")
    for res in results:
        for r in res["rows"]:
            if r["system"] != "zrecord":
                continue
            goal = TARGETS[res["workload"]][r["codec"]]
            met = "met" if r["vs_loaderx"] >= goal else "MISSED"
            out.append(f"| {res['workload']} {r['codec']} gather | {r['vs_loaderx']:.2f}× | ≥ {goal}× | {met} |")
            met = "met" if r["write_vs_loaderx"] >= 1.0 else "MISSED"
            out.append(f"| {res['workload']} {r['codec']} write | {r['write_vs_loaderx']:.2f}× | ≥ 1× | {met} |")
    out.append("")
    out.append(f"Machine: {meta['machine']}; load average at start {meta['load']}; "
               f"zrecord {meta['zrecord']}, numpy {meta['numpy']}, Python {meta['python']}.")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small data, short timings (a smoke run)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the record counts")
    ap.add_argument("--min-s", type=float, default=None, help="least gather seconds per row (default 2)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds per row")
    ap.add_argument("--single-writes", dest="write_pairs", action="store_false",
                    help="time each write once (default: twice, in ABBA order, best of two)")
    ap.add_argument("--check", type=int, default=16, help="batches checked against the source")
    ap.add_argument("--only", action="append", choices=[*TARGETS, "mixture"], help="run only this workload")
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--md", help="write the tables as Markdown here")
    args = ap.parse_args()
    if args.quick:
        counts = {"dense-tokens": 3000, "ragged-tokens": 3000, "dense-vision": 40}
        args.write_pairs = False
        args.min_s = args.min_s or 0.2
        args.rounds = args.rounds or 2
        args.check = min(args.check, 4)
    else:
        counts = {"dense-tokens": 50_000, "ragged-tokens": 100_000, "dense-vision": 1000}
        args.min_s = args.min_s or 2.0
        args.rounds = args.rounds or 4
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "zrecord": zrecord.__version__, "numpy": np.__version__, "python": platform.python_version(),
        "quick": args.quick, "min_s": args.min_s, "rounds": args.rounds,
    }
    work_root = tempfile.mkdtemp(prefix="zrecord-pybench-")
    try:
        results = [run_workload(name, max(BATCH, int(n * args.scale)) if not args.quick else n, args, work_root)
                   for name, n in counts.items() if not args.only or name in args.only]
        mixed = []
        if not args.only or "mixture" in args.only:
            n = counts["dense-tokens"] if args.quick else max(BATCH, int(counts["dense-tokens"] * args.scale))
            tokens = zipf_tokens(np.random.default_rng(7), n * 512).reshape(n, 512)
            mixed = mixture.run(tokens, Path(work_root), ["raw", "zstd"], args.min_s, args.rounds)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    text = markdown(results, meta) if results else ""
    if mixed:
        text += "\n" + mixture.markdown(mixed)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "results": results, "mixture": mixed}, indent=1) + "\n")


if __name__ == "__main__":
    main()
