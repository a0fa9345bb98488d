"""Mixtures: the Rust core's golden streams, the DataLoader over several
sources, and its state: resumed in another process, on other world sizes,
refused for a changed source."""

import json
import pickle
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from conftest import REPO
from zrecord import DataLoader, Dense, Mixture, Ragged, Sampler

GOLDEN = REPO / "tests" / "fixtures" / "mixture-golden.json"
LENGTHS = [60, 35, 11]
WEIGHTS = [0.7, 0.2, 0.1]
MODES = [Sampler.Mode.CYCLIC, Sampler.Mode.SEQUENTIAL, Sampler.Mode.IID]
SCHEDULE = {20: [0.1, 0.1, 0.8]}


def test_python_and_rust_give_the_golden_streams():
    cases = json.loads(GOLDEN.read_text())["cases"]
    assert len(cases) == 4
    for k, case in enumerate(cases):
        m = Mixture(case["lengths"], case["weights"], case["batch_size"], seed=case["seed"],
                    modes=case["modes"], schedule={int(s): w for s, w in case["schedule"].items()},
                    rank=case["rank"], world=case["world"])
        m.seek(case["seek"])
        for j, (want_s, want_i) in enumerate(case["batches"]):
            sources, indices = m.next()
            assert sources.dtype == np.uint32 and indices.dtype == np.uint64
            assert (sources.tolist(), indices.tolist()) == (want_s, want_i), f"case {k} batch {j}"
        assert m.step == case["seek"] + len(case["batches"])


def test_composition_follows_the_weights_after_every_step():
    m = Mixture([5, 5, 5], [0.7, 0.2, 0.1], 7)
    counts = np.zeros(3)
    for step in range(1, 200):
        sources, _ = m.next()
        counts += np.bincount(sources, minlength=3)
        assert np.all(np.abs(counts - np.array([0.7, 0.2, 0.1]) * 7 * step) <= 1), step
    assert m.drawn == counts.astype(int).tolist()


def test_world_sizes_slice_one_global_batch_and_bad_ones_are_refused():
    whole = Mixture(LENGTHS, WEIGHTS, 16, seed=3, modes=MODES, schedule=SCHEDULE)
    whole.seek(15)
    want = [whole.next() for _ in range(10)]
    for world in (1, 2, 4, 8):
        ranks = [Mixture(LENGTHS, WEIGHTS, 16, seed=3, modes=MODES, schedule=SCHEDULE, rank=r, world=world)
                 for r in range(world)]
        for m in ranks:
            m.seek(15)
        for ws, wi in want:
            parts = [m.next() for m in ranks]
            assert np.concatenate([p[0] for p in parts]).tolist() == ws.tolist()
            assert np.concatenate([p[1] for p in parts]).tolist() == wi.tolist()
    with pytest.raises(ValueError, match="into 3 equal shards"):
        Mixture(LENGTHS, WEIGHTS, 16, world=3)
    with pytest.raises(ValueError, match="weights given for 3 sources"):
        Mixture(LENGTHS, [1.0], 16)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Three sources: `id` holds 1000 × source + index, `seq` ragged int32."""
    root = tmp_path_factory.mktemp("mix")
    for s, n in enumerate(LENGTHS):
        with Dense.create(root / f"id{s}", np.int64, ()) as w:
            w.append(1000 * s + np.arange(n, dtype=np.int64))
        with Ragged.create(root / f"seq{s}", np.int32) as w:
            w.append([np.full(i % 4 + 1, 1000 * s + i, dtype=np.int32) for i in range(n)])
    return root


def open_sources(root):
    return [{"id": Dense.open(root / f"id{s}"), "seq": Ragged.open(root / f"seq{s}")} for s in range(3)]


def loader(root, **kw):
    return DataLoader(open_sources(root), batch_size=16, seed=3, weights=WEIGHTS, modes=MODES,
                      schedule=SCHEDULE, **kw)


def test_the_dataloader_mixes_the_sources(sources):
    m = Mixture([Dense.open(sources / f"id{s}") for s in range(3)], WEIGHTS, 16, seed=3, modes=MODES,
                schedule=SCHEDULE)
    with loader(sources) as dl:
        for step in range(40):
            batch = next(dl)
            s, i = m.next()
            assert batch["_source"].dtype == np.uint32
            assert batch["_source"].tolist() == s.tolist(), step
            assert batch["id"].tolist() == (1000 * s.astype(np.int64) + i.astype(np.int64)).tolist()
            assert [int(r[0]) for r in batch["seq"]] == batch["id"].tolist()
            assert [len(r) for r in batch["seq"]] == [int(x) % 4 + 1 for x in i]


def ids(dl, n):
    return [next(dl)["id"].tolist() for _ in range(n)]


def test_state_is_plain_data_and_prefetched_batches_are_not_counted(sources):
    with loader(sources, prefetch_size=6) as dl:
        ids(dl, 7)
        time.sleep(0.1)  # the loader prefetches ahead meanwhile
        state = dl.state_dict()
    assert state["step"] == 7
    assert pickle.loads(pickle.dumps(state)) == state
    assert json.loads(json.dumps(state)) == state
    assert state["schedule"] == [[0, WEIGHTS], [20, SCHEDULE[20]]]
    assert [s[0]["length"] for s in state["sources"]] == LENGTHS


def test_resume_in_a_new_process_on_any_world_size(sources, tmp_path):
    with loader(sources) as dl:
        whole = ids(dl, 40)
    with loader(sources) as dl:
        assert ids(dl, 13) == whole[:13]
        (tmp_path / "state.json").write_text(json.dumps(dl.state_dict()))
    # A new process resumes from the saved state (past the schedule change at 20).
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(REPO / "python" / "tests")!r})
        from test_mixture import loader, ids
        from pathlib import Path
        state = json.loads(Path({str(tmp_path / "state.json")!r}).read_text())
        with loader(Path({str(sources)!r})) as dl:
            dl.load_state_dict(state)
            print(json.dumps(ids(dl, 27)))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == whole[13:]
    # Other world sizes, same global batches.
    state = json.loads((tmp_path / "state.json").read_text())
    for world in (2, 4, 8):
        ranks = [loader(sources, rank=r, world=world) for r in range(world)]
        for dl in ranks:
            dl.load_state_dict(state)
        for want in whole[13:30]:
            got = [x for dl in ranks for x in next(dl)["id"].tolist()]
            assert got == want, world
        for dl in ranks:
            dl.close()


def test_a_schedule_change_is_the_same_passed_or_resumed(sources):
    with loader(sources) as dl:
        whole = ids(dl, 30)
        state = dl.state_dict()
    with loader(sources, start_step=25) as dl:
        assert ids(dl, 5) == whole[25:]
    with loader(sources) as dl:
        dl.load_state_dict({**state, "step": 22})
        assert ids(dl, 8) == whole[22:]


def test_a_changed_source_is_refused(sources, tmp_path):
    with loader(sources) as dl:
        state = dl.state_dict()
    # Source 1's `id` rewritten with one more record: same name, new length.
    with Dense.create(tmp_path / "id1", np.int64, ()) as w:
        w.append(np.arange(LENGTHS[1] + 1, dtype=np.int64))
    with Ragged.create(tmp_path / "seq1", np.int32) as w:
        w.append([np.full(1, i, dtype=np.int32) for i in range(LENGTHS[1] + 1)])
    srcs = open_sources(sources)
    srcs[1] = {"id": Dense.open(tmp_path / "id1"), "seq": Ragged.open(tmp_path / "seq1")}
    with DataLoader(srcs, batch_size=16, seed=3, weights=WEIGHTS, modes=MODES, schedule=SCHEDULE) as dl:
        with pytest.raises(ValueError, match=r'source 1 stream "id" .*length: the state has 35, this loader has 36'):
            dl.load_state_dict(state)
    with loader(sources) as dl, pytest.raises(ValueError, match="seed"):
        dl.load_state_dict({**state, "seed": 4})
    with loader(sources) as dl, pytest.raises(ValueError, match="mixture"):
        dl.load_state_dict({**state, "schedule": [[0, WEIGHTS]]})


def test_bad_mixture_loaders_are_refused(sources):
    with pytest.raises(ValueError, match="weights="):
        DataLoader(open_sources(sources), batch_size=16)
    with pytest.raises(ValueError, match="equal shards"):
        loader(sources, world=3)
    srcs = open_sources(sources)
    del srcs[2]["seq"]
    with pytest.raises(ValueError, match="source 2"):
        DataLoader(srcs, batch_size=16, weights=WEIGHTS)
