//! One conformance suite for every byte source backend.

use std::fs::File;
use std::io::Write;
use zrecord::source::{memory::MemorySource, mmap::MmapSource, pread::PreadSource, ByteSource, Counting};
use zrecord::Records;

fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

/// Every backend over the same content answers every read the same way.
fn conformance(name: &str, src: &dyn ByteSource, want: &[u8]) {
    assert_eq!(src.size(), want.len() as u64, "{name}");
    for (off, len) in [(0usize, 0usize), (0, 1), (7, 100), (0, want.len()), (want.len(), 0)] {
        if off + len > want.len() {
            continue;
        }
        let mut buf = vec![0u8; len];
        src.read_exact_at(off as u64, &mut buf).unwrap();
        assert_eq!(buf, &want[off..off + len], "{name} {off}+{len}");
        if let Some(s) = src.slice(off as u64, len) {
            assert_eq!(s, &want[off..off + len], "{name} slice {off}+{len}");
        }
    }
    let size = want.len() as u64;
    for (off, len) in [(size, 1usize), (size.saturating_sub(1), 2), (u64::MAX, 1), (u64::MAX - 1, 4)] {
        let mut buf = vec![0u8; len];
        let err = src.read_exact_at(off, &mut buf).expect_err("past the end");
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof, "{name} {off}+{len}");
        assert!(src.slice(off, len).is_none(), "{name}");
    }
}

#[test]
fn every_backend_conforms() {
    for n in [0usize, 1, 4096, 100_003] {
        let want = bytes(n);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        File::create(&path).unwrap().write_all(&want).unwrap();
        conformance("memory", &MemorySource::new(want.clone()), &want);
        // SAFETY: the test's own temporary file; nothing changes it.
        let map = unsafe { MmapSource::new(&File::open(&path).unwrap()) }.unwrap();
        conformance("mmap", &map, &want);
        conformance("pread", &PreadSource::new(File::open(&path).unwrap()).unwrap(), &want);
        conformance("counting", &Counting::new(MemorySource::new(want.clone())), &want);
    }
}

#[test]
fn zero_copy_only_where_promised() {
    let want = bytes(64);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    File::create(&path).unwrap().write_all(&want).unwrap();
    // SAFETY: the test's own temporary file; nothing changes it.
    assert!(unsafe { MmapSource::new(&File::open(&path).unwrap()) }.unwrap().slice(0, 8).is_some());
    assert!(MemorySource::new(want).slice(0, 8).is_some());
    assert!(PreadSource::new(File::open(&path).unwrap()).unwrap().slice(0, 8).is_none());
}

#[test]
fn counting_counts_reads_and_bytes() {
    let c = Counting::new(MemorySource::new(bytes(100)));
    let mut buf = [0u8; 10];
    c.read_exact_at(5, &mut buf).unwrap();
    c.slice(0, 20).unwrap();
    assert_eq!(c.counts(), (2, 30));
}

/// With a source that copies (pread), a gather makes one read per record, of
/// exactly its stored bytes. (Zero-copy sources are borrowed once per gather.)
#[test]
fn a_gather_reads_each_record_once() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/loaderx-2.0.1");
    for name in ["ragged-i32-tokens-zstd", "dense-u8-img-raw", "dense-u8-img-zstd"] {
        let file = |f: &str| File::open(dir.join(name).join(f)).unwrap();
        let data = std::sync::Arc::new(Counting::new(PreadSource::new(file("data.zr")).unwrap()));
        let meta = Box::new(PreadSource::new(file("meta.zr")).unwrap());
        let store = zrecord::Store::from_sources(name, meta, Box::new(data.clone()), None).unwrap();
        let picks = [5u64, 1, 5, 30, 2];
        if store.item_shape().is_some() {
            store.gather(&picks).unwrap();
        } else {
            store.gather_ragged(&picks).unwrap();
        }
        let (reads, bytes) = data.counts();
        assert_eq!(reads, picks.len() as u64, "{name}: one read per record");
        let want: u64 = picks.iter().map(|&i| u64::from(store.loc(i).unwrap().phys_length)).sum();
        assert_eq!(bytes, want, "{name}: exactly the stored bytes");
    }
}
