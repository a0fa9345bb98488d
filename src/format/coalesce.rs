//! Range coalescing: turn many small byte ranges into few requests.
//!
//! Pure and separately tested (as object_store does): sort, merge ranges whose
//! gap is small, never exceed a merged size, and remember where each original
//! range sits inside its merged fetch so no byte is copied to find it.

use std::ops::Range;

/// A merged fetch and the original ranges it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetch {
    /// Bytes to request.
    pub range: Range<u64>,
    /// Indices into the caller's range list served by this fetch.
    pub members: Vec<usize>,
}

/// Coalesce `ranges` into fetches: ranges are merged when the gap between
/// them is at most `max_gap` and the merged fetch stays within `max_len`
/// bytes (a single range longer than `max_len` is fetched alone).
/// Empty ranges are served by the fetch they fall in (or one of their own).
pub fn coalesce(ranges: &[Range<u64>], max_gap: u64, max_len: u64) -> Vec<Fetch> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| (ranges[i].start, ranges[i].end));
    let mut out: Vec<Fetch> = Vec::new();
    for i in order {
        let r = &ranges[i];
        if let Some(last) = out.last_mut() {
            let merged_end = last.range.end.max(r.end);
            let gap_ok = r.start <= last.range.end.saturating_add(max_gap);
            if gap_ok && merged_end - last.range.start <= max_len.max(last.range.end - last.range.start) {
                last.range.end = merged_end;
                last.members.push(i);
                continue;
            }
        }
        out.push(Fetch { range: r.clone(), members: vec![i] });
    }
    out
}

/// How close two ranges must lie to be read as one, and how long one read may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Merge {
    /// Merge two ranges when at most this many unwanted bytes lie between them.
    pub max_gap: u64,
    /// Largest merged read; a single longer range is still read alone.
    pub max_len: u64,
}

/// Ranges to read, merged into fewer reads, each original recoverable from
/// its read's bytes without a copy.
#[derive(Clone, Debug, Default)]
pub struct Reads {
    ranges: Vec<Range<u64>>,
    fetches: Vec<Fetch>,
}

impl Reads {
    /// Merge `ranges` by `merge` (see [`coalesce`]).
    pub fn new(ranges: Vec<Range<u64>>, merge: Merge) -> Reads {
        let fetches = coalesce(&ranges, merge.max_gap, merge.max_len);
        Reads { ranges, fetches }
    }
    /// The merged reads.
    pub fn fetches(&self) -> &[Fetch] {
        &self.fetches
    }
    /// The original ranges.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }
    /// Bytes all reads fetch.
    pub fn bytes(&self) -> u64 {
        self.fetches.iter().map(|f| f.range.end - f.range.start).sum()
    }
    /// The originals served by read `f`, given the bytes it fetched (all of
    /// its range): `(index into ranges, their bytes)`.
    ///
    /// # Panics
    /// When `bytes` is shorter than read `f`'s range.
    pub fn members<'b>(&'b self, f: usize, bytes: &'b [u8]) -> impl Iterator<Item = (usize, &'b [u8])> + 'b {
        let fetch = &self.fetches[f];
        fetch.members.iter().map(move |&m| {
            let r = &self.ranges[m];
            let at = (r.start - fetch.range.start) as usize;
            (m, &bytes[at..at + (r.end - r.start) as usize])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_near_ranges() {
        let f = coalesce(&[20..30, 0..10, 12..15, 100..110], 5, 1000);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].range, 0..30);
        assert_eq!(f[0].members, vec![1, 2, 0]);
        assert_eq!(f[1].range, 100..110);
    }

    #[test]
    fn respects_max_len() {
        let f = coalesce(&[0..10, 10..20, 20..30], 0, 20);
        assert_eq!(f.iter().map(|f| f.range.clone()).collect::<Vec<_>>(), vec![0..20, 20..30]);
        let big = coalesce(&[0..100, 100..101], 0, 20);
        assert_eq!(big.len(), 2);
    }
}
