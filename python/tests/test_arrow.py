"""Arrow in and out (docs/ARROW_RAY.md): every type of the mapping written
from a pyarrow Table and read back by ``to_arrow`` as the same type and
values; columns written from NumPy get the documented types; inputs are
viewed, not copied; every refusal names the column and its type; loaderx
2.0.1 opens every store an Arrow table made; a Hugging Face dataset goes in
through its table."""

import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

import zrecord  # noqa: E402
from zrecord import ZrecordError, ZrecordTypeError, _arrow  # noqa: E402

from conftest import run_loaderx  # noqa: E402

N = 50
RNG = np.random.default_rng(0)


def typed_columns():
    """One column per type of the mapping, N rows, no nulls, no empty rows."""
    lens = RNG.integers(1, 6, N)
    flat = RNG.integers(-100, 100, int(lens.sum())).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    words = [f"wörd {i} " * (1 + i % 3) for i in range(N)]
    blobs = [bytes(RNG.integers(0, 256, 1 + i % 7, dtype=np.uint8)) for i in range(N)]
    cols = {
        "bool": pa.array(RNG.integers(0, 2, N).astype(bool)),
        "ts": pa.array(np.arange(N).astype("datetime64[ns]")),
        "dur": pa.array(np.arange(N).astype("timedelta64[s]")),
        "f16": pa.array(RNG.standard_normal(N).astype(np.float16)),
        "fsl": pa.FixedSizeListArray.from_arrays(pa.array(RNG.standard_normal(N * 3).astype(np.float32)), 3),
        "fsl2": pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(
            pa.array(RNG.integers(0, 255, N * 6, dtype=np.uint8)), 2), 3),
        "tensor": pa.FixedShapeTensorArray.from_numpy_ndarray(RNG.standard_normal((N, 2, 3))),
        "list": pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat)),
        "large_list": pa.LargeListArray.from_arrays(pa.array(offsets.astype(np.int64)),
                                                    pa.array(flat.astype(np.uint16))),
        "string": pa.array(words, pa.string()),
        "large_string": pa.array(words, pa.large_string()),
        "binary": pa.array(blobs, pa.binary()),
        "large_binary": pa.array(blobs, pa.large_binary()),
    }
    for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64"):
        cols[t] = pa.array(RNG.integers(0, 100, N).astype(t))
    return cols


def test_every_type_of_the_mapping_round_trips(tmp_path):
    table = pa.table(typed_columns())
    ds = zrecord.write_dataset(tmp_path / "ds", table, rows_per_shard=20, codec="raw",
                               codecs={"string": "zstd", "list": "zstd"})
    assert len(ds.shards) == 3 and len(ds) == N
    back = ds.to_arrow()
    assert back.schema == table.schema
    # No indices: no rows, every column of its type.
    assert ds.to_arrow(indices=[]).equals(table.slice(0, 0))
    for name in table.column_names:
        assert back[name].equals(table[name]), name
    # Strings are Ragged uint8 records, and the manifest remembers the type.
    assert ds["string"][3].dtype == np.uint8 and ds["string"][3].tobytes() == table["string"][3].as_py().encode()
    manifest = json.loads((tmp_path / "ds" / "zrecord.json").read_text())
    types = {c["name"]: c.get("arrow") for c in manifest["columns"]}
    assert types["string"] == "string" and types["large_binary"] == "large_binary"
    assert types["tensor"] == "fixed_shape_tensor" and types["fsl2"] == "fixed_size_list"
    assert types["int8"] is None and types["bool"] is None
    # Chosen rows and columns, any order.
    idx = [49, 0, 7, 7]
    part = ds.to_arrow(indices=idx, columns=["string", "tensor", "large_list"])
    assert part.column_names == ["string", "tensor", "large_list"]
    for name in part.column_names:
        assert part[name].equals(table[name].take(idx)), name


def test_loaderx_opens_every_store_an_arrow_table_made(tmp_path):
    ds = zrecord.write_dataset(tmp_path / "ds", pa.table(typed_columns()), codec="zstd")
    stores = [f"{type(ds[name]).__name__}:{tmp_path / 'ds' / path / name}"
              for path, _ in ds.shards for name in ds.columns]
    out = run_loaderx(
        "import sys\n"
        "from loaderx.zrecord import Dense, Ragged\n"
        "for arg in sys.argv[1:]:\n"
        "    kind, path = arg.split(':', 1)\n"
        "    s = (Dense if kind == 'Dense' else Ragged).open(path)\n"
        "    print(len(s), s[[N - 1]][0].tobytes().hex() if kind == 'Ragged' else s[[N - 1]].tobytes().hex())\n"
        .replace("N - 1", str(N - 1)), *stores)
    want = [f"{N} {(ds[n][[N - 1]][0] if type(ds[n]).__name__ == 'Ragged' else ds[n][[N - 1]]).tobytes().hex()}"
            for n in ds.columns]
    assert out.splitlines() == want


def test_numpy_columns_come_out_as_the_documented_types(tmp_path):
    tokens = [np.arange(1 + i % 4, dtype=np.int16) for i in range(10)]
    grids = [np.arange(2 * (1 + i % 3), dtype=np.float32).reshape(-1, 2) for i in range(10)]
    ds = zrecord.write_dataset(tmp_path / "ds", {
        "label": np.arange(10), "vec": np.ones((10, 4), np.float32),
        "img": np.arange(10 * 6, dtype=np.uint8).reshape(10, 2, 3), "tokens": tokens, "grid": grids})
    t = ds.to_arrow()
    assert t["label"].type == pa.int64() and t["label"].to_pylist() == list(range(10))
    assert t["vec"].type == pa.list_(pa.float32(), 4)
    assert t["img"].type == pa.fixed_shape_tensor(pa.uint8(), [2, 3])
    assert (t["img"].combine_chunks().to_numpy_ndarray() == ds["img"][:]).all()
    assert t["tokens"].type == pa.list_(pa.int16())
    assert t["tokens"].to_pylist() == [r.tolist() for r in tokens]
    assert t["grid"].type == pa.list_(pa.list_(pa.float32()))
    assert t["grid"].to_pylist() == [r.tolist() for r in grids]
    # No indices: no rows (a Ragged column's rank unknown: one level of lists).
    empty = ds.to_arrow(indices=[])
    assert empty.num_rows == 0
    assert [empty[c].type == t[c].type for c in t.column_names] == [True] * 4 + [False]


def test_arrow_input_is_viewed_not_copied():
    strings = pa.array(["ab", "cde", "f"])
    ints = pa.array(np.arange(3, dtype=np.int64))
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 4, 5], pa.int32()), pa.array(np.arange(5.0)))
    tensor = pa.FixedShapeTensorArray.from_numpy_ndarray(np.ones((3, 2, 2), np.float32))
    data, types = _arrow.columns(pa.table({"s": strings, "i": ints, "l": lists, "t": tensor}))

    def buffer(arr, k):
        return np.frombuffer(arr.buffers()[k], np.uint8)
    assert np.shares_memory(data["s"][1], buffer(strings, 2))
    assert np.shares_memory(data["i"], buffer(ints, 1))
    assert np.shares_memory(data["l"][1], buffer(lists.values, 1))
    assert np.shares_memory(data["t"], buffer(tensor.storage.values, 1))
    assert types == {"s": "string", "l": "list", "t": "fixed_shape_tensor"}


def test_sliced_and_chunked_arrow_input(tmp_path):
    words = pa.array([f"w{i}" for i in range(30)])
    lists = pa.array([[i] * (1 + i % 3) for i in range(30)], pa.list_(pa.int64()))
    batch = pa.record_batch({"w": words, "l": lists}).slice(7, 11)   # offsets not starting at 0
    chunked = pa.Table.from_batches([batch, pa.record_batch({"w": words, "l": lists}).slice(2, 5)])
    assert chunked["w"].num_chunks == 2
    ds = zrecord.write_dataset(tmp_path / "a", chunked)
    assert ds.to_arrow().equals(chunked.combine_chunks())
    # A RecordBatchReader: its batches, each cut into shards of 4 rows.
    reader = pa.RecordBatchReader.from_batches(chunked.schema, chunked.to_batches())
    ds = zrecord.write_dataset(tmp_path / "b", reader, rows_per_shard=4)
    assert [n for _, n in ds.shards] == [4, 4, 3, 4, 1]
    assert ds.to_arrow().equals(chunked.combine_chunks())
    info = zrecord.write_shard(tmp_path / "c", batch)
    zrecord.commit(tmp_path / "c", [info])
    assert zrecord.open_dataset(tmp_path / "c").to_arrow().equals(pa.Table.from_batches([batch]))


REFUSALS = [
    ("nulls", pa.array([1, None, 3]), "int64", "1 nulls"),
    ("null_row", pa.array([[1], None, [3]]), "list<item: int64>", "1 nulls"),
    ("null_item", pa.array([[1], [None], [3]]), "list<item: int64>", "1 nulls"),
    ("null_text", pa.array(["a", None, "c"]), "string", "1 nulls"),
    ("empty_text", pa.array(["a", "", "c"]), "string", "row 1 is empty"),
    ("empty_list", pa.array([[1], [], [3]]), "list<item: int64>", "row 1 is empty"),
    ("tz", pa.array(np.arange(3).astype("datetime64[s]")).cast(pa.timestamp("s", "UTC")),
     "timestamp[s, tz=UTC]", "no mapping"),
    ("date", pa.array(np.arange(3).astype("datetime64[D]")), "date32[day]", "no mapping"),
    ("struct", pa.array([{"a": 1}] * 3), "struct<a: int64>", "no mapping"),
    ("dict", pa.array(["a", "b", "a"]).dictionary_encode(), "dictionary<values=string", "no mapping"),
    ("decimal", pa.array([1, 2, 3]).cast(pa.decimal128(25, 2)), "decimal128(25, 2)", "no mapping"),
    ("nested", pa.array([[[1]], [[2]], [[3]]]), "list<item: list<item: int64>>", "no mapping"),
    ("texts", pa.array([["a"], ["b"], ["c"]]), "list<item: string>", "no mapping"),
    ("null", pa.nulls(3), "null", "3 nulls"),
    # A null list inside a fixed-size one: flatten drops its slots.
    ("null_inner", pa.array([[[1, 2], [3, 4]], [[5, 6], None], [[7, 8], [9, 0]]],
                            pa.list_(pa.list_(pa.int64(), 2), 2)),
     "fixed_size_list<item: fixed_size_list<item: int64>[2]>[2]", "1 nulls"),
]


@pytest.mark.parametrize("name,arr,type_name,why", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_name_the_column_and_its_type(tmp_path, name, arr, type_name, why):
    table = pa.table({"ok": np.arange(3), name: arr})
    with pytest.raises(ZrecordTypeError) as e:
        zrecord.write_dataset(tmp_path / "ds", table)
    assert isinstance(e.value, ZrecordError) and isinstance(e.value, TypeError)
    msg = str(e.value)
    assert f"column {name!r}" in msg and type_name in msg and why in msg, msg
    assert not (tmp_path / "ds").exists() or not (tmp_path / "ds" / "zrecord.json").exists()


def test_a_slice_is_judged_by_its_own_rows(tmp_path):
    # The list values and an empty batch beside a RecordBatchReader among the parts.
    lists = pa.array([[1], [2, 3], [None], [4]], pa.list_(pa.int64()))
    table = pa.table({"l": lists.slice(0, 2)})   # the null lies in rows sliced away
    reader = pa.RecordBatchReader.from_batches(table.schema, [table.to_batches()[0].slice(0, 0),
                                                              table.to_batches()[0]])
    ds = zrecord.write_dataset(tmp_path / "ds", [table.slice(0, 0), table, reader], rows_per_shard=1)
    assert [n for _, n in ds.shards] == [1, 1, 1, 1]
    assert ds.to_arrow()["l"].to_pylist() == [[1], [2, 3], [1], [2, 3]]
    with pytest.raises(ZrecordError, match="nothing to commit"):
        zrecord.write_dataset(tmp_path / "empty", table.slice(0, 0))
    # A shard of a reader without batches: no rows, said so.
    with pytest.raises(ValueError, match="a shard needs at least one record"):
        zrecord.write_shard(tmp_path / "none", pa.RecordBatchReader.from_batches(table.schema, []))


def test_to_arrow_refuses_text_that_is_not_utf8(tmp_path):
    # A manifest that calls bytes text (edited by hand, or hostile) gives no
    # invalid string array.
    bad = np.array([0xff, 0xfe], np.uint8)
    zrecord.write_dataset(tmp_path / "ds", {"t": [bad, np.ones(2, np.uint8)]})
    for path in [tmp_path / "ds" / "zrecord.json", *(tmp_path / "ds" / "versions").glob("*.json")]:
        manifest = json.loads(path.read_text())
        manifest["columns"][0]["arrow"] = "string"
        path.write_text(json.dumps(manifest))
    ds = zrecord.open_dataset(tmp_path / "ds")
    with pytest.raises(ZrecordTypeError, match=r"column 't' of type string: its records are not UTF-8"):
        ds.to_arrow()
    assert ds.to_arrow(indices=[1])["t"].to_pylist() == ["\x01\x01"]


class _Huge:
    """A Ragged column whose two records hold 2^30 values each (their
    values not there: to_arrow must refuse before it reads them)."""

    def gather(self, idx, packed):
        return np.zeros(4, np.uint8), np.array([0, 2**30, 2**31]), np.array([[2**30], [2**30]])


def test_to_arrow_refuses_lists_past_32_bit_offsets():
    with pytest.raises(ZrecordTypeError, match=r"column 'x' .* 2147483648 values do not fit"):
        _arrow._array(pa, "x", _Huge(), "list", np.arange(2))


def test_columns_of_one_name_are_refused(tmp_path):
    # A dict of columns would keep the last: a column lost without a word.
    table = pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4]), pa.array([5, 6])], names=["x", "y", "x"])
    with pytest.raises(ValueError, match=r"named more than once: \['x'\].*rename_columns"):
        zrecord.write_dataset(tmp_path / "ds", table)
    assert not (tmp_path / "ds").exists()


def test_to_arrow_refuses_ragged_records_of_mixed_rank(tmp_path):
    ds = zrecord.write_dataset(tmp_path / "ds", {"r": [np.ones(2, np.int8), np.ones((1, 2), np.int8)]})
    with pytest.raises(ZrecordTypeError, match=r"column 'r' holds records of rank \[1, 2\]"):
        ds.to_arrow()
    assert ds.to_arrow(indices=[0])["r"].to_pylist() == [[1, 1]]


def test_a_hugging_face_dataset_goes_in_through_its_table(tmp_path):
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_dict({
        "text": [f"sample {i}" for i in range(40)],
        "label": list(range(40)),
        "ids": [[i] * (1 + i % 5) for i in range(40)],
    })
    ds = zrecord.write_dataset(tmp_path / "ds", hf, rows_per_shard=16)
    assert len(ds.shards) == 3
    assert ds.to_arrow().equals(hf.data.table)
    # A selection puts an index in front of the table: those rows go in, in that order.
    picked = hf.shuffle(seed=0).select(range(10))
    ds = zrecord.write_dataset(tmp_path / "picked", picked)
    assert ds.to_arrow()["text"].to_pylist() == picked["text"]
    assert ds.to_arrow()["ids"].to_pylist() == picked["ids"]


def test_ray_tensor_columns_go_in_without_a_ray_cluster(tmp_path):
    ext = pytest.importorskip("ray.data.extensions")
    fixed = np.arange(4 * 6, dtype=np.float32).reshape(4, 2, 3)
    ragged = [np.full((1 + i, 3), i, np.uint8) for i in range(4)]
    table = pa.table({"fixed": ext.ArrowTensorArray.from_numpy(fixed),
                      "ragged": ext.ArrowTensorArray.from_numpy(ragged)})
    assert table["ragged"].type.extension_name == "ray.data.arrow_variable_shaped_tensor"
    ds = zrecord.write_dataset(tmp_path / "ds", table)
    assert (ds["fixed"][:] == fixed).all()
    assert all((g == w).all() and g.shape == w.shape for g, w in zip(ds["ragged"][:], ragged))
    back = ds.to_arrow()
    assert back["fixed"].type == pa.fixed_shape_tensor(pa.float32(), [2, 3])
    assert back["ragged"].to_pylist() == [r.tolist() for r in ragged]


def test_a_shard_must_agree_on_the_arrow_type(tmp_path):
    zrecord.write_dataset(tmp_path / "ds", pa.table({"t": ["ab", "c"]}))
    with pytest.raises(ZrecordError, match='column "t": arrow type is none, the dataset\'s is string'):
        zrecord.write_dataset(tmp_path / "ds", {"t": [np.frombuffer(b"de", np.uint8)]}, mode="append")
    again = zrecord.write_dataset(tmp_path / "ds", pa.table({"t": ["de"]}), mode="append")
    assert again.to_arrow()["t"].to_pylist() == ["ab", "c", "de"]


def test_ragged_keeps_a_column_ragged_when_a_part_has_one_shape(tmp_path):
    parts = [{"img": np.zeros((2, 4, 3), np.uint8)}, {"img": np.ones((1, 5, 3), np.uint8)}]
    with pytest.raises(ZrecordError, match="item_shape"):
        zrecord.write_dataset(tmp_path / "dense", parts)
    ds = zrecord.write_dataset(tmp_path / "ragged", parts, ragged=["img"])
    assert [r.shape for r in ds["img"][:]] == [(4, 3), (4, 3), (5, 3)]
    with pytest.raises(ValueError, match="ragged names column 'nope'"):
        zrecord.write_shard(tmp_path / "x", parts[0], ragged=["nope"])
    # One name as a string is that name (it was its letters: "no column 'i'").
    ds = zrecord.write_dataset(tmp_path / "one", parts, ragged="img")
    assert [r.shape for r in ds["img"][:]] == [(4, 3), (4, 3), (5, 3)]
