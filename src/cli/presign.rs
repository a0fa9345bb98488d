//! `zrecord presign s3://…/PREFIX --expires 1h [--viewer BASE]`: a viewer link
//! that opens a private store or small dataset from any copy of the viewer,
//! with no credentials, until it expires. The link's fragment (never sent to
//! a server) carries the prefix's URL and one presigned GET query per file
//! below it; the viewer's reader fetches each file through its presigned URL
//! (docs/PRIVATE_BUCKETS.md says how large a dataset a link can carry).

use super::common::{CliResult, Ctx, Fail, Out};
use super::gc::parse_age;
use super::serve::DEFAULT_PORT;
use std::time::Duration;
use zrecord::remote::objstore::presign_prefix;
use zrecord::serve::viewer_assets::{encode_component, viewer_link};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store or small dataset in an S3 bucket (s3://bucket/prefix), read with AWS_* credentials.
    store: String,
    /// How long the link works: 90s, 30m, 1h, 2d (at most 7 days).
    #[arg(long, value_name = "AGE", value_parser = parse_age, default_value = "1h")]
    expires: Duration,
    /// The viewer the link opens [default: http://127.0.0.1:8750/, `zrecord serve`'s].
    #[arg(long, value_name = "BASE")]
    viewer: Option<String>,
}

pub fn run(_ctx: &Ctx, a: Args) -> CliResult {
    let signed = presign_prefix(&a.store, a.expires)?;
    // The directory's https:// URL (any signed file's, less its path below
    // it) and {"meta.zr": "X-Amz-…", "shards/…/meta.zr": …}: each file's query.
    let (first, url) = &signed[0];
    let path = url.split_once('?').map_or(url.as_str(), |(p, _)| p);
    let dir = path
        .strip_suffix(first.as_str())
        .ok_or_else(|| Fail::Msg(format!("{}: a presigned URL does not end in its path {first}", a.store)))?;
    let queries: serde_json::Map<String, serde_json::Value> =
        signed.iter().map(|(p, u)| (p.clone(), u.split_once('?').map_or("", |(_, q)| q).into())).collect();
    let base = a.viewer.unwrap_or_else(|| format!("http://127.0.0.1:{DEFAULT_PORT}/"));
    let link = format!(
        "{}&signed={}",
        viewer_link(base.split('#').next().unwrap_or_default(), dir, None),
        encode_component(&serde_json::Value::Object(queries).to_string())
    );
    let mut out = Out::new();
    out.line(&format!("viewer: {link}"))?;
    out.line(&format!(
        "presigned GET URLs for the {} files of {}, valid {} s: anyone with this link can read them until then ({} bytes)",
        signed.len(),
        a.store,
        a.expires.as_secs(),
        link.len()
    ))?;
    out.flush()
}
