//! Dictionary training for the `zstd_dict` codec, as loaderx's `train_dict`:
//! a strided sample of the records within a tier's byte budget, trained with
//! zstd's `ZDICT_trainFromBuffer`.

use crate::format::{Geometry, MAX_RECORD_BYTES};
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
        match s {
            "fast" => Ok(Tier::Fast),
            "balanced" => Ok(Tier::Balanced),
            "max" => Ok(Tier::Max),
            _ => Err(format!("unknown dictionary tier {s:?} (expected fast, balanced or max)")),
        }
    }
}

/// Least bytes in the trainer's 75% training split that we hand to zstd.
const MIN_TRAINING_BYTES: usize = 256;

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

/// Train a dictionary from samples (each one record's stored logical bytes).
///
/// # Errors
/// `DictTraining` when zstd cannot train (too few or too uniform samples).
pub fn train_from_samples<'a>(samples: impl IntoIterator<Item = &'a [u8]>, tier: Tier) -> Result<Vec<u8>> {
    let mut flat = Vec::new();
    let mut sizes = Vec::new();
    for s in samples {
        if flat.len() >= tier.budget() {
            break;
        }
        flat.extend_from_slice(s);
        sizes.push(s.len());
    }
    if sizes.is_empty() {
        return Err(Error::DictTraining { why: "no records to train on".into() });
    }
    // zstd's trainer trains on the first 75% of the samples and divides by
    // zero (SIGFPE, zstd 1.5.7 COVER_computeEpochs) when those hold fewer
    // than 8 bytes; refuse such tiny inputs before they reach it.
    let training_bytes: usize = sizes[..sizes.len() * 3 / 4].iter().sum();
    if training_bytes < MIN_TRAINING_BYTES {
        return Err(Error::DictTraining {
            why: format!(
                "{} samples of {} bytes are too little to train a dictionary (zstd needs at least \
                 {MIN_TRAINING_BYTES} bytes in its training split); use the zstd codec instead",
                sizes.len(),
                flat.len()
            ),
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
/// `InvalidArgument` for a `row_bytes` that does not divide the array; `DictTraining`.
pub fn train_dense(rows: &[u8], row_bytes: usize, tier: Tier) -> Result<Vec<u8>> {
    if row_bytes == 0 || !rows.len().is_multiple_of(row_bytes) {
        return Err(Error::InvalidArgument {
            store: String::new(),
            why: format!("{} bytes are not whole rows of {row_bytes}", rows.len()),
        });
    }
    let n = (rows.len() / row_bytes) as u64;
    let picks = sample_indices(n, row_bytes as u64, tier.budget() as u64);
    train_from_samples(
        picks.iter().map(|&i| &rows[i as usize * row_bytes..(i as usize + 1) * row_bytes]),
        tier,
    )
}

/// Records gathered at once while sampling: few requests on a remote store,
/// bounded memory on any.
const TRAIN_GATHER: usize = 1024;

/// Train from the records of any store, local or remote, sampled as loaderx
/// samples them: their logical bytes (for Ragged stores the shape prefix
/// too, since that is what each frame compresses).
///
/// # Errors
/// Read errors of the store; `DictTraining`.
pub fn train_from_store(store: &(impl Records + ?Sized), tier: Tier) -> Result<Vec<u8>> {
    let info = store.info();
    let n = info.len();
    let mean = match info.geometry() {
        Geometry::Dense { .. } => info.row_bytes().unwrap_or(1),
        Geometry::Ragged => {
            let probe = sample_indices(n, 1, 4096);
            let total: u64 = store.raw_locs(&probe)?.iter().map(|l| u64::from(l.logic_length)).sum();
            total / probe.len().max(1) as u64
        }
    }
    .min(MAX_RECORD_BYTES);
    let picks = sample_indices(n, mean, tier.budget() as u64);
    let mut samples = Vec::with_capacity(picks.len());
    let mut taken = 0usize;
    for chunk in picks.chunks(TRAIN_GATHER) {
        if taken >= tier.budget() {
            break;
        }
        let before = samples.len();
        match store.gather_any(chunk)? {
            Batch::Dense(b) => {
                let row = b.bytes().len() / chunk.len();
                samples.extend(b.bytes().chunks_exact(row.max(1)).map(<[u8]>::to_vec));
            }
            Batch::Ragged(b) => {
                for (shape, bytes) in b.iter() {
                    let mut logical = Vec::with_capacity(bytes.len() + 1 + 8 * shape.len());
                    crate::format::ragged::write_prefix(shape, &mut logical);
                    logical.extend_from_slice(bytes);
                    samples.push(logical);
                }
            }
        }
        taken += samples[before..].iter().map(Vec::len).sum::<usize>();
    }
    train_from_samples(samples.iter().map(Vec::as_slice), tier)
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
    fn tiny_samples_are_refused_not_crashing() {
        // Ten 1-byte samples made zstd's trainer divide by zero (SIGFPE).
        let samples: Vec<[u8; 1]> = (0..10u8).map(|i| [i]).collect();
        let err = train_from_samples(samples.iter().map(|s| &s[..]), Tier::Fast).unwrap_err();
        assert!(matches!(err, Error::DictTraining { .. }), "{err}");
        for n in 0..40usize {
            let samples: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; i % 9]).collect();
            let _ = train_from_samples(samples.iter().map(Vec::as_slice), Tier::Fast);
        }
    }
}
