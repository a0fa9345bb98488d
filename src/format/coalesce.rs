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
