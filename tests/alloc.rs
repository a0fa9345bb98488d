//! Buffers whose size the caller chooses fail as `OutOfMemory`, never abort
//! the process: batches, Ragged slots, the sampler's indices, the loader's
//! prefetch. Sizes here are beyond any machine (128 TiB and more), so the
//! allocator refuses them whatever the overcommit policy; an abort would
//! kill this test binary.

use std::path::Path;
use zrecord::format::batch::AllocFailed;
use zrecord::training::loader::Loader;
use zrecord::training::sampler::{Mode, Sampler};
use zrecord::{AlignedBytes, Codec, CreateOptions, Error, Records, Store, Writer};

/// One record of 64 MiB: 2^21 copies of it are 2^47 bytes (128 TiB).
const ROW: usize = 64 << 20;
const COPIES: usize = 1 << 21;

fn write_dense(path: &Path) {
    let mut w = Writer::create_dense(path, "|u1", &[ROW as u64], CreateOptions::codec(Codec::Zstd)).unwrap();
    w.append(&vec![0u8; ROW]).unwrap();
    w.close().unwrap();
}

fn write_ragged(path: &Path) {
    let mut w = Writer::create_ragged(path, "|u1", CreateOptions::codec(Codec::Zstd)).unwrap();
    w.append_ragged(&[(&[ROW as u64][..], &vec![0u8; ROW][..])]).unwrap();
    w.close().unwrap();
}

fn assert_oom(e: &Error, at_least: u64) {
    let inner = match e {
        Error::Loader { source, .. } => source.as_ref(),
        other => other,
    };
    match inner {
        Error::OutOfMemory { bytes, .. } => assert!(*bytes >= at_least, "{e}"),
        other => panic!("expected OutOfMemory, got {other}"),
    }
    assert!(e.to_string().contains("out of memory"), "{e}");
}

#[test]
fn aligned_bytes_refuse_what_cannot_be_had() {
    let huge = isize::MAX as usize;
    assert!(matches!(AlignedBytes::try_zeroed(huge), Err(AllocFailed { bytes }) if bytes >= huge as u64));
    let mut buf = AlignedBytes::try_zeroed(16).unwrap();
    assert!(buf.reuse(huge).is_err());
    assert!(buf.is_empty());
    buf.reuse(24).unwrap();
    assert_eq!(buf.len(), 24);
    assert!(buf.resize(huge).is_err());
    assert_eq!(buf.len(), 24, "a failed resize leaves the buffer as it was");
}

#[test]
fn oversized_gathers_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (dense, ragged) = (dir.path().join("dense"), dir.path().join("ragged"));
    write_dense(&dense);
    write_ragged(&ragged);
    let indices = vec![0u64; COPIES];
    let want = (ROW * COPIES) as u64;
    let e = Store::open(&dense).unwrap().gather(&indices).unwrap_err();
    assert_oom(&e, want);
    assert!(e.to_string().contains(&dense.display().to_string()), "{e}");
    let e = Store::open(&ragged).unwrap().gather_ragged(&indices).unwrap_err();
    assert_oom(&e, want);
    // The stores still read after.
    assert_eq!(Store::open(&dense).unwrap().gather(&[0]).unwrap().bytes().len(), ROW);
}

#[test]
fn oversized_sampler_batches_are_errors() {
    let mut s = Sampler::new(10, 1 << 61, Mode::Iid, 1).unwrap();
    let mut out = Vec::new();
    assert_oom(&s.try_fill_next(&mut out).unwrap_err(), 1 << 63);
    assert_eq!(s.step(), 0, "a failed draw does not advance the stream");
}

#[test]
fn oversized_loader_batches_and_prefetch_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dense = dir.path().join("dense");
    write_dense(&dense);
    let store = || Store::open(&dense).unwrap();
    let e =
        Loader::builder().stream("x", store()).batch_size(4).prefetch(usize::MAX / 2).build().unwrap_err();
    assert_oom(&e, 1);
    let mut loader =
        Loader::builder().stream("x", store()).batch_size(COPIES as u64).mode(Mode::Iid).build().unwrap();
    assert_oom(&loader.next_batch().unwrap_err(), (ROW * COPIES) as u64);
    let mut loader =
        Loader::builder().stream("x", store()).batch_size(1 << 61).mode(Mode::Iid).build().unwrap();
    assert_oom(&loader.next_batch().unwrap_err(), 1 << 63);
}

#[test]
fn an_empty_store_in_a_loader_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty");
    Writer::create_dense(&path, "<i8", &[], CreateOptions::default()).unwrap().close().unwrap();
    let e =
        Loader::builder().stream("labels", Store::open(&path).unwrap()).batch_size(4).build().unwrap_err();
    assert!(e.to_string().contains("the store is empty"), "{e}");
    assert!(e.to_string().contains("labels"), "{e}");
    assert_eq!(Store::open(&path).unwrap().len(), 0);
}
