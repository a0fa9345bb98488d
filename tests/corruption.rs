//! Every validation rule of docs/FORMAT.md, broken on purpose, gives its specific
//! error: the variant, the store's name and the problem in the message. Header,
//! schema and size rules fail at open; location and record rules fail when the
//! affected record is read, and every other record stays readable. The same
//! damaged stores are then handed to loaderx 2.0.1, which must reject them too.
//!
//! Damaged stores are private copies of the loaderx fixtures (never patched in
//! place), patched byte by byte.

mod common;

use common::{fixture_copy, fixtures_dir, patch, run_loaderx, truncate};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use zrecord::format::RecordLoc;
use zrecord::Records;
use zrecord::{Backend, Error, OpenOptions, Store};

/// Where the damage must be reported.
#[derive(Clone, Copy, Debug)]
enum At {
    /// `Store::open` fails.
    Open,
    /// The store opens; reading this record fails, every other record reads.
    Record(u64),
    /// The store opens; every record fails (a dictionary they all need).
    EveryRecord,
}

/// The error variant expected.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    NotFound,
    BadFormat,
    Corrupt,
}

/// A damaged copy of a store and what reading it must say.
struct Case {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    ragged: bool,
    /// Every record (shape, payload) as read before the damage.
    records: Vec<(Vec<u64>, Vec<u8>)>,
    at: At,
    want: Want,
    needle: String,
}

impl Case {
    /// A pristine copy of fixture `name`, its records read before any damage.
    fn of(name: &str) -> Case {
        let (tmp, dir) = fixture_copy(name);
        let store = Store::open(&dir).unwrap();
        let records = (0..store.len())
            .map(|i| {
                let (shape, bytes) = store.get(i).unwrap();
                (shape, bytes.as_slice().to_vec())
            })
            .collect();
        let ragged = store.item_shape().is_none();
        drop(store);
        Case { _tmp: tmp, dir, ragged, records, at: At::Open, want: Want::BadFormat, needle: String::new() }
    }

    fn expect(mut self, at: At, want: Want, needle: impl Into<String>) -> Case {
        self.at = at;
        self.want = want;
        self.needle = needle.into();
        self
    }

    fn meta(&self) -> PathBuf {
        self.dir.join("meta.zr")
    }
    fn data(&self) -> PathBuf {
        self.dir.join("data.zr")
    }

    fn header_u64(&self, at: u64) -> u64 {
        let m = std::fs::read(self.meta()).unwrap();
        u64::from_le_bytes(m[at as usize..at as usize + 8].try_into().unwrap())
    }

    fn loc(&self, index: u64) -> RecordLoc {
        let m = std::fs::read(self.meta()).unwrap();
        let at = RecordLoc::position(index) as usize;
        RecordLoc::decode(m[at..at + 16].try_into().unwrap())
    }

    fn set_loc(&self, index: u64, loc: RecordLoc) {
        patch(&self.meta(), RecordLoc::position(index), &loc.encode());
    }

    /// The stored bytes of record `index`.
    fn frame(&self, index: u64) -> Vec<u8> {
        let loc = self.loc(index);
        std::fs::read(self.data()).unwrap()[loc.offset as usize..loc.end() as usize].to_vec()
    }

    /// Replace the schema (and schema_length) with `bytes`.
    fn set_schema(&self, bytes: &[u8]) {
        assert!(bytes.len() <= 4064);
        patch(&self.meta(), 16, &(bytes.len() as u32).to_le_bytes());
        patch(&self.meta(), 32, &[0u8; 4064]);
        patch(&self.meta(), 32, bytes);
    }

    /// Append `stored` to data.zr, point record `index` at it and publish the new tail.
    fn replace_record(&self, index: u64, stored: &[u8], logic_length: u32) {
        let tail = self.header_u64(8);
        assert_eq!(std::fs::metadata(self.data()).unwrap().len(), tail);
        let mut data = std::fs::read(self.data()).unwrap();
        data.extend_from_slice(stored);
        std::fs::write(self.data(), &data).unwrap();
        patch(&self.meta(), 8, &(tail + stored.len() as u64).to_le_bytes());
        self.set_loc(index, RecordLoc { offset: tail, phys_length: stored.len() as u32, logic_length });
    }
}

/// Where the content-size field and the first block header sit in a zstd frame.
struct FrameLayout {
    fcs: Option<(usize, usize)>,
    first_block: usize,
}

fn frame_layout(frame: &[u8]) -> FrameLayout {
    assert_eq!(frame[..4], [0x28, 0xB5, 0x2F, 0xFD], "zstd magic");
    let fhd = frame[4];
    let single_segment = fhd & 0x20 != 0;
    let dict_id = [0, 1, 2, 4][usize::from(fhd & 3)];
    let fcs = match fhd >> 6 {
        0 => usize::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let at = 5 + usize::from(!single_segment) + dict_id;
    FrameLayout { fcs: (fcs > 0).then_some((at, fcs)), first_block: at + fcs }
}

fn open(dir: &Path, backend: Backend) -> zrecord::Result<Store> {
    Store::open_with(dir, OpenOptions { backend, ..Default::default() })
}

/// Read records `indices` in one gather, as (shape, payload) pairs.
fn gather(store: &Store, indices: &[u64]) -> zrecord::Result<Vec<(Vec<u64>, Vec<u8>)>> {
    match store.item_shape() {
        Some(shape) => {
            let batch = store.gather(indices)?;
            let row = batch.bytes().len() / indices.len().max(1);
            Ok(batch.bytes().chunks(row.max(1)).map(|r| (shape.to_vec(), r.to_vec())).collect())
        }
        None => {
            let batch = store.gather_ragged(indices)?;
            Ok(batch.iter().map(|(s, b)| (s.to_vec(), b.to_vec())).collect())
        }
    }
}

fn check_error(case: &Case, err: &Error, what: &str) {
    let msg = err.to_string();
    let store = case.dir.display().to_string();
    let variant_ok = match (case.want, case.at, err) {
        (Want::NotFound, _, Error::NotFound { .. }) => true,
        (Want::BadFormat, At::Open, Error::BadFormat { .. }) => true,
        (Want::BadFormat, At::Record(k), Error::BadFormat { .. }) => msg.contains(&format!("record {k}:")),
        (Want::Corrupt, At::Record(k), Error::CorruptRecord { index, .. }) => *index == k,
        (Want::Corrupt, At::EveryRecord, Error::CorruptRecord { index, .. }) => {
            what.ends_with(&format!("({index})"))
        }
        _ => false,
    };
    assert!(variant_ok, "{what}: expected {:?} at {:?}, got {err:?}", case.want, case.at);
    assert!(msg.contains(&store), "{what}: message does not name the store {store}: {msg}");
    assert!(msg.contains(&case.needle), "{what}: message does not say {:?}: {msg}", case.needle);
}

/// Our reader, through both backends, reports the damage exactly where docs/FORMAT.md says.
fn check(case: &Case) {
    for backend in [Backend::Mmap, Backend::Pread] {
        let what = format!("{} ({backend:?})", case.dir.display());
        match case.at {
            At::Open => match open(&case.dir, backend) {
                Ok(store) => panic!("{what}: opened as {store:?}, expected {:?}", case.want),
                Err(e) => check_error(case, &e, &what),
            },
            At::Record(k) => {
                let store = open(&case.dir, backend).unwrap_or_else(|e| panic!("{what}: open failed: {e}"));
                let err = store.get(k).expect_err("the damaged record reads");
                check_error(case, &err, &format!("{what} get({k})"));
                let last = store.len() - 1;
                let err = gather(&store, &[0, k, last]).expect_err("a gather of the damaged record");
                check_error(case, &err, &format!("{what} gather([0, {k}, {last}])"));
                let others: Vec<u64> = (0..store.len()).filter(|&i| i != k).rev().collect();
                let got = gather(&store, &others).unwrap_or_else(|e| panic!("{what}: other records: {e}"));
                for (&i, rec) in others.iter().zip(&got) {
                    assert_eq!(rec, &case.records[i as usize], "{what}: record {i} changed");
                }
                for &i in others.iter().take(5) {
                    let (shape, bytes) = store.get(i).unwrap();
                    assert_eq!((shape, bytes.as_slice().to_vec()), case.records[i as usize]);
                }
            }
            At::EveryRecord => {
                let store = open(&case.dir, backend).unwrap_or_else(|e| panic!("{what}: open failed: {e}"));
                for i in 0..store.len() {
                    let err = store.get(i).expect_err("a record reads");
                    check_error(case, &err, &format!("{what} get({i})"));
                }
            }
        }
    }
}

const RAW: &str = "dense-u8-img-raw";
const ZSTD: &str = "dense-u8-img-zstd";
const DICT: &str = "dense-u8-img-zstd_dict";
const RAGGED_RAW: &str = "ragged-i32-tokens-raw";
const RAGGED_ZSTD: &str = "ragged-i32-tokens-zstd";
const MIXED_RANK: &str = "ragged-f32-mixed-rank-raw";
const ROW: u32 = 3 * 16 * 16;

fn msgpack(v: &Value) -> Vec<u8> {
    rmp_serde::to_vec_named(v).unwrap()
}

/// Builders of damaged stores, one per broken rule.
mod cases {
    use super::*;
    use Want::*;

    // --- Header ---

    pub fn meta_shorter_than_header() -> Case {
        let c = Case::of(ZSTD);
        truncate(&c.meta(), 31);
        c.expect(At::Open, BadFormat, "meta.zr is 31 bytes, shorter than the 32-byte header")
    }
    pub fn meta_empty() -> Case {
        let c = Case::of(ZSTD);
        truncate(&c.meta(), 0);
        c.expect(At::Open, BadFormat, "meta.zr is 0 bytes, shorter than the 32-byte header")
    }
    pub fn meta_cut_inside_schema() -> Case {
        let c = Case::of(ZSTD);
        let schema_len = u32::from_le_bytes(std::fs::read(c.meta()).unwrap()[16..20].try_into().unwrap());
        truncate(&c.meta(), 32 + u64::from(schema_len) - 1);
        c.expect(At::Open, BadFormat, format!("too short for the {schema_len}-byte schema"))
    }
    pub fn schema_length_zero() -> Case {
        let c = Case::of(ZSTD);
        patch(&c.meta(), 16, &0u32.to_le_bytes());
        c.expect(At::Open, BadFormat, "schema_length 0 is outside 1..=4064")
    }
    pub fn schema_length_4065() -> Case {
        let c = Case::of(ZSTD);
        patch(&c.meta(), 16, &4065u32.to_le_bytes());
        c.expect(At::Open, BadFormat, "schema_length 4065 is outside 1..=4064")
    }
    pub fn schema_length_u32_max() -> Case {
        let c = Case::of(RAW);
        patch(&c.meta(), 16, &u32::MAX.to_le_bytes());
        c.expect(At::Open, BadFormat, "schema_length 4294967295 is outside 1..=4064")
    }
    pub fn reserved_first_byte() -> Case {
        let c = Case::of(ZSTD);
        patch(&c.meta(), 20, &[1]);
        c.expect(At::Open, BadFormat, "reserved header bytes 20..31 are not zero")
    }
    pub fn reserved_last_byte() -> Case {
        let c = Case::of(RAW);
        patch(&c.meta(), 30, &[0x80]);
        c.expect(At::Open, BadFormat, "reserved header bytes 20..31 are not zero")
    }
    pub fn unknown_codec_3() -> Case {
        let c = Case::of(ZSTD);
        patch(&c.meta(), 31, &[3]);
        c.expect(At::Open, BadFormat, "unknown codec byte 3")
    }
    pub fn unknown_codec_255() -> Case {
        let c = Case::of(RAW);
        patch(&c.meta(), 31, &[255]);
        c.expect(At::Open, BadFormat, "unknown codec byte 255")
    }

    // --- Sizes ---

    pub fn location_table_cut() -> Case {
        let c = Case::of(ZSTD);
        let len = std::fs::metadata(c.meta()).unwrap().len();
        truncate(&c.meta(), len - 1);
        c.expect(At::Open, BadFormat, format!("meta.zr is {} bytes but 40 records need {len}", len - 1))
    }
    pub fn length_one_too_many() -> Case {
        let c = Case::of(RAGGED_ZSTD);
        patch(&c.meta(), 0, &201u64.to_le_bytes());
        c.expect(At::Open, BadFormat, "201 records need 7312 (static page + location table)")
    }
    pub fn length_2_pow_60() -> Case {
        let c = Case::of(RAW);
        patch(&c.meta(), 0, &(1u64 << 60).to_le_bytes());
        c.expect(At::Open, BadFormat, format!("{} records need", 1u64 << 60))
    }
    pub fn length_u64_max() -> Case {
        let c = Case::of(ZSTD);
        patch(&c.meta(), 0, &u64::MAX.to_le_bytes());
        c.expect(At::Open, BadFormat, format!("{} records need", u64::MAX))
    }
    pub fn tail_offset_2_pow_63() -> Case {
        let c = Case::of(ZSTD);
        patch(&c.meta(), 8, &(1u64 << 63).to_le_bytes());
        c.expect(At::Open, BadFormat, format!("tail_offset {} exceeds 2^63-1", 1u64 << 63))
    }
    pub fn tail_offset_u64_max() -> Case {
        let c = Case::of(RAW);
        patch(&c.meta(), 8, &u64::MAX.to_le_bytes());
        c.expect(At::Open, BadFormat, format!("tail_offset {} exceeds 2^63-1", u64::MAX))
    }
    pub fn data_shorter_than_tail() -> Case {
        let c = Case::of(ZSTD);
        let tail = c.header_u64(8);
        truncate(&c.data(), tail - 1);
        c.expect(
            At::Open,
            BadFormat,
            format!("data.zr is {} bytes, shorter than tail_offset {tail}", tail - 1),
        )
    }
    pub fn tail_offset_past_data() -> Case {
        let c = Case::of(RAGGED_RAW);
        let tail = c.header_u64(8);
        patch(&c.meta(), 8, &(tail + 1).to_le_bytes());
        c.expect(At::Open, BadFormat, format!("shorter than tail_offset {}", tail + 1))
    }

    // --- Files ---

    pub fn data_missing() -> Case {
        let c = Case::of(ZSTD);
        std::fs::remove_file(c.data()).unwrap();
        c.expect(At::Open, BadFormat, "data.zr is missing")
    }
    pub fn meta_missing() -> Case {
        let c = Case::of(ZSTD);
        std::fs::remove_file(c.meta()).unwrap();
        c.expect(At::Open, NotFound, "meta.zr is missing")
    }
    pub fn dict_missing() -> Case {
        let c = Case::of(DICT);
        std::fs::remove_file(c.dir.join("dict.zr")).unwrap();
        c.expect(At::Open, BadFormat, "codec zstd_dict but dict.zr is missing")
    }
    pub fn dict_unexpected_raw() -> Case {
        let c = Case::of(RAW);
        std::fs::copy(fixtures_dir().join(DICT).join("dict.zr"), c.dir.join("dict.zr")).unwrap();
        c.expect(At::Open, BadFormat, "dict.zr present but codec is raw")
    }
    pub fn dict_unexpected_zstd() -> Case {
        let c = Case::of(RAGGED_ZSTD);
        std::fs::copy(fixtures_dir().join(DICT).join("dict.zr"), c.dir.join("dict.zr")).unwrap();
        c.expect(At::Open, BadFormat, "dict.zr present but codec is zstd")
    }

    /// Bytes without the dictionary magic load as a raw-content dictionary
    /// (as in loaderx), which no frame was compressed with.
    pub fn dict_random_bytes() -> Case {
        let c = Case::of(DICT);
        let noise: Vec<u8> = (0..5000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        std::fs::write(c.dir.join("dict.zr"), noise).unwrap();
        c.expect(At::EveryRecord, Corrupt, "zstd frame does not decode")
    }
    pub fn dict_empty() -> Case {
        let c = Case::of(RAGGED_ZSTD.replace("zstd", "zstd_dict").as_str());
        std::fs::write(c.dir.join("dict.zr"), b"").unwrap();
        c.expect(At::EveryRecord, Corrupt, "zstd frame does not decode")
    }
    pub fn dict_tables_damaged() -> Case {
        let c = Case::of(DICT);
        let mut dict = std::fs::read(c.dir.join("dict.zr")).unwrap();
        dict[100] ^= 0xFF;
        dict[2000] ^= 0xFF;
        std::fs::write(c.dir.join("dict.zr"), dict).unwrap();
        c.expect(At::Open, BadFormat, "could not load dict.zr as a dictionary")
    }

    // --- Schema ---

    fn schema(v: Value) -> Case {
        let c = Case::of("dense-f32-zstd");
        c.set_schema(&msgpack(&v));
        c
    }
    pub fn schema_extra_field() -> Case {
        schema(json!({"dtype": "<f4", "item_shape": [2, 5], "extra": 1})).expect(
            At::Open,
            BadFormat,
            "unknown field `extra`",
        )
    }
    pub fn schema_ragged_extra_field() -> Case {
        let c = Case::of(RAGGED_ZSTD);
        c.set_schema(&msgpack(&json!({"dtype": "<i4", "shape": []})));
        c.expect(At::Open, BadFormat, "unknown field `shape`")
    }
    pub fn schema_missing_dtype() -> Case {
        schema(json!({"item_shape": [2, 5]})).expect(At::Open, BadFormat, "missing field `dtype`")
    }
    pub fn schema_empty_map() -> Case {
        schema(json!({})).expect(At::Open, BadFormat, "missing field `dtype`")
    }
    pub fn schema_not_a_map() -> Case {
        schema(json!(["<f4", [2, 5]])).expect(At::Open, BadFormat, "schema is not a MsgPack map")
    }
    pub fn schema_dtype_not_a_string() -> Case {
        schema(json!({"dtype": 4, "item_shape": [2, 5]})).expect(
            At::Open,
            BadFormat,
            "schema does not decode",
        )
    }
    pub fn schema_item_shape_nil() -> Case {
        schema(json!({"dtype": "<f4", "item_shape": null})).expect(
            At::Open,
            BadFormat,
            "item_shape: invalid type: unit value, expected a sequence",
        )
    }
    pub fn schema_item_shape_not_a_list() -> Case {
        schema(json!({"dtype": "<f4", "item_shape": 10})).expect(
            At::Open,
            BadFormat,
            "schema does not decode",
        )
    }
    pub fn schema_negative_dim() -> Case {
        schema(json!({"dtype": "<f4", "item_shape": [2, -5]})).expect(At::Open, BadFormat, "-5")
    }
    pub fn schema_float_dim() -> Case {
        schema(json!({"dtype": "<f4", "item_shape": [2.0, 5]})).expect(At::Open, BadFormat, "floating point")
    }
    pub fn schema_string_dim() -> Case {
        schema(json!({"dtype": "<f4", "item_shape": ["2", 5]})).expect(
            At::Open,
            BadFormat,
            "schema does not decode",
        )
    }
    pub fn schema_bool_dim() -> Case {
        schema(json!({"dtype": "<f4", "item_shape": [true, 5]})).expect(At::Open, BadFormat, "boolean")
    }
    pub fn schema_unknown_dtype() -> Case {
        schema(json!({"dtype": "<q4", "item_shape": [2, 5]})).expect(
            At::Open,
            BadFormat,
            "dtype \"<q4\": unknown kind character",
        )
    }
    pub fn schema_bad_itemsize() -> Case {
        schema(json!({"dtype": "<f3", "item_shape": [2, 5]})).expect(
            At::Open,
            BadFormat,
            "dtype \"<f3\": item size does not fit the kind",
        )
    }
    pub fn schema_object_dtype() -> Case {
        schema(json!({"dtype": "|O8", "item_shape": [2, 5]})).expect(
            At::Open,
            BadFormat,
            "object dtypes cannot be stored",
        )
    }
    pub fn schema_structured_dtype() -> Case {
        schema(json!({"dtype": "|V8", "item_shape": [2, 5], "descr": [["a", "<f4"]]})).expect(
            At::Open,
            BadFormat,
            "unknown field `descr`",
        )
    }
    pub fn schema_trailing_bytes() -> Case {
        let c = Case::of("dense-f32-zstd");
        let mut bytes = msgpack(&json!({"dtype": "<f4", "item_shape": [2, 5]}));
        bytes.push(0xC0);
        c.set_schema(&bytes);
        c.expect(At::Open, BadFormat, "schema has 1 trailing bytes after the MsgPack map")
    }
    pub fn schema_cut_short() -> Case {
        let c = Case::of("dense-f32-zstd");
        let bytes = msgpack(&json!({"dtype": "<f4", "item_shape": [2, 5]}));
        c.set_schema(&bytes[..bytes.len() - 1]);
        c.expect(At::Open, BadFormat, "schema does not decode")
    }
    pub fn schema_zero_width_row() -> Case {
        schema(json!({"dtype": "<f4", "item_shape": [2, 0]})).expect(
            At::Open,
            BadFormat,
            "item_shape [2, 0] of <f4 makes records of 0 bytes",
        )
    }
    pub fn schema_row_over_2_pow_31() -> Case {
        let c = Case::of(RAW);
        c.set_schema(&msgpack(&json!({"dtype": "|u1", "item_shape": [1u64 << 31, 2]})));
        c.expect(At::Open, BadFormat, "makes records of 4294967296 bytes (records hold 1..=2^31)")
    }
    pub fn schema_row_overflows_u64() -> Case {
        schema(json!({"dtype": "<f4", "item_shape": [1u64 << 62, 8]})).expect(
            At::Open,
            BadFormat,
            "makes records of more than 2^64 bytes",
        )
    }
    pub fn schema_rank_64() -> Case {
        schema(json!({"dtype": "<f4", "item_shape": vec![1; 64]})).expect(
            At::Open,
            BadFormat,
            "item_shape has 64 dimensions (at most 63",
        )
    }

    // --- Locations (checked when the record is read) ---

    pub fn location_past_tail() -> Case {
        let c = Case::of(RAW);
        let tail = c.header_u64(8);
        c.set_loc(7, RecordLoc { offset: tail - 100, phys_length: ROW, logic_length: ROW });
        c.expect(At::Record(7), BadFormat, format!("reach past tail_offset {tail}"))
    }
    pub fn location_offset_wraps() -> Case {
        let c = Case::of(ZSTD);
        let loc = c.loc(11);
        c.set_loc(11, RecordLoc { offset: u64::MAX - 10, ..loc });
        c.expect(At::Record(11), BadFormat, "past tail_offset")
    }
    pub fn location_ragged_past_tail() -> Case {
        let c = Case::of(RAGGED_ZSTD);
        let loc = c.loc(199);
        c.set_loc(199, RecordLoc { phys_length: loc.phys_length + 1, ..loc });
        c.expect(At::Record(199), BadFormat, "past tail_offset")
    }
    pub fn raw_phys_ne_logic() -> Case {
        let c = Case::of(RAW);
        let loc = c.loc(3);
        c.set_loc(3, RecordLoc { phys_length: ROW - 1, ..loc });
        c.expect(
            At::Record(3),
            BadFormat,
            format!("raw record has phys_length {} != logic_length {ROW}", ROW - 1),
        )
    }
    pub fn raw_ragged_phys_ne_logic() -> Case {
        let c = Case::of(RAGGED_RAW);
        let loc = c.loc(8);
        c.set_loc(8, RecordLoc { logic_length: loc.logic_length + 4, ..loc });
        c.expect(At::Record(8), BadFormat, "raw record has phys_length")
    }
    pub fn logic_length_zero() -> Case {
        let c = Case::of(ZSTD);
        let loc = c.loc(5);
        c.set_loc(5, RecordLoc { logic_length: 0, ..loc });
        c.expect(At::Record(5), BadFormat, "logic_length 0 is outside 1..=2^31")
    }
    pub fn logic_length_over_2_pow_31() -> Case {
        let c = Case::of(RAGGED_ZSTD);
        let loc = c.loc(5);
        c.set_loc(5, RecordLoc { logic_length: (1 << 31) + 1, ..loc });
        c.expect(At::Record(5), BadFormat, "logic_length 2147483649 is outside 1..=2^31")
    }
    pub fn logic_length_u32_max_raw() -> Case {
        let c = Case::of(RAGGED_RAW);
        let loc = c.loc(0);
        c.set_loc(0, RecordLoc { logic_length: u32::MAX, phys_length: u32::MAX, ..loc });
        c.expect(At::Record(0), BadFormat, "logic_length 4294967295 is outside 1..=2^31")
    }
    pub fn phys_length_zero() -> Case {
        let c = Case::of(ZSTD);
        let loc = c.loc(9);
        c.set_loc(9, RecordLoc { phys_length: 0, ..loc });
        c.expect(At::Record(9), BadFormat, "phys_length is 0")
    }

    // --- Records (corrupt record, naming the index) ---

    /// A tiny frame claiming the largest record the format allows: rejected
    /// without decoding (or allocating) 2 GiB.
    pub fn logic_length_2_pow_31_small_frame() -> Case {
        let c = Case::of(RAGGED_ZSTD);
        let loc = c.loc(6);
        c.set_loc(6, RecordLoc { logic_length: 1 << 31, ..loc });
        c.expect(At::Record(6), Corrupt, "zstd frame cannot decode to logic_length 2147483648")
    }
    /// A claim big enough to be checked against the frame header before any
    /// buffer is sized for it.
    pub fn logic_length_2_mib_other_frame() -> Case {
        let c = Case::of(RAGGED_ZSTD);
        let k = (0..200).find(|&i| c.loc(i).phys_length >= 64).unwrap();
        let loc = c.loc(k);
        c.set_loc(k, RecordLoc { logic_length: 2 << 20, ..loc });
        c.expect(At::Record(k), Corrupt, "bytes, location says 2097152")
    }
    pub fn frame_magic_damaged() -> Case {
        let c = Case::of(ZSTD);
        let loc = c.loc(4);
        patch(&c.data(), loc.offset, &[0x29]);
        c.expect(At::Record(4), Corrupt, "not a zstd frame")
    }
    pub fn frame_block_damaged() -> Case {
        let c = Case::of(ZSTD);
        let frame = c.frame(12);
        let at = frame_layout(&frame).first_block;
        patch(&c.data(), c.loc(12).offset + at as u64, &[frame[at] | 0b110]);
        c.expect(At::Record(12), Corrupt, "zstd frame does not decode")
    }
    pub fn frame_cut_short() -> Case {
        let c = Case::of(ZSTD);
        let loc = c.loc(20);
        c.set_loc(20, RecordLoc { phys_length: loc.phys_length - 1, ..loc });
        c.expect(At::Record(20), Corrupt, "zstd frame")
    }
    pub fn frame_declares_other_size() -> Case {
        let c = Case::of(ZSTD);
        let frame = c.frame(2);
        let (at, _) = frame_layout(&frame).fcs.expect("loaderx frames carry their content size");
        patch(&c.data(), c.loc(2).offset + at as u64, &[frame[at] ^ 1]);
        c.expect(At::Record(2), Corrupt, "zstd frame declares")
    }
    pub fn ragged_frame_declares_other_size() -> Case {
        let c = Case::of(RAGGED_ZSTD);
        let loc = c.loc(17);
        c.set_loc(17, RecordLoc { logic_length: loc.logic_length + 4, ..loc });
        c.expect(At::Record(17), Corrupt, format!("location says {}", loc.logic_length + 4))
    }
    pub fn dict_frame_damaged() -> Case {
        let c = Case::of(DICT);
        let frame = c.frame(2);
        let at = frame_layout(&frame).first_block;
        patch(&c.data(), c.loc(2).offset + at as u64, &[frame[at] | 0b110]);
        c.expect(At::Record(2), Corrupt, "zstd frame does not decode")
    }
    pub fn dict_frame_declares_other_size() -> Case {
        let c = Case::of("ragged-i32-tokens-zstd_dict");
        let frame = c.frame(30);
        let (at, _) = frame_layout(&frame).fcs.unwrap();
        patch(&c.data(), c.loc(30).offset + at as u64, &[frame[at] ^ 2]);
        c.expect(At::Record(30), Corrupt, "zstd frame declares")
    }
    pub fn dense_width_zstd() -> Case {
        let c = Case::of(ZSTD);
        let loc = c.loc(6);
        c.set_loc(6, RecordLoc { logic_length: ROW - 1, ..loc });
        c.expect(At::Record(6), Corrupt, format!("logic_length {} is not the row width {ROW}", ROW - 1))
    }
    pub fn dense_width_raw() -> Case {
        let c = Case::of(RAW);
        let loc = c.loc(6);
        c.set_loc(6, RecordLoc { logic_length: ROW - 1, phys_length: ROW - 1, ..loc });
        c.expect(At::Record(6), Corrupt, format!("logic_length {} is not the row width {ROW}", ROW - 1))
    }

    // --- Ragged shape prefix ---

    /// The smallest record of a raw Ragged store.
    fn smallest(c: &Case) -> u64 {
        (0..c.records.len() as u64).min_by_key(|&i| c.loc(i).logic_length).unwrap()
    }
    pub fn ragged_rank_too_big() -> Case {
        let c = Case::of(RAGGED_RAW);
        let k = smallest(&c);
        let len = c.loc(k).logic_length;
        assert!(len < 1 + 8 * 255);
        patch(&c.data(), c.loc(k).offset, &[255]);
        c.expect(
            At::Record(k),
            Corrupt,
            format!("shape prefix of rank 255 needs 2041 bytes plus a payload, record has {len}"),
        )
    }
    pub fn ragged_prefix_leaves_no_payload() -> Case {
        let c = Case::of(MIXED_RANK);
        // Record 1 claims the smallest rank whose prefix eats the whole record.
        let loc = c.loc(1);
        let rank = (loc.logic_length - 1).div_ceil(8) as u8;
        patch(&c.data(), loc.offset, &[rank]);
        c.expect(At::Record(1), Corrupt, format!("shape prefix of rank {rank} needs"))
    }
    pub fn ragged_payload_size_mismatch() -> Case {
        let c = Case::of(RAGGED_RAW);
        let loc = c.loc(3);
        let dim = c.records[3].0[0];
        patch(&c.data(), loc.offset + 1, &(dim + 1).to_le_bytes());
        let have = dim * 4;
        c.expect(
            At::Record(3),
            Corrupt,
            format!("shape [{}] of <i4 needs {} payload bytes, record holds {have}", dim + 1, have + 4),
        )
    }
    pub fn ragged_payload_size_overflows() -> Case {
        let c = Case::of(RAGGED_RAW);
        let loc = c.loc(4);
        patch(&c.data(), loc.offset + 1, &(1u64 << 62).to_le_bytes());
        c.expect(At::Record(4), Corrupt, "needs more than 2^64 payload bytes")
    }
    pub fn ragged_zstd_bad_prefix() -> Case {
        let c = Case::of(RAGGED_ZSTD);
        // rank 2, shape [3, 5] of <i4 needs 60 payload bytes; 12 follow.
        let mut logical = vec![2u8];
        logical.extend(3u64.to_le_bytes());
        logical.extend(5u64.to_le_bytes());
        logical.extend([7u8; 12]);
        let frame = zstd::bulk::compress(&logical, 3).unwrap();
        c.replace_record(50, &frame, logical.len() as u32);
        c.expect(At::Record(50), Corrupt, "shape [3, 5] of <i4 needs 60 payload bytes, record holds 12")
    }
    pub fn ragged_zstd_empty_prefix() -> Case {
        let c = Case::of(RAGGED_ZSTD);
        // A lone rank byte: no dimensions, no payload (records are never empty).
        let frame = zstd::bulk::compress(&[0u8], 3).unwrap();
        c.replace_record(0, &frame, 1);
        c.expect(At::Record(0), Corrupt, "shape prefix of rank 0 needs 1 bytes plus a payload, record has 1")
    }
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { check(&cases::$name()); })*
        /// Every case, by name, for the loaderx cross-check.
        const ALL: &[(&str, fn() -> Case)] = &[$((stringify!($name), cases::$name)),*];
    };
}

cases! {
    meta_shorter_than_header, meta_empty, meta_cut_inside_schema, schema_length_zero,
    schema_length_4065, schema_length_u32_max, reserved_first_byte, reserved_last_byte,
    unknown_codec_3, unknown_codec_255,
    location_table_cut, length_one_too_many, length_2_pow_60, length_u64_max, tail_offset_2_pow_63,
    tail_offset_u64_max, data_shorter_than_tail, tail_offset_past_data,
    data_missing, meta_missing, dict_missing, dict_unexpected_raw, dict_unexpected_zstd, dict_random_bytes,
    dict_empty, dict_tables_damaged,
    schema_extra_field, schema_ragged_extra_field, schema_missing_dtype, schema_empty_map,
    schema_not_a_map, schema_dtype_not_a_string, schema_item_shape_nil, schema_item_shape_not_a_list,
    schema_negative_dim, schema_float_dim, schema_string_dim, schema_bool_dim, schema_unknown_dtype,
    schema_bad_itemsize, schema_object_dtype, schema_structured_dtype, schema_trailing_bytes,
    schema_cut_short, schema_zero_width_row, schema_row_over_2_pow_31, schema_row_overflows_u64,
    schema_rank_64,
    location_past_tail, location_offset_wraps, location_ragged_past_tail, raw_phys_ne_logic,
    raw_ragged_phys_ne_logic, logic_length_zero, logic_length_over_2_pow_31, logic_length_u32_max_raw,
    phys_length_zero,
    logic_length_2_pow_31_small_frame, logic_length_2_mib_other_frame, frame_magic_damaged, frame_block_damaged, frame_cut_short,
    frame_declares_other_size, ragged_frame_declares_other_size, dict_frame_damaged,
    dict_frame_declares_other_size, dense_width_zstd, dense_width_raw,
    ragged_rank_too_big, ragged_prefix_leaves_no_payload, ragged_payload_size_mismatch,
    ragged_payload_size_overflows, ragged_zstd_bad_prefix, ragged_zstd_empty_prefix,
}

/// Every single-byte flip inside one zstd frame either fails that record with
/// `CorruptRecord` naming it, or (loaderx frames carry no checksum) decodes to
/// other bytes of the right size; never another error, never another record.
#[test]
fn every_byte_flip_in_a_frame_stays_in_its_record() {
    use zrecord::source::memory::MemorySource;
    for (name, k) in [("dense-f32-zstd", 5u64), ("ragged-i32-tokens-zstd", 7), ("dense-u8-img-zstd_dict", 1)]
    {
        let dir = fixtures_dir().join(name);
        let meta = std::fs::read(dir.join("meta.zr")).unwrap();
        let data = std::fs::read(dir.join("data.zr")).unwrap();
        let dict = std::fs::read(dir.join("dict.zr")).ok();
        let open = |data: Vec<u8>| {
            let (m, d) = (Box::new(MemorySource::new(meta.clone())), Box::new(MemorySource::new(data)));
            Store::from_sources(name, m, d, dict.clone()).unwrap()
        };
        let pristine = open(data.clone());
        let all: Vec<u64> = (0..pristine.len()).collect();
        let want = gather(&pristine, &all).unwrap();
        let loc = pristine.loc(k).unwrap();
        let (mut detected, mut undetected) = (0, 0);
        for at in loc.offset..loc.end() {
            let mut damaged = data.clone();
            damaged[at as usize] ^= 0xFF;
            let store = open(damaged);
            match store.get(k) {
                Err(Error::CorruptRecord { index, store: s, .. }) if index == k && s == name => detected += 1,
                Ok((shape, bytes)) => {
                    assert_eq!(shape, want[k as usize].0, "{name}: flip at {at} changed the shape");
                    assert_eq!(bytes.len(), want[k as usize].1.len());
                    undetected += 1;
                }
                Err(e) => panic!("{name}: flip at {at}: {e:?}"),
            }
            let others: Vec<u64> = all.iter().copied().filter(|&i| i != k).collect();
            let got = gather(&store, &others).unwrap();
            assert!(others.iter().zip(&got).all(|(&i, r)| *r == want[i as usize]), "{name}: flip at {at}");
        }
        assert!(detected > 0, "{name}: no flip in record {k}'s frame was detected");
        eprintln!("{name} record {k}: {detected} flips detected, {undetected} decoded to other bytes");
    }
}

/// The frame-header parser the reader uses before allocating agrees with C zstd.
#[test]
fn declared_frame_sizes_match_c_zstd() {
    use zrecord::format::{zstd_declared_size, ZSTD_MAX_HEADER};
    for len in [1usize, 255, 256, 300, 65791, 65792, 1 << 20] {
        let frame = zstd::bulk::compress(&vec![7u8; len], 3).unwrap();
        let head = &frame[..frame.len().min(ZSTD_MAX_HEADER)];
        assert_eq!(zstd_declared_size(head), Ok(Some(len as u64)), "{len}");
        assert_eq!(zstd::zstd_safe::get_frame_content_size(&frame).ok(), Some(Some(len as u64)));
    }
    assert!(zstd_declared_size(&[0x28, 0xB5, 0x2F]).is_err());
    assert!(zstd_declared_size(&[0x28, 0xB5, 0x2F, 0xFD, 0xC0, 1, 2]).is_err(), "cut short");
    assert_eq!(zstd_declared_size(&[0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x50]), Ok(None));
}

#[test]
fn missing_store_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nope");
    match Store::open(&dir) {
        Err(e @ Error::NotFound { .. }) => {
            assert!(e.to_string().contains(&dir.display().to_string()), "{e}");
            assert!(e.to_string().contains("no such store directory"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

/// loaderx 2.0.1 rejects every one of these stores too: at open, or (for
/// location and record damage) when the damaged record is read, while the
/// other records still read.
#[test]
fn loaderx_rejects_the_same_damage() {
    let built: Vec<(&str, Case)> = ALL.iter().map(|(name, build)| (*name, build())).collect();
    let list: Vec<Value> = built
        .iter()
        .map(|(name, c)| {
            let bad = match c.at {
                At::Open => Value::Null,
                At::Record(k) => json!(k),
                At::EveryRecord => json!(0),
            };
            json!({"name": name, "dir": c.dir, "ragged": c.ragged, "bad": bad})
        })
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let list_path = tmp.path().join("cases.json");
    std::fs::write(&list_path, serde_json::to_vec(&list).unwrap()).unwrap();
    let out = run_loaderx([std::ffi::OsStr::new("-c"), LOADERX_PROBE.as_ref(), list_path.as_os_str()]);
    assert!(out.status.success(), "probe failed: {}", String::from_utf8_lossy(&out.stderr));
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut disagree = Vec::new();
    for (name, c) in &built {
        let r = &results[name];
        let ok = match c.at {
            At::Open => r["open"] != "ok",
            At::Record(_) => r["open"] == "ok" && r["bad"] != "ok" && r["others"] == "ok",
            At::EveryRecord => r["open"] == "ok" && r["bad"] != "ok" && r["others"] != "ok",
        };
        if !ok {
            disagree.push(format!("{name} (we fail at {:?}): loaderx {r}", c.at));
        }
    }
    assert!(disagree.is_empty(), "loaderx disagrees on:\n{}", disagree.join("\n"));
}

/// Opens each store of the list with loaderx and reads the damaged record and the others.
const LOADERX_PROBE: &str = r#"
import json, sys
from loaderx.zrecord import Dense, Ragged
out = {}
for case in json.load(open(sys.argv[1])):
    r = {}
    out[case["name"]] = r
    try:
        store = (Ragged if case["ragged"] else Dense).open(case["dir"])
    except Exception as e:
        r["open"] = f"{type(e).__name__}: {e}"
        continue
    r["open"] = "ok"
    bad = case["bad"]
    if bad is not None:
        try:
            store[bad]
            r["bad"] = "ok"
        except Exception as e:
            r["bad"] = f"{type(e).__name__}: {e}"
        try:
            store[[i for i in range(len(store)) if i != bad]]
            r["others"] = "ok"
        except Exception as e:
            r["others"] = f"{type(e).__name__}: {e}"
    store.close()
print(json.dumps(out))
"#;

/// A damaged record in a gather big enough to be shared between threads
/// (Ragged and Dense, both backends): the gather fails naming that record,
/// wherever in the batch it falls, and the same batch without it reads
/// exactly what was written.
#[test]
fn a_damaged_record_fails_a_gather_shared_between_threads() {
    use zrecord::{Codec, CreateOptions, Writer};
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = common::Rng(11);
    // 600 token records of 1 KiB: 600 KiB decoded, past the threshold at
    // which a compressed gather fans out.
    let records: Vec<Vec<u8>> =
        (0..600).map(|_| (0..256).flat_map(|_| (rng.below(50) as i32).to_le_bytes()).collect()).collect();
    for ragged in [true, false] {
        let dir = tmp.path().join(if ragged { "ragged" } else { "dense" });
        let mut w = if ragged {
            Writer::create_ragged(&dir, "<i4", CreateOptions::codec(Codec::Zstd)).unwrap()
        } else {
            Writer::create_dense(&dir, "<i4", &[256], CreateOptions::codec(Codec::Zstd)).unwrap()
        };
        for r in &records {
            if ragged {
                w.append_ragged(&[(&[256][..], r.as_slice())]).unwrap();
            } else {
                w.append(r).unwrap();
            }
        }
        w.close().unwrap();
        common::damage_record(&dir, 450);
        for backend in [Backend::Mmap, Backend::Pread] {
            let store = open(&dir, backend).unwrap();
            for indices in [(0..600).collect::<Vec<u64>>(), (0..600).rev().collect()] {
                match gather(&store, &indices) {
                    Err(Error::CorruptRecord { index: 450, store: s, why }) => {
                        assert!(
                            s.contains(&dir.display().to_string()) && why.contains("not a zstd frame"),
                            "{why}"
                        )
                    }
                    other => {
                        panic!("ragged {ragged} {backend:?}: expected record 450 corrupt, got {other:?}")
                    }
                }
                let others: Vec<u64> = indices.into_iter().filter(|&i| i != 450).collect();
                let got = gather(&store, &others).unwrap();
                for (&i, (_, bytes)) in others.iter().zip(&got) {
                    assert!(bytes == &records[i as usize], "ragged {ragged} {backend:?}: record {i}");
                }
            }
        }
    }
}
