//! `zrecord verify STORE [--json]`: decode every record and check every rule
//! of FORMAT.md, reporting everything found (with record indices) instead of
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
//! Records are checked in parallel, in chunks. The layout check (records
//! tile `data.zr` up to `tail_offset`, in any order) keeps 24 bytes per
//! record and is skipped above 2^26 records.

use super::common::{CliResult, Ctx, Fail, Out};
use super::records::is_url;
use rayon::prelude::*;
use serde_json::json;
use std::fs::File;
use std::path::{Path, PathBuf};
use zrecord::format::{Codec, RecordLoc, Schema, DICT_MAGIC, HEADER_SIZE, LOC_SIZE, PAGE_SIZE};
use zrecord::source::{mmap::MmapSource, ByteSource};
use zrecord::{Error, Store};
use zstd::zstd_safe;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store directory.
    store: PathBuf,
    /// One JSON object: {"path", "len", "ok", "problems": [{"index", "message"}], "warnings": [...]}.
    #[arg(long)]
    json: bool,
}

/// Records checked per parallel round.
const ROUND: u64 = 4096;
/// Layout warnings listed one by one before they are only counted.
const LAYOUT_LISTED: u64 = 5;
/// Stores with more records skip the layout check (it keeps 24 bytes per record).
const MAX_LAYOUT_RECORDS: u64 = 1 << 26;

struct Finding {
    index: Option<u64>,
    message: String,
}

#[derive(Default)]
struct Report {
    problems: Vec<Finding>,
    warnings: Vec<Finding>,
}

impl Report {
    fn problem(&mut self, index: Option<u64>, message: String) {
        self.problems.push(Finding { index, message });
    }
    fn warning(&mut self, index: Option<u64>, message: String) {
        self.warnings.push(Finding { index, message });
    }
}

pub fn run(ctx: &Ctx, a: Args) -> CliResult {
    if is_url(&a.store) {
        return Err(Fail::Msg(format!(
            "{}: verify checks the files of a local store directory; copy the store first",
            a.store.display()
        )));
    }
    let dir = &a.store;
    if !dir.is_dir() {
        return Err(Fail::Msg(format!("{}: not found (no such store directory)", dir.display())));
    }
    let mut report = Report::default();
    extra_files(dir, &mut report)?;
    let name = dir.display().to_string();
    let mut len = 0;
    match Store::open(dir) {
        Ok(store) => {
            len = store.len();
            check_files(&store, &mut report)?;
            check_records(ctx, &store, &mut report)?;
        }
        Err(e @ (Error::BadFormat { .. } | Error::Unpublished { .. })) => {
            report.problem(None, strip(&name, &e.to_string()));
        }
        Err(e) => return Err(e.into()),
    }
    report.problems.sort_by_key(|f| f.index);
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

/// An error's text without the leading `STORE: ` (every line is about this store).
fn strip(name: &str, text: &str) -> String {
    text.strip_prefix(name).and_then(|t| t.strip_prefix(": ")).unwrap_or(text).to_string()
}

fn extra_files(dir: &Path, report: &mut Report) -> CliResult {
    let entries = std::fs::read_dir(dir).map_err(|e| super::common::io_fail(dir, "list", e))?;
    let mut extra: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !matches!(n.as_str(), "meta.zr" | "data.zr" | "dict.zr"))
        .collect();
    extra.sort();
    for n in extra {
        report.warning(
            None,
            format!("{n:?} does not belong in a store directory (only meta.zr, data.zr, dict.zr)"),
        );
    }
    Ok(())
}

/// Checks on the files as a whole: the schema page, the dictionary, bytes
/// past what the header publishes.
fn check_files(store: &Store, report: &mut Report) -> CliResult {
    let info = store.info();
    let meta_path = store.path().join("meta.zr");
    let page = read_prefix(&meta_path, PAGE_SIZE as usize)?;
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
    if let Some(d) = store.dict_bytes() {
        if !d.starts_with(&DICT_MAGIC) {
            report.problem(None, "dict.zr does not start with the zstd dictionary magic 37 A4 30 EC".into());
        }
    }
    let tail = info.header.tail_offset;
    if info.sizes.data > tail {
        report.warning(
            None,
            format!(
                "data.zr holds {} bytes past tail_offset {tail} (left by an append that was never published?); readers ignore them",
                info.sizes.data - tail
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
    Ok(())
}

fn read_prefix(path: &Path, n: usize) -> CliResult<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(n);
    File::open(path)
        .and_then(|f| f.take(n as u64).read_to_end(&mut buf))
        .map_err(|e| super::common::io_fail(path, "read", e))?;
    Ok(buf)
}

/// One record: its location, its stored frame, its decoded bytes.
fn check_record(
    store: &Store,
    data: &MmapSource,
    dict_id: Option<u32>,
    i: u64,
) -> (Option<RecordLoc>, Vec<String>) {
    let name = &store.info().name;
    let mut found = Vec::new();
    let loc = match store.loc(i) {
        Ok(loc) => loc,
        Err(e) => return (None, vec![strip(name, &e.to_string())]),
    };
    if store.codec() != Codec::Raw {
        let frame = data.slice(loc.offset, loc.phys_length as usize).unwrap_or(&[]);
        match zstd_safe::get_frame_content_size(frame) {
            Ok(Some(_)) => {}
            Ok(None) => found.push("zstd frame does not carry its content size".to_string()),
            Err(_) => found.push("stored bytes are not a zstd frame (bad magic or frame header)".to_string()),
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
        match (frame_dict, dict_id) {
            (Some(f), None) => found.push(format!("zstd frame needs dictionary {f} but the codec is zstd")),
            (Some(f), Some(d)) if f != d => found
                .push(format!("zstd frame was compressed with dictionary {f}, dict.zr is dictionary {d}")),
            _ => {}
        }
    }
    // A frame already known to be broken would only fail again, less clearly.
    if found.is_empty() {
        if let Err(e) = store.get(i) {
            found.push(strip(name, &e.to_string()));
        }
    }
    (Some(loc), found)
}

fn check_records(ctx: &Ctx, store: &Store, report: &mut Report) -> CliResult {
    let data_path = store.path().join("data.zr");
    let file = File::open(&data_path).map_err(|e| super::common::io_fail(&data_path, "open", e))?;
    let data = MmapSource::new(&file).map_err(|e| super::common::io_fail(&data_path, "mmap", e))?;
    let dict_id = store.dict_bytes().and_then(zstd_safe::get_dict_id_from_dict).map(|d| d.get());
    let bar = ctx.bar(store.len(), "verify");
    let track_layout = store.len() <= MAX_LAYOUT_RECORDS;
    let mut spans: Vec<(u64, u64, u64)> = Vec::new();
    let mut at = 0;
    while at < store.len() {
        let end = (at + ROUND).min(store.len());
        let results: Vec<_> =
            (at..end).into_par_iter().map(|i| check_record(store, &data, dict_id, i)).collect();
        for (i, (loc, found)) in (at..end).zip(results) {
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
        check_layout(spans, store.info().header.tail_offset, report);
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
