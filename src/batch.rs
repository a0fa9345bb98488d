//! Gathered batches handed to callers.

use crate::format::decode::AlignedBytes;
pub use crate::format::decode::RaggedBatch;
use crate::format::{dtype::Element, DType};
use crate::{Error, Result};

/// A gathered Dense batch: `(n, *item_shape)` items in C order, one aligned buffer.
#[derive(Clone, Debug)]
pub struct DenseBatch {
    pub(crate) data: AlignedBytes,
    pub(crate) shape: Vec<u64>,
    pub(crate) dtype: DType,
}

impl DenseBatch {
    /// An empty batch to gather into (buffers grow once and are reused).
    pub fn new(dtype: DType) -> Self {
        DenseBatch { data: AlignedBytes::default(), shape: Vec::new(), dtype }
    }
    /// `(n, *item_shape)`.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }
    /// Number of records.
    pub fn len(&self) -> usize {
        self.shape.first().copied().unwrap_or(0) as usize
    }
    /// Whether the batch holds no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element type (as stored, never byte-swapped).
    pub fn dtype(&self) -> &DType {
        &self.dtype
    }
    /// The bytes in the store's byte order.
    pub fn bytes(&self) -> &[u8] {
        self.data.as_slice()
    }
    /// The items as `&[T]` when `T` is the store's dtype in native byte order.
    ///
    /// # Errors
    /// `InvalidArgument` when `T` does not match the dtype.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        typed(&self.dtype, self.bytes())
    }
}

/// View bytes of `dtype` as `[T]`, refusing mismatched kinds, sizes or byte order.
pub(crate) fn typed<'a, T: Element>(dtype: &DType, bytes: &'a [u8]) -> Result<&'a [T]> {
    if !dtype.matches::<T>() {
        return Err(Error::InvalidArgument {
            store: String::new(),
            why: format!(
                "cannot view {dtype} items as {} ({} expected)",
                std::any::type_name::<T>(),
                T::DTYPE_LE
            ),
        });
    }
    bytemuck::try_cast_slice(bytes).map_err(|e| Error::InvalidArgument {
        store: String::new(),
        why: format!("buffer cannot be viewed as {}: {e}", std::any::type_name::<T>()),
    })
}

impl RaggedBatch {
    /// Record `i`'s payload as `&[T]` when `T` matches `dtype` (records are aligned).
    ///
    /// # Errors
    /// `InvalidArgument` when `T` does not match the dtype.
    pub fn record_as<T: Element>(&self, dtype: &DType, i: usize) -> Result<&[T]> {
        typed(dtype, self.record(i).1)
    }
}

/// Either kind of batch, for code that handles any store (the loader).
#[derive(Clone, Debug)]
pub enum Batch {
    /// From a Dense store.
    Dense(DenseBatch),
    /// From a Ragged store.
    Ragged(RaggedBatch),
}

impl Batch {
    /// Number of records.
    pub fn len(&self) -> usize {
        match self {
            Batch::Dense(b) => b.len(),
            Batch::Ragged(b) => b.len(),
        }
    }
    /// Whether the batch holds no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The Dense batch, if this is one.
    pub fn as_dense(&self) -> Option<&DenseBatch> {
        match self {
            Batch::Dense(b) => Some(b),
            Batch::Ragged(_) => None,
        }
    }
    /// The Ragged batch, if this is one.
    pub fn as_ragged(&self) -> Option<&RaggedBatch> {
        match self {
            Batch::Ragged(b) => Some(b),
            Batch::Dense(_) => None,
        }
    }
}
