//! The web viewer (`www/` and the wasm reader in `pkg/`), embedded in the
//! binary so `zrecord serve` can serve it at `/` with no files on disk.
//!
//! `build.rs` lists the files; `www/index.html` is served as `index.html`,
//! `pkg/zrecord_bg.wasm` as `pkg/zrecord_bg.wasm`. When the crate was built
//! before `wasm-pack build --target web`, the `pkg/` files are missing and the
//! page itself says how to build them ([`has_wasm_reader`] tells too).
//!
//! ```no_run
//! use zrecord::serve::{self, ServeConfig};
//! let mut cfg = ServeConfig::new("stores/");
//! cfg.assets = Some(zrecord::serve::viewer_assets::viewer_assets());
//! let server = serve::start(cfg)?;
//! println!("viewer at {}", server.url());
//! server.wait();
//! # Ok::<(), zrecord::Error>(())
//! ```

use std::borrow::Cow;

use crate::serve::Assets;

/// `(path, bytes)` of every embedded file, sorted by path.
static FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/viewer_assets.rs"));

/// The asset callback for [`crate::serve::ServeConfig::assets`]: the viewer's
/// files by path (`index.html`, `app.js`, `pkg/zrecord.js`, …).
pub fn viewer_assets() -> Assets {
    Box::new(|path: &str| find(path).map(|bytes| (Cow::Borrowed(bytes), content_type(path))))
}

/// The viewer's files read from a source checkout (`www/` and `pkg/` under
/// `checkout`) on every request instead of the embedded copies, so editing
/// the viewer needs only a page reload (`zrecord serve --viewer-dir .`).
/// Only the paths the embedded set holds are served, so a request cannot
/// reach other files of the checkout.
pub fn viewer_assets_from(checkout: impl Into<std::path::PathBuf>) -> Assets {
    let root = checkout.into();
    Box::new(move |path: &str| {
        find(path)?;
        let file = match path.strip_prefix("pkg/") {
            Some(rest) => root.join("pkg").join(rest),
            None => root.join("www").join(path),
        };
        std::fs::read(file).ok().map(|bytes| (Cow::Owned(bytes), content_type(path)))
    })
}

/// Whether the wasm reader (`pkg/zrecord_bg.wasm`) was embedded; without it
/// the viewer shows its page but cannot open stores.
pub fn has_wasm_reader() -> bool {
    find("pkg/zrecord_bg.wasm").is_some()
}

/// The embedded paths, sorted.
pub fn asset_paths() -> impl Iterator<Item = &'static str> {
    FILES.iter().map(|(p, _)| *p)
}

/// The viewer's address opening `store` (an absolute URL, or a path on the
/// same server such as `/datasets/train/`), optionally at record `index`:
/// `viewer_link("http://127.0.0.1:8080/", "/train/", Some(5))` is
/// `http://127.0.0.1:8080/#url=%2Ftrain%2F&i=5`.
///
/// ```
/// use zrecord::serve::viewer_assets::viewer_link;
/// assert_eq!(viewer_link("http://127.0.0.1:8080/", "/a b/", None), "http://127.0.0.1:8080/#url=%2Fa%20b%2F");
/// ```
pub fn viewer_link(viewer: &str, store: &str, index: Option<u64>) -> String {
    let mut out = format!("{viewer}#url={}", encode_component(store));
    if let Some(i) = index {
        out.push_str(&format!("&i={i}"));
    }
    out
}

/// `s` percent-encoded as JavaScript's `encodeURIComponent` does (ASCII
/// letters, digits and `-_.~` kept), for a value in the viewer's address.
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn find(path: &str) -> Option<&'static [u8]> {
    FILES.binary_search_by(|(p, _)| (*p).cmp(path)).ok().map(|i| FILES[i].1)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map_or("", |(_, ext)| ext) {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_the_page_with_types() {
        let assets = viewer_assets();
        let (page, ty) = assets("index.html").expect("www/index.html is embedded");
        assert!(String::from_utf8_lossy(&page).contains("<html"));
        assert_eq!(ty, "text/html; charset=utf-8");
        assert_eq!(assets("app.js").expect("app.js").1, "text/javascript; charset=utf-8");
        assert!(assets("nope.js").is_none());
        assert!(assets("../Cargo.toml").is_none());
    }

    #[test]
    fn links_encode_the_store_url() {
        assert_eq!(
            viewer_link("http://h:1/", "http://s/x?y=1&z", Some(7)),
            "http://h:1/#url=http%3A%2F%2Fs%2Fx%3Fy%3D1%26z&i=7"
        );
    }

    #[test]
    fn every_file_the_page_loads_is_embedded() {
        // index.html loads the bundle of the page's modules (app.bundle.js,
        // from scripts/bundle-viewer.mjs) and starts worker.js, which imports
        // prefetch.js, dtype.js and the wasm reader.
        let page = String::from_utf8_lossy(find("index.html").expect("index.html"));
        let mut named = Vec::new();
        for attr in ["src=\"", "href=\""] {
            for (at, _) in page.match_indices(attr) {
                let rest = &page[at + attr.len()..];
                let value = &rest[..rest.find('"').expect("a closing quote")];
                if !value.contains(':') && !value.starts_with('#') && !value.is_empty() {
                    named.push(value.to_string());
                }
            }
        }
        assert!(named.contains(&"app.bundle.js".to_string()), "{named:?}");
        for path in named.iter().map(String::as_str).chain(["worker.js", "dtype.js", "prefetch.js", "app.js"])
        {
            assert!(find(path).is_some(), "{path} is named by the page but not embedded");
        }
    }

    #[test]
    fn paths_are_sorted_for_lookup() {
        let paths: Vec<_> = asset_paths().collect();
        assert!(paths.windows(2).all(|w| w[0] < w[1]));
    }
}
