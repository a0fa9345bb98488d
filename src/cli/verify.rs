//! `zrecord verify STORE [--json]`: decode every record and check every rule
//! of docs/FORMAT.md, reporting everything found (with record indices) instead of
//! stopping at the first failure.
//!
//! **Problems** (exit status 1) break a rule a reader or writer relies on:
//! the store does not open (bad header, schema, sizes, unpublished build,
//! `dict.zr` present/absent against the codec), the schema page's padding
//! is not zero, `dict.zr` lacks the dictionary magic, a location breaks a
//! RecordLoc rule, a stored record is not exactly one zstd frame with its
//! content size, was compressed against another dictionary, does not decode
//! to `logic_length`, a Dense record is not one row, or a Ragged shape prefix
//! does not fit its record.
//!
//! **Warnings** (exit status 0) are bytes no reader looks at and legal
//! layouts neither loaderx nor zrecord writes: files other than `meta.zr`,
//! `data.zr` and `dict.zr` in the directory, bytes in `data.zr` past
//! `tail_offset` or owned by no record, location entries in `meta.zr` past
//! `length` (both left by appends that were never published), stored records
//! overlapping each other, and schema bytes that differ from
//! Python's `msgpack.dumps` of the same schema.
//!
//! A **remote store** (`s3://`, `gs://`, `az://`, `http(s)://` URL) is checked the same way on the bytes
//! fetched with Range requests: the locations of 4,096 records at a time,
//! then their stored frames in coalesced requests (at most 64 MiB a round).
//! What range reads cannot show is not checked, and the output says so: other files
//! in the directory, and a `dict.zr` left beside a store whose codec is not
//! `zstd_dict` (the reader never asks for it, and a missing file is not
//! always a 404).
//!
//! A **sealed** store (one with a `sums.zr` checksum sidecar, see `zrecord
//! seal`) is also checked byte for byte: the sidecar itself, `meta.zr`'s
//! static page and location table, `dict.zr`, and every record's stored
//! bytes. A changed byte that still decodes is reported with its record and
//! file. A sidecar that covers another number of records is reported and
//! not trusted. Without a sidecar the output says that silent corruption
//! cannot be detected, and how to seal the store.
//!
//! Records are checked in parallel, in chunks, by one function whatever
//! their bytes came from. The layout check (records tile `data.zr` up to
//! `tail_offset`, in any order) keeps 24 bytes per record and is skipped
//! above 2^26 records.

use super::common::{size, CliResult, Ctx, Fail, Out};
use super::records::{url_of, DatasetArgs};
use rayon::prelude::*;
use serde_json::json;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use zrecord::format::files::{DATA, META, SUMS};
use zrecord::format::sums::{self, Sums};
use zrecord::format::StoreFile;
use zrecord::format::{
    Codec, GatherPlan, RecordLoc, Schema, StoreCore, StoreInfo, DICT_MAGIC, HEADER_SIZE, LOC_SIZE, PAGE_SIZE,
};
use zrecord::open::Options;
use zrecord::remote::BlockingStore;
use zrecord::source::{mmap::MmapSource, ByteSource};
use zrecord::Records;
use zrecord::{Error, Store};
use zstd::zstd_safe;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store directory, or its URL (s3://, gs://, az://, http(s)://).
    store: PathBuf,
    /// One JSON object: {"path", "len", "ok", "problems": [{"index", "message"}], "warnings": [...],
    /// "not_checked": [...], "requests"} (the last two say what a remote check could not see
    /// and what it cost; [] and null for a local store).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dataset: DatasetArgs,
}

/// Records checked per parallel round.
const ROUND: u64 = 4096;
/// Most stored bytes of a remote store fetched at once.
const ROUND_BYTES: u64 = 64 << 20;
/// Layout warnings listed one by one before they are only counted.
const LAYOUT_LISTED: u64 = 5;
/// Stores with more records skip the layout check (it keeps 24 bytes per record).
const MAX_LAYOUT_RECORDS: u64 = 1 << 26;
/// What a check by range reads (HTTP or a bucket) cannot see.
const NOT_CHECKED_REMOTELY: [&str; 2] = [
    "files other than meta.zr, data.zr and dict.zr in the store directory (range reads cannot list it)",
    "a dict.zr beside a store whose codec is not zstd_dict (never requested; servers do not always answer 404 for a missing file)",
];

pub struct Finding {
    pub index: Option<u64>,
    pub message: String,
}

#[derive(Default)]
pub struct Report {
    pub problems: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

impl Report {
    fn problem(&mut self, index: Option<u64>, message: String) {
        self.problems.push(Finding { index, message });
    }
    fn warning(&mut self, index: Option<u64>, message: String) {
        self.warnings.push(Finding { index, message });
    }
}

/// What a check found, and what it could not look at.
pub struct Verified {
    /// The directory, or the store's URL.
    name: String,
    pub len: u64,
    pub report: Report,
    /// Remote only: requests and bytes spent.
    remote: Option<zrecord::remote::RemoteStats>,
    /// Whether the store has a checksum sidecar.
    pub sealed: bool,
}

pub fn run(ctx: &Ctx, a: Args) -> CliResult {
    if a.dataset.cache.cache.is_some() {
        // A check of what the remote holds must read the remote.
        return Err(
            "verify checks the bytes the remote holds: --cache is for the commands that read records".into(),
        );
    }
    if is_dataset(&a.store, &a.dataset)? {
        return super::verify_dataset::run(ctx, &a.store, &a.dataset, a.json);
    }
    let Verified { name, len, mut report, remote, sealed } = match url_of(&a.store)? {
        Some(url) => verify_remote(ctx, url)?,
        None => verify_local(ctx, &super::records::local_path(&a.store)?)?,
    };
    report.problems.sort_by_key(|f| f.index);
    let not_checked: &[&str] = if remote.is_some() { &NOT_CHECKED_REMOTELY } else { &[] };
    let mut out = Out::new();
    if a.json {
        let list = |v: &[Finding]| -> Vec<serde_json::Value> {
            v.iter().map(|f| json!({"index": f.index, "message": f.message})).collect()
        };
        out.line(
            &json!({
                "path": name,
                "len": len,
                "ok": report.problems.is_empty(),
                "problems": list(&report.problems),
                "warnings": list(&report.warnings),
                "not_checked": not_checked,
                "sealed": sealed,
                "requests": remote.map(|r| r.requests),
            })
            .to_string(),
        )?;
    } else {
        for (what, list) in [("warning", &report.warnings), ("problem", &report.problems)] {
            for f in list.iter() {
                let line = match f.index {
                    Some(i) if !f.message.contains(&format!("record {i}")) => {
                        format!("{what}: record {i}: {}", f.message)
                    }
                    _ => format!("{what}: {}", f.message),
                };
                out.line(&line)?;
            }
        }
        if let Some(r) = remote {
            out.line(&format!(
                "note: checked remotely: {} requests, {} received",
                r.requests,
                size(r.bytes)
            ))?;
            for what in not_checked {
                out.line(&format!("note: not checked remotely: {what}"))?;
            }
        }
        if !sealed && len > 0 {
            out.line(&format!(
                "note: not sealed: changed bytes that still decode (silent corruption) cannot be detected; \
                 add a checksum sidecar with `zrecord seal {}`",
                if remote.is_some() { "LOCAL_COPY" } else { name.as_str() }
            ))?;
        }
        let verdict = if report.problems.is_empty() { "ok" } else { "FAILED" };
        out.line(&format!(
            "{name}: {verdict}: {len} records checked, {} problems, {} warnings",
            report.problems.len(),
            report.warnings.len()
        ))?;
    }
    out.flush()?;
    if report.problems.is_empty() {
        Ok(())
    } else {
        Err(Fail::Reported)
    }
}

/// Whether `arg` names a dataset: a local one's root holds `zrecord.json`;
/// a URL is one when `--column`/`--version` say so, or when no store
/// opens there but a dataset does.
fn is_dataset(arg: &Path, d: &DatasetArgs) -> CliResult<bool> {
    if d.column.is_some() || d.version.is_some() {
        return Ok(true);
    }
    match url_of(arg)? {
        None => Ok(super::records::is_local_dataset(&super::records::local_path(arg)?)),
        Some(url) => match zrecord::open::remote(url, &Options::default()) {
            Err(Error::NotFound { .. }) => Ok(zrecord::Dataset::open(url).is_ok()),
            _ => Ok(false),
        },
    }
}

/// An error's text without the leading `STORE: ` (every line is about this store).
fn strip(name: &str, text: &str) -> String {
    text.strip_prefix(name).and_then(|t| t.strip_prefix(": ")).unwrap_or(text).to_string()
}

/// A store that does not open because it breaks a rule: the problem to report.
fn open_problem(e: &Error) -> Option<String> {
    match e {
        Error::BadFormat { store, .. } | Error::Unpublished { store, .. } => {
            Some(strip(store, &e.to_string()))
        }
        _ => None,
    }
}

pub fn verify_local(ctx: &Ctx, dir: &Path) -> CliResult<Verified> {
    if !dir.is_dir() {
        return Err(Fail::Msg(format!("{}: not found (no such store directory)", dir.display())));
    }
    let mut report = Report::default();
    extra_files(dir, &mut report)?;
    let name = dir.display().to_string();
    let store = match Store::open(dir) {
        Ok(store) => store,
        Err(e) => {
            report.problem(None, open_problem(&e).ok_or_else(|| Fail::from(e))?);
            return Ok(Verified { name, len: 0, report, remote: None, sealed: false });
        }
    };
    let info = store.info();
    let page = read_prefix(&store.path().join(META), PAGE_SIZE as usize)?;
    check_files(info, &page, store.dict_bytes(), info.sizes.data, &mut report);
    let data_path = store.path().join(DATA);
    let file = File::open(&data_path).map_err(|e| super::common::io_fail(&data_path, "open", e))?;
    // SAFETY: `store` holds the shared lock while these maps live (see
    // `MmapSource::new`).
    #[allow(unsafe_code)]
    let data =
        unsafe { MmapSource::new(&file) }.map_err(|e| super::common::io_fail(&data_path, "mmap", e))?;
    let sidecar = match std::fs::read(store.path().join(SUMS)) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(super::common::io_fail(&store.path().join(SUMS), "read", e)),
    };
    let meta = File::open(store.path().join(META))
        .map_err(|e| super::common::io_fail(&store.path().join(META), "open", e))?;
    // SAFETY: as `data` above.
    #[allow(unsafe_code)]
    let meta = unsafe { MmapSource::new(&meta) };
    let meta = meta.map_err(|e| super::common::io_fail(&store.path().join(META), "mmap", e))?;
    let span = sums::table_span(info.len());
    let table = meta.slice(0, (span.end - span.start) as usize);
    let expected =
        sidecar.as_deref().and_then(|b| check_sidecar(info, b, table, store.dict_bytes(), &mut report));
    let checker = Checker::new(store.core(), expected);
    check_records(ctx, info, &mut report, |range| {
        Ok(range
            .into_par_iter()
            .map(|i| match store.loc(i) {
                Ok(loc) => {
                    let frame = data.slice(loc.offset, loc.phys_length as usize).unwrap_or(&[]);
                    (Some(loc), checker.check(i, &loc, frame))
                }
                Err(e) => (None, vec![strip(&info.name, &e.to_string())]),
            })
            .collect())
    })?;
    Ok(Verified { name, len: store.len(), report, remote: None, sealed: sidecar.is_some() })
}

pub fn verify_remote(ctx: &Ctx, url: &str) -> CliResult<Verified> {
    let mut report = Report::default();
    // data.zr's size is an open-time rule on disk; over HTTP it costs a
    // request, spent here so a short or unpublished data.zr is a problem too.
    let opened = zrecord::open::remote(url, &Options::default()).and_then(|s| Ok((s.data_size()?, s)));
    let (data_size, store) = match opened {
        Ok(x) => x,
        Err(e) => {
            let problem = match &e {
                Error::NotFound { store, what } if store.ends_with("/data.zr") => {
                    Some(format!("data.zr is missing ({what})"))
                }
                e => open_problem(e),
            };
            report.problem(None, problem.ok_or_else(|| Fail::from(e))?);
            let remote = Some(Default::default());
            return Ok(Verified { name: url.to_string(), len: 0, report, remote, sealed: false });
        }
    };
    let info = store.info();
    check_files(info, store.static_page(), store.dict_bytes(), data_size, &mut report);
    let sidecar = match store.read_sidecar() {
        Ok(s) => s,
        Err(e) => {
            report.problem(None, strip(&info.name, &e.to_string()));
            None
        }
    };
    // The table checksum needs the whole location table: read it with the
    // locations the check reads anyway (16 bytes a record, up to the layout
    // check's bound).
    let table = (sidecar.is_some() && info.len() <= MAX_LAYOUT_RECORDS)
        .then(|| -> CliResult<Vec<u8>> {
            let mut t = store.static_page().to_vec();
            let mut at = 0;
            while at < info.len() {
                let indices: Vec<u64> = (at..info.len().min(at + ROUND)).collect();
                for loc in store.raw_locs(&indices)? {
                    t.extend_from_slice(&loc.encode());
                }
                at += indices.len() as u64;
            }
            Ok(t)
        })
        .transpose()?;
    let expected = sidecar
        .as_deref()
        .and_then(|b| check_sidecar(info, b, table.as_deref(), store.dict_bytes(), &mut report));
    let checker = Checker::new(store.core(), expected);
    check_records(ctx, info, &mut report, |range| remote_round(&store, &checker, range))?;
    let sealed = sidecar.is_some();
    Ok(Verified {
        name: store.url().to_string(),
        len: store.len(),
        report,
        remote: Some(store.stats()),
        sealed,
    })
}

/// One round of a remote check: the locations, then the frames of the valid
/// ones, fetched in coalesced requests at most [`ROUND_BYTES`] at a time.
fn remote_round(store: &BlockingStore, checker: &Checker, range: Range<u64>) -> CliResult<Vec<Checked>> {
    let info = store.info();
    let indices: Vec<u64> = range.collect();
    let locs = store.raw_locs(&indices)?;
    let mut results: Vec<Checked> = Vec::with_capacity(indices.len());
    let mut valid: Vec<usize> = Vec::new();
    for (k, (&i, loc)) in indices.iter().zip(&locs).enumerate() {
        match loc.validate(&info.name, i, info.codec(), info.header.tail_offset) {
            Ok(()) => {
                valid.push(k);
                results.push((Some(*loc), Vec::new()));
            }
            Err(e) => results.push((None, vec![strip(&info.name, &e.to_string())])),
        }
    }
    let mut rest = valid.as_slice();
    while !rest.is_empty() {
        let mut bytes = 0u64;
        let take = rest
            .iter()
            .position(|&k| {
                bytes += u64::from(locs[k].phys_length);
                bytes > ROUND_BYTES
            })
            .unwrap_or(rest.len())
            .max(1);
        let (group, tail) = rest.split_at(take);
        rest = tail;
        let ranges: Vec<Range<u64>> = group.iter().map(|&k| locs[k].offset..locs[k].end()).collect();
        let stored = store.read_stored(&ranges)?;
        let mut frames: Vec<&[u8]> = Vec::with_capacity(group.len());
        let mut at = 0usize;
        for r in &ranges {
            let len = (r.end - r.start) as usize;
            frames.push(&stored[at..at + len]);
            at += len;
        }
        let found: Vec<Vec<String>> = group
            .par_iter()
            .zip(frames.par_iter())
            .map(|(&k, frame)| checker.check(indices[k], &locs[k], frame))
            .collect();
        for (&k, f) in group.iter().zip(found) {
            results[k].1 = f;
        }
    }
    Ok(results)
}

fn extra_files(dir: &Path, report: &mut Report) -> CliResult {
    let entries = std::fs::read_dir(dir).map_err(|e| super::common::io_fail(dir, "list", e))?;
    let mut extra: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| StoreFile::from_name(n).is_none())
        .collect();
    extra.sort();
    for n in extra {
        report.warning(
            None,
            format!("{n:?} does not belong in a store directory (only meta.zr, data.zr, dict.zr, sums.zr)"),
        );
    }
    Ok(())
}

/// Checks on the files as a whole: the schema page, the dictionary, bytes
/// past what the header publishes.
fn check_files(info: &StoreInfo, page: &[u8], dict: Option<&[u8]>, data_size: u64, report: &mut Report) {
    let schema_end = HEADER_SIZE + info.header.schema_length as usize;
    let nonzero = page[schema_end.min(page.len())..].iter().filter(|&&b| b != 0).count();
    if nonzero > 0 {
        report.problem(
            None,
            format!("meta.zr: {nonzero} nonzero bytes in the padding between the schema (ends at {schema_end}) and 4096"),
        );
    }
    let canonical = Schema { dtype: info.dtype().clone(), geometry: info.geometry().clone() }.encode();
    if canonical != info.schema_bytes {
        report.warning(
            None,
            "schema bytes differ from Python's msgpack.dumps of the same schema (other encoding or key order)".into(),
        );
    }
    if let Some(d) = dict {
        if !d.starts_with(&DICT_MAGIC) {
            report.problem(None, "dict.zr does not start with the zstd dictionary magic 37 A4 30 EC".into());
        }
    }
    let tail = info.header.tail_offset;
    if data_size > tail {
        report.warning(
            None,
            format!(
                "data.zr holds {} bytes past tail_offset {tail} (left by an append that was never published?); readers ignore them",
                data_size - tail
            ),
        );
    }
    let table_end = PAGE_SIZE + LOC_SIZE * info.len();
    if info.sizes.meta > table_end {
        let extra = info.sizes.meta - table_end;
        report.warning(
            None,
            format!(
                "meta.zr holds {extra} bytes ({} locations) past the {} published records (left by an append that was never published?); readers ignore them",
                extra / LOC_SIZE,
                info.len()
            ),
        );
    }
}

fn read_prefix(path: &Path, n: usize) -> CliResult<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(n);
    File::open(path)
        .and_then(|f| f.take(n as u64).read_to_end(&mut buf))
        .map_err(|e| super::common::io_fail(path, "read", e))?;
    Ok(buf)
}

/// Check a sidecar (`sums.zr`'s bytes) against its store, reporting what
/// disagrees: the record checksums to check, when the sidecar can be trusted.
/// `table` is `meta.zr`'s static page and location table, when at hand.
fn check_sidecar(
    info: &StoreInfo,
    bytes: &[u8],
    table: Option<&[u8]>,
    dict: Option<&[u8]>,
    report: &mut Report,
) -> Option<Vec<u64>> {
    let found = |e: Error| strip(&info.name, &e.to_string());
    let parsed = match Sums::parse(&info.name, bytes) {
        Ok(p) => p,
        Err(e) => {
            report.problem(None, found(e));
            return None;
        }
    };
    if let Err(e) = sums::check_covers(&info.name, &parsed.header, info.len()) {
        report.problem(None, found(e));
        return None;
    }
    // Each file on its own, so both can be named.
    if let Some(Err(e)) = table.map(|t| sums::check_table(&info.name, &parsed.header, t)) {
        report.problem(None, found(e));
    }
    if let Err(e) = sums::check_dict(&info.name, &parsed.header, dict) {
        report.problem(None, found(e));
    }
    Some(parsed.records)
}

/// The checks of one record on its stored bytes, wherever they came from:
/// the core's ([`GatherPlan::check_record`]), and what only a checker asks
/// of a zstd frame (its dictionary id, its content size, its true length).
struct Checker<'a> {
    core: &'a StoreCore,
    info: &'a StoreInfo,
    dict_id: Option<u32>,
    /// The sidecar's record checksums, when the store is sealed.
    expected: Option<Vec<u64>>,
}

/// A record's location (when valid) and the problems found in it.
type Checked = (Option<RecordLoc>, Vec<String>);

impl<'a> Checker<'a> {
    fn new(core: &'a StoreCore, expected: Option<Vec<u64>>) -> Checker<'a> {
        let info = core.info();
        let dict_bytes = core.dict_bytes().filter(|_| info.codec() == Codec::ZstdDict);
        Checker {
            core,
            info,
            dict_id: dict_bytes.and_then(zstd_safe::get_dict_id_from_dict).map(|d| d.get()),
            expected,
        }
    }

    /// Record `i`, whose location `loc` is valid, stored as `frame`.
    fn check(&self, i: u64, loc: &RecordLoc, frame: &[u8]) -> Vec<String> {
        let mut found = Vec::new();
        if let Some(expected) = &self.expected {
            if let Err(e) = sums::check_record(&self.info.name, i, frame, expected[i as usize]) {
                found.push(strip(&self.info.name, &e.to_string()));
            }
        }
        if self.info.codec() != Codec::Raw {
            match zstd_safe::get_frame_content_size(frame) {
                Ok(Some(_)) => {}
                Ok(None) => found.push("zstd frame does not carry its content size".to_string()),
                Err(_) => {
                    found.push("stored bytes are not a zstd frame (bad magic or frame header)".to_string())
                }
            }
            if let Ok(n) = zstd_safe::find_frame_compressed_size(frame) {
                if n != frame.len() {
                    found.push(format!(
                        "phys_length {} but the zstd frame is {n} bytes (a record is exactly one frame)",
                        frame.len()
                    ));
                }
            }
            let frame_dict = zstd_safe::get_dict_id_from_frame(frame).map(|d| d.get());
            match (frame_dict, self.dict_id) {
                (Some(f), None) => {
                    found.push(format!("zstd frame needs dictionary {f} but the codec is zstd"))
                }
                (Some(f), Some(d)) if f != d => found.push(format!(
                    "zstd frame was compressed with dictionary {f}, dict.zr is dictionary {d}"
                )),
                _ => {}
            }
        }
        // A frame already known to be broken would only fail again, less clearly.
        if found.is_empty() {
            if let Err(e) = GatherPlan::check_record(self.core, i, loc, frame) {
                found.push(strip(&self.info.name, &e.to_string()));
            }
        }
        found
    }
}

/// Check every record, a round at a time: `round` gives each record of a
/// range its valid location (if any) and problems.
fn check_records(
    ctx: &Ctx,
    info: &StoreInfo,
    report: &mut Report,
    mut round: impl FnMut(Range<u64>) -> CliResult<Vec<Checked>>,
) -> CliResult {
    let len = info.len();
    let bar = ctx.bar(len, "verify");
    let track_layout = len <= MAX_LAYOUT_RECORDS;
    let mut spans: Vec<(u64, u64, u64)> = Vec::new();
    let mut at = 0;
    while at < len {
        let end = (at + ROUND).min(len);
        for (i, (loc, found)) in (at..end).zip(round(at..end)?) {
            for message in found {
                report.problem(Some(i), message);
            }
            if let (Some(loc), true) = (loc, track_layout) {
                spans.push((loc.offset, loc.end(), i));
            }
        }
        bar.inc(end - at);
        at = end;
    }
    bar.finish_and_clear();
    if track_layout {
        check_layout(spans, info.header.tail_offset, report);
    }
    Ok(())
}

/// Stored records should tile `data.zr` up to `tail_offset`, each byte
/// owned by one record (in any order: loaderx writes frames as they finish).
fn check_layout(mut spans: Vec<(u64, u64, u64)>, tail: u64, report: &mut Report) {
    spans.sort_unstable();
    let (mut overlaps, mut gaps) = (0u64, Vec::new());
    let mut covered = 0u64;
    let mut owner = None;
    for &(start, end, i) in &spans {
        if start < covered {
            overlaps += 1;
            if overlaps <= LAYOUT_LISTED {
                let other = owner.map_or(String::new(), |o| format!(" (record {o})"));
                report.warning(
                    Some(i),
                    format!("record {i} (bytes {start}..{end}) overlaps bytes already stored before {covered}{other}"),
                );
            }
        } else if start > covered {
            gaps.push((covered, start));
        }
        if end > covered {
            covered = end;
            owner = Some(i);
        }
    }
    if covered < tail {
        gaps.push((covered, tail));
    }
    if overlaps > LAYOUT_LISTED {
        report.warning(None, format!("{} more records overlap others", overlaps - LAYOUT_LISTED));
    }
    let gap_bytes: u64 = gaps.iter().map(|(a, b)| b - a).sum();
    for (a, b) in gaps.iter().take(LAYOUT_LISTED as usize) {
        report.warning(None, format!("data.zr bytes {a}..{b} (before tail_offset) belong to no record"));
    }
    if gaps.len() as u64 > LAYOUT_LISTED {
        report.warning(
            None,
            format!(
                "{} more unowned ranges in data.zr ({gap_bytes} unowned bytes in all)",
                gaps.len() as u64 - LAYOUT_LISTED
            ),
        );
    }
}
