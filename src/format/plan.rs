//! A gather, planned without I/O, in the style of parquet's push decoder:
//! the plan says which bytes it needs (location entries, frame headers,
//! record ranges merged by the caller's policy), checks what the driver
//! brings back, sizes the batch, and decodes each record into its place.
//!
//! Drivers only fetch: the native reader walks the plan over mmap or pread
//! across threads, the async reader over ranged requests. Every rule of a
//! gather lives here, once.
//!
//! A gather runs these steps:
//! 1. [`GatherPlan::dense`] / [`GatherPlan::ragged`] check the arguments;
//! 2. the driver reads each record's location ([`GatherPlan::loc_range`])
//!    and has [`GatherPlan::check_loc`] judge it;
//! 3. when [`GatherPlan::checks_first`], every location is checked, and every
//!    big frame's header ([`GatherPlan::frame_head`]) too, *before* the batch
//!    is sized: a hostile length field never sizes an allocation;
//! 4. [`GatherPlan::size_dense`] / [`GatherPlan::ragged_slots`] size the batch;
//! 5. the driver reads the records ([`GatherPlan::reads`] merges them) and
//!    [`GatherPlan::decode`] decodes record `k` into its part of the batch;
//! 6. [`GatherPlan::finish_ragged`] packs a Ragged batch.
//!
//! A checked gather ([`GatherPlan::checked`]) also compares each record's
//! stored bytes with its checksum from the `sums.zr` sidecar before decoding.

use super::coalesce::{Merge, Reads};
use super::decode::{self, MAX_ZSTD_EXPANSION, PRECHECK_BYTES, ZSTD_MAX_HEADER};
use super::store_core::StoreCore;
use super::sums;
use super::{Codec, Geometry, RecordLoc, StoreInfo, LOC_SIZE};
use crate::format::batch::{try_room, AllocFailed, DenseBatch, RaggedBatch};
use crate::{Error, Result};
use std::ops::Range;

/// The checksums a checked gather compares each record's stored bytes with
/// (from the `sums.zr` sidecar).
#[derive(Clone, Copy, Debug)]
pub enum Expected<'a> {
    /// The sidecar's record checksums, 8 little-endian bytes per record
    /// index (a local store holds them all).
    ByIndex(&'a [u8]),
    /// One checksum per record of the gather, in its order (fetched for it).
    ByRecord(&'a [u64]),
}

/// One gather of `indices` from a store, planned.
#[derive(Clone, Copy, Debug)]
pub struct GatherPlan<'a> {
    core: &'a StoreCore,
    indices: &'a [u64],
    /// Bytes of a Dense row; `None` for a Ragged gather.
    row: Option<usize>,
    /// Checksums to check stored bytes against, for a checked gather.
    expected: Option<Expected<'a>>,
    /// The codec and `tail_offset`, copied here for the per-record checks.
    codec: Codec,
    tail: u64,
}

impl<'a> GatherPlan<'a> {
    /// A Dense gather into a new or reused batch.
    ///
    /// # Errors
    /// `InvalidArgument` for a Ragged store, `IndexOutOfRange`.
    pub fn dense(core: &'a StoreCore, indices: &'a [u64]) -> Result<Self> {
        let row = core.info().dense_row()?;
        core.info().check_indices(indices)?;
        Ok(GatherPlan::new(core, indices, Some(row)))
    }

    /// A Dense gather into the caller's buffer of `out_len` bytes.
    ///
    /// # Errors
    /// As [`GatherPlan::dense`], and `InvalidArgument` for a buffer that is
    /// not exactly `indices.len()` rows.
    pub fn dense_into(core: &'a StoreCore, indices: &'a [u64], out_len: usize) -> Result<Self> {
        let row = core.info().check_dense_gather(indices, out_len)?;
        Ok(GatherPlan::new(core, indices, Some(row)))
    }

    /// A Ragged gather.
    ///
    /// # Errors
    /// `InvalidArgument` for a Dense store, `IndexOutOfRange`.
    pub fn ragged(core: &'a StoreCore, indices: &'a [u64]) -> Result<Self> {
        let info = core.info();
        if !matches!(info.geometry(), Geometry::Ragged) {
            return Err(Error::InvalidArgument {
                store: info.name.clone(),
                why: "this is a Dense store; use gather".into(),
            });
        }
        info.check_indices(indices)?;
        Ok(GatherPlan::new(core, indices, None))
    }

    fn new(core: &'a StoreCore, indices: &'a [u64], row: Option<usize>) -> Self {
        let info = core.info();
        GatherPlan { core, indices, row, expected: None, codec: info.codec(), tail: info.header.tail_offset }
    }

    /// Check every record's stored bytes against `expected` before decoding
    /// it (a checked gather); `None` leaves the gather unchecked.
    #[must_use]
    pub fn checked(self, expected: Option<Expected<'a>>) -> Self {
        GatherPlan { expected, ..self }
    }

    /// The store's description.
    pub fn info(&self) -> &'a StoreInfo {
        self.core.info()
    }
    /// The indices gathered, in output order.
    pub fn indices(&self) -> &'a [u64] {
        self.indices
    }
    /// Number of records gathered.
    pub fn len(&self) -> usize {
        self.indices.len()
    }
    /// Whether the gather is of no records.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
    /// Bytes of a Dense row (`None` for Ragged).
    pub fn row(&self) -> Option<usize> {
        self.row
    }

    /// The bytes of `meta.zr` holding record `k`'s location.
    pub fn loc_range(&self, k: usize) -> Range<u64> {
        let at = RecordLoc::position(self.indices[k]);
        at..at + LOC_SIZE
    }

    /// Whether every location (and big frames' headers) must be checked
    /// before the batch is sized: a Ragged batch is sized by its locations,
    /// and a big Dense batch is only allocated once its records are known to
    /// hold that much, so a hostile schema cannot claim gigabytes.
    pub fn checks_first(&self) -> bool {
        self.row.is_none_or(|row| self.indices.len().saturating_mul(row) > PRECHECK_BYTES)
    }

    /// Check record `k`'s location: the format's rules, that its stored bytes
    /// can decode to that many bytes at all, and a Dense row's width.
    ///
    /// # Errors
    /// `BadFormat` for a broken rule, `CorruptRecord` for an impossible size.
    #[inline(always)]
    pub fn check_loc(&self, k: usize, loc: &RecordLoc) -> Result<()> {
        // The hot path: a handful of compares on the plan's own copies, that
        // build no error and read nothing of the store's description (a
        // dataset's batch has 60 of them).
        let sized = !self.codec.is_compressed()
            || u64::from(loc.logic_length) <= u64::from(loc.phys_length) * MAX_ZSTD_EXPANSION;
        match self.row {
            Some(row) if sized && loc.is_valid_row(self.codec, self.tail, row as u64) => Ok(()),
            None if sized && loc.is_valid(self.codec, self.tail) => Ok(()),
            Some(row) => decode::check_dense_loc(self.info(), self.indices[k], loc, row as u64),
            None => decode::check_record_loc(self.info(), self.indices[k], loc),
        }
    }

    /// Check every location, in order (see [`GatherPlan::check_loc`]).
    ///
    /// # Errors
    /// The first failed check.
    pub fn check_locs(&self, locs: &[RecordLoc]) -> Result<()> {
        locs.iter().enumerate().try_for_each(|(k, loc)| self.check_loc(k, loc))
    }

    /// The bytes of `data.zr` whose zstd frame header must declare `loc`'s
    /// size before a buffer is sized by it (compressed records claiming over
    /// 1 MiB); `None` for any other record.
    pub fn frame_head(&self, loc: &RecordLoc) -> Option<Range<u64>> {
        decode::is_big_claim(self.info(), loc)
            .then(|| loc.offset..loc.offset + u64::from(loc.phys_length).min(ZSTD_MAX_HEADER as u64))
    }

    /// Check record `k`'s frame header when [`GatherPlan::frame_head`] asks
    /// for it; `stored` starts at the record (its head, or all of it).
    ///
    /// # Errors
    /// `CorruptRecord` when the frame declares another size.
    pub fn check_frame_head(&self, k: usize, loc: &RecordLoc, stored: &[u8]) -> Result<()> {
        if !decode::is_big_claim(self.info(), loc) {
            return Ok(());
        }
        let head = &stored[..stored.len().min(ZSTD_MAX_HEADER)];
        decode::check_frame_header(self.info(), self.indices[k], loc, head)
    }

    /// The reads that fetch every record at `locs`, neighbours merged by `merge`.
    pub fn reads(&self, locs: &[RecordLoc], merge: Merge) -> Reads {
        Reads::new(locs.iter().map(|l| l.offset..l.end()).collect(), merge)
    }

    /// Size a Dense batch for this gather: its buffer (reused when large
    /// enough), shape `(n, *item_shape)` and dtype.
    ///
    /// # Errors
    /// `OutOfMemory` when the batch's buffer cannot be allocated.
    ///
    /// # Panics
    /// On a Ragged plan.
    pub fn size_dense(&self, batch: &mut DenseBatch) -> Result<()> {
        let row = self.row.expect("a Dense plan");
        let info = self.info();
        let n = self.indices.len();
        let oom = |bytes| AllocFailed { bytes }.error(&info.name, format!("a Dense batch of {n} records"));
        let len = n.checked_mul(row).ok_or_else(|| oom((n as u64).saturating_mul(row as u64)))?;
        batch.data.reuse(len).map_err(|e| oom(e.bytes))?;
        batch.shape.clear();
        batch.shape.push(self.indices.len() as u64);
        batch.shape.extend_from_slice(info.item_shape().unwrap_or(&[]));
        batch.dtype.clone_from(info.dtype());
        Ok(())
    }

    /// Where each record of a Ragged gather decodes before [`GatherPlan::finish_ragged`]
    /// finishes the batch (`slots`, cleared first), and the buffer size they need.
    /// Call only with checked locations.
    ///
    /// # Errors
    /// `InvalidArgument` for a batch larger than the address space,
    /// `OutOfMemory` when the slots cannot be allocated.
    pub fn ragged_slots(&self, locs: &[RecordLoc], slots: &mut Vec<Range<usize>>) -> Result<usize> {
        slots.clear();
        try_room(slots, locs.len()).map_err(|e| self.out_of_memory(e, "the slots of a Ragged batch"))?;
        decode::ragged_slots_into(locs, slots)
            .map_err(|why| Error::InvalidArgument { store: self.info().name.clone(), why })
    }

    /// The `OutOfMemory` error for `what` of this gather (`n` records).
    pub fn out_of_memory(&self, e: AllocFailed, what: &str) -> Error {
        e.error(&self.info().name, format!("{what} of {} records", self.indices.len()))
    }

    /// Decode record `k`'s stored bytes (`src`, its `phys_length` bytes) into
    /// `dst` (its `logic_length` bytes).
    ///
    /// # Errors
    /// `CorruptRecord` when the frame fails or decodes to another size.
    #[inline(always)]
    pub fn decode(&self, k: usize, src: &[u8], dst: &mut [u8]) -> Result<()> {
        self.decode_ahead(k, src, dst, &[])
    }

    /// [`GatherPlan::decode`], told the stored bytes the caller decodes
    /// next: a checked raw record asks for them while it is hashed (see
    /// [`crate::codec::checksum::copy_and_hash64`]); the caller asks for them
    /// itself in every other case ([`GatherPlan::fetches_ahead`]).
    ///
    /// # Errors
    /// As [`GatherPlan::decode`].
    #[inline(always)]
    pub fn decode_ahead(&self, k: usize, src: &[u8], dst: &mut [u8], ahead: &[u8]) -> Result<()> {
        if let Some(want) = self.expected_sum(k) {
            if self.codec == Codec::Raw && src.len() == dst.len() {
                return self.copy_checked(k, src, dst, ahead, want);
            }
            sums::check_record(&self.info().name, self.indices[k], src, want)?;
        }
        decode::decode_record(self.core, self.codec, self.indices[k], src, dst)
    }

    /// Copy the last `dst.len()` bytes of raw record `k`'s stored bytes
    /// (a Ragged record's payload) into `dst`; a checked gather checks all
    /// of them as it copies.
    ///
    /// # Errors
    /// `ChecksumMismatch` naming the record and `data.zr`.
    #[inline]
    pub fn copy_raw(&self, k: usize, stored: &[u8], dst: &mut [u8]) -> Result<()> {
        match self.expected_sum(k) {
            Some(want) => self.copy_checked(k, stored, dst, &[], want),
            None => {
                dst.copy_from_slice(&stored[stored.len() - dst.len()..]);
                Ok(())
            }
        }
    }

    /// One pass: hash while copying (see [`crate::codec::checksum::copy_and_hash64`]).
    #[inline(always)]
    fn copy_checked(&self, k: usize, stored: &[u8], dst: &mut [u8], ahead: &[u8], want: u64) -> Result<()> {
        let got = crate::codec::checksum::copy_and_hash64(stored, dst, ahead);
        sums::check_record_sum(&self.info().name, self.indices[k], stored.len(), got, want)
    }

    /// Whether [`GatherPlan::decode_ahead`] asks for the next record's
    /// bytes itself (checked raw records).
    pub fn fetches_ahead(&self) -> bool {
        self.expected.is_some() && self.codec == Codec::Raw
    }

    /// The sidecar entry holding record `index`'s checksum, when the plan
    /// checks against a table in memory (for a reader to prefetch it).
    #[inline]
    pub fn expected_entry(&self, index: u64) -> Option<&'a [u8]> {
        match self.expected {
            Some(Expected::ByIndex(table)) => {
                let at = usize::try_from(index * sums::SUM_LEN).ok()?;
                table.get(at..at + 8)
            }
            _ => None,
        }
    }

    /// Record `k`'s checksum in a checked gather.
    #[inline]
    fn expected_sum(&self, k: usize) -> Option<u64> {
        match self.expected? {
            Expected::ByRecord(sums) => Some(sums[k]),
            Expected::ByIndex(table) => {
                let at = (self.indices[k] * sums::SUM_LEN) as usize;
                Some(u64::from_le_bytes(table[at..at + 8].try_into().expect("8 bytes")))
            }
        }
    }

    /// Fill a Ragged batch from checked `locs`: lay out each record's slot,
    /// size the buffer, have `decode(buffer, slots)` decode record `k` into
    /// `buffer[slots[k]]` (the driver's part: in parallel, or as reads
    /// complete), then pack. The step order of every Ragged gather, once.
    ///
    /// # Errors
    /// `decode`'s, and those of [`GatherPlan::ragged_slots`] and
    /// [`GatherPlan::finish_ragged`].
    pub fn fill_ragged(
        &self,
        locs: &[RecordLoc],
        slots: &mut Vec<Range<usize>>,
        batch: &mut RaggedBatch,
        decode: impl FnOnce(&mut [u8], &[Range<usize>]) -> Result<()>,
    ) -> Result<()> {
        let total = self.ragged_slots(locs, slots)?;
        batch.data.reuse(total).map_err(|e| self.out_of_memory(e, "a Ragged batch"))?;
        decode(batch.data.as_mut_slice(), slots)?;
        self.finish_ragged(slots, batch)
    }

    /// [`GatherPlan::fill_ragged`] from every record's stored bytes, already
    /// read (`stored[k]` for record `k`), on the calling thread.
    ///
    /// # Errors
    /// As [`GatherPlan::fill_ragged`].
    pub fn fill_ragged_from(
        &self,
        locs: &[RecordLoc],
        stored: &[Vec<u8>],
        batch: &mut RaggedBatch,
    ) -> Result<()> {
        let mut slots = Vec::new();
        self.fill_ragged(locs, &mut slots, batch, |buf, slots| {
            self.decode_all(stored, decode::slot_parts(buf, slots))
        })
    }

    /// Size a Dense batch and decode every row from its stored bytes, already
    /// read (`stored[k]` for row `k`).
    ///
    /// # Errors
    /// As [`GatherPlan::decode`].
    pub fn fill_dense_from(&self, stored: &[Vec<u8>], batch: &mut DenseBatch) -> Result<()> {
        self.size_dense(batch)?;
        let row = self.row.expect("a Dense plan").max(1);
        self.decode_all(stored, batch.data.as_mut_slice().chunks_mut(row))
    }

    /// Decode record `k` of `stored` into the `k`-th of `parts`.
    fn decode_all<'b>(
        &self,
        stored: &[Vec<u8>],
        parts: impl IntoIterator<Item = &'b mut [u8]>,
    ) -> Result<()> {
        stored.iter().zip(parts).enumerate().try_for_each(|(k, (src, dst))| self.decode(k, src, dst))
    }

    /// Check record `index` at `loc` (as stored, not yet validated) on its
    /// stored bytes as a gather would read it: the location's rules, a Dense
    /// record's width, a big frame's declared size, the decode, and a Ragged
    /// record's shape prefix. For checkers such as `zrecord verify`, which
    /// report each record's problem instead of stopping at the first.
    ///
    /// # Errors
    /// `IndexOutOfRange`, `BadFormat` or `CorruptRecord` naming the record.
    pub fn check_record(core: &StoreCore, index: u64, loc: &RecordLoc, stored: &[u8]) -> Result<()> {
        let indices = [index];
        let plan = match core.info().geometry() {
            Geometry::Dense { .. } => GatherPlan::dense(core, &indices)?,
            Geometry::Ragged => GatherPlan::ragged(core, &indices)?,
        };
        plan.check_loc(0, loc)?;
        if stored.len() != loc.phys_length as usize {
            return Err(Error::CorruptRecord {
                store: plan.info().name.clone(),
                index,
                why: format!("{} stored bytes for phys_length {}", stored.len(), loc.phys_length),
            });
        }
        plan.check_frame_head(0, loc, stored)?;
        let mut record = vec![0u8; loc.logic_length as usize];
        plan.decode(0, stored, &mut record)?;
        if plan.row.is_none() {
            let mut batch = RaggedBatch::default();
            plan.begin_ragged(&mut batch);
            plan.place_ragged(0, &record, &mut 0, &mut batch)?;
        }
        Ok(())
    }

    /// Finish a Ragged batch whose records were decoded into their `slots`:
    /// parse each shape prefix and, unless the batch allows gaps, move each
    /// payload to its packed, aligned place.
    ///
    /// # Errors
    /// `CorruptRecord` for a prefix that does not fit its record.
    pub fn finish_ragged(&self, slots: &[Range<usize>], batch: &mut RaggedBatch) -> Result<()> {
        decode::compact_ragged(self.info(), self.indices, slots, batch)
    }

    /// Start packing a Ragged batch record by record with
    /// [`GatherPlan::place_ragged`] (for records already in memory, raw).
    pub fn begin_ragged(&self, batch: &mut RaggedBatch) {
        decode::begin_ragged(batch);
    }

    /// Place record `k` (its decoded bytes, shape prefix first) in a packed
    /// batch at or after `*at`: returns the prefix length and the payload's
    /// span; the caller copies the payload there.
    ///
    /// # Errors
    /// `CorruptRecord` for a prefix that does not fit its record.
    #[inline]
    pub fn place_ragged(
        &self,
        k: usize,
        record: &[u8],
        at: &mut usize,
        batch: &mut RaggedBatch,
    ) -> Result<(usize, Range<usize>)> {
        decode::place_ragged(self.info(), self.indices[k], record, at, batch)
    }
}
