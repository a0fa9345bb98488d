//! Weighted mixtures of several sources: which source, and which of its
//! records, fills each slot of every global batch.
//!
//! Like the [`Sampler`](super::sampler::Sampler), a mixture is a pure
//! function of `(seed, step, schedule)`: a checkpoint is the step, and every
//! rank of any world size sees its slice of the same global batches.
//!
//! **Composition.** Slots go to sources by Tijdeman's chairman assignment
//! (R. Tijdeman, *The chairman assignment problem*, 1980), an
//! earliest-deadline rule over the records in batch order: after every
//! record, every source's count stays within `1 - 1/(2s - 2)` (below 1) of
//! `weight × records drawn`, for `s` sources of non-zero weight. No random
//! draws decide the composition, so any run of K steps holds each source's
//! `weight × K × batch_size` records within 2.
//!
//! **Exact weights.** Weights are read as fractions `parts / total` with
//! `total` at most [`MAX_TOTAL`]: `[0.7, 0.2, 0.1]` is exactly `7:2:1` and
//! `[1, 1, 1]` exactly thirds. Weights with no such fraction (within 1e-13)
//! are rounded to parts of 2^20 (largest remainders), which moves a source's
//! share by less than 2^-20. With integral weights the assignment repeats
//! every `total` records (every count is then exact), which is what makes
//! [`Mixture::seek`] cheap: it replays at most `total` records per schedule
//! segment, whatever the step.
//!
//! **Per-source streams.** Each source draws its records from its own
//! endless stream, in its own [`Mode`], in stream order: `sequential` walks
//! `0, 1, 2, …` wrapping at the end; `cyclic` visits a fresh seeded
//! permutation of the whole source every epoch (nothing is dropped at an
//! epoch's end: the next epoch's records follow in the same batch); `iid`
//! draws uniformly with replacement from a counter-based generator (so it
//! seeks in O(1), unlike loaderx's). After N steps source `i` has drawn
//! `weight_i × N × batch_size` records (within 1), that many over its length
//! epochs.

use super::sampler::{mix, Mode, Permutation};
use crate::error::{Error, Result};
use crate::format::batch::try_room;
use std::sync::Arc;

/// The largest common denominator weights are read with (2^20).
pub const MAX_TOTAL: u64 = 1 << 20;

/// Periods up to this many records are assigned once, into a table that
/// every later period reads (256 KiB at most).
const TABLE_MAX: u64 = 1 << 16;

/// Round constant separating a source's key from the mixture's seed.
const SOURCE_KEY: u64 = 2;

/// A mixture's weights as integer parts of `total` (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weights {
    parts: Vec<u64>,
    total: u64,
}

impl Weights {
    /// Reads `weights` (any non-negative scale) as fractions of their sum.
    ///
    /// ```
    /// use zrecord::training::mixture::Weights;
    /// let w = Weights::new(&[0.7, 0.2, 0.1])?;
    /// assert_eq!((w.parts(), w.total()), (&[7, 2, 1][..], 10));
    /// # Ok::<(), zrecord::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Config`] for no weights, a negative or non-finite weight, or
    /// weights that are all 0.
    pub fn new(weights: &[f64]) -> Result<Weights> {
        if weights.is_empty() {
            return Err(Error::Config("a mixture needs at least one weight".into()));
        }
        if let Some(bad) = weights.iter().find(|w| !w.is_finite() || **w < 0.0) {
            return Err(Error::Config(format!("mixture weight {bad} is not a finite number >= 0")));
        }
        let sum: f64 = weights.iter().sum();
        if !sum.is_finite() || sum <= 0.0 {
            return Err(Error::Config(format!("mixture weights {weights:?} have no positive sum")));
        }
        let shares: Vec<f64> = weights.iter().map(|w| w / sum).collect();
        let parts = exact_parts(&shares).unwrap_or_else(|| rounded_parts(&shares));
        let g = parts.iter().fold(0, |g, &p| gcd(g, p));
        let parts: Vec<u64> = parts.iter().map(|p| p / g).collect();
        let total = parts.iter().sum();
        Ok(Weights { parts, total })
    }

    /// Each source's share, in parts of [`Weights::total`].
    pub fn parts(&self) -> &[u64] {
        &self.parts
    }

    /// The sum of the parts: the assignment's period, in records.
    pub fn total(&self) -> u64 {
        self.total
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Each share as a fraction with a small denominator, on a common one of at
/// most [`MAX_TOTAL`] (`None` when some share has none or they do not add up).
fn exact_parts(shares: &[f64]) -> Option<Vec<u64>> {
    let fractions: Vec<(u64, u64)> = shares.iter().map(|&x| small_fraction(x)).collect::<Option<_>>()?;
    let total = fractions.iter().try_fold(1u64, |l, &(_, q)| {
        let l = l / gcd(l, q) * q;
        (l <= MAX_TOTAL).then_some(l)
    })?;
    let parts: Vec<u64> = fractions.iter().map(|&(p, q)| p * (total / q)).collect();
    (parts.iter().sum::<u64>() == total).then_some(parts)
}

/// The continued-fraction convergent of `x` in `[0, 1]` within 1e-13 of it,
/// with a denominator of at most [`MAX_TOTAL`].
fn small_fraction(x: f64) -> Option<(u64, u64)> {
    let (mut h0, mut h1, mut k0, mut k1) = (0u64, 1u64, 1u64, 0u64);
    let mut r = x;
    for _ in 0..64 {
        let a = r.floor();
        if !(0.0..=MAX_TOTAL as f64).contains(&a) {
            return None;
        }
        let a = a as u64;
        let (h2, k2) = (a * h1 + h0, a * k1 + k0);
        if k2 > MAX_TOTAL {
            return None;
        }
        (h0, h1, k0, k1) = (h1, h2, k1, k2);
        if (h1 as f64 / k1 as f64 - x).abs() <= 1e-13 {
            return Some((h1, k1));
        }
        let f = r - a as f64;
        if f <= 0.0 {
            return None;
        }
        r = 1.0 / f;
    }
    None
}

/// Shares rounded to parts of [`MAX_TOTAL`] by largest remainders (ties to
/// the lower source), so they add up exactly.
fn rounded_parts(shares: &[f64]) -> Vec<u64> {
    let scaled: Vec<f64> = shares.iter().map(|s| s * MAX_TOTAL as f64).collect();
    let mut parts: Vec<u64> = scaled.iter().map(|s| s.floor() as u64).collect();
    let short = MAX_TOTAL.saturating_sub(parts.iter().sum());
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| (scaled[b] - scaled[b].floor()).total_cmp(&(scaled[a] - scaled[a].floor())));
    for &i in order.iter().cycle().take(short as usize) {
        parts[i] += 1;
    }
    parts
}

/// Tijdeman's chairman assignment over one period of `total` records.
///
/// Record `t` (1-based) goes to the source whose next deadline comes first
/// among those it can go to without exceeding their quota by `C = 1 -
/// 1/(2s - 2)`: source `i` is eligible when `λ_i t - c_i >= 1 - C`, and its
/// deadline is `(c_i + C) / λ_i`. Integer arithmetic only (`λ_i = p_i / D`).
#[derive(Clone, Debug)]
struct Chairman {
    weights: Weights,
    /// `2s - 2` for the `s` sources with parts (0 for one source).
    m: u128,
    /// Records assigned in this period.
    n: u64,
    counts: Vec<u64>,
    /// The period's sources in order, when it is at most [`TABLE_MAX`] long.
    table: Option<Arc<[u32]>>,
}

impl Chairman {
    fn new(weights: &Weights) -> Chairman {
        let active = weights.parts.iter().filter(|&&p| p > 0).count() as u128;
        let n = weights.parts.len();
        let m = (2 * active).saturating_sub(2);
        let mut c = Chairman { weights: weights.clone(), m, n: 0, counts: vec![0; n], table: None };
        if weights.total <= TABLE_MAX {
            let table: Vec<u32> = (0..weights.total).map(|_| c.assign() as u32).collect();
            (c.n, c.table) = (weights.total, Some(table.into()));
        }
        c
    }

    /// The source of the next record.
    fn next(&mut self) -> usize {
        if self.n == self.weights.total {
            self.n = 0;
            self.counts.fill(0);
        }
        match &self.table {
            Some(table) => {
                let i = table[self.n as usize] as usize;
                self.counts[i] += 1;
                self.n += 1;
                i
            }
            None => self.assign(),
        }
    }

    /// The next record's source by the rule itself (within a period).
    fn assign(&mut self) -> usize {
        let (parts, total) = (&self.weights.parts, self.weights.total);
        let (t, d, m) = (u128::from(self.n + 1), u128::from(total), self.m);
        let mut best: Option<(usize, u128)> = None;
        let mut fallback = (0usize, i128::MIN);
        for (i, (&p, &c)) in parts.iter().zip(&self.counts).enumerate() {
            if p == 0 {
                continue;
            }
            let (p, c) = (u128::from(p), u128::from(c));
            // Deficit λ·t − c, scaled by D: the fallback never needed in theory.
            let deficit = (p * t) as i128 - (c * d) as i128;
            if deficit > fallback.1 {
                fallback = (i, deficit);
            }
            if p * t * m < d * (c * m + 1) && m > 0 {
                continue;
            }
            let key = c * m + m.saturating_sub(1);
            match best {
                Some((b, bkey)) if bkey * p <= key * u128::from(parts[b]) => {}
                _ => best = Some((i, key)),
            }
        }
        let i = best.map_or(fallback.0, |(i, _)| i);
        self.counts[i] += 1;
        self.n += 1;
        i
    }

    /// Each source's count after `records` records from a period's start
    /// (the state is left there).
    fn advance(&mut self, records: u128) -> Vec<u128> {
        let total = u128::from(self.weights.total);
        let periods = records / total;
        self.n = 0;
        self.counts.fill(0);
        for _ in 0..(records % total) {
            self.next();
        }
        // After whole periods the state is the start's (every count exact).
        let full = self.weights.parts.iter().map(|&p| u128::from(p) * periods);
        full.zip(&self.counts).map(|(f, &c)| f + u128::from(c)).collect()
    }
}

/// The weights from a step on.
#[derive(Clone, Debug, PartialEq)]
struct Segment {
    start: u64,
    given: Vec<f64>,
    weights: Weights,
}

/// An endless, seekable stream of `(source, index)` batches over several
/// sources, mixed by weight (see the [module documentation](self)).
///
/// ```
/// use zrecord::training::mixture::Mixture;
/// use zrecord::training::sampler::Mode;
///
/// // Three sources of 100, 50 and 10 records, 70/20/10, batches of 10.
/// let mut m = Mixture::new(&[100, 50, 10], &[0.7, 0.2, 0.1], 10, 42)?
///     .modes(&[Mode::Cyclic, Mode::Sequential, Mode::Iid])?
///     .schedule(1000, &[0.5, 0.5, 0.0])?;
/// let (mut sources, mut indices) = (Vec::new(), Vec::new());
/// m.fill_next(&mut sources, &mut indices)?;
/// assert_eq!(sources.iter().filter(|&&s| s == 0).count(), 7);
/// assert_eq!(m.drawn(), &[7, 2, 1]);
///
/// // Rank 1 of 2, resumed at step 1: the second half of step 1's batch.
/// let mut rank1 = Mixture::new(&[100, 50, 10], &[0.7, 0.2, 0.1], 10, 42)?
///     .modes(&[Mode::Cyclic, Mode::Sequential, Mode::Iid])?
///     .schedule(1000, &[0.5, 0.5, 0.0])?
///     .shard(1, 2)?;
/// rank1.seek(1);
/// let (mut s1, mut i1) = (Vec::new(), Vec::new());
/// rank1.fill_next(&mut s1, &mut i1)?;
/// m.fill_next(&mut sources, &mut indices)?;
/// assert_eq!((&sources[5..], &indices[5..]), (&s1[..], &i1[..]));
/// # Ok::<(), zrecord::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Mixture {
    lengths: Vec<u64>,
    modes: Vec<Mode>,
    keys: Vec<u64>,
    batch_size: u64,
    seed: u64,
    rank: u64,
    world: u64,
    /// Sorted by start; the first starts at step 0.
    segments: Vec<Segment>,
    step: u64,
    segment: usize,
    chairman: Chairman,
    /// Records each source has drawn before `step` (its stream position).
    drawn: Vec<u64>,
    /// Per fill: records each source draws in the whole batch.
    taken: Vec<u64>,
    /// Per fill: records each source draws before this rank's slice.
    skipped: Vec<u64>,
    /// Per fill: where each source's run starts in `runs` (one more entry
    /// than sources), then the next of its records to place.
    starts: Vec<usize>,
    /// Per fill: this rank's records of each source, source after source,
    /// in stream order.
    runs: Vec<u64>,
    /// Per cyclic source: the epoch whose permutation is cached.
    perms: Vec<Option<(u64, Permutation)>>,
}

impl Mixture {
    /// A mixture of sources of `lengths` records with `weights`, global
    /// batches of `batch_size`, every source cyclic, at step 0.
    ///
    /// # Errors
    /// [`Error::Config`] for no sources, more than 2^32, an empty source,
    /// a weight count other than the source count, bad weights (see
    /// [`Weights::new`]), or a zero batch size.
    pub fn new(lengths: &[u64], weights: &[f64], batch_size: u64, seed: u64) -> Result<Mixture> {
        if lengths.is_empty() || u32::try_from(lengths.len() - 1).is_err() {
            return Err(Error::Config(format!("a mixture needs 1 to 2^32 sources (got {})", lengths.len())));
        }
        if let Some(i) = lengths.iter().position(|&n| n == 0) {
            return Err(Error::Config(format!("mixture source {i} holds no records")));
        }
        if batch_size == 0 {
            return Err(Error::Config("mixture batch_size must be at least 1 (got 0)".into()));
        }
        let first = segment(0, weights, lengths.len())?;
        let n = lengths.len();
        let keys = (0..n as u64).map(|i| mix(seed, i, SOURCE_KEY)).collect();
        let mut m = Mixture {
            lengths: lengths.to_vec(),
            modes: vec![Mode::Cyclic; n],
            keys,
            batch_size,
            seed,
            rank: 0,
            world: 1,
            chairman: Chairman::new(&first.weights),
            segments: vec![first],
            step: 0,
            segment: 0,
            drawn: vec![0; n],
            taken: vec![0; n],
            skipped: vec![0; n],
            starts: vec![0; n + 1],
            runs: Vec::new(),
            perms: vec![None; n],
        };
        m.seek(0);
        Ok(m)
    }

    /// Draw source `i` in `modes[i]` (the default is [`Mode::Cyclic`]).
    ///
    /// # Errors
    /// [`Error::Config`] if `modes` has another length than the sources.
    pub fn modes(mut self, modes: &[Mode]) -> Result<Mixture> {
        if modes.len() != self.lengths.len() {
            return Err(Error::Config(format!(
                "{} mixture modes given for {} sources",
                modes.len(),
                self.lengths.len()
            )));
        }
        self.modes = modes.to_vec();
        self.seek(self.step);
        Ok(self)
    }

    /// From `step` on, mix by `weights` (at step 0 they replace the first
    /// weights). The composition bound then holds over the records drawn
    /// from `step` on.
    ///
    /// # Errors
    /// [`Error::Config`] for bad weights, or a step given twice.
    pub fn schedule(mut self, step: u64, weights: &[f64]) -> Result<Mixture> {
        let seg = segment(step, weights, self.lengths.len())?;
        match self.segments.binary_search_by_key(&step, |s| s.start) {
            Ok(0) => self.segments[0] = seg,
            Ok(_) => return Err(Error::Config(format!("mixture schedule gives step {step} twice"))),
            Err(at) => self.segments.insert(at, seg),
        }
        self.seek(self.step);
        Ok(self)
    }

    /// Take rank `rank`'s slice of every global batch among `world`
    /// consumers (as [`Sampler::shard`](super::sampler::Sampler::shard)).
    ///
    /// # Errors
    /// [`Error::WorldSize`] if `world` does not divide the batch size;
    /// [`Error::Config`] for `world` 0 or `rank >= world`.
    pub fn shard(mut self, rank: u64, world: u64) -> Result<Mixture> {
        if world == 0 || rank >= world {
            return Err(Error::Config(format!("shard rank {rank} out of range for world size {world}")));
        }
        if !self.batch_size.is_multiple_of(world) {
            return Err(Error::WorldSize { batch_size: self.batch_size, world });
        }
        (self.rank, self.world) = (rank, world);
        Ok(self)
    }

    /// Fills `sources` and `indices` with this rank's slice of the next
    /// global batch: record `k` is record `indices[k]` of source `sources[k]`.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the slice cannot be allocated (the mixture
    /// stays at its step).
    pub fn fill_next(&mut self, sources: &mut Vec<u32>, indices: &mut Vec<u64>) -> Result<()> {
        let per = self.batch_len();
        let lo = per * self.rank;
        let hi = lo + per;
        sources.clear();
        indices.clear();
        let n = usize::try_from(per).unwrap_or(usize::MAX);
        let room = try_room(sources, n).and_then(|()| try_room(indices, n));
        room.map_err(|e| e.error("mixture", format!("a batch of {per} records")))?;
        if self.segments.get(self.segment + 1).is_some_and(|s| s.start == self.step) {
            self.segment += 1;
            self.chairman = Chairman::new(&self.segments[self.segment].weights);
        }
        self.runs.clear(); // (room for `n` more beyond the last batch's would double it)
        try_room(&mut self.runs, n).map_err(|e| e.error("mixture", format!("a batch of {per} records")))?;
        // The sources in batch order; then each source's records as one run
        // of its stream (so a cyclic source's permutation runs many inputs
        // side by side: the draw runs under the loader's lock); then each
        // record's index taken from its source's run, in batch order.
        self.taken.fill(0);
        self.skipped.fill(0);
        self.starts.fill(0);
        for j in 0..self.batch_size {
            let s = self.chairman.next();
            if j < lo {
                self.skipped[s] += 1;
            } else if j < hi {
                sources.push(s as u32);
                self.starts[s + 1] += 1;
            }
            self.taken[s] += 1;
        }
        for s in 1..self.starts.len() {
            self.starts[s] += self.starts[s - 1];
        }
        self.runs.resize(sources.len(), 0);
        for s in 0..self.lengths.len() {
            let (from, to) = (self.starts[s], self.starts[s + 1]);
            if from < to {
                let position = self.drawn[s].wrapping_add(self.skipped[s]);
                self.draw_run(s, position, from, to);
            }
        }
        for &s in sources.iter() {
            let next = &mut self.starts[s as usize];
            indices.push(self.runs[*next]);
            *next += 1;
        }
        for (d, t) in self.drawn.iter_mut().zip(&self.taken) {
            *d = d.wrapping_add(*t);
        }
        self.step = self.step.wrapping_add(1);
        Ok(())
    }

    /// The next batch slice as `(sources, indices)` in new vectors.
    ///
    /// # Errors
    /// As [`Mixture::fill_next`].
    pub fn next_batch(&mut self) -> Result<(Vec<u32>, Vec<u64>)> {
        let (mut s, mut i) = (Vec::new(), Vec::new());
        self.fill_next(&mut s, &mut i)?;
        Ok((s, i))
    }

    /// Positions the mixture so the next batch is the one at `step`.
    ///
    /// Each source's stream position after `step` steps follows from the
    /// assignment's period: this replays at most one period (`total` records
    /// of [`Weights`]) per schedule segment up to `step`, never the steps.
    pub fn seek(&mut self, step: u64) {
        self.segment = self.segments.partition_point(|s| s.start <= step) - 1;
        self.drawn.fill(0);
        let b = u128::from(self.batch_size);
        for k in 0..=self.segment {
            let seg = &self.segments[k];
            let end = if k == self.segment { step } else { self.segments[k + 1].start };
            let mut chairman = Chairman::new(&seg.weights);
            let counts = chairman.advance(u128::from(end - seg.start) * b);
            for (d, c) in self.drawn.iter_mut().zip(counts) {
                *d = d.wrapping_add(c as u64); // stream positions wrap at 2^64, as in `fill_next`
            }
            if k == self.segment {
                self.chairman = chairman;
            }
        }
        self.step = step;
    }

    /// The step of the batch the next fill returns.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Records each source has drawn before [`Mixture::step`], over all ranks
    /// (its stream position; `drawn[i] / length[i]` are its epochs).
    pub fn drawn(&self) -> &[u64] {
        &self.drawn
    }

    /// Records per batch slice (`batch_size / world`).
    pub fn batch_len(&self) -> u64 {
        self.batch_size / self.world
    }

    /// The global batch size.
    pub fn batch_size(&self) -> u64 {
        self.batch_size
    }

    /// The sources' lengths.
    pub fn lengths(&self) -> &[u64] {
        &self.lengths
    }

    /// Each source's mode.
    pub fn source_modes(&self) -> &[Mode] {
        &self.modes
    }

    /// `(step, weights as given, weights as parts)` for every schedule
    /// segment, the first at step 0.
    pub fn segments(&self) -> impl ExactSizeIterator<Item = (u64, &[f64], &Weights)> + '_ {
        self.segments.iter().map(|s| (s.start, &s.given[..], &s.weights))
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// This consumer's rank.
    pub fn rank(&self) -> u64 {
        self.rank
    }

    /// The number of consumers sharing each global batch.
    pub fn world(&self) -> u64 {
        self.world
    }

    /// Records `position..` of source `s`'s own stream (positions wrap at
    /// 2^64, as `drawn` does) into `runs[from..to]`.
    fn draw_run(&mut self, s: usize, position: u64, from: usize, to: usize) {
        let (len, key) = (self.lengths[s], self.keys[s]);
        let out = &mut self.runs[from..to];
        match self.modes[s] {
            Mode::Sequential => {
                for (o, p) in out.iter_mut().zip(0u64..) {
                    *o = position.wrapping_add(p) % len;
                }
            }
            Mode::Iid => {
                for (o, p) in out.iter_mut().zip(0u64..) {
                    *o = uniform(key, position.wrapping_add(p), len);
                }
            }
            Mode::Cyclic => {
                let (mut epoch, mut offset) = (position / len, position % len);
                let mut rest = out;
                while !rest.is_empty() {
                    let here = usize::try_from(len - offset).map_or(rest.len(), |left| left.min(rest.len()));
                    let cached = &mut self.perms[s];
                    if !matches!(cached, Some((e, _)) if *e == epoch) {
                        *cached = Some((epoch, Permutation::new(mix(key, epoch, 0), len)));
                    }
                    let (now, later) = rest.split_at_mut(here);
                    if let Some((_, perm)) = cached {
                        perm.apply_run(offset, now);
                    }
                    (rest, offset) = (later, offset + here as u64);
                    if offset == len {
                        (epoch, offset) = (epoch.wrapping_add(1), 0);
                    }
                }
            }
        }
    }
}

/// A weight segment, checked against the number of sources.
fn segment(start: u64, weights: &[f64], sources: usize) -> Result<Segment> {
    if weights.len() != sources {
        return Err(Error::Config(format!("{} mixture weights given for {sources} sources", weights.len())));
    }
    Ok(Segment { start, given: weights.to_vec(), weights: Weights::new(weights)? })
}

/// Draw `at` of an IID stream over `[0, len)`: Lemire's multiply-shift with
/// rejection over a keyed hash of `(at, attempt)`, so any draw is computed
/// directly.
fn uniform(key: u64, at: u64, len: u64) -> u64 {
    let threshold = len.wrapping_neg() % len;
    let mut attempt = 1;
    loop {
        let m = u128::from(mix(key, at, attempt)) * u128::from(len);
        if (m as u64) >= threshold {
            return (m >> 64) as u64;
        }
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fill_reuses_its_scratch() {
        let mut m = Mixture::new(&[1000, 700], &[0.5, 0.5], 256, 3).unwrap();
        let (mut sources, mut indices) = (Vec::new(), Vec::new());
        m.fill_next(&mut sources, &mut indices).unwrap();
        let room = m.runs.capacity();
        for _ in 0..4 {
            m.fill_next(&mut sources, &mut indices).unwrap();
        }
        assert_eq!(m.runs.capacity(), room, "the runs of a batch grew batch after batch");
    }

    #[test]
    fn weights_read_as_small_fractions() {
        let parts = |w: &[f64]| {
            let w = Weights::new(w).unwrap();
            (w.parts().to_vec(), w.total())
        };
        assert_eq!(parts(&[0.7, 0.2, 0.1]), (vec![7, 2, 1], 10));
        assert_eq!(parts(&[1.0, 1.0, 1.0]), (vec![1, 1, 1], 3));
        assert_eq!(parts(&[70.0, 30.0]), (vec![7, 3], 10));
        assert_eq!(parts(&[0.0, 2.0]), (vec![0, 1], 1));
        // No small fraction: parts of 2^20 adding up exactly.
        let (p, t) = parts(&[std::f64::consts::PI, 1.0]);
        assert_eq!(p.iter().sum::<u64>(), t);
        assert!(MAX_TOTAL.is_multiple_of(t) && t >= 1 << 16, "{t}");
        for bad in [&[][..], &[-1.0, 1.0], &[0.0, 0.0], &[f64::NAN], &[f64::INFINITY, 1.0]] {
            assert!(matches!(Weights::new(bad), Err(Error::Config(_))), "{bad:?}");
        }
    }

    #[test]
    fn uniform_covers_the_range_without_bias_at_the_edges() {
        let mut seen = [0u32; 3];
        for at in 0..3000 {
            seen[uniform(9, at, 3) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (900..1100).contains(&n)), "{seen:?}");
        assert_eq!(uniform(1, 5, 1), 0);
        assert!(uniform(1, 5, u64::MAX) < u64::MAX);
    }
}
