"""Recovering from a killed writer: ``create(..., overwrite=True)`` replaces
an unpublished build (and a published store, only with the flag), and the
errors say so; "store busy" says when the holder is this process."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from zrecord import Dense, Ragged, ZrecordError

WRITER = textwrap.dedent("""
    import sys, time
    import numpy as np
    from zrecord import Dense
    w = Dense.create(sys.argv[1], np.uint8, (64,), codec="zstd")
    w.append(np.ones((1000, 64), np.uint8))
    print("appended", flush=True)
    time.sleep(600)
""")


def killed_writer(path):
    """A writer killed with SIGKILL after its first append."""
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "appended"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL


def test_overwrite_replaces_the_build_a_killed_writer_left(tmp_path):
    path = tmp_path / "images"
    killed_writer(path)
    with pytest.raises(ZrecordError, match="unpublished build") as exc:
        Dense.open(path)
    assert "overwrite=True" in str(exc.value)
    with pytest.raises(ZrecordError, match="an unpublished build") as exc:
        Dense.create(path, np.uint8, (64,))
    assert exc.value.code == -12 and "overwrite=True" in str(exc.value), str(exc.value)
    data = np.arange(10 * 64, dtype=np.int64).astype(np.uint8).reshape(10, 64)
    with Dense.create(path, np.uint8, (64,), overwrite=True) as w:
        w.append(data)
    with Dense.open(path, verify=True) as ds:
        assert np.array_equal(ds[:], data)
    assert sorted(os.listdir(path)) == ["data.zr", "meta.zr", "sums.zr"]


def test_a_published_store_is_replaced_only_when_asked(tmp_path):
    path = tmp_path / "tokens"
    with Ragged.create(path, np.int32, codec="zstd_dict", dict_bytes=_dict()) as w:
        w.append([np.arange(5, dtype=np.int32)] * 3)
    with pytest.raises(ZrecordError, match="a published store of 3 records") as exc:
        Ragged.create(path, np.int32)
    assert "overwrite=True" in str(exc.value)
    with Ragged.open(path) as rs:
        assert len(rs) == 3  # untouched
    with Ragged.create(path, np.int32, codec="raw", overwrite=True) as w:
        w.append([np.arange(2, dtype=np.int32)])
    with Ragged.open(path) as rs:
        assert len(rs) == 1 and rs.codec == "raw"
    assert "dict.zr" not in os.listdir(path)  # the old store's files are gone


def _dict():
    from zrecord import train_dict

    rng = np.random.default_rng(0)
    return train_dict([rng.integers(0, 50, 200).astype(np.int32) for _ in range(200)], tier="fast")


def test_overwrite_never_replaces_other_files_or_an_open_store(tmp_path):
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("keep me")
    with pytest.raises(ZrecordError, match="not a store") as exc:
        Dense.create(other, np.uint8, (4,), overwrite=True)
    assert "todo.txt" in str(exc.value)
    assert (other / "todo.txt").read_text() == "keep me"

    path = tmp_path / "open"
    with Dense.create(path, np.uint8, (4,)) as w:
        w.append(np.zeros((2, 4), np.uint8))
    reader = Dense.open(path)
    with pytest.raises(ZrecordError, match="this process has it open for reading") as exc:
        Dense.create(path, np.uint8, (4,), overwrite=True)
    assert exc.value.code == -13
    assert len(reader) == 2
    reader.close()


def test_busy_within_one_process_says_so(tmp_path):
    path = tmp_path / "w"
    writer = Dense.create(path, np.uint8, (4,))
    writer.append(np.zeros((2, 4), np.uint8))
    with pytest.raises(ZrecordError, match="a writer in this process has not closed it") as exc:
        Dense.open(path)
    assert "other process" not in str(exc.value)
    writer.close()
    assert len(Dense.open(path)) == 2
