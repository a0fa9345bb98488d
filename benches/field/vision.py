#!/usr/bin/env python3
"""loaderx 2.0.1's own image model, for every bench that needs images.

``make_vision_records`` and ``variable_vision_shapes`` are compiled unchanged
from loaderx's sdist (``scripts/_bench_common.py``; the module itself imports
loaderx's internals, so only these two functions are taken). CHW uint8
images of gradients, rectangles and sparse noise (about 15x under zstd).

    python benches/field/vision.py OUT_DIR N SEED dense|ragged

writes the records once, for the Rust compare bench (``benches/compare.rs``):
``data.npy`` (Dense: ``(N, 3, 224, 224)``), or ``payload.npy`` (every
record's bytes, flat) and ``shapes.npy`` (``(N, 3)`` uint64) for Ragged
(H and W lognormal in 64..512, median 224: loaderx's ``bench_ragged.py``
defaults). Needs only NumPy and the sdist (``ZRECORD_LOADERX_SDIST``,
default ``~/.cache/zrecord/loaderx-2.0.1-sdist``, made by ``.ci/install``).
"""

import ast
import os
import sys
from pathlib import Path

import numpy as np

SDIST = Path(os.environ.get("ZRECORD_LOADERX_SDIST",
                            Path(os.environ.get("HOME", "/root")) / ".cache/zrecord/loaderx-2.0.1-sdist"))


def loaderx_generators():
    """(make_vision_records, variable_vision_shapes) from loaderx's sdist."""
    tree = ast.parse((SDIST / "scripts" / "_bench_common.py").read_text())
    wanted = {"make_vision_records", "variable_vision_shapes"}
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    assert len(fns) == 2, "loaderx's sdist lacks its image generator"
    ns = {"np": np}
    exec(compile(ast.Module(body=fns, type_ignores=[]), "_bench_common.py", "exec"), ns)
    return ns["make_vision_records"], ns["variable_vision_shapes"]


def dense_images(n, seed):
    make_vision_records, _ = loaderx_generators()
    return np.stack(make_vision_records([(3, 224, 224)] * n, seed))


def ragged_images(n, seed):
    make_vision_records, variable_vision_shapes = loaderx_generators()
    return make_vision_records(variable_vision_shapes(n, 64, 512, 224, seed), seed)


def main():
    out, n, seed, kind = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    out.mkdir(parents=True, exist_ok=True)
    if kind == "dense":
        np.save(out / "data.npy", dense_images(n, seed))
    else:
        records = ragged_images(n, seed)
        np.save(out / "payload.npy", np.concatenate([r.reshape(-1) for r in records]))
        np.save(out / "shapes.npy", np.array([r.shape for r in records], dtype=np.uint64))
    (out / "done").write_text("ok\n")


if __name__ == "__main__":
    main()
