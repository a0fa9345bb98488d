//! What one fuzz input must satisfy, shared by `tests/fuzz.rs` and the
//! cargo-fuzz target in `fuzz/`: open a store from arbitrary bytes and read
//! every record; only typed errors, results that agree with each other, and
//! (checked by the callers' allocators) no allocation sized by an unchecked
//! length field.
#![allow(dead_code)]

use zrecord::format::decode::{zstd_declared_size, ZSTD_MAX_HEADER};
use zrecord::source::memory::MemorySource;
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

fn typed(e: &Error, what: &str) -> Result<(), String> {
    match e {
        Error::BadFormat { store, .. }
        | Error::Unpublished { store, .. }
        | Error::CorruptRecord { store, .. }
            if store == "fuzz" =>
        {
            Ok(())
        }
        other => Err(format!("{what}: unexpected error {other:?}")),
    }
}

type Record = (Vec<u64>, Vec<u8>);

fn read(store: &Store, indices: &[u64]) -> zrecord::Result<Vec<Record>> {
    match store.item_shape() {
        Some(shape) => {
            let batch = store.gather(indices)?;
            let row = batch.bytes().len() / indices.len().max(1);
            Ok(batch
                .bytes()
                .chunks(row.max(1))
                .take(indices.len())
                .map(|r| (shape.to_vec(), r.to_vec()))
                .collect())
        }
        None => Ok(store.gather_ragged(indices)?.iter().map(|(s, b)| (s.to_vec(), b.to_vec())).collect()),
    }
}

/// Whether record `i` is a claim this harness leaves alone (see [`BIG_CLAIM`]).
fn consistent_big_claim(store: &Store, data: &[u8], i: u64) -> bool {
    let Ok(loc) = store.loc(i) else { return false };
    if !store.codec().is_compressed() || u64::from(loc.logic_length) <= BIG_CLAIM {
        return false;
    }
    let start = loc.offset as usize;
    let head = &data[start..start + (loc.phys_length as usize).min(ZSTD_MAX_HEADER)];
    zstd_declared_size(head) == Ok(Some(u64::from(loc.logic_length)))
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
    let n = store.len();
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
