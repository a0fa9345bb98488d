"""Long writes and dictionary training report progress: to a callback, as
plain lines on stderr without tqdm, or through tqdm when it is installed."""

import sys

import numpy as np
import pytest

from zrecord import Dense, Ragged, train_dict

# 48 MiB of rows: two rounds of 32 MiB when progress is on.
ROWS = np.random.default_rng(0).integers(0, 255, (48 * 256, 4096), dtype=np.uint8)


def test_appends_report_to_a_callback(tmp_path):
    calls = []
    with Dense.create(tmp_path / "d", np.uint8, (4096,), codec="raw",
                      progress=lambda done, total, what: calls.append((done, total, what))) as w:
        w.append(ROWS)
    assert calls[0] == (0, len(ROWS), "d: append")
    assert calls[-1][0] == len(ROWS)
    assert len(calls) >= 3, calls  # a start and at least two rounds
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)
    with Dense.open(tmp_path / "d") as ds:
        assert np.array_equal(ds[:], ROWS)

    calls.clear()
    recs = [ROWS[i] for i in range(len(ROWS))]
    with Ragged.create(tmp_path / "r", np.uint8, codec="raw") as w:
        w.append(recs, progress=lambda done, total, what: calls.append((done, total)))
    assert calls[0] == (0, len(recs)) and calls[-1] == (len(recs), len(recs)) and len(calls) >= 3


def test_a_callback_may_read_the_store_it_reports_on(tmp_path):
    """The writer is not locked while the callback runs: len(w) there reads
    the records written so far instead of deadlocking on the writer."""
    seen = []
    w = Dense.create(tmp_path / "d", np.uint8, (4096,), codec="raw",
                     progress=lambda done, total, what: seen.append((done, len(w))))
    w.append(ROWS)
    w.close()
    assert seen[-1] == (len(ROWS), len(ROWS)), seen
    assert all(n >= done for done, n in seen), seen


def test_a_callback_that_raises_stops_the_append(tmp_path):
    def stop(done, total, what):
        if done:
            raise KeyboardInterrupt

    w = Dense.create(tmp_path / "d", np.uint8, (4096,), codec="raw", progress=stop)
    with pytest.raises(KeyboardInterrupt):
        w.append(ROWS)
    w.close()


def test_plain_lines_without_tqdm(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm fails
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with Dense.create(tmp_path / "d", np.uint8, (4096,), codec="raw", progress=True) as w:
        w.append(ROWS)
    err = capsys.readouterr().err
    assert f"d: append: 0/{len(ROWS)} records" in err
    assert f"d: append: {len(ROWS)}/{len(ROWS)} records" in err and "done" in err
    train_dict(ROWS[:200], tier="fast", progress=True)
    err = capsys.readouterr().err
    assert "train_dict (fast): sample, train: 2/2 steps" in err and "done" in err


def test_tqdm_when_installed(tmp_path, capsys):
    pytest.importorskip("tqdm")
    with Dense.create(tmp_path / "d", np.uint8, (4096,), codec="raw", progress=True) as w:
        w.append(ROWS)
    err = capsys.readouterr().err
    assert "d: append" in err and f"{len(ROWS)}/{len(ROWS)}" in err


def test_train_dict_reports_its_steps(tmp_path):
    calls = []
    d = train_dict(ROWS[:200], tier="fast", progress=lambda *a: calls.append(a))
    assert d == train_dict(ROWS[:200], tier="fast")
    assert [c[:2] for c in calls] == [(0, 2), (1, 2), (2, 2)]
    with Dense.create(tmp_path / "d", np.uint8, (4096,), codec="raw") as w:
        w.append(ROWS[:200])
    calls.clear()
    with Dense.open(tmp_path / "d") as ds:
        train_dict(ds, tier="fast", progress=lambda *a: calls.append(a))
    assert [c[:2] for c in calls] == [(0, 2), (1, 2), (2, 2)]
