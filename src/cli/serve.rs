//! `zrecord serve DIR` and `zrecord view STORE`: stores as static files over
//! HTTP (Range, ETag, CORS, never compressed; see `zrecord::serve`) with the
//! web viewer at `/`, until Ctrl-C. `zrecord demo` serves its stores the
//! same way. `zrecord view URL` and `zrecord serve DIR --proxy URL` serve a
//! remote prefix (a bucket's, read with this process's credentials, or an
//! HTTP server's) through the same server: the browser never sees a key.
//!
//! The port is 8750 unless `--port` says otherwise; when 8750 is taken a
//! free port is used instead (and said on stderr), while a taken `--port` is
//! an error. `--port 0` always picks a free port.
//!
//! The first line of stdout is `viewer: URL`, the page to open (scripts read
//! it). Ctrl-C ends the process by the default signal action: serving writes
//! nothing, so there is nothing to clean up.

use super::common::{CliResult, Ctx, Fail, Out};
use super::records::url_of;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use zrecord::remote::{block_on, AnyTransport, Ranged};
use zrecord::serve::viewer_assets::{has_wasm_reader, viewer_assets, viewer_assets_from, viewer_link};
use zrecord::serve::{self, ListedStore, ServeConfig, ServerHandle, Upstream};
use zrecord::Error;
use zrecord::Records;

/// The port tried first: fixed, so a bookmarked viewer link keeps working.
pub const DEFAULT_PORT: u16 = 8750;
/// Stores named one by one on stdout before the rest are only counted.
const LISTED: usize = 50;

/// How to serve: shared by `serve`, `view` and `demo`.
#[derive(clap::Args, Debug)]
pub struct Net {
    /// Port to listen on [default: 8750, or a free port when it is taken]; 0 picks a free port.
    #[arg(long, value_name = "P")]
    port: Option<u16>,
    /// Address to listen on (0.0.0.0 or :: to serve the network).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Open the viewer in the default browser.
    #[arg(long)]
    open: bool,
    /// Log every request on stderr.
    #[arg(short, long)]
    verbose: bool,
    /// Most connections held at once; one more is answered 503.
    #[arg(long, value_name = "N", default_value_t = serve::MAX_CONNECTIONS)]
    max_connections: usize,
    /// Serve the viewer's files from this source checkout (its www/ and pkg/),
    /// re-read on every request: for working on the viewer.
    #[arg(long, value_name = "CHECKOUT", hide = true)]
    viewer_dir: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Directory of stores (found down to 6 levels below it).
    dir: PathBuf,
    /// Also serve this remote prefix (s3://, gs://, az://, http(s)://) below
    /// /remote/, read with this process's credentials (AWS_*, GOOGLE_*, AZURE_*).
    #[arg(long, value_name = "URL")]
    proxy: Option<String>,
    #[command(flatten)]
    net: Net,
}

#[derive(clap::Args, Debug)]
pub struct ViewArgs {
    /// Store or dataset: a local directory, or a URL (s3://, gs://, az://,
    /// http(s)://) whose files this server reads with your credentials.
    store: PathBuf,
    /// Open the viewer at this record.
    #[arg(long, value_name = "IDX")]
    index: Option<u64>,
    #[command(flatten)]
    net: Net,
}

pub fn run_serve(ctx: &Ctx, a: ServeArgs) -> CliResult {
    let dir = local_dir(&a.dir, "serve")?;
    let (datasets, stores): (Vec<ListedStore>, Vec<ListedStore>) =
        serve::list_stores(&dir, ServeConfig::new(&dir).store_depth)?.into_iter().partition(|s| s.dataset);
    let proxy = match &a.proxy {
        Some(remote) => Some((PROXY_MOUNT, upstream(remote)?)),
        None => None,
    };
    let server = start_with(ctx, &dir, &a.net, proxy)?;
    let url = server.url();
    let mut out = Out::new();
    out.line(&format!("viewer: {url}"))?;
    if let Some(remote) = &a.proxy {
        let at = absolute(&url, &format!("/{PROXY_MOUNT}/"));
        out.line(&format!(
            "proxying {remote} at {at} (open it: {})",
            viewer_link(&url, &format!("/{PROXY_MOUNT}/"), None)
        ))?;
    }
    out.line(&format!(
        "serving {} ({} stores, {} datasets found; Range requests, CORS; Ctrl-C to stop)",
        dir.display(),
        stores.len(),
        datasets.len()
    ))?;
    if !datasets.is_empty() {
        out.line("")?;
        out.line("datasets:")?;
        let width = datasets.iter().map(|s| name(s).len()).max().unwrap_or(0);
        for d in &datasets {
            out.line(&format!("  {:<width$}  {}", name(d), absolute(&url, &d.url)))?;
        }
    }
    if stores.is_empty() {
        out.line("no stores found (a store is a directory holding meta.zr); the viewer can still open local folders")?;
    } else {
        out.line("")?;
        store_links(&mut out, &url, &stores)?;
        out.line("")?;
        let first = datasets.first().unwrap_or(&stores[0]);
        out.line(&format!("read over HTTP:  zrecord info {}", absolute(&url, &first.url)))?;
    }
    out.flush()?;
    drop(out);
    run_until_stopped(ctx, server, &url, &a.net)
}

pub fn run_view(ctx: &Ctx, a: ViewArgs) -> CliResult {
    if let Some(remote) = url_of(&a.store)? {
        return view_remote(ctx, remote, &a);
    }
    let dir = local_dir(&a.store, "view")?;
    let summary = {
        let store = zrecord::Store::open(&dir)?;
        if let Some(i) = a.index.filter(|&i| i >= store.len()) {
            return Err(Fail::Msg(format!("--index {i}: the store has {} records", store.len())));
        }
        format!("{} records, {}, {}", store.len(), store.dtype(), store.codec())
    };
    // The store directory is the root: the server shows this store and nothing else.
    let server = start(ctx, &dir, &a.net)?;
    let url = server.url();
    let link = viewer_link(&url, "/", a.index);
    let mut out = Out::new();
    out.line(&format!("viewer: {link}"))?;
    out.line(&format!("serving {} alone ({summary}) at {url}; Ctrl-C to stop", dir.display()))?;
    out.flush()?;
    drop(out);
    run_until_stopped(ctx, server, &link, &a.net)
}

/// Where `serve --proxy` puts the remote prefix.
const PROXY_MOUNT: &str = "remote";

/// A remote directory read file by file for the proxy: each read runs the
/// async transport to completion on a blocking thread of the server.
struct RemoteDir(AnyTransport);

impl Upstream for RemoteDir {
    fn read(&self, path: &str, range: Range<u64>) -> zrecord::Result<Ranged> {
        block_on(self.0.read_path(path, range))
    }
    fn name(&self) -> String {
        self.0.name()
    }
}

fn upstream(url: &str) -> CliResult<Arc<dyn Upstream>> {
    let transport = zrecord::open::remote_dir(url, &zrecord::open::Options::default())?;
    Ok(Arc::new(RemoteDir(transport)))
}

/// `zrecord view URL`: the viewer and a proxy of the remote store or
/// dataset at `/`.
fn view_remote(ctx: &Ctx, remote: &str, a: &ViewArgs) -> CliResult {
    let up = upstream(remote)?;
    // What is there: a store (meta.zr) or a dataset (zrecord.json); the
    // first read also checks the credentials, before a link is printed.
    let what = match up.read("meta.zr", 0..1) {
        Ok(_) => "store",
        Err(e @ Error::NotFound { .. }) if e.to_string().contains("no such bucket") => return Err(e.into()),
        Err(Error::NotFound { .. }) => match up.read("zrecord.json", 0..1) {
            Ok(_) => "dataset",
            Err(Error::NotFound { .. }) => {
                return Err(Fail::Msg(format!(
                    "{}: neither a store (no meta.zr) nor a dataset (no zrecord.json) is there",
                    up.name()
                )))
            }
            Err(e) => return Err(e.into()),
        },
        Err(e) => return Err(e.into()),
    };
    // Nothing of this folder is served: the proxy answers every path
    // but the viewer's own files.
    let server = start_with(ctx, &std::env::temp_dir(), &a.net, Some(("", up.clone())))?;
    let url = server.url();
    let link = viewer_link(&url, "/", a.index);
    let mut out = Out::new();
    out.line(&format!("viewer: {link}"))?;
    out.line(&format!(
        "serving the {what} {} through {url} (read with this process's credentials; \
         at most {} requests in flight upstream); Ctrl-C to stop",
        up.name(),
        serve::PROXY_IN_FLIGHT
    ))?;
    out.flush()?;
    drop(out);
    run_until_stopped(ctx, server, &link, &a.net)
}

/// A directory argument made absolute (so what is printed can be pasted anywhere).
fn local_dir(arg: &Path, command: &str) -> CliResult<PathBuf> {
    if url_of(arg)?.is_some() {
        return Err(Fail::Msg(format!("{}: {command} serves a local directory", arg.display())));
    }
    let arg = &super::records::local_path(arg)?;
    if !arg.is_dir() {
        return Err(Fail::Msg(format!("{}: not found (no such directory)", arg.display())));
    }
    arg.canonicalize().map_err(|e| super::common::io_fail(arg, "open", e))
}

/// Start serving `root` with the viewer.
pub fn start(ctx: &Ctx, root: &Path, net: &Net) -> CliResult<ServerHandle> {
    start_with(ctx, root, net, None)
}

/// Start serving `root` with the viewer, and a remote prefix below a path.
fn start_with(
    ctx: &Ctx,
    root: &Path,
    net: &Net,
    proxy: Option<(&str, Arc<dyn Upstream>)>,
) -> CliResult<ServerHandle> {
    let config = |port: u16| {
        let mut c = ServeConfig::new(root);
        c.proxy = proxy.as_ref().map(|(mount, up)| (mount.to_string(), Arc::clone(up)));
        c.host.clone_from(&net.host);
        c.port = port;
        c.verbose = net.verbose;
        c.max_connections = net.max_connections;
        c.assets = Some(match &net.viewer_dir {
            Some(checkout) => viewer_assets_from(checkout.clone()),
            None => viewer_assets(),
        });
        c
    };
    let started = match serve::start(config(net.port.unwrap_or(DEFAULT_PORT))) {
        Err(Error::Io { source, .. })
            if net.port.is_none() && source.kind() == std::io::ErrorKind::AddrInUse =>
        {
            ctx.warn(&format!(
                "port {DEFAULT_PORT} is taken; serving on a free port instead (or choose one with --port)"
            ));
            serve::start(config(0))
        }
        other => other,
    };
    let server = started.map_err(|e| match e {
        e @ Error::Io { op: "bind", .. } => {
            Fail::Msg(format!("{e} (choose another --port, or --port 0 for any free one)"))
        }
        e => e.into(),
    })?;
    if net.viewer_dir.is_none() && !has_wasm_reader() {
        ctx.warn(
            "this build holds no wasm reader (pkg/ was not built): the viewer page loads but cannot \
             open stores; run scripts/build-pkg.sh and rebuild",
        );
    }
    Ok(server)
}

/// One line per store: its path and its viewer link.
pub fn store_links(out: &mut Out, server_url: &str, stores: &[ListedStore]) -> CliResult {
    let width = stores.iter().take(LISTED).map(|s| name(s).len()).max().unwrap_or(0);
    for s in stores.iter().take(LISTED) {
        out.line(&format!("  {:<width$}  {}", name(s), viewer_link(server_url, &s.url, None)))?;
    }
    if stores.len() > LISTED {
        out.line(&format!("  ... and {} more (all at {server_url}api/stores)", stores.len() - LISTED))?;
    }
    Ok(())
}

fn name(s: &ListedStore) -> &str {
    if s.path.is_empty() {
        "."
    } else {
        &s.path
    }
}

/// `http://host:port/` + `/a/b/` without the doubled slash.
pub fn absolute(server_url: &str, path: &str) -> String {
    format!("{}{path}", server_url.trim_end_matches('/'))
}

/// Open `link` in a browser if asked, then serve until the process is stopped.
pub fn run_until_stopped(ctx: &Ctx, server: ServerHandle, link: &str, net: &Net) -> CliResult {
    if net.open {
        open_browser(ctx, link);
    }
    server.wait();
    Ok(())
}

fn open_browser(ctx: &Ctx, link: &str) {
    let opener = match std::env::consts::OS {
        "macos" => "open",
        _ => "xdg-open",
    };
    let spawned = Command::new(opener)
        .arg(link)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        // Reap it whenever it ends; the server keeps running meanwhile.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(e) => ctx.warn(&format!("could not run {opener} to open a browser ({e}); open {link} yourself")),
    }
}
