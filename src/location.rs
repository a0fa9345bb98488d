//! Where a store lives, read from the string a user gives: one table of URL
//! schemes for every way in (the CLI, the Python package, the browser, the
//! opener), so none of them keeps a list of its own.
//!
//! ```
//! use zrecord::location::{Location, Service};
//! assert_eq!(Location::parse("ABFSS://fs@acct.dfs.core.windows.net/a")?, Location::Bucket {
//!     service: Service::Azure,
//!     url: "ABFSS://fs@acct.dfs.core.windows.net/a",
//! });
//! assert_eq!(Location::parse("runs/train")?, Location::Path("runs/train"));
//! assert!(Location::parse("ftp://host/store").is_err());
//! # Ok::<(), zrecord::Error>(())
//! ```

use crate::{Error, Result};

/// The cloud service a bucket URL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// Amazon S3 and S3-compatible stores (`s3://`, `s3a://`).
    S3,
    /// Google Cloud Storage (`gs://`).
    Gcs,
    /// Azure Blob Storage and ADLS Gen2 (`az://`, `azure://`, `abfs://`, `abfss://`).
    Azure,
}

/// A store's place, as a path or a URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location<'a> {
    /// A path on the local file system (`file://` URLs become paths too). In
    /// a browser, a URL relative to the page.
    Path(&'a str),
    /// `http://` or `https://`: read with HTTP Range requests.
    Http(&'a str),
    /// A bucket, read through object_store (signed requests).
    Bucket {
        /// Which service.
        service: Service,
        /// The whole URL as given.
        url: &'a str,
    },
}

/// Every scheme a store URL may have, and what reads it. Case does not matter.
pub const SCHEMES: [(&str, Option<Service>); 9] = [
    ("http", None),
    ("https", None),
    ("s3", Some(Service::S3)),
    ("s3a", Some(Service::S3)),
    ("gs", Some(Service::Gcs)),
    ("az", Some(Service::Azure)),
    ("azure", Some(Service::Azure)),
    ("abfs", Some(Service::Azure)),
    ("abfss", Some(Service::Azure)),
];

impl<'a> Location<'a> {
    /// Read `target`: a URL when it starts with `scheme://` (RFC 3986's
    /// scheme syntax), else a path.
    ///
    /// # Errors
    /// `InvalidArgument` for a scheme no reader takes (a local path that
    /// looks like a URL can be given as `./name://...`).
    pub fn parse(target: &'a str) -> Result<Self> {
        let Some((scheme, rest)) = target.split_once("://").filter(|(s, _)| is_scheme(s)) else {
            return Ok(Location::Path(target));
        };
        if scheme.eq_ignore_ascii_case("file") {
            // file:///abs/path, or file://localhost/abs/path; no other host.
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            if !path.starts_with('/') {
                return Err(Error::InvalidArgument {
                    store: target.to_string(),
                    why: "a file:// URL names a path on this machine: file:///path or file://localhost/path"
                        .into(),
                });
            }
            return Ok(Location::Path(path));
        }
        match SCHEMES.iter().find(|(s, _)| s.eq_ignore_ascii_case(scheme)) {
            Some((_, None)) => Ok(Location::Http(target)),
            Some(&(_, Some(service))) => Ok(Location::Bucket { service, url: target }),
            None => Err(Error::InvalidArgument {
                store: target.to_string(),
                why: format!(
                    "unknown URL scheme {scheme}:// (stores open from a path, file://, {}; \
                     write a local path that looks like a URL as ./{target})",
                    SCHEMES.map(|(s, _)| format!("{s}://")).join(", ")
                ),
            }),
        }
    }

    /// The URL, for a remote location.
    pub fn url(&self) -> Option<&'a str> {
        match *self {
            Location::Path(_) => None,
            Location::Http(url) | Location::Bucket { url, .. } => Some(url),
        }
    }

    /// Whether the store is read over the network.
    pub fn is_remote(&self) -> bool {
        self.url().is_some()
    }
}

/// RFC 3986: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheme_in_any_case() {
        for (scheme, service) in SCHEMES {
            for s in [scheme.to_string(), scheme.to_ascii_uppercase()] {
                let url = format!("{s}://bucket/a/store");
                let got = Location::parse(&url).unwrap();
                assert_eq!(got.url(), Some(url.as_str()));
                match service {
                    None => assert_eq!(got, Location::Http(&url)),
                    Some(service) => assert_eq!(got, Location::Bucket { service, url: &url }),
                }
            }
        }
    }

    #[test]
    fn paths_stay_paths() {
        for p in ["store", "/data/store", "./s3://x", "/data/s3://x", "C:\\data", "a:b", "", "1ab://x"] {
            assert_eq!(Location::parse(p).unwrap(), Location::Path(p), "{p}");
        }
        assert_eq!(Location::parse("file:///data/s").unwrap(), Location::Path("/data/s"));
        assert_eq!(Location::parse("FILE://localhost/data/s").unwrap(), Location::Path("/data/s"));
        for other_host in ["file://host/data/s", "file://localhost.x/data/s", "file://data"] {
            assert!(Location::parse(other_host).is_err(), "{other_host}");
        }
    }

    #[test]
    fn unknown_schemes_are_refused_by_name() {
        let e = Location::parse("ftp://host/s").unwrap_err().to_string();
        assert!(e.contains("unknown URL scheme ftp://") && e.contains("abfss://"), "{e}");
        assert!(e.contains("./ftp://host/s"), "{e}");
    }
}
