//! Dictionary training for the `zstd_dict` codec, as loaderx's `train_dict`:
//! a strided sample of the records within a tier's byte budget, trained with
//! zstd's `ZDICT_trainFromBuffer`.

use crate::error::TooLittle;
use crate::format::Geometry;
use crate::{Batch, Error, Records, Result};

/// Dictionary size and sample budget (loaderx's tiers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tier {
    /// 32 KiB dictionary, 4 MiB of samples.
    Fast,
    /// 128 KiB dictionary, 16 MiB of samples (the default).
    #[default]
    Balanced,
    /// 1 MiB dictionary, 64 MiB of samples.
    Max,
}

impl Tier {
    /// Every tier, smallest first.
    pub const ALL: [Tier; 3] = [Tier::Fast, Tier::Balanced, Tier::Max];

    /// The tier's name: `fast`, `balanced` or `max` (what [`FromStr`](std::str::FromStr) reads).
    pub fn name(self) -> &'static str {
        match self {
            Tier::Fast => "fast",
            Tier::Balanced => "balanced",
            Tier::Max => "max",
        }
    }
    /// Largest dictionary this tier trains.
    pub fn dict_size(self) -> usize {
        match self {
            Tier::Fast => 32 << 10,
            Tier::Balanced => 128 << 10,
            Tier::Max => 1 << 20,
        }
    }
    /// Bytes of samples this tier trains on.
    pub fn budget(self) -> usize {
        match self {
            Tier::Fast => 4 << 20,
            Tier::Balanced => 16 << 20,
            Tier::Max => 64 << 20,
        }
    }
}

impl std::str::FromStr for Tier {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Tier::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("unknown dictionary tier {s:?} (expected fast, balanced or max)"))
    }
}

/// Least samples zstd's trainer accepts: 5 in its training split (the first
/// `floor(0.75 n)`) and 1 left to test on.
pub const MIN_SAMPLES: usize = 7;

/// Least bytes zstd's trainer accepts, in all and in its training split. It
/// checks the total itself, but not the split: with 5 or more training
/// samples of fewer than 8 bytes together, zstd 1.5.6 (loaderx 2.0.1's and
/// ours) and 1.5.7 divide by zero (SIGFPE) or read out of bounds (SIGSEGV).
pub const MIN_BYTES: usize = 8;

/// Samples zstd's trainer would refuse or crash on, as the rule they break;
/// `None` for samples it takes (it may still fail on uniform data).
///
/// `sizes` are the sample sizes in the order they are handed to zstd.
pub fn too_little(sizes: &[usize]) -> Option<TooLittle> {
    let training: usize = sizes[..sizes.len() * 3 / 4].iter().sum();
    if sizes.is_empty() {
        Some(TooLittle::NoSamples)
    } else if sizes.iter().sum::<usize>() < MIN_BYTES {
        Some(TooLittle::FewBytes)
    } else if sizes.len() < MIN_SAMPLES {
        Some(TooLittle::FewSamples)
    } else if training < MIN_BYTES {
        Some(TooLittle::TrainingSplit)
    } else {
        None
    }
}

/// The indices loaderx samples: `unique(floor(linspace(0, n - 1, k)))` with
/// `k = max(1, min(n, budget // record_bytes))`.
pub fn sample_indices(n: u64, record_bytes: u64, budget: u64) -> Vec<u64> {
    if n == 0 {
        return Vec::new();
    }
    let k = (budget / record_bytes.max(1)).clamp(1, n);
    if k == 1 {
        return vec![0];
    }
    // NumPy: arange(k) * step + start, with the last element set to stop.
    let step = (n - 1) as f64 / (k - 1) as f64;
    let mut out: Vec<u64> =
        (0..k).map(|i| if i == k - 1 { n - 1 } else { (i as f64 * step).floor() as u64 }).collect();
    out.dedup();
    out
}

/// Train a dictionary from records handed over one by one, as loaderx's
/// `train_dict` takes an iterable: the records up to and including the one
/// that reaches the tier's budget, each as its payload bytes.
///
/// # Errors
/// As [`train_on`].
pub fn train_from_samples<'a>(samples: impl IntoIterator<Item = &'a [u8]>, tier: Tier) -> Result<Vec<u8>> {
    let mut taken = 0;
    let within = samples.into_iter().take_while(|s| {
        let more = taken < tier.budget();
        taken += s.len();
        more
    });
    train_on(within, tier)
}

/// Train a dictionary on exactly these samples with zstd's
/// `ZDICT_trainFromBuffer`, as loaderx's `train_dict` does once it has
/// picked its sample: the same samples give the same dictionary, however few.
///
/// # Errors
/// `TooLittleToTrain` for samples zstd refuses (loaderx 2.0.1 reports those
/// as "too few or too small samples") or would crash on (see [`too_little`]);
/// `DictTraining` when zstd cannot train on the rest (too uniform samples).
pub fn train_on<'a>(samples: impl IntoIterator<Item = &'a [u8]>, tier: Tier) -> Result<Vec<u8>> {
    let mut flat = Vec::new();
    let mut sizes = Vec::new();
    for s in samples {
        flat.extend_from_slice(s);
        sizes.push(s.len());
    }
    if let Some(rule) = too_little(&sizes) {
        return Err(Error::TooLittleToTrain {
            samples: sizes.len(),
            bytes: flat.len(),
            training_bytes: sizes[..sizes.len() * 3 / 4].iter().sum(),
            rule,
        });
    }
    zstd::dict::from_continuous(&flat, &sizes, tier.dict_size()).map_err(|e| Error::DictTraining {
        why: format!(
            "{e} ({} samples, {} bytes); zstd needs more and more varied records — try the zstd codec instead",
            sizes.len(),
            flat.len()
        ),
    })
}

/// Train from a Dense array of `rows.len() / row_bytes` records, sampled as loaderx does.
///
/// # Errors
/// `InvalidArgument` for a `row_bytes` that does not divide the array; as [`train_on`].
pub fn train_dense(rows: &[u8], row_bytes: usize, tier: Tier) -> Result<Vec<u8>> {
    if row_bytes == 0 || !rows.len().is_multiple_of(row_bytes) {
        return Err(Error::InvalidArgument {
            store: String::new(),
            why: format!("{} bytes are not whole rows of {row_bytes}", rows.len()),
        });
    }
    let n = (rows.len() / row_bytes) as u64;
    let picks = sample_indices(n, row_bytes as u64, tier.budget() as u64);
    train_on(picks.iter().map(|&i| &rows[i as usize * row_bytes..(i as usize + 1) * row_bytes]), tier)
}

/// Records loaderx reads to size a Ragged store's records before sampling.
pub const RAGGED_PREVIEW: u64 = 32;

/// The record size loaderx samples a Ragged store by: the mean payload
/// bytes of its first [`RAGGED_PREVIEW`] records (`preview`), floored, or 1.
pub fn ragged_record_bytes(preview: impl IntoIterator<Item = u64>) -> u64 {
    let (sum, count) = preview.into_iter().fold((0u64, 0u64), |(s, c), n| (s + n, c + 1));
    (sum / count.max(1)).max(1)
}

/// Records gathered at once while sampling: few requests on a remote store,
/// bounded memory on any.
const TRAIN_GATHER: usize = 1024;

/// Train from the records of any store, local or remote, exactly as
/// loaderx's `train_dict(store)` samples a store: the records at
/// [`sample_indices`], each as its payload bytes (a Ragged record without
/// its shape prefix).
///
/// # Errors
/// Read errors of the store; as [`train_on`].
pub fn train_from_store(store: &(impl Records + ?Sized), tier: Tier) -> Result<Vec<u8>> {
    let info = store.info();
    let n = info.len();
    if n == 0 {
        return train_on([], tier);
    }
    let record_bytes = match info.geometry() {
        Geometry::Dense { .. } => info.row_bytes().unwrap_or(1),
        Geometry::Ragged => {
            let preview: Vec<u64> = (0..n.min(RAGGED_PREVIEW)).collect();
            match store.gather_any(&preview)? {
                Batch::Ragged(b) => ragged_record_bytes(b.iter().map(|(_, bytes)| bytes.len() as u64)),
                Batch::Dense(b) => b.bytes().len() as u64 / preview.len() as u64,
            }
        }
    };
    let picks = sample_indices(n, record_bytes, tier.budget() as u64);
    let mut samples = Vec::with_capacity(picks.len());
    for chunk in picks.chunks(TRAIN_GATHER) {
        match store.gather_any(chunk)? {
            Batch::Dense(b) => {
                let row = b.bytes().len() / chunk.len();
                samples.extend((0..chunk.len()).map(|k| b.bytes()[k * row..(k + 1) * row].to_vec()));
            }
            Batch::Ragged(b) => samples.extend(b.iter().map(|(_, bytes)| bytes.to_vec())),
        }
    }
    train_on(samples.iter().map(Vec::as_slice), tier)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linspace_matches_numpy() {
        // np.unique(np.floor(np.linspace(0, 9, 4)).astype(int)) == [0, 3, 6, 9]
        assert_eq!(sample_indices(10, 1, 4), vec![0, 3, 6, 9]);
        // np.floor(np.linspace(0, 99, 7)) == [0, 16, 33, 49, 66, 82, 99]
        assert_eq!(sample_indices(100, 10, 70), vec![0, 16, 33, 49, 66, 82, 99]);
        assert_eq!(sample_indices(5, 1 << 30, 10), vec![0]);
        assert_eq!(sample_indices(3, 1, 100), vec![0, 1, 2]);
        assert!(sample_indices(0, 1, 1).is_empty());
    }

    #[test]
    fn tier_names_parse_back() {
        for tier in Tier::ALL {
            assert_eq!(tier.name().parse::<Tier>(), Ok(tier));
        }
        assert!("huge".parse::<Tier>().is_err());
    }

    #[test]
    fn tiny_samples_are_refused_not_crashing() {
        // Ten 1-byte samples made zstd's trainer divide by zero (SIGFPE).
        let samples: Vec<[u8; 1]> = (0..10u8).map(|i| [i]).collect();
        let err = train_from_samples(samples.iter().map(|s| &s[..]), Tier::Fast).unwrap_err();
        assert!(
            matches!(
                err,
                Error::TooLittleToTrain {
                    samples: 10,
                    bytes: 10,
                    training_bytes: 7,
                    rule: TooLittle::TrainingSplit
                }
            ),
            "{err}"
        );
        for n in 0..40usize {
            let samples: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; i % 9]).collect();
            let _ = train_from_samples(samples.iter().map(Vec::as_slice), Tier::Fast);
        }
    }

    #[test]
    fn too_little_follows_zstd_checks_in_order() {
        assert_eq!(too_little(&[]), Some(TooLittle::NoSamples));
        assert_eq!(too_little(&[1; 7]), Some(TooLittle::FewBytes));
        assert_eq!(too_little(&[100; 6]), Some(TooLittle::FewSamples));
        // floor(0.75 * 7) = 5 training samples: 7 bytes crash zstd, 8 train.
        assert_eq!(too_little(&[1, 1, 1, 1, 3, 50, 50]), Some(TooLittle::TrainingSplit));
        assert_eq!(too_little(&[1, 1, 1, 1, 4, 0, 0]), None);
        assert_eq!(too_little(&[24; 7]), None);
    }
}
