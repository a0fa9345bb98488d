#!/usr/bin/env python3
"""The Python side of `cargo bench --bench compare`: loaderx 2.0.1 and NumPy.

Started by benches/compare.rs (in the loaderx venv) once per workload, on a
work directory where the Rust side wrote the records and the index batches:

  data.npy              Dense: the records, shape (n, *item_shape)
  payload.npy           Ragged: every record's items, flat
  shapes.npy            Ragged: (n, rank) uint64 shapes
  batches.npy           (batches, 256) uint64 IID index batches from zrecord's sampler

It then answers one JSON command per stdin line with one JSON line on stdout:

  {"cmd": "write", "codec": C, "chunks": [[start, end], ...]}
      create loaderx-C/ with loaderx's public API, appending the same record
      ranges the Rust writer appended; the time runs from the first append
      through close() (train_dict runs before, timed apart)
  {"cmd": "prepare", "system": "loaderx"|"numpy", "codec": C, "check": K}
      open, read every record once (warm page cache), and compare the first
      K batches with the source records
  {"cmd": "sampler", "count": K}
      check that loaderx's own IID sampler yields the first K batches
  {"cmd": "gather", "system": S, "codec": C, "min_s": F[, "batch": B]}
      time consecutive batches (continuing where this row stopped last time;
      their first B indices when B is given) until they add up to F seconds;
      answers the per-batch seconds and the batch positions timed
  {"cmd": "cold", "system": S, "codec": C, "seed": N, "count": K}
      (--cold) close, evict from the page cache, reopen; time K batches of the
      IID sampler at seed N, checked after: {"secs": F, "records": R}
  {"cmd": "rss"}     this process's peak RSS (VmHWM; see peak_rss_bytes)
  {"cmd": "quit"}
"""

import argparse
import gc
import json
import os
import resource
import shutil
import sys
import time

import numpy as np

import loaderx
from loaderx.utils import train_dict
from loaderx.zrecord import Dense, Ragged
from loaderx.zsampler import Sampler
from timing import time_batches


def peak_rss_bytes():
    """This process's peak RSS. ru_maxrss of a child keeps the high-water mark
    its parent had at fork (Linux carries it across execve), so it would
    report the Rust bench's RSS; VmHWM belongs to this process's own memory."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def evict(path):
    """Drop `path` (a file, or every file under a directory) from the page
    cache: fdatasync, then posix_fadvise(DONTNEED); no root needed."""
    files = [path] if os.path.isfile(path) else [os.path.join(t, n) for t, _, ns in os.walk(path) for n in ns]
    for name in files:
        fd = os.open(name, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def disk_bytes(path):
    if os.path.isdir(path):
        return sum(disk_bytes(os.path.join(path, f)) for f in os.listdir(path))
    return os.stat(path).st_blocks * 512


class Peer:
    def __init__(self, work):
        self.work = work
        self.dense = os.path.exists(os.path.join(work, "data.npy"))
        if self.dense:
            self.array = np.load(os.path.join(work, "data.npy"))
            self.n = len(self.array)
            self.dtype = self.array.dtype
        else:
            payload = np.load(os.path.join(work, "payload.npy"))
            shapes = np.load(os.path.join(work, "shapes.npy"))
            offsets = np.zeros(len(shapes) + 1, dtype=np.int64)
            np.cumsum(np.prod(shapes, axis=1), out=offsets[1:])
            offsets = offsets.tolist()
            self.records = [payload[offsets[i]:offsets[i + 1]].reshape(tuple(int(d) for d in shapes[i]))
                            for i in range(len(shapes))]
            self.n = len(self.records)
            self.dtype = payload.dtype
        self.batches = np.load(os.path.join(work, "batches.npy"))
        self.batches_intp = self.batches.astype(np.intp)
        self.stores = {}
        self.cursors = {}

    def path(self, codec):
        return os.path.join(self.work, f"loaderx-{codec}")

    def source(self):
        return self.array if self.dense else self.records

    def write(self, codec, chunks):
        path = self.path(codec)
        shutil.rmtree(path, ignore_errors=True)
        train_s = None
        d = None
        if codec == "zstd_dict":
            t0 = time.perf_counter()
            d = train_dict(self.source())
            train_s = time.perf_counter() - t0
        if self.dense:
            ds = Dense.create(path, self.dtype, self.array.shape[1:], codec=codec, dict_bytes=d)
        else:
            ds = Ragged.create(path, self.dtype, codec=codec, dict_bytes=d)
        src = self.source()
        t0 = time.perf_counter()
        for start, end in chunks:
            ds.append(src[start:end])
        ds.close()
        write_s = time.perf_counter() - t0
        return {"write_s": write_s, "train_s": train_s, "disk_bytes": disk_bytes(path)}

    def expected(self, batch):
        if self.dense:
            return self.array[batch.astype(np.intp)]
        return [self.records[i] for i in batch]

    def same(self, got, batch):
        want = self.expected(batch)
        if self.dense:
            return got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)
        return len(got) == len(want) and all(
            g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w) for g, w in zip(got, want))

    def _open(self, system, codec):
        """(store, gather function, the batches' dtype for it)."""
        if system == "loaderx":
            store = (Dense if self.dense else Ragged).open(self.path(codec))
            return store, store.__getitem__, self.batches.dtype
        if system == "numpy":
            mm = np.load(os.path.join(self.work, "data.npy"), mmap_mode="r")
            return mm, mm.__getitem__, self.batches_intp.dtype
        raise ValueError(system)

    def prepare(self, system, codec, check):
        key = (system, codec)
        store, fn, dtype = self._open(system, codec)
        batches = self.batches if dtype == self.batches.dtype else self.batches_intp
        for start in range(0, self.n, 256):
            fn(np.arange(start, min(start + 256, self.n), dtype=dtype))
        for k in range(min(check, len(batches))):
            if not self.same(fn(batches[k]), self.batches[k]):
                raise AssertionError(f"{system}/{codec}: batch {k} differs from the source records")
        self.stores[key] = (store, fn, batches)
        self.cursors[key] = 0
        return {"checked": min(check, len(batches))}

    def cold(self, system, codec, seed, count):
        """--cold: close the store, evict its files from the page cache,
        reopen it, and time `count` batches of its own (the IID sampler at
        `seed`, as the Rust side draws them), each checked after its timing."""
        key = (system, codec)
        self.stores.pop(key, None)
        gc.collect()  # unmaps: pages a live map holds cannot be evicted
        evict(self.path(codec) if system == "loaderx" else os.path.join(self.work, "data.npy"))
        store, fn, dtype = self._open(system, codec)
        s = Sampler(self.n, 256, Sampler.Mode.IID, int(seed))
        batches = [np.asarray(s.next()).astype(np.uint64) for _ in range(count)]
        secs = 0.0
        for b in batches:
            t0 = time.perf_counter()
            out = fn(b.astype(dtype))
            secs += time.perf_counter() - t0
            del out
        for k, b in enumerate(batches):
            if not self.same(fn(b.astype(dtype)), b):
                raise AssertionError(f"{system}/{codec}: cold batch {k} differs from the source records")
        self.stores[key] = (store, fn, self.batches if dtype == self.batches.dtype else self.batches_intp)
        return {"secs": secs, "records": int(sum(len(b) for b in batches))}

    def sampler(self, count):
        s = Sampler(self.n, 256, Sampler.Mode.IID, int(self.seed))
        for k in range(min(count, len(self.batches))):
            if not np.array_equal(s.next(), self.batches[k]):
                raise AssertionError(f"loaderx's sampler differs from zrecord's at batch {k}")
        return {"checked": min(count, len(self.batches))}

    def gather(self, system, codec, min_s, batch=None):
        key = (system, codec)
        _, fn, batches = self.stores[key]
        cut = slice(None) if batch is None else slice(batch)
        lat, cursor = time_batches(fn, batches, self.cursors[key], min_s, cut)
        first = self.cursors[key]
        self.cursors[key] = cursor
        return {"lat": lat, "first": first, "count": cursor - first}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("serve", choices=["serve"])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--seed", type=int, required=True)
    args = ap.parse_args()
    if loaderx.__version__ != "2.0.1":
        raise SystemExit(f"loaderx {loaderx.__version__} found, 2.0.1 needed")
    peer = Peer(args.dir)
    peer.seed = args.seed
    out = sys.stdout
    print(json.dumps({"ready": True, "loaderx": loaderx.__version__, "numpy": np.__version__}), file=out,
          flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd.pop("cmd")
        try:
            if op == "quit":
                break
            if op == "rss":
                resp = {"maxrss_bytes": peak_rss_bytes()}
            else:
                resp = getattr(peer, op)(**cmd)
        except Exception as e:  # report, let the Rust side fail loudly
            resp = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(resp), file=out, flush=True)


if __name__ == "__main__":
    main()
