//! The fixed-size tables a remote store reads in 64 KiB pages (locations in
//! `meta.zr`, record checksums in `sums.zr`), and a small LRU of those pages.

use crate::format::{sums, StoreFile, LOC_SIZE, PAGE_SIZE};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// Bytes per cached page (of `meta.zr` or `sums.zr`); also the size of the open read.
pub const LOC_PAGE: u64 = 64 << 10;

/// A table of fixed-size entries in one of a store's files, read in cached
/// 64 KiB pages: the location table in `meta.zr`, the record checksums in
/// `sums.zr`. Entries never straddle pages (both tables' starts and entry
/// sizes divide 64 KiB's alignment).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table {
    pub(crate) file: StoreFile,
    /// Where entry 0 starts.
    start: u64,
    /// Bytes per entry.
    pub(crate) entry: u64,
    /// Entries in the table.
    len: u64,
}

impl Table {
    pub(crate) fn locations(len: u64) -> Table {
        Table { file: StoreFile::Meta, start: PAGE_SIZE, entry: LOC_SIZE, len }
    }
    pub(crate) fn checksums(len: u64) -> Table {
        Table { file: StoreFile::Sums, start: sums::HEADER_LEN, entry: sums::SUM_LEN, len }
    }
    /// The file bytes page `p` holds (only the table's).
    pub(crate) fn page(&self, p: u64) -> Range<u64> {
        // Fits: open checked the file holds the whole table (in u128).
        let end = self.start + self.entry * self.len;
        let start = p.saturating_mul(LOC_PAGE);
        start.min(end)..start.saturating_add(LOC_PAGE).min(end)
    }
    /// The page and offset in it of entry `i`.
    pub(crate) fn place(&self, i: u64) -> (u64, usize) {
        let pos = self.start + self.entry * i;
        (pos / LOC_PAGE, (pos % LOC_PAGE) as usize)
    }
}

/// Pages of one table's file by index (page `p` holds the file's bytes
/// `p * LOC_PAGE ..`: `meta.zr`'s for locations, `sums.zr`'s for checksums), least
/// recently used evicted first.
#[derive(Debug)]
pub(crate) struct PageCache {
    capacity: usize,
    tick: u64,
    pages: HashMap<u64, (Arc<[u8]>, u64)>,
}

impl PageCache {
    pub(crate) fn new(capacity: usize) -> Self {
        PageCache { capacity: capacity.max(1), tick: 0, pages: HashMap::new() }
    }

    pub(crate) fn get(&mut self, page: u64) -> Option<Arc<[u8]>> {
        self.tick += 1;
        let tick = self.tick;
        self.pages.get_mut(&page).map(|(bytes, used)| {
            *used = tick;
            bytes.clone()
        })
    }

    pub(crate) fn insert(&mut self, page: u64, bytes: Arc<[u8]>) {
        self.tick += 1;
        self.pages.insert(page, (bytes, self.tick));
        while self.pages.len() > self.capacity {
            let oldest = self
                .pages
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(&p, _)| p)
                .expect("cache is not empty");
            self.pages.remove(&oldest);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.pages.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used() {
        let mut c = PageCache::new(2);
        c.insert(1, Arc::from(vec![1u8]));
        c.insert(2, Arc::from(vec![2u8]));
        assert!(c.get(1).is_some());
        c.insert(3, Arc::from(vec![3u8]));
        assert!(c.get(2).is_none());
        assert!(c.get(1).is_some() && c.get(3).is_some());
        assert_eq!(c.len(), 2);
    }
}
