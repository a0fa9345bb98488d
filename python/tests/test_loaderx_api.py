"""loaderx 2.0.1's own public-API tests (its sdist's scripts/test_loaderx.py),
run against zrecord: the script's loaderx imports are pointed at zrecord and
each of its test functions becomes a pytest test.

Excepted (they test loaderx's private internals, not its API):

* test_stores_share_one_executor — asserts ``store._store._executor`` (the
  private cffi Zig executor object); zrecord has no such object (reads run on
  rayon's pool).
* test_ragged_append_ownership_and_synchronous_error — replaces the private
  ``_store.ragged_append`` (a cffi call) with a stub to inject a failure; our
  native store is a Rust object whose methods cannot be replaced. The
  ownership half is ported in test_api_extra.py.
* test_ragged_packing_noncontiguous_and_atomic_validation — calls the private
  ``_prepare_batch`` expecting loaderx's packed byte layout and installs a fake
  ``_store`` with ``record_lengths``/``ragged_gather``; the strided-record
  and validate-before-write halves are ported in test_api_extra.py.

Adapted (see ADAPTED): loaderx refuses negative indices, zrecord counts
them from the end as NumPy does, so the two tests that expect ``ds[-1]`` to
raise check an index past the start (``-len(ds) - 1``) and ``2**70``
instead; iterating a Sampler yields arrays the caller owns (``next()`` keeps
the borrowed view), so ``next(sampler)`` must not share its buffer.
"""

import re
import types

import pytest

import zrecord
from conftest import loaderx_sdist

EXCEPTED = {
    "test_stores_share_one_executor": "asserts loaderx's private cffi executor",
    "test_ragged_append_ownership_and_synchronous_error": "monkeypatches the private _store.ragged_append",
    "test_ragged_packing_noncontiguous_and_atomic_validation": "uses private _prepare_batch and a fake _store",
}


# Negative indices count from the end (NumPy's rule, which loaderx refuses):
# the out-of-range checks use indices past either end instead. Iteration
# yields owned arrays.
ADAPTED = {
    r"^(\s+)assert np\.shares_memory\(first, resumed\)$": "\\1assert not np.shares_memory(first, resumed)",
    r"for bad in \(-1, \[-1, 0\], \[65\], np\.array\(\[-1\]\), slice\(-1, None\)\):":
        "for bad in (-66, [-66, 0], [65], np.array([-66]), 2 ** 70):",
    r"^(\s+)ds\[-1\]\n(\s+)raise AssertionError\(\"negative ragged index was accepted\"\)":
        "\\1ds[-len(ds) - 1]\n\\2raise AssertionError(\"negative ragged index was accepted\")",
}


def _load():
    source = (loaderx_sdist() / "scripts" / "test_loaderx.py").read_text()
    replacements = {
        r"^import loaderx  # noqa: E402$":
            "loaderx = __import__('types').SimpleNamespace(zrecord=__import__('zrecord'), "
            "__file__=__import__('zrecord').__file__)",
        r"^from loaderx import _lib  # noqa: E402$": "_lib = None",
        r"^from loaderx\.utils import train_dict  # noqa: E402$": "from zrecord import train_dict",
        r"^from loaderx\.zrecord import Dense, Ragged, ZrecordError  # noqa: E402$":
            "from zrecord import Dense, Ragged, ZrecordError",
        r"^from loaderx\.dataloader import DataLoader  # noqa: E402$": "from zrecord import DataLoader",
        r"^from loaderx\.zsampler import Sampler  # noqa: E402$": "from zrecord import Sampler",
    }
    for pattern, repl in {**replacements, **ADAPTED}.items():
        source, n = re.subn(pattern, repl, source, flags=re.M)
        assert n == 1, f"loaderx's test script changed: {pattern!r} not found"
    assert not re.search(r"^\s*(from|import) loaderx", source, re.M), "an import was missed"
    module = types.ModuleType("loaderx_tests_on_zrecord")
    module.__file__ = str(loaderx_sdist() / "scripts" / "test_loaderx.py")
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


_MODULE = _load()
_NAMES = sorted(n for n in vars(_MODULE) if n.startswith("test_") and callable(getattr(_MODULE, n)))


def test_the_script_has_tests():
    assert len(_NAMES) >= 40, _NAMES
    assert set(EXCEPTED) <= set(_NAMES)
    assert zrecord.__all__  # imported from zrecord, not loaderx


@pytest.mark.parametrize("name", [n for n in _NAMES if n not in EXCEPTED])
def test_loaderx(name):
    getattr(_MODULE, name)()
