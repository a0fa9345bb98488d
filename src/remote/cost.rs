//! Merging by cost: which gaps between a batch's byte ranges are worth
//! reading to save requests. [`CostModel`] keeps what one store's requests
//! cost (configured, or measured as it runs); the rules are pure functions
//! of the ranges and those costs.
//!
//! With `c` requests in flight, a batch of `n` requests takes about
//! `ceil(n / c)` latencies plus its bytes over the bandwidth. Two ways to
//! save time by reading unwanted bytes:
//! - **per gap**: merging a gap saves one request, a `1/c` share of a
//!   latency, and costs `gap / bandwidth`: merge gaps up to
//!   `latency × bandwidth / c` (the per-request share of the link);
//! - **per wave**: when the requests overflow a whole number of waves by a
//!   few, merging that many of the smallest gaps saves a whole latency;
//!   worth it while those gaps together cost less than one.

use super::files::lock;
use super::options::RemoteOptions;
use crate::format::{Merge, RecordLoc};
use std::sync::Mutex;

/// Gap merged before anything is measured, or without a clock.
pub(crate) const UNMEASURED_GAP: u64 = 64 << 10;

/// What requests cost, as measured.
#[derive(Clone, Copy, Debug, Default)]
struct Costs {
    /// Seconds, a moving average of each batch's quickest read.
    latency: Option<f64>,
    /// Bytes per second, the most one batch of reads received.
    bandwidth: Option<f64>,
}

/// What one store's requests cost, as configured or as measured while it
/// runs, and the merging that follows from it.
#[derive(Debug, Default)]
pub(crate) struct CostModel {
    /// Configured latency (seconds) and bandwidth (bytes/s): measured when `None`.
    latency: Option<f64>,
    bandwidth: Option<f64>,
    concurrency: usize,
    max_gap: u64,
    max_request: u64,
    measured: Mutex<Costs>,
}

impl CostModel {
    pub(crate) fn new(options: &RemoteOptions) -> Self {
        CostModel {
            latency: options.latency.map(|l| l.as_secs_f64()),
            bandwidth: options.bandwidth.map(|b| b as f64),
            concurrency: options.concurrency,
            max_gap: options.max_gap,
            max_request: options.max_request,
            measured: Mutex::default(),
        }
    }

    pub(crate) fn latency(&self) -> Option<f64> {
        self.latency.or(lock(&self.measured).latency)
    }

    pub(crate) fn bandwidth(&self) -> Option<f64> {
        self.bandwidth.or(lock(&self.measured).bandwidth)
    }

    /// The gap worth reading to save a request: `latency × bandwidth /
    /// concurrency`, at most `max_gap`.
    pub(crate) fn merge_gap(&self) -> u64 {
        let by_cost = match (self.latency(), self.bandwidth()) {
            (Some(l), Some(b)) => per_gap(l, b, self.concurrency),
            _ => UNMEASURED_GAP,
        };
        by_cost.min(self.max_gap)
    }

    /// How to merge the reads of records at `locs`: gaps up to
    /// [`Self::merge_gap`], more when that fills whole waves of requests
    /// cheaply (see [`batch_gap`]).
    pub(crate) fn data_merge(&self, locs: &[RecordLoc]) -> Merge {
        let base = self.merge_gap();
        let gap = match (self.latency(), self.bandwidth()) {
            (Some(l), Some(b)) => {
                let ranges: Vec<(u64, u64)> = locs.iter().map(|l| (l.offset, l.end())).collect();
                batch_gap(&ranges, base, self.max_gap, self.concurrency, l, b)
            }
            _ => base,
        };
        self.merge(gap)
    }

    /// Learn from one batch of reads: `quickest` read's seconds, `bytes`
    /// received in `wall` seconds.
    pub(crate) fn measured(&self, quickest: f64, bytes: u64, wall: f64) {
        let mut c = lock(&self.measured);
        c.latency = Some(match c.latency {
            Some(l) => 0.8 * l + 0.2 * quickest,
            None => quickest,
        });
        if wall > 0.0 && bytes > 0 {
            let b = bytes as f64 / wall;
            c.bandwidth = Some(c.bandwidth.map_or(b, |was| was.max(b)));
        }
    }

    pub(crate) fn merge(&self, max_gap: u64) -> Merge {
        Merge { max_gap, max_len: self.max_request }
    }
}

/// The gap below which merging pays for itself request by request.
pub(crate) fn per_gap(latency: f64, bandwidth: f64, concurrency: usize) -> u64 {
    (latency * bandwidth / concurrency.max(1) as f64) as u64
}

/// The gap to merge across for one batch: at least `base`, raised so the
/// batch's requests fill whole waves of `concurrency` when the extra bytes
/// cost less than the latencies saved. `ranges` are the batch's byte ranges
/// (any order, overlaps allowed); `max_gap` bounds the result.
pub(crate) fn batch_gap(
    ranges: &[(u64, u64)],
    base: u64,
    max_gap: u64,
    concurrency: usize,
    latency: f64,
    bandwidth: f64,
) -> u64 {
    let c = concurrency.max(1);
    let mut sorted = ranges.to_vec();
    sorted.sort_unstable();
    // Gaps that `base` leaves unmerged; overlapping or touching ranges always merge.
    let mut end = 0u64;
    let mut gaps = Vec::new();
    for (k, &(a, b)) in sorted.iter().enumerate() {
        if k > 0 && a > end && a - end > base {
            gaps.push(a - end);
        }
        end = end.max(b);
    }
    let mut requests = gaps.len() + 1;
    if requests <= c || latency <= 0.0 || bandwidth <= 0.0 {
        return base;
    }
    gaps.sort_unstable();
    let budget = latency * bandwidth; // bytes worth one latency
    let (mut gap, mut merged) = (base, 0usize);
    while requests > c {
        // Merges that drop the last, partly filled wave: one latency saved.
        let drop = requests - (requests - 1) / c * c;
        let take = &gaps[merged..merged + drop];
        let cost: f64 = take.iter().map(|&g| g as f64).sum();
        let widest = *take.last().expect("drop >= 1");
        if cost > budget || widest > max_gap {
            break;
        }
        merged += drop;
        requests -= drop;
        gap = widest;
    }
    gap
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_gap_is_the_share_of_one_request() {
        assert_eq!(per_gap(0.02, 64e6, 64), 20_000);
    }

    #[test]
    fn fills_whole_waves_when_cheap() {
        // Gaps 10, 1800 and seven of 900: 10 requests at 4 in flight are 3
        // waves; merging the 2 smallest gaps makes 8 (2 waves), 4 more make 4 (1).
        let mut ranges: Vec<(u64, u64)> = (0..10).map(|k| (k * 1000, k * 1000 + 100)).collect();
        ranges[1] = (110, 200);
        assert_eq!(batch_gap(&ranges, 0, 1 << 20, 4, 0.02, 1e9), 900);
        // Only one wave's worth of bytes per wave saved: 910 bytes drop the third wave, 3600 not the second.
        assert_eq!(batch_gap(&ranges, 0, 1 << 20, 4, 0.02, 1e5), 900);
        assert_eq!(batch_gap(&ranges[2..], 0, 1 << 20, 4, 0.02, 1e5), 0, "8 requests: two full waves");
        // Too dear: a slow link keeps every request.
        assert_eq!(batch_gap(&ranges, 0, 1 << 20, 4, 0.02, 1e3), 0);
        // Never past max_gap.
        assert_eq!(batch_gap(&ranges, 0, 500, 4, 0.02, 1e9), 0);
        // Few enough requests already.
        assert_eq!(batch_gap(&ranges, 0, 1 << 20, 64, 0.02, 1e9), 0);
    }

    #[test]
    fn overlaps_and_repeats_are_one_range() {
        let ranges = [(0, 10), (5, 20), (0, 10), (40, 50)];
        assert_eq!(batch_gap(&ranges, 0, 1 << 20, 1, 0.02, 1e9), 20);
    }
}
