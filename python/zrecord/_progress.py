"""Progress for long calls (writes, dictionary training): a sign of life.

``progress`` is what a user passes: ``None``/``False`` (silent), ``True``
(a tqdm bar when tqdm is installed, otherwise a plain line on stderr at most
every second and one at the end), or a callable ``progress(done, total,
what)`` called as work is done (``total`` may be ``None`` when unknown).
"""

import sys
import time

__all__ = ["reporter"]


class _Silent:
    def update(self, n):
        pass

    def close(self):
        pass


class _Callback:
    def __init__(self, fn, total, what):
        self.fn, self.total, self.what, self.done = fn, total, what, 0
        self.fn(0, total, what)

    def update(self, n):
        self.done += n
        self.fn(self.done, self.total, self.what)

    def close(self):
        pass


class _Lines:
    """Plain lines on stderr: at most one a second, and the last one."""

    def __init__(self, total, what, unit):
        self.total, self.what, self.unit, self.done = total, what, unit, 0
        self.start = self.last = time.monotonic()
        self._print()

    def _print(self, final=False):
        of = "" if self.total is None else f"/{self.total}"
        elapsed = time.monotonic() - self.start
        end = " done" if final else ""
        print(f"{self.what}: {self.done}{of} {self.unit} ({elapsed:.1f} s){end}",
              file=sys.stderr, flush=True)

    def update(self, n):
        self.done += n
        now = time.monotonic()
        if now - self.last >= 1.0:
            self.last = now
            self._print()

    def close(self):
        self._print(final=True)


def reporter(progress, total, what, unit="records"):
    """The reporter ``progress`` asks for, over ``total`` units of ``what``;
    call ``update(n)`` as ``n`` more are done and ``close()`` at the end."""
    if progress is None or progress is False:
        return _Silent()
    if callable(progress):
        return _Callback(progress, total, what)
    if progress is not True:
        raise TypeError("progress must be True, False, None or a callable(done, total, what)")
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _Lines(total, what, unit)
    return tqdm(total=total, desc=what, unit=f" {unit}", file=sys.stderr)
