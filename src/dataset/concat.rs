//! Many shards read as one column, planned without I/O: global indices map
//! to (shard, local index) by prefix sums, a gather splits into one group per
//! shard, and the groups' batches land in one batch in the caller's order.
//! Both drivers (the native one over local stores, the async one over
//! remote stores and in the browser) use these, and the bounded cache of
//! opened shards.

use super::manifest::Manifest;
use crate::format::batch::RaggedBatch;
use crate::format::{FileSizes, Header, Schema, StoreCore, StoreInfo, PAGE_SIZE};
use crate::{Error, Result};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Shards opened at once per column before the least recently used is
/// closed (a dataset of 10,000 shards never holds 10,000 open stores).
pub const OPEN_SHARDS: usize = 512;

/// A dataset's shards laid end to end.
#[derive(Debug)]
pub struct Concat {
    /// The dataset's name in errors (its path or URL).
    pub name: String,
    /// The committed version read.
    pub manifest: Arc<Manifest>,
    /// `starts[k]`: the first global index of shard `k`; `starts[n]` the length.
    starts: Vec<u64>,
    /// Shards per record: [`Concat::locate`]'s first guess.
    per_record: f64,
}

/// [`Split::slot`] of a shard with no group.
const NO_GROUP: u32 = u32::MAX;

/// A gather's indices, grouped by shard (shards in first-touched order).
/// Every group's indices lie in one array, group after group (a counting
/// sort), not in two vectors per group: a batch of 256 over 64 shards
/// touches a few contiguous KiB instead of 128 small vectors, out of cache
/// after the last batch's decoding (its split took 5-6 µs, not 8-9).
#[derive(Debug, Default)]
pub struct Split {
    /// One group per shard touched.
    pub groups: Vec<Group>,
    /// Records gathered.
    pub len: usize,
    /// The groups' indices within their shards, group after group.
    local: Vec<u64>,
    /// Where each of `local` lands in the gathered batch.
    positions: Vec<usize>,
    /// Each shard's group in this split ([`NO_GROUP`] for none): a table
    /// of the shards up to the highest one touched, kept from split to
    /// split and reset where the last one wrote. 4 bytes a shard: once per
    /// thread where the split is reused (a local column's), per split for
    /// a fresh one (40 KB over 10,000 shards, beside a remote batch's
    /// requests). A map's hashing cost a batch of 256 over 64 shards about
    /// 1% of its gather.
    slot: Vec<u32>,
    /// [`Split::places`].
    places: Vec<(usize, usize)>,
    /// Each record's index in its shard, in gather order (while grouping).
    keyed: Vec<u64>,
}

/// The records of one shard in a gather.
#[derive(Debug, Default, Clone)]
pub struct Group {
    /// The shard's position in the manifest (or a mixture's source).
    pub shard: usize,
    /// Its records' place in [`Split::local`] and [`Split::positions`].
    at: Range<usize>,
}

impl Split {
    /// Group records by shard: `keys` gives each record's (shard, index
    /// within the shard), in gather order.
    pub fn group(&mut self, keys: impl Iterator<Item = (usize, u64)>) {
        for g in &self.groups {
            self.slot[g.shard] = NO_GROUP;
        }
        self.groups.clear();
        self.places.clear();
        self.keyed.clear();
        // Each record's group and its place there (counted in `at.end`).
        for (k, local) in keys {
            if k >= self.slot.len() {
                self.slot.resize(k + 1, NO_GROUP);
            }
            let g = match self.slot[k] {
                NO_GROUP => {
                    self.groups.push(Group { shard: k, at: 0..0 });
                    let g = self.groups.len() - 1;
                    // Fewer groups than shards, which a manifest of at most
                    // MAX_MANIFEST_BYTES (or a mixture's sources) counts in a u32.
                    self.slot[k] = g as u32;
                    g
                }
                g => g as usize,
            };
            let group = &mut self.groups[g];
            self.places.push((g, group.at.end));
            group.at.end += 1;
            self.keyed.push(local);
        }
        let mut start = 0;
        for group in &mut self.groups {
            group.at = start..start + group.at.end;
            start = group.at.end;
        }
        let n = self.keyed.len();
        self.local.resize(n, 0);
        self.positions.resize(n, 0);
        for (p, (&(g, j), &local)) in self.places.iter().zip(&self.keyed).enumerate() {
            let at = self.groups[g].at.start + j;
            self.local[at] = local;
            self.positions[at] = p;
        }
        self.len = n;
    }

    /// Whether the whole gather is one shard's, in order (gather straight
    /// into the caller's batch).
    pub fn is_one_group(&self) -> bool {
        self.groups.len() == 1
    }

    /// Group `g`'s indices within its shard, in gather order.
    pub fn local(&self, g: &Group) -> &[u64] {
        &self.local[g.at.clone()]
    }

    /// Where each of group `g`'s records lands in the gathered batch.
    pub fn positions(&self, g: &Group) -> &[usize] {
        &self.positions[g.at.clone()]
    }

    /// `items` (one per position of the gather) handed to the groups: each
    /// group's in its own order, so that each shard (or source) fills its
    /// own places of one batch.
    pub fn per_group<T>(&self, items: Vec<T>) -> Vec<Vec<T>> {
        let mut items: Vec<Option<T>> = items.into_iter().map(Some).collect();
        let mut take = |p: usize| items[p].take().expect("each position in one group once");
        self.groups.iter().map(|g| self.positions(g).iter().map(|&p| take(p)).collect()).collect()
    }

    /// Where each record of the gather is, in gather order: its group, and
    /// its place in that group (as [`Concat::split_into`] made them).
    pub fn places(&self) -> &[(usize, usize)] {
        &self.places
    }
}

impl Concat {
    /// The shards of `manifest`, end to end.
    pub fn new(name: &str, manifest: Arc<Manifest>) -> Concat {
        let mut starts = Vec::with_capacity(manifest.shards.len() + 1);
        let mut at = 0u64;
        starts.push(0);
        for s in &manifest.shards {
            at += s.length; // the manifest's validation bounds the sum
            starts.push(at);
        }
        let per_record = if at == 0 { 0.0 } else { manifest.shards.len() as f64 / at as f64 };
        Concat { name: name.to_string(), manifest, starts, per_record }
    }

    /// Records in all shards.
    pub fn len(&self) -> u64 {
        *self.starts.last().expect("starts has n + 1 entries")
    }

    /// Whether the dataset holds no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first global index of shard `k`.
    pub fn start(&self, k: usize) -> u64 {
        self.starts[k]
    }

    /// The shard holding global record `i` (`i < len()`), and its index there.
    pub fn locate(&self, i: u64) -> (usize, u64) {
        // Shards of about one length (as writers cut them): the shard a
        // uniform split would put `i` in is the one, or a neighbour.
        let s = &self.starts;
        let n = s.len() - 1;
        let mut k = ((i as f64 * self.per_record) as usize).min(n.saturating_sub(1));
        for _ in 0..2 {
            match (s[k] <= i, i < s[k + 1]) {
                (true, true) => return (k, i - s[k]),
                (false, _) => k -= 1,
                (_, false) => k += 1,
            }
        }
        // The last shard starting at or before `i` (empty shards skipped).
        let k = s.partition_point(|&x| x <= i) - 1;
        (k, i - s[k])
    }

    /// Group `indices` by shard.
    ///
    /// # Errors
    /// `IndexOutOfRange` naming the dataset, before any read.
    pub fn split(&self, indices: &[u64]) -> Result<Split> {
        let mut split = Split::default();
        self.split_into(indices, &mut split)?;
        Ok(split)
    }

    /// [`Concat::split`] into `split`, reusing its vectors: a batch of 256
    /// over 64 shards allocated 130 vectors and a map, three quarters of
    /// the 15 µs its split took.
    ///
    /// # Errors
    /// As [`Concat::split`].
    pub fn split_into(&self, indices: &[u64], split: &mut Split) -> Result<()> {
        let len = self.len();
        if let Some(&bad) = indices.iter().find(|&&i| i >= len) {
            return Err(Error::IndexOutOfRange { store: self.name.clone(), index: bad, len });
        }
        split.group(indices.iter().map(|&i| self.locate(i)));
        Ok(())
    }
}

/// Maps keyed by shard number: hashed by one multiplication (Fibonacci
/// hashing), not SipHash, whose rounds cost a batch of 256 over 64 shards
/// about 1% of its gather (finding its open shards). Shard numbers come
/// from the manifest, not from an attacker choosing keys to collide.
type ByShard = BuildHasherDefault<ShardHasher>;

/// The hasher of [`ByShard`].
#[derive(Default)]
struct ShardHasher(u64);

impl Hasher for ShardHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, k: usize) {
        self.0 = (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The column as one store describes it, for what reads a store's info
/// (kind, dtype, length, codec): its Header has the dataset's length and
/// the shards' stored bytes.
///
/// # Errors
/// `BadDataset` for a column whose schema does not encode.
pub fn column_core(concat: &Concat, column: usize) -> Result<StoreCore> {
    let m = &concat.manifest;
    let c = &m.columns[column];
    let bad = |check: String| Error::BadDataset { dataset: concat.name.clone(), check };
    let schema: Schema = c.schema().map_err(&bad)?;
    let codec = c.codec().map_err(&bad)?;
    let schema_bytes = schema.encode();
    let data: u64 = m.shards.iter().map(|s| s.columns[&c.name].data).fold(0, u64::saturating_add);
    let header =
        Header { length: m.length, tail_offset: data, schema_length: schema_bytes.len() as u32, codec };
    let meta = PAGE_SIZE.saturating_add(m.length.saturating_mul(crate::format::LOC_SIZE));
    let info = StoreInfo {
        name: format!("{}[{}]", concat.name, c.name),
        header,
        schema,
        schema_bytes,
        sizes: FileSizes { meta, data, dict: c.dict.as_ref().map(|d| d.size) },
    };
    Ok(StoreCore::describe(info))
}

/// Put the groups' Ragged batches (`parts[g]` for `split.groups[g]`) into
/// `out` in gather order, packed and aligned to `align` bytes.
///
/// # Errors
/// `OutOfMemory` (naming `column`) when `out`'s buffer cannot grow.
pub fn assemble_ragged(
    column: &str,
    split: &Split,
    parts: &[RaggedBatch],
    align: usize,
    out: &mut RaggedBatch,
) -> Result<()> {
    let mut from = vec![(0usize, 0usize); split.len];
    for (g, group) in split.groups.iter().enumerate() {
        for (j, &p) in split.positions(group).iter().enumerate() {
            from[p] = (g, j);
        }
    }
    let align = align.max(1);
    let mut total = 0usize;
    for &(g, j) in &from {
        total = total.next_multiple_of(align) + parts[g].spans[j].len();
    }
    crate::format::decode::begin_ragged(out);
    out.data.reuse(total).map_err(|e| e.error(column, format!("a Ragged batch of {} records", split.len)))?;
    let buf = out.data.as_mut_slice();
    let mut at = 0usize;
    for &(g, j) in &from {
        let (shape, bytes) = parts[g].record(j);
        at = at.next_multiple_of(align);
        buf[at..at + bytes.len()].copy_from_slice(bytes);
        out.spans.push(at..at + bytes.len());
        out.dims.extend_from_slice(shape);
        out.dim_starts.push(out.dims.len());
        at += bytes.len();
    }
    Ok(())
}

/// Copy the groups' Dense rows (`parts[g]`, the rows of `split.groups[g]`
/// back to back) into `out` in gather order.
pub fn scatter_rows(split: &Split, parts: &[&[u8]], row: usize, out: &mut [u8]) {
    for (group, part) in split.groups.iter().zip(parts) {
        for (j, &p) in split.positions(group).iter().enumerate() {
            out[p * row..(p + 1) * row].copy_from_slice(&part[j * row..(j + 1) * row]);
        }
    }
}

/// The shards of a column opened so far, at most `cap` of them: the least
/// recently used is dropped (closed) to make room. When every shard fits,
/// a slot per shard, found without a lock: random batches over 64 shards
/// look up about 60 shards each, and a locked LRU map cost 4-9 µs of a
/// 700 µs gather.
#[derive(Debug)]
pub struct OpenShards<S> {
    inner: Inner<S>,
}

#[derive(Debug)]
enum Inner<S> {
    /// Every shard fits: shard `k` in slot `k`, and how many are set.
    All(Vec<OnceLock<Arc<S>>>, AtomicUsize),
    /// Some shards may have to close.
    Lru(Mutex<Lru<S>>),
}

#[derive(Debug)]
struct Lru<S> {
    open: HashMap<usize, (Arc<S>, u64), ByShard>,
    clock: u64,
    cap: usize,
}

impl<S> OpenShards<S> {
    /// An empty cache of `shards` shards holding at most `cap` (at least 1).
    pub fn new(cap: usize, shards: usize) -> Self {
        let inner = match cap >= shards {
            true => Inner::All((0..shards).map(|_| OnceLock::new()).collect(), AtomicUsize::new(0)),
            false => Inner::Lru(Mutex::new(Lru { open: HashMap::default(), clock: 0, cap: cap.max(1) })),
        };
        OpenShards { inner }
    }

    /// Shard `k`, if open.
    pub fn get(&self, k: usize) -> Option<Arc<S>> {
        let lru = match &self.inner {
            Inner::All(slots, _) => return slots.get(k)?.get().cloned(),
            Inner::Lru(lru) => lru,
        };
        let mut lru = lru.lock().unwrap_or_else(|e| e.into_inner());
        lru.clock += 1;
        let now = lru.clock;
        lru.open.get_mut(&k).map(|(s, used)| {
            *used = now;
            s.clone()
        })
    }

    /// Keep shard `k` (opened by the caller); when another caller opened it
    /// meanwhile, theirs is kept and returned.
    pub fn insert(&self, k: usize, shard: S) -> Arc<S> {
        let lru = match &self.inner {
            Inner::All(slots, count) => {
                let mut set = false;
                let kept = slots[k].get_or_init(|| {
                    set = true;
                    Arc::new(shard)
                });
                count.fetch_add(usize::from(set), Ordering::Relaxed);
                return kept.clone();
            }
            Inner::Lru(lru) => lru,
        };
        let mut lru = lru.lock().unwrap_or_else(|e| e.into_inner());
        lru.clock += 1;
        let now = lru.clock;
        if let Some((s, used)) = lru.open.get_mut(&k) {
            *used = now;
            return s.clone();
        }
        if lru.open.len() >= lru.cap {
            if let Some(&oldest) = lru.open.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k) {
                lru.open.remove(&oldest);
            }
        }
        let shard = Arc::new(shard);
        lru.open.insert(k, (shard.clone(), now));
        shard
    }

    /// How many shards are open.
    pub fn len(&self) -> usize {
        match &self.inner {
            Inner::All(_, count) => count.load(Ordering::Relaxed),
            Inner::Lru(lru) => lru.lock().unwrap_or_else(|e| e.into_inner()).open.len(),
        }
    }

    /// Whether no shard is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::manifest::{ColumnKind, ColumnSpec, ShardEntry, ShardFiles};

    fn concat(lengths: &[u64]) -> Concat {
        let col = ColumnSpec {
            name: "x".into(),
            kind: ColumnKind::Ragged,
            dtype: "<u2".into(),
            item_shape: None,
            codec: "raw".into(),
            dict: None,
            arrow: None,
        };
        let files = ShardFiles { meta: 0, data: 0, dict: None, sums: None };
        let shards = lengths
            .iter()
            .enumerate()
            .map(|(k, &length)| ShardEntry {
                path: format!("shards/s{k}"),
                length,
                columns: [("x".to_string(), files)].into(),
            })
            .collect();
        Concat::new("ds", Arc::new(Manifest::new(1, vec![col], shards)))
    }

    #[test]
    fn locates_across_empty_shards() {
        let c = concat(&[3, 0, 2, 0, 0, 4]);
        assert_eq!(c.len(), 9);
        let got: Vec<_> = (0..9).map(|i| c.locate(i)).collect();
        assert_eq!(got, [(0, 0), (0, 1), (0, 2), (2, 0), (2, 1), (5, 0), (5, 1), (5, 2), (5, 3)]);
        assert!(matches!(c.split(&[9]), Err(Error::IndexOutOfRange { index: 9, len: 9, .. })));
    }

    /// The first guess (shards of about one length) and its fallback
    /// find what a binary search finds, for even, skewed and empty shards;
    /// a split reused for the next batch holds only that batch's groups.
    #[test]
    fn locates_as_a_binary_search_does_and_splits_reuse_their_vectors() {
        let mut x = 7u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        let shapes: Vec<Vec<u64>> = vec![
            vec![100; 64],
            (0..64).map(|k| 90 + k % 21).collect(),
            (0..40).map(|k| if k % 3 == 0 { 0 } else { next(500) }).collect(),
            vec![1, 10_000, 1, 1, 5000, 0, 0, 7],
            vec![5],
        ];
        // One split reused across datasets too (a thread's), from more shards to fewer.
        let mut split = Split::default();
        for lengths in shapes {
            let c = concat(&lengths);
            for _ in 0..20 {
                let idx: Vec<u64> = (0..1 + next(300)).map(|_| next(c.len())).collect();
                for &i in &idx {
                    let k = c.starts.partition_point(|&s| s <= i) - 1;
                    assert_eq!(c.locate(i), (k, i - c.starts[k]), "{i} in {lengths:?}");
                }
                c.split_into(&idx, &mut split).unwrap();
                let fresh = c.split(&idx).unwrap();
                let groups = |s: &Split| -> Vec<_> {
                    s.groups.iter().map(|g| (g.shard, s.local(g).to_vec(), s.positions(g).to_vec())).collect()
                };
                assert_eq!(groups(&split), groups(&fresh));
                assert_eq!(split.len, idx.len());
            }
        }
    }

    #[test]
    fn splits_and_assembles_in_gather_order() {
        let c = concat(&[3, 2, 4]);
        let split = c.split(&[8, 0, 4, 1, 8, 3]).unwrap();
        let got: Vec<_> = split
            .groups
            .iter()
            .map(|g| (g.shard, split.local(g).to_vec(), split.positions(g).to_vec()))
            .collect();
        assert_eq!(
            got,
            [(2, vec![3, 3], vec![0, 4]), (0, vec![0, 1], vec![1, 3]), (1, vec![1, 0], vec![2, 5])]
        );
        // Rows tagged by their global index come back in gather order.
        let parts: Vec<Vec<u8>> = vec![vec![8, 8], vec![0, 1], vec![4, 3]];
        let parts: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
        let mut out = vec![0u8; 6];
        scatter_rows(&split, &parts, 1, &mut out);
        assert_eq!(out, [8, 0, 4, 1, 8, 3]);
    }

    #[test]
    fn places_and_hand_outs_follow_the_groups() {
        let c = concat(&[3, 2, 4]);
        let split = c.split(&[8, 7, 0, 5, 6, 4]).unwrap();
        assert_eq!(split.places(), [(0, 0), (0, 1), (1, 0), (0, 2), (0, 3), (2, 0)]);
        let items: Vec<u64> = vec![8, 7, 0, 5, 6, 4];
        assert_eq!(split.per_group(items), [vec![8, 7, 5, 6], vec![0], vec![4]]);
    }

    #[test]
    fn lru_keeps_at_most_cap() {
        let open = OpenShards::new(2, 4);
        open.insert(1, "a");
        open.insert(2, "b");
        assert!(open.get(1).is_some()); // 2 is now the oldest
        open.insert(3, "c");
        assert!(open.get(2).is_none() && open.get(1).is_some() && open.get(3).is_some());
        assert_eq!(*open.insert(3, "other"), "c");
        assert_eq!(open.len(), 2);
    }

    /// Room for every shard: each kept in its slot, the first one opened
    /// kept when two callers open the same shard.
    #[test]
    fn every_shard_stays_open_when_all_fit() {
        let open = OpenShards::new(4, 4);
        assert!(open.is_empty() && open.get(3).is_none() && open.get(9).is_none());
        for k in 0..4 {
            open.insert(k, k * 10);
        }
        assert_eq!(*open.insert(2, 99), 20);
        assert_eq!(open.len(), 4);
        assert!((0..4).all(|k| open.get(k).as_deref() == Some(&(k * 10))));
    }
}
