"""Shared fixtures: where the loaderx fixtures, the sampler's golden streams,
loaderx's sdist and the loaderx 2.0.1 venv are; moto's S3 server."""

import json
import os
import subprocess
import sys
import time
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


MOTO_VENV = os.environ.get("ZRECORD_MOTO_VENV", os.path.expanduser("~/.cache/zrecord/venv-moto"))
SETUP = str(REPO / "tests" / "moto" / "setup.py")


@pytest.fixture(scope="module")
def moto():
    """moto's S3 on loopback, signatures checked (as tests/common/moto.rs)."""
    server = os.path.join(MOTO_VENV, "bin", "moto_server")
    if not os.path.exists(server):
        pytest.skip(f"no moto venv at {MOTO_VENV}")
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)],
                            env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "moto did not start"
                time.sleep(0.1)
        out = subprocess.run([os.path.join(MOTO_VENV, "bin", "python"), SETUP, endpoint, "zrecord-test"],
                             check=True, capture_output=True, text=True).stdout
        import json
        key = json.loads(out)
        saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                                "AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP", "AWS_REGION",
                                                "AWS_PROFILE", "AWS_SESSION_TOKEN")}
        os.environ.update(AWS_ACCESS_KEY_ID=key["key"], AWS_SECRET_ACCESS_KEY=key["secret"],
                          AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP="true", AWS_REGION="us-east-1")
        os.environ.pop("AWS_PROFILE", None)
        os.environ.pop("AWS_SESSION_TOKEN", None)
        yield "s3://zrecord-test"
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    finally:
        proc.kill()
        proc.wait()
