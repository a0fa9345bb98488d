//! Stores in buckets — `s3://`, `gs://`, `az://` — read through Apache
//! Arrow's `object_store` (the crate Lance, DataFusion, delta-rs and polars
//! use): it signs every request, finds credentials in the environment
//! (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`,
//! `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, ...) and retries
//! 429/5xx/`SlowDown` with jittered exponential back-off, bounded in time.
//! We wrap it: one ranged `get_opts` per read, answered with the object's
//! size and ETag, so the driver's checks (one size and one version per file
//! for the life of an open store) hold as they do over HTTP.

use super::runtime;
use super::transport::{LocalBoxFuture, RangeRead, Ranged, ReadRequest};
use crate::format::StoreFile;
use crate::location::{Location, Service};
use crate::{Error, Result};
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, GetOptions, GetRange, ObjectStore, ObjectStoreExt, RetryConfig};
use std::sync::Arc;
use std::time::Duration;

/// Retrying of an object store's requests.
#[derive(Clone, Copy, Debug)]
pub struct BucketRetry {
    /// Retries after the first attempt (default 10, object_store's).
    pub retries: usize,
    /// First back-off, doubled (with jitter) each time up to 15 s.
    pub backoff: Duration,
    /// No retry starts after this long (default 3 min).
    pub timeout: Duration,
}

impl Default for BucketRetry {
    fn default() -> Self {
        BucketRetry { retries: 10, backoff: Duration::from_millis(100), timeout: Duration::from_secs(180) }
    }
}

/// An open bucket and the store directory's prefix in it.
#[derive(Clone, Debug)]
pub struct Bucket {
    /// The client.
    pub store: Arc<dyn ObjectStore>,
    /// The store directory, without a trailing `/`.
    pub prefix: ObjectPath,
    /// `scheme://bucket/prefix/`, as errors name the store.
    pub url: String,
}

impl Bucket {
    /// The bucket a URL names, configured from the environment.
    ///
    /// `url` is the store directory (`s3://bucket/a/b`, trailing `/`
    /// optional) or its `meta.zr`.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown scheme or a configuration the
    /// builder refuses (no region, no account, ...).
    pub fn from_url(url: &str, retry: BucketRetry) -> Result<Bucket> {
        Self::from_url_with(url, retry, &[])
    }

    /// As [`Bucket::from_url`], with `config` (object_store's keys, such as
    /// `aws_access_key_id` or `aws_endpoint`) applied over the environment.
    ///
    /// # Errors
    /// As [`Bucket::from_url`], and for a key the store does not know.
    pub fn from_url_with(url: &str, retry: BucketRetry, config: &[(String, String)]) -> Result<Bucket> {
        let bad = |why: String| Error::InvalidArgument { store: url.to_string(), why };
        let Location::Bucket { service, .. } = Location::parse(url)? else {
            return Err(bad("not a bucket URL (s3://, gs://, az://, ...)".into()));
        };
        let (scheme_raw, rest) = url.split_once("://").expect("a bucket URL has a scheme");
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        if host.is_empty() {
            return Err(bad("no bucket in the URL".into()));
        }
        let retry = RetryConfig {
            backoff: BackoffConfig {
                init_backoff: retry.backoff,
                max_backoff: Duration::from_secs(15),
                base: 2.0,
            },
            max_retries: retry.retries,
            retry_timeout: retry.timeout,
        };
        let root = format!("{scheme_raw}://{host}");
        let key = |k: &str, e: object_store::Error| bad(format!("configuration key {k:?}: {e}"));
        let built: std::result::Result<Arc<dyn ObjectStore>, object_store::Error> = match service {
            Service::S3 => {
                let mut b = object_store::aws::AmazonS3Builder::from_env().with_url(&root).with_retry(retry);
                for (k, v) in config {
                    b = b.with_config(k.parse().map_err(|e| key(k, e))?, v);
                }
                b.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
            }
            Service::Gcs => {
                let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_url(&root)
                    .with_retry(retry);
                for (k, v) in config {
                    b = b.with_config(k.parse().map_err(|e| key(k, e))?, v);
                }
                b.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
            }
            Service::Azure => {
                let mut b =
                    object_store::azure::MicrosoftAzureBuilder::from_env().with_url(&root).with_retry(retry);
                for (k, v) in config {
                    b = b.with_config(k.parse().map_err(|e| key(k, e))?, v);
                }
                b.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
            }
        };
        let store = built.map_err(|e| bad(format!("configuring the {scheme_raw}:// client: {e}")))?;
        let mut path = path.trim_matches('/').to_string();
        if path == StoreFile::Meta.name() {
            path.clear();
        } else if let Some(dir) = path.strip_suffix(&format!("/{}", StoreFile::Meta.name())) {
            path = dir.to_string();
        }
        let prefix = ObjectPath::from(path.as_str());
        let url = if path.is_empty() { format!("{root}/") } else { format!("{root}/{path}/") };
        Ok(Bucket { store, prefix, url })
    }

    /// The object holding `name` in the store directory.
    pub fn object(&self, name: &str) -> ObjectPath {
        self.prefix.clone().join(name)
    }

    /// The object at `path` (`/`-separated) below the prefix.
    pub fn object_at(&self, path: &str) -> ObjectPath {
        let path = path.trim_matches('/');
        if self.prefix.as_ref().is_empty() {
            ObjectPath::from(path)
        } else {
            ObjectPath::from(format!("{}/{path}", self.prefix.as_ref()))
        }
    }

    /// The directory at `path` below the prefix, with the same client.
    pub fn child(&self, path: &str) -> Bucket {
        let path = path.trim_matches('/');
        Bucket {
            store: self.store.clone(),
            prefix: self.object_at(path),
            url: format!("{}{path}/", self.url),
        }
    }
}

/// Most files one presigned link carries (`presign_prefix`).
pub const PRESIGN_MAX_FILES: usize = 200;

/// Presigned GET URLs (SigV4, signed with the environment's credentials,
/// valid for `expires`) of every file below an `s3://` prefix: a store's
/// (`meta.zr`, `data.zr`, `dict.zr`, `sums.zr`) or a small dataset's (its
/// manifest, versions and shards), as (path below the prefix, URL). Anyone
/// holding a URL can read that file until it expires.
///
/// # Errors
/// `InvalidArgument` for a URL that is not `s3://`, an expiry past S3's 7
/// days, or more than [`PRESIGN_MAX_FILES`] files; `NotFound` when the
/// prefix holds neither `meta.zr` nor `zrecord.json`; `Remote` (wrong
/// keys named) for a refused listing.
pub fn presign_prefix(url: &str, expires: Duration) -> Result<Vec<(String, String)>> {
    use object_store::signer::Signer;
    let bad = |why: String| Error::InvalidArgument { store: url.to_string(), why };
    if !url.starts_with("s3://") {
        return Err(bad(
            "presigned links are made for s3:// stores (for gs:// and az://, use `zrecord view`)".into(),
        ));
    }
    if expires > Duration::from_secs(7 * 24 * 3600) || expires.is_zero() {
        return Err(bad("S3 presigned URLs last between 1 second and 7 days".into()));
    }
    let bucket = Bucket::from_url(url, BucketRetry::default())?;
    let root = bucket.url.split('/').take(3).collect::<Vec<_>>().join("/");
    let s3 = object_store::aws::AmazonS3Builder::from_env()
        .with_url(&root)
        .build()
        .map_err(|e| bad(format!("configuring the s3:// client: {e}")))?;
    let name = bucket.url.clone();
    let task = runtime::spawn(async move {
        // Every object below the prefix, directory by directory.
        let mut files = Vec::new();
        let mut dirs = vec![bucket.prefix.clone()];
        while let Some(dir) = dirs.pop() {
            let listed = bucket.store.list_with_delimiter(Some(&dir)).await.map_err(|e| convert(&name, e))?;
            files.extend(listed.objects.into_iter().map(|o| o.location));
            dirs.extend(listed.common_prefixes);
            if files.len() > PRESIGN_MAX_FILES {
                return Err(Error::InvalidArgument {
                    store: name,
                    why: format!(
                        "more than {PRESIGN_MAX_FILES} files: too many for one link; look at it with \
                         `zrecord view URL` instead"
                    ),
                });
            }
        }
        let below = |p: &ObjectPath| {
            let (p, prefix) = (p.as_ref(), bucket.prefix.as_ref());
            if prefix.is_empty() {
                p.to_string()
            } else {
                p[prefix.len()..].trim_start_matches('/').to_string()
            }
        };
        let mut out = Vec::new();
        for path in files {
            let signed = s3
                .signed_url(reqwest::Method::GET, &path, expires)
                .await
                .map_err(|e| convert(&format!("{name}{}", below(&path)), e))?;
            out.push((below(&path), signed.to_string()));
        }
        if !out.iter().any(|(p, _)| p == StoreFile::Meta.name() || p == "zrecord.json") {
            return Err(Error::NotFound {
                store: name,
                what: "neither a store (meta.zr) nor a dataset (zrecord.json) is there".into(),
            });
        }
        Ok(out)
    });
    super::block_on(task).unwrap_or_else(|| Err(bad("the signing task stopped".into())))
}

/// A store's files in a bucket, read with ranged GETs through `object_store`.
#[derive(Debug)]
pub struct ObjectRanges {
    bucket: Bucket,
}

impl ObjectRanges {
    /// The store at `url`, the client configured from the environment.
    ///
    /// # Errors
    /// As [`Bucket::from_url`].
    pub fn new(url: &str, retry: BucketRetry) -> Result<Self> {
        Ok(ObjectRanges { bucket: Bucket::from_url(url, retry)? })
    }
    /// As [`ObjectRanges::new`], with `config` over the environment (see
    /// [`Bucket::from_url_with`]).
    ///
    /// # Errors
    /// As [`Bucket::from_url_with`].
    pub fn with_config(url: &str, retry: BucketRetry, config: &[(String, String)]) -> Result<Self> {
        Ok(ObjectRanges { bucket: Bucket::from_url_with(url, retry, config)? })
    }
    /// The bucket and prefix.
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }
    /// The store at `path` below this one's prefix (a dataset's shard),
    /// with the same client.
    pub fn child(&self, path: &str) -> ObjectRanges {
        ObjectRanges { bucket: self.bucket.child(path) }
    }
}

/// An object-store error as ours, naming `at`.
pub(crate) fn convert(at: &str, e: object_store::Error) -> Error {
    use object_store::Error as E;
    let chain = super::client::error_chain(&e);
    match e {
        E::NotFound { .. } if chain.contains("NoSuchBucket") => Error::NotFound {
            store: at.to_string(),
            what: "no such bucket (check the bucket's name, the endpoint and the region)".into(),
        },
        E::NotFound { .. } => {
            Error::NotFound { store: at.to_string(), what: "no such object in the bucket".into() }
        }
        E::Precondition { .. } => Error::StoreChanged {
            url: at.to_string(),
            why: "If-Match failed: the object was replaced".into(),
        },
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => {
            Error::Remote { url: at.to_string(), why: format!("{}: {chain}", credentials_hint()) }
        }
        _ if looks_like_credentials(&chain) => {
            Error::Remote { url: at.to_string(), why: format!("{}: {chain}", credentials_hint()) }
        }
        _ => Error::Remote { url: at.to_string(), why: chain },
    }
}

fn looks_like_credentials(msg: &str) -> bool {
    const SIGNS: [&str; 8] = [
        "SignatureDoesNotMatch",
        "InvalidAccessKeyId",
        "AccessDenied",
        "InvalidToken",
        "ExpiredToken",
        "403 Forbidden",
        "401 Unauthorized",
        "credential",
    ];
    SIGNS.iter().any(|s| msg.contains(s))
}

fn credentials_hint() -> &'static str {
    "the bucket refused the credentials (check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, \
     AWS_SESSION_TOKEN, AWS_REGION for s3://; GOOGLE_SERVICE_ACCOUNT / \
     GOOGLE_APPLICATION_CREDENTIALS for gs://; AZURE_STORAGE_ACCOUNT_NAME and \
     AZURE_STORAGE_ACCOUNT_KEY for az://)"
}

/// Whether `e` may be a bucket's answer to a range starting at or past the
/// end of the object: S3 and Azure refuse it (416 `InvalidRange`); Azurite
/// answers an empty blob with `Content-Range: bytes 0--1/0`, which
/// object_store cannot parse. The object's size then decides. (Not a bare
/// "416": the message carries a port and a duration, which may hold those
/// digits, and a refused request then lost its reason to a HEAD's empty 403.)
fn may_be_past_end(e: &object_store::Error) -> bool {
    let s = super::client::error_chain(e);
    s.contains("status code: 416")
        || s.contains("InvalidRange")
        || s.contains("Range Not Satisfiable")
        || s.contains("CONTENT_RANGE")
}

async fn read_object(
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    req: ReadRequest,
) -> object_store::Result<Ranged> {
    let options = GetOptions {
        range: Some(GetRange::Bounded(req.range.clone())),
        if_match: req.if_version.clone(),
        ..Default::default()
    };
    match store.get_opts(&path, options).await {
        Ok(got) => {
            let (total, version) = (got.meta.size, got.meta.e_tag.clone());
            let bytes = got.bytes().await?.to_vec();
            Ok(Ranged { bytes, total, version })
        }
        // A range starting at or past the end (an empty data.zr): the
        // object's size says so.
        Err(e) if may_be_past_end(&e) => {
            let meta = store.head(&path).await?;
            if req.range.start >= meta.size {
                Ok(Ranged { bytes: Vec::new(), total: meta.size, version: meta.e_tag })
            } else {
                Err(e)
            }
        }
        Err(e) => Err(e),
    }
}

impl ObjectRanges {
    /// Read `req.range` of the object at `path` (named `at` in errors) on
    /// the shared runtime.
    fn spawn_read(
        &self,
        at: String,
        path: ObjectPath,
        req: ReadRequest,
    ) -> LocalBoxFuture<'_, Result<Ranged>> {
        let task = runtime::spawn(read_object(self.bucket.store.clone(), path, req));
        Box::pin(async move {
            match task.await {
                Some(Ok(r)) => Ok(r),
                Some(Err(e)) => Err(convert(&at, e)),
                None => Err(Error::Remote { url: at, why: "the object-store task stopped".into() }),
            }
        })
    }
}

impl RangeRead for ObjectRanges {
    fn read(&self, req: ReadRequest) -> LocalBoxFuture<'_, Result<Ranged>> {
        let at = self.locate(req.file);
        self.spawn_read(at, self.bucket.object(req.file.name()), req)
    }
    fn locate(&self, file: StoreFile) -> String {
        format!("{}{}", self.bucket.url, file.name())
    }
    fn read_path(&self, path: &str, range: std::ops::Range<u64>) -> LocalBoxFuture<'_, Result<Ranged>> {
        let at = format!("{}{path}", self.bucket.url);
        let req = ReadRequest { file: StoreFile::Meta, range, if_version: None };
        self.spawn_read(at, self.bucket.object_at(path), req)
    }
    fn name(&self) -> String {
        self.bucket.url.clone()
    }
    fn now(&self) -> Option<Duration> {
        Some(runtime::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_prefixes() {
        let at =
            |url: &str| Bucket::from_url(url, BucketRetry::default()).map(|b| (b.prefix.to_string(), b.url));
        let env_free = |url: &str| at(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        for url in ["s3://b/a/store", "s3://b/a/store/", "s3://b/a/store/meta.zr"] {
            assert_eq!(env_free(url), ("a/store".to_string(), "s3://b/a/store/".to_string()), "{url}");
        }
        assert_eq!(env_free("s3://b/a/xmeta.zr").0, "a/xmeta.zr");
        assert_eq!(env_free("s3://b/meta.zr"), (String::new(), "s3://b/".to_string()));
        assert!(at("s3:///x").is_err());
        assert!(at("ftp://b/x").is_err());
    }

    #[test]
    fn gcs_and_azure_store_prefixes() {
        let emulator = [("azure_storage_use_emulator".to_string(), "true".to_string())];
        let at = |url: &str| {
            let b = Bucket::from_url_with(
                url,
                BucketRetry::default(),
                if url.starts_with("gs") { &[] } else { &emulator },
            )
            .unwrap_or_else(|e| panic!("{url}: {e}"));
            (b.prefix.to_string(), b.url)
        };
        for (url, prefix, dir) in [
            ("gs://b/a/store/meta.zr", "a/store", "gs://b/a/store/"),
            ("az://c/a/store", "a/store", "az://c/a/store/"),
            ("azure://c/a/store/", "a/store", "azure://c/a/store/"),
            (
                "abfss://fs@acct.dfs.core.windows.net/a/store",
                "a/store",
                "abfss://fs@acct.dfs.core.windows.net/a/store/",
            ),
        ] {
            assert_eq!(at(url), (prefix.to_string(), dir.to_string()), "{url}");
        }
        assert!(Bucket::from_url_with("az:///x", BucketRetry::default(), &emulator).is_err());
    }

    /// A refused request whose message holds "416" in a port or a duration
    /// is not a range past the end (it was read as one, under load, and its
    /// reason was lost to a HEAD's empty 403).
    #[test]
    fn only_a_416_status_is_a_range_past_the_end() {
        let err = |msg: &str| object_store::Error::Generic { store: "S3", source: msg.into() };
        let refused = "Error performing GET http://127.0.0.1:41653/b/k in 5.41608ms - Server returned \
                       non-2xx status code: 403 Forbidden: SignatureDoesNotMatch";
        assert!(!may_be_past_end(&err(refused)));
        let past = "Error performing GET http://127.0.0.1:9000/b/k in 1ms - Server returned non-2xx \
                    status code: 416 Range Not Satisfiable: InvalidRange";
        assert!(may_be_past_end(&err(past)));
    }
}
