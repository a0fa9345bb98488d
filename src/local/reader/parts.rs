//! A gather's records read from one store or from many: a store's own
//! gather is one part, a dataset's one part per shard it touches (a batch
//! of 256 over 64 shards: about 4 records each). Each store is asked once
//! per batch how it reads (its plan, its residency, its memory view), and
//! then one pass over the batch, in the batch's order, locates, checks and
//! decodes every record from whichever store holds it, asking for record
//! `j + 8`'s bytes and record `j + 16`'s location before it decodes record
//! `j`, across stores. A gather per shard instead paid a plan, a residency
//! decision and a memory view per shard *and* a prefetch window too short
//! to run ahead of its reads.

use super::{
    for_each_span, stored_head, table_entry, with_scratch_locs, InMemory, Store, MIN_PART_BYTES,
    PREFETCH_ROWS,
};
use crate::format::batch::try_room;
use crate::format::{Codec, GatherPlan, RecordLoc, StoreFile};
use crate::local::{cold, sys, uring, work};
use crate::records::Records;
use crate::Result;
use std::ops::Range;

/// One store's records of a gather: the store, how this gather reads it
/// ([`Store::access`]) and the plan of its records (its own indices, in the
/// gather's order; each store's plan decodes with its own dictionary and
/// checks against its own checksums).
#[derive(Clone, Copy)]
pub(crate) struct Part<'a> {
    store: &'a Store,
    mem: InMemory<'a>,
    plan: GatherPlan<'a>,
}

impl<'a> Part<'a> {
    /// `store`'s part of a gather, planned as `plan`, read as `mem` says.
    pub(super) fn new(store: &'a Store, mem: InMemory<'a>, plan: GatherPlan<'a>) -> Self {
        Part { store, mem, plan }
    }

    /// Record `k`'s location as stored (not validated yet).
    #[inline(always)]
    fn loc(&self, k: usize) -> Result<RecordLoc> {
        let i = self.plan.indices()[k];
        match self.mem.table {
            Some(table) => Ok(RecordLoc::from_table(table, i as usize)),
            None => self.store.loc_at(i),
        }
    }

    /// Whether record `k`'s stored bytes are its decoded bytes, read
    /// straight into its row or slot (raw, unchecked or checked afterwards
    /// by no one: a checked raw record is hashed as it is copied).
    fn stored_as_decoded(&self) -> bool {
        self.store.codec() == Codec::Raw && !self.plan.fetches_ahead()
    }

    /// Decode record `k`, at checked `loc`, into `dst` (`ahead`: see
    /// [`GatherPlan::decode_ahead`]).
    #[inline(always)]
    fn read(&self, k: usize, loc: &RecordLoc, dst: &mut [u8], ahead: &[u8]) -> Result<()> {
        self.store.read_record(&self.mem, &self.plan, k, loc, dst, ahead)
    }
}

/// A gather's records, each in one of its parts: record `j` is record
/// `at[j].1` of part `at[j].0` or, with no `at`, record `j` of the only part.
#[derive(Clone, Copy)]
pub(crate) struct Parts<'p, 'a> {
    parts: &'p [Part<'a>],
    at: Option<&'p [(usize, usize)]>,
}

impl<'p, 'a> Parts<'p, 'a> {
    /// A store's own gather: one part, its records in the plan's order.
    pub(crate) fn one(part: &'p Part<'a>) -> Self {
        Parts { parts: std::slice::from_ref(part), at: None }
    }

    /// A gather over many stores: record `j` is record `at[j].1` of `parts[at[j].0]`.
    pub(crate) fn many(parts: &'p [Part<'a>], at: &'p [(usize, usize)]) -> Self {
        Parts { parts, at: Some(at) }
    }

    /// Records gathered.
    pub(crate) fn len(&self) -> usize {
        self.at.map_or_else(|| self.parts[0].plan.len(), <[_]>::len)
    }

    /// Record `j`'s part, and its place in that part's plan.
    #[inline(always)]
    fn get(&self, j: usize) -> (&'p Part<'a>, usize) {
        match self.at {
            Some(at) => (&self.parts[at[j].0], at[j].1),
            None => (&self.parts[0], j),
        }
    }

    /// Record `j`'s location entry, to prefetch (empty when `j` is past the
    /// end or its part's table is not in memory).
    #[inline(always)]
    fn table_entry(&self, j: usize) -> &'a [u8] {
        if j >= self.len() {
            return &[];
        }
        let (part, k) = self.get(j);
        part.mem.table.map_or(&[], |table| table_entry(table, part.plan.indices()[k]))
    }

    /// Whether a gather of `bytes` decoded bytes fans out across threads
    /// (as its first store decides: every part has the same codec and kind).
    fn parallel(&self, bytes: usize) -> bool {
        self.parts.first().is_some_and(|p| p.store.parallel(bytes, self.len()))
    }

    /// Random records miss the cache one after the other. Before decoding
    /// record `j`, ask for what later records need: record `j +
    /// PREFETCH_ROWS`'s stored bytes and checksum entry, record `j + 2 *
    /// PREFETCH_ROWS`'s location (so that one is in cache when its bytes
    /// are asked for), whichever parts they are in. The misses then overlap
    /// the decoding of the records before them instead of stalling it. The
    /// first record of a run (`start`) also asks for the first records'.
    /// Only for parts in memory.
    ///
    /// Returns the stored bytes of record `j + PREFETCH_ROWS` when record
    /// `j`'s plan asks for them itself while it decodes (checked raw rows:
    /// spread over the hash, the requests do not stall it), else nothing.
    #[inline(always)]
    fn prefetch_ahead(&self, j: usize, start: bool) -> &'a [u8] {
        if start {
            (j..j + 2 * PREFETCH_ROWS).for_each(|n| sys::prefetch(self.table_entry(n)));
            (j..j + PREFETCH_ROWS).for_each(|n| sys::prefetch(self.stored_ahead(n)));
        }
        sys::prefetch(self.table_entry(j + 2 * PREFETCH_ROWS));
        let head = self.stored_ahead(j + PREFETCH_ROWS);
        if self.get(j).0.plan.fetches_ahead() {
            return head;
        }
        sys::prefetch(head);
        &[]
    }

    /// Record `j`'s first stored bytes, and its checksum entry asked for
    /// (empty when `j` is past the end or its part is not in memory).
    #[inline(always)]
    fn stored_ahead(&self, j: usize) -> &'a [u8] {
        if j >= self.len() {
            return &[];
        }
        let (part, k) = self.get(j);
        let (Some(table), Some(data)) = (part.mem.table, part.mem.data) else {
            return &[];
        };
        let i = part.plan.indices()[k];
        sys::prefetch(part.plan.expected_entry(i).unwrap_or_default());
        stored_head(data, &RecordLoc::from_table(table, i as usize))
    }

    /// Check every record's location (and big frames' headers) before a
    /// batch is sized, into `locs` (emptied first) in the gather's order.
    ///
    /// # Errors
    /// The first failed check, named by its store.
    pub(crate) fn check_locs(&self, locs: &mut Vec<RecordLoc>) -> Result<()> {
        locs.clear();
        try_room(locs, self.len()).map_err(|e| self.parts[0].plan.out_of_memory(e, "the locations"))?;
        for j in 0..self.len() {
            sys::prefetch(self.table_entry(j + 2 * PREFETCH_ROWS));
            let (part, k) = self.get(j);
            let loc = part.loc(k)?;
            part.plan.check_loc(k, &loc)?;
            // Its bytes are read after every location is checked: ask now.
            if let Some(data) = part.mem.data {
                sys::prefetch(stored_head(data, &loc));
                sys::prefetch(part.plan.expected_entry(part.plan.indices()[k]).unwrap_or_default());
            }
            if let Some(head) = part.plan.frame_head(&loc) {
                part.store
                    .with_stored(part.mem.src, head, |bytes| part.plan.check_frame_head(k, &loc, bytes))?;
            }
            locs.push(loc);
        }
        Ok(())
    }

    /// Fill `rows[j]` with Dense record `j` (each `row` bytes; rows of cold
    /// parts are left alone, read on their own path), checking each
    /// location as it goes; across threads when the batch is worth it.
    ///
    /// # Errors
    /// As [`crate::Records::gather_into`].
    pub(crate) fn fill_rows(&self, row: usize, rows: &mut [&mut [u8]]) -> Result<()> {
        // Rows `first..` of the gather, into `outs`.
        let task = |(first, outs): (usize, &mut [&mut [u8]])| -> Result<()> {
            for (n, dst) in outs.iter_mut().enumerate() {
                let j = first + n;
                let ahead = self.prefetch_ahead(j, n == 0);
                let (part, k) = self.get(j);
                let loc = part.loc(k)?;
                part.plan.check_loc(k, &loc)?;
                part.read(k, &loc, dst, ahead)?;
            }
            Ok(())
        };
        let n = self.len();
        if !self.parallel(n * row) {
            return task((0, rows));
        }
        // Parts shared with the calling thread, as a Ragged batch's. Against
        // rayon's `par_chunks_mut` on its global pool (the calling thread
        // asleep), interleaved from Python: raw token blocks x1024 1.18x, raw
        // images x16 1.15x, token blocks x16 1.05x, images x256 0.98x.
        let mut rest = rows;
        let parts = work::guided(n, n * row, |_| row, usize::MAX, MIN_PART_BYTES).map(move |r| {
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(r.len());
            rest = tail;
            (r.start, part)
        });
        work::share(parts, task)
    }

    /// Decode every record, at its checked `locs[j]`, into `buf[slots[j]]`,
    /// across threads when the batch is worth it.
    ///
    /// # Errors
    /// As [`crate::Records::gather_ragged_into`].
    pub(crate) fn decode_slots(
        &self,
        locs: &[RecordLoc],
        buf: &mut [u8],
        slots: &[Range<usize>],
    ) -> Result<()> {
        let decode = |j: usize, dst: &mut [u8]| {
            let (part, k) = self.get(j);
            part.read(k, &locs[j], dst, &[])
        };
        for_each_span(buf, slots, self.parallel(buf.len()), &decode)
    }

    /// Fill `rows[j]` with Dense record `j` of a cold batch: every location
    /// checked, then every record read at once ([`Parts::read_cold`]).
    ///
    /// # Errors
    /// As [`crate::Records::gather_into`].
    pub(crate) fn fill_rows_cold(&self, rows: &mut [&mut [u8]]) -> Result<()> {
        with_scratch_locs(|locs, _| {
            self.check_locs(locs)?;
            self.read_cold(locs, rows)
        })
    }

    /// Read every record of a cold batch, at its checked `locs[j]`, into
    /// `dsts[j]` (taken, left empty), all at once whichever stores they are
    /// in ([`cold::each`]): a dataset's batch keeps as many reads in flight
    /// as one store's instead of its shards reading one after another,
    /// about 4 records each. Raw records are read straight into their rows
    /// or slots, others into one buffer and decoded by the thread that read
    /// them as soon as it has.
    ///
    /// # Errors
    /// As [`crate::Records::gather_into`].
    pub(crate) fn read_cold(&self, locs: &[RecordLoc], dsts: &mut [&mut [u8]]) -> Result<()> {
        let stored = |j: usize| match self.get(j).0.stored_as_decoded() {
            true => 0,
            false => locs[j].phys_length as usize,
        };
        let (n, total) = (self.len(), (0..self.len()).map(stored).sum());
        let mut bytes = Vec::new();
        try_room(&mut bytes, total)
            .map_err(|e| self.parts[0].plan.out_of_memory(e, "a cold batch's stored bytes"))?;
        bytes.resize(total, 0);
        let mut rest = bytes.as_mut_slice();
        let mut reads = Vec::with_capacity(n);
        for (j, dst) in dsts.iter_mut().enumerate() {
            let dst = std::mem::take(dst);
            reads.push(match stored(j) {
                0 => ColdRead { j, buf: dst, dst: None },
                len => {
                    let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
                    rest = tail;
                    ColdRead { j, buf: head, dst: Some(dst) }
                }
            });
        }
        let decode = |read: &mut ColdRead<'_>| {
            let (part, k) = self.get(read.j);
            read.dst.as_deref_mut().map_or(Ok(()), |dst| part.plan.decode(k, read.buf, dst))
        };
        // Through io_uring where every part reads a plain file (buffered,
        // not `O_DIRECT`) and the kernel allows it; else on the read pool.
        if self.parts.iter().all(|p| p.mem.src.file().is_some()) {
            let target = |read: &mut ColdRead<'_>| {
                let file = self.get(read.j).0.mem.src.file().expect("every part has its file");
                let (buf, len) = (read.buf.as_mut_ptr(), read.buf.len());
                uring::Target { file, offset: locs[read.j].offset, buf, len }
            };
            // (Read `k` of the batch is record `k`: `reads` is in its order.)
            let io_err = |k: usize, e| self.get(k).0.store.io_err(StoreFile::Data, e);
            if let Some(result) = cold::each_uring(&mut reads, target, |_, read| decode(read), io_err) {
                return result;
            }
        }
        cold::each(&mut reads, |_, read| {
            let (part, _) = self.get(read.j);
            let io = |e| part.store.io_err(StoreFile::Data, e);
            part.mem.src.read_exact_at(locs[read.j].offset, read.buf).map_err(io)?;
            decode(read)
        })
    }
}

/// A cold record's read ([`Parts::read_cold`]): gather record `j`'s stored
/// bytes into `buf`, then decoded into `dst`, unless `buf` is its row or
/// slot itself.
struct ColdRead<'b> {
    j: usize,
    buf: &'b mut [u8],
    dst: Option<&'b mut [u8]>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::memory::MemorySource;
    use crate::{CreateOptions, Writer};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Counts reads in flight (shared with tests/cold.rs).
    mod in_flight {
        use crate::source::{memory::MemorySource, ByteSource};
        include!("../../../tests/common/in_flight.rs");
    }
    use in_flight::InFlight;

    /// A store of `records` at `dir`: Ragged (each record its own length)
    /// or Dense (every record as long as the first).
    fn write(dir: &std::path::Path, ragged: bool, codec: Codec, records: &[Vec<u8>]) {
        let options = CreateOptions::codec(codec);
        if ragged {
            let mut w = Writer::create_ragged(dir, "|u1", options).unwrap();
            let shapes: Vec<[u64; 1]> = records.iter().map(|r| [r.len() as u64]).collect();
            w.append_ragged(&shapes.iter().zip(records).map(|(s, r)| (&s[..], &r[..])).collect::<Vec<_>>())
                .unwrap();
            w.close().unwrap();
        } else {
            let mut w = Writer::create_dense(dir, "|u1", &[records[0].len() as u64], options).unwrap();
            w.append(&records.concat()).unwrap();
            w.close().unwrap();
        }
    }

    /// Each store's part of a cold gather of `local`.
    fn cold_parts<'a>(stores: &'a [Store], local: &'a [u64], ragged: bool) -> Vec<Part<'a>> {
        let part = |s: &'a Store| if ragged { s.ragged_part(local, true) } else { s.dense_part(local, true) };
        stores.iter().map(|s| part(s).unwrap()).collect()
    }

    /// Every record of `records` read cold, each into a buffer of its own.
    fn read_all_cold(records: &Parts<'_, '_>) -> Vec<Vec<u8>> {
        let mut locs = Vec::new();
        records.check_locs(&mut locs).unwrap();
        let mut bufs: Vec<Vec<u8>> = locs.iter().map(|l| vec![0; l.logic_length as usize]).collect();
        records.read_cold(&locs, &mut bufs.iter_mut().map(|b| &mut b[..]).collect::<Vec<_>>()).unwrap();
        bufs
    }

    /// A cold batch from stores on disk reads through io_uring (where the
    /// kernel has it) and gives what a warm gather gives: Dense and
    /// Ragged, raw and zstd, one store and two.
    #[test]
    fn cold_records_on_disk_read_through_io_uring_as_warm_ones() {
        let tmp = tempfile::tempdir().unwrap();
        for (ragged, codec) in
            [(false, Codec::Raw), (false, Codec::Zstd), (true, Codec::Raw), (true, Codec::Zstd)]
        {
            let stores: Vec<Store> = (0..2)
                .map(|s| {
                    let dir = tmp.path().join(format!("u-{ragged}-{}-{s}", codec.name()));
                    let rec = |i: usize| -> Vec<u8> {
                        let skip = if ragged { i } else { 0 };
                        (skip..3000).map(|b| (s * 5 + i * 3 + b / 7) as u8).collect()
                    };
                    write(&dir, ragged, codec, &(0..300).map(rec).collect::<Vec<_>>());
                    Store::open(&dir).unwrap()
                })
                .collect();
            let local: Vec<u64> = (0..300).map(|i| i * 7 % 300).collect();
            let parts = cold_parts(&stores, &local, ragged);
            let at: Vec<(usize, usize)> = (0..600).map(|j| (j % 2, j / 2)).collect();
            for records in [Parts::one(&parts[0]), Parts::many(&parts, &at)] {
                let before = uring::reads();
                let bufs = read_all_cold(&records);
                let through = uring::reads() - before;
                assert!(
                    through >= records.len() as u64 || std::env::var_os("ZRECORD_IO_URING").is_some(),
                    "{ragged} {codec:?}: {through} of {} reads through io_uring",
                    records.len()
                );
                for (j, got) in bufs.iter().enumerate() {
                    let (part, k) = records.get(j);
                    let want = part.store.gather_any(&[local[k]]).unwrap();
                    let payload = &got[got.len() - want.record(0).1.len()..];
                    assert_eq!(payload, want.record(0).1, "{ragged} {codec:?}: record {j}");
                }
            }
        }
    }

    /// A batch over 16 cold stores, 4 records each (a dataset's batch over
    /// its shards), has the reads of all of them in flight together, not 4
    /// at a time, and every record lands in its own row or slot.
    #[test]
    fn cold_records_of_many_stores_are_read_together() {
        let tmp = tempfile::tempdir().unwrap();
        for (ragged, codec) in
            [(false, Codec::Raw), (false, Codec::Zstd), (true, Codec::Raw), (true, Codec::Zstd)]
        {
            let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let stores: Vec<Store> = (0..16)
                .map(|s| {
                    let dir = tmp.path().join(format!("{ragged}-{}-{s}", codec.name()));
                    let rec = |i: usize| -> Vec<u8> {
                        let len = if ragged { 1000 + i } else { 1000 };
                        (0..len).map(|b| (s * 31 + i * 7 + b) as u8).collect()
                    };
                    write(&dir, ragged, codec, &(0..8).map(rec).collect::<Vec<_>>());
                    let file = |name| MemorySource::new(std::fs::read(dir.join(name)).unwrap());
                    let data = InFlight { bytes: file("data.zr"), now: now.clone(), most: most.clone() };
                    Store::from_sources(format!("s{s}"), Box::new(file("meta.zr")), Box::new(data), None)
                        .unwrap()
                })
                .collect();
            let local: Vec<u64> = vec![5, 0, 7, 2];
            let parts = cold_parts(&stores, &local, ragged);
            // Record j of the batch: record j / 16 of the plan of store j % 16.
            let at: Vec<(usize, usize)> = (0..64).map(|j| (j % 16, j / 16)).collect();
            let records = Parts::many(&parts, &at);
            let bufs = read_all_cold(&records);
            for (j, got) in bufs.iter().enumerate() {
                let (s, i) = (j % 16, local[j / 16] as usize);
                let want = stores[s].gather_any(&[i as u64]).unwrap();
                let payload = &got[got.len() - want.record(0).1.len()..];
                assert_eq!(payload, want.record(0).1, "{ragged} {codec:?}: record {j}");
            }
            let most = most.load(Ordering::SeqCst);
            assert!(
                most >= 16,
                "{ragged} {codec:?}: at most {most} reads in flight for 64 records of 16 stores"
            );
        }
    }
}
