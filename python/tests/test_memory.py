"""A batch too large for memory raises (MemoryError, a ZrecordError naming
the bytes) and the interpreter lives on: never an abort (a lost Jupyter
kernel or training job). Run in a child process whose address space is
capped at 8 GiB, so every oversized buffer is refused whatever the machine's
memory and overcommit policy; an abort there would show as exit 134."""

import subprocess
import sys
import textwrap

import numpy as np

from zrecord import DataLoader, Dense, Ragged

CHILD = textwrap.dedent(r"""
    import resource, sys
    import numpy as np
    from zrecord import Dense, Ragged, DataLoader, ZrecordError, ZrecordMemoryError
    cap = 8 << 30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    images, tokens = sys.argv[1], sys.argv[2]
    big = np.zeros(10**7, dtype=np.int64)   # 10^7 images of 12 KiB: 123 GB

    def expect(what, call):
        try:
            call()
        except MemoryError as exc:
            assert isinstance(exc, ZrecordError) and exc.code == -1, (what, repr(exc))
            assert "bytes" in str(exc) and "out of memory" in str(exc), (what, str(exc))
            print("raised", what, str(exc))
            return
        raise AssertionError(f"{what}: no MemoryError")

    ds = Dense.open(images)
    expect("dense", lambda: ds[big])
    expect("dense gather", lambda: ds.gather(big))
    rs = Ragged.open(tokens)
    expect("ragged", lambda: rs[big])
    expect("ragged packed", lambda: rs.gather(big, packed=True))
    with DataLoader({"image": ds}, batch_size=10**7, mode=1) as loader:
        expect("loader", lambda: next(loader))
    expect("prefetch", lambda: DataLoader({"image": ds}, batch_size=4, prefetch_size=2**62))
    assert ds[[3]].shape == (1, 3, 64, 64)   # still reads
    print("alive")
""")


def test_oversized_batches_raise_memory_error_in_a_child(tmp_path):
    images = np.random.default_rng(0).integers(0, 255, (8, 3, 64, 64), dtype=np.uint8)
    with Dense.create(tmp_path / "img", np.uint8, (3, 64, 64), codec="zstd") as w:
        w.append(images)
    with Ragged.create(tmp_path / "tok", np.uint8, codec="raw") as w:
        w.append([images[i].reshape(-1) for i in range(8)])
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "img"), str(tmp_path / "tok")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    for what in ("dense", "dense gather", "ragged", "ragged packed", "loader", "prefetch"):
        assert f"raised {what} " in out.stdout, out.stdout
    assert "122880000000 bytes" in out.stdout, out.stdout  # the message names the size
    assert out.stdout.rstrip().endswith("alive")


def test_an_empty_store_in_a_dataloader_says_the_store_is_empty(tmp_path):
    Dense.create(tmp_path / "empty", np.int64, ()).close()
    ds = Dense.open(tmp_path / "empty")
    try:
        DataLoader({"label": ds}, batch_size=4)
        raise AssertionError("an empty store was accepted")
    except ValueError as exc:
        assert "the store is empty" in str(exc) and "label" in str(exc), str(exc)
