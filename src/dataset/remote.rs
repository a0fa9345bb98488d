//! A dataset's column over remote shards (HTTP, buckets, the browser): the
//! async driver. A gather fans out to its shards at once, each shard's
//! requests running together ([`RemoteStore`]), and lands in one batch.

use super::concat::{assemble_ragged, column_core, Concat, OpenShards, Split, OPEN_SHARDS};
use super::layout;
use super::manifest::{ColumnSpec, Manifest, MAX_MANIFEST_BYTES};
use crate::format::batch::{Batch, DenseBatch, RaggedBatch};
use crate::format::{GatherPlan, RecordLoc, StoreCore, Verify};
use crate::remote::exec::for_each_bounded;
use crate::remote::{LocalBoxFuture, RangeRead, RemoteOptions, RemoteStore};
use crate::{Error, Result};
use std::sync::Arc;

/// Shards a gather reads at once, per request the options allow in flight:
/// a batch of random records touches a shard for one or two records, whose
/// open and reads are a request or two each, one after the other (with 16
/// shards at once, a first batch over 10,000 shards behind 20 ms took 409 ms).
pub const SHARDS_PER_REQUEST: usize = 4;

/// One column of a dataset whose shards are remote; `open(path)` makes the
/// transport of the store at `path` (relative to the dataset).
pub struct RemoteColumn<T, O> {
    concat: Arc<Concat>,
    index: usize,
    core: StoreCore,
    options: RemoteOptions,
    shards: OpenShards<RemoteStore<T>>,
    open: O,
    /// Whether the shards' transports bring bytes close ([`RangeRead::prefetches`]).
    prefetches: bool,
}

impl<T, O> std::fmt::Debug for RemoteColumn<T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteColumn").field("name", &self.core.info().name).finish_non_exhaustive()
    }
}

impl<T: RangeRead, O: Fn(&str) -> Result<T>> RemoteColumn<T, O> {
    /// Column `index` of the dataset, its shards opened on first use.
    ///
    /// # Errors
    /// `BadDataset` for a column whose schema does not encode.
    pub fn new(concat: Arc<Concat>, index: usize, options: RemoteOptions, open: O) -> Result<Self> {
        let core = column_core(&concat, index)?;
        // Every shard's transport comes from the same opener: ask one (no I/O).
        let prefetches = match concat.manifest.shards.first() {
            Some(s) => open(&layout::store_path(&s.path, &concat.manifest.columns[index].name))?.prefetches(),
            None => false,
        };
        let shards = OpenShards::new(OPEN_SHARDS, concat.manifest.shards.len());
        Ok(RemoteColumn { concat, index, core, options, shards, open, prefetches })
    }

    /// Whether [`RemoteColumn::prefetch`] brings anything close (the shards
    /// are read through a node-local cache).
    pub fn prefetches(&self) -> bool {
        self.prefetches
    }

    /// Bring the stored bytes of `indices` close ahead of their gather,
    /// shard by shard ([`RemoteStore::prefetch`]); the bytes that fetched.
    /// Opens the shards a gather of `indices` would open.
    ///
    /// # Errors
    /// `IndexOutOfRange`, the shards' open and read errors.
    pub async fn prefetch(&self, indices: &[u64]) -> Result<u64> {
        if !self.prefetches {
            return Ok(0);
        }
        let split = self.concat.split(indices)?;
        let mut fetched = 0u64;
        self.fan_out(&split, &|s, local| Box::pin(async move { s.prefetch(local).await }), |_, n| {
            fetched = fetched.saturating_add(n);
            Ok(())
        })
        .await?;
        Ok(fetched)
    }

    /// The column as one store describes it.
    pub fn core(&self) -> &StoreCore {
        &self.core
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
    /// The open's errors, `BadShard` for a store that is not what the
    /// manifest says.
    pub async fn shard(&self, k: usize) -> Result<Arc<RemoteStore<T>>> {
        if let Some(s) = self.shards.get(k) {
            return Ok(s);
        }
        let m = &self.concat.manifest;
        let entry = &m.shards[k];
        let files = entry.columns[&self.spec().name];
        let mut options = self.options.clone();
        // A store the manifest calls sealed must have its sidecar.
        options.verify = match (options.verify, files.sums.is_some()) {
            (Verify::IfSealed, true) => Verify::Always,
            (Verify::IfSealed, false) => Verify::Off,
            (v, _) => v,
        };
        let path = super::layout::store_path(&entry.path, &self.spec().name);
        let missing = |e: Error| match e {
            Error::NotFound { store, what } => Error::BadShard {
                dataset: self.concat.name.clone(),
                shard: entry.path.clone(),
                check: format!("column {:?}: {store} is missing ({what})", self.spec().name),
            },
            e => e,
        };
        let store = RemoteStore::open((self.open)(&path)?, options).await.map_err(missing)?;
        m.check_store(&self.concat.name, k, self.index, store.info(), store.dict_bytes())?;
        Ok(self.shards.insert(k, store))
    }

    /// Check `data.zr`'s size against the manifest once a read has told it.
    fn check_data(&self, k: usize, store: &RemoteStore<T>) -> Result<()> {
        match store.file_sizes().data {
            Some(data) => self.concat.manifest.check_data_size(&self.concat.name, k, self.index, data),
            None => Ok(()),
        }
    }

    /// Run `each` on every group of `split` (its shard open), at most
    /// [`SHARDS_PER_REQUEST`] × the options' concurrency at once, handing
    /// results to `done(group, value)`.
    async fn fan_out<'a, V: 'a>(
        &'a self,
        split: &'a Split,
        each: &'a dyn Fn(Arc<RemoteStore<T>>, &'a [u64]) -> LocalBoxFuture<'a, Result<V>>,
        done: impl FnMut(usize, V) -> Result<()>,
    ) -> Result<()> {
        let futures: Vec<LocalBoxFuture<'a, Result<V>>> = split
            .groups
            .iter()
            .map(|g| -> LocalBoxFuture<'a, Result<V>> {
                Box::pin(async move {
                    let store = self.shard(g.shard).await?;
                    let v = each(store.clone(), split.local(g)).await?;
                    self.check_data(g.shard, &store)?;
                    Ok(v)
                })
            })
            .collect();
        let limit = SHARDS_PER_REQUEST * self.options.concurrency.max(1);
        for_each_bounded(futures, limit, done).await
    }

    /// Locations as stored, for checkers (shard-local offsets).
    ///
    /// # Errors
    /// `IndexOutOfRange`, the shards' read errors.
    pub async fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        let split = self.concat.split(indices)?;
        let mut out = vec![RecordLoc::default(); indices.len()];
        self.fan_out(&split, &|s, local| Box::pin(async move { s.raw_locs(local).await }), |g, locs| {
            for (&p, loc) in split.positions(&split.groups[g]).iter().zip(locs) {
                out[p] = loc;
            }
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Gather Dense records into `batch`.
    ///
    /// # Errors
    /// As [`RemoteStore::gather_dense_batch`], naming the shard's store.
    pub async fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        let plan = GatherPlan::dense(&self.core, indices)?;
        let split = self.concat.split(indices)?;
        plan.size_dense(batch)?;
        let row = plan.row().expect("a Dense plan");
        let out = batch.data.as_mut_slice();
        let dtype = self.core.info().dtype().clone();
        self.fan_out(
            &split,
            &|s, local| {
                let mut part = DenseBatch::new(dtype.clone());
                Box::pin(async move {
                    s.gather_dense_batch(local, &mut part).await?;
                    Ok(part)
                })
            },
            |g, part| {
                let rows = part.data.as_slice();
                for (j, &p) in split.positions(&split.groups[g]).iter().enumerate() {
                    out[p * row..(p + 1) * row].copy_from_slice(&rows[j * row..(j + 1) * row]);
                }
                Ok(())
            },
        )
        .await
    }

    /// Gather Dense records into `out` (exactly `indices.len()` rows).
    ///
    /// # Errors
    /// As [`RemoteColumn::gather_dense_batch`], and `InvalidArgument` for a
    /// buffer of another size.
    pub async fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        GatherPlan::dense_into(&self.core, indices, out.len())?;
        let mut batch = DenseBatch::new(self.core.info().dtype().clone());
        self.gather_dense_batch(indices, &mut batch).await?;
        out.copy_from_slice(batch.data.as_slice());
        Ok(())
    }

    /// Gather Ragged records into `batch`.
    ///
    /// # Errors
    /// As [`RemoteStore::gather_ragged_into`], naming the shard's store.
    pub async fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        GatherPlan::ragged(&self.core, indices)?;
        let split = self.concat.split(indices)?;
        let mut parts: Vec<RaggedBatch> = vec![RaggedBatch::default(); split.groups.len()];
        self.fan_out(
            &split,
            &|s, local| {
                Box::pin(async move {
                    let mut part = RaggedBatch::default();
                    s.gather_ragged_into(local, &mut part).await?;
                    Ok(part)
                })
            },
            |g, part| {
                parts[g] = part;
                Ok(())
            },
        )
        .await?;
        assemble_ragged(&self.core.info().name, &split, &parts, self.core.info().dtype().alignment(), batch)
    }

    /// Gather into either kind of batch.
    ///
    /// # Errors
    /// As the gathers.
    pub async fn gather_batch_into(&self, indices: &[u64], batch: &mut Batch) -> Result<()> {
        batch.fit(self.core.info());
        match batch {
            Batch::Dense(b) => self.gather_dense_batch(indices, b).await,
            Batch::Ragged(b) => self.gather_ragged_into(indices, b).await,
        }
    }
}

/// Read the manifest of the dataset whose root `root` reads: version
/// `version`, or the newest (the root's manifest, then a look for the next
/// version in case a committer has not yet replaced it): two requests.
///
/// # Errors
/// `NotFound` when the root holds no dataset, `BadDataset` for a damaged
/// manifest, the transport's read errors.
pub async fn load_manifest<T: RangeRead>(root: &T, version: Option<u64>) -> Result<Manifest> {
    let name = root.name();
    let name = name.as_str();
    let read = |path: String| async move {
        match root.read_path(&path, 0..MAX_MANIFEST_BYTES + 1).await {
            Ok(got) => Manifest::parse(name, &got.bytes).map(Some),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    };
    let mut manifest = match version {
        Some(v) => read(layout::version_path(v)).await?.ok_or_else(|| Error::NotFound {
            store: root.name(),
            what: format!("no version {v} ({} is missing)", layout::version_path(v)),
        })?,
        None => read(layout::MANIFEST.to_string()).await?.ok_or_else(|| Error::NotFound {
            store: root.name(),
            what: format!("no dataset here ({} is missing)", layout::MANIFEST),
        })?,
    };
    if version.is_none() {
        while let Some(newer) = read(layout::version_path(manifest.version + 1)).await? {
            manifest = newer;
        }
    }
    check_version(&root.name(), &manifest, version)?;
    Ok(manifest)
}

/// A manifest read as version `want` must say it is that version.
///
/// # Errors
/// `BadDataset` when it says another.
pub fn check_version(name: &str, manifest: &Manifest, want: Option<u64>) -> Result<()> {
    match want {
        Some(v) if manifest.version != v => Err(Error::BadDataset {
            dataset: name.to_string(),
            check: format!("{} says it is version {}", layout::version_path(v), manifest.version),
        }),
        _ => Ok(()),
    }
}
