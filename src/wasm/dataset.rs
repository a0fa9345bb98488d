//! `Dataset`: a dataset's manifest read over HTTP, and each column gathered
//! like a `Store` across its shards (opened on first touch, by the shared
//! async driver [`crate::dataset::remote`]).
//!
//! ```js
//! const ds = await Dataset.open("https://example.org/datasets/train/");  // 2 requests
//! ds.shardOf(7);                                   // 2
//! const { values, offsets, shapes } = await ds.column("tokens").gather([7, 0]);
//! ```

use super::fetch::FetchClient;
use super::js::{aborted, invalid, js_error};
use super::{
    batch_js, http_client, index_of, indices_of, kind_name, number, remote_options, run, set, shape_array,
    signal_of,
};
use crate::dataset::concat::Concat;
use crate::dataset::layout::MANIFEST;
use crate::dataset::manifest::ColumnKind;
use crate::dataset::remote::{load_manifest, RemoteColumn};
use crate::format::Verify;
use crate::remote::{
    cancellable, HttpError, HttpGet, HttpRanges, HttpRequest, HttpResponse, LocalBoxFuture, Retry,
};
use crate::{Batch, Result};
use js_sys::{Array, Object, Promise};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::prelude::*;

/// Requests and body bytes one part of a dataset spent: the manifest reads,
/// or one column's shards (so the viewer's counters add up without overlap).
#[derive(Clone, Default)]
struct Counts(Rc<Cell<(u64, u64)>>);

/// The fetch client, counting what it sends and receives.
#[derive(Clone)]
struct Counted {
    inner: FetchClient,
    counts: Counts,
}

impl HttpGet for Counted {
    fn get(&self, req: HttpRequest) -> LocalBoxFuture<'_, std::result::Result<HttpResponse, HttpError>> {
        Box::pin(async move {
            let got = self.inner.get(req).await;
            let (n, bytes) = self.counts.0.get();
            let body = got.as_ref().map_or(0, |r| r.body.len() as u64);
            self.counts.0.set((n + 1, bytes + body));
            got
        })
    }
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()> {
        self.inner.sleep(duration)
    }
}

type Transport = HttpRanges<Counted>;
/// Opens the transport of a shard's store, by its path below the root.
type Open = Box<dyn Fn(&str) -> Result<Transport>>;
type Column = RemoteColumn<Transport, Open>;

/// A dataset opened over HTTP(S): its manifest, and its columns.
#[wasm_bindgen(js_name = Dataset)]
pub struct JsDataset {
    concat: Arc<Concat>,
    columns: Vec<JsDatasetColumn>,
    counts: Counts,
}

/// One column of a [`JsDataset`], read like a `Store`.
#[wasm_bindgen(js_name = DatasetColumn)]
#[derive(Clone)]
pub struct JsDatasetColumn {
    column: Rc<Column>,
    counts: Counts,
    checked: bool,
}

/// The dataset root's URL from a root or its manifest's URL.
fn root_url(url: &str) -> String {
    let (path, query) = url.split_once('?').map_or((url, None), |(p, q)| (p, Some(q)));
    let path = path.strip_suffix(MANIFEST).unwrap_or(path);
    match query {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    }
}

#[wasm_bindgen(js_class = Dataset)]
impl JsDataset {
    /// Open the dataset at `url` (its root, or its `zrecord.json`): reads
    /// the manifest and looks for a newer version (two requests); shards
    /// open on first touch. Options as for `Store.open`, plus `version` (a
    /// committed version to read instead of the newest).
    pub async fn open(
        url: String,
        #[wasm_bindgen(unchecked_optional_param_type = "OpenOptions & { version?: number }")] options: Option<
            JsValue,
        >,
    ) -> std::result::Result<JsDataset, JsValue> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let client = http_client(&url, &options)?;
        let opts = remote_options(&options)?;
        let version = number(&options, "version")?.map(|v| v as u64);
        let retry = Retry { retries: opts.retries, backoff: opts.backoff };
        let url = root_url(&url);
        let transport = |counts: &Counts| {
            HttpRanges::new(Counted { inner: client.clone(), counts: counts.clone() }, &url, retry)
        };
        let counts = Counts::default();
        let root = transport(&counts);
        let manifest = cancellable(load_manifest(&root, version), aborted(signal_of(&options)?))
            .await
            .map_err(js_error)?;
        let concat = Arc::new(Concat::new(root.base(), Arc::new(manifest)));
        let mut columns = Vec::new();
        for (k, spec) in concat.manifest.columns.iter().enumerate() {
            let counts = Counts::default();
            let base = transport(&counts);
            let open: Open = Box::new(move |path| Ok(base.child(path)));
            let column = RemoteColumn::new(concat.clone(), k, opts.clone(), open).map_err(js_error)?;
            let sealed = concat.manifest.shards.iter().all(|s| s.columns[&spec.name].sums.is_some());
            let checked = match opts.verify {
                Verify::Off => false,
                Verify::IfSealed => sealed,
                Verify::Always => true,
            };
            columns.push(JsDatasetColumn { column: Rc::new(column), counts, checked });
        }
        Ok(JsDataset { concat, columns, counts })
    }

    /// The dataset root's URL (ending in `/`).
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> String {
        self.concat.name.clone()
    }
    /// Records in all shards.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> f64 {
        self.concat.len() as f64
    }
    /// The committed version read.
    #[wasm_bindgen(getter)]
    pub fn version(&self) -> f64 {
        self.concat.manifest.version as f64
    }

    /// The columns: `[{name, kind, dtype, itemShape, codec}]`.
    #[wasm_bindgen(getter, unchecked_return_type = "DatasetColumnInfo[]")]
    pub fn columns(&self) -> Array {
        self.columns.iter().map(|c| JsValue::from(c.describe())).collect()
    }

    /// The shards in order: `[{path, length, start}]` (`start`: the global
    /// index of the shard's first record).
    #[wasm_bindgen(getter, unchecked_return_type = "DatasetShard[]")]
    pub fn shards(&self) -> Array {
        let m = &self.concat.manifest;
        m.shards
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let o = Object::new();
                set(&o, "path", s.path.as_str());
                set(&o, "length", s.length as f64);
                set(&o, "start", self.concat.start(k) as f64);
                JsValue::from(o)
            })
            .collect()
    }

    /// The position (in `shards`) of the shard holding global record `index`.
    #[wasm_bindgen(js_name = shardOf)]
    pub fn shard_of(&self, index: f64) -> std::result::Result<f64, JsValue> {
        let i = index_of(index)?;
        if i >= self.concat.len() {
            return Err(invalid(format!(
                "index {i} is out of range (the dataset holds {})",
                self.concat.len()
            )));
        }
        Ok(self.concat.locate(i).0 as f64)
    }

    /// Column `name` (or its position) as a `DatasetColumn`.
    pub fn column(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string | number")] which: JsValue,
    ) -> std::result::Result<JsDatasetColumn, JsValue> {
        let k = match (which.as_string(), which.as_f64()) {
            (Some(name), _) => self.concat.manifest.column_index(&name),
            (None, Some(n)) if n >= 0.0 && n.fract() == 0.0 => Some(n as usize),
            _ => None,
        };
        k.and_then(|k| self.columns.get(k))
            .cloned()
            .ok_or_else(|| invalid(format!("the dataset has no column {which:?}")))
    }

    /// Requests and bytes spent reading the manifest: `{requests, bytes}`
    /// (each column counts its own).
    #[wasm_bindgen(unchecked_return_type = "{ requests: number; bytes: number }")]
    pub fn stats(&self) -> Object {
        self.counts.stats()
    }
}

impl Counts {
    fn stats(&self) -> Object {
        let (n, bytes) = self.0.get();
        let o = Object::new();
        set(&o, "requests", n as f64);
        set(&o, "bytes", bytes as f64);
        o
    }
}

impl JsDatasetColumn {
    fn describe(&self) -> Object {
        let spec = self.column.spec();
        let o = Object::new();
        set(&o, "name", spec.name.as_str());
        set(&o, "kind", if spec.kind == ColumnKind::Dense { "dense" } else { "ragged" });
        set(&o, "dtype", spec.dtype.as_str());
        set(&o, "itemShape", self.item_shape());
        set(&o, "codec", spec.codec.as_str());
        if let Some(arrow) = &spec.arrow {
            set(&o, "arrow", arrow.as_str());
        }
        o
    }
}

/// The calls the viewer makes on a `Store`, with the same answers.
#[wasm_bindgen(js_class = DatasetColumn)]
impl JsDatasetColumn {
    /// The Arrow type the column was written from (`string`, `binary`, ...),
    /// when it was: the viewer shows a `string` column's records as text.
    #[wasm_bindgen(getter)]
    pub fn arrow(&self) -> Option<String> {
        self.column.spec().arrow.clone()
    }

    /// The column's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.column.spec().name.clone()
    }
    /// Records in all shards.
    #[wasm_bindgen(getter)]
    pub fn len(&self) -> f64 {
        self.column.concat().len() as f64
    }
    /// `"dense"` or `"ragged"`.
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        kind_name(self.column.core().info().geometry()).into()
    }
    /// NumPy dtype string.
    #[wasm_bindgen(getter)]
    pub fn dtype(&self) -> String {
        self.column.spec().dtype.clone()
    }
    /// `item_shape` of a Dense column, `null` for Ragged.
    #[wasm_bindgen(getter, js_name = itemShape, unchecked_return_type = "number[] | null")]
    pub fn item_shape(&self) -> JsValue {
        self.column.core().info().item_shape().map_or(JsValue::NULL, |s| shape_array(s).into())
    }
    /// `"raw"`, `"zstd"` or `"zstd_dict"`.
    #[wasm_bindgen(getter)]
    pub fn codec(&self) -> String {
        self.column.spec().codec.clone()
    }
    /// Whether gathers check records against the shards' checksum sidecars.
    #[wasm_bindgen(getter)]
    pub fn checked(&self) -> bool {
        self.checked
    }
    /// How many of its shards are open.
    #[wasm_bindgen(getter, js_name = openShards)]
    pub fn open_shards(&self) -> f64 {
        self.column.open_shards() as f64
    }

    /// `{url, name, len, kind, dtype, itemShape, codec, shards}`.
    pub fn info(&self) -> Object {
        let o = self.describe();
        set(&o, "url", self.column.concat().name.as_str());
        set(&o, "len", self.len());
        set(&o, "shards", self.column.concat().manifest.shards.len() as f64);
        o
    }

    /// Requests and bytes this column's shards cost: `{requests, bytes}`.
    #[wasm_bindgen(unchecked_return_type = "{ requests: number; bytes: number }")]
    pub fn stats(&self) -> Object {
        self.counts.stats()
    }

    /// Gather records by global index, as `Store.gather` (shards opened on
    /// first touch). Options: `signal`.
    #[wasm_bindgen(unchecked_return_type = "Promise<DenseBatch | RaggedBatch>")]
    pub fn gather(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ArrayLike<number | bigint> | Iterable<number | bigint>")]
        indices: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CallOptions")] options: Option<JsValue>,
    ) -> Promise {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let indices = match indices_of(&indices) {
            Ok(i) => i,
            Err(e) => return Promise::reject(&e),
        };
        let column = self.column.clone();
        run(&options, async move {
            let info = column.core().info();
            let mut batch = Batch::for_store(info);
            column.gather_batch_into(&indices, &mut batch).await?;
            Ok(batch_js(info.dtype(), &batch))
        })
    }
}

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
export interface DatasetColumnInfo {
  name: string; kind: "dense" | "ragged"; dtype: string; itemShape: number[] | null;
  codec: "raw" | "zstd" | "zstd_dict";
}
export interface DatasetShard { path: string; length: number; start: number; }
"#;
