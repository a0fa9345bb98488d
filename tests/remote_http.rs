//! Stores over HTTP from a real nginx: every loaderx fixture reads exactly as
//! on disk, and opens and gathers cost the requests they should.

mod common;
#[path = "common/nginx.rs"]
mod nginx;

use common::{fixtures, fixtures_dir, unpublished, FixtureStore};
use nginx::Nginx;
use std::path::Path;
use zrecord::format::{Codec, DType, Geometry, Header, RecordLoc, Schema};
use zrecord::remote::{BlockingStore, RemoteOptions};
use zrecord::Records;
use zrecord::{Error, Store};

fn open(url: &str) -> BlockingStore {
    zrecord::open::remote(url, &Default::default()).unwrap_or_else(|e| panic!("{url}: {e}"))
}

fn check_against_local(f: &FixtureStore, remote: &BlockingStore) {
    let local = Store::open(f.path()).unwrap();
    assert_eq!(remote.len(), f.len, "{}", f.name);
    assert_eq!(remote.dtype().as_str(), f.dtype, "{}", f.name);
    assert_eq!(remote.codec().name(), f.codec, "{}", f.name);
    assert_eq!(remote.geometry(), local.geometry(), "{}", f.name);
    assert_eq!(remote.schema_bytes(), local.schema_bytes(), "{}", f.name);
    assert_eq!(remote.dict_bytes(), local.dict_bytes(), "{}", f.name);
    let n = f.len;
    let order: Vec<u64> = (0..n).rev().chain((0..n).step_by(3)).collect();
    match remote.geometry() {
        Geometry::Dense { .. } => {
            let got = remote.gather(&order).unwrap();
            let want = local.gather(&order).unwrap();
            assert_eq!(got.shape(), want.shape(), "{}", f.name);
            assert_eq!(got.bytes(), want.bytes(), "{}", f.name);
            let row = got.bytes().len() / order.len().max(1);
            for (k, &i) in order.iter().enumerate() {
                assert_eq!(
                    &got.bytes()[k * row..(k + 1) * row],
                    f.record_bytes(i as usize).as_slice(),
                    "{} record {i}",
                    f.name
                );
            }
        }
        Geometry::Ragged => {
            let got = remote.gather_ragged(&order).unwrap();
            assert_eq!(got.len(), order.len());
            for (k, &i) in order.iter().enumerate() {
                let (shape, bytes) = got.record(k);
                assert_eq!(shape, f.records[i as usize].0.as_slice(), "{} {i}", f.name);
                assert_eq!(bytes, f.record_bytes(i as usize).as_slice(), "{} {i}", f.name);
            }
        }
    }
    for i in 0..n.min(5) {
        let (shape, bytes) = remote.get(i).unwrap();
        let (lshape, lbytes) = local.get(i).unwrap();
        assert_eq!((shape, bytes.as_slice()), (lshape, lbytes.as_slice()));
        assert_eq!(remote.loc(i).unwrap(), local.loc(i).unwrap());
    }
    assert_eq!(remote.logical_bytes().unwrap(), local.logical_bytes().unwrap());
}

#[test]
fn every_fixture_over_http_equals_local() {
    let server = Nginx::start(&fixtures_dir());
    for f in fixtures() {
        let remote = open(&server.url(&f.name));
        let dict = u64::from(remote.codec() == Codec::ZstdDict);
        let s = remote.stats();
        assert_eq!(
            (s.requests, s.meta_requests, s.dict_requests),
            (1 + dict, 1, dict),
            "{}: open costs one request (two with a dictionary)",
            f.name
        );
        assert_eq!(remote.file_sizes().data, None, "data.zr is not asked for at open");
        check_against_local(&f, &remote);
        if f.len > 0 {
            let local = Store::open(f.path()).unwrap();
            assert_eq!(
                remote.file_sizes().data,
                Some(std::fs::metadata(f.path().join("data.zr")).unwrap().len())
            );
            assert_eq!(remote.info().sizes.meta, local.info().sizes.meta);
        }
    }
    // The URL of meta.zr works too, with or without the trailing slash.
    let f = &fixtures()[0];
    let a = open(&server.url(&format!("{}/meta.zr", f.name)));
    let b = open(&server.url(&format!("{}/", f.name)));
    assert_eq!(a.url(), b.url());
    assert_eq!(a.len(), f.len);
}

#[test]
fn blocking_store_is_shareable_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<BlockingStore>();
}

#[test]
fn unpublished_and_missing_stores_over_http() {
    let server = Nginx::start(&fixtures_dir());
    for name in unpublished() {
        match zrecord::open::remote(&server.url(&name), &Default::default()) {
            Err(e @ Error::Unpublished { .. }) => assert!(e.to_string().contains(&name), "{e}"),
            other => panic!("{name}: expected Unpublished, got {other:?}"),
        }
    }
    let url = server.url("no-such-store/");
    match zrecord::open::remote(&url, &Default::default()) {
        Err(e @ Error::NotFound { .. }) => {
            assert!(e.to_string().contains(&format!("{url}meta.zr")), "{e}")
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
}

/// Value of record `i` of the generated store.
fn value(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555
}

/// Write a raw Dense store of `n` scalar `<u8` records with the format core.
fn write_u64_store(dir: &Path, n: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let schema =
        Schema { dtype: DType::parse("<u8").unwrap(), geometry: Geometry::Dense { item_shape: vec![] } }
            .encode();
    let header =
        Header { length: n, tail_offset: 8 * n, schema_length: schema.len() as u32, codec: Codec::Raw };
    let mut meta = header.encode().to_vec();
    meta.extend_from_slice(&schema);
    meta.resize(4096, 0);
    let mut data = Vec::with_capacity(8 * n as usize);
    for i in 0..n {
        let loc = RecordLoc { offset: 8 * i, phys_length: 8, logic_length: 8 };
        meta.extend_from_slice(&loc.encode());
        data.extend_from_slice(&value(i).to_le_bytes());
    }
    std::fs::write(dir.join("meta.zr"), meta).unwrap();
    std::fs::write(dir.join("data.zr"), data).unwrap();
}

/// A deterministic shuffle-free random index stream (xorshift).
fn random_indices(n: u64, count: usize, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        })
        .collect()
}

fn world_readable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn request_counts_on_a_large_store() {
    const N: u64 = 120_000;
    let root = tempfile::tempdir().unwrap();
    world_readable(root.path());
    write_u64_store(&root.path().join("big"), N);
    let server = Nginx::start(root.path());
    let url = server.url("big/");
    let options = RemoteOptions { max_gap: 0, ..Default::default() };
    let store =
        zrecord::open::remote(&url, &zrecord::open::Options { remote: options, ..Default::default() })
            .unwrap();
    assert_eq!(store.stats().requests, 1, "open is one request");
    assert_eq!(server.logged_requests(), 1);

    // Warm the location cache: one record per 64 KiB page. The missing
    // pages are consecutive, so they come in one request.
    let pages = (RecordLoc::position(N - 1) / zrecord::remote::LOC_PAGE) + 1;
    assert!(pages > 20 && pages <= 64);
    let warm: Vec<u64> = (0..N).step_by(4096).chain([N - 1]).collect();
    let batch = store.gather(&warm).unwrap();
    let want: Vec<u64> = warm.iter().map(|&i| value(i)).collect();
    assert_eq!(batch.as_slice::<u64>().unwrap(), want.as_slice());
    let s = store.stats();
    assert_eq!(s.meta_requests, 2, "{s:?}");
    assert_eq!(s.cached_pages, pages);

    // A random batch of 256 with every page cached: no location request,
    // at most one data request per record.
    let before = store.stats();
    let idx = random_indices(N, 256, 7);
    let batch = store.gather(&idx).unwrap();
    let want: Vec<u64> = idx.iter().map(|&i| value(i)).collect();
    assert_eq!(batch.as_slice::<u64>().unwrap(), want.as_slice());
    let s = store.stats();
    assert_eq!(s.meta_requests, before.meta_requests, "{s:?}");
    let data = s.data_requests - before.data_requests;
    assert!(data <= 256 && data > 100, "{data} data requests for 256 random records");
    assert_eq!(s.requests - before.requests, data);

    // 256 consecutive records: one data request.
    let before = store.stats();
    let idx: Vec<u64> = (50_000..50_256).collect();
    let batch = store.gather(&idx).unwrap();
    assert_eq!(batch.as_slice::<u64>().unwrap()[255], value(50_255));
    let s = store.stats();
    assert_eq!(s.requests - before.requests, 1, "{s:?}");
    assert_eq!(s.bytes - before.bytes, 256 * 8);

    // With the default gap, a random batch of this store coalesces hard.
    let store = zrecord::open::remote(&url, &Default::default()).unwrap();
    let idx = random_indices(N, 256, 99);
    let batch = store.gather(&idx).unwrap();
    assert_eq!(batch.as_slice::<u64>().unwrap()[10], value(idx[10]));
    let s = store.stats();
    assert!(s.data_requests <= 256);
    assert!(s.requests <= 1 + pages + s.data_requests, "{s:?}");

    // A small cache still serves batches that span more pages than it holds.
    let options = RemoteOptions { cache_pages: 3, ..Default::default() };
    let store =
        zrecord::open::remote(&url, &zrecord::open::Options { remote: options, ..Default::default() })
            .unwrap();
    let idx = random_indices(N, 1000, 3);
    let batch = store.gather(&idx).unwrap();
    let want: Vec<u64> = idx.iter().map(|&i| value(i)).collect();
    assert_eq!(batch.as_slice::<u64>().unwrap(), want.as_slice());
    assert!(store.stats().cached_pages <= 3);
    let locs = store.locs(N - 10, 10).unwrap();
    assert_eq!(locs[9].offset, 8 * (N - 1));
    assert!(matches!(store.locs(N - 10, 11), Err(Error::IndexOutOfRange { .. })));
}

#[test]
fn checkers_read_locations_and_frames_as_stored() {
    let server = Nginx::start(&fixtures_dir());
    let name = "ragged-i32-tokens-zstd";
    let local = Store::open(fixtures_dir().join(name)).unwrap();
    let store = open(&server.url(&format!("{name}/")));
    let meta = std::fs::read(fixtures_dir().join(name).join("meta.zr")).unwrap();
    let data = std::fs::read(fixtures_dir().join(name).join("data.zr")).unwrap();
    assert_eq!(store.static_page(), &meta[..4096]);
    // data.zr's size: one byte asked for when no data request told it yet.
    assert_eq!(store.data_size().unwrap(), data.len() as u64);
    assert_eq!(store.stats().data_requests, 1);
    assert_eq!(store.data_size().unwrap(), data.len() as u64);
    assert_eq!(store.stats().data_requests, 1, "known now");

    let indices: Vec<u64> = (0..local.len()).rev().collect();
    let locs = store.raw_locs(&indices).unwrap();
    for (&i, loc) in indices.iter().zip(&locs) {
        assert_eq!(*loc, local.loc(i).unwrap());
    }
    // Every frame as stored, in the order asked, in one coalesced request.
    let before = store.stats().requests;
    let ranges: Vec<_> = locs.iter().map(|l| l.offset..l.end()).collect();
    let bytes = store.read_stored(&ranges).unwrap();
    let want: Vec<u8> = ranges.iter().flat_map(|r| data[r.start as usize..r.end as usize].to_vec()).collect();
    assert_eq!(bytes, want);
    assert_eq!(store.stats().requests - before, 1);
    let tail = store.stored_bytes();
    for bad in [vec![0..1, tail - 1..tail + 1], vec![0..1, 3..3]] {
        assert!(matches!(store.read_stored(&bad), Err(Error::InvalidArgument { .. })), "{bad:?}");
    }
    assert!(matches!(store.raw_locs(&[local.len()]), Err(Error::IndexOutOfRange { .. })));
}

/// An empty store has an empty data.zr, and nginx answers a Range request
/// on a 0-byte file with 200 and no body: that is the whole (empty) file,
/// not a server that ignores Range. loaderx and the wasm reader open it.
#[test]
fn empty_stores_over_http_report_their_sizes() {
    let server = Nginx::start(&fixtures_dir());
    let empty: Vec<FixtureStore> = fixtures().into_iter().filter(|f| f.len == 0).collect();
    assert!(!empty.is_empty(), "the fixtures hold empty stores");
    for f in empty {
        let remote = open(&server.url(&f.name));
        assert_eq!(remote.data_size().unwrap(), 0, "{}", f.name);
        let local = Store::open(f.path()).unwrap();
        assert_eq!(remote.sizes().unwrap(), local.sizes().unwrap(), "{}", f.name);
        assert_eq!(remote.logical_bytes().unwrap(), 0);
    }
}

/// The loader and dictionary training take any store: over HTTP they give
/// what they give on disk.
#[test]
fn loader_and_training_read_remote_stores() {
    use zrecord::training::dict::{train_from_store, Tier};
    use zrecord::training::loader::Loader;
    use zrecord::training::sampler::Mode;
    let server = Nginx::start(&fixtures_dir());
    for name in ["dense-u8-img-zstd", "ragged-i32-tokens-zstd"] {
        let f = fixtures().into_iter().find(|f| f.name == name).expect("fixture");
        let local = Store::open(f.path()).unwrap();
        let remote = open(&server.url(name));
        let build = |store: std::sync::Arc<dyn Records>| {
            Loader::builder().stream("x", store).batch_size(8).mode(Mode::Iid).seed(3).build().unwrap()
        };
        let mut a = build(std::sync::Arc::new(Store::open(f.path()).unwrap()));
        let mut b = build(std::sync::Arc::new(open(&server.url(name))));
        for _ in 0..6 {
            let (x, y) = (a.next_batch().unwrap(), b.next_batch().unwrap());
            assert_eq!(x.indices(), y.indices());
            for k in 0..x.len() {
                assert_eq!(x["x"].record(k), y["x"].record(k), "{name} step {} record {k}", x.step());
            }
        }
        assert_eq!(
            train_from_store(&remote, Tier::Fast).unwrap(),
            train_from_store(&local, Tier::Fast).unwrap(),
            "{name}: the same dictionary from the same records"
        );
    }
}
