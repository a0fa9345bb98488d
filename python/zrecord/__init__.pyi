"""Type stubs for zrecord: loaderx 2.0.1's public API on zrecord's engine."""

import os
from pathlib import Path
from typing import (
    Any,
    Callable,
    ClassVar,
    Dict,
    Iterable,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    overload,
)

import numpy as np
import numpy.typing as npt

__version__: str

_PathLike = Union[str, "os.PathLike[str]"]
_Index = Union[int, np.integer[Any]]
_Indices = Union[slice, Sequence[int], npt.NDArray[np.integer[Any]], npt.NDArray[np.bool_], Tuple[int, ...]]
_Codec = Literal["raw", "zstd", "zstd_dict"]
_Tier = Literal["fast", "balanced", "max"]
_Self = TypeVar("_Self", bound="_Base")
_T = TypeVar("_T")

DICT_TIERS: Dict[str, Dict[str, int]]
"""The dictionary presets: ``{"fast"|"balanced"|"max": {"size": bytes, "samples": bytes}}``."""

class ZrecordError(RuntimeError):
    """A store failed a check of the format, a read or a write; the message
    names the store and the check, ``code`` is loaderx's numeric code."""

    code: int
    def __init__(self, code: int, message: Optional[str] = ...) -> None: ...

class ZrecordMemoryError(ZrecordError, MemoryError):
    """A buffer the request sized (a batch, a loader's prefetch) that cannot
    be allocated: code ``-1``, the message names the bytes."""

class ZrecordTypeError(ZrecordError, TypeError):
    """Data zrecord cannot store as given (an Arrow column with nulls, empty
    records or a type with no mapping), or records ``to_arrow`` cannot
    express: code ``-8``, the message names the column and its type."""

_Progress = Union[bool, None, Callable[[int, Optional[int], str], Any]]

class _Base:
    path: Union[Path, str]
    """The store's directory (a ``Path``) or URL (a ``str``)."""
    dtype: np.dtype[Any]
    """Element type, exactly as stored (never byte-swapped)."""
    codec: _Codec
    """``"raw"``, ``"zstd"`` or ``"zstd_dict"``."""
    def __len__(self) -> int:
        """Records in the store (appended so far, for a writer)."""
    def has_dict(self) -> bool:
        """True if the store has a zstd dictionary installed."""
    def close(self) -> None:
        """Publish a created store, or release an opened one. Idempotent."""
    def __enter__(self: _Self) -> _Self: ...
    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None: ...

class Dense(_Base):
    """Fixed-shape records: a gather is one ``(n, *item_shape)`` array that
    owns the buffer the Rust reader filled (no copy)."""

    item_shape: Tuple[int, ...]
    @classmethod
    def open(cls, path: _PathLike, verify: bool = False, backend: Literal["mmap", "pread"] = "mmap",
             cache: Optional[_PathLike] = None, cache_limit: Union[int, str, None] = None,
             cold_reads: Literal["auto", "buffered", "direct"] = "auto") -> "Dense":
        """Open a store for reading: a directory or an ``http(s)://``,
        ``s3://``, ``gs://`` or ``az://`` URL. With ``verify=True`` every
        record read is checked against the store's checksum sidecar
        (``sums.zr``): changed bytes raise ``ZrecordError``, and an unsealed
        store does not open.

        Raises ``FileNotFoundError`` for a missing store, ``ZrecordError``
        for a damaged or unpublished one, ``ValueError`` (a
        ``ZrecordError`` too) for a Ragged store or a foreign schema."""
    @classmethod
    def create(
        cls,
        path: _PathLike,
        dtype: npt.DTypeLike,
        item_shape: Iterable[int],
        codec: _Codec = "zstd",
        dict_bytes: Optional[bytes] = None,
        *,
        overwrite: bool = False,
        progress: _Progress = None,
    ) -> "Dense":
        """Create an append-only store; ``close()`` publishes it.
        ``overwrite=True`` replaces a store already there (an unpublished
        build or a published store); ``progress`` reports every append."""
    def append(self, records: npt.NDArray[Any], *, progress: _Progress = None) -> None:
        """Append one ``(batch, *item_shape)`` array of the store's dtype."""
    @property
    def shape(self) -> Tuple[int, ...]:
        """``(len(self), *item_shape)``."""
    def __array__(self, dtype: Optional[npt.DTypeLike] = None, copy: Optional[bool] = None) -> npt.NDArray[Any]:
        """The whole store in one gather (``np.asarray(ds)`` is ``ds[:]``)."""
    @overload
    def __getitem__(self, idx: _Index) -> Any: ...
    @overload
    def __getitem__(self, idx: _Indices) -> npt.NDArray[Any]: ...
    def __getitems__(self, idxs: _Indices) -> npt.NDArray[Any]:
        """The records at ``idxs`` as one array (torch's batched fetch)."""
    def gather(self, indices: _Indices, out: Optional[npt.NDArray[Any]] = None) -> npt.NDArray[Any]:
        """Gather into a new array, or into ``out`` (C-contiguous, writable,
        the store's dtype, shape ``(*indices.shape, *item_shape)``)."""

class Ragged(_Base):
    """Variable-shape records: a gather is a list of arrays, or with
    ``packed=True`` a ``(values, offsets, shapes)`` tuple. The arrays view
    the one buffer the Rust reader wrote each record into (no copy), which
    is recycled for a later gather once none of them is alive."""

    @classmethod
    def open(cls, path: _PathLike, verify: bool = False, backend: Literal["mmap", "pread"] = "mmap",
             cache: Optional[_PathLike] = None, cache_limit: Union[int, str, None] = None,
             cold_reads: Literal["auto", "buffered", "direct"] = "auto") -> "Ragged":
        """Open a store for reading: a directory or a URL; ``verify`` as for
        :meth:`Dense.open`."""
    @classmethod
    def create(
        cls,
        path: _PathLike,
        dtype: npt.DTypeLike,
        codec: _Codec = "zstd",
        dict_bytes: Optional[bytes] = None,
        *,
        overwrite: bool = False,
        progress: _Progress = None,
    ) -> "Ragged":
        """Create an append-only store; ``close()`` publishes it
        (``overwrite``, ``progress`` as for :meth:`Dense.create`)."""
    def append(self, records: Iterable[npt.NDArray[Any]], *, progress: _Progress = None) -> None:
        """Append an iterable of non-empty arrays of the store's dtype."""
    @overload
    def __getitem__(self, idx: _Index) -> npt.NDArray[Any]: ...
    @overload
    def __getitem__(self, idx: _Indices) -> List[npt.NDArray[Any]]: ...
    def __getitems__(self, idxs: _Indices) -> List[npt.NDArray[Any]]:
        """The records at ``idxs``, each with the shape it was written with."""
    @overload
    def gather(self, indices: _Indices, packed: Literal[False] = False) -> List[npt.NDArray[Any]]: ...
    @overload
    def gather(
        self, indices: _Indices, packed: Literal[True]
    ) -> Tuple[npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...

def train_dict(
    source: Union[npt.NDArray[Any], Iterable[Any], Dense, Ragged],
    tier: Optional[_Tier] = None,
    path: Optional[_PathLike] = None,
    *,
    progress: _Progress = None,
) -> bytes:
    """Train a zstd dictionary (loaderx's sample, identical bytes) for
    ``zstd_dict`` stores; also write it to ``path`` if given."""

class Sampler:
    """loaderx's endless index-batch streams, exactly."""

    class Mode:
        SEQUENTIAL: ClassVar[int]
        IID: ClassVar[int]
        CYCLIC: ClassVar[int]
    indices: npt.NDArray[np.uint64]
    def __init__(
        self, length: int, batch_size: int, mode: int, seed: int = 42, *, rank: int = 0, world: int = 1
    ) -> None: ...
    def next(self) -> npt.NDArray[np.uint64]:
        """The next batch: a borrowed view, valid until the next draw
        (iteration yields arrays the caller owns)."""
    def seek(self, step: int) -> None:
        """Make step ``step`` the next draw."""
    @property
    def step(self) -> int:
        """The step the next draw returns."""
    def __iter__(self) -> "Sampler": ...
    def __next__(self) -> npt.NDArray[np.uint64]: ...

class DataLoader(Iterator[Any]):
    """loaderx's endless multi-stream loader, delivering in step order."""

    streams: Dict[str, Union[Dense, Ragged]]
    def __init__(
        self,
        streams: Union[Mapping[str, Union[Dense, Ragged]], Sequence[Mapping[str, Union[Dense, Ragged]]]],
        transform_workers: int = 4,
        batch_size: int = 256,
        prefetch_size: int = 4,
        mode: int = 2,
        seed: int = 42,
        transform: Callable[[Dict[str, Any]], Any] = ...,
        *,
        rank: int = 0,
        world: int = 1,
        start_step: int = 0,
        gather_workers: int = 2,
        ragged: Literal["list", "packed"] = "list",
        weights: Optional[Sequence[float]] = None,
        schedule: Optional[Mapping[int, Sequence[float]]] = None,
        modes: Optional[Sequence[int]] = None,
    ) -> None: ...
    @property
    def step(self) -> int:
        """The step the next batch is; pass it as ``start_step`` to resume."""
    @property
    def fetched_ahead(self) -> int:
        """Bytes fetched ahead of the gathers into a node-local cache (``cache=``) for the coming steps."""
    def state_dict(self) -> Dict[str, Any]:
        """The checkpoint as plain data (picklable, JSON-able): step, seed, batch size, modes, mixture, stores."""
    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume at the state's step; ``ValueError`` naming what differs for another run's state."""
    def __len__(self) -> int:
        """Always raises TypeError: the loader is endless."""
    def __iter__(self) -> "DataLoader": ...
    def __next__(self) -> Any: ...
    def close(self) -> None:
        """Stop every thread promptly. Idempotent, from any thread."""
    def __enter__(self) -> "DataLoader": ...
    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None: ...

class Mixture(Iterator[Tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]]):
    """Several sources mixed by weight: each step's ``(sources, indices)``,
    a pure function of ``(seed, step, schedule)``."""

    def __init__(
        self,
        lengths: Sequence[Union[int, Dense, Ragged, "Dataset"]],
        weights: Sequence[float],
        batch_size: int,
        seed: int = 42,
        modes: Optional[Sequence[int]] = None,
        schedule: Optional[Mapping[int, Sequence[float]]] = None,
        rank: int = 0,
        world: int = 1,
    ) -> None: ...
    def next(self) -> Tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]:
        """This rank's slice of the next step: source numbers and indices into each source."""
    def seek(self, step: int) -> None:
        """Reposition so the next draw is step ``step``'s."""
    @property
    def step(self) -> int:
        """The step the next draw returns."""
    @property
    def drawn(self) -> List[int]:
        """Records each source has drawn before ``step``."""
    def __iter__(self) -> "Mixture": ...
    def __next__(self) -> Tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]: ...

_Column = Union[npt.NDArray[Any], Sequence[npt.NDArray[Any]]]
# Also a pyarrow Table, RecordBatch, RecordBatchReader or a datasets.Dataset (docs/ARROW_RAY.md).
_Data = Union[Mapping[str, _Column], Any]

class ShardInfo:
    """A written shard, not yet committed (small and picklable: pass it to ``commit``)."""
    json: str
    path: str
    length: int
    columns: List[str]
    def __init__(self, text: str) -> None: ...

def write_shard(
    uri: _PathLike,
    data: _Data,
    *,
    codec: _Codec = "zstd",
    codecs: Optional[Mapping[str, _Codec]] = None,
    dictionaries: Optional[Mapping[str, bytes]] = None,
    ragged: Optional[Iterable[str]] = None,
) -> ShardInfo:
    """Write ``data`` as one new, uncommitted shard of the dataset at ``uri`` (a directory or bucket URL)."""

def commit(
    uri: _PathLike, shard_infos: Iterable[ShardInfo], *, mode: Literal["create", "append", "overwrite"] = "create"
) -> int:
    """Commit the shards as the dataset's next version; returns its number."""

def gc(uri: _PathLike, older_than: float, *, dry_run: bool = False) -> List[str]:
    """Remove (or, with ``dry_run``, list) uncommitted shards older than ``older_than`` seconds."""

def write_dataset(
    uri: _PathLike,
    data: Union[_Data, Iterable[_Data]],
    *,
    codec: _Codec = "zstd",
    rows_per_shard: Optional[int] = None,
    mode: Literal["create", "append", "overwrite"] = "create",
    codecs: Optional[Mapping[str, _Codec]] = None,
    dictionaries: Optional[Mapping[str, bytes]] = None,
    ragged: Optional[Iterable[str]] = None,
) -> "Dataset":
    """Write ``data`` as shards and commit them once; returns the dataset at that version."""

def open_dataset(
    uri: _PathLike,
    version: Optional[int] = None,
    verify: bool = False,
    cache: Optional[_PathLike] = None,
    cache_limit: Union[int, str, None] = None,
    cold_reads: Literal["auto", "buffered", "direct"] = "auto",
) -> "Dataset":
    """Open version ``version`` (default: the newest) of the dataset at ``uri``
    (through the node-local ``cache`` directory when given)."""

def cache_stats() -> Dict[str, int]:
    """What this process's node-local caches cost and saved so far: ``gets``
    (requests sent), ``bytes_fetched``, ``hits``, ``misses``,
    ``evicted_bytes``, ``read_through``."""

class Dataset:
    """One committed version of a dataset: named columns, each read as one store."""
    uri: str
    @property
    def version(self) -> int:
        """The committed version read."""
    @property
    def columns(self) -> List[str]:
        """The column names, in order."""
    @property
    def shards(self) -> List[Tuple[str, int]]:
        """Each shard's ``(path, length)``, in order."""
    def shard_of(self, index: int) -> Tuple[int, int]:
        """``(shard, start)``: the shard holding record ``index`` and its first global index."""
    def __len__(self) -> int: ...
    def keys(self) -> Iterable[str]: ...
    def values(self) -> Iterable[Union[Dense, Ragged]]: ...
    def items(self) -> Iterable[Tuple[str, Union[Dense, Ragged]]]: ...
    def __iter__(self) -> Iterator[str]: ...
    def __contains__(self, name: object) -> bool: ...
    @overload
    def __getitem__(self, key: str) -> Union[Dense, Ragged]: ...
    @overload
    def __getitem__(self, key: Union[_Index, _Indices]) -> Dict[str, Any]: ...
    def __getitems__(self, idxs: _Indices) -> Dict[str, Any]:
        """Every column's batch at ``idxs`` (torch's batched fetch)."""
    def gather(self, indices: _Indices, columns: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        """``{column: batch}`` at ``indices``, every column or those named."""
    def to_arrow(self, indices: Optional[_Indices] = None, columns: Optional[Iterable[str]] = None) -> Any:
        """A ``pyarrow.Table`` of the records at ``indices`` (default: all), each column of the Arrow type it was written from."""
