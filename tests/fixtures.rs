//! Every store loaderx 2.0.1 wrote opens, and every record matches its
//! expected bytes, shape, dtype and codec, through both backends.

mod common;

use common::{fixtures, unpublished, FixtureStore};
use zrecord::Records;
use zrecord::{Backend, Error, Geometry, OpenOptions, Store};

fn open(f: &FixtureStore, backend: Backend) -> Store {
    Store::open_with(f.path(), OpenOptions { backend, ..Default::default() })
        .unwrap_or_else(|e| panic!("{}: {e}", f.name))
}

fn check_store(f: &FixtureStore, store: &Store) {
    assert_eq!(store.len(), f.len, "{}", f.name);
    assert_eq!(store.dtype().as_str(), f.dtype, "{}", f.name);
    assert_eq!(store.codec().name(), f.codec, "{}", f.name);
    let n = f.len;
    // Every record, in a scrambled order with repeats, in one gather.
    let order: Vec<u64> = (0..n).rev().chain((0..n).step_by(3)).collect();
    match store.geometry() {
        Geometry::Dense { item_shape } => {
            assert_eq!(f.kind, "dense");
            assert_eq!(Some(item_shape), f.item_shape.as_ref());
            let batch = store.gather(&order).unwrap();
            let row = batch.bytes().len() / order.len().max(1);
            let mut want_shape = vec![order.len() as u64];
            want_shape.extend(item_shape);
            assert_eq!(batch.shape(), want_shape.as_slice());
            for (k, &i) in order.iter().enumerate() {
                assert_eq!(
                    &batch.bytes()[k * row..(k + 1) * row],
                    f.record_bytes(i as usize).as_slice(),
                    "{} record {i}",
                    f.name
                );
            }
            for i in 0..n {
                let (shape, bytes) = store.get(i).unwrap();
                assert_eq!(shape, f.records[i as usize].0);
                assert_eq!(bytes.as_slice(), f.record_bytes(i as usize));
            }
        }
        Geometry::Ragged => {
            assert_eq!(f.kind, "ragged");
            let batch = store.gather_ragged(&order).unwrap();
            assert_eq!(batch.len(), order.len());
            for (k, &i) in order.iter().enumerate() {
                let (shape, bytes) = batch.record(k);
                assert_eq!(shape, f.records[i as usize].0.as_slice(), "{} record {i}", f.name);
                assert_eq!(bytes, f.record_bytes(i as usize).as_slice(), "{} record {i}", f.name);
                let align = store.dtype().alignment();
                assert_eq!(bytes.as_ptr() as usize % align, 0, "record {i} is aligned");
            }
        }
    }
}

#[test]
fn every_fixture_reads_exactly_mmap() {
    for f in fixtures() {
        check_store(&f, &open(&f, Backend::Mmap));
    }
}

#[test]
fn every_fixture_reads_exactly_pread() {
    for f in fixtures() {
        check_store(&f, &open(&f, Backend::Pread));
    }
}

#[test]
fn unpublished_build_is_rejected() {
    let names = unpublished();
    assert!(!names.is_empty());
    for name in names {
        let path = common::fixtures_dir().join(&name);
        match Store::open(&path) {
            Err(e @ Error::Unpublished { .. }) => {
                assert!(e.to_string().contains("unpublished build (the writer did not close)"), "{e}");
                assert!(e.to_string().contains(&name), "{e}");
            }
            other => panic!("{name}: expected Unpublished, got {other:?}"),
        }
    }
}

#[test]
fn typed_views_and_out_of_range() {
    let f = fixtures().into_iter().find(|f| f.name == "dense-f32-zstd").unwrap();
    let store = open(&f, Backend::Mmap);
    let batch = store.gather(&[1]).unwrap();
    let vals: &[f32] = batch.as_slice().unwrap();
    let want: Vec<f32> =
        f.record_bytes(1).chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(vals, want.as_slice());
    assert!(batch.as_slice::<i32>().is_err());
    let mut typed = vec![0f32; 20];
    store.gather_into_typed(&[0, 1], &mut typed).unwrap();
    assert_eq!(&typed[10..], want.as_slice());
    match store.gather(&[0, 33]) {
        Err(Error::IndexOutOfRange { index: 33, len: 33, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(store.gather(&[]).unwrap().len(), 0);
    // Big-endian items are never byte-swapped and never viewed as native.
    let be = fixtures().into_iter().find(|f| f.name == "dense-i32-bigendian-zstd").unwrap();
    let store = open(&be, Backend::Mmap);
    let batch = store.gather(&[2]).unwrap();
    assert_eq!(batch.bytes(), be.record_bytes(2).as_slice());
    assert!(batch.as_slice::<i32>().is_err());
}
