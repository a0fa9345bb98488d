//! An open remote store's link to its files: the transport, the size and
//! version each file had at its first answer (later answers must agree, so a
//! store rewritten under a reader is an error naming the file, never mixed
//! data), and the reads spent.

use super::transport::{Lent, RangeRead, Ranged, ReadRequest};
use crate::format::{StoreFile, StoreInfo};
use crate::{Error, Result};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// What a file's first answer said.
#[derive(Clone, Debug, Default)]
struct FirstAnswer {
    size: u64,
    version: Option<String>,
}

/// Reads and bytes spent, per file.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub reads: [AtomicU64; StoreFile::COUNT],
    pub bytes: AtomicU64,
    pub page_hits: AtomicU64,
    pub page_misses: AtomicU64,
}

pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

pub(crate) fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere cannot leave these plain records half-updated.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The files of one open store, read through a transport.
#[derive(Debug)]
pub(crate) struct StoreFiles<T> {
    pub transport: T,
    /// Ask the transport to read only the version seen first.
    if_match: bool,
    first: Mutex<[Option<FirstAnswer>; StoreFile::COUNT]>,
    pub counters: Counters,
}

impl<T: RangeRead> StoreFiles<T> {
    pub fn new(transport: T, if_match: bool) -> Self {
        StoreFiles { transport, if_match, first: Mutex::default(), counters: Counters::default() }
    }

    /// `data.zr`'s size, once a read of it has answered.
    pub fn data_size(&self) -> Option<u64> {
        lock(&self.first)[StoreFile::Data as usize].as_ref().map(|f| f.size)
    }

    /// Read `range` of `file`, checked against the file's first answer.
    /// `allow_short` accepts an answer that ends early because the file
    /// does. `data_rules` applies the format's rules on `data.zr`'s size
    /// when its first answer tells it.
    ///
    /// # Errors
    /// The transport's, `StoreChanged`, and `Remote` for a short answer.
    pub async fn read(
        &self,
        file: StoreFile,
        range: Range<u64>,
        allow_short: bool,
        data_rules: Option<&StoreInfo>,
    ) -> Result<Ranged> {
        let got = self.transport.read(self.request(file, range.clone())).await?;
        let lent = Lent { bytes: &got.bytes, total: got.total, version: got.version.as_deref() };
        self.accept(file, &range, lent, allow_short, data_rules)?;
        Ok(got)
    }

    /// Lend each of `ranges` of `file` the transport has at hand to
    /// `each(k, bytes)` (see [`RangeRead::read_at_hand`]), checked as
    /// [`StoreFiles::read`] checks; the `k`s of the others.
    ///
    /// # Errors
    /// `StoreChanged`, `Remote` for a short answer, and `each`'s.
    pub fn read_at_hand(
        &self,
        file: StoreFile,
        ranges: &[Range<u64>],
        data_rules: Option<&StoreInfo>,
        mut each: impl FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<Vec<usize>> {
        self.transport.read_at_hand(file, ranges, &mut |k, lent| {
            add(&self.counters.reads[file as usize], 1);
            self.accept(file, &ranges[k], lent, false, data_rules)?;
            each(k, lent.bytes)
        })
    }

    /// A read of `range` of `file`, counted, pinned to the version seen
    /// first when the store asks for that.
    fn request(&self, file: StoreFile, range: Range<u64>) -> ReadRequest {
        let if_version = if self.if_match {
            lock(&self.first)[file as usize].as_ref().and_then(|f| f.version.clone())
        } else {
            None
        };
        add(&self.counters.reads[file as usize], 1);
        ReadRequest { file, range, if_version }
    }

    /// Check an answer against the file's first answer, then its length;
    /// count its bytes.
    fn accept(
        &self,
        file: StoreFile,
        range: &Range<u64>,
        got: Lent<'_>,
        allow_short: bool,
        data_rules: Option<&StoreInfo>,
    ) -> Result<()> {
        add(&self.counters.bytes, got.bytes.len() as u64);
        let where_ = || self.transport.locate(file);
        let changed = |why: String| Error::StoreChanged { url: where_(), why };
        {
            let mut first = lock(&self.first);
            let first = &mut first[file as usize];
            match first {
                Some(f) if f.size != got.total => {
                    return Err(changed(format!("{file} was {} bytes, now {}", f.size, got.total)))
                }
                Some(f) => {
                    if let (Some(was), Some(now)) = (&f.version, got.version) {
                        if was != now {
                            return Err(changed(format!("{file} had ETag {was}, now {now}")));
                        }
                    }
                }
                None => {
                    if let (StoreFile::Data, Some(info)) = (file, data_rules) {
                        info.check_data_size(got.total)?;
                    }
                    *first = Some(FirstAnswer { size: got.total, version: got.version.map(str::to_owned) });
                }
            }
        }
        let wanted = range.end - range.start;
        let ends_at_eof = range.start.saturating_add(got.bytes.len() as u64) == got.total;
        if got.bytes.len() as u64 != wanted && !(allow_short && ends_at_eof) {
            return Err(Error::Remote {
                url: where_(),
                why: format!(
                    "asked for bytes {}-{} but the file has only {} bytes",
                    range.start,
                    range.end - 1,
                    got.total
                ),
            });
        }
        Ok(())
    }
}
