"""``train_dict``: zstd dictionaries for ``zstd_dict`` stores, sampled and
trained exactly as loaderx 2.0.1 does (byte-identical dictionaries)."""

import math
from pathlib import Path

import numpy as np

from . import _native
from ._records import DICT_TIERS, Dense, Ragged

__all__ = ["train_dict"]


def _dict_tier(tier):
    tier = "balanced" if tier is None else tier
    if not isinstance(tier, str) or tier not in DICT_TIERS:
        raise ValueError(
            f"unknown dict tier {tier!r}, expected one of {sorted(DICT_TIERS)}"
        )
    return tier


def _sample_count(total, item_bytes, sample_budget):
    per = max(item_bytes, 1)
    return max(1, min(total, max(1, sample_budget // per)))


def _flat(array):
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def _pack_samples(source, sample_budget):
    """loaderx's sample: ``(bytes as uint8, per-record sizes)``."""
    if isinstance(source, np.ndarray):
        if len(source) == 0:
            raise ValueError("cannot train a zstd dictionary on an empty array")
        itemsize = math.prod(source.shape[1:]) * np.dtype(source.dtype).itemsize
        k = _sample_count(len(source), itemsize, sample_budget)
        idx = np.unique(np.linspace(0, len(source) - 1, k).astype(np.int64))
        sample = np.ascontiguousarray(source[idx])
        row = math.prod(sample.shape[1:]) * sample.dtype.itemsize
        return _flat(sample), np.full(len(sample), row, dtype=np.uint64)
    if isinstance(source, (Dense, Ragged)):
        if source._writable:
            raise ValueError("train_dict requires an opened read-only container")
        n = len(source)
        if n == 0:
            raise ValueError("cannot train a zstd dictionary on an empty store")
        if isinstance(source, Dense):
            item = source._row_bytes
        else:
            preview = source.__getitems__(np.arange(min(n, 32)))
            item = int(np.mean([record.nbytes for record in preview])) or 1
        k = _sample_count(n, item, sample_budget)
        idx = np.unique(np.linspace(0, n - 1, min(k, n)).astype(np.int64))
        sample = source.__getitems__(idx)
        if isinstance(source, Dense):
            return _flat(sample), np.full(len(sample), source._row_bytes, dtype=np.uint64)
        packed = [_flat(record) for record in sample]
        sizes = np.fromiter((p.nbytes for p in packed), dtype=np.uint64, count=len(packed))
        return np.concatenate(packed), sizes
    # An iterable of records: buffer up to the tier's sample budget.
    buf, total = [], 0
    for record in source:
        if isinstance(record, (bytes, bytearray)):
            b = np.frombuffer(bytes(record), dtype=np.uint8)
        else:
            b = _flat(np.asarray(record)).copy()
        buf.append(b)
        total += b.nbytes
        if total >= sample_budget:
            break
    if not buf:
        raise ValueError("train_dict needs at least one record")
    sizes = np.fromiter((b.nbytes for b in buf), dtype=np.uint64, count=len(buf))
    return np.concatenate(buf), sizes


def train_dict(source, tier=None, path=None):
    """Train a zstd dictionary on ``source`` — a stacked numpy array, an
    iterable of records, or an opened ``Dense``/``Ragged`` reader — sized by
    ``tier`` (``"fast"``, ``"balanced"`` (default) or ``"max"``, see
    ``DICT_TIERS``).

    Returns the dictionary as ``bytes`` (identical to loaderx 2.0.1's for the
    same source and tier) and, with ``path``, also writes it there. Pass it as
    ``dict_bytes`` to ``Dense.create``/``Ragged.create`` with
    ``codec="zstd_dict"``. The GIL is released while zstd trains.

    Raises ``ValueError`` for an unknown tier or an empty source and
    ``ZrecordError`` (code -9) when zstd cannot train on the sample.
    """
    tier = _dict_tier(tier)
    samples, sizes = _pack_samples(source, DICT_TIERS[tier]["samples"])
    d = _native.train_dict_native(samples, sizes, tier)
    if path is not None:
        Path(path).write_bytes(d)
    return d
