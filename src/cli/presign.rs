//! `zrecord presign s3://…/STORE --expires 1h [--viewer BASE]`: a viewer link
//! that opens a private store from any copy of the viewer, with no
//! credentials, until it expires. The link's fragment (never sent to a
//! server) carries the store's https:// URL and one presigned GET query per
//! file; the viewer's reader fetches each file through its presigned URL
//! (docs/PRIVATE_BUCKETS.md says how large a store a link can carry).

use super::common::{CliResult, Ctx, Fail, Out};
use super::gc::parse_age;
use super::serve::DEFAULT_PORT;
use std::time::Duration;
use zrecord::remote::objstore::presign_store;
use zrecord::serve::viewer_assets::{encode_component, viewer_link};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store in an S3 bucket (s3://bucket/prefix/store), read with AWS_* credentials.
    store: String,
    /// How long the link works: 90s, 30m, 1h, 2d (at most 7 days).
    #[arg(long, value_name = "AGE", value_parser = parse_age, default_value = "1h")]
    expires: Duration,
    /// The viewer the link opens [default: http://127.0.0.1:8750/, `zrecord serve`'s].
    #[arg(long, value_name = "BASE")]
    viewer: Option<String>,
}

pub fn run(_ctx: &Ctx, a: Args) -> CliResult {
    let signed = presign_store(&a.store, a.expires)?;
    let (meta_url, _) = signed
        .iter()
        .find(|(f, _)| f.name() == "meta.zr")
        .map(|(_, u)| u.split_once('?').unwrap_or((u, "")))
        .ok_or_else(|| Fail::Msg(format!("{}: no meta.zr was signed", a.store)))?;
    let dir = meta_url.strip_suffix("meta.zr").unwrap_or(meta_url);
    // {"meta.zr": "X-Amz-…", …}: each file's presigned query.
    let queries: serde_json::Map<String, serde_json::Value> = signed
        .iter()
        .map(|(f, u)| (f.name().to_string(), u.split_once('?').map_or("", |(_, q)| q).into()))
        .collect();
    let base = a.viewer.unwrap_or_else(|| format!("http://127.0.0.1:{DEFAULT_PORT}/"));
    let link = format!(
        "{}&signed={}",
        viewer_link(base.split('#').next().unwrap_or_default(), dir, None),
        encode_component(&serde_json::Value::Object(queries).to_string())
    );
    let mut out = Out::new();
    out.line(&format!("viewer: {link}"))?;
    let names: Vec<&str> = signed.iter().map(|(f, _)| f.name()).collect();
    out.line(&format!(
        "presigned GET URLs for {} of {}, valid {} s: anyone with this link can read these files until then ({} bytes)",
        names.join(", "),
        a.store,
        a.expires.as_secs(),
        link.len()
    ))?;
    out.flush()
}
