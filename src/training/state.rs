//! A loader's checkpoint as plain data, in the shape of torchdata's
//! `StatefulDataLoader.state_dict()`: it serialises as JSON (and pickles in
//! Python), and it is checked before it is trusted.
//!
//! The step is all a run needs to resume, since every batch is a pure
//! function of `(seed, step, schedule)`. The rest is there to refuse a state
//! saved by another run: another seed, batch size, mixture, or a source that
//! changed (another length or number of stored bytes: a store rewritten, a
//! dataset at another version). A store's path is kept for the reader but
//! not compared, so a moved copy of the same store resumes.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The `format` every state carries.
pub const STATE_FORMAT: &str = "zrecord.loader/1";

/// What a loader needs to resume exactly (see the [module docs](self)).
///
/// ```
/// use zrecord::training::state::{LoaderState, StreamId, STATE_FORMAT};
/// let state = LoaderState {
///     format: STATE_FORMAT.into(),
///     step: 120,
///     seed: 7,
///     batch_size: 64,
///     modes: vec!["cyclic".into()],
///     schedule: vec![],
///     sources: vec![vec![StreamId { name: "tokens".into(), store: "/data/tokens".into(), length: 1000, stored_bytes: 4096 }]],
/// };
/// let back = LoaderState::from_json(&state.to_json())?;
/// assert_eq!(back, state);
/// // Weights read back from JSON a unit in the last place off still match.
/// let mixed = LoaderState { schedule: vec![(0, vec![1.0 / 11.0, 10.0 / 11.0])], ..state.clone() };
/// mixed.check(&LoaderState::from_json(&mixed.to_json())?)?;
/// let mut moved = state.clone();
/// moved.sources[0][0].length = 1001;
/// assert!(state.check(&moved).unwrap_err().to_string().contains("length"));
/// # Ok::<(), zrecord::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoaderState {
    /// [`STATE_FORMAT`].
    pub format: String,
    /// The step the consumer receives next (prefetched steps are not consumed).
    pub step: u64,
    /// The sampler's or mixture's seed.
    pub seed: u64,
    /// The global batch size (the world size may change between restarts).
    pub batch_size: u64,
    /// Each source's sampling mode (`sequential`, `iid`, `cyclic`).
    pub modes: Vec<String>,
    /// A mixture's weights from each step on, the first at step 0 (empty
    /// for one source).
    pub schedule: Vec<(u64, Vec<f64>)>,
    /// Per source, its streams in order.
    pub sources: Vec<Vec<StreamId>>,
}

/// One store a loader reads, as a state identifies it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamId {
    /// The stream's name in batches.
    pub name: String,
    /// The store's path or URL (not compared: stores may move).
    pub store: String,
    /// Records in the store.
    pub length: u64,
    /// Stored bytes of its records (`data.zr`'s published size).
    pub stored_bytes: u64,
}

impl LoaderState {
    /// The state as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A state from [`LoaderState::to_json`]'s text.
    ///
    /// # Errors
    /// [`Error::Config`] naming what does not parse.
    pub fn from_json(text: &str) -> Result<LoaderState> {
        serde_json::from_str(text).map_err(|e| Error::Config(format!("not a zrecord loader state: {e}")))
    }

    /// Whether `saved` was made by a loader like this one (`self`), at any step.
    ///
    /// # Errors
    /// [`Error::StateMismatch`] naming the first difference: the format, the
    /// seed, the batch size, the sources or their streams, a stream's length
    /// or stored bytes, the modes, or the schedule.
    pub fn check(&self, saved: &LoaderState) -> Result<()> {
        let differ =
            |what: String, saved: String, now: String| Err(Error::StateMismatch { what, saved, now });
        if saved.format != self.format {
            return differ("format".into(), saved.format.clone(), self.format.clone());
        }
        if saved.seed != self.seed {
            return differ("seed".into(), saved.seed.to_string(), self.seed.to_string());
        }
        if saved.batch_size != self.batch_size {
            return differ("batch_size".into(), saved.batch_size.to_string(), self.batch_size.to_string());
        }
        if saved.sources.len() != self.sources.len() {
            let n = |s: &LoaderState| format!("{} sources", s.sources.len());
            return differ("sources".into(), n(saved), n(self));
        }
        for (k, (old, new)) in saved.sources.iter().zip(&self.sources).enumerate() {
            let names = |s: &[StreamId]| format!("{:?}", s.iter().map(|x| &x.name).collect::<Vec<_>>());
            if names(old) != names(new) {
                return differ(format!("source {k} streams"), names(old), names(new));
            }
            for (o, n) in old.iter().zip(new) {
                let what = |field: &str| format!("source {k} stream {:?} ({}) {field}", n.name, n.store);
                if o.length != n.length {
                    return differ(what("length"), o.length.to_string(), n.length.to_string());
                }
                if o.stored_bytes != n.stored_bytes {
                    return differ(
                        what("stored bytes"),
                        o.stored_bytes.to_string(),
                        n.stored_bytes.to_string(),
                    );
                }
            }
        }
        if saved.modes != self.modes {
            return differ("modes".into(), format!("{:?}", saved.modes), format!("{:?}", self.modes));
        }
        if !same_schedule(&saved.schedule, &self.schedule) {
            return differ("mixture".into(), format!("{:?}", saved.schedule), format!("{:?}", self.schedule));
        }
        Ok(())
    }
}

/// Whether two schedules mix alike: the same steps, and weights that read as
/// the same parts (a weight written to JSON and read back may come back one
/// unit in the last place off, as `1/11` does; the parts are what the
/// mixture draws by).
fn same_schedule(a: &[(u64, Vec<f64>)], b: &[(u64, Vec<f64>)]) -> bool {
    use super::mixture::Weights;
    let parts = |w: &[f64]| Weights::new(w).ok().map(|w| (w.parts().to_vec(), w.total()));
    a.len() == b.len()
        && a.iter().zip(b).all(|((sa, wa), (sb, wb))| {
            sa == sb && (wa == wb || parts(wa).is_some_and(|p| Some(p) == parts(wb)))
        })
}
