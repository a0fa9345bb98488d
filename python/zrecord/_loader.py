"""``DataLoader``: loaderx 2.0.1's endless multi-stream loader on zrecord's
prefetching Rust loader, delivering batches in step order."""

import json
import os
import threading

from . import _native
from ._errors import ZrecordError
from ._mixture import _integer, _modes, _schedule, _weights, loader_sources
from ._records import Dense, Ragged, _words_as

__all__ = ["DataLoader"]


class _WorkerError:
    def __init__(self, exc):
        self.exc = exc
        self.traceback = exc.__traceback__


def _positive_int(value, name):
    value = _integer(value, name)
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
    * Mixtures: ``streams`` may be a list of such mappings (one per source,
      the same names and dtypes in each) with ``weights=`` (one per source),
      ``schedule=`` (``{step: weights}``) and ``modes=`` (one mode per
      source; ``mode`` for all by default); each step's records come from
      the sources as ``zrecord.Mixture`` draws them, and every batch holds
      ``"_source"``, each record's source (``uint32``).
    * ``state_dict()`` / ``load_state_dict(state)``: the checkpoint as plain
      data (see ``state_dict``).

    ``close()`` (or leaving a ``with`` block) stops every thread promptly; a
    ``KeyboardInterrupt`` while waiting for a batch closes the loader and
    propagates. A DataLoader cannot cross ``os.fork()`` (its threads do not):
    iterating one in a forked child raises ``ZrecordError``; create it in the
    process that iterates it.
    """

    def __init__(self, streams, transform_workers=4, batch_size=256, prefetch_size=4,
                 mode=2, seed=42, transform=(lambda batch: batch), *, rank=0, world=1,
                 start_step=0, gather_workers=2, ragged="list", weights=None, schedule=None, modes=None):
        self._closed = True
        mixed = isinstance(streams, (list, tuple))
        if mixed:
            names, per_source = loader_sources(streams)
            self.streams = dict(zip(names, per_source[0]))
            n = len(per_source)
            if weights is None:
                raise ValueError("a DataLoader over a list of sources needs weights=, one per source")
            mix = {"more": [[ds._store for ds in src] for src in per_source[1:]],
                   "weights": _weights(weights, n), "schedule": _schedule(schedule, n),
                   "modes": _modes(modes, n, mode)}
            readers = [ds for src in per_source for ds in src]
        else:
            if weights is not None or schedule is not None or modes is not None:
                raise ValueError("weights, schedule and modes need a list of sources")
            self.streams = dict(streams)
            mix = {}
            readers = list(self.streams.values())
        invalid = [getattr(ds, "path", ds) for ds in readers
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
        self._make_native = lambda step: _native.NativeLoader(
            [ds._store for ds in self.streams.values()], [str(name) for name in self.streams],
            batch_size, mode, seed, rank, world, gather_workers, prefetch_size, step,
            ragged == "packed", **mix,
        )
        self._native = self._make_native(start_step)

        self._names = list(self.streams)
        self._kinds = [(isinstance(ds, Dense), ds) for ds in self.streams.values()]
        self._transform = transform
        self._prefetch = prefetch_size
        self._transform_workers = transform_workers
        self._pid = os.getpid()
        self._start()

    def _start(self):
        """Start the transform threads over ``self._native``."""
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
            for k in range(self._transform_workers)
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

    @property
    def fetched_ahead(self):
        """Bytes the look-ahead fetched before the gathers needed them: for
        streams read through a node-local cache (``cache=``), the blocks of
        the steps after the prefetch window (the sampler knows them
        exactly). Counted since the loader started (or last resumed)."""
        return self._native.fetched_ahead

    def state_dict(self):
        """The checkpoint, as torchdata's ``StatefulDataLoader`` gives it:
        plain data (it pickles and serialises as JSON) holding ``step`` (the
        next batch ``next()`` returns: batches prefetched but not handed out
        are not counted), ``seed``, ``batch_size``, ``modes``, the mixture's
        ``schedule`` and every store's identity (path, length, stored
        bytes). ``rank`` and ``world`` are not in it: resume on any world
        size that divides the batch."""
        return json.loads(self._native.state_json(self._next_step))

    def load_state_dict(self, state):
        """Resume at ``state``'s step (from ``state_dict``, here or in another
        process). A state from another run is refused with a ``ValueError``
        naming what differs: a source's length or stored bytes (the store
        changed), the seed, the batch size or the mixture."""
        step = self._native.check_state(json.dumps(state))
        self.close()
        self._native = self._make_native(step)
        self._start()

    def _convert(self, batches, sources=None):
        out = {}
        for name, (dense, ds), parts in zip(self._names, self._kinds, batches):
            if dense:
                words, nbytes = parts
                n = nbytes // ds._row_bytes if ds._row_bytes else 0
                out[name] = _words_as(words, nbytes, ds.dtype, (n, *ds.item_shape))
            else:
                out[name] = parts  # made by the native loader: a list, or (values, offsets, shapes)
        if sources is not None:
            out["_source"] = sources
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
            step, _indices, batches, sources = got
            try:
                result = self._transform(self._convert(batches, sources))
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
