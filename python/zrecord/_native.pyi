"""Stubs for the Rust extension under the zrecord package (private)."""

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

_U64 = npt.NDArray[np.uint64]
_U8 = npt.NDArray[np.uint8]

def dict_tiers() -> Dict[str, Dict[str, int]]: ...
def dict_sample_indices(n: int, record_bytes: int, tier_name: str) -> _U64: ...
def train_dict_store(store: "NativeStore", tier_name: str) -> bytes: ...
def train_dict_native(samples: _U8, sizes: _U64, tier_name: str) -> bytes: ...

class NativeStore:
    name: str
    kind: str
    dtype: str
    item_shape: Optional[List[int]]
    codec: str
    schema: bytes
    dict_bytes: Optional[bytes]
    @staticmethod
    def open(
        path: str,
        verify: bool = False,
        backend: str = "mmap",
        cache: Optional[str] = None,
        cache_limit: Optional[int] = None,
        cold_reads: str = "auto",
    ) -> "NativeStore": ...
    def __len__(self) -> int: ...
    def gather_dense_into(self, indices: _U64, out: _U8) -> None: ...
    def gather_dense_pooled(self, indices: _U64) -> npt.NDArray[Any]: ...
    def gather_ragged(
        self, indices: _U64, packed: bool
    ) -> Union[List[npt.NDArray[Any]], Tuple[npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[np.int64]]]: ...

class Pooled:
    """Owns a gathered batch's buffer while arrays view it (recycled on release)."""

class NativeWriter:
    @staticmethod
    def create(
        path: str,
        dtype: str,
        item_shape: Optional[List[int]],
        codec: str,
        dict_bytes: Optional[bytes] = None,
        overwrite: bool = False,
    ) -> "NativeWriter": ...
    def append_dense(self, rows: _U8, progress: Optional[Callable[[int], Any]] = None) -> None: ...
    def append_ragged(
        self,
        records: List[npt.NDArray[Any]],
        dtype: np.dtype[Any],
        progress: Optional[Callable[[int], Any]] = None,
    ) -> None: ...
    def __len__(self) -> int: ...
    def close(self) -> None: ...

def store_url(path: str) -> Optional[str]: ...

class NativeSampler:
    step: int
    batch_len: int
    def __init__(self, length: int, batch_size: int, mode_code: int, seed: int, rank: int = 0,
                 world: int = 1) -> None: ...
    def fill(self, out: _U64) -> int: ...
    def seek(self, step: int) -> None: ...

class NativeLoader:
    step: Optional[int]
    fetched_ahead: int
    def __init__(self, stores: List[NativeStore], names: List[str], batch_size: int, mode: int, seed: int,
                 rank: int, world: int, workers: int, prefetch: int, start_step: int, packed: bool,
                 more: List[List[NativeStore]] = ..., weights: Optional[List[float]] = None,
                 schedule: List[Tuple[int, List[float]]] = ..., modes: Optional[List[int]] = None) -> None: ...
    def next(self) -> Optional[Tuple[int, _U64, list, Optional[npt.NDArray[np.uint32]]]]: ...
    def state_json(self, step: int) -> str: ...
    def check_state(self, state: str) -> int: ...
    def close(self) -> None: ...

class NativeMixture:
    step: int
    batch_len: int
    drawn: List[int]
    def __init__(self, lengths: List[int], weights: List[float], batch_size: int, seed: int, modes: List[int],
                 schedule: List[Tuple[int, List[float]]], rank: int, world: int) -> None: ...
    def next(self) -> Tuple[npt.NDArray[np.uint32], _U64]: ...
    def seek(self, step: int) -> None: ...

class NativeDataset:
    version: int
    columns: List[str]
    shards: List[Tuple[str, int]]
    @staticmethod
    def open(
        target: str,
        version: Optional[int] = None,
        verify: bool = False,
        cache: Optional[str] = None,
        cache_limit: Optional[int] = None,
        cold_reads: str = "auto",
    ) -> "NativeDataset": ...
    def __len__(self) -> int: ...
    def shard_of(self, index: int) -> Optional[Tuple[int, int]]: ...
    def column(self, name: str) -> NativeStore: ...

class NativeShardWriter:
    path: str
    @staticmethod
    def create(
        root: str, columns: List[Tuple[str, str, Optional[List[int]], str, Optional[bytes]]]
    ) -> "NativeShardWriter": ...
    def column(self, name: str) -> NativeWriter: ...
    def finish(self) -> str: ...

def commit(target: str, shards: List[str], mode: str) -> int: ...
def upload_shard(staging_root: str, info: str, url: str) -> None: ...
def gc(target: str, older_than: float, dry_run: bool) -> List[str]: ...

def cache_stats() -> Dict[str, int]: ...
