"""Shared fixtures: where the loaderx fixtures, the sampler's golden streams,
loaderx's sdist and the loaderx 2.0.1 venv are."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("HOME", "/root"))


# The loaderx 2.0.1 fixtures and the sampler's golden streams, in the repository.
FIXTURES = REPO / "tests" / "fixtures" / "loaderx-2.0.1"
GOLDEN = REPO / "tests" / "fixtures" / "zsampler-golden.json"


def loaderx_python():
    """The Python of the loaderx 2.0.1 venv that .ci/install makes."""
    python = Path(os.environ.get(
        "ZRECORD_LOADERX_PYTHON",
        Path(os.environ.get("ZRECORD_VENV", HOME / ".cache/zrecord/venv-loaderx")) / "bin/python",
    ))
    if not python.exists():
        raise RuntimeError(f"{python} missing: run .ci/install (it sets up loaderx 2.0.1)")
    return python


def loaderx_sdist():
    """loaderx 2.0.1's unpacked sdist (scripts/test_loaderx.py,
    scripts/_bench_common.py), which .ci/install downloads."""
    root = Path(os.environ.get("ZRECORD_LOADERX_SDIST", HOME / ".cache/zrecord/loaderx-2.0.1-sdist"))
    script = root / "scripts" / "test_loaderx.py"
    if not script.exists():
        raise RuntimeError(f"{script} missing: run .ci/install (it downloads loaderx's sdist)")
    return root


def run_loaderx(code, *args, timeout=300):
    """Run `code` in loaderx's venv; loaderx 2.0.1 sometimes dies by a signal
    at interpreter exit after printing its results, so retry once then."""
    cmd = [str(loaderx_python()), "-c", code, *map(str, args)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode < 0:
        print(f"loaderx died by signal {-out.returncode}; retrying once", file=sys.stderr)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"loaderx failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out.stdout


def manifest():
    return json.loads((FIXTURES / "manifest.json").read_text())


@pytest.fixture(scope="session")
def fixtures_manifest():
    return manifest()
