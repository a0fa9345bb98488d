//! A small LRU of location-table pages (64 KiB slices of `meta.zr`).

use std::collections::HashMap;
use std::sync::Arc;

/// Bytes of `meta.zr` per cached page; also the size of the open read.
pub const LOC_PAGE: u64 = 64 << 10;

/// Pages by index (page `p` holds `meta.zr` bytes `p * LOC_PAGE ..`), least
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
