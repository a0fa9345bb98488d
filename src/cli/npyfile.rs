//! A `.npy` file opened for reading: memory-mapped, header validated
//! against the file's size, rows copied out in C order whatever the layout.

use super::common::{io_fail, shape_text, CliResult, Ctx, Fail};
use std::ops::Range;
use std::path::{Path, PathBuf};
use zrecord::convert::npy::{self, NpyHeader};
use zrecord::source::{mmap::MmapSource, ByteSource};
use zrecord::training::dict::{sample_indices, train_on, Tier};

pub struct NpyIn {
    pub path: PathBuf,
    map: MmapSource,
    pub header: NpyHeader,
    data_len: usize,
}

impl NpyIn {
    /// Map and check a `.npy` file: a parseable header, at least one
    /// dimension, and all the data the header announces (trailing bytes
    /// only earn a warning, as NumPy ignores them).
    pub fn open(ctx: &Ctx, path: &Path) -> CliResult<NpyIn> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| io_fail(path, "open", e))?;
        let meta = file.metadata().map_err(|e| io_fail(path, "stat", e))?;
        if !meta.is_file() {
            return Err(Fail::Msg(format!("{name}: not a regular file (expected a .npy file)")));
        }
        // SAFETY: the .npy file being imported is the user's input, which
        // nothing is expected to change while it is read; a changed file
        // gives wrong rows, as it would to NumPy's own np.load(mmap_mode).
        #[allow(unsafe_code)]
        let map = unsafe { MmapSource::new(&file) }.map_err(|e| io_fail(path, "mmap", e))?;
        let all = map.slice(0, map.size() as usize).unwrap_or(&[]);
        let header = npy::parse(&name, all)?;
        if header.shape.is_empty() {
            return Err(Fail::Msg(format!(
                "{name}: a 0-d array (one scalar) has no rows to store; save it with shape (1,)"
            )));
        }
        let data_len = header
            .data_bytes()
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| format!("{name}: shape {} is too large to address", shape_text(&header.shape)))?;
        let have = all.len() - header.data_offset;
        if have < data_len {
            return Err(Fail::Msg(format!(
                "{name}: truncated .npy file: shape {} of {} needs {data_len} bytes of data, the file holds {have}",
                shape_text(&header.shape),
                header.dtype
            )));
        }
        if have > data_len {
            ctx.warn(&format!("{name}: {} bytes after the array data are ignored", have - data_len));
        }
        Ok(NpyIn { path: path.to_path_buf(), map, header, data_len })
    }

    /// The array data as stored (C or Fortran order).
    pub fn data(&self) -> &[u8] {
        self.map.slice(self.header.data_offset as u64, self.data_len).unwrap_or(&[])
    }
    /// Length along axis 0.
    pub fn rows(&self) -> u64 {
        self.header.shape[0]
    }
    /// Shape of one row (empty for a 1-D array: scalar rows).
    pub fn item_shape(&self) -> &[u64] {
        &self.header.shape[1..]
    }
    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.item_shape().iter().product::<u64>() as usize * self.header.dtype.itemsize()
    }
    /// Whether a Fortran-ordered array must be transposed (it has more than one non-trivial axis).
    fn transposed(&self) -> bool {
        self.header.fortran_order && self.header.shape.iter().filter(|&&d| d > 1).count() > 1
    }

    /// Rows `range` in C order: borrowed from the map for a C-ordered array,
    /// copied into `buf` for a Fortran-ordered one.
    pub fn rows_c<'a>(&'a self, range: Range<u64>, buf: &'a mut Vec<u8>) -> &'a [u8] {
        let row = self.row_bytes();
        let (a, b) = (range.start as usize * row, range.end as usize * row);
        if !self.transposed() {
            return &self.data()[a..b];
        }
        buf.resize(b - a, 0);
        npy::fortran_rows_to_c(self.data(), &self.header.shape, self.header.dtype.itemsize(), range, buf);
        buf
    }

    /// Train a dictionary from the rows, sampled as loaderx's `train_dict` samples an array.
    pub fn train_dict(&self, tier: Tier) -> CliResult<Vec<u8>> {
        let picks = sample_indices(self.rows(), self.row_bytes() as u64, tier.budget() as u64);
        let mut buf = Vec::new();
        let samples: Vec<Vec<u8>> = picks.iter().map(|&i| self.rows_c(i..i + 1, &mut buf).to_vec()).collect();
        Ok(train_on(samples.iter().map(Vec::as_slice), tier)?)
    }
}
