//! The JavaScript API (wasm-bindgen); the browser transports live beside it.
//!
//! The only module that knows about JavaScript: `Store` (open by URL or from
//! local `File`s, gather, get, locs, stats), `Dataset` (beside it, in
//! `dataset.rs`: a manifest and its columns over shards) and the conversion
//! of errors into JS `Error`s. Its transports sit beside it: `fetch` as an HTTP client
//! under [`crate::remote::HttpRanges`], and local `Blob`s as a plain range
//! read. Everything it serves comes from the shared async driver in
//! [`crate::remote`].
//!
//! ```js
//! import init, { Store } from "./pkg/zrecord.js";
//! await init();
//! const store = await Store.open("https://example.org/stores/train/");
//! const { data, shape } = await store.gather([3, 1, 4]);   // Float32Array, [3, ...itemShape]
//! ```

mod blob;
mod dataset;
mod fetch;
mod js;

use crate::format::{ByteOrder, DType, Geometry, Kind, StoreFile, Verify};
use crate::location::Location;
use crate::remote::{cancellable, HttpRanges, RangeRead, RemoteOptions, RemoteStore, Retry};
use crate::Batch;
use crate::Error;
use blob::BlobFiles;
pub use dataset::{JsDataset, JsDatasetColumn};
use fetch::FetchClient;
use js::{aborted, global_fn, invalid, js_error};
use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::future_to_promise;
use web_sys::{AbortSignal, Blob, Headers};

type Shared = Rc<RemoteStore<Box<dyn RangeRead>>>;

fn get(obj: &JsValue, key: &str) -> Option<JsValue> {
    if obj.is_undefined() || obj.is_null() {
        return None;
    }
    Reflect::get(obj, &key.into()).ok().filter(|v| !v.is_undefined() && !v.is_null())
}

fn number(obj: &JsValue, key: &str) -> Result<Option<f64>, JsValue> {
    match get(obj, key) {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n)),
            _ => Err(invalid(format!("option {key} must be a non-negative number"))),
        },
    }
}

fn signal_of(options: &JsValue) -> Result<Option<AbortSignal>, JsValue> {
    match get(options, "signal") {
        None => Ok(None),
        Some(s) => {
            s.dyn_into::<AbortSignal>().map(Some).map_err(|_| invalid("option signal must be an AbortSignal"))
        }
    }
}

/// Reader options from a JS object (`maxGap`, `maxRequest`, `concurrency`,
/// `cachePages`, `retries`, `backoffMs`, `ifMatch`, `verify`).
fn remote_options(options: &JsValue) -> Result<RemoteOptions, JsValue> {
    let mut o = RemoteOptions::browser();
    if let Some(n) = number(options, "maxGap")? {
        o.max_gap = n as u64;
    }
    if let Some(n) = number(options, "maxRequest")? {
        o.max_request = n as u64;
    }
    if let Some(n) = number(options, "concurrency")? {
        o.concurrency = (n as usize).max(1);
    }
    if let Some(n) = number(options, "cachePages")? {
        o.cache_pages = (n as usize).max(1);
    }
    if let Some(n) = number(options, "retries")? {
        o.retries = n as u32;
    }
    if let Some(n) = number(options, "backoffMs")? {
        o.backoff = Duration::from_secs_f64(n / 1000.0);
    }
    if let Some(v) = get(options, "verify") {
        o.verify = match v.as_bool() {
            Some(true) => Verify::Always,
            Some(false) => Verify::Off,
            None => v
                .as_string()
                .ok_or_else(|| {
                    invalid("option verify must be a boolean or \"off\", \"if-sealed\", \"always\"")
                })?
                .parse()
                .map_err(invalid)?,
        };
    }
    if let Some(v) = get(options, "ifMatch") {
        o.if_match = v.is_truthy();
    }
    Ok(o)
}

/// Extra headers from a plain object or a `Headers`.
fn extra_headers(options: &JsValue) -> Result<Vec<(String, String)>, JsValue> {
    let Some(h) = get(options, "headers") else {
        return Ok(Vec::new());
    };
    let entries: JsValue = match h.dyn_ref::<Headers>() {
        Some(headers) => Array::from(&headers.entries()).into(),
        None => Object::entries(
            h.dyn_ref::<Object>().ok_or_else(|| invalid("option headers must be an object or a Headers"))?,
        )
        .into(),
    };
    let mut out = Vec::new();
    for pair in Array::from(&entries).iter() {
        let pair = Array::from(&pair);
        match (pair.get(0).as_string(), pair.get(1).as_string()) {
            (Some(k), Some(v)) => out.push((k, v)),
            _ => return Err(invalid("header names and values must be strings")),
        }
    }
    Ok(out)
}

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
/** Options of `Store.open` (all optional). */
export interface OpenOptions {
  /** Extra headers sent with every request (a CORS preflight follows for non-safelisted ones). */
  headers?: Record<string, string> | Headers;
  /** A fetch-compatible function used instead of the global fetch. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  /** Aborts the open. */
  signal?: AbortSignal;
  /** Per-request time limit in ms (default 30000; 0 for none). */
  timeoutMs?: number;
  /** Merge record ranges at most this many bytes apart (default 65536). */
  maxGap?: number;
  /** Largest merged request in bytes (default 8 MiB). */
  maxRequest?: number;
  /** Requests in flight (default 6). */
  concurrency?: number;
  /** Location pages (64 KiB, 4096 records) kept cached (default 64). */
  cachePages?: number;
  /** Retries of transient failures (default 3). */
  retries?: number;
  /** First retry delay in ms, doubled each time (default 200). */
  backoffMs?: number;
  /** Send If-Match with the first ETag (default false; costs a CORS preflight). */
  ifMatch?: boolean;
  /** Check every gathered record against the store's sums.zr sidecar: true or "always" (an unsealed
   * store fails to open), "if-sealed" (only when it has one), false or "off" (default). */
  verify?: boolean | "off" | "if-sealed" | "always";
}
/** Options of a single call. */
export interface CallOptions { signal?: AbortSignal; }
/** Local files: a FileList / File[] named meta.zr, data.zr (dict.zr), or Blobs by role. */
export type LocalFiles = FileList | File[] | { meta: Blob; data: Blob; dict?: Blob; sums?: Blob };
export type Elements = Uint8Array | Int8Array | Int16Array | Uint16Array | Int32Array |
  Uint32Array | Float32Array | Float64Array | BigInt64Array | BigUint64Array;
/** A gathered Dense batch: `data` holds `shape` in C order (raw bytes for dtypes JS has no array for). */
export interface DenseBatch { data: Elements; shape: number[]; dtype: string; }
/** A gathered Ragged batch: record k is `values.subarray(offsets[k], offsets[k + 1])` of shape `shapes[k]`. */
export interface RaggedBatch { values: Elements; offsets: Uint32Array; shapes: number[][]; dtype: string; }
/** One record. */
export interface StoreRecord { data: Elements; shape: number[]; dtype: string; }
/** Record locations: byte offset in data.zr, stored and decoded lengths. */
export interface Locs { offset: Float64Array; phys: Uint32Array; logic: Uint32Array; }
export interface FileSizes { meta: number; data: number | null; dict: number | null; }
export interface StoreStats {
  requests: number; bytes: number; retries: number; metaRequests: number; dataRequests: number;
  dictRequests: number; sumsRequests: number; pageHits: number; pageMisses: number; cachedPages: number;
}
export interface StoreInfo {
  url: string; len: number; kind: "dense" | "ragged"; dtype: string; itemShape: number[] | null;
  codec: "raw" | "zstd" | "zstd_dict"; tailOffset: number; schemaLength: number;
  schema: Uint8Array; fileSizes: FileSizes;
}
"#;

/// A store, opened over HTTP(S) or from local files.
#[wasm_bindgen(js_name = Store)]
pub struct JsStore {
    inner: Shared,
}

fn kind_name(g: &Geometry) -> &'static str {
    match g {
        Geometry::Dense { .. } => "dense",
        Geometry::Ragged => "ragged",
    }
}

fn shape_array(shape: &[u64]) -> Array {
    shape.iter().map(|&d| JsValue::from(d as f64)).collect()
}

/// The JavaScript view of a dtype: the TypedArray matching it where
/// JavaScript has one (little-endian numbers, bool as bytes), raw bytes
/// otherwise (big-endian, float16, complex, strings, void).
#[derive(Clone, Copy, PartialEq, Eq)]
enum View {
    Bytes,
    I8,
    I16,
    U16,
    I32,
    U32,
    F32,
    F64,
    I64,
    U64,
}

impl View {
    fn of(dtype: &DType) -> View {
        let le = dtype.byte_order() == ByteOrder::Little;
        match (dtype.kind(), dtype.itemsize(), le) {
            (Kind::Int, 1, _) => View::I8,
            (Kind::Int, 2, true) => View::I16,
            (Kind::UInt, 2, true) => View::U16,
            (Kind::Int, 4, true) => View::I32,
            (Kind::UInt, 4, true) => View::U32,
            (Kind::Float, 4, true) => View::F32,
            (Kind::Float, 8, true) => View::F64,
            (Kind::Int | Kind::Datetime | Kind::Timedelta, 8, true) => View::I64,
            (Kind::UInt, 8, true) => View::U64,
            _ => View::Bytes,
        }
    }

    /// Bytes per element of the view.
    fn size(self) -> usize {
        match self {
            View::Bytes | View::I8 => 1,
            View::I16 | View::U16 => 2,
            View::I32 | View::U32 | View::F32 => 4,
            View::F64 | View::I64 | View::U64 => 8,
        }
    }
}

/// A fresh TypedArray (see [`View`]) holding a copy of `bytes`.
fn typed_array(dtype: &DType, bytes: &[u8]) -> JsValue {
    let raw = Uint8Array::new_with_length(bytes.len() as u32);
    raw.copy_from(bytes);
    let buf = raw.buffer();
    match View::of(dtype) {
        View::Bytes => raw.into(),
        View::I8 => js_sys::Int8Array::new(&buf).into(),
        View::I16 => js_sys::Int16Array::new(&buf).into(),
        View::U16 => js_sys::Uint16Array::new(&buf).into(),
        View::I32 => js_sys::Int32Array::new(&buf).into(),
        View::U32 => js_sys::Uint32Array::new(&buf).into(),
        View::F32 => js_sys::Float32Array::new(&buf).into(),
        View::F64 => js_sys::Float64Array::new(&buf).into(),
        View::I64 => js_sys::BigInt64Array::new(&buf).into(),
        View::U64 => js_sys::BigUint64Array::new(&buf).into(),
    }
}

fn set(obj: &Object, key: &str, value: impl Into<JsValue>) {
    let _ = Reflect::set(obj, &key.into(), &value.into());
}

fn opt_number(v: Option<u64>) -> JsValue {
    v.map_or(JsValue::NULL, |n| JsValue::from(n as f64))
}

/// Indices from an Array of numbers/BigInts or any typed array.
fn indices_of(value: &JsValue) -> Result<Vec<u64>, JsValue> {
    if let Some(a) = value.dyn_ref::<js_sys::Uint32Array>() {
        return Ok(a.to_vec().into_iter().map(u64::from).collect());
    }
    if let Some(a) = value.dyn_ref::<js_sys::BigUint64Array>() {
        return Ok(a.to_vec());
    }
    let bad = || invalid("indices must be non-negative integers (an Array or a typed array)");
    let iter = js_sys::try_iter(value).map_err(|_| bad())?.ok_or_else(bad)?;
    let mut out = Vec::new();
    for v in iter {
        let v = v?;
        let i = if let Some(n) = v.as_f64() {
            if !(n >= 0.0 && n.fract() == 0.0 && n < 18_446_744_073_709_551_616.0) {
                return Err(bad());
            }
            n as u64
        } else if v.is_bigint() {
            let text = String::from(js_sys::BigInt::from(v).to_string(10).map_err(|_| bad())?);
            text.parse::<u64>().map_err(|_| bad())?
        } else {
            return Err(bad());
        };
        out.push(i);
    }
    Ok(out)
}

fn index_of(value: f64) -> Result<u64, JsValue> {
    if value >= 0.0 && value.fract() == 0.0 && value <= 9_007_199_254_740_992.0 {
        Ok(value as u64)
    } else {
        Err(invalid("an index must be a non-negative integer"))
    }
}

/// Run `work` as a Promise, rejected with `Cancelled` if `options.signal` aborts.
fn run<F>(options: &JsValue, work: F) -> Promise
where
    F: Future<Output = Result<JsValue, Error>> + 'static,
{
    let signal = match signal_of(options) {
        Ok(s) => s,
        Err(e) => return Promise::reject(&e),
    };
    future_to_promise(async move { cancellable(work, aborted(signal)).await.map_err(js_error) })
}

/// The fetch client for `url` from the options (`fetch`, `headers`,
/// `timeoutMs`); refuses bucket URLs, which a page cannot sign.
fn http_client(url: &str, options: &JsValue) -> Result<FetchClient, JsValue> {
    // The core's scheme table: http(s):// and page-relative URLs are
    // fetched; a bucket URL needs signed requests, which a page cannot make.
    if let Location::Bucket { .. } = Location::parse(url).map_err(js_error)? {
        return Err(js_error(Error::InvalidArgument {
            store: url.to_string(),
            why: "a browser cannot sign bucket requests; open the bucket's https:// URL \
                  (public, or presigned for each file) instead"
                .into(),
        }));
    }
    let fetch = match get(options, "fetch") {
        Some(f) => f.dyn_into::<Function>().map_err(|_| invalid("option fetch must be a function"))?,
        None => global_fn("fetch")?,
    };
    Ok(FetchClient {
        fetch,
        headers: extra_headers(options)?,
        timeout_ms: Some(number(options, "timeoutMs")?.unwrap_or(30_000.0)).filter(|&ms| ms > 0.0),
    })
}

async fn open_with(
    transport: impl FnOnce(&RemoteOptions) -> Box<dyn RangeRead>,
    options: &JsValue,
) -> Result<JsStore, JsValue> {
    let opts = remote_options(options)?;
    let signal = signal_of(options)?;
    let transport = transport(&opts);
    let store = cancellable(RemoteStore::open(transport, opts), aborted(signal)).await.map_err(js_error)?;
    Ok(JsStore { inner: Rc::new(store) })
}

#[wasm_bindgen(js_class = Store)]
impl JsStore {
    /// Open the store at `url` (its directory, or its `meta.zr`). Options:
    /// `headers` (object or Headers sent with every request), `fetch` (a
    /// fetch-compatible function), `signal` (AbortSignal), `timeoutMs`
    /// (per request, default 30000), `maxGap`, `maxRequest`, `concurrency`,
    /// `cachePages`, `retries`, `backoffMs`, `ifMatch`, `verify` (`true`,
    /// `"always"`, `"if-sealed"`: check records against `sums.zr`).
    pub async fn open(
        url: String,
        #[wasm_bindgen(unchecked_optional_param_type = "OpenOptions")] options: Option<JsValue>,
    ) -> Result<JsStore, JsValue> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let client = http_client(&url, &options)?;
        let http = |o: &RemoteOptions| {
            let retry = Retry { retries: o.retries, backoff: o.backoff };
            Box::new(HttpRanges::new(client, &url, retry)) as Box<dyn RangeRead>
        };
        open_with(http, &options).await
    }

    /// Open a store from local files: a `FileList` or an Array of `File`s
    /// named `meta.zr`, `data.zr` (and `dict.zr`, `sums.zr`), e.g. from
    /// `<input type=file webkitdirectory>`, or an object
    /// `{meta, data, dict?, sums?}` of Blobs. Options as for `open` (minus fetch).
    #[wasm_bindgen(js_name = openFiles)]
    pub async fn open_files(
        #[wasm_bindgen(unchecked_param_type = "LocalFiles")] files: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "OpenOptions")] options: Option<JsValue>,
    ) -> Result<JsStore, JsValue> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let mut named: Vec<(StoreFile, Blob)> = Vec::new();
        let mut dir = String::new();
        if files.is_instance_of::<web_sys::FileList>() || Array::is_array(&files) {
            let iter = js_sys::try_iter(&files)?.ok_or_else(|| invalid("not a list of files"))?;
            for f in iter {
                let f = f?;
                let file: web_sys::File =
                    f.dyn_into().map_err(|_| invalid("openFiles expects File objects"))?;
                let name = StoreFile::from_name(&file.name());
                if let Some(rel) = get(&file, "webkitRelativePath").and_then(|v| v.as_string()) {
                    if let Some((d, _)) = rel.rsplit_once('/') {
                        dir = d.to_string();
                    }
                }
                if let Some(name) = name {
                    named.push((name, file.into()));
                }
            }
        } else {
            for (key, name) in [
                ("meta", StoreFile::Meta),
                ("data", StoreFile::Data),
                ("dict", StoreFile::Dict),
                ("sums", StoreFile::Sums),
            ] {
                if let Some(b) = get(&files, key) {
                    let blob: Blob =
                        b.dyn_into().map_err(|_| invalid(format!("files.{key} must be a Blob or File")))?;
                    named.push((name, blob));
                }
            }
        }
        let name = format!("local:{}/", if dir.is_empty() { "files" } else { dir.as_str() });
        open_with(|_| Box::new(BlobFiles { name, files: named }), &options).await
    }

    /// Number of records.
    #[wasm_bindgen(getter)]
    pub fn len(&self) -> f64 {
        self.inner.info().len() as f64
    }
    /// `"dense"` or `"ragged"`.
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        kind_name(self.inner.info().geometry()).into()
    }
    /// NumPy dtype string, e.g. `"<f4"`.
    #[wasm_bindgen(getter)]
    pub fn dtype(&self) -> String {
        self.inner.info().dtype().as_str().into()
    }
    /// `item_shape` of a Dense store (Array of numbers), `null` for Ragged.
    #[wasm_bindgen(getter, js_name = itemShape, unchecked_return_type = "number[] | null")]
    pub fn item_shape(&self) -> JsValue {
        self.inner.info().item_shape().map_or(JsValue::NULL, |s| shape_array(s).into())
    }
    /// Whether gathers check records against the store's checksum sidecar
    /// (opened with `verify` and sealed); a changed record then fails with
    /// code `ChecksumMismatch`.
    #[wasm_bindgen(getter)]
    pub fn checked(&self) -> bool {
        self.inner.is_checked()
    }
    /// `"raw"`, `"zstd"` or `"zstd_dict"`.
    #[wasm_bindgen(getter)]
    pub fn codec(&self) -> String {
        self.inner.info().codec().name().into()
    }
    /// The store's directory URL (`local:NAME/` for local files).
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> String {
        self.inner.info().name.clone()
    }

    /// File sizes `{meta, data, dict}` (`data` is `null` until a record was
    /// read; `dict` is `null` without a dictionary).
    #[wasm_bindgen(js_name = fileSizes, unchecked_return_type = "FileSizes")]
    pub fn file_sizes(&self) -> Object {
        let s = self.inner.file_sizes();
        let o = Object::new();
        set(&o, "meta", s.meta as f64);
        set(&o, "data", opt_number(s.data));
        set(&o, "dict", opt_number(s.dict));
        o
    }

    /// Everything known about the store: `{url, len, kind, dtype, itemShape,
    /// codec, tailOffset, schemaLength, schema (Uint8Array), fileSizes}`.
    #[wasm_bindgen(unchecked_return_type = "StoreInfo")]
    pub fn info(&self) -> Object {
        let s = self.inner.info();
        let o = Object::new();
        set(&o, "url", s.name.as_str());
        set(&o, "len", s.len() as f64);
        set(&o, "kind", kind_name(s.geometry()));
        set(&o, "dtype", s.dtype().as_str());
        set(&o, "itemShape", self.item_shape());
        set(&o, "codec", s.codec().name());
        set(&o, "tailOffset", s.header.tail_offset as f64);
        set(&o, "schemaLength", s.header.schema_length);
        set(&o, "schema", Uint8Array::from(s.schema_bytes.as_slice()));
        set(&o, "fileSizes", self.file_sizes());
        o
    }

    /// Requests and bytes spent so far: `{requests, bytes, retries,
    /// metaRequests, dataRequests, dictRequests, sumsRequests, pageHits, pageMisses, cachedPages}`.
    #[wasm_bindgen(unchecked_return_type = "StoreStats")]
    pub fn stats(&self) -> Object {
        let s = self.inner.stats();
        let o = Object::new();
        for (k, v) in [
            ("requests", s.requests),
            ("bytes", s.bytes),
            ("retries", s.retries),
            ("metaRequests", s.meta_requests),
            ("dataRequests", s.data_requests),
            ("dictRequests", s.dict_requests),
            ("sumsRequests", s.sums_requests),
            ("pageHits", s.page_hits),
            ("pageMisses", s.page_misses),
            ("cachedPages", s.cached_pages),
        ] {
            set(&o, k, v as f64);
        }
        o
    }

    /// Gather records (Array or typed array of indices, any order, repeats
    /// allowed). Dense: `{data, shape, dtype}` with `data` a TypedArray of
    /// `shape` in C order. Ragged: `{values, offsets, shapes, dtype}`: record
    /// `k` is `values.subarray(offsets[k], offsets[k + 1])` of shape
    /// `shapes[k]`. Options: `signal`.
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
        let store = self.inner.clone();
        run(&options, async move { gather_js(&store, &indices).await })
    }

    /// One record: `{data, shape, dtype}`. Options: `signal`.
    #[wasm_bindgen(unchecked_return_type = "Promise<StoreRecord>")]
    pub fn get(
        &self,
        index: f64,
        #[wasm_bindgen(unchecked_optional_param_type = "CallOptions")] options: Option<JsValue>,
    ) -> Promise {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let index = match index_of(index) {
            Ok(i) => i,
            Err(e) => return Promise::reject(&e),
        };
        let store = self.inner.clone();
        run(&options, async move {
            let mut batch = Batch::for_store(store.info());
            store.gather_batch_into(&[index], &mut batch).await?;
            let (shape, bytes) = batch.record(0);
            let o = Object::new();
            set(&o, "data", typed_array(store.info().dtype(), bytes));
            set(&o, "shape", shape_array(shape));
            set(&o, "dtype", store.info().dtype().as_str());
            Ok(o.into())
        })
    }

    /// Locations of records `start .. start + count`: `{offset (Float64Array),
    /// phys (Uint32Array), logic (Uint32Array)}` (stored and decoded bytes).
    /// Options: `signal`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Locs>")]
    pub fn locs(
        &self,
        start: f64,
        count: f64,
        #[wasm_bindgen(unchecked_optional_param_type = "CallOptions")] options: Option<JsValue>,
    ) -> Promise {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let (start, count) = match (index_of(start), index_of(count)) {
            (Ok(s), Ok(c)) => (s, c),
            (Err(e), _) | (_, Err(e)) => return Promise::reject(&e),
        };
        let store = self.inner.clone();
        run(&options, async move {
            let locs = store.locs(start, count).await?;
            let offset: Vec<f64> = locs.iter().map(|l| l.offset as f64).collect();
            let phys: Vec<u32> = locs.iter().map(|l| l.phys_length).collect();
            let logic: Vec<u32> = locs.iter().map(|l| l.logic_length).collect();
            let o = Object::new();
            set(&o, "offset", js_sys::Float64Array::from(offset.as_slice()));
            set(&o, "phys", js_sys::Uint32Array::from(phys.as_slice()));
            set(&o, "logic", js_sys::Uint32Array::from(logic.as_slice()));
            Ok(o.into())
        })
    }
}

async fn gather_js(store: &Shared, indices: &[u64]) -> Result<JsValue, Error> {
    let mut batch = Batch::for_store(store.info());
    store.gather_batch_into(indices, &mut batch).await?;
    Ok(batch_js(store.info().dtype(), &batch))
}

/// A gathered batch as JS sees it (see `Store.gather`): shared by stores
/// and dataset columns.
fn batch_js(dtype: &DType, batch: &Batch) -> JsValue {
    let o = Object::new();
    set(&o, "dtype", dtype.as_str());
    match batch {
        Batch::Dense(batch) => {
            set(&o, "data", typed_array(dtype, batch.bytes()));
            set(&o, "shape", shape_array(batch.shape()));
        }
        Batch::Ragged(batch) => {
            // Packed without the alignment padding the Rust batch keeps.
            let element = View::of(dtype).size();
            let packed = batch.packed(element);
            let copied;
            let values = match packed.contiguous {
                Some(all) => &batch.values()[all],
                None => {
                    let items = *packed.offsets.last().unwrap_or(&0) as usize;
                    copied = {
                        let mut v = vec![0u8; items * element];
                        batch.copy_values(&mut v);
                        v
                    };
                    &copied[..]
                }
            };
            let offsets: Vec<u32> = packed.offsets.iter().map(|&o| o as u32).collect();
            let shapes: Array = batch.iter().map(|(shape, _)| JsValue::from(shape_array(shape))).collect();
            set(&o, "values", typed_array(dtype, values));
            set(&o, "offsets", js_sys::Uint32Array::from(&offsets[..]));
            set(&o, "shapes", shapes);
        }
    }
    o.into()
}
