"""``train_dict``: zstd dictionaries for ``zstd_dict`` stores, sampled and
trained exactly as loaderx 2.0.1 does (byte-identical dictionaries).

The sampling (which records, how many) and the training are the Rust core's
(``zrecord::training::dict``); this module only picks the source's kind and gathers
the records the core asks for."""

import math
from pathlib import Path

import numpy as np

from . import _native
from ._progress import reporter
from ._records import DICT_TIERS, Dense, Ragged

__all__ = ["train_dict"]


def _dict_tier(tier):
    tier = "balanced" if tier is None else tier
    if not isinstance(tier, str) or tier not in DICT_TIERS:
        raise ValueError(
            f"unknown dict tier {tier!r}, expected one of {sorted(DICT_TIERS)}"
        )
    return tier


def _flat(array):
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def _train_array(source, tier, sampled):
    """A stacked array: the rows at the core's sample indices, copied out of
    ``source`` (any layout) into a buffer only this call holds."""
    if len(source) == 0:
        raise ValueError("cannot train a zstd dictionary on an empty array")
    row = math.prod(source.shape[1:]) * np.dtype(source.dtype).itemsize
    sample = source[_native.dict_sample_indices(len(source), row, tier)]
    sizes = np.full(len(sample), row, dtype=np.uint64)
    sampled()
    return _native.train_dict_native(_flat(sample), sizes, tier)


def _train_store(source, tier, sampled):
    """An opened reader: sampled, gathered and trained by the core."""
    if source._writable:
        raise ValueError("train_dict requires an opened read-only container")
    if len(source) == 0:
        raise ValueError("cannot train a zstd dictionary on an empty store")
    sampled()  # the core samples and trains in one call
    return _native.train_dict_store(source._require_store(False), tier)


def _train_iterable(source, tier, sampled):
    """An iterable of records: taken up to the tier's sample budget (the
    record that reaches it included), as the core's trainer cuts them."""
    budget = DICT_TIERS[tier]["samples"]
    buf, total = [], 0
    for record in source:
        if isinstance(record, (bytes, bytearray)):
            b = np.frombuffer(bytes(record), dtype=np.uint8)
        else:
            b = _flat(np.asarray(record)).copy()
        buf.append(b)
        total += b.nbytes
        if total >= budget:
            break
    if not buf:
        raise ValueError("train_dict needs at least one record")
    sizes = np.fromiter((b.nbytes for b in buf), dtype=np.uint64, count=len(buf))
    sampled()
    return _native.train_dict_native(np.concatenate(buf), sizes, tier)


def train_dict(source, tier=None, path=None, *, progress=None):
    """Train a zstd dictionary on ``source`` — a stacked numpy array, an
    iterable of records, or an opened ``Dense``/``Ragged`` reader — sized by
    ``tier`` (``"fast"``, ``"balanced"`` (default) or ``"max"``, see
    ``DICT_TIERS``).

    Returns the dictionary as ``bytes`` (identical to loaderx 2.0.1's for the
    same source and tier) and, with ``path``, also writes it there. Pass it as
    ``dict_bytes`` to ``Dense.create``/``Ragged.create`` with
    ``codec="zstd_dict"``. The GIL is released while zstd trains.

    ``progress`` (``True``: a tqdm bar when tqdm is installed, otherwise
    plain lines on stderr; or a callable ``progress(done, total, what)``)
    reports the two steps, sampling and training (zstd's trainer itself is
    one call that reports nothing), each as it ends.

    Raises ``ValueError`` for an unknown tier or an empty source and
    ``ZrecordError`` (code -9) when zstd cannot train on the sample.
    """
    tier = _dict_tier(tier)
    rep = reporter(progress, 2, f"train_dict ({tier}): sample, train", unit="steps")
    try:
        sampled = lambda: rep.update(1)  # noqa: E731
        if isinstance(source, np.ndarray):
            d = _train_array(source, tier, sampled)
        elif isinstance(source, (Dense, Ragged)):
            d = _train_store(source, tier, sampled)
        else:
            d = _train_iterable(source, tier, sampled)
        rep.update(1)
    finally:
        rep.close()
    if path is not None:
        Path(path).write_bytes(d)
    return d
