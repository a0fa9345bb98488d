//! Open files kept between requests, checked again on every request.
//!
//! A store reader asks for the same few files (`meta.zr`, `data.zr`, ...)
//! thousands of times a second. Opening, `fstat`ing and closing a file for
//! each answer cost about 2.5 µs, a sixth of the server's CPU time per 4 KiB
//! Range answer; one `lstat` of the path costs about 1 µs. So a file opened
//! for a request is kept, and reused while the path still names that very
//! file: the `lstat` must find a regular file with the same device and inode.
//! Anything else (the file replaced by a rename, deleted, or its path now a
//! symlink) drops the entry and the request resolves the path afresh, with
//! every rule of [`resolve`]. A file changed in place is the same inode: its
//! new size and time come from the `lstat`, so the ETag still follows it.
//!
//! Only files reached through no symlink are kept. An entry unused for a
//! while is closed by [`OpenFiles::sweep`] (run by the accept loop), so a
//! deleted store's disk space is not held for long; the number of entries is
//! bounded too.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use super::os::file_id;
use super::path::{resolve, NotServed, OpenFile};

/// How often [`OpenFiles::sweep`] runs: an entry unused for one to two
/// periods is closed.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// Most files kept open at once (a store has at most four).
const MAX_ENTRIES: usize = 256;

struct Entry {
    file: Arc<File>,
    /// The file's device and inode, as [`file_id`] gives them.
    id: (u64, u64),
    /// The sweep period in which the entry was last used.
    used: AtomicU64,
}

/// The served root's open files, by relative path (see the module doc).
///
/// A read-write lock: a request only reads the map, so a worker thread the
/// kernel preempts while it looks a file up never holds up the others.
#[derive(Default)]
pub(crate) struct OpenFiles {
    entries: RwLock<HashMap<String, Entry>>,
    /// Sweep periods so far.
    period: AtomicU64,
}

impl OpenFiles {
    // A panic elsewhere while the lock was held leaves a valid map.
    fn read(&self) -> RwLockReadGuard<'_, HashMap<String, Entry>> {
        self.entries.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<String, Entry>> {
        self.entries.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The regular file `relative` names under `root`, as [`resolve`] finds
    /// it, reusing a kept file when the path still names it.
    pub fn open(&self, root: &Path, relative: &str) -> Result<OpenFile, NotServed> {
        let period = self.period.load(Ordering::Relaxed);
        let kept = self.read().get(relative).map(|e| {
            e.used.store(period, Ordering::Relaxed);
            (Arc::clone(&e.file), e.id)
        });
        if let Some((file, id)) = kept {
            let path = root.join(relative);
            match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.is_file() && file_id(&meta) == Some(id) => {
                    return Ok(OpenFile { file, meta, path, direct: true });
                }
                _ => {
                    self.write().remove(relative);
                }
            }
        }
        let found = resolve(root, relative)?;
        if let (true, Some(id)) = (found.direct, file_id(&found.meta)) {
            let mut entries = self.write();
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            let entry = Entry { file: Arc::clone(&found.file), id, used: AtomicU64::new(period) };
            entries.insert(relative.to_owned(), entry);
        }
        Ok(found)
    }

    /// Close the files not used since the last sweep.
    pub fn sweep(&self) {
        let period = self.period.fetch_add(1, Ordering::Relaxed);
        self.write().retain(|_, e| e.used.load(Ordering::Relaxed) >= period);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.read().len()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Read as _;

    fn body(f: &OpenFile) -> Vec<u8> {
        let mut v = Vec::new();
        (&*f.file).read_to_end(&mut v).unwrap();
        v
    }

    #[test]
    fn reuses_a_file_until_its_path_names_another() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a"), b"one").unwrap();
        let files = OpenFiles::default();
        let first = files.open(&root, "a").unwrap();
        assert_eq!(files.len(), 1);
        let again = files.open(&root, "a").unwrap();
        assert!(Arc::ptr_eq(&first.file, &again.file));

        // Replaced by a rename: the new file, not the kept one.
        std::fs::write(root.join("a.new"), b"two!").unwrap();
        std::fs::rename(root.join("a.new"), root.join("a")).unwrap();
        let replaced = files.open(&root, "a").unwrap();
        assert!(!Arc::ptr_eq(&first.file, &replaced.file));
        assert_eq!(replaced.meta.len(), 4);
        assert_eq!(body(&replaced), b"two!");

        // Deleted: gone, and no longer kept.
        std::fs::remove_file(root.join("a")).unwrap();
        assert!(matches!(files.open(&root, "a"), Err(NotServed::Missing)));
        assert_eq!(files.len(), 0);
    }

    #[test]
    fn a_path_turned_into_a_symlink_is_resolved_again() {
        let outer = tempfile::tempdir().unwrap();
        let base = outer.path().canonicalize().unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("f"), b"inside").unwrap();
        std::fs::write(base.join("secret"), b"outside").unwrap();
        let files = OpenFiles::default();
        assert_eq!(body(&files.open(&root, "f").unwrap()), b"inside");
        std::fs::remove_file(root.join("f")).unwrap();
        std::os::unix::fs::symlink(base.join("secret"), root.join("f")).unwrap();
        assert!(matches!(files.open(&root, "f"), Err(NotServed::Outside)));
    }

    #[test]
    fn unused_files_are_closed_by_the_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a"), b"a").unwrap();
        std::fs::write(root.join("b"), b"b").unwrap();
        let files = OpenFiles::default();
        files.open(&root, "a").unwrap();
        files.open(&root, "b").unwrap();
        files.sweep();
        files.open(&root, "a").unwrap();
        files.sweep();
        assert_eq!(files.len(), 1, "b was unused for a whole period");
        files.sweep();
        assert_eq!(files.len(), 0);
    }
}
