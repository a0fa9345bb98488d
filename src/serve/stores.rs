//! `GET /api/stores`: the store directories under the root, and the
//! datasets (directories holding a regular `zrecord.json`).
//!
//! A store directory is one holding a regular `meta.zr`. A dataset's entry
//! has the same `path`, `url` and `files` (`{"zrecord.json": size}`) plus
//! `"kind": "dataset"` and a `dataset` summary, so a client that knows only
//! stores can tell it apart by that field. The walk does not
//! follow directory symlinks, skips hidden directories, stops at a depth and
//! a directory count, and reports a file only if it would be served (the same
//! [`resolve`] check as a GET), so every listed URL works.

use std::fmt::Write as _;
use std::path::Path;

use super::path::{percent_encode_segment, resolve};
use crate::{Error, Result};

/// Stop walking after this many directories, whatever the depth.
const MAX_DIRS: usize = 10_000;
const STORE_FILES: [&str; 3] = ["meta.zr", "data.zr", "dict.zr"];
/// Manifests larger than this are listed without their summary.
const SUMMARISED_MANIFEST: u64 = 4 << 20;

/// One store found under the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreEntry {
    /// Path segments from the root (empty for the root itself).
    pub segments: Vec<String>,
    /// `(file name, size)` for each of `meta.zr`, `data.zr`, `dict.zr`
    /// present (`zrecord.json` for a dataset).
    pub files: Vec<(&'static str, u64)>,
    /// Whether it is a dataset's root rather than a store.
    pub dataset: bool,
}

impl StoreEntry {
    /// Its URL path on the server: `/a/b%20c/` (`/` for the root itself).
    pub fn url(&self) -> String {
        let mut url = String::from("/");
        for seg in &self.segments {
            url.push_str(&percent_encode_segment(seg));
            url.push('/');
        }
        url
    }
}

/// A store directory under a served root, as `/api/stores` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedStore {
    /// Path from the root, `/`-separated; empty for the root itself.
    pub path: String,
    /// Its URL path on the server, percent-encoded, ending in `/`
    /// (`/a/b%20c/`; `/` for the root itself).
    pub url: String,
    /// Whether it is a dataset (a directory holding `zrecord.json`).
    pub dataset: bool,
}

/// The store directories a server of `root` lists at `/api/stores`, down to
/// `max_depth` levels ([`super::ServeConfig::store_depth`]), sorted by path:
/// for a caller that wants to name them before serving (`zrecord serve`).
///
/// # Errors
/// [`Error::Io`] if `root` cannot be resolved.
pub fn list_stores(root: &Path, max_depth: usize) -> Result<Vec<ListedStore>> {
    let canonical = root.canonicalize().map_err(|e| Error::io(root, "open serve root", e))?;
    Ok(find_stores(&canonical, max_depth)
        .into_iter()
        .map(|s| ListedStore { path: s.segments.join("/"), url: s.url(), dataset: s.dataset })
        .collect())
}

/// Every store directory under `root` (canonical) down to `max_depth`
/// segments, sorted by path.
pub(crate) fn find_stores(root: &Path, max_depth: usize) -> Vec<StoreEntry> {
    let mut found = Vec::new();
    let mut stack: Vec<Vec<String>> = vec![Vec::new()];
    let mut visited = 0;
    while let Some(rel) = stack.pop() {
        visited += 1;
        if visited > MAX_DIRS {
            break;
        }
        let files: Vec<(&'static str, u64)> =
            STORE_FILES.iter().filter_map(|&name| Some((name, served_size(root, &rel, name)?))).collect();
        if files.first().is_some_and(|(n, _)| *n == "meta.zr") {
            found.push(StoreEntry { segments: rel.clone(), files, dataset: false });
        } else if let Some(size) = served_size(root, &rel, crate::dataset::layout::MANIFEST) {
            let files = vec![(crate::dataset::layout::MANIFEST, size)];
            found.push(StoreEntry { segments: rel.clone(), files, dataset: true });
        }
        if rel.len() >= max_depth {
            continue;
        }
        let mut dir = root.to_path_buf();
        dir.extend(&rel);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            // `file_type` does not follow symlinks: linked directories are skipped.
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if is_dir && !name.starts_with('.') {
                let mut child = rel.clone();
                child.push(name.to_owned());
                stack.push(child);
            }
        }
    }
    found.sort_by(|a, b| a.segments.cmp(&b.segments));
    found
}

/// The size of file `name` in directory `rel` under `root`, if it is served.
fn served_size(root: &Path, rel: &[String], name: &str) -> Option<u64> {
    let mut path = rel.join("/");
    if !path.is_empty() {
        path.push('/');
    }
    path.push_str(name);
    resolve(root, &path).ok().map(|f| f.meta.len())
}

/// A dataset's summary in the listing: `{"version", "length", "shards",
/// "columns": [names]}`, or `null` when its manifest is too big or damaged.
fn dataset_summary(root: &Path, entry: &StoreEntry) -> String {
    let mut path = root.to_path_buf();
    path.extend(&entry.segments);
    path.push(crate::dataset::layout::MANIFEST);
    let manifest = std::fs::metadata(&path)
        .ok()
        .filter(|m| m.len() <= SUMMARISED_MANIFEST)
        .and_then(|_| std::fs::read(&path).ok())
        .and_then(|bytes| crate::dataset::Manifest::parse(&path.display().to_string(), &bytes).ok());
    match manifest {
        Some(m) => {
            let columns: Vec<String> = m.columns.iter().map(|c| json_string(&c.name)).collect();
            format!(
                "{{\"version\": {}, \"length\": {}, \"shards\": {}, \"columns\": [{}]}}",
                m.version,
                m.length,
                m.shards.len(),
                columns.join(", ")
            )
        }
        None => "null".into(),
    }
}

/// The `/api/stores` body:
/// `[{"path": "a/b", "url": "/a/b/", "files": {"meta.zr": 10, "data.zr": 20}}]`.
/// The root itself, if a store, has path `""` and url `"/"`. A dataset
/// adds `"kind": "dataset", "dataset": {"version", "length", "shards",
/// "columns"}` (its shards' stores are listed as stores too).
pub(crate) fn stores_json(root: &Path, max_depth: usize) -> String {
    let mut out = String::from("[");
    for (i, s) in find_stores(root, max_depth).iter().enumerate() {
        out.push_str(if i == 0 { "\n  " } else { ",\n  " });
        let url = s.url();
        let _ = write!(
            out,
            "{{\"path\": {}, \"url\": {}, \"files\": {{",
            json_string(&s.segments.join("/")),
            json_string(&url)
        );
        for (j, (name, size)) in s.files.iter().enumerate() {
            let sep = if j == 0 { "" } else { ", " };
            let _ = write!(out, "{sep}\"{name}\": {size}");
        }
        out.push('}');
        if s.dataset {
            let _ = write!(out, ", \"kind\": \"dataset\", \"dataset\": {}", dataset_summary(root, s));
        }
        out.push('}');
    }
    out.push_str("\n]\n");
    out
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes() {
        assert_eq!(json_string("a\"b\\c\n\u{1}ü"), "\"a\\\"b\\\\c\\n\\u0001ü\"");
    }

    #[test]
    fn walk_finds_nested_stores_within_depth() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mk = |rel: &str, files: &[(&str, usize)]| {
            let d = root.join(rel);
            std::fs::create_dir_all(&d).unwrap();
            for (n, len) in files {
                std::fs::write(d.join(n), vec![0u8; *len]).unwrap();
            }
        };
        mk("a", &[("meta.zr", 3), ("data.zr", 5)]);
        mk("b/c d", &[("meta.zr", 1), ("data.zr", 2), ("dict.zr", 4)]);
        mk("x/y/z/deep", &[("meta.zr", 1)]);
        mk(".hidden", &[("meta.zr", 1)]);
        mk("nometa", &[("data.zr", 1)]);
        let found = find_stores(&root, 3);
        let paths: Vec<String> = found.iter().map(|s| s.segments.join("/")).collect();
        assert_eq!(paths, ["a", "b/c d"]);
        assert_eq!(found[1].files, [("meta.zr", 1), ("data.zr", 2), ("dict.zr", 4)]);
        assert_eq!(find_stores(&root, 4).len(), 3);
        let json = stores_json(&root, 3);
        assert!(json.contains(r#"{"path": "b/c d", "url": "/b/c%20d/", "files": {"meta.zr": 1, "data.zr": 2, "dict.zr": 4}}"#), "{json}");
        assert_eq!(stores_json(&root.join("nometa"), 3), "[\n]\n");
        let listed = list_stores(&root, 3).unwrap();
        assert_eq!(listed[1], ListedStore { path: "b/c d".into(), url: "/b/c%20d/".into(), dataset: false });
        assert_eq!(
            list_stores(&root.join("a"), 0).unwrap(),
            [ListedStore { path: "".into(), url: "/".into(), dataset: false }]
        );
    }
}
