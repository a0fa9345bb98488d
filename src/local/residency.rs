//! Whether a batch's records are in memory: a store's, or a dataset
//! column's across its shards. A batch found out of memory reads cold
//! (`reader/parts.rs`, [`super::cold`]): every record at once with pread,
//! instead of page faults one at a time through the map, the slow path by
//! far (3-9x on 64 KiB records).
//!
//! A dataset's column decides for its whole batch, not each shard for its
//! few records: a shard asked about its 4 records of a batch, found warm
//! once (its pages half in from readahead), went 64 batches unprobed
//! through page faults (2,729 major faults in 3 cold rounds of 50 batches
//! against the store's 3; `perf stat`, 64 shards of 2 KiB token blocks).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Gathers that read cold without probing after a probe found a record out
/// of memory: a cold store stays cold for a while, and probing costs a
/// system call.
const COLD_STICKY: u32 = 8;
/// Records gathered after a probe found a store warm before the next probe:
/// one probe a batch of 256 (`PROBES` system calls of about 1 µs, against
/// 0.5-1 ms of gathering), and no more when the batches are small.
const WARM_RECORDS: u64 = 256;
/// Records a probe asks about, spread over the batch: the batch reads cold
/// if any is out of memory. A store partly in memory (pages another reader
/// or a live map keeps, or a cache that evicted some) has resident records
/// among cold ones; one resident record must not send the whole batch
/// through page faults, while reading a half-warm batch cold costs a copy
/// from the page cache.
pub(crate) const PROBES: usize = 4;

/// What the last probes found, for the next batches.
#[derive(Debug)]
pub(crate) struct Residency {
    /// Gathers left that skip the probe and read cold.
    cold_left: AtomicU32,
    /// Records gathered warm since the last probe ([`WARM_RECORDS`]).
    warm_records: AtomicU64,
}

impl Default for Residency {
    fn default() -> Self {
        // The first batch probes.
        Residency { cold_left: AtomicU32::new(0), warm_records: AtomicU64::new(WARM_RECORDS) }
    }
}

impl Residency {
    /// Whether a batch of `n` records reads cold: after a cold probe the
    /// next `COLD_STICKY` batches do, after a warm one the next
    /// `WARM_RECORDS` records do not, else `PROBES` records spread over the
    /// batch are asked about (`out_of_memory(j)` for record `j`).
    pub(crate) fn is_cold(&self, n: usize, out_of_memory: impl Fn(usize) -> bool) -> bool {
        if n < 2 {
            return false; // nothing to overlap
        }
        let left = self.cold_left.load(Ordering::Relaxed);
        if left > 0 {
            self.cold_left.store(left - 1, Ordering::Relaxed);
            return true;
        }
        if self.warm_records.fetch_add(n as u64, Ordering::Relaxed) < WARM_RECORDS {
            return false;
        }
        // The count starts again only once a probe has found the store
        // warm: started before it, a batch on another thread meanwhile (a
        // loader's other worker) took it for a warm probe's and went
        // through page faults unprobed, cold as it was (steps of 150-305
        // ms, cold 64 KiB records, against 20-50).
        let cold = (0..PROBES).any(|k| out_of_memory(k * n / PROBES));
        match cold {
            true => self.cold_left.store(COLD_STICKY, Ordering::Relaxed),
            false => self.warm_records.store(0, Ordering::Relaxed),
        }
        cold
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Barrier;

    /// Two batches of a cold store at once (a loader's two workers): while
    /// one thread probes, the other must not take the probe for a warm one
    /// and skip its own. The first prober waits inside its probe until the
    /// other thread's call has either probed too or returned.
    #[test]
    fn a_batch_beside_a_probing_one_probes_too() {
        for _ in 0..50 {
            let r = Residency::default();
            let probing = Barrier::new(2);
            let other_done = AtomicBool::new(false);
            let other_probed = AtomicBool::new(false);
            let (first, second) = std::thread::scope(|s| {
                let first = s.spawn(|| {
                    r.is_cold(256, |_| {
                        probing.wait(); // (once: the first probe says cold)
                        while !other_done.load(Ordering::Acquire) && !other_probed.load(Ordering::Acquire) {
                            std::thread::yield_now();
                        }
                        true
                    })
                });
                probing.wait(); // the first thread is inside its probe
                let second = r.is_cold(256, |_| {
                    other_probed.store(true, Ordering::Release);
                    true
                });
                other_done.store(true, Ordering::Release);
                (first.join().unwrap(), second)
            });
            assert!(first && second, "both batches of a cold store read cold: {first} {second}");
        }
    }

    /// One thread: a cold probe holds for `COLD_STICKY` batches, a warm one
    /// for `WARM_RECORDS` records.
    #[test]
    fn a_probe_holds_for_a_while() {
        let r = Residency::default();
        let probes = AtomicU64::new(0);
        let probe = |cold: bool| {
            let probes = &probes;
            move |_| {
                probes.fetch_add(1, Ordering::Relaxed);
                cold
            }
        };
        assert!(r.is_cold(256, probe(true)));
        for _ in 0..COLD_STICKY {
            assert!(r.is_cold(256, probe(false)), "cold without probing");
        }
        assert_eq!(probes.load(Ordering::Relaxed), 1);
        assert!(!r.is_cold(256, probe(false)), "probed: warm");
        assert!(!r.is_cold(128, probe(true)) && !r.is_cold(128, probe(true)), "warm for 256 records");
        assert!(r.is_cold(128, probe(true)), "probed again: cold");
    }
}
