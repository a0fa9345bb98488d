"""Type stubs for zrecord.ray: a Ray Data sink and source for datasets."""

import os
from typing import Any, FrozenSet, Iterable, Literal, Mapping, Optional, Union

_PathLike = Union[str, "os.PathLike[str]"]
_Codec = Literal["raw", "zstd", "zstd_dict"]

def committed_keys(uri: _PathLike, key: str) -> FrozenSet[Any]:
    """The values of column ``key`` in the newest version (empty when there is none)."""

class DatasetSink:
    """A Ray Data sink: shards from each write task, one commit at the end."""
    uri: _PathLike
    mode: str
    key: Optional[str]
    version: Optional[int]
    def __init__(
        self,
        uri: _PathLike,
        *,
        codec: _Codec = "zstd",
        codecs: Optional[Mapping[str, _Codec]] = None,
        dictionaries: Optional[Mapping[str, bytes]] = None,
        mode: Literal["create", "append", "overwrite"] = "create",
        rows_per_shard: Optional[int] = None,
        key: Optional[str] = None,
        ragged: Optional[Iterable[str]] = None,
    ) -> None: ...
    def get_name(self) -> str: ...
    def write(self, blocks: Iterable[Any], ctx: Any) -> Any: ...
    def on_write_complete(self, write_result: Any) -> None: ...

def read_dataset(
    uri: _PathLike,
    columns: Optional[Iterable[str]] = None,
    version: Optional[int] = None,
    **read_args: Any,
) -> Any:
    """A ``ray.data.Dataset`` of the dataset's records, in order."""
