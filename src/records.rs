//! One trait for "a store I can gather from" on the calling thread: the local
//! [`Store`](crate::Store) and the blocking remote store implement it, and
//! the loader, dictionary training and the CLI take any of them.

use crate::format::batch::{AlignedBytes, Batch, DenseBatch, RaggedBatch};
use crate::format::dtype::Element;
use crate::format::{Codec, DType, FileSizes, Geometry, RecordLoc, StoreCore, StoreInfo};
use crate::{Error, Result};

/// `Records` for a type over several readers (a store opened from any
/// path or URL, a dataset's column): every method asks `self.records()`.
/// (The wasm32 build has no such type.)
#[allow(unused_macros)]
macro_rules! forward_records {
    ($t:ty) => {
        impl $crate::records::Records for $t {
            fn core(&self) -> &$crate::format::StoreCore {
                self.records().core()
            }
            fn raw_locs(&self, indices: &[u64]) -> $crate::Result<Vec<$crate::format::RecordLoc>> {
                self.records().raw_locs(indices)
            }
            fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> $crate::Result<()> {
                self.records().gather_into(indices, out)
            }
            fn gather_dense_batch(
                &self,
                indices: &[u64],
                batch: &mut $crate::format::batch::DenseBatch,
            ) -> $crate::Result<()> {
                self.records().gather_dense_batch(indices, batch)
            }
            fn gather_rows(&self, indices: &[u64], rows: &mut [&mut [u8]]) -> $crate::Result<()> {
                self.records().gather_rows(indices, rows)
            }
            fn gather_ragged_into(
                &self,
                indices: &[u64],
                batch: &mut $crate::format::batch::RaggedBatch,
            ) -> $crate::Result<()> {
                self.records().gather_ragged_into(indices, batch)
            }
            fn sizes(&self) -> $crate::Result<$crate::format::FileSizes> {
                self.records().sizes()
            }
            fn local_dir(&self) -> Option<&std::path::Path> {
                self.records().local_dir()
            }
            fn prefetch(&self, indices: &[u64]) -> $crate::Result<u64> {
                self.records().prefetch(indices)
            }
            fn prefetches(&self) -> bool {
                self.records().prefetches()
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use forward_records;

/// `InvalidArgument` unless `rows` are one row of `row` bytes per index
/// (for [`Records::gather_rows`]).
pub(crate) fn check_rows(info: &StoreInfo, indices: &[u64], rows: &[&mut [u8]], row: usize) -> Result<()> {
    if rows.len() != indices.len() || rows.iter().any(|r| r.len() != row) {
        return Err(Error::InvalidArgument {
            store: info.name.clone(),
            why: format!("{} rows given for {} records of {row} bytes", rows.len(), indices.len()),
        });
    }
    Ok(())
}

/// A store that gathers records by index, local or remote.
///
/// Implementors provide the few primitives; everything else (accessors,
/// allocating gathers, `get`, either-kind gathers) is written once here.
///
/// ```
/// use zrecord::{Records, Store};
/// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/loaderx-2.0.1/dense-f32-zstd");
/// fn first(store: &dyn Records) -> zrecord::Result<Vec<u64>> {
///     Ok(store.get(0)?.0)
/// }
/// assert_eq!(first(&Store::open(dir)?)?, vec![2, 5]);
/// # Ok::<(), zrecord::Error>(())
/// ```
pub trait Records: Send + Sync + std::fmt::Debug {
    /// The store as every driver holds it: its validated description and
    /// dictionary (what gather plans and checkers are made from).
    fn core(&self) -> &StoreCore;

    /// The validated Header, schema and sizes.
    fn info(&self) -> &StoreInfo {
        self.core().info()
    }

    /// `dict.zr`'s bytes, for a `zstd_dict` store.
    fn dict_bytes(&self) -> Option<&[u8]> {
        self.core().dict_bytes()
    }

    /// Locations of `indices` exactly as stored, not validated: for checkers
    /// that report every broken location, and to size samples.
    ///
    /// # Errors
    /// `IndexOutOfRange` (before any read), read errors.
    fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>>;

    /// Gather Dense records into `out`, exactly `indices.len() * row_bytes`
    /// bytes. Indices may repeat and come in any order.
    ///
    /// # Errors
    /// `IndexOutOfRange` (before any read), `InvalidArgument` for a Ragged
    /// store or a wrong buffer size, `BadFormat`/`CorruptRecord`, read errors.
    fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()>;

    /// Gather Dense records into `batch`, reusing its buffer.
    ///
    /// # Errors
    /// As [`Records::gather_into`].
    fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()>;

    /// Gather Ragged records into `batch`, reusing its buffers.
    ///
    /// # Errors
    /// `IndexOutOfRange` (before any read), `InvalidArgument` for a Dense
    /// store, `BadFormat`/`CorruptRecord`, read errors.
    fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()>;

    /// Gather Dense records into `rows`, one record's bytes each, in gather
    /// order: a mixture's (or a dataset's) records land straight in their
    /// places in one batch. The default gathers into a new buffer and copies;
    /// the local store writes each row once.
    ///
    /// # Errors
    /// As [`Records::gather_into`]; `InvalidArgument` when `rows` are not one
    /// row per index.
    fn gather_rows(&self, indices: &[u64], rows: &mut [&mut [u8]]) -> Result<()> {
        let row = self.info().row_bytes().unwrap_or(0) as usize;
        check_rows(self.info(), indices, rows, row)?;
        let mut batch = DenseBatch::new(self.dtype().clone());
        self.gather_dense_batch(indices, &mut batch)?;
        for (k, r) in rows.iter_mut().enumerate() {
            r.copy_from_slice(&batch.bytes()[k * row..(k + 1) * row]);
        }
        Ok(())
    }

    /// The files' sizes (a remote store learns `data.zr`'s with a request).
    ///
    /// # Errors
    /// Read errors.
    fn sizes(&self) -> Result<FileSizes> {
        Ok(self.info().sizes)
    }

    /// The store's directory, when it is on the local file system.
    fn local_dir(&self) -> Option<&std::path::Path> {
        None
    }

    /// Bring the stored bytes of `indices` close ahead of their gather,
    /// without decoding them: a remote store read through a node-local
    /// cache fetches their missing blocks (the loader calls this for the
    /// steps it will gather next). Answers the bytes fetched; the default,
    /// for readers with nothing to bring close, does nothing.
    ///
    /// # Errors
    /// As the gathers' reads.
    fn prefetch(&self, indices: &[u64]) -> Result<u64> {
        let _ = indices;
        Ok(0)
    }

    /// Whether [`Records::prefetch`] brings anything close: the loader
    /// runs its look-ahead thread (which draws every step a second time)
    /// only for streams that answer yes.
    fn prefetches(&self) -> bool {
        false
    }

    /// The name errors give the store (its path or URL).
    fn name(&self) -> &str {
        &self.info().name
    }
    /// Number of records.
    fn len(&self) -> u64 {
        self.info().len()
    }
    /// Whether the store holds no records.
    fn is_empty(&self) -> bool {
        self.info().is_empty()
    }
    /// Element type, exactly as stored (never byte-swapped).
    fn dtype(&self) -> &DType {
        self.info().dtype()
    }
    /// Dense (with `item_shape`) or Ragged.
    fn geometry(&self) -> &Geometry {
        self.info().geometry()
    }
    /// `item_shape` of a Dense store.
    fn item_shape(&self) -> Option<&[u64]> {
        self.info().item_shape()
    }
    /// Record codec.
    fn codec(&self) -> Codec {
        self.info().codec()
    }
    /// The schema's MsgPack bytes as stored.
    fn schema_bytes(&self) -> &[u8] {
        &self.info().schema_bytes
    }
    /// Stored bytes of the published records (`tail_offset`, which is the
    /// sum of `phys_length` for stores written by loaderx and zrecord).
    fn stored_bytes(&self) -> u64 {
        self.info().header.tail_offset
    }

    /// Record `index`'s location, validated.
    ///
    /// # Errors
    /// `IndexOutOfRange`, `BadFormat` for a location breaking a rule, read errors.
    fn loc(&self, index: u64) -> Result<RecordLoc> {
        let loc = self.raw_locs(&[index])?[0];
        let info = self.info();
        loc.validate(&info.name, index, info.codec(), info.header.tail_offset)?;
        Ok(loc)
    }

    /// Decoded bytes of every record (sum of `logic_length`), reading every location.
    ///
    /// # Errors
    /// Read errors.
    fn logical_bytes(&self) -> Result<u64> {
        const CHUNK: u64 = 1 << 16;
        let mut total = 0u64;
        let mut at = 0;
        while at < self.len() {
            let indices: Vec<u64> = (at..self.len().min(at + CHUNK)).collect();
            total += self.raw_locs(&indices)?.iter().map(|l| u64::from(l.logic_length)).sum::<u64>();
            at += indices.len() as u64;
        }
        Ok(total)
    }

    /// Gather Dense records into a new batch.
    ///
    /// # Errors
    /// As [`Records::gather_into`].
    fn gather(&self, indices: &[u64]) -> Result<DenseBatch> {
        let mut batch = DenseBatch::new(self.dtype().clone());
        self.gather_dense_batch(indices, &mut batch)?;
        Ok(batch)
    }

    /// Gather Dense records into a typed buffer of `indices.len() * prod(item_shape)` items.
    ///
    /// # Errors
    /// As [`Records::gather_into`], and `InvalidArgument` when `T` is not the dtype.
    fn gather_into_typed<T: Element>(&self, indices: &[u64], out: &mut [T]) -> Result<()>
    where
        Self: Sized,
    {
        if !self.dtype().matches::<T>() {
            return Err(Error::InvalidArgument {
                store: self.name().to_string(),
                why: format!("cannot gather {} items into [{}]", self.dtype(), std::any::type_name::<T>()),
            });
        }
        self.gather_into(indices, bytemuck::cast_slice_mut(out))
    }

    /// Gather Ragged records into a new packed batch.
    ///
    /// # Errors
    /// As [`Records::gather_ragged_into`].
    fn gather_ragged(&self, indices: &[u64]) -> Result<RaggedBatch> {
        let mut batch = RaggedBatch::default();
        self.gather_ragged_into(indices, &mut batch)?;
        Ok(batch)
    }

    /// Gather into either kind of batch (the loader's entry point); `batch`
    /// becomes the store's kind, keeping its buffers when it already is.
    ///
    /// # Errors
    /// As the gathers.
    fn gather_batch_into(&self, indices: &[u64], batch: &mut Batch) -> Result<()> {
        batch.fit(self.info());
        match batch {
            Batch::Dense(b) => self.gather_dense_batch(indices, b),
            Batch::Ragged(b) => self.gather_ragged_into(indices, b),
        }
    }

    /// Gather into a new batch of the store's kind.
    ///
    /// # Errors
    /// As the gathers.
    fn gather_any(&self, indices: &[u64]) -> Result<Batch> {
        let mut batch = Batch::for_store(self.info());
        self.gather_batch_into(indices, &mut batch)?;
        Ok(batch)
    }

    /// One record: its shape and payload bytes (no shape prefix).
    ///
    /// # Errors
    /// As the gathers.
    fn get(&self, index: u64) -> Result<(Vec<u64>, AlignedBytes)> {
        let batch = self.gather_any(&[index])?;
        let (shape, bytes) = batch.record(0);
        Ok((shape.to_vec(), AlignedBytes::copy_of(bytes)))
    }
}
