"""``Mixture``: several sources mixed by weight, a pure function of
``(seed, step, schedule)`` (zrecord's Rust core draws it; the golden streams
in ``tests/fixtures/mixture-golden.json`` hold Python and Rust to the same
batches). Also the argument handling ``DataLoader`` shares for mixtures."""

import operator

from . import _native

__all__ = ["Mixture"]

_U64_MAX = (1 << 64) - 1
_CYCLIC = 2


def _integer(value, name):
    """``value`` as a Python int (not a bool): ``TypeError`` naming it otherwise."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer") from None


def _u64(value, name):
    value = _integer(value, name)
    if not 0 <= value <= _U64_MAX:
        raise ValueError(f"{name} must be in 0..2^64-1 (got {value})")
    return value


def _length(source):
    """A source's length: an integer, or ``len()`` of a store or dataset."""
    try:
        return _u64(source, "a source length")
    except TypeError:
        return len(source)


def _weights(weights, n, what="weights"):
    weights = [float(w) for w in weights]
    if len(weights) != n:
        raise ValueError(f"{len(weights)} {what} given for {n} sources")
    return weights


def _schedule(schedule, n):
    """``{step: weights}`` (or ``(step, weights)`` pairs) as sorted pairs."""
    if schedule is None:
        return []
    items = schedule.items() if hasattr(schedule, "items") else schedule
    out = [(_u64(step, "a schedule step"), _weights(w, n, f"weights at step {step}")) for step, w in items]
    return sorted(out, key=lambda item: item[0])


def _modes(modes, n, default=_CYCLIC):
    if modes is None:
        return [default] * n
    codes = [_u64(m, "a mode") for m in modes]
    if len(codes) != n:
        raise ValueError(f"{len(codes)} modes given for {n} sources")
    if any(c > 2 for c in codes):
        raise ValueError("modes must be Sampler.Mode.SEQUENTIAL, IID or CYCLIC")
    return codes


class Mixture:
    """An endless stream of ``(sources, indices)`` batches over several sources.

    ``lengths`` are the sources' lengths (or the stores/datasets themselves),
    ``weights`` their shares of every global batch of ``batch_size``,
    ``modes`` one ``Sampler.Mode`` per source (cyclic by default: each source
    visits all its records once per epoch, nothing dropped), ``schedule``
    maps a step to new weights. Each step's composition follows the weights
    exactly (Tijdeman's chairman assignment: every source within 1 of
    ``weight × records drawn`` after every step).

    ``next()`` returns this rank's slice (``rank`` of ``world``, which must
    divide ``batch_size``) of the step's global batch: ``uint32`` source
    numbers and ``uint64`` indices into each source. ``seek(step)`` resumes
    anywhere cheaply, on any world size.
    """

    def __init__(self, lengths, weights, batch_size, seed=42, modes=None, schedule=None, rank=0, world=1):
        lengths = [_length(s) for s in lengths]
        n = len(lengths)
        self._native = _native.NativeMixture(
            lengths, _weights(weights, n), _u64(batch_size, "batch_size"), _u64(seed, "seed"),
            _modes(modes, n), _schedule(schedule, n), _u64(rank, "rank"), _u64(world, "world"),
        )

    def next(self):
        """``(sources, indices)`` of the next step: new ``uint32`` and ``uint64`` arrays."""
        return self._native.next()

    def seek(self, step):
        """Reposition to step ``step`` (0-based): the next draw is that step's."""
        self._native.seek(_u64(step, "step"))

    @property
    def step(self):
        """The step the next draw returns."""
        return self._native.step

    @property
    def drawn(self):
        """Records each source has drawn before ``step`` (all ranks together)."""
        return self._native.drawn

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()


def loader_sources(streams):
    """A DataLoader's mixture sources (a list of ``{name: store}``) as the
    names (the first source's order) and each source's stores in that order."""
    sources = [dict(s) for s in streams]
    if not sources:
        raise ValueError("a mixture DataLoader needs at least one source")
    names = list(sources[0])
    ordered = []
    for k, source in enumerate(sources):
        if sorted(source) != sorted(names):
            raise ValueError(f"mixture source {k} has streams {list(source)}, source 0 has {names}")
        ordered.append([source[name] for name in names])
    return names, ordered
