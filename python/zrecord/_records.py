"""``Dense`` and ``Ragged``: loaderx 2.0.1's record containers on zrecord's engine.

The argument checks, error types and result shapes are loaderx's (its
``loaderx/zrecord.py``, MIT licensed); reading, writing and decoding are
zrecord's Rust library (``zrecord._native``), which releases the GIL for every
gather and append and hands each gathered batch to NumPy without a copy.

Beyond loaderx: ``open`` also takes ``http://`` and ``https://`` URLs;
``gather(indices, out=None)`` fills a caller's array; ``Ragged.gather(...,
packed=True)`` returns ``(values, offsets, shapes)`` with no Python object per
record; a reader pickles as "open this path again" (for spawned workers); a
store opened before ``os.fork()`` reads in the child.
"""

import math
import operator
import os
from pathlib import Path

import numpy as np

from . import _native
from ._errors import ZrecordError, ZrecordSchemaError
from ._progress import reporter

__all__ = ["Dense", "Ragged", "ZrecordError", "DICT_TIERS"]

MAX_RECORD_LEN = 1 << 31
_NUMPY_MAX_NDIMS = 64 if int(np.__version__.split(".", 1)[0]) >= 2 else 32
_MAX_UINT64 = np.iinfo(np.uint64).max
_MAX_INTP = np.iinfo(np.intp).max
_U8 = np.dtype(np.uint8)
# Dense batches this big go to recycled Rust buffers (smaller ones: np.empty,
# which NumPy's heap serves without zeroing).
_POOLED = 4 << 20

# Dictionary sizing presets, loaderx's, from the Rust core's tiers
# (zrecord::training::dict::Tier): a tier names both the dictionary's size and how many
# bytes of records train it.
#
#   "fast"     a small dictionary and a small training sample.
#   "balanced" the default.
#   "max"      the largest dictionary and the fullest training sample.
DICT_TIERS = _native.dict_tiers()


def _is_url(path):
    """Whether ``path`` is a store URL, by the core's scheme table (an unknown
    ``scheme://`` raises ``ValueError``)."""
    return isinstance(path, str) and _native.store_url(path) is not None


def _validate_dtype(dtype):
    if dtype.fields is not None:
        raise ValueError("structured dtypes are not supported")
    if dtype.subdtype is not None:
        raise ValueError(
            "subarray dtypes are not supported; put dimensions in the shape"
        )
    if dtype.metadata is not None:
        raise ValueError("dtype metadata is not supported")
    if dtype.hasobject:
        raise ValueError("object dtypes cannot be persisted")
    return dtype


def _validate_shape(value):
    try:
        dimensions = tuple(value)
    except TypeError:
        raise ValueError("item_shape must be an iterable of integers") from None
    shape = []
    for dimension in dimensions:
        if isinstance(dimension, (bool, np.bool_)):
            raise ValueError("item_shape dimensions must be integers")
        try:
            dimension = operator.index(dimension)
        except TypeError:
            raise ValueError("item_shape dimensions must be integers") from None
        if dimension < 0:
            raise ValueError("item_shape dimensions must be non-negative")
        shape.append(dimension)
    if len(shape) >= _NUMPY_MAX_NDIMS:
        raise ValueError(
            f"item_shape rank must be below NumPy's {_NUMPY_MAX_NDIMS}-dimension limit"
        )
    return tuple(shape)


def _words_as(words, nbytes, dtype, shape):
    """View the first ``nbytes`` of a gathered buffer (a ``uint64`` array over
    the Rust allocation, which NumPy now owns) as ``dtype`` in ``shape``."""
    return words.view(_U8)[:nbytes].view(dtype).reshape(shape)


def _explain_schema(message, dense):
    """Add loaderx's words for a schema it would also reject."""
    expected = ["dtype", "item_shape"] if dense else ["dtype"]
    if "field" in message:
        return f"{message} (invalid {'dense' if dense else 'ragged'} schema fields, expected {expected})"
    if "integer `-" in message:
        return f"{message} (item_shape dimensions must be non-negative)"
    return message


_UNITS = {"": 0, "b": 0, "k": 10, "kib": 10, "kb": 10, "m": 20, "mib": 20, "mb": 20,
          "g": 30, "gib": 30, "gb": 30, "t": 40, "tib": 40, "tb": 40}


def _size(value):
    """Bytes from an int or a string such as ``"512MiB"`` (powers of 1024), or None."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        digits = len(text) - len(text.lstrip("0123456789."))
        unit = text[digits:].strip().lower()
        if not digits or unit not in _UNITS:
            raise ValueError(f"{value!r}: not a size (e.g. 512MiB, 20GiB)")
        value = int(float(text[:digits]) * (1 << _UNITS[unit]))
    value = int(value)
    if value < 0:
        raise ValueError(f"a size cannot be negative: {value}")
    return value


class _Base:
    """Typed schema and lifecycle common to both geometries."""

    def __init__(self, *args, **kwargs):
        raise TypeError(
            f"use {type(self).__name__}.open(...) or {type(self).__name__}.create(...)"
        )

    def _open(self, path, dense, verify=False, backend="mmap", cache=None, cache_limit=None,
              cold_reads="auto"):
        self._writable = False
        self._verify = bool(verify)
        if backend not in ("mmap", "pread"):
            raise ValueError(f"unknown backend {backend!r} (expected 'mmap' or 'pread')")
        if cold_reads not in ("auto", "buffered", "direct"):
            raise ValueError(f"unknown cold_reads {cold_reads!r} (expected 'auto', 'buffered' or 'direct')")
        self._backend = backend
        self._cold_reads = cold_reads
        self._cache = None if cache is None else os.fsdecode(os.fspath(cache))
        self._cache_limit = _size(cache_limit)
        self.path = path if _is_url(path) else Path(path)
        name = path if _is_url(path) else os.fsdecode(os.fspath(path))
        try:
            store = _native.NativeStore.open(name, verify, backend, self._cache, self._cache_limit, cold_reads)
        except ZrecordSchemaError as exc:
            raise ZrecordSchemaError(exc.code, _explain_schema(str(exc), dense)) from None
        except FileNotFoundError as exc:
            # A store directory with a file missing is a damaged store.
            if not _is_url(path) and os.path.isdir(name):
                raise ZrecordError(-8, str(exc)) from None
            raise
        self._adopt(store, dense)

    def _adopt(self, store, dense):
        """Read through ``store`` (a ``NativeStore``: a store or a dataset's
        column), checking that it is of this geometry."""
        self._writable = False
        kind = "dense" if dense else "ragged"
        if store.kind != kind:
            expected = ["dtype", "item_shape"] if dense else ["dtype"]
            other = "Ragged" if dense else "Dense"
            raise ZrecordSchemaError(
                -8,
                f"{store.name}: invalid {kind} schema fields, expected {expected}: "
                f"this is a {store.kind} store (open it with {other}.open)",
            )
        self.dtype = _validate_dtype(np.dtype(store.dtype))
        if dense:
            self.item_shape = _validate_shape(store.item_shape)
            self._row_bytes = math.prod(self.item_shape) * self.dtype.itemsize
            if self._row_bytes <= 0 or self._row_bytes > MAX_RECORD_LEN:
                raise ZrecordSchemaError(
                    -8, f"{store.name}: invalid dense record width {self._row_bytes} in schema"
                )
        self.codec = store.codec
        self._store = store

    def _create(self, path, dense, dtype, item_shape, codec, dict_bytes, overwrite=False,
                progress=None):
        self._progress = progress
        if _is_url(path):
            raise ValueError(f"{path}: stores are created on the local file system, not at a URL")
        self.path = Path(path)
        self._check_create(dense, dtype, item_shape, codec, dict_bytes)
        self._store = _native.NativeWriter.create(
            os.fsdecode(os.fspath(path)),
            self.dtype.str,
            list(self.item_shape) if dense else None,
            codec,
            None if dict_bytes is None else bytes(dict_bytes),
            bool(overwrite),
        )

    def _check_create(self, dense, dtype, item_shape, codec, dict_bytes):
        """Check a new store's schema and codec (``_store`` is set after)."""
        self._writable = True
        self._store = None
        self.dtype = _validate_dtype(np.dtype(dtype))
        self.codec = codec
        if not isinstance(codec, str) or codec not in ("raw", "zstd", "zstd_dict"):
            raise ValueError(
                f"unknown codec {codec!r}, expected one of ['raw', 'zstd', 'zstd_dict']"
            )
        if self.codec == "zstd_dict" and not dict_bytes:
            raise ValueError(
                "creating a zstd_dict store requires non-empty dict_bytes from train_dict"
            )
        if self.codec != "zstd_dict" and dict_bytes is not None:
            raise ValueError("dict_bytes requires codec='zstd_dict'")
        if dense:
            self.item_shape = _validate_shape(item_shape)
            self._row_bytes = math.prod(self.item_shape) * self.dtype.itemsize
            if self._row_bytes <= 0 or self._row_bytes > MAX_RECORD_LEN:
                raise ValueError(
                    f"dense record width {self._row_bytes} is outside the native limit"
                )

    def __len__(self):
        return len(self._require_store())

    def _reported(self, append, count, progress):
        """Run ``append(report)`` with the reporter ``progress`` (or the
        create call's) asks for over ``count`` records; ``report`` is None
        when nobody listens."""
        progress = getattr(self, "_progress", None) if progress is None else progress
        if progress is None or progress is False:
            return append(None)
        rep = reporter(progress, count, f"{os.path.basename(str(self.path))}: append")
        try:
            return append(rep.update)
        finally:
            rep.close()

    def _require_store(self, writable=None):
        store = getattr(self, "_store", None)
        if store is None:
            raise RuntimeError("Container is closed")
        if writable is not None and self._writable != writable:
            operation = "append" if writable else "read"
            source = "create" if writable else "open"
            raise RuntimeError(f"{operation} requires a container returned by {source}()")
        return store

    def _idxs(self, idx):
        """``idx`` as flat ``uint64`` record numbers, and the shape the batch
        takes (an index array's own shape: ``(a, b)`` gives ``(a, b, ...)``).
        Negative numbers count from the end, as in NumPy."""
        length = len(self._store)
        if isinstance(idx, (bool, np.bool_)):
            raise TypeError("a boolean scalar is not a record index or mask")
        if isinstance(idx, slice):
            idxs = np.arange(*idx.indices(length), dtype=np.uint64)
            return idxs, idxs.shape
        if isinstance(idx, (int, np.integer)):
            i = int(idx)
            if not -length <= i < length:
                raise IndexError(
                    f"record index {i} out of range for container of length {length}")
            return np.array([i % length], dtype=np.uint64), (1,)
        idxs = np.asarray(idx)
        if idxs.dtype == np.bool_:
            if idxs.ndim != 1 or idxs.size != length:
                raise IndexError(
                    f"boolean mask must be one-dimensional with length {length}"
                )
            idxs = np.flatnonzero(idxs).astype(np.uint64)
            return idxs, idxs.shape
        if idxs.dtype == object and idxs.size and all(
                isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))
                for i in idxs.flat):
            # Python ints beyond int64/uint64 (2**70): out of range, as NumPy says.
            raise IndexError(f"record index out of range for container of length {length}")
        if idxs.size and not np.issubdtype(idxs.dtype, np.integer):
            raise TypeError("indices must be integers or a bool mask")
        shape = idxs.shape if idxs.ndim else (1,)
        if idxs.size and idxs.dtype.kind == "i" and idxs.min() < 0:
            if idxs.min() < -length:
                raise IndexError(
                    f"record index {int(idxs.min())} out of range for container of length {length}")
            idxs = np.where(idxs < 0, idxs + length, idxs)
        idxs = np.ascontiguousarray(idxs, dtype=np.uint64).reshape(-1)
        if idxs.size and idxs.max() >= length:
            raise IndexError(
                f"record index {int(idxs.max())} out of range for container of length {length}")
        return idxs, shape

    def __getitem__(self, idx):
        """One record for an integer index (negative counts from the end); a
        batch for a slice, a sequence, an integer array (of any shape: the
        batch takes it) or a boolean mask (``ds[0, 5, 2]`` too)."""
        self._require_store(False)
        idxs, shape = self._idxs(idx)
        values = self._shaped(self._gather(idxs), shape)
        return values[0] if isinstance(idx, (int, np.integer)) else values

    def __getitems__(self, idxs):
        """The records at ``idxs`` as one batch (the batched form
        ``torch.utils.data`` calls when a dataset has it)."""
        self._require_store(False)
        idxs, shape = self._idxs(idxs)
        return self._shaped(self._gather(idxs), shape)

    def has_dict(self):
        """True if the store has a zstd dictionary installed."""
        return self.codec == "zstd_dict"

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()

    def close(self):
        """Publish a created store (its records become visible to readers),
        or release an opened one. Idempotent."""
        store = getattr(self, "_store", None)
        if store is None:
            return
        self._store = None
        if self._writable:
            store.close()

    def __reduce__(self):
        if self._writable or getattr(self, "_store", None) is None:
            raise TypeError(f"only an open {type(self).__name__} reader can be pickled")
        reopen = getattr(self, "_reopen", None)
        if reopen is not None:
            return reopen  # a dataset's column (see _dataset.py)
        path = self.path if isinstance(self.path, str) else os.fspath(self.path)
        # Every option of open() travels with it (a spawned worker checks too).
        return (type(self).open, (path, getattr(self, "_verify", False), getattr(self, "_backend", "mmap"),
                                  getattr(self, "_cache", None), getattr(self, "_cache_limit", None),
                                  getattr(self, "_cold_reads", "auto")))

    def __repr__(self):
        store = getattr(self, "_store", None)
        state = "closed" if store is None else ("writer" if self._writable else "reader")
        parts = [repr(str(getattr(self, "path", "?"))), state]
        if store is not None and not self._writable:
            parts.append(f"{len(store)} records")
        if hasattr(self, "dtype"):
            parts.append(f"dtype={self.dtype}")
        parts.append(self._geometry_repr(store))
        parts.append(f"codec={getattr(self, 'codec', None)!r}")
        if getattr(self, "_verify", False):
            parts.append("verify=True")
        if getattr(self, "_backend", "mmap") != "mmap":
            parts.append(f"backend={self._backend!r}")
        if getattr(self, "_cold_reads", "auto") != "auto":
            parts.append(f"cold_reads={self._cold_reads!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


class Dense(_Base):
    """Fixed-shape records: one ``(batch, *item_shape)`` array per gather.

    ``ds[i]`` is one record of shape ``item_shape``; ``ds[indices]`` a
    ``(len(indices), *item_shape)`` array which owns its memory (the buffer
    the Rust reader filled, not a copy). Append takes one ``(batch,
    *item_shape)`` array of the store's dtype.

    >>> with Dense.create(path, np.uint8, (3, 32, 32)) as w:   # doctest: +SKIP
    ...     w.append(images)
    >>> ds = Dense.open(path)                                  # doctest: +SKIP
    >>> ds[[9, 0, 9]].shape                                    # doctest: +SKIP
    (3, 3, 32, 32)
    """

    @classmethod
    def open(cls, path, verify=False, backend="mmap", cache=None, cache_limit=None, cold_reads="auto"):
        """Open an existing dense container for reading: a directory, or an
        ``http(s)://`` (any server that answers Range requests), ``s3://``,
        ``gs://`` or ``az://`` URL of one. With ``verify=True`` every record
        read is checked against the store's checksum sidecar (``sums.zr``,
        see ``zrecord seal``): a record whose bytes changed raises
        ``ZrecordError``, and an unsealed store does not open. ``backend``
        (a local store): ``"mmap"`` (the default: zero-copy while records are
        in memory, cold batches read with pread) or ``"pread"`` (no map, for
        file systems where mapping is unwelcome). ``cache`` (a remote store):
        a directory that every process of the machine shares, where blocks
        of the store are fetched once and then read from disk; it holds at
        most ``cache_limit`` bytes (an int, or a string such as ``"20GiB"``;
        docs/CACHE.md). ``cold_reads`` (a local store, the mmap backend): how
        batches found out of memory are read, ``"buffered"`` (through the
        page cache), ``"direct"`` (``O_DIRECT``, past it) or ``"auto"`` (the
        default: direct for a store more than 8 times the memory the process
        can fill with page cache)."""
        self = cls.__new__(cls)
        self._open(path, True, verify, backend, cache, cache_limit, cold_reads)
        return self

    @classmethod
    def create(cls, path, dtype, item_shape, codec="zstd", dict_bytes=None, *, overwrite=False,
               progress=None):
        """Create a new append-only dense container with an explicit schema.

        ``codec`` is ``"raw"``, ``"zstd"`` (default) or ``"zstd_dict"`` (then
        ``dict_bytes`` from :func:`train_dict` is required). With
        ``overwrite=True`` a store already at ``path`` is replaced: an
        unpublished build a killed writer left, or a published store (never
        a directory holding other files, nor a store that is open).

        ``progress`` reports every append's records as they are written:
        ``True`` (a tqdm bar when tqdm is installed, otherwise plain lines on
        stderr) or a callable ``progress(done, total, what)``."""
        self = cls.__new__(cls)
        self._create(path, True, dtype, item_shape, codec, dict_bytes, overwrite, progress)
        return self

    def _prepare_dense(self, batch):
        if not isinstance(batch, np.ndarray):
            raise TypeError("dense append requires a numpy array")
        if batch.ndim == 0:
            batch = batch.reshape(1)
        if batch.dtype != self.dtype:
            raise ValueError(
                f"dense append dtype {batch.dtype} != store dtype {self.dtype}"
            )
        if batch.ndim != len(self.item_shape) + 1 or batch.shape[1:] != self.item_shape:
            raise ValueError(
                f"dense append shape {batch.shape} != (batch, *{self.item_shape})"
            )
        if len(batch) == 0:
            raise ValueError("append needs at least one record")
        return np.ascontiguousarray(batch)

    def append(self, records, *, progress=None):
        """Append one ``(batch, *item_shape)`` array; returns when it is
        written (published by ``close``). The rows are copied out of the array
        while the GIL is held (256 MiB at a time, 32 MiB when reporting
        ``progress``, as for :meth:`create`), then written without it: what
        is stored is the array as it was when its rows were copied, even if
        another thread writes to it meanwhile."""
        store = self._require_store(True)
        src = self._prepare_dense(records)
        flat = src.reshape(-1).view(_U8)
        self._reported(lambda report: store.append_dense(flat, report), len(src), progress)

    @property
    def shape(self):
        """``(len(self), *item_shape)``, as the array ``self[:]`` would have."""
        return (len(self._require_store()), *self.item_shape)

    def __array__(self, dtype=None, copy=None):
        """The whole store as one array, in one gather (``np.asarray(ds)`` is
        ``ds[:]``, never a Python loop over records)."""
        if copy is False:
            raise ValueError("a store's records cannot be viewed without a copy")
        values = self[:]
        return values if dtype is None else values.astype(dtype, copy=False)

    def _geometry_repr(self, store):
        if store is not None and not self._writable:
            return f"shape={self.shape}"
        return f"item_shape={getattr(self, 'item_shape', None)}"

    def _shaped(self, values, shape):
        """A flat batch in the index's shape (a view, no copy)."""
        return values if len(shape) == 1 else values.reshape(*shape, *self.item_shape)

    def _gather(self, idxs):
        shape = (idxs.size, *self.item_shape)
        if idxs.size * self._row_bytes >= _POOLED:
            # Big batches: into a recycled Rust buffer whose pages are already
            # resident (no page faults, no kernel zeroing); the array owns it.
            return self._store.gather_dense_pooled(idxs)
        # NumPy allocates (uninitialised) and the Rust reader decodes straight
        # into it: no copy, and the array owns its memory.
        values = np.empty(shape, dtype=self.dtype)
        self._store.gather_dense_into(idxs, values.reshape(-1).view(_U8))
        return values

    def gather(self, indices, out=None):
        """Gather the records at ``indices`` (any order, repeats allowed).

        With ``out`` (a C-contiguous, writable array of the store's dtype and
        shape ``(len(indices), *item_shape)``), fill it and return it: no
        allocation per call. Without, return a new array (as ``ds[indices]``).
        """
        self._require_store(False)
        idxs, shape = self._idxs(indices)
        if out is None:
            return self._shaped(self._gather(idxs), shape)
        if not isinstance(out, np.ndarray):
            raise TypeError("out must be a numpy array")
        want = (*shape, *self.item_shape)
        if out.dtype != self.dtype or out.shape != want:
            raise ValueError(
                f"out is {out.dtype} {out.shape}, the gather needs {self.dtype} {want}"
            )
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("out must be C-contiguous and writable")
        self._store.gather_dense_into(idxs, out.reshape(-1).view(_U8))
        return out


class Ragged(_Base):
    """Variable-shape records: a gather returns a list of arrays, each with
    the shape it was written with: writable views of the one buffer the Rust
    reader wrote each record into (no copy; recycled for a later gather once
    none of them is alive).

    ``gather(indices, packed=True)`` returns ``(values, offsets, shapes)``
    instead, with no Python object per record. Append takes an iterable of
    arrays of the store's dtype; empty records are rejected (the format
    stores only non-empty records).
    """

    @classmethod
    def open(cls, path, verify=False, backend="mmap", cache=None, cache_limit=None, cold_reads="auto"):
        """Open an existing ragged container for reading: a directory, or an
        ``http(s)://``, ``s3://``, ``gs://`` or ``az://`` URL of one;
        ``verify``, ``backend``, ``cache``, ``cache_limit`` and ``cold_reads`` as for
        :meth:`Dense.open`."""
        self = cls.__new__(cls)
        self._open(path, False, verify, backend, cache, cache_limit, cold_reads)
        return self

    @classmethod
    def create(cls, path, dtype, codec="zstd", dict_bytes=None, *, overwrite=False,
               progress=None):
        """Create a new append-only ragged container with an explicit dtype;
        ``codec``, ``dict_bytes``, ``overwrite`` and ``progress`` as for
        :meth:`Dense.create`."""
        self = cls.__new__(cls)
        self._create(path, False, dtype, None, codec, dict_bytes, overwrite, progress)
        return self

    def append(self, records, *, progress=None):
        """Check every record (a non-empty array of the store's dtype), then
        append them all; returns when they are written. The payloads are
        copied out of the arrays while the GIL is held (256 MiB at a time),
        then written without it: each record is stored as it was at one
        moment, even if another thread writes to it meanwhile. ``progress``
        as for :meth:`Dense.create`."""
        store = self._require_store(True)
        if not isinstance(records, list):
            records = list(records)
        self._reported(lambda report: store.append_ragged(records, self.dtype, report),
                       len(records), progress)

    def _geometry_repr(self, store):
        return "ragged"

    def _shaped(self, records, shape):
        """A flat list of records nested as the index's shape (lists of
        lists; a zero-size dimension gives empty lists, as NumPy does)."""
        def nest(at, dims):
            if len(dims) == 1:
                return records[at:at + dims[0]]
            step = math.prod(dims[1:])
            return [nest(at + k * step, dims[1:]) for k in range(dims[0])]
        return records if len(shape) == 1 else nest(0, shape)

    def _gather(self, idxs):
        return self._store.gather_ragged(idxs, False)

    def gather(self, indices, packed=False):
        """Gather the records at ``indices``: a list of arrays (as
        ``ds[indices]``), or with ``packed=True`` a tuple ``(values, offsets,
        shapes)`` — ``values`` every record's items back to back (1-D, the
        store's dtype), ``offsets`` int64 ``(n + 1,)`` so record ``i`` is
        ``values[offsets[i]:offsets[i + 1]]``, and ``shapes`` int64 ``(n,
        max_rank)``, each row a record's shape padded with -1."""
        self._require_store(False)
        idxs, shape = self._idxs(indices)
        if not packed:
            return self._shaped(self._gather(idxs), shape)
        if len(shape) != 1:
            raise ValueError(f"a packed gather takes a one-dimensional index, not shape {shape}")
        return self._store.gather_ragged(idxs, True)
