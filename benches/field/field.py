#!/usr/bin/env python3
"""The whole field in one run: zrecord's Python package beside loaderx 2.0.1,
NumPy .npy mmap, LMDB, Arrow IPC, Parquet, HDF5, ArrayRecord, TileDB and Lance.

    bash benches/field/run.sh                 # full run (sets up its venv first)
    bash benches/field/run.sh --quick         # smoke run (the test suite's)
    bash benches/field/run.sh --json out.json --md out.md --workloads dense-tokens

Every system runs in this one interpreter, so every one pays the same Python
and NumPy costs, and gets:

* the same records: loaderx's own image generator (``make_vision_records``
  and ``variable_vision_shapes`` from its sdist's ``scripts/_bench_common.py``,
  run unchanged), 2 KiB int32 token blocks and Ragged sequences of 16..512
  Zipf-distributed token ids (``benches/python/bench.py``'s generators);
* the same IID index batches of 256, drawn by zrecord's sampler (checked
  against loaderx's own sampler);
* its natural codec set: raw, and zstd where the store has one (HDF5 has
  gzip, not zstd, in h5py; LMDB and NumPy have no codec);
* writes timed from the first append through finalize (close, commit);
  dictionary training and schema set-up are untimed; a write under
  ``SHORT_WRITE_S`` is timed five times (best of five; page-cache write-back
  makes any one of them up to 10x slower), as ``benches/python/bench.py`` does;
* before timing, a warm sweep (every record read once, page cache warm) and
  every batch that will be timed checked against the source records;
* gathers timed in ``--rounds`` interleaved rounds (each row once per round,
  so load on the machine hits all rows alike), at least ``--secs`` seconds per
  row in all; ratios (``vs loaderx``, ``vs numpy``, ``vs_best_peer``) are the
  median of per-round ratios of records/s.

Physical limits, measured in the same run on the same data: ``memcpy`` (one
thread copying each batch's logical bytes, times the cores) for raw rows, and
``libzstd`` (one thread decoding the timed batches' frames of the zrecord
store itself, read from its ``data.zr``, through libzstd in C with no Python
per frame, times the cores) for zstd and zstd_dict rows. zrecord's rows get a
``% of limit`` column.

``--cold`` (dense workloads by default, stores of a few hundred MiB a
system: ``COLD``) adds cold rounds after the warm ones: before each, every
row's store is closed, its files evicted from the page cache and reopened;
every row reads records of its own that no round has read (``cold_rounds``
says why), each batch checked against the source. It adds the rows
``zrecord-pread`` (raw, zstd): the Python package with ``backend="pread"``,
on stores of their own. Beside them, the Rust CLI (``zrecord bench --cold
--backend pread``) on a copy of zrecord's store gives the device's own
limit: ``O_DIRECT`` random reads of one record at queue depths 1..64.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import zrecord
from zrecord import Sampler, train_dict

REPO = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("HOME", "/root"))
BATCH = 256
CORES = os.cpu_count() or 1
# Writes shorter than this (seconds) are timed five times, the best kept.
SHORT_WRITE_S = 0.5

sys.path.insert(0, str(REPO / "benches" / "python"))
sys.path.insert(0, str(REPO / "benches" / "field"))
from bench import token_lengths, zipf_tokens  # noqa: E402  (the Python bench's token generators)
from cold import evict  # noqa: E402  (posix_fadvise(DONTNEED) on every file of a store)
from vision import dense_images, ragged_images  # noqa: E402  (loaderx's own image generator)

WORKLOADS = ["dense-vision", "ragged-vision", "dense-tokens", "ragged-tokens"]
FULL = {"dense-vision": 1000, "ragged-vision": 1000, "dense-tokens": 100_000, "ragged-tokens": 100_000}
QUICK = {"dense-vision": 48, "ragged-vision": 48, "dense-tokens": 4096, "ragged-tokens": 4096}
# --cold: stores big enough that a round's fresh batches miss every cache
# (220 MiB of images, 195 MiB of token blocks raw, per system; under 3 GB
# on disk for the whole field of one workload).
COLD = {"dense-vision": 1536, "ragged-vision": 1536, "dense-tokens": 100_000, "ragged-tokens": 100_000}


class Workload:
    def __init__(self, name, n, seed):
        self.name, self.n = name, n
        self.dense = name.startswith("dense")
        rng = np.random.default_rng(seed)
        if name == "dense-vision":
            self.array = dense_images(n, seed)
        elif name == "ragged-vision":
            # loaderx's bench_ragged.py defaults: lognormal H, W in 64..512, median 224.
            self.records = ragged_images(n, seed)
        elif name == "dense-tokens":
            self.array = zipf_tokens(rng, n * 512).reshape(n, 512)
        else:
            lengths = token_lengths(rng, n)
            payload = zipf_tokens(rng, int(lengths.sum()))
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            self.records = [payload[offsets[i]:offsets[i + 1]] for i in range(n)]
        if self.dense:
            self.records = list(self.array)
        self.dtype = self.records[0].dtype
        self.record_bytes = np.array([r.nbytes for r in self.records], dtype=np.int64)
        self.logical = int(self.record_bytes.sum())

    def source(self):
        return self.array if self.dense else self.records

    def same(self, got, batch):
        if self.dense:
            want = self.array[batch]
            return (isinstance(got, np.ndarray) and got.shape == want.shape and got.dtype == want.dtype
                    and np.array_equal(got, want))
        return len(got) == len(batch) and all(
            isinstance(g, np.ndarray) and g.dtype == self.dtype and g.shape == self.records[i].shape
            and np.array_equal(g, self.records[i]) for g, i in zip(got, batch))

    def describe(self):
        kib = self.record_bytes / 1024
        return (f"{self.n} records, {self.logical / 2**20:.1f} MiB logical, record KiB: "
                f"p10 {np.percentile(kib, 10):.1f}, median {np.median(kib):.1f}, p90 {np.percentile(kib, 90):.1f}")


# Byte records for stores without shapes (loaderx's bench_ragged.py encoding):
# rank u32, shape u64 x rank, payload.
def encode_record(r):
    return struct.pack("<I", r.ndim) + np.asarray(r.shape, "<u8").tobytes() + r.tobytes()


def decode_record(blob, dtype):
    rank = struct.unpack_from("<I", blob)[0]
    shape = tuple(np.frombuffer(blob, "<u8", rank, 4).tolist())
    return np.frombuffer(blob, dtype, offset=4 + 8 * rank).reshape(shape).copy()


def dir_bytes(path):
    if os.path.isdir(path):
        return sum(dir_bytes(os.path.join(path, f)) for f in os.listdir(path))
    return os.stat(path).st_blocks * 512


# ---------------------------------------------------------------- backends
#
# write(path, w) is the timed region (first append through finalize);
# prepare(w) runs before it, untimed. gather(idxs) returns what a user gets:
# an ndarray (Dense) or a list of ndarrays (Ragged).


class Backend:
    system = ""
    codec = "raw"

    def prepare(self, w):
        pass

    def close(self):
        pass


class Zrecord(Backend):
    """zrecord's Python package (and loaderx 2.0.1, whose API it is)."""

    system = "zrecord"

    def __init__(self, codec):
        self.codec = codec
        self.dict_bytes = None

    def module(self):
        return zrecord

    def prepare(self, w):
        if self.codec == "zstd_dict":
            self.dict_bytes = (train_dict if self.system == "zrecord" else self.module().train_dict)(w.source())

    def write(self, path, w):
        m = self.module()
        if w.dense:
            ds = m.Dense.create(path, w.dtype, w.array.shape[1:], codec=self.codec, dict_bytes=self.dict_bytes)
        else:
            ds = m.Ragged.create(path, w.dtype, codec=self.codec, dict_bytes=self.dict_bytes)
        src = w.source()
        step = max(1, (32 << 20) // int(w.record_bytes.mean()))
        for s in range(0, w.n, step):
            ds.append(src[s:s + step])
        ds.close()

    def open(self, path, w):
        m = self.module()
        self.ds = (m.Dense if w.dense else m.Ragged).open(path)

    def gather(self, idxs):
        return self.ds.__getitems__(idxs)

    def close(self):
        self.ds.close()


class ZrecordPread(Zrecord):
    """zrecord with the pread backend (--cold only): no map, every record
    read by a system call, the page cache then holding what was read."""

    system = "zrecord-pread"

    def open(self, path, w):
        self.ds = (zrecord.Dense if w.dense else zrecord.Ragged).open(path, backend="pread")


class Loaderx(Zrecord):
    system = "loaderx-2.0.1"

    def module(self):
        import loaderx.utils
        import loaderx.zrecord

        class M:
            Dense, Ragged, train_dict = loaderx.zrecord.Dense, loaderx.zrecord.Ragged, loaderx.utils.train_dict
        return M


class NpyMmap(Backend):
    """The honest baseline: uncompressed .npy through the page cache (Ragged:
    one flat payload .npy and an offsets .npy, sliced per record)."""

    system = "numpy-mmap"

    def write(self, path, w):
        os.makedirs(path)
        if w.dense:
            a = np.lib.format.open_memmap(os.path.join(path, "data.npy"), "w+", w.dtype, w.array.shape)
            a[:] = w.array
            del a
        else:
            flat = np.concatenate([r.reshape(-1) for r in w.records])
            np.save(os.path.join(path, "payload.npy"), flat)
            np.save(os.path.join(path, "offsets.npy"), np.concatenate([[0], np.cumsum([r.size for r in w.records])]))
            np.save(os.path.join(path, "shapes.npy"), np.array([r.shape for r in w.records], dtype=np.int64))

    def open(self, path, w):
        self.dense = w.dense
        if w.dense:
            self.a = np.load(os.path.join(path, "data.npy"), mmap_mode="r")
        else:
            self.a = np.load(os.path.join(path, "payload.npy"), mmap_mode="r")
            self.off = np.load(os.path.join(path, "offsets.npy")).tolist()
            self.shapes = [tuple(s) for s in np.load(os.path.join(path, "shapes.npy")).tolist()]

    def close(self):
        del self.a  # unmaps: --cold cannot evict pages a live map holds

    def gather(self, idxs):
        if self.dense:
            return self.a[idxs]
        a, off, sh = self.a, self.off, self.shapes
        return [np.array(a[off[i]:off[i + 1]]).reshape(sh[i]) for i in idxs.tolist()]


class Lmdb(Backend):
    system = "lmdb"

    @staticmethod
    def key(i):
        return int(i).to_bytes(8, "big")

    def write(self, path, w):
        import lmdb

        env = lmdb.open(path, map_size=max(w.logical * 4, 64 << 20), subdir=True, sync=False, metasync=False)
        with env.begin(write=True) as txn:
            for i, r in enumerate(w.records):
                txn.put(self.key(i), r.tobytes() if w.dense else encode_record(r))
        env.close()

    def open(self, path, w):
        import lmdb

        self.env = lmdb.open(path, readonly=True, lock=False, subdir=True)
        self.w = w

    def gather(self, idxs):
        w = self.w
        with self.env.begin(buffers=True) as txn:
            if w.dense:
                out = np.empty((len(idxs), *w.array.shape[1:]), w.dtype)
                flat = out.reshape(len(idxs), -1).view(np.uint8)
                for k, i in enumerate(idxs.tolist()):
                    flat[k] = np.frombuffer(txn.get(self.key(i)), np.uint8)
                return out
            return [decode_record(txn.get(self.key(i)), w.dtype) for i in idxs.tolist()]

    def close(self):
        self.env.close()


class _Grouped(Backend):
    """Arrow IPC and Parquet: one binary column (fixed_size_binary for Dense),
    record batches / row groups of 256 rows (loaderx's harness), gathers take
    within each group touched."""

    group = 256

    def __init__(self, codec):
        self.codec = codec

    def values(self, w, s, e):
        import pyarrow as pa

        if w.dense:
            return pa.array([r.tobytes() for r in w.records[s:e]], type=pa.binary(w.records[0].nbytes))
        return pa.array([encode_record(r) for r in w.records[s:e]], type=pa.large_binary())

    def gather(self, idxs):
        import pyarrow as pa

        w = self.w
        groups = {}
        for pos, i in enumerate(idxs.tolist()):
            groups.setdefault(i // self.group, []).append((pos, i))
        if w.dense:
            out = np.empty((len(idxs), *w.array.shape[1:]), w.dtype)
            flat = out.reshape(len(idxs), -1).view(np.uint8)
        else:
            out = [None] * len(idxs)
        for g, entries in groups.items():
            col = self.group_column(g)
            taken = col.take(pa.array([i - g * self.group for _, i in entries], type=pa.int64()))
            if w.dense:
                # fixed_size_binary: one contiguous buffer for the whole take.
                buf = np.frombuffer(taken.buffers()[1], np.uint8)[taken.offset * flat.shape[1]:]
                flat[[p for p, _ in entries]] = buf[: len(entries) * flat.shape[1]].reshape(len(entries), -1)
            else:
                for (p, _), v in zip(entries, taken):
                    out[p] = decode_record(v.as_buffer(), w.dtype)
        return out


class ArrowIpc(_Grouped):
    system = "arrow-ipc"

    def write(self, path, w):
        import pyarrow as pa

        os.makedirs(path)
        typ = pa.binary(w.records[0].nbytes) if w.dense else pa.large_binary()
        schema = pa.schema([("record", typ)])
        comp = pa.Codec("zstd", compression_level=3) if self.codec == "zstd" else None
        with pa.OSFile(os.path.join(path, "data.arrow"), "wb") as sink:
            with pa.ipc.new_file(sink, schema, options=pa.ipc.IpcWriteOptions(compression=comp)) as wr:
                for s in range(0, w.n, self.group):
                    wr.write_batch(pa.record_batch([self.values(w, s, s + self.group)], names=["record"]))

    def open(self, path, w):
        import pyarrow as pa

        self.w = w
        self.src = pa.memory_map(os.path.join(path, "data.arrow"), "r")
        self.reader = pa.ipc.open_file(self.src)

    def group_column(self, g):
        return self.reader.get_batch(g).column(0)

    def close(self):
        self.reader = None
        self.src.close()


class Parquet(_Grouped):
    system = "parquet"

    def write(self, path, w):
        import pyarrow as pa
        import pyarrow.parquet as pq

        os.makedirs(path)
        typ = pa.binary(w.records[0].nbytes) if w.dense else pa.large_binary()
        comp = "zstd" if self.codec == "zstd" else "NONE"
        with pq.ParquetWriter(os.path.join(path, "data.parquet"), pa.schema([("record", typ)]), compression=comp,
                              compression_level=3 if self.codec == "zstd" else None, use_dictionary=False,
                              write_statistics=False) as wr:
            for s in range(0, w.n, self.group):
                wr.write_table(pa.table({"record": self.values(w, s, s + self.group)}))

    def open(self, path, w):
        import pyarrow.parquet as pq

        self.w = w
        self.file = pq.ParquetFile(os.path.join(path, "data.parquet"), memory_map=True)

    def group_column(self, g):
        return self.file.read_row_group(g, columns=["record"]).column(0).combine_chunks()

    def close(self):
        self.file.close()


class Hdf5(Backend):
    """Dense: one chunk per record, read_direct per record (h5py's fancy
    selection is far slower: loaderx's harness notes ~48x). Ragged: flat
    bytes in 1 MiB chunks plus an offsets dataset (loaderx's harness).
    h5py has gzip built in, not zstd."""

    system = "hdf5"

    def __init__(self, codec):
        self.codec = codec

    def write(self, path, w):
        import h5py

        os.makedirs(path)
        comp = dict(compression="gzip", compression_opts=4) if self.codec == "gzip" else {}
        with h5py.File(os.path.join(path, "data.h5"), "w") as f:
            if w.dense:
                d = f.create_dataset("data", w.array.shape, w.dtype, chunks=(1, *w.array.shape[1:]), **comp)
                d[:] = w.array
            else:
                blobs = [encode_record(r) for r in w.records]
                offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs])]).astype(np.uint64)
                d = f.create_dataset("records", (int(offsets[-1]),), np.uint8,
                                     chunks=(min(1 << 20, int(offsets[-1])),), **comp)
                d[:] = np.frombuffer(b"".join(blobs), np.uint8)
                f.create_dataset("offsets", data=offsets)

    def open(self, path, w):
        import h5py

        self.w = w
        # A 64 MiB chunk cache (h5py's rdcc_nbytes; the default 1 MiB holds
        # one 1 MiB Ragged chunk at most, so every record re-inflated its chunk).
        self.f = h5py.File(os.path.join(path, "data.h5"), "r", rdcc_nbytes=64 << 20, rdcc_nslots=100_003)
        if w.dense:
            self.d = self.f["data"]
        else:
            self.d = self.f["records"]
            self.off = self.f["offsets"][:].tolist()

    def gather(self, idxs):
        w = self.w
        if w.dense:
            out = np.empty((len(idxs), *w.array.shape[1:]), w.dtype)
            for k, i in enumerate(idxs.tolist()):
                self.d.read_direct(out, np.s_[i], np.s_[k])
            return out
        return [decode_record(self.d[self.off[i]:self.off[i + 1]].tobytes(), w.dtype) for i in idxs.tolist()]

    def close(self):
        self.f.close()


class ArrayRecord(Backend):
    """group_size:1, the random-access setting (loaderx's harness)."""

    system = "arrayrecord"

    def __init__(self, codec):
        self.codec = codec

    def write(self, path, w):
        from array_record.python.array_record_module import ArrayRecordWriter

        os.makedirs(path)
        wr = ArrayRecordWriter(os.path.join(path, "data.array_record"),
                               "group_size:1," + ("zstd:3" if self.codec == "zstd" else "uncompressed"))
        for r in w.records:
            wr.write(r.tobytes() if w.dense else encode_record(r))
        wr.close()

    def open(self, path, w):
        from array_record.python.array_record_module import ArrayRecordReader

        self.w = w
        self.r = ArrayRecordReader(os.path.join(path, "data.array_record"))

    def gather(self, idxs):
        w = self.w
        blobs = self.r.read(idxs.tolist())
        if w.dense:
            out = np.empty((len(idxs), *w.array.shape[1:]), w.dtype)
            flat = out.reshape(len(idxs), -1).view(np.uint8)
            for k, b in enumerate(blobs):
                flat[k] = np.frombuffer(b, np.uint8)
            return out
        return [decode_record(b, w.dtype) for b in blobs]

    def close(self):
        self.r.close()


class TileDB(Backend):
    """Dense: a dense array tiled one record per tile (loaderx's harness).
    Ragged: a sparse 1-D array with one var-sized uint8 attribute."""

    system = "tiledb"

    def __init__(self, codec):
        self.codec = codec

    def write(self, path, w):
        import tiledb

        filters = tiledb.FilterList([tiledb.ZstdFilter(level=3) if self.codec == "zstd" else tiledb.NoOpFilter()])
        if w.dense:
            dims = [tiledb.Dim(name=f"d{i}", domain=(0, s - 1), tile=1 if i == 0 else s, dtype=np.int64)
                    for i, s in enumerate(w.array.shape)]
            schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=False,
                                        attrs=[tiledb.Attr(name="data", dtype=w.dtype, filters=filters)])
            tiledb.DenseArray.create(path, schema)
            with tiledb.DenseArray(path, mode="w") as a:
                a[:] = {"data": w.array}
        else:
            dom = tiledb.Domain(tiledb.Dim(name="row", domain=(0, w.n - 1), tile=min(w.n, 4096), dtype=np.int64))
            schema = tiledb.ArraySchema(domain=dom, sparse=True, allows_duplicates=False,
                                        attrs=[tiledb.Attr(name="record", dtype=np.uint8, var=True, filters=filters)],
                                        offsets_filters=filters)
            tiledb.Array.create(path, schema)
            vals = np.empty(w.n, dtype=object)
            vals[:] = [np.frombuffer(encode_record(r), np.uint8) for r in w.records]
            with tiledb.open(path, "w") as a:
                a[np.arange(w.n, dtype=np.int64)] = {"record": vals}

    def open(self, path, w):
        import tiledb

        self.w = w
        self.a = tiledb.open(path, "r")

    def gather(self, idxs):
        w = self.w
        if w.dense:
            # multi_index returns points in ascending order, once each: map back.
            uniq, inv = np.unique(idxs, return_inverse=True)
            got = self.a.multi_index[(uniq.tolist(),) + (slice(None),) * (w.array.ndim - 1)]["data"]
            return got[inv]
        uniq = sorted(set(idxs.tolist()))
        data = self.a.query(attrs=["record"], coords=True).multi_index[uniq]
        by_row = {int(r): v for r, v in zip(data["row"], data["record"])}
        return [decode_record(by_row[i].tobytes(), w.dtype) for i in idxs.tolist()]

    def close(self):
        self.a.close()


class Lance(Backend):
    """Lance's random-access layout: take() on one column, file format 2.1.
    raw: a fixed-size list of the record's dtype (Dense) or large_binary
    (Ragged, compression "none"). zstd: large_binary with the field metadata
    ``lance-encoding:compression=zstd`` (level 3). pylance 14.0.2 ignores that
    metadata on a fixed-size list (the store stays 1.00x), so compressed Dense
    records go in a binary column, which the brief allows and Lance compresses."""

    system = "lance"

    def __init__(self, codec):
        self.codec = codec

    def table(self, w, s, e):
        import pyarrow as pa

        if w.dense and self.codec == "raw":
            per = int(np.prod(w.array.shape[1:]))
            col = pa.FixedSizeListArray.from_arrays(pa.array(w.array[s:e].reshape(-1)), per)
            meta = None
        else:
            enc = (lambda r: r.tobytes()) if w.dense else encode_record
            col = pa.array([enc(r) for r in w.records[s:e]], type=pa.large_binary())
            meta = ({"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "3"}
                    if self.codec == "zstd" else {"lance-encoding:compression": "none"})
        return pa.table([col], schema=pa.schema([pa.field("record", col.type, metadata=meta)]))

    def write(self, path, w):
        import lance
        import pyarrow as pa

        step = 256
        first = self.table(w, 0, step)
        batches = (self.table(w, s, s + step).to_batches()[0] for s in range(0, w.n, step))
        reader = pa.RecordBatchReader.from_batches(first.schema, batches)
        lance.write_dataset(reader, path, data_storage_version="2.1", max_rows_per_file=1 << 30)

    def open(self, path, w):
        import lance

        self.w = w
        self.ds = lance.dataset(path)

    def gather(self, idxs):
        w = self.w
        t = self.ds.take(idxs, columns=["record"]).column(0).combine_chunks()
        if w.dense and self.codec == "raw":
            return t.flatten().to_numpy().reshape(len(idxs), *w.array.shape[1:])
        if w.dense:
            out = np.empty((len(idxs), *w.array.shape[1:]), w.dtype)
            flat = out.reshape(len(idxs), -1).view(np.uint8)
            offs = np.frombuffer(t.buffers()[1], np.int64)[t.offset:t.offset + len(t) + 1]
            vals = np.frombuffer(t.buffers()[2], np.uint8)
            for k in range(len(idxs)):
                flat[k] = vals[offs[k]:offs[k + 1]]
            return out
        return [decode_record(v.as_buffer(), w.dtype) for v in t]

    def close(self):
        del self.ds


def backends(workload, cold=False):
    zc = ["raw", "zstd", "zstd_dict"]
    rows = [Zrecord(c) for c in zc] + [ZrecordPread(c) for c in zc[:2] if cold] + [Loaderx(c) for c in zc]
    rows += [NpyMmap()]
    rows += [Lmdb()]
    rows += [cls(c) for cls in (ArrowIpc, Parquet, ArrayRecord, TileDB, Lance) for c in ("raw", "zstd")]
    rows += [Hdf5("raw"), Hdf5("gzip")]
    return rows


# ---------------------------------------------------------------- limits


def memcpy_limit(w, batches, secs):
    """records/s if a gather were one thread's memcpy of each batch's logical
    bytes, times the cores (the copy every raw row must at least do)."""
    nbytes = [int(w.record_bytes[b].sum()) for b in batches]
    src = np.frombuffer(np.ascontiguousarray(w.array).data if w.dense else
                        np.concatenate([r.reshape(-1) for r in w.records]).data, np.uint8)
    if len(src) < 2 * max(nbytes):  # small (--quick) stores: copy from a repeated source
        src = np.resize(src, 2 * max(nbytes))
    dst = np.empty(max(nbytes), np.uint8)
    np.copyto(dst, src[: len(dst)])  # fault the pages in, untimed
    total_b = total_s = recs = 0
    k = 0
    while total_s < secs:
        nb = nbytes[k % len(nbytes)]
        at = (k * 7919 * 4096) % max(1, len(src) - nb)
        t0 = time.perf_counter()
        np.copyto(dst[:nb], src[at:at + nb])
        total_s += time.perf_counter() - t0
        total_b += nb
        recs += BATCH
        k += 1
    return recs / total_s * CORES


def zstd_limit(store, w, batches, secs, dict_bytes):
    """records/s of one thread of libzstd (the zstandard package's C loop,
    no Python per frame) decoding the frames of these batches straight from
    the zrecord store's data.zr, times the cores."""
    import zstandard

    meta = np.fromfile(os.path.join(store, "meta.zr"), np.uint8)
    locs = meta[4096:4096 + 16 * w.n].view([("off", "<u8"), ("phys", "<u4"), ("logic", "<u4")])
    data = np.memmap(os.path.join(store, "data.zr"), np.uint8, "r")
    d = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(dict_bytes) if dict_bytes else None)
    work = []
    for b in batches[: max(1, min(len(batches), 64))]:
        frames = [bytes(data[int(locs["off"][i]):int(locs["off"][i]) + int(locs["phys"][i])]) for i in b]
        work.append((frames, [int(locs["logic"][i]) for i in b]))
    # Check once that the frames are the records (Dense: exactly the bytes).
    if w.dense:
        got = d.multi_decompress_to_buffer(work[0][0], decompressed_sizes=struct.pack(
            f"<{len(work[0][1])}Q", *work[0][1]), threads=1)
        assert bytes(got[0]) == w.records[int(batches[0][0])].tobytes(), "zstd limit: frames are not the records"
    total_s = recs = 0
    k = 0
    while total_s < secs:
        frames, sizes = work[k % len(work)]
        packed = struct.pack(f"<{len(sizes)}Q", *sizes)
        t0 = time.perf_counter()
        d.multi_decompress_to_buffer(frames, decompressed_sizes=packed, threads=1)
        total_s += time.perf_counter() - t0
        recs += len(frames)
        k += 1
    return recs / total_s * CORES


# ---------------------------------------------------------------- driver


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class Row:
    def __init__(self, be):
        self.be = be
        self.system, self.codec = be.system, be.codec
        self.write_s = None
        self.disk = 0
        self.rounds = []  # (seconds, records, bytes) per round
        self.cold = []  # --cold: (seconds, records) per round
        self.lat = []
        self.cursor = 0
        self.nb = 0  # batches checked, and timed in turn
        self.error = None

    def rec_s(self, r=None):
        rs = self.rounds if r is None else [self.rounds[r]]
        return sum(x[1] for x in rs) / max(1e-12, sum(x[0] for x in rs))

    def mib_s(self):
        return sum(x[2] for x in self.rounds) / max(1e-12, sum(x[0] for x in self.rounds)) / 2**20


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def timed_write(be, path, w):
    """Seconds `be` takes to write `w` to `path`; a short write is timed
    again (to a copy deleted at once) until five, and the best is kept."""
    t0 = time.perf_counter()
    be.write(path, w)
    best = time.perf_counter() - t0
    if best < SHORT_WRITE_S:
        for k in range(4):
            again = f"{path}.again{k}"
            t0 = time.perf_counter()
            be.write(again, w)
            best = min(best, time.perf_counter() - t0)
            shutil.rmtree(again)
    return best


def run_workload(name, n, args, root):
    seed = 7
    print(f"\n== {name}: generating {n} records (load {load_average()})", file=sys.stderr, flush=True)
    w = Workload(name, n, seed)
    nb = max(16, min(1024, 8 * n // BATCH))
    s = Sampler(n, BATCH, Sampler.Mode.IID, seed)
    batches = [s.next().copy() for _ in range(nb)]
    from loaderx.zsampler import Sampler as LxSampler

    lx = LxSampler(n, BATCH, LxSampler.Mode.IID, seed)
    assert all(np.array_equal(np.asarray(lx.next()), b) for b in batches[:8]), "loaderx's sampler draws other batches"
    batches_ip = [b.astype(np.intp) for b in batches]
    rows = []
    for be in backends(w, args.cold):
        if args.systems and be.system not in args.systems:
            continue
        row = Row(be)
        path = os.path.join(root, f"{be.system}-{be.codec}")
        try:
            be.prepare(w)
            row.write_s = timed_write(be, path, w)
            row.disk = dir_bytes(path)
            be.open(path, w)
            # Warm sweep: every record once. Its rate sizes this row's batch set
            # (enough for --secs with a margin, at most all of them): every
            # batch the row will time is checked here, before any timing.
            t0 = time.perf_counter()
            for st in range(0, n, BATCH):
                be.gather(np.arange(st, min(n, st + BATCH), dtype=np.uint64))
            rate = n / max(1e-9, time.perf_counter() - t0)
            row.nb = int(min(nb, max(4, 1.5 * args.secs * rate / BATCH + 1)))
            for b, bi in zip(batches[: row.nb], batches_ip[: row.nb]):
                if not w.same(be.gather(b), bi):
                    raise AssertionError("values differ from the source records")
        except Exception as e:  # noqa: BLE001 — a failing peer keeps its row, with the reason
            row.error = f"{type(e).__name__}: {e}"
            print(f"   {be.system} {be.codec}: FAILED {row.error}", file=sys.stderr, flush=True)
        row.path = path
        rows.append(row)
        print(f"   {be.system:<14} {be.codec:<9} written in {row.write_s or 0:.2f} s, checked", file=sys.stderr,
              flush=True)
    live = [r for r in rows if r.error is None]
    per_round = args.secs / args.rounds
    for rnd in range(args.rounds):
        for r in live:
            secs = recs = byts = 0
            while secs < per_round:
                b = batches[r.cursor % r.nb]
                bi = batches_ip[r.cursor % r.nb]
                r.cursor += 1
                t0 = time.perf_counter()
                out = r.be.gather(b)
                dt = time.perf_counter() - t0
                del out
                secs += dt
                recs += len(b)
                byts += int(w.record_bytes[bi].sum())
                r.lat.append(dt)
            r.rounds.append((secs, recs, byts))
    # limits, on the same data and the timed batches
    limits = {"raw": memcpy_limit(w, batches_ip, min(1.0, args.secs / 2))}
    for codec in ("zstd", "zstd_dict"):
        zr = next((r for r in live if r.system == "zrecord" and r.codec == codec), None)
        if zr:
            limits[codec] = zstd_limit(zr.path, w, batches_ip, min(1.0, args.secs / 2), zr.be.dict_bytes)
    if args.cold:
        device = {codec: cli_cold(zr, w, args) for codec in ("raw", "zstd")
                  if (zr := next((r for r in live if r.system == "zrecord" and r.codec == codec), None))}
        cold_rounds(w, live, args)
        limits["device"] = device
    for r in rows:
        r.be.close() if r.error is None else None
    return w, rows, limits


def cold_rounds(w, live, args):
    """--cold: each round, each row's store is closed, evicted from the page
    cache and reopened, then gathers --cold-batches batches of its own: every
    row walks its own permutation of the records, so no record is read twice
    by a row (this VM's host caches its virtual disk: a re-read would come from
    the host's memory) and rows read their own files. The rows take turns
    going first; every batch is checked against the source, after its timing."""
    need = args.rounds * args.round_batches * BATCH
    for k, r in enumerate(live):
        rng = np.random.default_rng([29, k])
        order = np.concatenate([rng.permutation(w.n) for _ in range(-(-need // w.n))])[:need]
        r.cold_batches = order.reshape(args.rounds, args.round_batches, BATCH)
    for rnd in range(args.rounds):
        for r in live if rnd % 2 == 0 else live[::-1]:
            if r.error:
                continue
            r.be.close()
            evict(r.path)
            time.sleep(0.05)
            evict(r.path)  # pages a closed map's readahead was still bringing in
            r.be.open(r.path, w)
            secs = 0.0
            for bi in r.cold_batches[rnd]:
                b = bi.astype(np.uint64)
                t0 = time.perf_counter()
                out = r.be.gather(b)
                secs += time.perf_counter() - t0
                if not w.same(out, bi):
                    r.error = f"cold round {rnd}: values differ from the source records"
                    print(f"   {r.system} {r.codec}: FAILED {r.error}", file=sys.stderr, flush=True)
                    break
                del out
            r.cold.append((secs, args.round_batches * BATCH))


def zrecord_cli():
    """The zrecord CLI: $ZRECORD_BIN, on PATH, or this checkout's build."""
    built = [REPO / "target" / p / "zrecord" for p in ("release", "debug")]
    return (os.environ.get("ZRECORD_BIN") or shutil.which("zrecord")
            or next((str(b) for b in built if b.exists()), None))


def cli_cold(zr, w, args):
    """`zrecord bench --cold --backend pread` (the Rust CLI: Python cannot pick
    a backend) on a copy of zrecord's store, made before any cold round so its
    blocks are fresh: the pread backend's cold records/s (its own IID batches,
    seed + round, read in Rust and not checked here) and the device's limit on
    that file (O_DIRECT reads of its mean stored record, queue depths 1..64)."""
    exe = zrecord_cli()
    if not exe:
        print("   no zrecord CLI (ZRECORD_BIN, PATH, target/release): no device limit", file=sys.stderr)
        return None
    copy = zr.path + "-cli"
    shutil.copytree(zr.path, copy)
    try:
        cmd = [exe, "bench", copy, "--cold", "--backend", "pread", "--rounds", str(args.rounds),
               "--batches", str(args.round_batches), "--seed", "1000", "--device-secs", str(args.device_secs),
               "--json"]
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    finally:
        shutil.rmtree(copy)


def report(w, rows, limits, out_md, json_rows):
    device = limits.pop("device", None)
    live = [r for r in rows if r.error is None]

    def klass(r):
        return "raw" if r.codec == "raw" else "compressed"

    def find(system, codec):
        return next((r for r in live if r.system == system and r.codec == codec), None)

    def ratio(a, b):
        if a is None or b is None or a.error or b.error:
            return None
        return median([a.rec_s(i) / b.rec_s(i) for i in range(len(a.rounds))])

    def best_peer(r):
        peers = [p for p in live if not p.system.startswith("zrecord") and p is not r and klass(p) == klass(r)]
        return max(peers, key=lambda p: p.rec_s(), default=None)

    def fmt(v, d=1, suffix=""):
        return "–" if v is None else f"{v:,.{d}f}{suffix}"

    lines = [f"**{w.name}** — {w.describe()}", "",
             "| system | codec | write MiB/s | gather MiB/s | krecords/s | p95 ms | disk MiB | ratio | vs loaderx "
             "| vs numpy | write vs loaderx | vs best peer | % of limit |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    zr_order = {"zrecord": 0, "zrecord-pread": 1}
    for r in sorted(rows, key=lambda r: (klass(r) != "raw", -(r.rec_s() if r.rounds else 0))):
        if r.error:
            lines.append(f"| {r.system} | {r.codec} | – | failed: {r.error[:80]} | | | | | | | | | |")
            json_rows.append({"workload": w.name, "system": r.system, "codec": r.codec, "error": r.error})
            continue
        zr = r.system in zr_order
        lx = find("loaderx-2.0.1", r.codec)
        npm = find("numpy-mmap", "raw") if r.codec == "raw" and w.dense else None
        vs_lx = ratio(r, lx) if zr else None
        vs_np = ratio(r, npm) if zr else None
        write = w.logical / r.write_s / 2**20
        write_vs = lx.write_s / r.write_s if zr and lx else None
        bp = best_peer(r)
        vs_best = ratio(r, bp)
        lim = limits.get(r.codec if zr else "")
        pct = 100 * r.rec_s() / lim if lim else None
        lat = sorted(r.lat)
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))] * 1e3
        lines.append(
            f"| {r.system} | {r.codec} | {fmt(write)} | {fmt(r.mib_s())} | {fmt(r.rec_s() / 1e3)} | {p95:.3f} "
            f"| {r.disk / 2**20:.1f} | {w.logical / r.disk:.2f} | {fmt(vs_lx, 2, '×')} | {fmt(vs_np, 2, '×')} "
            f"| {fmt(write_vs, 2, '×')} | {fmt(vs_best, 2, '×')} | {fmt(pct, 0, '%')} |")
        json_rows.append({
            "workload": w.name, "system": r.system, "codec": r.codec, "write_mib_s": write,
            "gather_mib_s": r.mib_s(), "krecords_s": r.rec_s() / 1e3, "p95_ms": p95, "disk_bytes": r.disk,
            "ratio": w.logical / r.disk, "vs_loaderx": vs_lx, "vs_numpy": vs_np, "write_vs_loaderx": write_vs,
            "alloc_bytes_per_batch_median": None, "alloc_bytes_per_batch_mean": None,
            "batches_timed": len(r.lat), "distinct_batches_checked": r.nb, "vs_best_peer": vs_best, "best_peer": bp and f"{bp.system} {bp.codec}",
            "limit_krecords_s": lim and lim / 1e3, "pct_of_limit": pct,
        })
    lines.append("")
    lines.append("limits (krecords/s): " + ", ".join(
        f"{'memcpy' if k == 'raw' else 'libzstd ' + k} {v / 1e3:,.1f}" for k, v in limits.items())
        + f" ({CORES} cores)")
    text = "\n".join(lines) + "\n"
    print("\n" + text, flush=True)
    out_md.append(text)
    if device is not None:
        cold_report(w, rows, device, out_md, json_rows)
    return targets(w, rows, limits, find, ratio)


def cold_report(w, rows, device, out_md, json_rows):
    """--cold: each row's cold records/s (median of rounds) beside its warm
    one, against loaderx's cold rounds, and against the device's limit."""
    def per_round(r):
        return [n / max(1e-12, s) for s, n in r.cold]

    cold = {(r.system, r.codec): per_round(r) for r in rows if r.cold and r.error is None}
    for codec, cli in device.items():
        if cli:
            cold[("zrecord pread (CLI)", codec)] = [x["records_per_s"] for x in cli["per_round"]]

    def limit(codec):
        cli = device.get("raw" if codec == "raw" else "zstd")
        return cli and cli["device_limit"]["best"] and cli["device_limit"]["best"]["reads_per_s"]

    warm = {(r.system, r.codec): r.rec_s() for r in rows if r.error is None}
    lines = [f"**{w.name}, cold** — every round: store closed, its files evicted, reopened; "
             f"{len(next(iter(cold.values()), []))} rounds of fresh batches per row, each batch checked",
             "", "| system | codec | warm krecords/s | cold krecords/s | cold per round | cold / warm | cold vs loaderx "
             "| cold % of device |", "|---|---|---:|---:|---|---:|---:|---:|"]
    for (system, codec), rs in sorted(cold.items(), key=lambda kv: (kv[0][1] != "raw", -median(kv[1]))):
        lx = cold.get(("loaderx-2.0.1", codec))
        vs_lx = median([a / b for a, b in zip(rs, lx)]) if lx and system.startswith("zrecord") else None
        lim, wr = limit(codec), warm.get((system, codec))
        pct = 100 * median(rs) / lim if lim else None
        lines.append(f"| {system} | {codec} | {'–' if wr is None else f'{wr / 1e3:,.1f}'} | {median(rs) / 1e3:,.1f} "
                     f"| {', '.join(f'{x / 1e3:,.1f}' for x in rs)} | {'–' if wr is None else f'{median(rs) / wr:.2f}'} "
                     f"| {'–' if vs_lx is None else f'{vs_lx:.2f}×'} | {'–' if pct is None else f'{pct:.0f}%'} |")
        json_rows.append({"workload": w.name, "system": system, "codec": codec, "mode": "cold",
                          "warm_records_s": wr, "cold_records_s": median(rs), "cold_per_round": rs,
                          "cold_vs_loaderx": vs_lx, "pct_of_device": pct})
    lines.append("")
    for codec, cli in device.items():
        d = cli and cli["device_limit"]
        if not d or not d["best"]:
            lines.append(f"device ({codec}): not measured ({d and d['error'] or 'no zrecord CLI'})")
            continue
        rates = ", ".join(f"{x['depth']}: {x['reads_per_s']:,.0f}" for x in d["depths"])
        lines.append(f"device, O_DIRECT random reads of {d['read_bytes']:,} B (zrecord's {codec} data.zr, mean "
                     f"record {d['record_bytes']:,} B), reads/s by queue depth: {rates}; best "
                     f"{d['best']['reads_per_s']:,.0f} at depth {d['best']['depth']} ({d['best']['mib_per_s']:,.0f} MiB/s)")
        json_rows.append({"workload": w.name, "device_limit": d, "codec": codec})
    text = "\n".join(lines) + "\n"
    print("\n" + text, flush=True)
    out_md.append(text)


def targets(w, rows, limits, find, ratio):
    out = []
    live = [r for r in rows if r.error is None]
    for codec in ("raw", "zstd", "zstd_dict"):
        z = find("zrecord", codec)
        if not z:
            continue
        cls = [p for p in live if not p.system.startswith("zrecord") and (p.codec == "raw") == (codec == "raw")]
        if cls:
            best = max(cls, key=lambda p: p.rec_s())
            out.append((f"{w.name} {codec} gather vs best other {'raw' if codec == 'raw' else 'compressed'} store "
                        f"({best.system} {best.codec})", ratio(z, best), 1.0, "×"))
        if codec == "raw" and w.name in ("dense-tokens", "dense-vision"):
            out.append((f"{w.name} raw gather vs numpy-mmap", ratio(z, find("numpy-mmap", "raw")), 1.0, "×"))
        if codec != "raw" and codec in limits:
            out.append((f"{w.name} {codec} gather, % of libzstd × {CORES} cores", 100 * z.rec_s() / limits[codec],
                        80.0, "%"))
        lx = find("loaderx-2.0.1", codec)
        if lx:
            out.append((f"{w.name} {codec} write vs loaderx", lx.write_s / z.write_s, 1.0, "×"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: small data, 0.3 s per row")
    ap.add_argument("--secs", type=float, default=None, help="timed seconds per row (2)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workloads", default=None, help=f"comma list ({','.join(WORKLOADS)}; --cold: dense ones)")
    ap.add_argument("--cold", action="store_true", help="also time cold rounds: every store evicted and reopened")
    ap.add_argument("--cold-batches", type=int, default=None, help="batches per cold round (fresh records, up to 20)")
    ap.add_argument("--device-secs", type=float, default=None, help="--cold: seconds per queue depth (0.5)")
    ap.add_argument("--systems", default="", help="comma list (zrecord,loaderx-2.0.1,numpy-mmap,lmdb,...)")
    ap.add_argument("--scale", type=float, default=1.0, help="records x this (full run)")
    ap.add_argument("--json")
    ap.add_argument("--md")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    args.secs = args.secs or (0.3 if args.quick else 2.0)
    args.systems = set(filter(None, args.systems.split(",")))
    args.workloads = args.workloads or ",".join(w for w in WORKLOADS if w.startswith("dense") or not args.cold)
    args.device_secs = args.device_secs if args.device_secs is not None else (0.05 if args.quick else 0.5)
    sizes = QUICK if args.quick else {k: max(BATCH, int(v * args.scale)) for k, v in (COLD if args.cold else FULL).items()}
    head = (f"# The field: zrecord {getattr(zrecord, '__version__', '')} (Python) vs loaderx 2.0.1, NumPy mmap, "
            f"LMDB, Arrow IPC, Parquet, HDF5, ArrayRecord, TileDB, Lance — batches of {BATCH} (IID), "
            f"{args.secs} timed s per row in {args.rounds} rounds, {CORES} cores, load average at start "
            f"{load_average()}" + (" — and cold: every store evicted from the page cache before each round" if args.cold else ""))
    print(head, flush=True)
    md, json_rows, checks = [head + "\n"], [], []
    root = tempfile.mkdtemp(prefix="zrecord-field-", dir=args.workdir)
    try:
        for name in args.workloads.split(","):
            sub = os.path.join(root, name)
            os.makedirs(sub)
            n = sizes[name]
            args.round_batches = args.cold_batches or max(1, min(20, n // (BATCH * args.rounds)))
            w, rows, limits = run_workload(name, n, args, sub)
            checks += report(w, rows, limits, md, json_rows)
            shutil.rmtree(sub, ignore_errors=True)
            if args.json:
                Path(args.json).write_text(json.dumps(json_rows, indent=2))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = ["## Targets (records/s, median of per-round ratios)", "", "| target | measured | goal | |",
             "|---|---:|---:|---|"]
    for what, v, goal, unit in checks:
        ok = v is not None and v >= goal
        lines.append(f"| {what} | {'–' if v is None else f'{v:.2f}'}{unit} | ≥ {goal:g}{unit} | "
                     f"{'met' if ok else 'MISSED'} |")
    lines.append(f"\nload average at end {load_average()}")
    text = "\n".join(lines) + "\n"
    print("\n" + text, flush=True)
    md.append(text)
    if args.md:
        Path(args.md).write_text("\n".join(md))
    failed = [r for r in json_rows if "error" in r]
    if failed:
        print(f"{len(failed)} rows failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
