"""``DataLoader``: loaderx 2.0.1's endless multi-stream loader on zrecord's
prefetching Rust loader, delivering batches in step order."""

import operator
import os
import threading

from . import _native
from ._errors import ZrecordError
from ._records import Dense, Ragged, _words_as

__all__ = ["DataLoader"]


class _WorkerError:
    def __init__(self, exc):
        self.exc = exc
        self.traceback = exc.__traceback__


def _positive_int(value, name):
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer") from None
    if value < 1:
        raise ValueError(f"{name} must be positive")
    return value


class DataLoader:
    """An endless loader over one or more named, aligned streams.

    ``streams`` maps names to opened ``Dense``/``Ragged`` readers holding the
    same number of records (a ``Dataset``'s columns too; ``DataLoader(ds)``
    takes them all); each step draws one batch of indices from
    loaderx's sampler (``batch_size``, ``mode``, ``seed``) and yields
    ``{name: values}`` — a ``(batch_size, *item_shape)`` array for a Dense
    stream, a list of arrays for a Ragged one — after ``transform`` (run on
    ``transform_workers`` threads). Arguments, defaults and errors are
    loaderx's.

    Unlike loaderx, batches arrive **in step order** whatever the threads'
    timing (a transform failure too, at its own step), so a run is
    reproducible. Gathers run on ``gather_workers`` native threads without the
    GIL, at most ``prefetch_size`` steps ahead of the consumer.

    Keywords beyond loaderx:

    * ``rank``, ``world``: read slice ``rank`` of every global batch of
      ``batch_size`` (which ``world`` must divide) — data-parallel sharding.
    * ``start_step``: resume at this step (save ``loader.step`` in a checkpoint).
    * ``gather_workers``: native gather threads (default 2).
    * ``ragged``: ``"list"`` (default, as loaderx) or ``"packed"`` for
      ``(values, offsets, shapes)`` tuples (see ``Ragged.gather``).

    ``close()`` (or leaving a ``with`` block) stops every thread promptly; a
    ``KeyboardInterrupt`` while waiting for a batch closes the loader and
    propagates. A DataLoader cannot cross ``os.fork()`` (its threads do not):
    iterating one in a forked child raises ``ZrecordError``; create it in the
    process that iterates it.
    """

    def __init__(self, streams, transform_workers=4, batch_size=256, prefetch_size=4,
                 mode=2, seed=42, transform=(lambda batch: batch), *, rank=0, world=1,
                 start_step=0, gather_workers=2, ragged="list"):
        self._closed = True
        self.streams = dict(streams)
        invalid = [name for name, ds in self.streams.items()
                   if (not isinstance(ds, (Dense, Ragged)) or ds._writable or
                       getattr(ds, "_store", None) is None)]
        if invalid:
            raise ValueError(f"DataLoader streams must be opened for reading: {invalid}")
        transform_workers = _positive_int(transform_workers, "transform_workers")
        prefetch_size = _positive_int(prefetch_size, "prefetch_size")
        gather_workers = _positive_int(gather_workers, "gather_workers")
        if ragged not in ("list", "packed"):
            raise ValueError("ragged must be 'list' or 'packed'")
        # The core checks the rest: at least one stream, equal and non-zero
        # lengths, and the sampler's arguments (batch_size, mode, seed, rank,
        # world, start_step); its errors are ValueErrors naming the argument.
        self._native = _native.NativeLoader(
            [ds._store for ds in self.streams.values()], [str(name) for name in self.streams],
            batch_size, mode, seed, rank, world, gather_workers, prefetch_size, start_step,
            ragged == "packed",
        )

        self._names = list(self.streams)
        self._kinds = [(isinstance(ds, Dense), ds) for ds in self.streams.values()]
        self._transform = transform
        self._prefetch = prefetch_size
        self._pid = os.getpid()
        # The native loader hands out the gathered steps in order, but the
        # transform threads finish them in any order: each result (or a
        # _WorkerError) waits in `_done`, by step, until the consumer reaches
        # its step.
        self._cond = threading.Condition()
        self._next_step = self._native.step
        self._done = {}
        self._stop = False
        self._closed = False
        self.threads = [
            threading.Thread(target=self._work, name=f"zrecord-transform-{k}", daemon=True)
            for k in range(transform_workers)
        ]
        started = []
        try:
            for thread in self.threads:
                thread.start()
                started.append(thread)
        except BaseException:
            self.threads = started
            self.close()
            raise

    @property
    def step(self):
        """The step of the batch the next ``next()`` returns: save it in a
        checkpoint and pass it as ``start_step`` to resume there."""
        return self._next_step

    def _convert(self, batches):
        out = {}
        for name, (dense, ds), parts in zip(self._names, self._kinds, batches):
            if dense:
                words, nbytes = parts
                n = nbytes // ds._row_bytes if ds._row_bytes else 0
                out[name] = _words_as(words, nbytes, ds.dtype, (n, *ds.item_shape))
            else:
                out[name] = parts  # made by the native loader: a list, or (values, offsets, shapes)
        return out

    def _work(self):
        """Take the next gathered step (in order, from the native loader),
        transform it, and leave the result for the consumer."""
        while True:
            with self._cond:
                # Bounded: never more than prefetch_size results waiting.
                while not self._stop and len(self._done) >= self._prefetch:
                    self._cond.wait(0.1)
                if self._stop:
                    return
            try:
                got = self._native.next()
            except BaseException as exc:  # noqa: BLE001
                # The native loader stops at the failed step, its `step`.
                self._fail(self._native.step, exc)
                return
            if got is None:
                return
            step, _indices, batches = got
            try:
                result = self._transform(self._convert(batches))
            except BaseException as exc:  # noqa: BLE001
                self._fail(step, exc)
                return
            with self._cond:
                if self._stop:
                    return
                self._done[step] = result
                self._cond.notify_all()

    def _fail(self, step, exc):
        with self._cond:
            if self._stop:
                return
            # Delivered at its own step, after every earlier one.
            self._done[self._next_step if step is None else step] = _WorkerError(exc)
            self._cond.notify_all()

    def __len__(self):
        """Raises a TypeError since an endless loader has no length."""
        raise TypeError("Eternal loader has no length.")

    def __iter__(self):
        return self

    def __next__(self):
        if os.getpid() != self._pid:
            raise ZrecordError(
                -13,
                f"this DataLoader was created in process {self._pid}; its threads do not "
                f"exist in the forked process {os.getpid()}. Create the DataLoader in the "
                "process that iterates it (stores opened before the fork work there).",
            )
        try:
            with self._cond:
                while True:
                    if self._stop:
                        raise StopIteration
                    item = self._done.pop(self._next_step, None)
                    if item is not None:
                        break
                    self._cond.wait(0.05)
                self._next_step += 1
                self._cond.notify_all()
        except KeyboardInterrupt:
            self.close()
            raise
        if isinstance(item, _WorkerError):
            self.close()
            raise item.exc.with_traceback(item.traceback)
        return item

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()

    def close(self):
        """Stop every thread and release the batches in flight. Idempotent;
        safe from any thread (a transform included)."""
        if getattr(self, "_closed", True):
            return
        if os.getpid() != self._pid:
            self._closed = True
            return
        with self._cond:
            self._stop = True
            self._done.clear()
            self._cond.notify_all()
        self._native.close()
        current = threading.current_thread()
        for thread in self.threads:
            if thread is not current and thread.ident is not None:
                thread.join()
        self._closed = True
        with self._cond:
            self._done.clear()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass
