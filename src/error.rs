//! The one error type of the crate.
//!
//! Every variant carries what a user needs to act: which store, which record,
//! which check failed, and what was expected.

use std::path::PathBuf;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong opening, reading, writing or sampling a store.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // field names (store, index, why) speak for themselves
#[non_exhaustive]
pub enum Error {
    /// The store (or one of its files) does not exist.
    #[error("{store}: not found ({what})")]
    NotFound { store: String, what: String },

    /// `create` found a directory that already holds a store or other files
    /// (`what` says which, and what to do).
    #[error("{store}: already exists: {what}")]
    AlreadyExists { store: String, what: String },

    /// Someone holds the store's lock (a writer while reading, or readers
    /// while creating): `why` says whether it is this process or another.
    #[error("{store}: store busy: {why}")]
    Busy { store: String, why: &'static str },

    /// The store's files break a rule of the format.
    #[error("{store}: bad format: {check}")]
    BadFormat { store: String, check: String },

    /// The header says no record was ever published while data follows it.
    #[error(
        "{store}: unpublished build (the writer did not close): the header holds 0 records \
         but {detail}; rebuild the store"
    )]
    Unpublished { store: String, detail: String },

    /// One record's bytes do not decode to what its location says.
    #[error("{store}: corrupt record {index}: {why}")]
    CorruptRecord { store: String, index: u64, why: String },

    /// A record larger than the format allows (2^31 bytes decoded, 2^32-1 stored).
    #[error("{store}: record {index} too large: {bytes} bytes (at most {max})")]
    RecordTooLarge { store: String, index: u64, bytes: u64, max: u64 },

    /// An append would push offsets or counts past what the format can address.
    #[error("{store}: store full: {why}")]
    StoreFull { store: String, why: String },

    /// Bytes that do not match the checksum sidecar: they changed after the
    /// store was sealed.
    #[error("{store}: {file}: checksum mismatch: {what} (the bytes changed after the store was sealed; restore the store from a good copy)")]
    ChecksumMismatch { store: String, file: String, what: String },

    /// A buffer sized by the request (a batch, its per-record slots, a
    /// loader's prefetched steps) could not be allocated.
    #[error("{store}: out of memory: {what} needs {bytes} bytes, which cannot be allocated; ask for fewer records at a time")]
    OutOfMemory { store: String, what: String, bytes: u64 },

    /// An index at or past the end of the store.
    #[error("{store}: index {index} out of range (store has {len} records)")]
    IndexOutOfRange { store: String, index: u64, len: u64 },

    /// The caller passed something that cannot work (wrong buffer size, bad shape, bad dtype).
    #[error("{store}: invalid argument: {why}")]
    InvalidArgument { store: String, why: String },

    /// A `.npy` file that cannot be read or cannot become a store.
    #[error("{file}: {why}")]
    Npy { file: String, why: String },

    /// zstd's dictionary trainer failed (too few or too uniform samples).
    #[error("dictionary training failed: {why}")]
    DictTraining { why: String },

    /// Samples too few or too small for zstd's dictionary trainer, refused
    /// before it runs: it would return an error (as loaderx 2.0.1 reports it)
    /// or, for [`TooLittle::TrainingSplit`], crash.
    #[error(
        "dictionary training refused: {samples} samples of {bytes} bytes ({training_bytes} in zstd's \
         training split): {rule}; use the zstd codec instead"
    )]
    TooLittleToTrain { samples: usize, bytes: usize, training_bytes: usize, rule: TooLittle },

    /// An operating-system error, with the file it happened on.
    #[error("{path}: {op}: {source}")]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },

    /// A remote store answered something we cannot use (HTTP status, headers, length).
    #[error("{url}: {why}")]
    Remote { url: String, why: String },

    /// A remote store's file changed since it was opened.
    #[error("{url}: store changed on the server since it was opened ({why}); reopen it")]
    StoreChanged { url: String, why: String },

    /// A dataset's manifest breaks a rule, or the dataset cannot do what
    /// was asked.
    #[error("{dataset}: {check}")]
    BadDataset { dataset: String, check: String },

    /// One shard of a dataset is not what its manifest says.
    #[error("{dataset}: shard {shard}: {check}")]
    BadShard { dataset: String, shard: String, check: String },

    /// Another commit created the version this one was making.
    #[error(
        "{dataset}: commit conflict: version {version} was committed by another writer meanwhile ({why})"
    )]
    CommitConflict { dataset: String, version: u64, why: String },

    /// The caller cancelled the operation.
    #[error("cancelled")]
    Cancelled,

    /// A sampler or loader parameter is out of range.
    #[error("invalid sampler/loader setting: {0}")]
    Config(String),

    /// A world size that does not divide the global batch: ranks would get
    /// different numbers of records, and data-parallel training would hang.
    #[error(
        "cannot split the global batch of {batch_size} records into {world} equal shards: \
         use a world size that divides {batch_size} (the global batch stays the same across restarts)"
    )]
    WorldSize { batch_size: u64, world: u64 },

    /// A saved loader state that does not fit this loader (another source,
    /// seed, batch size or mixture): resuming would give other batches.
    #[error("loader state does not match this loader: {what}: the state has {saved}, this loader has {now}")]
    StateMismatch { what: String, saved: String, now: String },

    /// Code run on a worker thread (a loader transform) panicked.
    #[error("worker thread panicked: {message}")]
    Panicked { message: String },

    /// A loader worker failed; carries the stream and step.
    #[error("loader stream {stream:?} step {step}: {source}")]
    Loader {
        stream: String,
        step: u64,
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// An I/O error on `path` during `op` (used by the native drivers).
    #[allow(dead_code)] // unused when only the pure core is built (wasm32)
    pub(crate) fn io(path: impl Into<PathBuf>, op: &'static str, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), op, source }
    }
}

/// Which input rule of zstd's dictionary trainer (`ZDICT_trainFromBuffer`,
/// zstd 1.5.x) a sample set breaks. The trainer trains on its first
/// `floor(0.75 n)` samples (the training split) and tests on the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TooLittle {
    /// No samples at all (an empty store or array).
    NoSamples,
    /// Fewer than 7 samples: the training split needs 5 and the test split 1.
    FewSamples,
    /// Fewer than 8 bytes in all samples together.
    FewBytes,
    /// Fewer than 8 bytes in the training split, where zstd itself does not
    /// check: its trainer divides by zero (SIGFPE, 7 bytes) or reads out of
    /// bounds (SIGSEGV, fewer).
    TrainingSplit,
}

impl std::fmt::Display for TooLittle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TooLittle::NoSamples => "no records to train on",
            TooLittle::FewSamples => "zstd needs at least 7 samples (5 to train on, 1 to test)",
            TooLittle::FewBytes => "zstd needs at least 8 bytes of samples",
            TooLittle::TrainingSplit => {
                "zstd needs at least 8 bytes in its training split (the first 75% of the samples)"
            }
        })
    }
}
