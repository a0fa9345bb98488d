"""The sampler reproduces loaderx 2.0.1's golden index streams exactly."""

import json

import numpy as np
import pytest

from conftest import GOLDEN
from zrecord import Sampler

CASES = json.loads(GOLDEN.read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['mode']}-{c['length']}-{c['batch_size']}-{c['seed']}-{c['seek']}"
                                             for c in CASES])
def test_golden_stream(case):
    s = Sampler(case["length"], case["batch_size"], case["mode"], case["seed"])
    if case["seek"] is not None:
        s.seek(case["seek"])
    for want in case["batches"]:
        got = s.next()
        assert got.dtype == np.uint64
        assert got.tolist() == want


def test_iteration_and_step():
    s = Sampler(10, 4, Sampler.Mode.SEQUENTIAL, 0)
    assert s.step == 0
    assert [next(s).tolist() for _ in range(3)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
    assert s.step == 3
    s.seek(1)
    assert s.next().tolist() == [4, 5, 6, 7]


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_shards_split_the_global_stream(mode):
    whole = Sampler(1000, 32, mode, 5)
    shards = [Sampler(1000, 32, mode, 5, rank=r, world=4) for r in range(4)]
    for _ in range(50):
        glob = whole.next().tolist()
        parts = [s.next().tolist() for s in shards]
        assert all(len(p) == 8 for p in parts)
        assert sum(parts, []) == glob


def test_shard_arguments():
    with pytest.raises(ValueError):
        Sampler(100, 10, 2, rank=0, world=3)  # 10 is not a multiple of 3
    with pytest.raises(ValueError):
        Sampler(100, 12, 2, rank=3, world=3)
