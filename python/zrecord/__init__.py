"""zrecord: random-access record stores for ML training data.

loaderx 2.0.1's public API on zrecord's Rust engine — switching a training
script is one import line::

    from zrecord import Dense, Ragged, ZrecordError, DICT_TIERS, train_dict, Sampler, DataLoader

or, as loaderx spells it, from the same submodules (``zrecord.zrecord``,
``zrecord.dataloader``, ``zrecord.zsampler``, ``zrecord.utils``): replacing
the word ``loaderx`` by ``zrecord`` is the whole switch.

Stores are byte-compatible with loaderx 2.0.1 in both directions. Beyond
loaderx: ``Dense.open``/``Ragged.open`` take ``http(s)://`` URLs; gathers
release the GIL and Dense batches are not copied (the array owns the buffer
Rust filled); ``Dense.gather(indices, out=...)`` fills your array;
``Ragged.gather(indices, packed=True)`` gives ``(values, offsets, shapes)``;
the ``DataLoader`` delivers in step order, resumes from a step and shards by
``rank``/``world``; stores work as map-style datasets for
``torch.utils.data`` and survive ``os.fork()``. Datasets (``write_shard`` in
any number of workers, one ``commit``, ``open_dataset``) hold named columns
over many shards, each column read as one store.
"""

from . import _native
from ._errors import ZrecordError, ZrecordMemoryError, ZrecordTypeError
from ._records import DICT_TIERS, Dense, Ragged
from ._train import train_dict
from ._sampler import Sampler
from ._loader import DataLoader
from ._mixture import Mixture
from ._dataset import Dataset, ShardInfo, commit, gc, open_dataset, write_dataset, write_shard

__version__ = "0.1.0"


def cache_stats():
    """What this process's node-local caches (``cache=`` on ``Dense.open``,
    ``Ragged.open``, ``open_dataset``) have cost and saved so far: ``gets``
    (requests sent to the remote), ``bytes_fetched``, block ``hits`` and
    ``misses``, ``evicted_bytes`` and ``read_through`` (reads served straight
    from the remote because no block could be kept). Take differences for an epoch."""
    return dict(_native.cache_stats())


__all__ = [
    "Dense",
    "Ragged",
    "ZrecordError",
    "ZrecordMemoryError",
    "ZrecordTypeError",
    "DICT_TIERS",
    "train_dict",
    "Sampler",
    "DataLoader",
    "Mixture",
    "Dataset",
    "ShardInfo",
    "open_dataset",
    "write_dataset",
    "write_shard",
    "gc",
    "commit",
    "cache_stats",
]
