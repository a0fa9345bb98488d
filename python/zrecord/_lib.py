"""Where the native library is, as loaderx 2.0.1's ``_lib`` says it (its
test script prints ``_lib.path("store")``): zrecord has one native module,
``zrecord._native``, for every stem."""

from . import _native

__all__ = ["path"]


def path(stem):
    """Absolute path of the native library that serves ``stem``."""
    return _native.__file__
