//! The browser's `fetch` as an HTTP client: ranged GETs with a timeout,
//! aborted when their future is dropped. Every judgement of the answers is
//! made by [`crate::remote::HttpRanges`].

use super::js::{describe, global_fn, sleep_ms};
use crate::remote::{cors_hint, HttpError, HttpGet, HttpRequest, HttpResponse, LocalBoxFuture};
use js_sys::{Function, Promise, Reflect, Uint8Array};
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Headers, RequestInit};

/// Aborts a fetch whose future is dropped before it finished.
struct AbortOnDrop(Option<AbortController>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.abort();
        }
    }
}

/// `fetch` (the global one, or the caller's) as an [`HttpGet`].
#[derive(Clone)]
pub(super) struct FetchClient {
    pub fetch: Function,
    pub headers: Vec<(String, String)>,
    pub timeout_ms: Option<f64>,
}

impl FetchClient {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let fatal = |e: JsValue| HttpError::Fatal(describe(&e));
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
            HttpError::Network(why) if controller.signal().aborted() => HttpError::Network(format!(
                "no answer within {} ms ({why})",
                self.timeout_ms.unwrap_or_default()
            )),
            e => e,
        })
    }

    async fn exchange(&self, req: &HttpRequest, init: &RequestInit) -> Result<HttpResponse, HttpError> {
        let network = |e: JsValue| {
            HttpError::Network(format!(
                "network error ({}); if the store is on another origin than the page, CORS \
                 may be the cause: {}",
                describe(&e),
                cors_hint()
            ))
        };
        let promise = self
            .fetch
            .call2(&JsValue::NULL, &JsValue::from_str(&req.url), init)
            .map_err(|e| HttpError::Fatal(format!("fetch threw: {}", describe(&e))))?;
        let promise: Promise =
            promise.dyn_into().map_err(|_| HttpError::Fatal("fetch did not return a Promise".into()))?;
        let resp: web_sys::Response = JsFuture::from(promise)
            .await
            .map_err(network)?
            .dyn_into()
            .map_err(|_| HttpError::Fatal("fetch did not resolve to a Response".into()))?;
        let h = resp.headers();
        let header = |name: &str| h.get(name).ok().flatten();
        let mut out = HttpResponse {
            status: resp.status(),
            content_range: header("content-range"),
            content_encoding: header("content-encoding"),
            etag: header("etag"),
            body: Vec::new(),
        };
        if out.status == 200 {
            // A whole-file answer to a Range request is judged by its length
            // alone, never read: empty, it is an empty file's whole range;
            // otherwise the server ignores Range. One byte stands for "a body".
            let declared = header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
            if declared != Some(0) {
                out.body = vec![0; 1];
            }
            return Ok(out);
        }
        if out.status == 206 {
            let limit = req.body_limit();
            let declared = header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
            if declared.is_some_and(|n| n > limit) {
                // Too long to be what was asked for: do not read it.
                out.body = vec![0; limit as usize];
                return Ok(out);
            }
            let buf = resp.array_buffer().map_err(|e| HttpError::Fatal(describe(&e)))?;
            let buf = JsFuture::from(buf).await.map_err(network)?;
            let bytes = Uint8Array::new(&buf);
            let n = u64::from(bytes.length()).min(limit) as u32;
            out.body = bytes.subarray(0, n).to_vec();
        }
        Ok(out)
    }
}

impl HttpGet for FetchClient {
    fn get(&self, req: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        Box::pin(self.send(req))
    }
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()> {
        sleep_ms(duration.as_secs_f64() * 1000.0)
    }
}
