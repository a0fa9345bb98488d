//! Small bridges to JavaScript shared by the API and the transports:
//! errors, timers and abort signals.

use crate::remote::LocalBoxFuture;
use crate::Error;
use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, AddEventListenerOptions};

/// A JS `Error` with the message of `e` and a `code` naming its kind
/// (`NotFound`, `Remote`, `StoreChanged`, `BadFormat`, `Cancelled`, ...).
pub(super) fn js_error(e: Error) -> JsValue {
    let code = format!("{e:?}");
    let code = code.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("Error").to_string();
    let err: JsValue = JsError::new(&e.to_string()).into();
    let _ = Reflect::set(&err, &"code".into(), &code.into());
    err
}

pub(super) fn invalid(why: impl Into<String>) -> JsValue {
    js_error(Error::InvalidArgument { store: String::new(), why: why.into() })
}

/// Text of a thrown JS value (an Error's message, or its string form).
pub(super) fn describe(v: &JsValue) -> String {
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

pub(super) fn global_fn(name: &str) -> Result<Function, JsValue> {
    Reflect::get(&js_sys::global(), &name.into())?
        .dyn_into::<Function>()
        .map_err(|_| invalid(format!("this JavaScript environment has no global {name}()")))
}

/// A promise resolved after `ms` milliseconds (no Rust closure is kept alive).
pub(super) fn sleep_ms(ms: f64) -> LocalBoxFuture<'static, ()> {
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
pub(super) async fn aborted(signal: Option<AbortSignal>) {
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
