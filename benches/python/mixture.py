"""The DataLoader over a mixture of 3 sources against one store holding the
same records (bench.py's mixture rows; the goal is >= 0.95x).

The records are 2 KiB int32 token blocks (512 Zipf ids, as bench.py's
dense-tokens) split 50/30/20 into three stores, mixed by those weights; the
single store holds all of them. Both loaders run cyclic, batches of 256,
default threads; each round times each loader (ABBA order) for ``min_s``
seconds after a few warm-up batches, and the ratio is the median of the
rounds' records/s ratios.
"""

import time

import numpy as np

from zrecord import DataLoader, Dense

SHARES = [0.5, 0.3, 0.2]
BATCH = 256


def _write(path, rows, codec):
    with Dense.create(path, np.int32, (rows.shape[1],), codec=codec) as w:
        w.append(rows)


def _rate(make, min_s):
    """Records per second of a fresh loader, after warm-up batches."""
    with make() as dl:
        for _ in range(4):
            next(dl)
        n, t0 = 0, time.perf_counter()
        while True:
            batch = next(dl)
            n += len(batch["tokens"])
            elapsed = time.perf_counter() - t0
            if elapsed >= min_s:
                return n / elapsed


def run(tokens, work, codecs, min_s, rounds):
    """One row per codec: single-store and mixture records/s and their ratio."""
    rows = []
    n = len(tokens)
    cuts = np.cumsum([int(n * s) for s in SHARES[:-1]])
    for codec in codecs:
        one = work / f"mix-one-{codec}"
        _write(one, tokens, codec)
        parts = []
        for k, part in enumerate(np.split(tokens, cuts)):
            _write(work / f"mix-{k}-{codec}", part, codec)
            parts.append(work / f"mix-{k}-{codec}")

        def single():
            return DataLoader({"tokens": Dense.open(one)}, batch_size=BATCH, mode=2, seed=1)

        def mixed():
            sources = [{"tokens": Dense.open(p)} for p in parts]
            return DataLoader(sources, batch_size=BATCH, mode=2, seed=1, weights=SHARES)

        ratios, r_one, r_mix = [], [], []
        for r in range(rounds):
            order = [(single, r_one), (mixed, r_mix)]
            for make, out in (order if r % 2 == 0 else order[::-1]):
                out.append(_rate(make, min_s))
            ratios.append(r_mix[-1] / r_one[-1])
        rows.append({"codec": codec, "records": n, "single_krec_s": float(np.median(r_one)) / 1e3,
                     "mixture_krec_s": float(np.median(r_mix)) / 1e3, "ratio": float(np.median(ratios)),
                     "ratios": [round(x, 3) for x in ratios]})
    return rows


def markdown(rows):
    out = ["**DataLoader over a mixture of 3 sources** (the same 2 KiB token blocks split 50/30/20, "
           "weights 0.5/0.3/0.2) against one store holding them all, cyclic, batches of 256\n",
           "| codec | records | one store krecords/s | mixture krecords/s | mixture vs one store | goal |",
           "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        met = "met" if r["ratio"] >= 0.95 else "MISSED"
        out.append(f"| {r['codec']} | {r['records']} | {r['single_krec_s']:.1f} | {r['mixture_krec_s']:.1f} | "
                   f"{r['ratio']:.2f}× | ≥ 0.95×: {met} |")
    out.append("")
    return "\n".join(out)
