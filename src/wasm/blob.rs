//! Local files (`File`/`Blob`, e.g. a directory picked with
//! `<input type=file webkitdirectory>`) as a range-read transport: no HTTP
//! in between, just slices of the files.

use super::js::describe;
use crate::format::StoreFile;
use crate::remote::{LocalBoxFuture, RangeRead, Ranged, ReadRequest};
use crate::{Error, Result};
use js_sys::Uint8Array;
use wasm_bindgen_futures::JsFuture;
use web_sys::Blob;

/// A store's files picked from the local disk.
pub(super) struct BlobFiles {
    /// The store's name in errors (`local:<folder>/`).
    pub name: String,
    pub files: Vec<(StoreFile, Blob)>,
}

impl BlobFiles {
    async fn read_blob(&self, req: ReadRequest) -> Result<Ranged> {
        let Some((_, blob)) = self.files.iter().find(|(f, _)| *f == req.file) else {
            return Err(Error::NotFound {
                store: self.locate(req.file),
                what: "not among the files picked".into(),
            });
        };
        let total = blob.size() as u64;
        if req.range.start >= total {
            return Ok(Ranged { bytes: Vec::new(), total, version: None });
        }
        let end = req.range.end.min(total);
        let failed =
            |e: wasm_bindgen::JsValue| Error::Remote { url: self.locate(req.file), why: describe(&e) };
        let part = blob.slice_with_f64_and_f64(req.range.start as f64, end as f64).map_err(failed)?;
        let buf = JsFuture::from(part.array_buffer()).await.map_err(failed)?;
        Ok(Ranged { bytes: Uint8Array::new(&buf).to_vec(), total, version: None })
    }
}

impl RangeRead for BlobFiles {
    fn read(&self, req: ReadRequest) -> LocalBoxFuture<'_, Result<Ranged>> {
        Box::pin(self.read_blob(req))
    }
    fn locate(&self, file: StoreFile) -> String {
        format!("{}{file}", self.name)
    }
    fn name(&self) -> String {
        self.name.clone()
    }
}
