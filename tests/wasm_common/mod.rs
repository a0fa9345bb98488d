//! The wasm conformance suite, run in Node (`wasm_node.rs`) and in headless
//! Chromium (`wasm_browser.rs`) through the JavaScript API itself: every
//! fixture served by nginx (another origin than the test page) reads exactly
//! as the manifest says, local files read the same, errors are JS Errors.
//!
//! The nginx URL comes from `ZRECORD_TEST_URL` at build time (set by
//! scripts/test-wasm.sh).

pub mod dataset;
#[path = "../common/manifest.rs"]
mod manifest;

use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use manifest::FixtureStore;
use std::collections::HashMap;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use zrecord::wasm::JsStore;

pub fn base_url() -> String {
    // Read at build time: a wasm test cannot see the runner's environment.
    let Some(url) = option_env!("ZRECORD_TEST_URL") else {
        panic!("build the wasm tests with ZRECORD_TEST_URL set (scripts/test-wasm.sh does)");
    };
    format!("{}/", url.trim_end_matches('/'))
}

fn global_fetch() -> Function {
    Reflect::get(&js_sys::global(), &"fetch".into()).unwrap().unchecked_into()
}

/// GET a whole file from the fixture server.
async fn fetch_response(path: &str) -> web_sys::Response {
    let url = format!("{}{path}", base_url());
    let p: Promise = global_fetch().call1(&JsValue::NULL, &url.into()).unwrap().unchecked_into();
    let resp: web_sys::Response = JsFuture::from(p).await.unwrap().unchecked_into();
    assert_eq!(resp.status(), 200, "{path}");
    resp
}

async fn fetch_bytes(path: &str) -> Vec<u8> {
    let resp = fetch_response(path).await;
    let buf = JsFuture::from(resp.array_buffer().unwrap()).await.unwrap();
    Uint8Array::new(&buf).to_vec()
}

async fn fetch_blob(path: &str) -> Option<web_sys::Blob> {
    let url = format!("{}{path}", base_url());
    let p: Promise = global_fetch().call1(&JsValue::NULL, &url.into()).unwrap().unchecked_into();
    let resp: web_sys::Response = JsFuture::from(p).await.unwrap().unchecked_into();
    if resp.status() != 200 {
        return None;
    }
    Some(JsFuture::from(resp.blob().unwrap()).await.unwrap().unchecked_into())
}

pub async fn fixtures() -> (Vec<FixtureStore>, Vec<String>) {
    let m = fetch_bytes("manifest.json").await;
    let mut expected = HashMap::new();
    for f in manifest::expected_files(&m) {
        let bytes = fetch_bytes(&f).await;
        expected.insert(f, bytes);
    }
    (manifest::parse(&m, &expected), manifest::unpublished(&m))
}

fn prop(o: &JsValue, k: &str) -> JsValue {
    Reflect::get(o, &k.into()).unwrap()
}

fn num(o: &JsValue, k: &str) -> f64 {
    prop(o, k).as_f64().unwrap_or_else(|| panic!("{k} is not a number"))
}

fn shape_of(v: &JsValue) -> Vec<u64> {
    Array::from(v).iter().map(|d| d.as_f64().unwrap() as u64).collect()
}

/// The bytes behind any TypedArray, and its element size.
fn typed_bytes(v: &JsValue) -> (Vec<u8>, usize) {
    let buf = prop(v, "buffer");
    let offset = num(v, "byteOffset") as u32;
    let len = num(v, "byteLength") as u32;
    let per = num(v, "BYTES_PER_ELEMENT") as usize;
    (Uint8Array::new_with_byte_offset_and_length(&buf, offset, len).to_vec(), per)
}

fn class_name(v: &JsValue) -> String {
    prop(&prop(v, "constructor"), "name").as_string().unwrap()
}

fn no_options() -> Option<JsValue> {
    None
}

async fn gather(store: &JsStore, indices: &[u64]) -> Result<JsValue, JsValue> {
    let arr: Array = indices.iter().map(|&i| JsValue::from(i as f64)).collect();
    JsFuture::from(store.gather(arr.into(), no_options())).await
}

/// The TypedArray class JavaScript should get for a fixture's dtype.
fn expected_class(dtype: &str) -> &'static str {
    match dtype {
        "<f4" => "Float32Array",
        "<f8" => "Float64Array",
        "<i4" => "Int32Array",
        "<i8" => "BigInt64Array",
        "<u2" => "Uint16Array",
        _ => "Uint8Array",
    }
}

/// Check `store` against the manifest's records for `f`.
pub async fn check_store(f: &FixtureStore, store: &JsStore) {
    assert_eq!(store.len() as u64, f.len, "{}", f.name);
    assert_eq!(store.dtype(), f.dtype, "{}", f.name);
    assert_eq!(store.codec(), f.codec, "{}", f.name);
    assert_eq!(store.kind(), f.kind, "{}", f.name);
    let n = f.len;
    let order: Vec<u64> = (0..n).rev().chain((0..n).step_by(3)).collect();
    let got = gather(store, &order).await.unwrap();
    assert_eq!(prop(&got, "dtype").as_string().unwrap(), f.dtype);
    if f.kind == "dense" {
        let item_shape = f.item_shape.clone().unwrap();
        assert_eq!(shape_of(&store.item_shape()), item_shape);
        let mut want_shape = vec![order.len() as u64];
        want_shape.extend(&item_shape);
        assert_eq!(shape_of(&prop(&got, "shape")), want_shape, "{}", f.name);
        let data = prop(&got, "data");
        assert_eq!(class_name(&data), expected_class(&f.dtype), "{}", f.name);
        let (bytes, _) = typed_bytes(&data);
        let want: Vec<u8> = order.iter().flat_map(|&i| f.record_bytes(i as usize)).collect();
        assert_eq!(bytes, want, "{}", f.name);
    } else {
        assert!(store.item_shape().is_null());
        let values = prop(&got, "values");
        assert_eq!(class_name(&values), expected_class(&f.dtype), "{}", f.name);
        let (bytes, per) = typed_bytes(&values);
        let offsets: Vec<u32> = prop(&got, "offsets").unchecked_into::<js_sys::Uint32Array>().to_vec();
        let shapes = Array::from(&prop(&got, "shapes"));
        assert_eq!(offsets.len(), order.len() + 1);
        for (k, &i) in order.iter().enumerate() {
            let rec = &bytes[offsets[k] as usize * per..offsets[k + 1] as usize * per];
            assert_eq!(rec, f.record_bytes(i as usize).as_slice(), "{} {i}", f.name);
            assert_eq!(shape_of(&shapes.get(k as u32)), f.records[i as usize].0);
        }
    }
    if n > 0 {
        let one = JsFuture::from(store.get((n - 1) as f64, no_options())).await.unwrap();
        let (bytes, _) = typed_bytes(&prop(&one, "data"));
        assert_eq!(bytes, f.record_bytes(n as usize - 1), "{}", f.name);
        assert_eq!(shape_of(&prop(&one, "shape")), f.records[n as usize - 1].0);
        let locs = JsFuture::from(store.locs(0.0, n as f64, no_options())).await.unwrap();
        let logic = prop(&locs, "logic").unchecked_into::<js_sys::Uint32Array>();
        assert_eq!(logic.length() as u64, n);
        if f.kind == "dense" {
            assert_eq!(logic.get_index(0) as usize, f.record_bytes(0).len());
        }
        let sizes = store.file_sizes();
        assert!(num(&sizes, "data") > 0.0, "data size known after a gather");
    }
}

async fn open(url: &str, options: Option<JsValue>) -> Result<JsStore, JsValue> {
    JsStore::open(url.to_string(), options).await
}

fn message(e: &JsValue) -> String {
    assert!(e.is_instance_of::<js_sys::Error>(), "{e:?} is a JS Error");
    String::from(e.unchecked_ref::<js_sys::Error>().message())
}

fn code(e: &JsValue) -> String {
    prop(e, "code").as_string().unwrap()
}

pub async fn every_fixture_over_http() {
    let (stores, _) = fixtures().await;
    assert!(stores.len() >= 20);
    for f in &stores {
        let url = format!("{}{}/", base_url(), f.name);
        let store = open(&url, no_options()).await.unwrap_or_else(|e| panic!("{}: {}", f.name, message(&e)));
        let stats = store.stats();
        let dict = f64::from(u8::from(f.codec == "zstd_dict"));
        assert_eq!(num(&stats, "requests"), 1.0 + dict, "{}", f.name);
        check_store(f, &store).await;
        let info = store.info();
        assert_eq!(num(&info, "len") as u64, f.len);
        assert_eq!(prop(&info, "url").as_string().unwrap(), url);
    }
}

pub async fn local_files_read_the_same() {
    let (stores, _) = fixtures().await;
    for f in &stores {
        // As an object of Blobs.
        let files = Object::new();
        for (key, file) in [("meta", "meta.zr"), ("data", "data.zr"), ("dict", "dict.zr")] {
            if let Some(blob) = fetch_blob(&format!("{}/{file}", f.name)).await {
                Reflect::set(&files, &key.into(), &blob).unwrap();
            }
        }
        let store = JsStore::open_files(files.into(), no_options())
            .await
            .unwrap_or_else(|e| panic!("{}: {}", f.name, message(&e)));
        check_store(f, &store).await;
    }
}

pub async fn errors_are_js_errors() {
    let (_, unpublished) = fixtures().await;
    let missing = format!("{}no-such-store/", base_url());
    let e = open(&missing, no_options()).await.err().unwrap();
    assert!(message(&e).contains("not found"), "{}", message(&e));
    assert!(message(&e).contains(&format!("{missing}meta.zr")));
    assert_eq!(code(&e), "NotFound");
    for name in unpublished {
        let e = open(&format!("{}{name}/", base_url()), no_options()).await.err().unwrap();
        assert_eq!(code(&e), "Unpublished", "{}", message(&e));
    }
    // Out of range and bad indices reject with clear messages.
    let store = open(&format!("{}dense-f32-zstd", base_url()), no_options()).await.unwrap();
    let e = gather(&store, &[0, 33]).await.err().unwrap();
    assert!(message(&e).contains("out of range"), "{}", message(&e));
    let bad = Array::of1(&JsValue::from(-1.0));
    let e = JsFuture::from(store.gather(bad.into(), no_options())).await.err().unwrap();
    assert!(message(&e).contains("non-negative integers"));
    // Nothing listens here: a network error, naming CORS as a possible cause.
    let opts = Object::new();
    Reflect::set(&opts, &"retries".into(), &0.into()).unwrap();
    let e = open("http://127.0.0.1:9/store/", Some(opts.into())).await.err().unwrap();
    let m = message(&e);
    assert!(m.contains("network error") && m.contains("Access-Control-Expose-Headers"), "{m}");
}

pub async fn abort_signal_cancels() {
    let store = open(&format!("{}dense-u8-img-zstd/", base_url()), no_options()).await.unwrap();
    let controller = web_sys::AbortController::new().unwrap();
    controller.abort();
    let opts = Object::new();
    Reflect::set(&opts, &"signal".into(), &controller.signal()).unwrap();
    let arr = Array::of2(&1.into(), &2.into());
    let e = JsFuture::from(store.gather(arr.into(), Some(opts.clone().into()))).await.err().unwrap();
    assert_eq!(code(&e), "Cancelled", "{}", message(&e));
    let e = open(&format!("{}dense-u8-img-raw/", base_url()), Some(opts.into())).await.err().unwrap();
    assert_eq!(code(&e), "Cancelled");
    // The store still works after a cancelled call.
    assert!(gather(&store, &[1, 2]).await.is_ok());
}

pub async fn custom_fetch_and_headers() {
    // A fetch wrapper, written in JS, that records the headers it was given.
    // The extra header is a CORS-safelisted one (Accept-Language): others make
    // the browser send a preflight, which this nginx (Allow-Headers: Range) refuses.
    let seen = Array::new();
    let wrapper = Function::new_with_args(
        "seen, fetch",
        "return (url, init) => { seen.push(init.headers.get('accept-language') + ' ' + \
         init.headers.get('range')); return fetch(url, init); };",
    );
    let fetch = wrapper.call2(&JsValue::NULL, &seen, &global_fetch()).unwrap();
    let headers = Object::new();
    Reflect::set(&headers, &"Accept-Language".into(), &"yes".into()).unwrap();
    let opts = Object::new();
    Reflect::set(&opts, &"fetch".into(), &fetch).unwrap();
    Reflect::set(&opts, &"headers".into(), &headers).unwrap();
    let store = open(&format!("{}dense-f64-raw/", base_url()), Some(opts.into()))
        .await
        .unwrap_or_else(|e| panic!("{}", message(&e)));
    gather(&store, &[0]).await.unwrap();
    let seen: Vec<String> = seen.iter().map(|v| v.as_string().unwrap()).collect();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0], "yes bytes=0-65535");
    assert!(seen[1].starts_with("yes bytes="), "{seen:?}");
}

/// A fetch, written in JS, that serves `https://private.invalid/` from `real`
/// (as an app's signing proxy or token-adding fetch would) and records each
/// request's method and URL in `seen`.
pub fn rewriting_fetch(seen: &Array, real: &str) -> Function {
    let wrapper = Function::new_with_args(
        "seen, fetch, real",
        "return (url, init) => { seen.push(init.method + ' ' + url); \
         return fetch(url.replace('https://private.invalid/', real), init); };",
    );
    wrapper.call3(&JsValue::NULL, seen, &global_fetch(), &real.into()).unwrap().unchecked_into()
}

pub async fn custom_fetch_sees_every_request() {
    // The store's URL resolves nowhere: every byte comes through the caller's
    // fetch, and each request it sees is a ranged GET (never a HEAD: a file's
    // size comes from the first answer's Content-Range).
    let seen = Array::new();
    let opts = Object::new();
    Reflect::set(&opts, &"fetch".into(), &rewriting_fetch(&seen, &base_url())).unwrap();
    let store = open("https://private.invalid/ragged-i32-tokens-zstd/", Some(opts.into()))
        .await
        .unwrap_or_else(|e| panic!("{}", message(&e)));
    gather(&store, &[0, 7, 3]).await.unwrap();
    gather(&store, &[1]).await.unwrap();
    let seen: Vec<String> = seen.iter().map(|v| v.as_string().unwrap()).collect();
    let requests = Reflect::get(&store.stats(), &"requests".into()).unwrap().as_f64().unwrap();
    assert_eq!(seen.len() as f64, requests, "{seen:?}");
    assert!(seen.len() >= 2, "{seen:?}");
    for s in &seen {
        assert!(s.starts_with("GET https://private.invalid/ragged-i32-tokens-zstd/"), "{seen:?}");
    }
}
