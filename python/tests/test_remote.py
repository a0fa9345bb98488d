"""Dense.open and Ragged.open on http:// URLs: the same API, the same bytes."""

import os
import pickle

import numpy as np
import pytest

from conftest import FIXTURES, manifest
from rangeserver import RangeServer
from zrecord import Dense, Ragged, ZrecordError


@pytest.fixture(scope="module")
def server():
    s = RangeServer(FIXTURES)
    yield s
    s.close()


@pytest.mark.parametrize("store", manifest()["stores"], ids=[s["name"] for s in manifest()["stores"]])
def test_remote_reads_what_local_reads(server, store):
    cls = Dense if store["kind"] == "dense" else Ragged
    url = f"{server.url}/{store['name']}/"
    with cls.open(FIXTURES / store["name"]) as local, cls.open(url) as remote:
        assert len(remote) == len(local) and remote.dtype == local.dtype and remote.codec == local.codec
        assert remote.path == url
        n = len(local)
        if not n:
            return
        idx = np.random.default_rng(1).integers(0, n, 50)
        a, b = local[idx], remote[idx]
        if cls is Dense:
            assert a.tobytes() == b.tobytes() and a.shape == b.shape
            out = np.empty_like(a)
            remote.gather(idx, out=out)
            assert out.tobytes() == a.tobytes()
        else:
            assert [x.shape for x in a] == [x.shape for x in b]
            assert all(x.tobytes() == y.tobytes() for x, y in zip(a, b))


def test_remote_errors_are_zrecord_errors_naming_the_url(server):
    with pytest.raises((ZrecordError, FileNotFoundError)) as err:
        Dense.open(f"{server.url}/no-such-store/")
    assert "no-such-store" in str(err.value)
    with pytest.raises(ZrecordError) as err:
        Dense.open(f"{server.url}/dense-unpublished-zstd/")
    assert "unpublished" in str(err.value) and server.url in str(err.value)


def test_remote_reader_pickles_and_survives_fork(server):
    url = f"{server.url}/dense-u8-img-zstd/"
    ds = Dense.open(url)
    want = ds[[3, 1, 4]]
    again = pickle.loads(pickle.dumps(ds))
    assert np.array_equal(again[[3, 1, 4]], want)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: the parent's HTTP worker threads are gone here
        try:
            ok = ds[[3, 1, 4]].tobytes() == want.tobytes()
            os.write(w, b"ok" if ok else b"bad")
        finally:
            os._exit(0)
    os.close(w)
    from test_fork import wait_child
    wait_child(pid, 60)
    assert os.read(r, 16) == b"ok"


def test_every_scheme_of_the_core_in_any_case(server):
    """The package asks the core which strings are URLs (one table for the
    CLI, Python and the browser): an upper-case scheme is still a URL, the
    scheme aliases of buckets are URLs, and an unknown scheme is refused by
    name instead of being looked for on disk."""
    from zrecord import _native

    url = server.url.replace("http://", "HTTP://") + "/dense-u8-img-zstd/"
    with Dense.open(url) as remote, Dense.open(FIXTURES / "dense-u8-img-zstd") as local:
        assert remote.path == url
        assert remote[[3, 1]].tobytes() == local[[3, 1]].tobytes()
    for bucket in ["s3://b/x", "S3A://b/x", "gs://b/x", "az://c/x", "azure://c/x",
                   "abfs://fs@acct.dfs.core.windows.net/x", "abfss://fs@acct.dfs.core.windows.net/x"]:
        assert _native.store_url(bucket) == bucket
    assert _native.store_url("/data/s3://x") is None
    with pytest.raises(ValueError, match=r"unknown URL scheme ftp://"):
        Dense.open("ftp://host/store")
