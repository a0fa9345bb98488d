"""Datasets: named columns over many shards, each (shard, column) an ordinary
store, made visible all at once by a commit (see ``docs/FORMAT.md``,
"Datasets").

Workers write shards apart (``write_shard``, anywhere, any number at once)
and hand the small, picklable ``ShardInfo`` each returns to one process that
``commit``\\ s them; until then a shard is invisible. ``write_dataset`` does
both in one process. ``open_dataset`` reads one version; each column is a
``Dense`` or ``Ragged`` reader, so everything that takes a store (gathers,
``DataLoader``, torch) takes a column, and ``DataLoader(ds)`` takes them all.
"""

import json
import os
import shutil
import tempfile
from collections.abc import Mapping

import numpy as np

from . import _arrow, _native
from ._records import Dense, Ragged, _is_url, _size

__all__ = ["Dataset", "ShardInfo", "commit", "open_dataset", "write_dataset", "write_shard"]


class ShardInfo:
    """A written shard, not yet committed: its path in the dataset, its
    length and its columns. Small and picklable: return it from a worker and
    pass it to ``commit``."""

    def __init__(self, text):
        meta = json.loads(text)
        self.json = text
        self.path = meta["path"]
        self.length = meta["length"]
        self.columns = [c["name"] for c in meta["columns"]]

    def __reduce__(self):
        return (ShardInfo, (self.json,))

    def __eq__(self, other):
        return isinstance(other, ShardInfo) and other.json == self.json

    def __hash__(self):
        return hash(self.json)

    def __repr__(self):
        return f"ShardInfo({self.path!r}, length={self.length}, columns={self.columns})"


def _target(uri):
    """The dataset's location as the core takes it: a URL, or a path."""
    return uri if _is_url(uri) else os.fsdecode(os.fspath(uri))


def _columns(data):
    """``data``'s columns as ``(name, reader class, values, length)``, checked
    before anything is written: a dict of NumPy arrays (Dense, first axis the
    records) or lists of arrays (Ragged), all of one length."""
    if not isinstance(data, Mapping) or not data:
        raise TypeError("a shard's data is a non-empty dict of column name -> array or list of arrays")
    columns = []
    for name, values in data.items():
        if not isinstance(name, str):
            raise TypeError(f"column names are strings, not {name!r}")
        if isinstance(values, np.ndarray):
            if values.ndim == 0:
                raise ValueError(f"column {name!r}: a Dense column needs a first axis of records")
            columns.append((name, Dense, values, len(values)))
        elif isinstance(values, (list, tuple)):
            columns.append((name, Ragged, list(values), len(values)))
        else:
            raise TypeError(
                f"column {name!r}: a NumPy array (Dense) or a list of arrays (Ragged), "
                f"not {type(values).__name__}")
    lengths = {name: n for name, _, _, n in columns}
    if len(set(lengths.values())) > 1:
        each = ", ".join(f"{name}: {n}" for name, n in lengths.items())
        raise ValueError(f"columns of one shard must hold as many records each ({each})")
    if not columns[0][3]:
        raise ValueError("a shard needs at least one record")
    return columns


def _write_local(root, columns, codec, codecs, dictionaries, arrow):
    """Write ``columns`` as one shard in the local directory ``root``."""
    dictionaries = dict(dictionaries or {})
    unknown = set(dictionaries) - {name for name, *_ in columns}
    if unknown:
        raise ValueError(f"dictionaries name columns the shard does not have: {sorted(unknown)}")
    writers = []
    for name, cls, values, _ in columns:
        w = cls.__new__(cls)
        dtype = values.dtype if cls is Dense else (values[0].dtype if
                                                   isinstance(values[0], np.ndarray) else None)
        if dtype is None:
            raise TypeError(f"column {name!r}: ragged records must be numpy arrays")
        item_shape = values.shape[1:] if cls is Dense else None
        dict_bytes = dictionaries.get(name)
        column_codec = "zstd_dict" if dict_bytes is not None else (codecs or {}).get(name, codec)
        w._check_create(cls is Dense, dtype, item_shape, column_codec, dict_bytes)
        writers.append((name, w, values))
    spec = [(name, w.dtype.str, list(w.item_shape) if isinstance(w, Dense) else None, w.codec,
             None if dictionaries.get(name) is None else bytes(dictionaries[name]))
            for name, w, _ in writers]
    shard = _native.NativeShardWriter.create(root, spec)
    for name, w, values in writers:
        w.path = os.path.join(root, shard.path, name)
        w._store = shard.column(name)
        w.append(values)
    return ShardInfo(shard.finish(arrow))


def _data(data, ragged=None):
    """``(columns, arrow types)`` of one shard's data: a dict as it is, or
    Arrow data (a ``RecordBatchReader`` read whole) through the type
    mapping; the columns named in ``ragged`` as Ragged records, whatever
    their shapes."""
    parts = _arrow.tables(data)
    types = {}
    if parts is not None:
        import pyarrow as pa
        parts = list(parts)
        # (A reader of no batches: its schema, for an empty table.)
        table = parts[0] if len(parts) == 1 else pa.Table.from_batches(parts, getattr(data, "schema", None))
        data, types = _arrow.columns(table)
    if isinstance(ragged, str):   # one name, not its letters
        ragged = [ragged]
    if ragged:
        data = dict(data) if isinstance(data, Mapping) else data
        for name in ragged:
            if not isinstance(data, Mapping) or name not in data:
                raise ValueError(f"ragged names column {name!r}, which the data does not have")
            if isinstance(data[name], np.ndarray):
                data[name] = list(data[name])
                types.pop(name, None)
    return _columns(data), types


def write_shard(uri, data, *, codec="zstd", codecs=None, dictionaries=None, ragged=None):
    """Write ``data`` (a dict of column name -> NumPy array for a Dense
    column, first axis the records, or list of arrays for a Ragged one; or a
    ``pyarrow.Table``, ``RecordBatch``, ``RecordBatchReader`` or Hugging Face
    ``datasets.Dataset``, mapped as ``docs/ARROW_RAY.md`` says) as one new shard of the dataset at ``uri`` (a directory, or an ``s3://``,
    ``gs://`` or ``az://`` prefix), and return its ``ShardInfo``. The shard is
    invisible until ``commit`` names it. ``codec`` is every column's codec
    (``"raw"`` or ``"zstd"``), ``codecs`` a dict overriding it per column.
    ``dictionaries`` maps a column to a dictionary from ``train_dict``: that
    column is ``zstd_dict``, and shards given the same bytes share them (the
    manifest names the dictionary once; a shard with another dictionary
    still commits, and then each shard of that column reads with its own).
    ``ragged`` names columns written as Ragged even when every record of
    this shard has one shape (images of many sizes, in parts of one size).

    Columns of unequal length raise ``ValueError`` before anything is
    written. A bucket shard is written to a local temporary directory, then
    uploaded; a shard that never gets committed is removed by ``zrecord
    dataset gc``.
    """
    columns, arrow = _data(data, ragged)
    if not _is_url(uri):
        return _write_local(_target(uri), columns, codec, codecs, dictionaries, arrow)
    staging = tempfile.mkdtemp(prefix="zrecord-shard-")
    try:
        info = _write_local(staging, columns, codec, codecs, dictionaries, arrow)
        _native.upload_shard(staging, info.json, uri)
        return info
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def commit(uri, shard_infos, *, mode="create"):
    """Commit ``shard_infos`` (from ``write_shard``) as the next version of
    the dataset at ``uri``, and return that version's number.

    ``mode``: ``"create"`` (the first version; raises if the dataset
    exists), ``"append"`` (the newest version's shards, then these; retried
    when another commit wins the race) or ``"overwrite"`` (only these; older
    versions stay readable by number). A shard whose columns differ from the
    dataset's raises ``ZrecordError`` naming the shard and the column; a
    lost race (create, overwrite) raises ``ZrecordError``: open the new
    version and commit again.
    """
    infos = list(shard_infos)
    if not all(isinstance(i, ShardInfo) for i in infos):
        raise TypeError("commit takes the ShardInfo objects write_shard returned")
    if mode not in ("create", "append", "overwrite"):
        raise ValueError(f"unknown commit mode {mode!r} (create, append or overwrite)")
    return _native.commit(_target(uri), [i.json for i in infos], mode)


def gc(uri, older_than, *, dry_run=False):
    """Remove the shards of the dataset at ``uri`` (a directory or bucket
    prefix) that no committed version names and that were created more than
    ``older_than`` seconds ago (a crashed or retried writer's; pick an age
    longer than any write takes), and return their paths. ``dry_run`` only
    lists them. Raises ``ZrecordError`` when ``uri`` holds no dataset."""
    return _native.gc(_target(uri), float(older_than), bool(dry_run))


def _rows_per_shard(value):
    """``value`` as an ``int`` (``None`` stays), or ``ValueError``: a count
    below 1 would write no shard of a part, its rows lost without a word."""
    if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
        raise ValueError(f"rows_per_shard must be a positive integer, not {value!r}")
    return None if value is None else int(value)


def write_dataset(uri, data, *, codec="zstd", rows_per_shard=None, mode="create", codecs=None,
                  dictionaries=None, ragged=None):
    """Write ``data`` as shards of the dataset at ``uri`` and commit them once
    (``mode`` as for ``commit``); return the dataset opened at that version.

    ``data`` is a dict of column name -> NumPy array or list of arrays (as for
    ``write_shard``), a ``pyarrow.Table`` or ``RecordBatch``, a Hugging Face
    ``datasets.Dataset``, or an iterable of these (a ``RecordBatchReader``
    is its batches); each part is one or more shards. ``rows_per_shard``
    cuts each part into shards of at most that many records (default: one
    shard per part). ``codec``, ``codecs``, ``dictionaries`` and ``ragged``
    as for ``write_shard``. Arrow columns map to zrecord columns as
    ``docs/ARROW_RAY.md`` says; ``Dataset.to_arrow`` gives them back.
    """
    rows_per_shard = _rows_per_shard(rows_per_shard)
    parts = [data] if isinstance(data, Mapping) else _arrow.tables(data) or data
    infos = []
    for given in parts:
        # An Arrow part is its tables or batches (a RecordBatchReader among
        # the parts, its batches); an empty one writes no shard.
        tables = _arrow.tables(given)
        arrow = tables is not None
        for part in tables if arrow else [given]:
            n = part.num_rows if arrow else _columns(part)[0][3]
            step = rows_per_shard or max(n, 1)
            for start in range(0, n, step):
                rows = (part.slice(start, step) if arrow else
                        {k: v[start:start + step] for k, v in part.items()})
                infos.append(write_shard(uri, rows, codec=codec, codecs=codecs,
                                         dictionaries=dictionaries, ragged=ragged))
    version = commit(uri, infos, mode=mode)
    return open_dataset(uri, version=version)


def open_dataset(uri, version=None, verify=False, cache=None, cache_limit=None, cold_reads="auto"):
    """Open version ``version`` (default: the newest) of the dataset at
    ``uri`` (a directory, or an ``http(s)://``, ``s3://``, ``gs://`` or
    ``az://`` prefix); ``verify``, ``cache``, ``cache_limit`` and
    ``cold_reads`` as for ``Dense.open`` (a local dataset's column chooses
    ``"auto"``'s way by its total size, not each shard's)."""
    return Dataset._open(uri, version, verify, cache, cache_limit, cold_reads)


def _open_column(uri, version, verify, name, cache=None, cache_limit=None, cold_reads="auto"):
    """Column ``name`` of ``uri``'s version ``version`` (a pickled column)."""
    return open_dataset(uri, version, verify, cache, cache_limit, cold_reads)[name]


class Dataset:
    """One committed version of a dataset: ``len(ds)`` records in named
    columns.

    ``ds["image"]`` is that column's ``Dense`` or ``Ragged`` reader over
    every shard (``ds["image"][indices]``, ``.gather(indices, out=...)``,
    ``.gather(indices, packed=True)``), ``ds[i]`` / ``ds[indices]`` a dict of
    every column's record(s) (torch's map-style dataset, with
    ``__getitems__``), ``ds.gather(indices)`` the same for chosen columns.
    As a mapping of its columns, ``DataLoader(ds)`` loads them all. It
    pickles as "open this version again", and survives ``os.fork()``.
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("use zrecord.open_dataset(...)")

    @classmethod
    def _open(cls, uri, version, verify, cache=None, cache_limit=None, cold_reads="auto"):
        if cold_reads not in ("auto", "buffered", "direct"):
            raise ValueError(f"unknown cold_reads {cold_reads!r} (expected 'auto', 'buffered' or 'direct')")
        self = cls.__new__(cls)
        self.uri = uri if _is_url(uri) else os.fsdecode(os.fspath(uri))
        self._cache = None if cache is None else os.fsdecode(os.fspath(cache))
        self._cache_limit = _size(cache_limit)
        self._cold_reads = cold_reads
        self._native = _native.NativeDataset.open(_target(uri), version, bool(verify), self._cache,
                                                  self._cache_limit, cold_reads)
        self._verify = bool(verify)
        self._columns = {}
        for name in self._native.columns:
            store = self._native.column(name)
            reader_cls = Dense if store.kind == "dense" else Ragged
            reader = reader_cls.__new__(reader_cls)
            reader.path = f"{self.uri}[{name!r}]"
            reader._adopt(store, reader_cls is Dense)
            reader._reopen = (_open_column, (self.uri, self.version, self._verify, name, self._cache,
                                             self._cache_limit, cold_reads))
            self._columns[name] = reader
        return self

    @property
    def version(self):
        """The committed version read."""
        return self._native.version

    @property
    def columns(self):
        """The column names, in order."""
        return list(self._columns)

    @property
    def shards(self):
        """Each shard's ``(path, length)``, path relative to the dataset, in order."""
        return self._native.shards

    def shard_of(self, index):
        """``(shard, start)``: the shard (its position in ``shards``) holding
        record ``index``, and that shard's first record's global index."""
        found = self._native.shard_of(int(index)) if int(index) >= 0 else None
        if found is None:
            raise IndexError(f"record index {index} out of range for a dataset of length {len(self)}")
        return found

    def __len__(self):
        return len(self._native)

    def keys(self):
        """The column names (so ``dict(ds)`` and ``DataLoader(ds)`` take every column)."""
        return self._columns.keys()

    def values(self):
        """The columns' readers, in order."""
        return self._columns.values()

    def items(self):
        """``(name, reader)`` for every column, in order."""
        return self._columns.items()

    def __iter__(self):
        return iter(self._columns)

    def __contains__(self, name):
        return name in self._columns

    def _column(self, name):
        try:
            return self._columns[name]
        except KeyError:
            raise KeyError(f"no column {name!r} (the dataset has {self.columns})") from None

    def __getitem__(self, key):
        """``ds["name"]``: a column's reader; otherwise (an index, a slice, a
        sequence or array of indices) a dict of every column's record(s)."""
        if isinstance(key, str):
            return self._column(key)
        return {name: col[key] for name, col in self._columns.items()}

    def __getitems__(self, idxs):
        """Every column's batch at ``idxs`` (torch's batched fetch)."""
        return {name: col.__getitems__(idxs) for name, col in self._columns.items()}

    def gather(self, indices, columns=None):
        """``{column: batch}`` for the records at ``indices``, every column or
        those named in ``columns``."""
        names = self.columns if columns is None else list(columns)
        return {name: self._column(name).gather(indices) for name in names}

    def to_arrow(self, indices=None, columns=None):
        """The records at ``indices`` (default: every one, in order) as a
        ``pyarrow.Table`` of ``columns`` (default: all), each column of the
        Arrow type it was written from (``docs/ARROW_RAY.md`` has the
        mapping, and the types given to columns written from NumPy). The
        values are the gathers' buffers, not copied."""
        return _arrow.to_arrow(self, indices, columns)

    def __reduce__(self):
        return (open_dataset, (self.uri, self.version, self._verify, self._cache, self._cache_limit,
                               self._cold_reads))

    def __repr__(self):
        return (f"Dataset({self.uri!r}, version={self.version}, {len(self)} records, "
                f"columns={self.columns}, {len(self.shards)} shards)")
