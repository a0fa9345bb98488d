//! What one fuzz input must satisfy, shared by `tests/fuzz.rs` and the
//! cargo-fuzz target in `fuzz/`: open a store from arbitrary bytes and read
//! every record; only typed errors, results that agree with each other, and
//! (checked by the callers' allocators) no allocation sized by an unchecked
//! length field. The remote reader, served the same bytes, must agree with
//! the local one record by record.
#![allow(dead_code)]

use std::time::Duration;
use zrecord::format::{zstd_declared_size, ZSTD_MAX_HEADER};
use zrecord::remote::{
    block_on, HttpError, HttpGet, HttpRequest, HttpResponse, LocalBoxFuture, RangeRead, RemoteOptions,
    RemoteStore,
};
use zrecord::source::memory::MemorySource;
use zrecord::Records;
use zrecord::{Error, Store};

/// Claims above this are read only when the frame's own header declares less:
/// a frame that declares N bytes may legitimately need an N-byte buffer (a
/// 64 KiB frame of RLE blocks does decode to 2 GiB), so a crafted consistent
/// claim is not a finding; a mismatched one must fail before any allocation.
pub const BIG_CLAIM: u64 = 16 << 20;

/// A fuzz input as (meta.zr, data.zr, dict.zr).
pub type Files = (Vec<u8>, Vec<u8>, Option<Vec<u8>>);

/// Pack a store's files into one fuzz input: `u32 meta_len`, `u32 dict_len`
/// (`u32::MAX`: no dict.zr), meta, dict, then data to the end.
pub fn join(meta: &[u8], data: &[u8], dict: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend((meta.len() as u32).to_le_bytes());
    out.extend(dict.map_or(u32::MAX, |d| d.len() as u32).to_le_bytes());
    out.extend(meta);
    out.extend(dict.unwrap_or_default());
    out.extend(data);
    out
}

/// Unpack [`join`]'s format from any bytes (lengths are clamped to what is there).
pub fn split(input: &[u8]) -> Files {
    let word = |at: usize| input.get(at..at + 4).map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap()));
    let rest = input.get(8..).unwrap_or_default();
    let meta_len = (word(0) as usize).min(rest.len());
    let (meta, rest) = rest.split_at(meta_len);
    let dict_word = word(4);
    let (dict, data) = if dict_word == u32::MAX {
        (None, rest)
    } else {
        let (d, r) = rest.split_at((dict_word as usize).min(rest.len()));
        (Some(d.to_vec()), r)
    };
    (meta.to_vec(), data.to_vec(), dict)
}

/// The local store's name in errors.
const NAME: &str = "fuzz";
/// The remote store's URL (served from memory by [`MemoryServer`]).
const URL: &str = "http://fuzz.invalid/store/";

fn typed(e: &Error, what: &str) -> Result<(), String> {
    match e {
        Error::BadFormat { store, .. }
        | Error::Unpublished { store, .. }
        | Error::CorruptRecord { store, .. }
            if store == NAME || store == URL =>
        {
            Ok(())
        }
        // The remote reader learns data.zr's size from its first answer.
        Error::NotFound { store, .. } if store == URL => Ok(()),
        other => Err(format!("{what}: unexpected error {other:?}")),
    }
}

type Record = (Vec<u64>, Vec<u8>);

/// Split a Dense batch's bytes into records of `shape`.
fn dense_records(shape: &[u64], bytes: &[u8], n: usize) -> Vec<Record> {
    let row = bytes.len() / n.max(1);
    bytes.chunks(row.max(1)).take(n).map(|r| (shape.to_vec(), r.to_vec())).collect()
}

fn read(store: &Store, indices: &[u64]) -> zrecord::Result<Vec<Record>> {
    match store.info().item_shape() {
        Some(shape) => Ok(dense_records(shape, store.gather(indices)?.bytes(), indices.len())),
        None => Ok(store.gather_ragged(indices)?.iter().map(|(s, b)| (s.to_vec(), b.to_vec())).collect()),
    }
}

fn read_remote<C: RangeRead>(store: &RemoteStore<C>, indices: &[u64]) -> zrecord::Result<Vec<Record>> {
    block_on(async {
        let mut batch = zrecord::Batch::for_store(store.info());
        store.gather_batch_into(indices, &mut batch).await?;
        Ok((0..batch.len()).map(|k| batch.record(k)).map(|(s, b)| (s.to_vec(), b.to_vec())).collect())
    })
}

/// Whether record `i` is a claim this harness leaves alone (see [`BIG_CLAIM`]).
fn consistent_big_claim(store: &Store, data: &[u8], i: u64) -> bool {
    let Ok(loc) = store.loc(i) else { return false };
    if !store.info().codec().is_compressed() || u64::from(loc.logic_length) <= BIG_CLAIM {
        return false;
    }
    let start = loc.offset as usize;
    let head = &data[start..start + (loc.phys_length as usize).min(ZSTD_MAX_HEADER)];
    zstd_declared_size(head) == Ok(Some(u64::from(loc.logic_length)))
}

/// A well-behaved static server holding the files in memory: `206` with an
/// exact `Content-Range` and a fixed strong ETag, `416` past the end, `404`
/// for a file that is not there.
pub struct MemoryServer {
    pub files: Files,
}

impl HttpGet for MemoryServer {
    fn get(&self, req: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        let (meta, data, dict) = &self.files;
        let file = match req.url.rsplit('/').next() {
            Some("meta.zr") => Some(meta),
            Some("data.zr") => Some(data),
            Some("dict.zr") => dict.as_ref(),
            _ => None,
        };
        let response = match file {
            None => HttpResponse { status: 404, ..Default::default() },
            Some(f) if req.range.start >= f.len() as u64 => HttpResponse {
                status: 416,
                content_range: Some(format!("bytes */{}", f.len())),
                ..Default::default()
            },
            Some(f) => {
                let end = req.range.end.min(f.len() as u64);
                HttpResponse {
                    status: 206,
                    content_range: Some(format!("bytes {}-{}/{}", req.range.start, end - 1, f.len())),
                    etag: Some("\"fuzz\"".into()),
                    body: f[req.range.start as usize..end as usize].to_vec(),
                    ..Default::default()
                }
            }
        };
        Box::pin(async move { Ok(response) })
    }

    fn sleep(&self, _: Duration) -> LocalBoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Small requests and pages, so that coalescing and the page cache are
/// exercised by small stores too.
fn remote_options() -> RemoteOptions {
    RemoteOptions { max_gap: 64, max_request: 4096, cache_pages: 2, ..Default::default() }
}

/// Serve the files from memory to the remote reader and read every record
/// one by one and all at once: each read must agree with the local reader's
/// over the same bytes (the same records, or typed errors on both sides).
///
/// A remote open cannot see three things without extra requests, so the
/// local reference is opened as the remote reader sees the store: without a
/// `dict.zr` the codec does not use; a `data.zr` shorter than `tail_offset`
/// fails the first data read instead of the open; and an empty header over
/// a non-empty `data.zr` (with no locations in `meta.zr`) opens as empty.
pub fn exercise_remote(files: &Files) -> Result<(), String> {
    let (meta, data, dict) = files;
    let codec_byte = meta.get(31).copied();
    let seen_dict = if codec_byte == Some(2) { dict.clone() } else { None };
    let local = Store::from_sources(
        NAME,
        Box::new(MemorySource::new(meta.clone())),
        Box::new(MemorySource::new(data.clone())),
        seen_dict,
    );
    let remote =
        block_on(RemoteStore::open_http(MemoryServer { files: files.clone() }, URL, remote_options()));
    let (local, remote) = match (local, remote) {
        (_, Err(e)) => return typed(&e, "remote open"),
        (Ok(l), Ok(r)) => (Some(l), r),
        (Err(e), Ok(r)) => match &e {
            Error::BadFormat { check, .. } if check.contains("data.zr") => (None, r),
            // An empty header over a non-empty data.zr (and a meta.zr with
            // no locations) shows only in data.zr's size.
            Error::Unpublished { .. } if r.info().is_empty() => return Ok(()),
            _ => return Err(format!("the remote reader opened a store the local one refuses: {e}")),
        },
    };
    let n = remote.info().len();
    if let Some(l) = &local {
        if l.len() != n || l.info().header != remote.info().header {
            return Err("local and remote readers disagree on the header".into());
        }
    }
    let mut all = Vec::new();
    for i in 0..n.min(64) {
        if local.as_ref().is_some_and(|l| consistent_big_claim(l, data, i)) {
            continue;
        }
        all.push(i);
        compare(local.as_ref(), &remote, &[i])?;
    }
    all.extend(all.clone().into_iter().rev());
    compare(local.as_ref(), &remote, &all)
}

/// One read through both readers; `None` for the local one means every
/// remote read of records must fail.
fn compare<C: RangeRead>(
    local: Option<&Store>,
    remote: &RemoteStore<C>,
    indices: &[u64],
) -> Result<(), String> {
    if indices.is_empty() {
        return Ok(());
    }
    let what = format!("records {:?}", &indices[..indices.len().min(4)]);
    match (local.map(|l| read(l, indices)), read_remote(remote, indices)) {
        (Some(Ok(a)), Ok(b)) if a == b => Ok(()),
        (Some(Ok(_)), Ok(_)) => Err(format!("{what}: the remote reader returned other bytes")),
        (Some(Err(a)), Err(b)) => typed(&a, &what).and(typed(&b, &format!("{what} (remote)"))),
        (None, Err(b)) => typed(&b, &format!("{what} (remote)")),
        (Some(Ok(_)), Err(b)) => Err(format!("{what}: local read, remote failed: {b}")),
        (Some(Err(a)), Ok(_)) => Err(format!("{what}: remote read, local failed: {a}")),
        (None, Ok(_)) => Err(format!("{what}: remote read records of a store with data.zr too short")),
    }
}

/// How far one input got.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reach {
    /// The store opened.
    pub opened: bool,
    /// Records that read, and records that failed with a typed error.
    pub records_ok: u64,
    pub records_failed: u64,
}

/// Open the files as a store and read every record, one by one and in one
/// gather; `Err` describes a broken contract (panics are the caller's to catch).
pub fn exercise((meta, data, dict): Files) -> Result<Reach, String> {
    let mut reach = Reach::default();
    let data_copy = data.clone();
    let store = match Store::from_sources(
        "fuzz",
        Box::new(MemorySource::new(meta)),
        Box::new(MemorySource::new(data)),
        dict,
    ) {
        Ok(s) => s,
        Err(e) => return typed(&e, "open").map(|()| reach),
    };
    reach.opened = true;
    let n = store.info().len();
    let mut singles: Vec<Option<Record>> = Vec::new();
    let mut claimed = 0u64;
    for i in 0..n {
        match store.loc(i) {
            Ok(loc) => claimed += u64::from(loc.logic_length),
            Err(e) => typed(&e, &format!("loc({i})"))?,
        }
        if consistent_big_claim(&store, &data_copy, i) {
            singles.push(None);
            continue;
        }
        match read(&store, &[i]) {
            Ok(mut r) => {
                if r.len() != 1 {
                    return Err(format!("gather([{i}]) gave {} records", r.len()));
                }
                singles.push(r.pop());
                reach.records_ok += 1;
            }
            Err(e) => {
                typed(&e, &format!("record {i}"))?;
                singles.push(None);
                reach.records_failed += 1;
            }
        }
    }
    if claimed > BIG_CLAIM {
        return Ok(reach); // one buffer for all of them: the caller's batch, not a length field, sizes it
    }
    let all: Vec<u64> = (0..n).rev().chain(0..n.min(3)).collect();
    let failing = singles.iter().position(Option::is_none);
    match (read(&store, &all), failing) {
        (Ok(got), None) => {
            let want = all.iter().map(|&i| singles[i as usize].as_ref().unwrap());
            if !got.iter().eq(want) {
                return Err("a gather of every record differs from per-record reads".into());
            }
        }
        (Ok(_), Some(i)) => {
            return Err(format!("a gather including record {i} succeeded; the record alone fails"))
        }
        (Err(e), None) => {
            return Err(format!("a gather of every record failed though each reads alone: {e}"))
        }
        (Err(e), Some(_)) => typed(&e, "gather of every record")?,
    }
    if let Err(e) = store.logical_bytes() {
        return Err(format!("logical_bytes: {e}"));
    }
    Ok(reach)
}
