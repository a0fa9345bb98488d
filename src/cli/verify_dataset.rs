//! `zrecord verify DATASET`: every (shard, column) store checked as `verify`
//! checks a store, and against what the manifest says of it (schema, codec,
//! length, file sizes, shared dictionary, the checksum sidecar it names),
//! each finding naming its shard and column. A store that cannot be read at
//! all (a missing file) is one problem, and the check goes on.

use super::common::{CliResult, Ctx, Fail, Out};
use super::records::{self, DatasetArgs};
use super::verify::{verify_local, verify_remote, Finding};
use serde_json::json;
use std::path::{Path, PathBuf};
use zrecord::dataset::{layout, DatasetOptions, Manifest};
use zrecord::format::files::{DATA, SUMS};
use zrecord::format::StoreInfo;
use zrecord::open::Options;
use zrecord::{Dataset, Records, Store};

/// Where the dataset's stores are read from.
enum Root {
    Dir(PathBuf),
    Url(String),
}

/// One finding in one (shard, column) store.
struct Found {
    shard: String,
    column: String,
    finding: Finding,
}

pub fn run(ctx: &Ctx, target: &Path, d: &DatasetArgs, json_out: bool) -> CliResult {
    let root = match records::url_of(target)? {
        Some(url) => Root::Url(url.trim_end_matches('/').to_string()),
        None => Root::Dir(records::local_path(target)?),
    };
    let name = match &root {
        Root::Dir(p) => p.display().to_string(),
        Root::Url(u) => u.clone(),
    };
    let ds = Dataset::open_with(&name, &DatasetOptions { version: d.version, ..Default::default() })?;
    let m = ds.manifest();
    let columns: Vec<usize> = match &d.column {
        Some(c) => vec![m
            .column_index(c)
            .ok_or_else(|| ds.column(c).err().map(Fail::from).unwrap_or(Fail::Reported))?],
        None => (0..m.columns.len()).collect(),
    };
    let (mut problems, mut warnings) = (Vec::new(), Vec::new());
    let (mut stores, mut opened, mut sealed) = (0usize, 0usize, 0usize);
    for (k, shard) in m.shards.iter().enumerate() {
        for &c in &columns {
            let column = &m.columns[c].name;
            let rel = layout::store_path(&shard.path, column);
            let at = |finding: Finding| Found { shard: shard.path.clone(), column: column.clone(), finding };
            stores += 1;
            let checked = match &root {
                Root::Dir(dir) => verify_local(ctx, &dir.join(&rel)),
                Root::Url(url) => verify_remote(ctx, &format!("{url}/{rel}")),
            };
            match checked {
                Ok(v) => {
                    opened += usize::from(v.len > 0 || v.report.problems.is_empty());
                    sealed += usize::from(v.sealed);
                    problems.extend(v.report.problems.into_iter().map(at));
                    warnings.extend(v.report.warnings.into_iter().map(at));
                }
                Err(Fail::Msg(message)) => problems.push(at(Finding { index: None, message })),
                Err(other) => return Err(other),
            }
            let against = match &root {
                Root::Dir(dir) => against_local(m, &name, k, c, &dir.join(&rel)),
                Root::Url(url) => against_remote(m, &name, k, c, &format!("{url}/{rel}")),
            };
            // A store that does not open was reported above.
            for message in against.unwrap_or_default() {
                problems.push(at(Finding { index: None, message }));
            }
        }
    }
    let mut out = Out::new();
    if json_out {
        let list = |v: &[Found]| -> Vec<serde_json::Value> {
            v.iter()
                .map(|f| json!({"shard": f.shard, "column": f.column, "index": f.finding.index, "message": f.finding.message}))
                .collect()
        };
        out.line(
            &json!({
                "path": name,
                "dataset": true,
                "version": ds.version(),
                "len": ds.len(),
                "stores": stores,
                "sealed_stores": sealed,
                "ok": problems.is_empty(),
                "problems": list(&problems),
                "warnings": list(&warnings),
            })
            .to_string(),
        )?;
    } else {
        for (what, list) in [("warning", &warnings), ("problem", &problems)] {
            for f in list.iter() {
                let record = f.finding.index.filter(|i| !f.finding.message.contains(&format!("record {i}")));
                let record = record.map_or(String::new(), |i| format!("record {i}: "));
                out.line(&format!(
                    "{what}: shard {} column {}: {record}{}",
                    f.shard, f.column, f.finding.message
                ))?;
            }
        }
        if sealed < opened {
            out.line(&format!(
                "note: {} of {stores} stores are not sealed: changed bytes that still decode cannot be detected there",
                opened - sealed
            ))?;
        }
        let verdict = if problems.is_empty() { "ok" } else { "FAILED" };
        out.line(&format!(
            "{name}: {verdict}: version {}, {} records in {} shards × {} columns ({stores} stores) checked, {} problems, {} warnings",
            ds.version(),
            ds.len(),
            m.shards.len(),
            columns.len(),
            problems.len(),
            warnings.len()
        ))?;
    }
    out.flush()?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Fail::Reported)
    }
}

/// What the manifest says of store (`shard`, `column`) against what the
/// store is: the mismatches, or `None` when the store does not open.
#[allow(clippy::too_many_arguments)] // the check's inputs, named
fn against(
    m: &Manifest,
    dataset: &str,
    (shard, column): (usize, usize),
    info: &StoreInfo,
    dict: Option<&[u8]>,
    (data, sums): (u64, Option<u64>),
) -> Vec<String> {
    let mut found = Vec::new();
    // The message names the dataset, shard and column: the line names them already.
    let bare = |e: zrecord::Error| match e {
        zrecord::Error::BadShard { check, .. } => {
            check.split_once(": ").map_or(check.clone(), |(_, rest)| rest.to_string())
        }
        e => e.to_string(),
    };
    if let Err(e) = m.check_store(dataset, shard, column, info, dict) {
        found.push(format!("against the manifest: {}", bare(e)));
    }
    if let Err(e) = m.check_data_size(dataset, shard, column, data) {
        found.push(format!("against the manifest: {}", bare(e)));
    }
    let want = m.shards[shard].columns[&m.columns[column].name].sums;
    if want != sums {
        let say = |n: Option<u64>| n.map_or("absent".to_string(), |n| format!("{n} bytes"));
        found.push(format!(
            "against the manifest: sums.zr is {}, the manifest says {}",
            say(sums),
            say(want)
        ));
    }
    found
}

fn against_local(
    m: &Manifest,
    dataset: &str,
    shard: usize,
    column: usize,
    dir: &Path,
) -> Option<Vec<String>> {
    let store = Store::open(dir).ok()?;
    let data = std::fs::metadata(dir.join(DATA)).ok()?.len();
    let sums = std::fs::metadata(dir.join(SUMS)).ok().map(|f| f.len());
    Some(against(m, dataset, (shard, column), store.info(), store.dict_bytes(), (data, sums)))
}

fn against_remote(
    m: &Manifest,
    dataset: &str,
    shard: usize,
    column: usize,
    url: &str,
) -> Option<Vec<String>> {
    let store = zrecord::open::remote(url, &Options::default()).ok()?;
    let data = store.data_size().ok()?;
    let sums = store.read_sidecar().ok()?.map(|b| b.len() as u64);
    Some(against(m, dataset, (shard, column), store.info(), store.dict_bytes(), (data, sums)))
}
