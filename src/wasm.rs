//! The JavaScript API (wasm-bindgen), and the browser transports.
//!
//! The only module that knows about JavaScript: `Store` (open by URL or from
//! local `File`s, gather, get, locs, stats), a `fetch` transport and a `Blob`
//! transport for the same [`RangeClient`] trait the native reader uses, and
//! the conversion of errors into JS `Error`s. Everything it serves comes from
//! the shared async driver in [`crate::remote`].
//!
//! ```js
//! import init, { Store } from "./pkg/zrecord.js";
//! await init();
//! const store = await Store.open("https://example.org/stores/train/");
//! const { data, shape } = await store.gather([3, 1, 4]);   // Float32Array, [3, ...itemShape]
//! ```

use crate::format::{ByteOrder, DType, Geometry, Kind};
use crate::remote::{
    cancellable, cors_hint, LocalBoxFuture, RangeClient, RangeRequest, RangeResponse, RemoteOptions,
    RemoteStore, TransportError,
};
use crate::Error;
use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::{AbortController, AbortSignal, AddEventListenerOptions, Blob, Headers, RequestInit};

type Shared = Rc<RemoteStore<Box<dyn RangeClient>>>;

/// A JS `Error` with the message of `e` and a `code` naming its kind
/// (`NotFound`, `Remote`, `StoreChanged`, `BadFormat`, `Cancelled`, ...).
fn js_error(e: Error) -> JsValue {
    let code = format!("{e:?}");
    let code = code.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("Error").to_string();
    let err: JsValue = JsError::new(&e.to_string()).into();
    let _ = Reflect::set(&err, &"code".into(), &code.into());
    err
}

fn invalid(why: impl Into<String>) -> JsValue {
    js_error(Error::InvalidArgument { store: String::new(), why: why.into() })
}

/// Text of a thrown JS value (an Error's message, or its string form).
fn describe(v: &JsValue) -> String {
    if let Some(e) = v.dyn_ref::<js_sys::Error>() {
        let msg = String::from(e.message());
        let cause = Reflect::get(e, &"cause".into())
            .ok()
            .filter(|c| !c.is_undefined() && !c.is_null())
            .map(|c| format!(" ({})", describe(&c)))
            .unwrap_or_default();
        return format!("{}: {msg}{cause}", String::from(e.name()));
    }
    v.as_string().unwrap_or_else(|| format!("{v:?}"))
}

fn global_fn(name: &str) -> Result<Function, JsValue> {
    Reflect::get(&js_sys::global(), &name.into())?
        .dyn_into::<Function>()
        .map_err(|_| invalid(format!("this JavaScript environment has no global {name}()")))
}

/// A promise resolved after `ms` milliseconds (no Rust closure is kept alive).
fn sleep_ms(ms: f64) -> LocalBoxFuture<'static, ()> {
    Box::pin(async move {
        let Ok(set_timeout) = global_fn("setTimeout") else {
            return;
        };
        let p = Promise::new(&mut |resolve, _| {
            let _ = set_timeout.call2(&JsValue::NULL, &resolve, &ms.into());
        });
        let _ = JsFuture::from(p).await;
    })
}

/// Resolves when `signal` aborts (never, without a signal).
async fn aborted(signal: Option<AbortSignal>) {
    let Some(signal) = signal else {
        return std::future::pending().await;
    };
    if signal.aborted() {
        return;
    }
    let p = Promise::new(&mut |resolve, _| {
        let opts = AddEventListenerOptions::new();
        opts.set_once(true);
        let _ =
            signal.add_event_listener_with_callback_and_add_event_listener_options("abort", &resolve, &opts);
    });
    let _ = JsFuture::from(p).await;
}

/// Aborts a fetch whose future is dropped before it finished.
struct AbortOnDrop(Option<AbortController>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.abort();
        }
    }
}

/// `fetch` (the global one, or the caller's) as a [`RangeClient`].
struct FetchClient {
    fetch: Function,
    headers: Vec<(String, String)>,
    timeout_ms: Option<f64>,
}

impl FetchClient {
    async fn send(&self, req: RangeRequest) -> Result<RangeResponse, TransportError> {
        let fatal = |e: JsValue| TransportError::Fatal(describe(&e));
        let controller = AbortController::new().map_err(fatal)?;
        let mut guard = AbortOnDrop(Some(controller.clone()));
        let headers = Headers::new().map_err(fatal)?;
        for (k, v) in &self.headers {
            headers.set(k, v).map_err(fatal)?;
        }
        headers.set("Range", &req.range_header()).map_err(fatal)?;
        if let Some(tag) = &req.if_match {
            headers.set("If-Match", tag).map_err(fatal)?;
        }
        let init = RequestInit::new();
        init.set_method("GET");
        init.set_headers(&headers);
        init.set_signal(Some(&controller.signal()));
        // A timer that aborts the request: the bound `abort` is a JS function,
        // so nothing leaks when the timer is cleared.
        let timer = match self.timeout_ms {
            Some(ms) => {
                let abort: Function =
                    Reflect::get(&controller, &"abort".into()).map_err(fatal)?.unchecked_into();
                let abort = abort.bind0(&controller);
                Some(
                    global_fn("setTimeout")
                        .map_err(fatal)?
                        .call2(&JsValue::NULL, &abort, &ms.into())
                        .map_err(fatal)?,
                )
            }
            None => None,
        };
        let out = self.exchange(&req, &init).await;
        if let Some(timer) = timer {
            if let Ok(clear) = global_fn("clearTimeout") {
                let _ = clear.call1(&JsValue::NULL, &timer);
            }
        }
        guard.0 = None;
        out.map_err(|e| match e {
            TransportError::Network(why) if controller.signal().aborted() => TransportError::Network(
                format!("no answer within {} ms ({why})", self.timeout_ms.unwrap_or_default()),
            ),
            e => e,
        })
    }

    async fn exchange(
        &self,
        req: &RangeRequest,
        init: &RequestInit,
    ) -> Result<RangeResponse, TransportError> {
        let network = |e: JsValue| {
            TransportError::Network(format!(
                "network error ({}); if the store is on another origin than the page, CORS \
                 may be the cause: {}",
                describe(&e),
                cors_hint()
            ))
        };
        let promise = self
            .fetch
            .call2(&JsValue::NULL, &JsValue::from_str(&req.url), init)
            .map_err(|e| TransportError::Fatal(format!("fetch threw: {}", describe(&e))))?;
        let promise: Promise =
            promise.dyn_into().map_err(|_| TransportError::Fatal("fetch did not return a Promise".into()))?;
        let resp: web_sys::Response = JsFuture::from(promise)
            .await
            .map_err(network)?
            .dyn_into()
            .map_err(|_| TransportError::Fatal("fetch did not resolve to a Response".into()))?;
        let h = resp.headers();
        let header = |name: &str| h.get(name).ok().flatten();
        let mut out = RangeResponse {
            status: resp.status(),
            content_range: header("content-range"),
            content_encoding: header("content-encoding"),
            etag: header("etag"),
            body: Vec::new(),
        };
        if out.status == 206 {
            let limit = req.body_limit();
            let declared = header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
            if declared.is_some_and(|n| n > limit) {
                // Too long to be what was asked for: do not read it.
                out.body = vec![0; limit as usize];
                return Ok(out);
            }
            let buf = resp.array_buffer().map_err(|e| TransportError::Fatal(describe(&e)))?;
            let buf = JsFuture::from(buf).await.map_err(network)?;
            let bytes = Uint8Array::new(&buf);
            let n = u64::from(bytes.length()).min(limit) as u32;
            out.body = bytes.subarray(0, n).to_vec();
        }
        Ok(out)
    }
}

impl RangeClient for FetchClient {
    fn get(&self, req: RangeRequest) -> LocalBoxFuture<'_, Result<RangeResponse, TransportError>> {
        Box::pin(self.send(req))
    }
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()> {
        sleep_ms(duration.as_secs_f64() * 1000.0)
    }
}

/// Local files (`File`/`Blob`, e.g. a directory picked with
/// `<input type=file webkitdirectory>`) as a [`RangeClient`]: answers as a
/// well-behaved server would, so the driver treats them like any store.
struct BlobClient {
    files: Vec<(String, Blob)>,
}

impl BlobClient {
    async fn read(&self, req: RangeRequest) -> Result<RangeResponse, TransportError> {
        let name = req.url.rsplit('/').next().unwrap_or_default();
        let Some((_, blob)) = self.files.iter().find(|(n, _)| n == name) else {
            return Ok(RangeResponse { status: 404, ..Default::default() });
        };
        let total = blob.size() as u64;
        if req.range.start >= total {
            return Ok(RangeResponse {
                status: 416,
                content_range: Some(format!("bytes */{total}")),
                ..Default::default()
            });
        }
        let end = req.range.end.min(total);
        let part = blob
            .slice_with_f64_and_f64(req.range.start as f64, end as f64)
            .map_err(|e| TransportError::Fatal(describe(&e)))?;
        let buf = JsFuture::from(part.array_buffer())
            .await
            .map_err(|e| TransportError::Fatal(format!("reading {name}: {}", describe(&e))))?;
        Ok(RangeResponse {
            status: 206,
            content_range: Some(format!("bytes {}-{}/{total}", req.range.start, end - 1)),
            body: Uint8Array::new(&buf).to_vec(),
            ..Default::default()
        })
    }
}

impl RangeClient for BlobClient {
    fn get(&self, req: RangeRequest) -> LocalBoxFuture<'_, Result<RangeResponse, TransportError>> {
        Box::pin(self.read(req))
    }
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()> {
        sleep_ms(duration.as_secs_f64() * 1000.0)
    }
}

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
/// `cachePages`, `retries`, `backoffMs`, `ifMatch`).
fn remote_options(options: &JsValue) -> Result<RemoteOptions, JsValue> {
    let mut o = RemoteOptions::default();
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
}
/** Options of a single call. */
export interface CallOptions { signal?: AbortSignal; }
/** Local files: a FileList / File[] named meta.zr, data.zr (dict.zr), or Blobs by role. */
export type LocalFiles = FileList | File[] | { meta: Blob; data: Blob; dict?: Blob };
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
  dictRequests: number; pageHits: number; pageMisses: number; cachedPages: number;
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

async fn open_with(client: Box<dyn RangeClient>, url: &str, options: &JsValue) -> Result<JsStore, JsValue> {
    let opts = remote_options(options)?;
    let signal = signal_of(options)?;
    let store = cancellable(RemoteStore::open(client, url, opts), aborted(signal)).await.map_err(js_error)?;
    Ok(JsStore { inner: Rc::new(store) })
}

#[wasm_bindgen(js_class = Store)]
impl JsStore {
    /// Open the store at `url` (its directory, or its `meta.zr`). Options:
    /// `headers` (object or Headers sent with every request), `fetch` (a
    /// fetch-compatible function), `signal` (AbortSignal), `timeoutMs`
    /// (per request, default 30000), `maxGap`, `maxRequest`, `concurrency`,
    /// `cachePages`, `retries`, `backoffMs`, `ifMatch`.
    pub async fn open(
        url: String,
        #[wasm_bindgen(unchecked_optional_param_type = "OpenOptions")] options: Option<JsValue>,
    ) -> Result<JsStore, JsValue> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let fetch = match get(&options, "fetch") {
            Some(f) => f.dyn_into::<Function>().map_err(|_| invalid("option fetch must be a function"))?,
            None => global_fn("fetch")?,
        };
        let client = FetchClient {
            fetch,
            headers: extra_headers(&options)?,
            timeout_ms: Some(number(&options, "timeoutMs")?.unwrap_or(30_000.0)).filter(|&ms| ms > 0.0),
        };
        open_with(Box::new(client), &url, &options).await
    }

    /// Open a store from local files: a `FileList` or an Array of `File`s
    /// named `meta.zr`, `data.zr` (and `dict.zr`), e.g. from
    /// `<input type=file webkitdirectory>`, or an object
    /// `{meta, data, dict?}` of Blobs. Options as for `open` (minus fetch).
    #[wasm_bindgen(js_name = openFiles)]
    pub async fn open_files(
        #[wasm_bindgen(unchecked_param_type = "LocalFiles")] files: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "OpenOptions")] options: Option<JsValue>,
    ) -> Result<JsStore, JsValue> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let mut named: Vec<(String, Blob)> = Vec::new();
        let mut dir = String::new();
        if files.is_instance_of::<web_sys::FileList>() || Array::is_array(&files) {
            let iter = js_sys::try_iter(&files)?.ok_or_else(|| invalid("not a list of files"))?;
            for f in iter {
                let f = f?;
                let file: web_sys::File =
                    f.dyn_into().map_err(|_| invalid("openFiles expects File objects"))?;
                let name = file.name();
                if let Some(rel) = get(&file, "webkitRelativePath").and_then(|v| v.as_string()) {
                    if let Some((d, _)) = rel.rsplit_once('/') {
                        dir = d.to_string();
                    }
                }
                named.push((name, file.into()));
            }
        } else {
            for (key, name) in [("meta", "meta.zr"), ("data", "data.zr"), ("dict", "dict.zr")] {
                if let Some(b) = get(&files, key) {
                    let blob: Blob =
                        b.dyn_into().map_err(|_| invalid(format!("files.{key} must be a Blob or File")))?;
                    named.push((name.to_string(), blob));
                }
            }
        }
        named.retain(|(n, _)| matches!(n.as_str(), "meta.zr" | "data.zr" | "dict.zr"));
        let url = format!("local:{}/", if dir.is_empty() { "files" } else { dir.as_str() });
        open_with(Box::new(BlobClient { files: named }), &url, &options).await
    }

    /// Number of records.
    #[wasm_bindgen(getter)]
    pub fn len(&self) -> f64 {
        self.inner.len() as f64
    }
    /// `"dense"` or `"ragged"`.
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        kind_name(self.inner.geometry()).into()
    }
    /// NumPy dtype string, e.g. `"<f4"`.
    #[wasm_bindgen(getter)]
    pub fn dtype(&self) -> String {
        self.inner.dtype().as_str().into()
    }
    /// `item_shape` of a Dense store (Array of numbers), `null` for Ragged.
    #[wasm_bindgen(getter, js_name = itemShape, unchecked_return_type = "number[] | null")]
    pub fn item_shape(&self) -> JsValue {
        self.inner.item_shape().map_or(JsValue::NULL, |s| shape_array(s).into())
    }
    /// `"raw"`, `"zstd"` or `"zstd_dict"`.
    #[wasm_bindgen(getter)]
    pub fn codec(&self) -> String {
        self.inner.codec().name().into()
    }
    /// The store's directory URL (`local:NAME/` for local files).
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> String {
        self.inner.url().into()
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
        let s = &self.inner;
        let o = Object::new();
        set(&o, "url", s.url());
        set(&o, "len", s.len() as f64);
        set(&o, "kind", kind_name(s.geometry()));
        set(&o, "dtype", s.dtype().as_str());
        set(&o, "itemShape", self.item_shape());
        set(&o, "codec", s.codec().name());
        set(&o, "tailOffset", s.info().header.tail_offset as f64);
        set(&o, "schemaLength", s.info().header.schema_length);
        set(&o, "schema", Uint8Array::from(s.schema_bytes()));
        set(&o, "fileSizes", self.file_sizes());
        o
    }

    /// Requests and bytes spent so far: `{requests, bytes, retries,
    /// metaRequests, dataRequests, dictRequests, pageHits, pageMisses, cachedPages}`.
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
            let (shape, bytes) = store.get(index).await?;
            let o = Object::new();
            set(&o, "data", typed_array(store.dtype(), bytes.as_slice()));
            set(&o, "shape", shape_array(&shape));
            set(&o, "dtype", store.dtype().as_str());
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
    let dtype = store.dtype();
    let o = Object::new();
    set(&o, "dtype", dtype.as_str());
    match store.geometry() {
        Geometry::Dense { .. } => {
            let batch = store.gather(indices).await?;
            set(&o, "data", typed_array(dtype, batch.bytes()));
            set(&o, "shape", shape_array(batch.shape()));
        }
        Geometry::Ragged => {
            let batch = store.gather_ragged(indices).await?;
            // Packed without the alignment padding the Rust batch keeps.
            let total: usize = batch.spans().iter().map(|s| s.len()).sum();
            let mut packed = Vec::with_capacity(total);
            let element = View::of(dtype).size();
            let offsets = js_sys::Uint32Array::new_with_length(batch.len() as u32 + 1);
            let shapes = Array::new();
            for (k, (shape, bytes)) in batch.iter().enumerate() {
                packed.extend_from_slice(bytes);
                offsets.set_index(k as u32 + 1, (packed.len() / element) as u32);
                shapes.push(&shape_array(shape));
            }
            set(&o, "values", typed_array(dtype, &packed));
            set(&o, "offsets", offsets);
            set(&o, "shapes", shapes);
        }
    }
    Ok(o.into())
}
