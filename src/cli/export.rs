//! `zrecord export STORE OUT.npy` (Dense) and
//! `zrecord export STORE VALUES.npy OFFSETS.npy` (Ragged of 1-D records).
//!
//! A Dense store becomes one C-ordered array of shape `(len, *item_shape)`.
//! A Ragged store becomes the flat values (the store's dtype, 1-D) and
//! `len + 1` boundaries as little-endian int64 (`<i8`): NumPy's default
//! index type, what `np.cumsum` of lengths gives, and what `import ragged`
//! reads back. Records are written with the store's dtype and byte order,
//! never converted. Outputs must not exist; on failure they are removed.
//!
//! A dataset's `--column` exports like a store; without it, OUT is a new
//! directory receiving every column: `NAME.npy` (Dense) or
//! `NAME.values.npy` and `NAME.offsets.npy` (Ragged).

use super::common::{io_fail, shape_text, size, Cleanup, CliResult, Ctx, Fail, Out};
use super::records::{self, for_each_chunk, DatasetArgs, Target};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use zrecord::convert::npy;
use zrecord::Records;
use zrecord::{Batch, DType, Geometry};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store directory, or its URL (s3://, gs://, az://, http(s)://).
    store: PathBuf,
    /// Output .npy (Dense), or the values .npy (Ragged).
    out: PathBuf,
    /// Offsets .npy (Ragged stores only).
    offsets: Option<PathBuf>,
    #[command(flatten)]
    dataset: DatasetArgs,
}

pub fn run(ctx: &Ctx, a: Args) -> CliResult {
    let target = records::open_target(&a.store, &a.dataset)?;
    if let (Target::Dataset(ds), None) = (&target, &a.dataset.column) {
        if a.offsets.is_some() {
            return Err(Fail::Msg(format!(
                "{}: a dataset exports every column into one new directory: zrecord export DATASET OUT_DIR \
                 (or one column with --column NAME)",
                a.store.display()
            )));
        }
        return every_column(ctx, ds, &a.out);
    }
    let store = target.one(a.dataset.column.as_deref(), "export")?;
    match (store.geometry(), &a.offsets) {
        (Geometry::Dense { .. }, None) => dense(ctx, store, &a.out),
        (Geometry::Ragged, Some(offsets)) => ragged(ctx, store, &a.out, offsets),
        (Geometry::Dense { .. }, Some(_)) => Err(Fail::Msg(format!(
            "{}: a Dense store exports to one .npy file; drop the OFFSETS argument",
            a.store.display()
        ))),
        (Geometry::Ragged, None) => Err(Fail::Msg(format!(
            "{}: a Ragged store exports to two files: zrecord export STORE VALUES.npy OFFSETS.npy",
            a.store.display()
        ))),
    }
}

/// Every column of `ds` into the new directory `dir`.
fn every_column(ctx: &Ctx, ds: &zrecord::Dataset, dir: &Path) -> CliResult {
    let claim = Cleanup::store(dir)?;
    std::fs::create_dir_all(dir).map_err(|e| io_fail(dir, "create", e))?;
    for (spec, column) in ds.specs().iter().zip(ds.columns().iter().map(|c| &**c)) {
        match column.geometry() {
            Geometry::Dense { .. } => dense(ctx, column, &dir.join(format!("{}.npy", spec.name)))?,
            Geometry::Ragged => ragged(
                ctx,
                column,
                &dir.join(format!("{}.values.npy", spec.name)),
                &dir.join(format!("{}.offsets.npy", spec.name)),
            )?,
        }
    }
    claim.keep();
    Ok(())
}

struct NpyOut {
    path: PathBuf,
    w: BufWriter<File>,
    cleanup: Cleanup,
    written: u64,
}

impl NpyOut {
    fn claim(path: &Path) -> CliResult<Cleanup> {
        Cleanup::file(path)
    }
    fn create(path: &Path, cleanup: Cleanup, header: &[u8]) -> CliResult<NpyOut> {
        let file = cleanup.create_file()?;
        let mut out = NpyOut {
            path: path.to_path_buf(),
            w: BufWriter::with_capacity(1 << 20, file),
            cleanup,
            written: 0,
        };
        out.write(header)?;
        Ok(out)
    }
    fn write(&mut self, bytes: &[u8]) -> CliResult {
        self.written += bytes.len() as u64;
        self.w.write_all(bytes).map_err(|e| io_fail(&self.path, "write", e))
    }
    /// Flush and optionally rewrite the header in place; the caller keeps
    /// the file with the returned `Cleanup` once every output is complete.
    fn finish(self, header: Option<&[u8]>) -> CliResult<(u64, Cleanup)> {
        let file = self.w.into_inner().map_err(|e| io_fail(&self.path, "write", e.into_error()))?;
        if let Some(h) = header {
            file.write_all_at(h, 0).map_err(|e| io_fail(&self.path, "write", e))?;
        }
        Ok((self.written, self.cleanup))
    }
}

fn dense(ctx: &Ctx, store: &dyn Records, out: &Path) -> CliResult {
    let claim = NpyOut::claim(out)?;
    let mut shape = vec![store.len()];
    if let Geometry::Dense { item_shape } = store.geometry() {
        shape.extend(item_shape);
    }
    let mut file = NpyOut::create(out, claim, &npy::encode_header(store.dtype(), false, &shape))?;
    let bar = ctx.bar(store.len(), "export");
    for_each_chunk(store, 0..store.len(), |chunk| {
        if let Batch::Dense(b) = &chunk.batch {
            file.write(b.bytes())?;
        }
        bar.inc(chunk.len() as u64);
        Ok(())
    })?;
    let (bytes, done) = file.finish(None)?;
    done.keep();
    bar.finish_and_clear();
    Out::new().line(&format!(
        "{}: array of shape {} {}, {}",
        out.display(),
        shape_text(&shape),
        store.dtype(),
        size(bytes)
    ))
}

fn ragged(ctx: &Ctx, store: &dyn Records, values_path: &Path, offsets_path: &Path) -> CliResult {
    if values_path == offsets_path {
        return Err("VALUES.npy and OFFSETS.npy must be two different files".into());
    }
    let dtype: &DType = store.dtype();
    let values_claim = NpyOut::claim(values_path)?;
    let offsets_claim = NpyOut::claim(offsets_path)?;
    // The values' count is known at the end: reserve a header long enough for any count.
    let reserve = npy::encode_header(dtype, false, &[u64::MAX]);
    let mut values = NpyOut::create(values_path, values_claim, &reserve)?;
    let i8 = DType::parse("<i8").expect("valid dtype");
    let mut offsets =
        NpyOut::create(offsets_path, offsets_claim, &npy::encode_header(&i8, false, &[store.len() + 1]))?;
    offsets.write(&0i64.to_le_bytes())?;
    let mut total = 0u64;
    let bar = ctx.bar(store.len(), "export");
    for_each_chunk(store, 0..store.len(), |chunk| {
        for k in 0..chunk.len() {
            let (shape, bytes) = chunk.record(k);
            let [n] = shape else {
                return Err(Fail::Msg(format!(
                    "{}: record {} has shape {}; exporting a Ragged store to VALUES/OFFSETS needs 1-D records",
                    store.name(),
                    chunk.range.start + k as u64,
                    shape_text(shape)
                )));
            };
            values.write(bytes)?;
            total += n;
            offsets.write(&(total as i64).to_le_bytes())?;
        }
        bar.inc(chunk.len() as u64);
        Ok(())
    })?;
    let header = npy::encode_header_min(dtype, false, &[total], reserve.len());
    let (value_bytes, values_done) = values.finish(Some(&header))?;
    let (_, offsets_done) = offsets.finish(None)?;
    values_done.keep();
    offsets_done.keep();
    bar.finish_and_clear();
    Out::new().line(&format!(
        "{}: {total} values of {dtype}, {}; {}: {} offsets (<i8)",
        values_path.display(),
        size(value_bytes),
        offsets_path.display(),
        store.len() + 1
    ))
}
