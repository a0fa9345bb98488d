"""The timed loop the Python-side benchmarks share (``python/bench.py`` for
zrecord, ``compare_peers.py`` for loaderx and NumPy), so both sides of a
ratio are timed the same way."""

import time


def time_batches(fn, batches, cursor, min_s, cut=slice(None)):
    """Call ``fn`` on ``batches[cursor]``, ``batches[cursor + 1]``, ...
    (wrapping around; each cut to ``cut``) until the calls add up to
    ``min_s`` seconds, dropping each result before the next call. Returns
    the seconds of each call and the next cursor."""
    lat, total, n = [], 0.0, len(batches)
    clock = time.perf_counter
    while total < min_s:
        b = batches[cursor % n][cut]
        cursor += 1
        t0 = clock()
        out = fn(b)
        dt = clock() - t0
        del out
        total += dt
        lat.append(dt)
    return lat, cursor


def save_results(args, md, data):
    """Print a benchmark's Markdown table and write it, and ``data`` as JSON,
    where ``--md`` and ``--json`` say."""
    import json
    from pathlib import Path
    print(md)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    if args.md:
        Path(args.md).write_text(md)
