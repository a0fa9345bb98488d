"""PyTorch helpers: collating Ragged batches into tensors.

A ``Dense`` or ``Ragged`` store is already a map-style dataset for
``torch.utils.data.DataLoader`` (``len``, ``ds[i]``, and the batched
``__getitems__``), with ``num_workers > 0`` under fork (a store opened
before the fork reads in the child) and spawn (it pickles as "open this path
again", options included). Two patterns:

* ``DataLoader(ds, batch_size=B, num_workers=N)``: torch's sampler; each
  worker gathers its batches with one ``__getitems__`` call.
* ``DataLoader(ds, sampler=Sampler(len(ds), B, mode), batch_size=None,
  num_workers=N)``: our loaderx-exact index streams, one index array per
  batch, so each batch is one gather.

A Dense batch becomes a tensor by torch's default collate. A Ragged batch is
a list of arrays of different shapes, which torch cannot stack: pass
``collate_fn=collate_ragged`` (packed values and offsets) or
``collate_fn=functools.partial(collate_ragged, padding_value=0)`` (padded).
"""

from typing import Any, NamedTuple, Optional, Sequence

import numpy as np
import torch

__all__ = ["PackedBatch", "PaddedBatch", "collate_ragged"]


class PackedBatch(NamedTuple):
    """Ragged records back to back: record ``k`` is
    ``values[offsets[k]:offsets[k + 1]].reshape(shape k)``, its shape the
    first entries of ``shapes[k]`` that are not ``-1`` (1-D records:
    ``offsets`` alone says everything)."""

    values: torch.Tensor
    offsets: torch.Tensor
    shapes: torch.Tensor


class PaddedBatch(NamedTuple):
    """Ragged records of one rank padded to their largest shape:
    ``values[k]`` is record ``k`` in the corner of a ``padding_value`` block,
    ``shapes[k]`` its own shape (``lengths`` for sequences)."""

    values: torch.Tensor
    shapes: torch.Tensor


def _packed(records):
    """``(values, offsets, shapes)`` NumPy arrays for a list of records."""
    if not records:
        raise ValueError("cannot collate an empty batch")
    rank = max(r.ndim for r in records)
    shapes = np.full((len(records), rank), -1, dtype=np.int64)
    for k, r in enumerate(records):
        shapes[k, : r.ndim] = r.shape
    offsets = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum([r.size for r in records], out=offsets[1:])
    values = np.concatenate([np.ravel(r) for r in records])
    return values, offsets, shapes


def _padded(values, offsets, shapes, padding_value):
    if (shapes < 0).any():
        raise ValueError("padding needs records of one rank; use packed collation (no padding_value)")
    n = len(shapes)
    out = np.full((n, *shapes.max(axis=0)), padding_value, dtype=values.dtype)
    for k in range(n):
        shape = tuple(shapes[k])
        corner = (k, *(slice(0, d) for d in shape))
        out[corner] = values[offsets[k]:offsets[k + 1]].reshape(shape)
    return out


def collate_ragged(batch: Any, padding_value: Optional[Any] = None):
    """A Ragged batch as tensors: a list of arrays (``ds[indices]``, what
    torch's batched fetch returns) or a packed ``(values, offsets, shapes)``
    tuple (``ds.gather(indices, packed=True)``).

    Without ``padding_value``: a :class:`PackedBatch` (no padding, no copy
    for a packed tuple). With one: a :class:`PaddedBatch` (records of one
    rank). The tensors share memory with the gathered arrays where they can.
    """
    if isinstance(batch, tuple) and len(batch) == 3 and all(isinstance(a, np.ndarray) for a in batch):
        values, offsets, shapes = batch
    elif isinstance(batch, Sequence) and all(isinstance(r, np.ndarray) for r in batch):
        values, offsets, shapes = _packed(list(batch))
    else:
        raise TypeError("collate_ragged takes a list of arrays or a (values, offsets, shapes) tuple")
    if padding_value is None:
        return PackedBatch(torch.from_numpy(values), torch.from_numpy(offsets), torch.from_numpy(shapes))
    padded = _padded(values, offsets, shapes, padding_value)
    return PaddedBatch(torch.from_numpy(padded), torch.from_numpy(shapes))
