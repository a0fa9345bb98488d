"""The package's exception: ``ZrecordError``, as loaderx's, with a message."""

__all__ = ["ZrecordError", "ZrecordMemoryError", "ZrecordSchemaError", "ZrecordTypeError"]

# loaderx 2.0.1's codes (loaderx/_store.py), so ``exc.code`` means the same.
_MESSAGES = {
    -1: "out of memory",
    -2: "file I/O failed",
    -4: "record exceeds the 2147483648 byte limit",
    -5: "store is full",
    -6: "buffer too small",
    -7: "stored record failed to decode",
    -8: "invalid or unsupported zrecord store format",
    -9: "zstd dictionary training failed (too few or too small samples)",
    -11: "store not found",
    -12: "store already exists",
    -13: "store is busy (already open by another native handle or process)",
}


class ZrecordError(RuntimeError):
    """A store failed a check of the format, a read or a write.

    ``str(exc)`` names the store (its path or URL) and the failed check;
    ``exc.code`` is loaderx 2.0.1's numeric code for the same failure
    (``-8`` format, ``-7`` a record that does not decode, ``-12`` exists,
    ``-13`` busy, ``-2`` I/O, ...).
    """

    def __init__(self, code, message=None):
        super().__init__(message if message is not None
                         else _MESSAGES.get(code, f"unknown zrecord error {code}"))
        self.code = code


class ZrecordSchemaError(ZrecordError, ValueError):
    """A store whose schema is not the one asked for (a ``ZrecordError`` and,
    as in loaderx, a ``ValueError``)."""


class ZrecordMemoryError(ZrecordError, MemoryError):
    """A buffer sized by the request (a batch, a loader's prefetch) that
    cannot be allocated: a ``ZrecordError`` (code ``-1``) naming the bytes,
    and a ``MemoryError``, as loaderx raises, so the process lives on."""


class ZrecordTypeError(ZrecordError, TypeError):
    """Data zrecord cannot store as given (an Arrow column with nulls, empty
    records or a type with no mapping, see ``docs/ARROW_RAY.md``), or
    records ``to_arrow`` cannot express: a ``ZrecordError`` (code ``-8``)
    naming the column and its type, and a ``TypeError``."""
