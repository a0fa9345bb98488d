"""Arrow in and out: the mapping between Arrow columns and zrecord columns
(``docs/ARROW_RAY.md``). pyarrow is imported only when Arrow data is given or
asked for; nothing here imports Ray or ``datasets``.

In: each Arrow column becomes a Dense array or a list of Ragged records,
NumPy views of the Arrow buffers where the layout allows (no copy); the
column's Arrow type goes to the manifest (``ColumnSpec::arrow``) so that
``to_arrow`` gives the same type back. Out: gathers, wrapped in Arrow arrays
without copying the values.
"""

import sys

import numpy as np

from ._errors import ZrecordTypeError
from ._records import Dense

# Ray Data's tensor extension types (ray.air.util.tensor_extensions.arrow),
# recognised by name so that Ray need not be imported.
RAY_TENSOR = ("ray.data.arrow_tensor", "ray.data.arrow_tensor_v2")
RAY_VARIABLE = ("ray.data.arrow_variable_shaped_tensor",)

TEXT = ("string", "large_string", "binary", "large_binary")
LISTS = ("list", "large_list")


def tables(data):
    """``data``'s Arrow tables or record batches, in order, when it is Arrow
    (a ``Table``, ``RecordBatch``, ``RecordBatchReader`` or a Hugging Face
    ``datasets.Dataset``), else ``None``."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        if isinstance(data, (pa.Table, pa.RecordBatch)):
            return [data]
        if isinstance(data, pa.RecordBatchReader):
            return iter(data)
    hf = sys.modules.get("datasets")
    if hf is not None and isinstance(data, hf.Dataset):
        # Its Arrow table as it holds it (memory-mapped: no copy), unless a
        # select or shuffle put an index in front of it: then those rows.
        return [data.data.table if data._indices is None else data.with_format("arrow")[:]]
    return None


def columns(table):
    """``(data, types)``: ``table``'s columns as ``write_shard`` takes them
    (name -> array or list of arrays) and each one's Arrow type name for the
    manifest (columns whose type ``to_arrow`` would not guess)."""
    import pyarrow as pa
    twice = sorted({n for n in table.column_names if table.column_names.count(n) > 1})
    if twice:
        raise ValueError(f"Arrow columns named more than once: {twice}; a dataset's columns have "
                         "one name each (rename them with table.rename_columns)")
    data, types = {}, {}
    for name, col in zip(table.column_names, table.columns):
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        parts = [_column(pa, name, c) for c in chunks] or [_column(pa, name, pa.array([], col.type))]
        values, kind = parts[0]
        if len(parts) > 1:
            values = (np.concatenate([v for v, _ in parts]) if isinstance(values, np.ndarray)
                      else [r for v, _ in parts for r in v])
        data[name] = values
        if kind is not None:
            types[name] = kind
    return data, types


UNMAPPED = ("no mapping to a zrecord column (primitive values, fixed-size lists, tensors, lists "
            "of primitives, strings and binary map; cast or encode it first)")


def _refuse(name, t, why):
    return ZrecordTypeError(-8, f"Arrow column {name!r} of type {t}: {why}")


def _no_nulls(name, t, arr):
    if arr.null_count:
        raise _refuse(name, t, f"{arr.null_count} nulls; zrecord stores no nulls (fill them with "
                               "pyarrow.compute.fill_null, or drop those rows)")


def _primitive(pa, t):
    """Arrow types whose values NumPy holds as they are (bool unpacked)."""
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_duration(t) or (pa.types.is_timestamp(t) and t.tz is None))


def _numpy(pa, name, t, arr):
    """A primitive array's values as NumPy (a view unless bool)."""
    if not _primitive(pa, arr.type):
        raise _refuse(name, t, UNMAPPED)
    _no_nulls(name, t, arr)
    return arr.to_numpy(zero_copy_only=False)


def _split(name, t, values, offsets):
    """Records ``values[offsets[i]:offsets[i + 1]]`` (views); empty records
    are refused (the format has none)."""
    empty = np.flatnonzero(offsets[1:] == offsets[:-1])
    if len(empty):
        raise _refuse(name, t, f"row {int(empty[0])} is empty ({len(empty)} empty rows); a zrecord "
                               "record is never empty (drop those rows, or pad them)")
    return [values[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


def _offsets(arr, dtype):
    """A list-like array's offsets (its own slice of them)."""
    return np.frombuffer(arr.buffers()[1], dtype=dtype)[arr.offset:arr.offset + len(arr) + 1]


def _column(pa, name, arr):
    """One Arrow array as ``(values, arrow type name or None)``."""
    t = arr.type
    _no_nulls(name, t, arr)
    if isinstance(t, pa.FixedShapeTensorType):
        _numpy(pa, name, t, arr.storage.flatten())  # refuses what it must
        return arr.to_numpy_ndarray(), "fixed_shape_tensor"
    if isinstance(t, pa.ExtensionType) and t.extension_name in RAY_TENSOR:
        return np.asarray(arr.to_numpy()), None
    if isinstance(t, pa.ExtensionType) and t.extension_name in RAY_VARIABLE:
        return list(arr.to_numpy()), None
    if pa.types.is_fixed_size_list(t):
        shape, values = [], arr
        while pa.types.is_fixed_size_list(values.type):
            _no_nulls(name, t, values)  # flatten drops a null list's slots
            shape.append(values.type.list_size)
            values = values.flatten()
        return _numpy(pa, name, t, values).reshape(len(arr), *shape), "fixed_size_list"
    if not isinstance(t, pa.ExtensionType) and str(t) in TEXT:
        offsets = _offsets(arr, np.int64 if str(t).startswith("large_") else np.int32)
        data = arr.buffers()[2]
        values = np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)
        return _split(name, t, values, offsets), str(t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = _offsets(arr, np.int64 if pa.types.is_large_list(t) else np.int32)
        # Only the values this slice's rows hold (``values`` is the whole
        # child: a null in rows sliced away is none of this column's).
        lo, hi = (int(offsets[0]), int(offsets[-1])) if len(offsets) else (0, 0)
        values = _numpy(pa, name, t, arr.values.slice(lo, hi - lo))
        return _split(name, t, values, offsets - lo), LISTS[pa.types.is_large_list(t)]
    return _numpy(pa, name, t, arr), None


def to_arrow(ds, indices=None, columns=None):
    """``ds``'s records at ``indices`` (default: all, in order) as a
    ``pyarrow.Table`` of ``columns`` (default: all), each column of the Arrow
    type it was written from (see ``tables``), or, for columns written from
    NumPy: primitive for scalar records, ``fixed_size_list`` for 1-D ones,
    ``arrow.fixed_shape_tensor`` above, ``list`` (nested as deep as the
    records' rank) for Ragged ones."""
    import pyarrow as pa
    idx = np.arange(len(ds), dtype=np.int64) if indices is None else np.asarray(indices, np.int64)
    if idx.ndim != 1:
        raise ValueError(f"to_arrow takes a one-dimensional index, not shape {idx.shape}")
    names = ds.columns if columns is None else list(columns)
    types = ds._native.arrow_types
    arrays = [_array(pa, name, ds[name], types.get(name), idx) for name in names]
    return pa.Table.from_arrays(arrays, names=names)


def _array(pa, name, col, kind, idx):
    """Column ``name``'s records at ``idx`` as an Arrow array of ``kind``."""
    if isinstance(col, Dense):
        batch = col.gather(idx)
        if batch.ndim == 1:
            return pa.array(batch)
        if kind == "fixed_size_list" or (kind is None and batch.ndim == 2):
            arr = pa.array(batch.reshape(-1))
            for size in reversed(batch.shape[1:]):
                arr = pa.FixedSizeListArray.from_arrays(arr, size)
            return arr
        if not len(batch):   # (from_numpy_ndarray refuses an empty array)
            tensor = pa.fixed_shape_tensor(pa.from_numpy_dtype(batch.dtype), batch.shape[1:])
            return pa.ExtensionArray.from_storage(tensor, pa.array([], tensor.storage_type))
        return pa.FixedShapeTensorArray.from_numpy_ndarray(batch)
    values, offsets, shapes = col.gather(idx, packed=True)
    if kind in TEXT:
        arrow_type = getattr(pa, kind)()
        wide = kind.startswith("large_")
        if not wide and len(values) >= 2**31:
            raise _refuse(name, arrow_type, f"{len(values)} bytes do not fit its 32-bit offsets; "
                                            "take fewer rows")
        offsets = offsets.astype(np.int64 if wide else np.int32, copy=False)
        arr = pa.Array.from_buffers(arrow_type, len(idx), [None, pa.py_buffer(offsets),
                                                           pa.py_buffer(values)])
        if "string" in kind:
            # The manifest says text; the bytes may not be (an edited or
            # hostile manifest): a string array must hold UTF-8.
            try:
                arr.validate(full=True)
            except pa.ArrowInvalid as e:
                raise _refuse(name, arrow_type, f"its records are not UTF-8 ({e}); read its bytes "
                                                f"with ds[{name!r}][indices]") from None
        return arr
    return _nested(pa, name, values, shapes, kind == "large_list")


def _nested(pa, name, values, shapes, wide):
    """Ragged records (flat ``values``, each record's shape a row of
    ``shapes``) as lists nested as deep as their rank."""
    ranks = (shapes >= 0).sum(axis=1)
    if len(ranks) and (ranks.min() != ranks.max() or ranks[0] == 0):
        raise ZrecordTypeError(-8, f"column {name!r} holds records of rank {sorted(set(ranks.tolist()))}: "
                                   "to_arrow gives lists of records of one rank >= 1; read this "
                                   f"column with ds[{name!r}][indices]")
    rank = int(ranks[0]) if len(ranks) else 1
    if not len(shapes):
        shapes = np.zeros((0, rank), np.int64)   # no records: no shape columns either
    cls = pa.LargeListArray if wide else pa.ListArray
    arr = pa.array(values)
    for level in reversed(range(rank)):
        counts = np.prod(shapes[:, :level], axis=1, dtype=np.int64)
        lengths = np.repeat(shapes[:, level], counts)
        offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
        if not wide and offsets[-1] >= 2**31:
            raise _refuse(name, pa.list_(arr.type), f"{offsets[-1]} values do not fit its 32-bit "
                                                    "offsets; take fewer rows")
        arr = cls.from_arrays(pa.array(offsets.astype(np.int64 if wide else np.int32)), arr)
    return arr
