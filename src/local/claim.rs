//! Who holds a store directory, and claiming one for a new store.
//!
//! loaderx's rules: a store open anywhere is "busy", one that is just there
//! "exists". Two things are ours. "Busy" says whether the holder is this
//! process (a reader or writer it has not closed: waiting would never end)
//! or another one, so the open stores of this process are counted here. And
//! [`CreateOptions::overwrite`](crate::local::writer::CreateOptions) replaces
//! a store that is there (an unpublished build a killed writer left, or a
//! published store), never a directory holding anything else.

use crate::format::files::{StoreFile, META};
use crate::format::{Header, HEADER_SIZE};
use crate::local::sys::{self, read_exact_at};
use crate::local::work::lock;
use crate::local::writer::SUMS_PARTIAL;
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How this process holds a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Reader = 0,
    Writer = 1,
}

/// A directory's identity: its device and inode. (Its canonical path took a
/// `stat` per path component, and finding it again among 512 others, as a
/// dataset's shards are opened and closed, compared paths component by
/// component: a quarter of the time of opening a shard.)
type DirId = (u64, u64);

/// The store directories this process holds open: how many readers and
/// writers each.
static HELD: Mutex<BTreeMap<DirId, [usize; 2]>> = Mutex::new(BTreeMap::new());

/// This process holds a store until the value is dropped.
#[derive(Debug)]
pub(crate) struct Held(Option<(DirId, Role)>);

/// `dir`'s identity, if it can be had.
fn dir_id(dir: &Path) -> Option<DirId> {
    sys::file_id(&std::fs::metadata(dir).ok()?)
}

/// Count `dir` as held by this process in `role`.
pub(crate) fn hold(dir: &Path, role: Role) -> Held {
    let key = dir_id(dir).map(|d| (d, role));
    if let Some((d, role)) = key {
        lock(&HELD).entry(d).or_default()[role as usize] += 1;
    }
    Held(key)
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some((d, role)) = self.0.take() {
            let mut held = lock(&HELD);
            if let Some(counts) = held.get_mut(&d) {
                counts[role as usize] -= 1;
                if *counts == [0, 0] {
                    held.remove(&d);
                }
            }
        }
    }
}

/// How this process holds `dir` (a writer before readers), if it does.
fn held_here(dir: &Path) -> Option<Role> {
    let counts = *lock(&HELD).get(&dir_id(dir)?)?;
    match counts {
        [_, w] if w > 0 => Some(Role::Writer),
        [r, _] if r > 0 => Some(Role::Reader),
        _ => None,
    }
}

/// The `Busy` error for `dir`, whose lock is held: by this process or another.
pub(crate) fn busy(dir: &Path, name: &str) -> Error {
    let why = match held_here(dir) {
        Some(Role::Writer) => "a writer in this process has not closed it; close that writer first",
        Some(Role::Reader) => "this process has it open for reading; close those readers first",
        None => "another process has it open; wait for it to close the store",
    };
    Error::Busy { store: name.to_string(), why }
}

/// Whether `name` is a file our writer leaves in a store directory.
fn is_store_file(name: &str) -> bool {
    StoreFile::from_name(name).is_some() || name == SUMS_PARTIAL
}

/// What `create` found at an existing store's `meta.zr` (for the message).
fn describe_store(meta: &File, name: &str) -> String {
    let mut head = [0u8; HEADER_SIZE];
    match read_exact_at(meta, &mut head, 0).map(|()| Header::parse(name, &head)) {
        Ok(Ok(h)) => format!("a published store of {} records", h.length),
        Ok(Err(Error::Unpublished { .. })) | Err(_) => {
            "an unpublished build (its writer did not close)".to_string()
        }
        Ok(Err(_)) => "a store whose meta.zr is damaged".to_string(),
    }
}

/// Apply loaderx's create rules to `dir` (replacing a store there when
/// `overwrite`) and return the new store's locked `meta.zr` and `data.zr`.
pub(crate) fn claim_directory(dir: &Path, name: &str, overwrite: bool) -> Result<(File, File)> {
    let exists = |what: String| Error::AlreadyExists { store: name.to_string(), what };
    let meta_path = dir.join(META);
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let (mut store_files, mut foreign) = (Vec::new(), Vec::new());
            for entry in entries {
                let entry = entry.map_err(|e| Error::io(dir, "list", e))?;
                let file = entry.file_name().to_string_lossy().into_owned();
                if is_store_file(&file) {
                    store_files.push(file)
                } else {
                    foreign.push(file)
                }
            }
            // Locked (exclusively) while it is looked at and replaced.
            let old_meta = match store_files.iter().any(|f| f == META) {
                true => Some(lock_old_meta(&meta_path, dir, name)?),
                false => None,
            };
            if !foreign.is_empty() {
                foreign.sort();
                let what = match old_meta {
                    Some(_) => format!("a store with other files beside it ({})", foreign.join(", ")),
                    None => format!("a directory that is not a store ({})", foreign.join(", ")),
                };
                return Err(exists(format!("{what}; choose a new or empty directory")));
            }
            if !store_files.is_empty() && !overwrite {
                let what = old_meta.as_ref().map_or_else(
                    || "the files of an unfinished store".to_string(),
                    |m| describe_store(m, name),
                );
                return Err(exists(format!(
                    "{what}; choose a new or empty directory, or create with overwrite=True to replace it"
                )));
            }
            for file in &store_files {
                let path = dir.join(file);
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => {
                        return Err(Error::io(path, "remove", e))
                    }
                    _ => {}
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
            return Err(exists("a file, not a directory; choose a new path".into()))
        }
        Err(e) => return Err(Error::io(dir, "list", e)),
    }
    let create_new = |path: PathBuf| {
        std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path).map_err(|e| {
            match e.kind() {
                io::ErrorKind::AlreadyExists => exists("another writer created it meanwhile".into()),
                _ => Error::io(path, "create", e),
            }
        })
    };
    let meta = create_new(meta_path)?;
    match meta.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(busy(dir, name)),
        Err(TryLockError::Error(e)) => return Err(Error::io(dir.join(META), "lock", e)),
    }
    let data = create_new(dir.join(crate::format::files::DATA))?;
    Ok((meta, data))
}

/// An existing store's `meta.zr`, locked exclusively: `Busy` when anyone
/// (a reader or writer, here or elsewhere) has the store open.
fn lock_old_meta(meta_path: &Path, dir: &Path, name: &str) -> Result<File> {
    let f = File::open(meta_path).map_err(|e| Error::io(meta_path, "open", e))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(TryLockError::WouldBlock) => Err(busy(dir, name)),
        Err(TryLockError::Error(e)) => Err(Error::io(meta_path, "lock", e)),
    }
}
