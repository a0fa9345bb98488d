"""Cold reads from Python, zrecord against loaderx 2.0.1 on the same store:
before each round every system's store is closed, its files are evicted
from the page cache (``posix_fadvise(DONTNEED)``, no root needed) and it is
reopened, so each round starts cold. Every round of every system reads its
own random batches (same sizes, another seed) and the systems take turns
going first: on a VM whose host caches the virtual disk, a system reading
batches the other has just read would be served by the host's cache.

    python benches/python/cold.py STORE [--batches 20] [--batch 256] [--rounds 3] [--loader]

With ``--loader``, each round times each system's ``DataLoader`` (one
stream, IID batches, seed 0, default workers and prefetch) for ``--batches``
steps from a cold start instead of plain gathers.

Needs both packages in one interpreter (``scripts/test`` leaves them in the
package venv). Prints records/s per round for each system, the medians and
their ratio. Stores larger than what a round reads give the honest number:
a round of B batches of 256 records should touch a small part of the store.
"""

import argparse
import os
import statistics
import time

import numpy as np


def evict(store):
    """Drop every file under `store` from the page cache. Pages a live map
    still holds stay, so close the store (and every map of it) first."""
    for top, _, names in os.walk(store):
        for name in names:
            fd = os.open(os.path.join(top, name), os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def kind(store):
    import zrecord

    try:
        with zrecord.Dense.open(store):
            return "dense"
    except zrecord.ZrecordError:
        return "ragged"


def modules(system):
    if system == "zrecord":
        import zrecord
        return zrecord, zrecord.DataLoader
    import loaderx.dataloader
    import loaderx.zrecord
    return loaderx.zrecord, loaderx.dataloader.DataLoader


def round_of(system, dense, store, batches, loader):
    m, DataLoader = modules(system)
    evict(store)
    time.sleep(0.05)
    evict(store)  # pages a closed map's readahead was still bringing in
    ds = (m.Dense if dense else m.Ragged).open(store)
    t0 = time.perf_counter()
    if loader:
        dl = DataLoader({"x": ds}, batch_size=len(batches[0]), mode=2, seed=0)
        it = iter(dl)
        for _ in batches:
            out = next(it)
            del out
        dt = time.perf_counter() - t0
        if hasattr(dl, "close"):
            dl.close()
    else:
        for b in batches:
            out = ds[b]
            del out
        dt = time.perf_counter() - t0
    ds.close()
    return len(batches) * len(batches[0]) / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--loader", action="store_true", help="time each system's DataLoader, not gathers")
    a = ap.parse_args()
    dense = kind(a.store) == "dense"
    import zrecord

    with zrecord.Dense.open(a.store) if dense else zrecord.Ragged.open(a.store) as ds:
        n = len(ds)
    results = {"zrecord": [], "loaderx": []}
    for r in range(a.rounds):  # interleaved, so both see the same machine
        order = list(results) if r % 2 == 0 else list(results)[::-1]
        for k, system in enumerate(order):
            rng = np.random.default_rng([a.seed, r, k])
            batches = [rng.integers(0, n, a.batch) for _ in range(a.batches)]
            results[system].append(round_of(system, dense, a.store, batches, a.loader))
    for system, rs in results.items():
        print(f"{system:8s} records/s per round {', '.join(f'{r:,.0f}' for r in rs)}; "
              f"median {statistics.median(rs):,.0f}")
    ratio = statistics.median(results["zrecord"]) / statistics.median(results["loaderx"])
    what = "DataLoader steps" if a.loader else "batches"
    print(f"zrecord / loaderx: {ratio:.2f}x ({n:,} records, {a.batches} {what} of {a.batch}, cold)")


if __name__ == "__main__":
    main()
