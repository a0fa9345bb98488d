"""torch.utils.data with 2 workers, forked and spawned: a store as a
map-style dataset, our Sampler with ``batch_size=None``, and the shipped
Ragged collate (packed and padded). Skipped only when torch is not installed
(.ci/install installs it)."""

import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from zrecord import Dense, Ragged, Sampler  # noqa: E402
from zrecord.torch import PackedBatch, PaddedBatch, collate_ragged  # noqa: E402

N = 64


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("torch")
    images = np.random.default_rng(0).integers(0, 255, (N, 3, 8, 8), dtype=np.uint8)
    with Dense.create(root / "img", np.uint8, (3, 8, 8)) as w:
        w.append(images)
    tokens = [np.arange(i % 9 + 1, dtype=np.int32) * (i + 1) for i in range(N)]
    with Ragged.create(root / "tok", np.int32) as w:
        w.append(tokens)
    return root, images, tokens


def loader(dataset, context, **kwargs):
    return torch.utils.data.DataLoader(dataset, num_workers=2, multiprocessing_context=context,
                                       persistent_workers=False, **kwargs)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_map_style_dense_with_two_workers(stores, context):
    root, images, _ = stores
    ds = Dense.open(root / "img", verify=True)  # options travel to spawned workers
    seen = []
    for batch in loader(ds, context, batch_size=8, shuffle=False):
        assert isinstance(batch, torch.Tensor) and batch.shape == (8, 3, 8, 8)
        seen.append(batch.numpy())
    assert np.array_equal(np.concatenate(seen), images)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_our_sampler_with_batch_size_none(stores, context):
    root, images, tokens = stores
    steps = 6
    expected = [i for _, i in zip(range(steps), Sampler(N, 16, Sampler.Mode.CYCLIC, seed=5))]
    dense = loader(Dense.open(root / "img"), context, batch_size=None,
                   sampler=Sampler(N, 16, Sampler.Mode.CYCLIC, seed=5))
    for step, (batch, idx) in enumerate(zip(dense, expected)):
        assert torch.equal(batch, torch.from_numpy(images[idx]))
        if step + 1 == steps:
            break
    ragged = loader(Ragged.open(root / "tok"), context, batch_size=None, collate_fn=collate_ragged,
                    sampler=Sampler(N, 16, Sampler.Mode.CYCLIC, seed=5))
    for step, (batch, idx) in enumerate(zip(ragged, expected)):
        assert isinstance(batch, PackedBatch)
        for k, i in enumerate(idx):
            got = batch.values[batch.offsets[k]:batch.offsets[k + 1]]
            assert torch.equal(got, torch.from_numpy(tokens[i]))
        if step + 1 == steps:
            break


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_ragged_collate_packed_and_padded_with_two_workers(stores, context):
    root, _, tokens = stores
    rs = Ragged.open(root / "tok")
    packed = list(loader(rs, context, batch_size=8, collate_fn=collate_ragged))
    padded = list(loader(rs, context, batch_size=8, collate_fn=functools.partial(collate_ragged, padding_value=-1)))
    assert len(packed) == len(padded) == N // 8
    for b, (pk, pd) in enumerate(zip(packed, padded)):
        assert isinstance(pd, PaddedBatch)
        recs = tokens[b * 8:(b + 1) * 8]
        assert pd.values.shape == (8, max(len(r) for r in recs))
        for k, r in enumerate(recs):
            assert torch.equal(pk.values[pk.offsets[k]:pk.offsets[k + 1]], torch.from_numpy(r))
            assert int(pd.shapes[k, 0]) == len(r)
            assert torch.equal(pd.values[k, :len(r)], torch.from_numpy(r))
            assert bool((pd.values[k, len(r):] == -1).all())


def test_collate_takes_a_packed_gather_and_rejects_mixed_ranks(stores):
    root, _, tokens = stores
    rs = Ragged.open(root / "tok")
    batch = collate_ragged(rs.gather([3, 1, 4], packed=True))
    assert batch.offsets.tolist() == [0, 4, 6, 11]
    assert torch.equal(batch.values[4:6], torch.from_numpy(tokens[1]))
    with pytest.raises(ValueError, match="one rank"):
        collate_ragged([np.zeros((2, 2)), np.zeros(3)], padding_value=0)
    assert collate_ragged([np.zeros((2, 2)), np.zeros(3)]).shapes.tolist() == [[2, 2], [3, -1]]
