//! The dataset fixture (`tests/fixtures/dataset-v1`: columns `x` Dense <f4
//! [2] zstd and `tokens` Ragged <u2 raw, 10 records in shards of 4, 2 and 4)
//! read through the JavaScript `Dataset`, over nginx.

use super::{global_fetch, message, prop, rewriting_fetch, typed_bytes};
use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use zrecord::wasm::{JsDataset, JsDatasetColumn};

/// The dataset's URL, from `ZRECORD_TEST_DATASET_URL` at build time.
fn dataset_url() -> String {
    let Some(url) = option_env!("ZRECORD_TEST_DATASET_URL") else {
        panic!("build the wasm tests with ZRECORD_TEST_DATASET_URL set (scripts/test-wasm.sh does)");
    };
    format!("{}/", url.trim_end_matches('/'))
}

fn x_of(i: u64) -> [f32; 2] {
    [i as f32, -(i as f32) * 0.5]
}

fn tokens_of(i: u64) -> Vec<u16> {
    (0..i % 7 + 1).map(|k| (i * 31 + k) as u16).collect()
}

async fn gather(column: &JsDatasetColumn, indices: &[u64]) -> JsValue {
    let arr: Array = indices.iter().map(|&i| JsValue::from(i as f64)).collect();
    JsFuture::from(column.gather(arr.into(), None)).await.unwrap_or_else(|e| panic!("{}", message(&e)))
}

fn numbers(v: &JsValue) -> Vec<u64> {
    Array::from(v).iter().map(|d| d.as_f64().unwrap() as u64).collect()
}

pub async fn dataset_over_http() {
    // Count what reaches the network with a fetch of our own.
    let seen = Array::new();
    let wrapper = Function::new_with_args(
        "seen, fetch",
        "return (url, init) => { seen.push(url); return fetch(url, init); };",
    );
    let fetch = wrapper.call2(&JsValue::NULL, &seen, &global_fetch()).unwrap();
    let opts = Object::new();
    Reflect::set(&opts, &"fetch".into(), &fetch).unwrap();
    let ds =
        JsDataset::open(dataset_url(), Some(opts.into())).await.unwrap_or_else(|e| panic!("{}", message(&e)));
    let urls: Vec<String> = seen.iter().map(|u| u.as_string().unwrap()).collect();
    assert!(urls.len() <= 2, "opening cost {urls:?}");
    assert!(urls[0].ends_with("/zrecord.json"), "{urls:?}");
    assert_eq!(prop(&ds.stats(), "requests").as_f64(), Some(urls.len() as f64));

    assert_eq!(ds.length(), 10.0);
    assert_eq!(ds.version(), 1.0);
    let columns = ds.columns();
    let names: Vec<String> = columns.iter().map(|c| prop(&c, "name").as_string().unwrap()).collect();
    assert_eq!(names, ["x", "tokens"]);
    assert_eq!(prop(&columns.get(0), "kind").as_string().unwrap(), "dense");
    assert_eq!(numbers(&prop(&columns.get(0), "itemShape")), [2]);
    assert_eq!(prop(&columns.get(0), "codec").as_string().unwrap(), "zstd");
    assert_eq!(prop(&columns.get(1), "kind").as_string().unwrap(), "ragged");
    assert_eq!(prop(&columns.get(1), "dtype").as_string().unwrap(), "<u2");
    assert!(prop(&columns.get(1), "itemShape").is_null());

    let shards = ds.shards();
    let lens: Vec<u64> = shards.iter().map(|s| prop(&s, "length").as_f64().unwrap() as u64).collect();
    let starts: Vec<u64> = shards.iter().map(|s| prop(&s, "start").as_f64().unwrap() as u64).collect();
    assert_eq!(lens, [4, 2, 4]);
    assert_eq!(starts, [0, 4, 6]);
    let want_shard = |i: u64| {
        if i < 4 {
            0.0
        } else if i < 6 {
            1.0
        } else {
            2.0
        }
    };
    for i in 0..10 {
        assert_eq!(ds.shard_of(i as f64).unwrap(), want_shard(i), "shardOf({i})");
    }
    assert!(ds.shard_of(10.0).is_err());

    // Nothing was read for the columns yet: shards open on first touch.
    let x = ds.column("x".into()).unwrap();
    let tokens = ds.column(JsValue::from(1.0)).unwrap();
    assert_eq!(x.open_shards(), 0.0);
    assert_eq!(seen.length() as usize, urls.len(), "no request before the first gather");

    // Every record of both columns, in an order crossing the shards.
    let order: Vec<u64> = (0..10).rev().chain([5, 0, 9, 4]).collect();
    let got = gather(&x, &order).await;
    assert_eq!(numbers(&prop(&got, "shape")), [order.len() as u64, 2]);
    let (bytes, per) = typed_bytes(&prop(&got, "data"));
    assert_eq!(per, 4, "a Float32Array");
    let want: Vec<u8> = order.iter().flat_map(|&i| x_of(i)).flat_map(f32::to_le_bytes).collect();
    assert_eq!(bytes, want, "x");
    assert_eq!(x.open_shards(), 3.0);

    let got = gather(&tokens, &order).await;
    let (values, per) = typed_bytes(&prop(&got, "values"));
    assert_eq!(per, 2, "a Uint16Array");
    let offsets = typed_bytes(&prop(&got, "offsets")).0;
    let offsets: Vec<u32> = offsets.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let shapes: Vec<Vec<u64>> = Array::from(&prop(&got, "shapes")).iter().map(|s| numbers(&s)).collect();
    for (k, &i) in order.iter().enumerate() {
        let want = tokens_of(i);
        assert_eq!(shapes[k], [want.len() as u64], "shape of tokens {i}");
        let (a, b) = (offsets[k] as usize * 2, offsets[k + 1] as usize * 2);
        let want: Vec<u8> = want.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(values[a..b], want[..], "tokens {i}");
    }
    assert!(prop(&tokens.stats(), "requests").as_f64().unwrap() >= 3.0);
}

pub async fn dataset_through_custom_fetch() {
    // The dataset's URL resolves nowhere: its manifest and every shard come
    // through the caller's fetch, as ranged GETs, one per counted request.
    let seen = Array::new();
    let opts = Object::new();
    Reflect::set(&opts, &"fetch".into(), &rewriting_fetch(&seen, &dataset_url())).unwrap();
    let ds = JsDataset::open("https://private.invalid/".into(), Some(opts.into()))
        .await
        .unwrap_or_else(|e| panic!("{}", message(&e)));
    let x = ds.column("x".into()).unwrap();
    let tokens = ds.column("tokens".into()).unwrap();
    let got = gather(&x, &[9, 0, 5]).await;
    let want: Vec<u8> = [9, 0, 5].iter().flat_map(|&i| x_of(i)).flat_map(f32::to_le_bytes).collect();
    assert_eq!(typed_bytes(&prop(&got, "data")).0, want);
    gather(&tokens, &[4]).await;
    let seen: Vec<String> = seen.iter().map(|v| v.as_string().unwrap()).collect();
    let counted: f64 =
        [ds.stats(), x.stats(), tokens.stats()].iter().map(|s| prop(s, "requests").as_f64().unwrap()).sum();
    assert_eq!(seen.len() as f64, counted, "{seen:?}");
    for s in &seen {
        assert!(s.starts_with("GET https://private.invalid/"), "{seen:?}");
    }
    assert!(seen.iter().any(|s| s.ends_with("/zrecord.json")), "{seen:?}");
}
