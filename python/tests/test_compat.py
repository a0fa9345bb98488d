"""Byte compatibility with the real loaderx 2.0.1 (in its own venv):
stores written here read back by loaderx and the reverse, and identical
dictionaries from train_dict."""

import hashlib
import json

import numpy as np
import pytest

from conftest import run_loaderx
from zrecord import Dense, Ragged, train_dict

CODECS = ["raw", "zstd", "zstd_dict"]


def smooth_images(n, shape=(3, 16, 16), seed=0):
    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    out = np.empty((n, *shape), np.uint8)
    for i in range(n):
        img = np.sin(2 * np.pi * (ramp * (rng.random() * 4 + 1) + rng.random())) * 0.5 + 0.5
        out[i] = np.clip(img * 255, 0, 255).astype(np.uint8)
    return out


def token_records(n, seed=1):
    rng = np.random.default_rng(seed)
    shapes = [(int(rng.integers(1, 60)),) if i % 5 else (2, int(rng.integers(1, 20))) for i in range(n)]
    return [(rng.zipf(1.3, size=int(np.prod(s))) % 50257).astype(np.int32).reshape(s) for s in shapes]


def digest(records):
    h = hashlib.sha256()
    for r in records:
        h.update(repr(tuple(r.shape)).encode())
        h.update(np.ascontiguousarray(r).tobytes())
    return h.hexdigest()


LOADERX_READ = r"""
import hashlib, json, sys
import numpy as np
from loaderx.zrecord import Dense, Ragged
out = {}
for kind, path in json.loads(sys.argv[1]):
    cls = Dense if kind == "dense" else Ragged
    with cls.open(path) as ds:
        recs = list(ds[np.arange(len(ds))]) if len(ds) else []
        h = hashlib.sha256()
        for r in recs:
            h.update(repr(tuple(r.shape)).encode())
            h.update(np.ascontiguousarray(r).tobytes())
        out[path] = [len(ds), ds.dtype.str, ds.codec, h.hexdigest()]
print(json.dumps(out))
"""


def test_stores_written_here_read_by_loaderx(tmp_path):
    images = smooth_images(300)
    tokens = token_records(400)
    floats = np.random.default_rng(3).random((50, 4, 5)).astype(">f8")
    image_dict = train_dict(images, tier="fast")
    token_dict = train_dict(tokens, tier="fast")
    jobs, want = [], {}
    for codec in CODECS:
        p = str(tmp_path / f"img-{codec}")
        with Dense.create(p, np.uint8, images.shape[1:], codec=codec,
                          dict_bytes=image_dict if codec == "zstd_dict" else None) as w:
            w.append(images[:100])
            w.append(images[100:])
        jobs.append(("dense", p))
        want[p] = [300, "|u1", codec, digest(images)]
        p = str(tmp_path / f"tok-{codec}")
        with Ragged.create(p, np.int32, codec=codec,
                           dict_bytes=token_dict if codec == "zstd_dict" else None) as w:
            w.append(tokens[:7])
            w.append(iter(tokens[7:]))
        jobs.append(("ragged", p))
        want[p] = [400, "<i4", codec, digest(tokens)]
    p = str(tmp_path / "f8-big-endian")
    with Dense.create(p, floats.dtype, (4, 5), codec="zstd") as w:
        w.append(floats)
    jobs.append(("dense", p))
    want[p] = [50, ">f8", "zstd", digest(floats)]
    p = str(tmp_path / "empty-ragged")
    Ragged.create(p, np.float32).close()
    jobs.append(("ragged", p))
    want[p] = [0, "<f4", "zstd", digest([])]
    got = json.loads(run_loaderx(LOADERX_READ, json.dumps(jobs)).strip().splitlines()[-1])
    assert got == want


LOADERX_WRITE = r"""
import json, sys
import numpy as np
from loaderx.utils import train_dict
from loaderx.zrecord import Dense, Ragged
root = sys.argv[1]
images = np.load(root + "/images.npy")
tokens = list(np.load(root + "/tokens.npz").values())
d_img, d_tok = train_dict(images, tier="fast"), train_dict(tokens, tier="fast")
for codec in ("raw", "zstd", "zstd_dict"):
    with Dense.create(f"{root}/img-{codec}", np.uint8, images.shape[1:], codec=codec,
                      dict_bytes=d_img if codec == "zstd_dict" else None) as w:
        w.append(images)
    with Ragged.create(f"{root}/tok-{codec}", np.int32, codec=codec,
                       dict_bytes=d_tok if codec == "zstd_dict" else None) as w:
        w.append(tokens)
print("written")
"""


def test_stores_written_by_loaderx_read_here(tmp_path):
    images = smooth_images(200, seed=4)
    tokens = token_records(300, seed=5)
    np.save(tmp_path / "images.npy", images)
    np.savez(tmp_path / "tokens.npz", *tokens)
    assert "written" in run_loaderx(LOADERX_WRITE, tmp_path)
    for codec in CODECS:
        with Dense.open(tmp_path / f"img-{codec}") as ds:
            assert ds.codec == codec and len(ds) == 200
            assert np.array_equal(ds[:], images)
            idx = np.random.default_rng(0).integers(0, 200, 64)
            assert np.array_equal(ds[idx], images[idx])
        with Ragged.open(tmp_path / f"tok-{codec}") as ds:
            assert ds.codec == codec and len(ds) == 300
            got = ds[:]
            assert all(g.shape == t.shape and np.array_equal(g, t) for g, t in zip(got, tokens))


LOADERX_DICTS = r"""
import json, sys
import numpy as np
from loaderx.utils import train_dict
from loaderx.zrecord import Dense, Ragged
root = sys.argv[1]
images = np.load(root + "/images.npy")
tokens = list(np.load(root + "/tokens.npz").values())
out = {}
for tier in ("fast", "balanced"):
    out[f"array-{tier}"] = train_dict(images, tier=tier).hex()
    out[f"iterable-{tier}"] = train_dict(tokens, tier=tier).hex()
    with Dense.open(root + "/dense") as ds:
        out[f"dense-{tier}"] = train_dict(ds, tier=tier).hex()
    with Ragged.open(root + "/ragged") as ds:
        out[f"ragged-{tier}"] = train_dict(ds, tier=tier).hex()
out["bytes-fast"] = train_dict([t.tobytes() for t in tokens], tier="fast").hex()
print(json.dumps(out))
"""


def test_dictionaries_identical_to_loaderx(tmp_path):
    images = smooth_images(600, seed=6)
    tokens = token_records(3000, seed=7)
    np.save(tmp_path / "images.npy", images)
    np.savez(tmp_path / "tokens.npz", *tokens)
    with Dense.create(tmp_path / "dense", np.uint8, images.shape[1:], codec="raw") as w:
        w.append(images)
    with Ragged.create(tmp_path / "ragged", np.int32, codec="zstd") as w:
        w.append(tokens)
    theirs = json.loads(run_loaderx(LOADERX_DICTS, tmp_path).strip().splitlines()[-1])
    ours = {}
    for tier in ("fast", "balanced"):
        ours[f"array-{tier}"] = train_dict(images, tier=tier).hex()
        ours[f"iterable-{tier}"] = train_dict(tokens, tier=tier).hex()
        with Dense.open(tmp_path / "dense") as ds:
            ours[f"dense-{tier}"] = train_dict(ds, tier=tier).hex()
        with Ragged.open(tmp_path / "ragged") as ds:
            ours[f"ragged-{tier}"] = train_dict(ds, tier=tier).hex()
    ours["bytes-fast"] = train_dict([t.tobytes() for t in tokens], tier="fast").hex()
    assert set(ours) == set(theirs)
    for key in ours:
        assert ours[key] == theirs[key], key
