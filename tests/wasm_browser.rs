//! The wasm suite (tests/wasm_common) in headless Chromium (wasm-pack test --headless --chrome), the page on
//! wasm-bindgen-test's server and the store on nginx: cross-origin.
//! Run by scripts/test-wasm.sh.
#![cfg(target_arch = "wasm32")]

mod wasm_common;

use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn every_fixture_over_http() {
    wasm_common::every_fixture_over_http().await;
}

#[wasm_bindgen_test]
async fn local_files_read_the_same() {
    wasm_common::local_files_read_the_same().await;
}

#[wasm_bindgen_test]
async fn errors_are_js_errors() {
    wasm_common::errors_are_js_errors().await;
}

#[wasm_bindgen_test]
async fn abort_signal_cancels() {
    wasm_common::abort_signal_cancels().await;
}

#[wasm_bindgen_test]
async fn custom_fetch_and_headers() {
    wasm_common::custom_fetch_and_headers().await;
}

#[wasm_bindgen_test]
async fn dataset_over_http() {
    wasm_common::dataset::dataset_over_http().await;
}

#[wasm_bindgen_test]
async fn custom_fetch_sees_every_request() {
    wasm_common::custom_fetch_sees_every_request().await;
}

#[wasm_bindgen_test]
async fn dataset_through_custom_fetch() {
    wasm_common::dataset::dataset_through_custom_fetch().await;
}
