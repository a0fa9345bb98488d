//! Batch index streams over `[0, length)`, identical to loaderx 2.0.1's `zsampler`.
//!
//! A training run is reproducible and resumable only if the order in which
//! records are visited is a pure function of `(seed, step)`. This module is
//! that function: it owns no store, does no I/O and keeps no hidden state
//! beyond a cursor, so a checkpoint only needs the step number, and several
//! processes can consume one global stream (see [`Sampler::shard`]).
//!
//! Every stream matches loaderx 2.0.1 bit for bit, including its behaviour at
//! the edges of `u64` (see [`Mode::Sequential`]); stores written and consumed by
//! both libraries therefore see the same batches.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::format::batch::try_room;

/// Golden-ratio multiplier applied to the mixed value (splitmix64's increment).
const MIX_VALUE: u64 = 0x9E37_79B9_7F4A_7C15;
/// Multiplier separating the Feistel rounds' keys.
const MIX_ROUND: u64 = 0xD1B5_4A32_D192_ED03;

/// How a [`Sampler`] walks `[0, length)`.
///
/// The numeric codes ([`Mode::code`]) are loaderx's `Sampler.Mode` constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// A window sliding over the records in order, wrapping at the end.
    ///
    /// Like loaderx, positions are computed as `(cursor + i) mod length` with
    /// `cursor + i` wrapping at 2^64, so a window that crosses 2^64 (only possible
    /// when `length` is within a batch of 2^64) repeats a few small indices.
    Sequential,
    /// Independent uniform draws, with replacement (SFC64 + Lemire's method).
    Iid,
    /// A fresh seeded permutation every cycle, without replacement.
    ///
    /// Every batch is full: the `length mod batch_size` positions left at the end
    /// of a cycle are dropped, and since each cycle permutes anew, *which*
    /// records are dropped changes from cycle to cycle. A store smaller than one
    /// batch yields one short batch (all records) per cycle.
    Cyclic,
}

impl Mode {
    /// loaderx's numeric code: 0 sequential, 1 iid, 2 cyclic.
    pub fn code(self) -> u8 {
        match self {
            Mode::Sequential => 0,
            Mode::Iid => 1,
            Mode::Cyclic => 2,
        }
    }

    /// The name accepted by [`FromStr`].
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::Iid => "iid",
            Mode::Cyclic => "cyclic",
        }
    }
}

impl TryFrom<u8> for Mode {
    type Error = Error;

    /// Reads loaderx's numeric code, so configurations written for loaderx carry over.
    fn try_from(code: u8) -> Result<Self> {
        match code {
            0 => Ok(Mode::Sequential),
            1 => Ok(Mode::Iid),
            2 => Ok(Mode::Cyclic),
            _ => Err(Error::Config(format!(
                "sampler mode code {code} is unknown (0 sequential, 1 iid, 2 cyclic)"
            ))),
        }
    }
}

impl FromStr for Mode {
    type Err = Error;

    /// Accepts `sequential`, `iid` or `cyclic`, in any ASCII case.
    fn from_str(s: &str) -> Result<Self> {
        [Mode::Sequential, Mode::Iid, Mode::Cyclic]
            .into_iter()
            .find(|m| s.eq_ignore_ascii_case(m.as_str()))
            .ok_or_else(|| {
                Error::Config(format!("sampler mode {s:?} is unknown (expected sequential, iid or cyclic)"))
            })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The SFC64 generator (Chris Doty-Humphrey's Small Fast Chaotic PRNG), seeded as loaderx does.
///
/// It is exposed because IID streams are defined by its exact outputs; anything
/// that must agree with loaderx's draws has to use this generator, not `rand`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sfc64 {
    a: u64,
    b: u64,
    c: u64,
    counter: u64,
}

impl Sfc64 {
    /// `a = b = c = seed`, counter 1, then 12 outputs discarded to spread the seed.
    pub fn new(seed: u64) -> Self {
        let mut rng = Sfc64 { a: seed, b: seed, c: seed, counter: 1 };
        for _ in 0..12 {
            rng.next_u64();
        }
        rng
    }

    /// The next raw 64-bit output.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let tmp = self.a.wrapping_add(self.b).wrapping_add(self.counter);
        self.counter = self.counter.wrapping_add(1);
        self.a = self.b ^ (self.b >> 11);
        self.b = self.c.wrapping_add(self.c << 3);
        self.c = self.c.rotate_left(24).wrapping_add(tmp);
        tmp
    }

    /// A uniform value in `[0, n)` by Lemire's multiply-shift with rejection.
    ///
    /// Rejection consumes extra outputs, so the number of outputs per draw is
    /// not fixed; that is why a stream can only be replayed, not skipped.
    /// `n` must be at least 1 (for `n = 0` this returns 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            // 2^64 mod n: the count of low products that would bias the result.
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }
}

/// splitmix64's finaliser over `seed ^ v·φ ^ r·c`: a cheap keyed hash of `(v, r)`.
#[inline]
pub(crate) fn mix(seed: u64, v: u64, r: u64) -> u64 {
    finalize(seed ^ v.wrapping_mul(MIX_VALUE) ^ r.wrapping_mul(MIX_ROUND))
}

#[inline]
fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A keyed bijection of `[0, n)`, computed pointwise in O(1) memory.
///
/// Cyclic mode cannot afford to store a shuffled array of 2^40 indices, so it
/// evaluates a 4-round balanced Feistel network over the smallest even number
/// of bits covering `n` and cycle-walks values that land at or past `n`
/// (fewer than 4 rounds of walking on average, since the domain is below `4n`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permutation {
    n: u64,
    half: u32,
    mask: u64,
    /// `key ^ round·c` for each round, so a round costs one hash finaliser.
    round_keys: [u64; 4],
}

impl Permutation {
    /// The permutation loaderx uses for `key` over `[0, n)`.
    pub fn new(key: u64, n: u64) -> Self {
        // Half of the smallest even bit count with 2^(2·half) >= n; at most 32,
        // so neither `1 << half` nor `l << half` can overflow.
        let half = if n <= 1 { 0 } else { (u64::BITS - (n - 1).leading_zeros()).div_ceil(2) };
        let mut round_keys = [0; 4];
        for (round, k) in (0u64..).zip(round_keys.iter_mut()) {
            *k = key ^ round.wrapping_mul(MIX_ROUND);
        }
        Permutation { n, half, mask: (1u64 << half) - 1, round_keys }
    }

    /// The size of the permuted domain.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The image of `x`.
    ///
    /// # Panics
    ///
    /// If `x >= n` (the domain is `[0, n)`).
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        assert!(x < self.n, "permutation input {x} outside [0, {})", self.n);
        if self.n <= 1 {
            return 0;
        }
        self.walk(x)
    }

    /// The images of `start..start + out.len()` into `out`, equal to
    /// [`Permutation::apply`] on each, [`LANES`] inputs in flight at a time:
    /// their Feistel chains are independent, so the CPU overlaps the
    /// multiplies that `apply` waits on one after another. A lane whose value
    /// lands in range takes the next input, by selects rather than branches
    /// (whether a value must walk again is a coin toss no predictor learns).
    /// The draw of a cyclic batch runs under the loader's lock.
    ///
    /// # Panics
    ///
    /// If the run reaches past `n`.
    pub fn apply_run(&self, start: u64, out: &mut [u64]) {
        let len = out.len() as u64;
        assert!(
            start.checked_add(len).is_some_and(|e| e <= self.n),
            "permutation run {start}+{len} outside [0, {})",
            self.n
        );
        if self.n <= 1 {
            out.fill(0);
            return;
        }
        let lanes = (LANES as u64).min(len);
        // Each lane: the value to pass through the network next, and the
        // output slot it belongs to; `next` is the next input not in a lane.
        let mut value: [u64; LANES] = std::array::from_fn(|i| start + i as u64);
        let mut slot: [u64; LANES] = std::array::from_fn(|i| i as u64);
        let mut next = lanes;
        while next + LANES as u64 <= len {
            for (v, at) in value.iter_mut().zip(&mut slot) {
                let y = self.network(*v);
                let done = y < self.n;
                // Overwritten by the final value if this one is out of range.
                out[*at as usize] = y;
                *v = if done { start + next } else { y };
                *at = if done { next } else { *at };
                next += u64::from(done);
            }
        }
        for (&v, &at) in value.iter().zip(&slot).take(lanes as usize) {
            out[at as usize] = self.walk(v);
        }
        for at in next..len {
            out[at as usize] = self.walk(start + at);
        }
    }

    /// The network over `x` until it lands in range (cycle walking).
    #[inline]
    fn walk(&self, mut x: u64) -> u64 {
        loop {
            x = self.network(x);
            if x < self.n {
                return x;
            }
        }
    }

    /// One pass of the 4-round network over the `2·half`-bit domain.
    #[inline(always)]
    fn network(&self, x: u64) -> u64 {
        let mut l = x >> self.half;
        let mut r = x & self.mask;
        for &k in &self.round_keys {
            let f = finalize(k ^ r.wrapping_mul(MIX_VALUE)) & self.mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half) | r
    }
}

/// Inputs [`Permutation::apply_run`] evaluates side by side.
pub const LANES: usize = 4;

/// What a mode needs to remember between batches.
#[derive(Clone, Debug)]
enum State {
    Sequential {
        cursor: u64,
    },
    Iid {
        rng: Sfc64,
    },
    Cyclic {
        cycle: u64,
        /// Position within the cycle's permutation.
        cursor: u64,
        /// Positions used per cycle: whole batches, or `length` when smaller than one.
        usable: u64,
        perm: Permutation,
    },
}

/// An endless, seekable stream of index batches over `[0, length)`.
///
/// The batch at step `k` depends only on `(length, batch_size, mode, seed, k)`,
/// so resuming a run is `seek(k)`, and the stream equals loaderx 2.0.1's.
///
/// ```
/// use zrecord::training::sampler::{Mode, Sampler};
///
/// let mut sampler = Sampler::new(10, 4, Mode::Cyclic, 123)?;
/// let first = sampler.next_batch();
/// assert_eq!(first, [1, 4, 3, 2]);
///
/// // Resume elsewhere: seeking to step 0 replays the same batch.
/// let mut resumed = Sampler::new(10, 4, "cyclic".parse()?, 123)?;
/// resumed.seek(0);
/// assert_eq!(resumed.next_batch(), first);
///
/// // Two processes splitting each global batch of 4 into halves.
/// let mut rank1 = Sampler::new(10, 4, Mode::Cyclic, 123)?.shard(1, 2)?;
/// assert_eq!(rank1.next_batch(), [3, 2]);
/// # Ok::<(), zrecord::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Sampler {
    length: u64,
    batch_size: u64,
    mode: Mode,
    seed: u64,
    rank: u64,
    world: u64,
    step: u64,
    state: State,
}

impl Sampler {
    /// A sampler at step 0.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] if `length` or `batch_size` is 0, or if `batch_size`
    /// cannot be addressed on this platform (only possible where `usize` is
    /// narrower than 64 bits).
    pub fn new(length: u64, batch_size: u64, mode: Mode, seed: u64) -> Result<Self> {
        if length == 0 {
            return Err(Error::Config(
                "sampler length must be at least 1 (the store holds no records)".into(),
            ));
        }
        if batch_size == 0 {
            return Err(Error::Config("sampler batch_size must be at least 1 (got 0)".into()));
        }
        if usize::try_from(batch_size).is_err() {
            return Err(Error::Config(format!(
                "sampler batch_size {batch_size} exceeds this platform's address space"
            )));
        }
        let state = match mode {
            Mode::Sequential => State::Sequential { cursor: 0 },
            Mode::Iid => State::Iid { rng: Sfc64::new(seed) },
            Mode::Cyclic => State::Cyclic {
                cycle: 0,
                cursor: 0,
                usable: if length >= batch_size { length - length % batch_size } else { length },
                perm: Permutation::new(mix(seed, 0, 0), length),
            },
        };
        Ok(Sampler { length, batch_size, mode, seed, rank: 0, world: 1, step: 0, state })
    }

    /// Restricts this sampler to consumer `rank` of `world`: it yields the
    /// `rank`-th of `world` equal, contiguous slices of every global batch.
    ///
    /// All consumers built with the same parameters see one deterministic
    /// global stream, so together they cover each global batch exactly once
    /// and they resume together with the same `seek(step)`. Sharding applies to
    /// the global batch; calling it again replaces the previous split. The
    /// step is kept.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] if `world` is 0, `rank >= world`, `batch_size` is not a
    /// multiple of `world`, or (cyclic mode with a store smaller than one batch,
    /// whose global batches hold `length` indices) `length` is not a multiple
    /// of `world`.
    pub fn shard(mut self, rank: u64, world: u64) -> Result<Self> {
        if world == 0 {
            return Err(Error::Config("shard world size must be at least 1 (got 0)".into()));
        }
        if rank >= world {
            return Err(Error::Config(format!(
                "shard rank {rank} out of range for world size {world} (ranks are 0..{world})"
            )));
        }
        let global = self.global_len();
        if !global.is_multiple_of(world) {
            let what = if global == self.batch_size {
                format!("batch_size {global}")
            } else {
                format!("the short cyclic batch of length {global} (store smaller than one batch)")
            };
            return Err(Error::Config(format!(
                "cannot split {what} into {world} equal shards; use a multiple of {world}"
            )));
        }
        self.rank = rank;
        self.world = world;
        Ok(self)
    }

    /// Fills `out` with the next batch (this shard's slice of it), replacing
    /// its contents.
    ///
    /// Reusing one `Vec` across calls avoids any allocation after the first.
    /// Its growth aborts when memory runs out: for a batch size a caller
    /// chose, use [`Sampler::try_fill_next`].
    pub fn fill_next(&mut self, out: &mut Vec<u64>) {
        let global = self.global_len();
        let per = global / self.world;
        let lo = per * self.rank;
        let hi = lo + per;
        let (length, batch_size) = (self.length, self.batch_size);
        out.clear();
        // Cannot truncate: `per <= batch_size`, which fits in usize (checked in `new`).
        out.reserve(per as usize);
        match &mut self.state {
            State::Sequential { cursor } => {
                push_window(out, *cursor, lo, hi, length);
                *cursor = cursor.wrapping_add(batch_size) % length;
            }
            State::Iid { rng } => {
                // Other shards' draws still advance the generator: every rank
                // must stay on the one global stream.
                for _ in 0..lo {
                    rng.below(length);
                }
                out.extend((lo..hi).map(|_| rng.below(length)));
                for _ in hi..batch_size {
                    rng.below(length);
                }
            }
            State::Cyclic { cycle, cursor, usable, perm } => {
                let from = out.len();
                out.resize(from + (hi - lo) as usize, 0);
                perm.apply_run(*cursor + lo, &mut out[from..]);
                *cursor += global;
                if *cursor >= *usable {
                    *cursor = 0;
                    *cycle = cycle.wrapping_add(1);
                    *perm = Permutation::new(mix(self.seed, *cycle, 0), length);
                }
            }
        }
        self.step = self.step.wrapping_add(1);
    }

    /// [`Sampler::fill_next`], its room in `out` allocated first and
    /// fallibly: for batch sizes a caller chose, which must fail as an
    /// error, never abort the process.
    ///
    /// # Errors
    /// `OutOfMemory` when `batch_len()` indices cannot be allocated (the
    /// stream does not advance).
    pub fn try_fill_next(&mut self, out: &mut Vec<u64>) -> Result<()> {
        out.clear();
        let per = usize::try_from(self.batch_len()).unwrap_or(usize::MAX);
        try_room(out, per).map_err(|e| e.error("sampler", format!("a batch of {per} indices")))?;
        self.fill_next(out);
        Ok(())
    }

    /// The next batch (this shard's slice of it) in a new `Vec`.
    pub fn next_batch(&mut self) -> Vec<u64> {
        let mut out = Vec::new();
        self.fill_next(&mut out);
        out
    }

    /// Positions the stream so the next batch is the one at `step` (0-based).
    ///
    /// Sequential and cyclic seeks are O(1). IID seeks replay the generator
    /// from the seed through `step × batch_size` draws (SFC64 has no jump
    /// ahead, and rejection makes the output count per draw variable), so
    /// they cost about a nanosecond per skipped index. As in loaderx, the draw
    /// count `step × batch_size` wraps at 2^64.
    pub fn seek(&mut self, step: u64) {
        let (length, batch_size) = (self.length, self.batch_size);
        match &mut self.state {
            State::Sequential { cursor } => *cursor = step.wrapping_mul(batch_size) % length,
            State::Iid { rng } => {
                *rng = Sfc64::new(self.seed);
                for _ in 0..step.wrapping_mul(batch_size) {
                    rng.below(length);
                }
            }
            State::Cyclic { cycle, cursor, usable, perm } => {
                // 1 for a store smaller than one batch.
                let steps_per_cycle = usable.div_ceil(batch_size);
                *cycle = step / steps_per_cycle;
                *cursor = (step % steps_per_cycle) * batch_size;
                *perm = Permutation::new(mix(self.seed, *cycle, 0), length);
            }
        }
        self.step = step;
    }

    /// The step of the batch the next call returns.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// How many indices each batch from this sampler holds.
    ///
    /// `batch_size / world`, except in cyclic mode over a store smaller than
    /// one batch, where it is `length / world`.
    pub fn batch_len(&self) -> u64 {
        self.global_len() / self.world
    }

    /// The number of records sampled from.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The global batch size (before sharding).
    pub fn batch_size(&self) -> u64 {
        self.batch_size
    }

    /// The sampling mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The seed the stream derives from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// This consumer's rank (0 when unsharded).
    pub fn rank(&self) -> u64 {
        self.rank
    }

    /// The number of consumers sharing the stream (1 when unsharded).
    pub fn world(&self) -> u64 {
        self.world
    }

    /// Indices in one global batch.
    fn global_len(&self) -> u64 {
        match self.state {
            State::Cyclic { usable, .. } => usable.min(self.batch_size),
            _ => self.batch_size,
        }
    }
}

/// Appends `(cursor + i) mod length` for `i` in `lo..hi`, with loaderx's
/// wrapping of `cursor + i` at 2^64.
fn push_window(out: &mut Vec<u64>, cursor: u64, lo: u64, hi: u64, length: u64) {
    if cursor.checked_add(hi).is_some() {
        // No wrap at 2^64: step through the window without a division per index.
        let mut v = (cursor + lo) % length;
        for _ in lo..hi {
            out.push(v);
            v += 1;
            if v == length {
                v = 0;
            }
        }
    } else {
        out.extend((lo..hi).map(|i| cursor.wrapping_add(i) % length));
    }
}

impl Iterator for Sampler {
    type Item = Vec<u64>;

    /// Always `Some`: the stream never ends.
    fn next(&mut self) -> Option<Vec<u64>> {
        Some(self.next_batch())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

impl std::iter::FusedIterator for Sampler {}
