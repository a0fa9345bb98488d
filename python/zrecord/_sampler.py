"""``Sampler``: loaderx 2.0.1's batch index streams, exactly (zrecord's Rust
sampler reproduces them; the golden streams in the test suite check it)."""

import operator

import numpy as np

from . import _native

__all__ = ["Sampler"]

_U64_MAX = (1 << 64) - 1


class Sampler:
    """An endless stream of index batches over ``range(length)``.

    ``mode`` is ``Sampler.Mode.SEQUENTIAL`` (a window sliding in order),
    ``IID`` (uniform draws with replacement) or ``CYCLIC`` (a fresh seeded
    permutation each cycle, without replacement). The stream is a function of
    ``(seed, step)``, so ``seek(step)`` resumes exactly.

    ``next()`` returns a borrowed ``uint64`` view of a reused buffer, as in
    loaderx (fast, no allocation): copy it to keep it across draws.
    Iterating (``for idx in sampler``, ``list(...)``, a
    ``torch.utils.data.DataLoader(sampler=...)``) yields arrays the caller
    owns: a consumer that keeps them, or reads them on another thread, never
    sees them overwritten.

    Beyond loaderx, ``rank`` and ``world`` (keywords) split every global
    batch into ``world`` equal slices and keep slice ``rank``: each of
    ``world`` data-parallel processes reads its own part of the same global
    stream.
    """

    class Mode:
        """Sampling modes (loaderx's numeric codes)."""
        SEQUENTIAL = 0
        IID = 1
        CYCLIC = 2  # without replacement, round-robin

    def __init__(self, length: int, batch_size: int, mode: int, seed: int = 42,
                 *, rank: int = 0, world: int = 1):
        length = operator.index(length)
        batch_size = operator.index(batch_size)
        mode = operator.index(mode)
        seed = operator.index(seed)
        rank = operator.index(rank)
        world = operator.index(world)
        if not 0 < length <= _U64_MAX:
            raise ValueError("length must be in 1..2^64-1")
        if not 0 < batch_size <= _U64_MAX:
            raise ValueError("batch_size must be in 1..2^64-1")
        if mode not in (self.Mode.SEQUENTIAL, self.Mode.IID, self.Mode.CYCLIC):
            raise ValueError("mode must be Sampler.Mode.SEQUENTIAL, IID, or CYCLIC")
        if not 0 <= seed <= _U64_MAX:
            raise ValueError("seed must be in 0..2^64-1")
        if not 0 < world <= _U64_MAX or not 0 <= rank < world:
            raise ValueError("need 0 <= rank < world")
        self.sampler = _native.NativeSampler(length, batch_size, mode, seed, rank, world)
        self.indices = np.zeros(self.sampler.batch_len, dtype=np.uint64)

    def next(self):
        """Return borrowed uint64 indices, unchanged until the next draw.

        The view shares this Sampler's reusable batch buffer. Call ``copy()``
        before retaining a result across another ``next()`` call.
        """
        count = self.sampler.fill(self.indices)
        return self.indices[:count]

    def seek(self, step: int):
        """Reposition to step ``step`` (0-based): the next draw is that step's."""
        step = operator.index(step)
        if not 0 <= step <= _U64_MAX:
            raise ValueError("step must be in 0..2^64-1")
        self.sampler.seek(step)

    @property
    def step(self):
        """The step the next draw returns."""
        return self.sampler.step

    def __iter__(self):
        return self

    def __next__(self):
        """The next batch as a new array the caller owns (unlike ``next()``)."""
        return self.next().copy()
