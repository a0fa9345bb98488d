//! Property tests: random Dense and Ragged records of many dtypes round-trip
//! through every codec and every backend; gathers with random indices equal
//! per-record reads; appends split into random batches write exactly the
//! bytes one append writes.

mod common;

use common::fixtures_dir;
use proptest::collection::vec;
use proptest::prelude::*;
use std::path::Path;
use zrecord::format::batch::{AlignedBytes, Batch, RaggedBatch};
use zrecord::source::memory::MemorySource;
use zrecord::training::dict::{train_from_samples, Tier};
use zrecord::Records;
use zrecord::{Backend, Codec, CreateOptions, DType, OpenOptions, Store, Writer};

const DTYPES: &[&str] = &["|u1", "<i4", ">i4", "<f2", "<f8", "|b1", "<c8", "|S7", "<U3", "|V5", "<M8[ns]"];

type Record = (Vec<u64>, Vec<u8>);

#[derive(Clone, Debug)]
struct Case {
    dtype: &'static str,
    /// `Some(item_shape)` for Dense.
    item_shape: Option<Vec<u64>>,
    records: Vec<Record>,
    codec: Codec,
    /// Where the records are cut into append batches.
    cuts: Vec<usize>,
    gathers: Vec<Vec<u64>>,
}

fn itemsize(dtype: &str) -> usize {
    DType::parse(dtype).unwrap().itemsize()
}

/// Payload bytes: random (incompressible) or a short repeating pattern (compressible).
fn payload(len: usize) -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), len),
        (any::<u8>(), 1usize..5)
            .prop_map(move |(b, k)| (0..len).map(|i| b.wrapping_add((i % k) as u8)).collect()),
    ]
    .boxed()
}

fn records(dtype: &'static str, item_shape: Option<Vec<u64>>) -> BoxedStrategy<Vec<Record>> {
    let size = itemsize(dtype);
    match item_shape {
        Some(shape) => {
            let row = shape.iter().product::<u64>() as usize * size;
            vec(payload(row).prop_map(move |p| (shape.clone(), p)), 1..14).boxed()
        }
        None => vec(
            vec(1u64..5, 0..4).prop_flat_map(move |shape| {
                let len = shape.iter().product::<u64>() as usize * size;
                payload(len).prop_map(move |p| (shape.clone(), p))
            }),
            1..14,
        )
        .boxed(),
    }
}

fn case() -> impl Strategy<Value = Case> {
    let geometry = prop_oneof![Just(None), vec(1u64..5, 0..3).prop_map(Some)];
    (proptest::sample::select(DTYPES), geometry)
        .prop_flat_map(|(dtype, item_shape)| {
            records(dtype, item_shape.clone()).prop_map(move |r| (dtype, item_shape.clone(), r))
        })
        .prop_flat_map(|(dtype, item_shape, records)| {
            let n = records.len();
            (
                proptest::sample::select(vec![Codec::Raw, Codec::Zstd, Codec::ZstdDict]),
                vec(0..=n, 0..4),
                vec(vec(0..n as u64, 0..24), 1..4),
            )
                .prop_map(move |(codec, mut cuts, gathers)| {
                    cuts.sort_unstable();
                    cuts.dedup();
                    Case {
                        dtype,
                        item_shape: item_shape.clone(),
                        records: records.clone(),
                        codec,
                        cuts,
                        gathers,
                    }
                })
        })
}

/// The bytes each frame compresses: Ragged records carry their shape prefix.
fn logical(case: &Case, (shape, bytes): &Record) -> Vec<u8> {
    let mut out = Vec::new();
    if case.item_shape.is_none() {
        zrecord::format::ragged::write_prefix(shape, &mut out);
    }
    out.extend_from_slice(bytes);
    out
}

fn options(case: &Case) -> CreateOptions {
    match case.codec {
        Codec::ZstdDict => {
            let samples: Vec<Vec<u8>> = case.records.iter().map(|r| logical(case, r)).collect();
            let dict =
                train_from_samples(samples.iter().map(Vec::as_slice), Tier::Fast).unwrap_or_else(|_| {
                    // Too few or too uniform records to train on: any valid dictionary serves.
                    std::fs::read(fixtures_dir().join("dense-u8-img-zstd_dict/dict.zr")).unwrap()
                });
            CreateOptions::with_dict(dict)
        }
        codec => CreateOptions::codec(codec),
    }
}

/// Write the case's records to `dir`, appended in the batches `bounds` cuts them into.
fn write(case: &Case, dir: &Path, options: CreateOptions, bounds: &[usize]) {
    let mut w = match &case.item_shape {
        Some(shape) => Writer::create_dense(dir, case.dtype, shape, options).unwrap(),
        None => Writer::create_ragged(dir, case.dtype, options).unwrap(),
    };
    for part in bounds.windows(2) {
        let batch = &case.records[part[0]..part[1]];
        match case.item_shape {
            Some(_) => w.append(&batch.iter().flat_map(|r| r.1.iter().copied()).collect::<Vec<_>>()).unwrap(),
            None => {
                let refs: Vec<(&[u64], &[u8])> =
                    batch.iter().map(|(s, b)| (s.as_slice(), b.as_slice())).collect();
                w.append_ragged(&refs).unwrap()
            }
        }
    }
    assert_eq!(w.len(), case.records.len() as u64);
    w.close().unwrap();
}

fn read_gather(store: &Store, indices: &[u64], reuse: &mut Batch) -> Vec<Record> {
    store.gather_batch_into(indices, reuse).unwrap();
    match reuse {
        Batch::Dense(b) => {
            let shape = store.item_shape().unwrap();
            let mut want_shape = vec![indices.len() as u64];
            want_shape.extend(shape);
            assert_eq!(b.shape(), want_shape.as_slice());
            let row = b.bytes().len() / indices.len().max(1);
            b.bytes().chunks(row.max(1)).take(indices.len()).map(|r| (shape.to_vec(), r.to_vec())).collect()
        }
        Batch::Ragged(b) => {
            let align = store.dtype().alignment();
            assert_eq!(b.len(), indices.len());
            b.iter()
                .map(|(s, bytes)| {
                    assert_eq!(
                        bytes.as_ptr() as usize % align,
                        0,
                        "ragged payloads are aligned for the dtype"
                    );
                    (s.to_vec(), bytes.to_vec())
                })
                .collect()
        }
    }
}

fn check_store(case: &Case, store: &Store, what: &str) {
    assert_eq!(store.len(), case.records.len() as u64, "{what}");
    assert_eq!(store.dtype().as_str(), case.dtype, "{what}");
    assert_eq!(store.codec(), case.codec, "{what}");
    assert_eq!(store.item_shape(), case.item_shape.as_deref(), "{what}");
    let singles: Vec<Record> = (0..store.len())
        .map(|i| {
            let (shape, bytes) = store.get(i).unwrap();
            (shape, bytes.as_slice().to_vec())
        })
        .collect();
    assert!(singles == case.records, "{what}: records differ from what was written");
    // One batch reused across gathers of different sizes.
    let mut reuse = Batch::Dense(zrecord::DenseBatch::new(store.dtype().clone()));
    // A Ragged batch that may leave gaps (each record where it was decoded),
    // over a recycled buffer of stale bytes, too small at first.
    let mut gapped = RaggedBatch::with_buffer(AlignedBytes::copy_of(&[0xA5; 40]));
    gapped.set_packed(false);
    let mut gapped = Batch::Ragged(gapped);
    for indices in case.gathers.iter().chain([&(0..store.len()).rev().collect::<Vec<_>>(), &vec![]]) {
        let want: Vec<&Record> = indices.iter().map(|&i| &singles[i as usize]).collect();
        let got = read_gather(store, indices, &mut reuse);
        assert!(
            got.iter().eq(want.iter().copied()),
            "{what}: gather {indices:?} differs from per-record reads"
        );
        if case.item_shape.is_none() {
            let got = read_gather(store, indices, &mut gapped);
            assert!(
                got.iter().eq(want),
                "{what}: gather {indices:?} with gaps differs from per-record reads"
            );
        }
    }
}

fn run(case: &Case) {
    let tmp = tempfile::tempdir().unwrap();
    let one = tmp.path().join("one");
    let split = tmp.path().join("split");
    let options = options(case);
    let n = case.records.len();
    write(case, &one, options.clone(), &[0, n]);
    let mut bounds = vec![0];
    bounds.extend(&case.cuts);
    bounds.push(n);
    write(case, &split, options, &bounds);
    for file in ["meta.zr", "data.zr", "dict.zr"] {
        let a = std::fs::read(one.join(file)).ok();
        let b = std::fs::read(split.join(file)).ok();
        assert!(a == b, "{file} differs between one append and appends cut at {:?}", case.cuts);
    }
    for backend in [Backend::Mmap, Backend::Pread] {
        let store = Store::open_with(&one, OpenOptions { backend, ..Default::default() }).unwrap();
        check_store(case, &store, &format!("{backend:?}"));
    }
    let read = |f: &str| std::fs::read(one.join(f)).unwrap();
    let store = Store::from_sources(
        "memory",
        Box::new(MemorySource::new(read("meta.zr"))),
        Box::new(MemorySource::new(read("data.zr"))),
        std::fs::read(one.join("dict.zr")).ok(),
    )
    .unwrap();
    check_store(case, &store, "memory");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn records_round_trip_and_gathers_match(case in case()) {
        run(&case);
    }
}

/// Every dtype of the list with every codec, Dense and Ragged, at least once
/// (the random cases above need not hit each combination).
#[test]
fn every_dtype_with_every_codec() {
    for &dtype in DTYPES {
        let size = itemsize(dtype);
        for codec in [Codec::Raw, Codec::Zstd, Codec::ZstdDict] {
            let dense = Case {
                dtype,
                item_shape: Some(vec![2, 3]),
                records: (0..5u8)
                    .map(|i| (vec![2, 3], (0..6 * size).map(|j| i ^ j as u8).collect()))
                    .collect(),
                codec,
                cuts: vec![2],
                gathers: vec![vec![4, 0, 4, 2]],
            };
            run(&dense);
            let ragged = Case {
                item_shape: None,
                records: vec![
                    (vec![], vec![7; size]),
                    (vec![3], (0..3 * size as u8).collect()),
                    (vec![1, 2, 2], vec![0xA5; 4 * size]),
                ],
                gathers: vec![vec![2, 1, 0, 1]],
                cuts: vec![1, 1, 3],
                ..dense
            };
            run(&ragged);
        }
    }
}

/// A compressed Ragged gather into a batch that allows gaps writes each
/// record once, where it was decoded: its shape prefix stays in the gap
/// before its payload (so no payload was moved), and every payload is still
/// aligned for the dtype, whatever its rank. A packed batch of the same
/// gather holds the payloads back to back.
#[test]
fn gaps_leave_compressed_records_where_they_were_decoded() {
    let tmp = tempfile::tempdir().unwrap();
    let records: Vec<Record> = (0..40u8)
        .map(|i| {
            let shape: Vec<u64> = (0..i % 4).map(|d| u64::from(d + i % 3 + 1)).collect();
            let items: u64 = shape.iter().product();
            (shape, (0..items * 8).map(|j| i.wrapping_mul(31) ^ j as u8).collect())
        })
        .collect();
    let case =
        Case { dtype: "<f8", item_shape: None, records, codec: Codec::Zstd, cuts: vec![], gathers: vec![] };
    write(&case, tmp.path(), options(&case), &[0, case.records.len()]);
    let store = Store::open(tmp.path()).unwrap();
    let indices: Vec<u64> = (0..40).rev().chain(0..40).collect();
    let mut gapped = RaggedBatch::default();
    gapped.set_packed(false);
    store.gather_ragged_into(&indices, &mut gapped).unwrap();
    let packed = store.gather_ragged(&indices).unwrap();
    let mut end = 0;
    for (k, &i) in indices.iter().enumerate() {
        let (shape, bytes) = &case.records[i as usize];
        assert_eq!(gapped.record(k), (shape.as_slice(), bytes.as_slice()));
        assert_eq!(packed.record(k), (shape.as_slice(), bytes.as_slice()));
        let span = gapped.spans()[k].clone();
        assert_eq!(span.start % 8, 0, "record {k}'s payload is 8-byte aligned");
        let prefix = zrecord::format::ragged::prefix_len(shape.len());
        assert!(span.start >= end + prefix, "record {k}'s prefix lies in the gap before it");
        assert_eq!(gapped.values()[span.start - prefix], shape.len() as u8, "and is its shape prefix");
        end = span.end;
        assert_eq!(packed.spans()[k].start, k.checked_sub(1).map_or(0, |p| packed.spans()[p].end));
    }
}
