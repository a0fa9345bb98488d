//! A dataset's column over shards on the local file system: the native
//! driver. A gather over many shards is one pass over the batch, each
//! record read from its shard into its place (`local/reader/parts.rs`).

use super::concat::{column_core, Concat, OpenShards, Split, OPEN_SHARDS};
use super::manifest::ColumnSpec;
use crate::format::batch::{DenseBatch, RaggedBatch};
use crate::format::decode::slot_parts;
use crate::format::{GatherPlan, RecordLoc, StoreCore, Verify};
use crate::local::reader::{with_scratch_locs, Part, Parts};
use crate::local::residency::Residency;
use crate::local::sys;
use crate::records::Records;
use crate::{ColdReads, Error, OpenOptions, Result, Store};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Files and maps an open shard's store holds (its `meta.zr` locked, its
/// `data.zr` mapped and read cold; measured: 4 and 2).
const FILES_PER_SHARD: u64 = 4;
const MAPS_PER_SHARD: u64 = 2;

/// Shards one column keeps open: all of them when half of what this
/// process may still open (files, maps), shared by the columns, holds
/// them, else that half (at least [`MIN_OPEN`]). A fixed 512 let random
/// batches over 2,000 shards close and reopen about 190 shards a batch
/// (15,700 records/s against 270,000 for one store), and could run a
/// process with 1,024 files out of them with a few columns; [`OPEN_SHARDS`]
/// where the system does not say.
fn open_shards_cap(shards: usize, columns: usize) -> usize {
    cap_for(sys::open_room(), shards, columns)
}

/// [`open_shards_cap`] for `room` (files, maps) left to open.
fn cap_for(room: Option<(u64, u64)>, shards: usize, columns: usize) -> usize {
    let Some((files, maps)) = room else { return OPEN_SHARDS };
    let room = (files / 2 / FILES_PER_SHARD).min(maps / 2 / MAPS_PER_SHARD) / columns.max(1) as u64;
    usize::try_from(room).unwrap_or(usize::MAX).min(shards).max(MIN_OPEN)
}

/// The fewest shards a column keeps open.
const MIN_OPEN: usize = 16;

/// One column of a dataset on the local file system.
#[derive(Debug)]
pub struct LocalColumn {
    concat: Arc<Concat>,
    index: usize,
    core: StoreCore,
    root: PathBuf,
    options: OpenOptions,
    shards: OpenShards<Store>,
    /// Whether its batches are in memory, decided for each batch across
    /// its shards (`local/residency.rs`).
    residency: Residency,
}

impl LocalColumn {
    /// Column `index` of the dataset at `root`, its shards opened on first use.
    ///
    /// # Errors
    /// `BadDataset` for a column whose schema does not encode.
    pub fn new(concat: Arc<Concat>, index: usize, root: &Path, mut options: OpenOptions) -> Result<Self> {
        let core = column_core(&concat, index)?;
        // Whether the column, not each shard, fits in memory decides how its
        // cold batches read: shards that fit one by one churn the page
        // cache together.
        if options.cold_reads == ColdReads::Auto {
            let bigger = crate::local::reader::bigger_than_memory(core.info().sizes.data);
            options.cold_reads = if bigger { ColdReads::Direct } else { ColdReads::Buffered };
        }
        let shard_count = concat.manifest.shards.len();
        let cap = open_shards_cap(shard_count, concat.manifest.columns.len());
        Ok(LocalColumn {
            concat,
            index,
            core,
            root: root.to_path_buf(),
            options,
            shards: OpenShards::new(cap, shard_count),
            residency: Residency::default(),
        })
    }

    /// The column's spec in the manifest.
    pub fn spec(&self) -> &ColumnSpec {
        &self.concat.manifest.columns[self.index]
    }
    /// The shards laid end to end.
    pub fn concat(&self) -> &Concat {
        &self.concat
    }
    /// How many shards are open now.
    pub fn open_shards(&self) -> usize {
        self.shards.len()
    }

    /// Shard `k`'s store of this column, opened and checked against the
    /// manifest on first use.
    ///
    /// # Errors
    /// The open's errors, `BadShard` for a store that is missing or not what
    /// the manifest says.
    pub fn shard(&self, k: usize) -> Result<Arc<Store>> {
        if let Some(s) = self.shards.get(k) {
            return Ok(s);
        }
        let m = &self.concat.manifest;
        let entry = &m.shards[k];
        let name = &self.spec().name;
        let files = entry.columns[name];
        let bad = |check: String| Error::BadShard {
            dataset: self.concat.name.clone(),
            shard: entry.path.clone(),
            check: format!("column {name:?}: {check}"),
        };
        let dir = self.root.join(super::layout::store_path(&entry.path, name));
        let mut options = self.options;
        options.verify = match (options.verify, files.sums.is_some()) {
            (Verify::IfSealed, true) => Verify::Always,
            (Verify::IfSealed, false) => Verify::Off,
            (v, _) => v,
        };
        let store = Store::open_with(&dir, options).map_err(|e| match e {
            Error::NotFound { what, .. } => bad(format!("{} is missing ({what})", dir.display())),
            e => e,
        })?;
        m.check_store(&self.concat.name, k, self.index, store.info(), store.dict_bytes())?;
        m.check_data_size(&self.concat.name, k, self.index, store.info().sizes.data)?;
        if let Some(want) = files.sums {
            let path = dir.join(crate::format::files::SUMS);
            let got = std::fs::metadata(&path).map(|m| m.len()).map_err(|e| bad(format!("sums.zr: {e}")))?;
            if got != want {
                return Err(bad(format!("sums.zr is {got} bytes, the manifest says {want}")));
            }
        }
        Ok(self.shards.insert(k, store))
    }
}

impl LocalColumn {
    /// The store of each group of `split`, in its order.
    fn stores(&self, split: &Split) -> Result<Vec<Arc<Store>>> {
        split.groups.iter().map(|g| self.shard(g.shard)).collect()
    }

    /// Run `f` on `indices` split by shard, in this thread's [`Split`],
    /// whose vectors are reused from batch to batch.
    fn with_split<T>(&self, indices: &[u64], f: impl FnOnce(&Split) -> Result<T>) -> Result<T> {
        thread_local! {
            static SPLIT: RefCell<Split> = RefCell::default();
        }
        let mut split = SPLIT.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let result = self.concat.split_into(indices, &mut split).and_then(|()| f(&split));
        SPLIT.with(|s| *s.borrow_mut() = split);
        result
    }

    /// Whether the batch `split` reads cold, in every shard: records spread
    /// over the batch are probed, whichever shards they are in.
    fn is_cold(&self, split: &Split, stores: &[Arc<Store>]) -> bool {
        let places = split.places();
        self.residency.is_cold(places.len(), |j| {
            let (g, k) = places[j];
            stores[g].out_of_memory(split.local(&split.groups[g])[k])
        })
    }

    /// Fill `rows` (one row's bytes each, in gather order) with the
    /// records of `split`: one pass over the batch, each record from its
    /// shard ([`Parts`]), or, for a batch found cold, all read at once.
    fn fill_rows(&self, indices: &[u64], mut rows: Vec<&mut [u8]>) -> Result<()> {
        self.with_split(indices, |split| self.fill_rows_split(split, &mut rows))
    }

    /// [`LocalColumn::fill_rows`] of a split batch.
    fn fill_rows_split(&self, split: &Split, rows: &mut [&mut [u8]]) -> Result<()> {
        if split.is_one_group() {
            let g = &split.groups[0];
            return self.shard(g.shard)?.gather_rows(split.local(g), rows);
        }
        let stores = self.stores(split)?;
        let cold = self.is_cold(split, &stores);
        let parts = (stores.iter().zip(&split.groups))
            .map(|(store, g)| store.dense_part(split.local(g), cold))
            .collect::<Result<Vec<Part<'_>>>>()?;
        let records = Parts::many(&parts, split.places());
        match cold {
            true => records.fill_rows_cold(rows),
            false => records.fill_rows(self.core.info().dense_row()?, rows),
        }
    }
}

impl Records for LocalColumn {
    fn core(&self) -> &StoreCore {
        &self.core
    }

    fn local_dir(&self) -> Option<&Path> {
        None // many directories
    }

    fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        let split = self.concat.split(indices)?;
        let mut out = vec![RecordLoc::default(); indices.len()];
        for g in &split.groups {
            for (&p, loc) in split.positions(g).iter().zip(self.shard(g.shard)?.raw_locs(split.local(g))?) {
                out[p] = loc;
            }
        }
        Ok(out)
    }

    fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        let plan = GatherPlan::dense_into(&self.core, indices, out.len())?;
        let row = plan.row().expect("a Dense plan");
        if row == 0 {
            return Ok(());
        }
        self.fill_rows(indices, out.chunks_mut(row).collect())
    }

    fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        let plan = GatherPlan::dense(&self.core, indices)?;
        self.with_split(indices, |split| {
            if split.is_one_group() {
                let g = &split.groups[0];
                let store = self.shard(g.shard)?;
                store.gather_dense_batch(split.local(g), batch)?;
                batch.dtype.clone_from(self.core.info().dtype());
                return Ok(());
            }
            plan.size_dense(batch)?;
            match plan.row().expect("a Dense plan") {
                0 => Ok(()),
                row => self.fill_rows_split(
                    split,
                    &mut batch.data.as_mut_slice().chunks_mut(row).collect::<Vec<_>>(),
                ),
            }
        })
    }

    fn gather_rows(&self, indices: &[u64], rows: &mut [&mut [u8]]) -> Result<()> {
        let plan = GatherPlan::dense(&self.core, indices)?;
        let row = plan.row().expect("a Dense plan");
        crate::records::check_rows(self.core.info(), indices, rows, row)?;
        self.fill_rows(indices, rows.iter_mut().map(|r| &mut **r).collect())
    }

    fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        let plan = GatherPlan::ragged(&self.core, indices)?;
        self.with_split(indices, |split| {
            if split.is_one_group() {
                let g = &split.groups[0];
                return self.shard(g.shard)?.gather_ragged_into(split.local(g), batch);
            }
            let stores = self.stores(split)?;
            let cold = self.is_cold(split, &stores);
            let parts = (stores.iter().zip(&split.groups))
                .map(|(store, g)| store.ragged_part(split.local(g), cold))
                .collect::<Result<Vec<Part<'_>>>>()?;
            let records = Parts::many(&parts, split.places());
            // Every shard's locations checked first, into one batch's, then one
            // batch laid out for all of them, each record decoded into its slot.
            with_scratch_locs(|locs, slots| {
                records.check_locs(locs)?;
                plan.fill_ragged(locs, slots, batch, |buf, slots| match cold {
                    true => records.read_cold(locs, &mut slot_parts(buf, slots)),
                    false => records.decode_slots(locs, buf, slots),
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shard open when half the room holds them all, shared by the
    /// columns; else that half, never below the floor; 512 when unknown.
    #[test]
    fn a_column_keeps_open_what_the_process_has_room_for() {
        let plenty = Some((1 << 20, 65_530));
        assert_eq!(cap_for(plenty, 2000, 1), 2000);
        assert_eq!(cap_for(plenty, 100_000, 1), 65_530 / 2 / 2);
        assert_eq!(cap_for(Some((20_000, 65_530)), 10_000, 1), 2500);
        assert_eq!(cap_for(Some((20_000, 65_530)), 10_000, 4), 625);
        // 1,000 files left, 4 columns: 512 each would have run out of files.
        assert_eq!(cap_for(Some((1000, 65_530)), 10_000, 4), 31);
        assert_eq!(cap_for(Some((100, 65_530)), 10_000, 4), MIN_OPEN);
        assert_eq!(cap_for(Some((0, 0)), 10, 1), MIN_OPEN);
        assert_eq!(cap_for(None, 2000, 1), OPEN_SHARDS);
    }
}
