"""Ray Data in and out of zrecord datasets (``docs/ARROW_RAY.md``).

``ds.write_datasink(DatasetSink(uri))`` writes each write task's blocks as
shards (``write_shard``, invisible until committed) and commits them once,
from ``on_write_complete`` on the driver: a failed or retried task leaves
only shards no version names (``zrecord.gc`` removes them), and a failed job
leaves the dataset as it was. ``read_dataset(uri)`` is a ``ray.data.Dataset``
whose read tasks each gather a range of records. Importing this module
imports Ray; ``import zrecord`` alone never does.
"""

import bisect
import functools
import itertools

import numpy as np
import ray.data
from ray.data.block import BlockAccessor, BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask

from ._arrow import TEXT
from ._dataset import _rows_per_shard, commit, open_dataset, write_shard
from ._errors import ZrecordError
from ._records import Dense

__all__ = ["DatasetSink", "committed_keys", "read_dataset"]


def committed_keys(uri, key):
    """The values of column ``key`` (a Dense scalar column, or a text one)
    in the newest version of the dataset at ``uri``, as a set; empty when
    there is no dataset yet. What a resumed conversion skips."""
    try:
        ds = open_dataset(uri)
    except FileNotFoundError:
        return frozenset()
    col = ds.to_arrow(columns=[key])[key]
    return frozenset(col.to_pylist())


class DatasetSink(Datasink):
    """A Ray Data sink writing the dataset at ``uri`` (a directory, or an
    ``s3://``, ``gs://``, ``az://`` prefix): ``codec``, ``codecs`` and
    ``dictionaries`` and ``ragged`` as for ``zrecord.write_shard`` (name the
    image column in ``ragged`` for images of several sizes: Ray hands each
    block's images over as one tensor when their shapes agree), ``mode`` as
    for ``zrecord.commit``. Each block is one shard, cut into shards of at most
    ``rows_per_shard`` rows when given; columns map from Arrow as
    ``to_arrow`` maps back (Ray's tensor columns are Dense or Ragged).

    ``key``: a column naming each row's source (a file path from
    ``include_paths=True``, an id): rows whose key the dataset already holds
    (read once, when the sink is made) are not written again, so re-running
    a conversion that failed after some of its ``mode="append"`` commits
    adds only what is missing. After the write, ``version`` is the version
    committed (``None`` when there was nothing to commit).
    """

    def __init__(self, uri, *, codec="zstd", codecs=None, dictionaries=None, mode="create",
                 rows_per_shard=None, key=None, ragged=None):
        self.uri = uri
        self.options = dict(codec=codec, codecs=codecs, dictionaries=dictionaries, ragged=ragged)
        self.mode = mode
        self.rows_per_shard = _rows_per_shard(rows_per_shard)
        self.key = key
        self.done = committed_keys(uri, key) if key is not None and mode == "append" else frozenset()
        self.version = None

    def get_name(self):
        """The name Ray shows for the write."""
        return "zrecord"

    def write(self, blocks, ctx):
        """Write this task's blocks as shards; return ``(task index, shard infos)``."""
        infos = []
        for block in blocks:
            table = BlockAccessor.for_block(block).to_arrow()
            if self.done:
                keep = np.array([k not in self.done for k in table[self.key].to_pylist()], bool)
                table = table.filter(keep)
            step = self.rows_per_shard or max(table.num_rows, 1)
            for start in range(0, table.num_rows, step):
                infos.append(write_shard(self.uri, table.slice(start, step), **self.options))
        return ctx.task_idx, infos

    def on_write_complete(self, write_result):
        """Commit every task's shards, in task order, as one version."""
        infos = [i for _, part in sorted(write_result.write_returns, key=lambda r: r[0]) for i in part]
        if not infos:
            return
        try:
            self.version = commit(self.uri, infos, mode=self.mode)
        except ZrecordError as e:
            if "item_shape" not in str(e):
                raise
            raise type(e)(e.code, f"{e} (Ray hands over each block's tensors as one shape when they "
                                  "agree: for records of several shapes, name the column in "
                                  "DatasetSink(..., ragged=[...]))") from e


class _Source(Datasource):
    """A committed version of a dataset, read as ranges of records."""

    def __init__(self, uri, columns, version):
        super().__init__()
        ds = open_dataset(uri, version)
        self.uri, self.version, self.length = uri, ds.version, len(ds)
        self.columns = ds.columns if columns is None else list(columns)
        first = ds.gather([0], self.columns) if len(ds) else {}
        self.row_bytes = sum(_nbytes(v) for v in first.values())
        self.bounds = list(itertools.accumulate((n for _, n in ds.shards), initial=0))

    def estimate_inmemory_data_size(self):
        """The first record's bytes times the records."""
        return self.row_bytes * self.length

    def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        """Ranges of records in dataset order, of at least ``TASK_BYTES``
        each, cut at shard boundaries (see ``_cuts``)."""
        # No task smaller than TASK_BYTES: each one opens the dataset, and
        # Ray's default parallelism (hundreds) would spend more on tasks than reads.
        k = max(1, min(parallelism, self.length, -(-self.row_bytes * self.length // TASK_BYTES)))
        cuts = _cuts(self.length, k, self.bounds)
        tasks = []
        for start, stop in zip(cuts, cuts[1:]):
            meta = BlockMetadata(num_rows=stop - start, size_bytes=self.row_bytes * (stop - start),
                                 input_files=None, exec_stats=None)
            rows = max(1, BLOCK_BYTES // max(self.row_bytes, 1))
            read = functools.partial(_read, self.uri, self.version, self.columns, start, stop, rows)
            tasks.append(ReadTask(read, meta, per_task_row_limit=per_task_row_limit))
        return tasks


def _cuts(length, k, bounds):
    """``k + 1`` increasing cuts of ``0..length`` into ranges of about
    ``length / k`` records: each equal cut moved to the nearest shard
    boundary within a quarter of a range (a task then reads whole shards),
    else left where it is (within a shard bigger than that)."""
    cuts = [0]
    for i in range(1, k):
        cut = length * i // k
        near = bisect.bisect_left(bounds, cut)
        best = min(bounds[max(0, near - 1):near + 1], key=lambda b: abs(b - cut), default=cut)
        if abs(best - cut) * 4 * k <= length:
            cut = best
        if cuts[-1] < cut < length:
            cuts.append(cut)
    return cuts + [length]


def _nbytes(v):
    return v.nbytes if isinstance(v, np.ndarray) else sum(r.nbytes for r in v)


# About this many bytes (by the first record's size) per block a read task
# yields, and at least this many per read task.
BLOCK_BYTES = 64 << 20
TASK_BYTES = 32 << 20


def _read(uri, version, columns, start, stop, rows):
    """Blocks of ``rows`` records of ``start..stop``: NumPy columns (text as
    ``str``, bytes as ``bytes``, Ragged records as arrays of their shapes)."""
    ds = open_dataset(uri, version)
    types = ds._native.arrow_types
    for lo in range(start, stop, rows):
        idx = np.arange(lo, min(lo + rows, stop))
        batch = {}
        for name in columns:
            col = ds[name]
            if isinstance(col, Dense):
                batch[name] = col.gather(idx)
                continue
            records = col.gather(idx)
            kind = types.get(name)
            if kind in TEXT:
                records = [r.tobytes() for r in records]
                if "string" in kind:
                    records = [r.decode() for r in records]
            out = np.empty(len(records), object)
            out[:] = records
            batch[name] = out
        yield BlockAccessor.batch_to_block(batch)


def read_dataset(uri, columns=None, version=None, **read_args):
    """Version ``version`` (default: the newest) of the dataset at ``uri``
    as a ``ray.data.Dataset`` of ``columns`` (default: all): read tasks of
    about equal ranges of records cut at shard boundaries (or within a big
    shard), rows in dataset order (Ray keeps that order
    when ``DataContext.execution_options.preserve_order`` is set, or with
    ``streaming_split(..., equal=True)`` per split). ``read_args``
    (``override_num_blocks``, ``runtime_env``, ``concurrency``, ...) go to
    ``ray.data.read_datasource``."""
    return ray.data.read_datasource(_Source(uri, columns, version), **read_args)
