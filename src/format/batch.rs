//! Gathered batches handed to callers.

use crate::format::{dtype::Element, DType, Geometry, StoreInfo};
use crate::{Error, Result};
use std::ops::Range;

/// A byte buffer aligned to 8 bytes, so any numeric dtype can be viewed in place.
#[derive(Clone, Default)]
pub struct AlignedBytes {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBytes {
    /// A zeroed buffer of `len` bytes.
    ///
    /// # Panics
    /// Aborts when the memory cannot be had, as `vec!` does: for sizes a
    /// caller chooses, use [`AlignedBytes::try_zeroed`].
    pub fn zeroed(len: usize) -> AlignedBytes {
        AlignedBytes { words: vec![0u64; len.div_ceil(8)], len }
    }
    /// A zeroed buffer of `len` bytes, or [`AllocFailed`] when the allocator
    /// refuses it (calloc: fresh pages cost nothing until written).
    pub fn try_zeroed(len: usize) -> Result<AlignedBytes, AllocFailed> {
        Ok(AlignedBytes { words: zeroed_words(len.div_ceil(8))?, len })
    }
    /// An aligned copy of `bytes`.
    pub fn copy_of(bytes: &[u8]) -> AlignedBytes {
        let mut out = AlignedBytes::zeroed(bytes.len());
        out.as_mut_slice().copy_from_slice(bytes);
        out
    }
    /// Resize to `len` bytes, reusing the allocation when it is large enough.
    ///
    /// # Errors
    /// [`AllocFailed`] when the growth cannot be allocated (the buffer is
    /// then unchanged).
    pub fn resize(&mut self, len: usize) -> Result<(), AllocFailed> {
        let words = len.div_ceil(8);
        let more = words.saturating_sub(self.words.len());
        self.words.try_reserve_exact(more).map_err(|_| AllocFailed::words(words))?;
        self.words.resize(words, 0);
        self.len = len;
        Ok(())
    }
    /// Size to `len` bytes without keeping the contents, for a gather that
    /// overwrites them all: a buffer with room keeps its memory (warm pages,
    /// nothing written), one without is replaced by a fresh zeroed
    /// allocation with 1/8 headroom (or exactly `len` when the headroom is
    /// not to be had), so batches of varying size settle on one buffer.
    /// Unlike [`AlignedBytes::resize`] it never copies the old bytes nor
    /// zero-fills the growth: a big fresh allocation is the kernel's, and its
    /// pages cost nothing until the gather writes them.
    ///
    /// # Errors
    /// [`AllocFailed`] when `len` bytes cannot be allocated: a batch sized by
    /// a caller must fail as an error, never abort the process (the buffer is
    /// then empty).
    pub fn reuse(&mut self, len: usize) -> Result<(), AllocFailed> {
        let words = len.div_ceil(8);
        if self.words.len() < words {
            self.words = Vec::new();
            self.len = 0;
            self.words = zeroed_words(words.saturating_add(words / 8)).or_else(|_| zeroed_words(words))?;
        }
        self.len = len;
        Ok(())
    }
    /// A buffer over `words` (for example, one recycled from an earlier
    /// batch) holding no bytes yet: gathers size it with [`AlignedBytes::reuse`].
    pub fn from_words(words: Vec<u64>) -> AlignedBytes {
        AlignedBytes { words, len: 0 }
    }
    /// Shorten to `len` bytes (keeps the allocation).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }
    /// The bytes, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Give up the buffer without copying: its 8-byte words (the bytes are
    /// the first `len()` of them, in memory order) and `len()`. For bindings
    /// that hand the allocation to another owner (a NumPy array).
    pub fn into_words(self) -> (Vec<u64>, usize) {
        (self.words, self.len)
    }
}

impl std::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBytes({} bytes)", self.len)
    }
}

/// An allocation the allocator refused, and its size. Sizes that come from
/// a caller (10^7 images of 12 KiB are 123 GB) must fail as errors: Rust's
/// infallible allocation would abort the process (a lost Jupyter kernel or
/// training job).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocFailed {
    /// Bytes asked for.
    pub bytes: u64,
}

impl AllocFailed {
    fn words(words: usize) -> AllocFailed {
        AllocFailed { bytes: (words as u64).saturating_mul(8) }
    }
    /// The crate's error for it: `what` (for example "a Dense batch of 10
    /// records") of `store` could not be allocated.
    pub fn error(self, store: &str, what: impl Into<String>) -> Error {
        Error::OutOfMemory { store: store.to_string(), what: what.into(), bytes: self.bytes }
    }
}

/// `words` zeroed words, from `calloc` (no page is touched until written),
/// or [`AllocFailed`].
pub fn zeroed_words(words: usize) -> Result<Vec<u64>, AllocFailed> {
    bytemuck::allocation::try_zeroed_vec(words).map_err(|()| AllocFailed::words(words))
}

/// `v` with room for `more` further items, or [`AllocFailed`] naming the
/// bytes they need (for per-record vectors whose length a caller chose).
pub fn try_room<T>(v: &mut Vec<T>, more: usize) -> Result<(), AllocFailed> {
    v.try_reserve(more)
        .map_err(|_| AllocFailed { bytes: (more as u64).saturating_mul(std::mem::size_of::<T>() as u64) })
}

/// A gathered Ragged batch: every payload in one aligned allocation, with
/// per-record offsets and shapes.
///
/// A batch is packed by default: payloads back to back, separated only by
/// the padding that aligns each for the dtype. One that allows gaps
/// ([`RaggedBatch::set_packed`]`(false)`) leaves each compressed record where
/// it was decoded, its shape prefix in the gap before its payload: every byte
/// is written once instead of decoded and then moved (for 256 images, 37 MB
/// less to move), which suits a caller that views each record on its own.
#[derive(Clone, Debug, Default)]
pub struct RaggedBatch {
    pub(crate) data: AlignedBytes,
    pub(crate) spans: Vec<Range<usize>>,
    pub(crate) dims: Vec<u64>,
    pub(crate) dim_starts: Vec<usize>,
    /// Gaps between records are allowed (not packed).
    pub(crate) gaps: bool,
}

impl RaggedBatch {
    /// An empty packed batch whose gathers fill `buffer` (kept when it is
    /// large enough, its old contents overwritten): a caller recycling
    /// buffers, or handing them on, passes one here and takes it back with
    /// [`RaggedBatch::take_values`].
    pub fn with_buffer(buffer: AlignedBytes) -> RaggedBatch {
        RaggedBatch { data: buffer, ..RaggedBatch::default() }
    }
    /// Whether later gathers must pack the records back to back (`true`, the
    /// default) or may leave gaps between them (see [`RaggedBatch`]).
    pub fn set_packed(&mut self, packed: bool) {
        self.gaps = !packed;
    }
    /// Number of records.
    pub fn len(&self) -> usize {
        self.spans.len()
    }
    /// Whether the batch holds no records.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
    /// Record `i`'s shape and payload bytes.
    ///
    /// # Panics
    /// If `i >= len()`, like slice indexing.
    pub fn record(&self, i: usize) -> (&[u64], &[u8]) {
        (self.shape(i), &self.data.as_slice()[self.spans[i].clone()])
    }
    /// Record `i`'s shape.
    pub fn shape(&self, i: usize) -> &[u64] {
        &self.dims[self.dim_starts[i]..self.dim_starts[i + 1]]
    }
    /// All payload bytes (records are aligned for the dtype, with padding
    /// between; in a batch with gaps, each record's shape prefix too).
    pub fn values(&self) -> &[u8] {
        self.data.as_slice()
    }
    /// Byte range of each record's payload inside `values()`.
    pub fn spans(&self) -> &[Range<usize>] {
        &self.spans
    }
    /// Give up the payload buffer without copying (read `spans` and shapes first).
    pub fn into_values(self) -> AlignedBytes {
        self.data
    }
    /// Take the payload buffer out without copying, keeping the spans and
    /// shapes readable (the batch's next gather starts a new buffer).
    pub fn take_values(&mut self) -> AlignedBytes {
        std::mem::take(&mut self.data)
    }
    /// Iterate `(shape, bytes)` per record.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u64], &[u8])> + '_ {
        (0..self.len()).map(|i| self.record(i))
    }

    /// The batch as NumPy and JavaScript callers take it, `(values, offsets,
    /// shapes)`: written once here for every binding.
    pub fn packed(&self, itemsize: usize) -> Packed {
        let itemsize = itemsize.max(1);
        let mut offsets = Vec::with_capacity(self.len() + 1);
        offsets.push(0u64);
        let mut items = 0u64;
        for s in &self.spans {
            items += (s.len() / itemsize) as u64;
            offsets.push(items);
        }
        let rank = (0..self.len()).map(|k| self.shape(k).len()).max().unwrap_or(0);
        let mut shapes = vec![-1i64; self.len() * rank];
        for (k, row) in shapes.chunks_mut(rank.max(1)).enumerate() {
            for (d, &s) in row.iter_mut().zip(self.shape(k)) {
                *d = s as i64;
            }
        }
        let back_to_back = self.spans.windows(2).all(|w| w[0].end == w[1].start);
        let contiguous = back_to_back
            .then(|| self.spans.first().map_or(0..0, |first| first.start..self.spans[self.len() - 1].end));
        Packed { offsets, rank, shapes, contiguous }
    }

    /// Every record's payload back to back into `out` (exactly the payload
    /// bytes: `packed(..).offsets`' last item times the item size), for a
    /// batch whose records are not already contiguous.
    ///
    /// # Panics
    /// When `out` is not exactly the payloads' total size.
    pub fn copy_values(&self, out: &mut [u8]) {
        let mut at = 0;
        for (_, bytes) in self.iter() {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        }
        assert_eq!(at, out.len(), "copy_values needs a buffer of the payloads' size");
    }
}

/// A Ragged batch's layout as `(values, offsets, shapes)` (see
/// [`RaggedBatch::packed`]): record `k` is items `offsets[k]..offsets[k + 1]`
/// of the values, of shape `shapes[k * rank..(k + 1) * rank]` (padded with -1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packed {
    /// `n + 1` item offsets.
    pub offsets: Vec<u64>,
    /// The largest record rank.
    pub rank: usize,
    /// `n * rank` dimensions, -1 past a record's own rank.
    pub shapes: Vec<i64>,
    /// Where the values already lie back to back in [`RaggedBatch::values`]
    /// (`None`: gather them with [`RaggedBatch::copy_values`]).
    pub contiguous: Option<Range<usize>>,
}

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
    /// Give up the buffer without copying (read `shape` first).
    pub fn into_bytes(self) -> AlignedBytes {
        self.data
    }
    /// Record `k`'s shape (`item_shape`) and bytes.
    ///
    /// # Panics
    /// If `k >= len()`, like slice indexing.
    pub fn record(&self, k: usize) -> (&[u64], &[u8]) {
        let row = self.bytes().len() / self.len().max(1);
        (&self.shape[1..], &self.bytes()[k * row..(k + 1) * row])
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

impl Batch {
    /// An empty batch of the kind `info`'s store gathers.
    pub fn for_store(info: &StoreInfo) -> Batch {
        match info.geometry() {
            Geometry::Dense { .. } => Batch::Dense(DenseBatch::new(info.dtype().clone())),
            Geometry::Ragged => Batch::Ragged(RaggedBatch::default()),
        }
    }

    /// Make `self` the kind of batch `info`'s store gathers, keeping its
    /// buffers when it already is.
    pub fn fit(&mut self, info: &StoreInfo) {
        let fits = matches!(
            (&*self, info.geometry()),
            (Batch::Dense(_), Geometry::Dense { .. }) | (Batch::Ragged(_), Geometry::Ragged)
        );
        if !fits {
            *self = Batch::for_store(info);
        }
    }

    /// Record `k`'s shape and payload bytes (no shape prefix).
    ///
    /// # Panics
    /// If `k >= len()`, like slice indexing.
    pub fn record(&self, k: usize) -> (&[u64], &[u8]) {
        match self {
            Batch::Dense(b) => b.record(k),
            Batch::Ragged(b) => b.record(k),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two records of u16: `[1, 2, 3]` of shape (3,) and `[4, 5]` of shape
    /// (1, 2), laid out at `starts` in the buffer.
    fn batch(starts: [usize; 2]) -> RaggedBatch {
        let mut data = AlignedBytes::zeroed(starts[1] + 4);
        let s = data.as_mut_slice();
        s[starts[0]..starts[0] + 6].copy_from_slice(&[1, 0, 2, 0, 3, 0]);
        s[starts[1]..starts[1] + 4].copy_from_slice(&[4, 0, 5, 0]);
        RaggedBatch {
            data,
            spans: vec![starts[0]..starts[0] + 6, starts[1]..starts[1] + 4],
            dims: vec![3, 1, 2],
            dim_starts: vec![0, 1, 3],
            gaps: false,
        }
    }

    #[test]
    fn packed_offsets_shapes_and_values() {
        for (starts, contiguous) in [([0, 6], Some(0..10)), ([0, 8], None), ([2, 8], Some(2..12))] {
            let b = batch(starts);
            let p = b.packed(2);
            assert_eq!(p.offsets, [0, 3, 5]);
            assert_eq!((p.rank, p.shapes.as_slice()), (2, &[3, -1, 1, 2][..]));
            assert_eq!(p.contiguous, contiguous, "{starts:?}");
            let mut values = vec![0u8; 10];
            b.copy_values(&mut values);
            assert_eq!(values, [1, 0, 2, 0, 3, 0, 4, 0, 5, 0]);
            if let Some(all) = p.contiguous {
                assert_eq!(&b.values()[all], &values[..]);
            }
        }
        let empty = RaggedBatch::default().packed(4);
        assert_eq!((empty.offsets, empty.rank, empty.contiguous), (vec![0], 0, Some(0..0)));
    }
}
