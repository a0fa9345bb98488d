//! The `zrecord` binary over HTTP, end to end: `zrecord serve` (and `view`,
//! `demo`) run as child processes on free ports, and the other commands read
//! the stores they serve by URL, exactly as they read them from disk.

mod common;
#[path = "common/nginx.rs"]
mod nginx;

use common::{copy_store, damage_record, fixtures, fixtures_dir, unpublished};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Output, Stdio};

fn zrecord() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zrecord"))
}

fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    zrecord().args(args.iter().map(|a| a.as_ref())).output().unwrap()
}

/// Run and expect success; stdout.
fn ok(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let out = run(args);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {text}{}",
        args.iter().map(|a| a.as_ref().to_owned()).collect::<Vec<_>>(),
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// A server child process, killed (and reaped) when dropped, even when the
/// test panics.
struct Served {
    child: Child,
    /// What it printed before serving (up to and including the line the
    /// caller waited for).
    lines: Vec<String>,
    stderr: Option<ChildStderr>,
}

impl Served {
    /// Run `zrecord ARGS`, read stdout up to the line `last` matches, and
    /// check the first line is `viewer: URL`.
    fn start(args: &[&dyn AsRef<std::ffi::OsStr>], last: impl Fn(&str) -> bool) -> Served {
        let child = zrecord()
            .args(args.iter().map(|a| a.as_ref()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut served = Served { child, lines: Vec::new(), stderr: None };
        let mut stdout = BufReader::new(served.child.stdout.take().unwrap());
        served.stderr = served.child.stderr.take();
        loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap() == 0 {
                let mut err = String::new();
                let _ = served.stderr.take().unwrap().read_to_string(&mut err);
                panic!("zrecord exited early: {:?}\nstderr: {err}", served.lines);
            }
            let line = line.trim_end().to_string();
            let done = last(&line);
            served.lines.push(line);
            if done {
                break;
            }
        }
        assert!(served.lines[0].starts_with("viewer: http://"), "{:?}", served.lines);
        served
    }

    /// The viewer address on the first line.
    fn viewer(&self) -> &str {
        self.lines[0].strip_prefix("viewer: ").unwrap()
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    fn origin(&self) -> String {
        let v = self.viewer();
        let end = v[7..].find('/').unwrap() + 7;
        v[..end].to_string()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `zrecord serve DIR` on a free port.
fn serve(dir: &Path) -> Served {
    Served::start(&[&"serve", &dir, &"--port", &"0"], |l| {
        l.starts_with("read over HTTP:") || l.starts_with("no stores")
    })
}

/// One GET with optional Range header: status, Content-Range, Content-Type, body.
fn get(url: &str, range: Option<&str>) -> (u16, Option<String>, String, Vec<u8>) {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut req = agent.get(url);
    if let Some(r) = range {
        req = req.header("Range", r);
    }
    let mut resp = req.call().unwrap();
    let header = |n: &str| resp.headers().get(n).map(|v| v.to_str().unwrap().to_string());
    let (range, ty) = (header("content-range"), header("content-type").unwrap_or_default());
    let body = resp.body_mut().read_to_vec().unwrap();
    (resp.status().as_u16(), range, ty, body)
}

/// `info --json` with what only a local store has (its path, allocated
/// blocks) taken out.
fn info_json(store: &dyn AsRef<std::ffi::OsStr>) -> Value {
    let mut v: Value = serde_json::from_str(&ok(&[&"info", &"--json", store])).unwrap();
    v["path"] = Value::Null;
    v["sizes"]["allocated"] = Value::Null;
    v
}

#[test]
fn serve_answers_the_viewer_the_store_list_and_ranges() {
    let server = serve(&fixtures_dir());
    let origin = server.origin();
    let (status, _, ty, body) = get(&format!("{origin}/"), None);
    assert_eq!(status, 200);
    assert!(ty.starts_with("text/html"), "{ty}");
    assert!(String::from_utf8_lossy(&body).contains("<html"));

    let (status, _, ty, body) = get(&format!("{origin}/api/stores"), None);
    assert_eq!((status, ty.as_str()), (200, "application/json"));
    let listed: Vec<Value> = serde_json::from_slice(&body).unwrap();
    let paths: Vec<&str> = listed.iter().map(|s| s["path"].as_str().unwrap()).collect();
    for f in fixtures() {
        assert!(paths.contains(&f.name.as_str()), "{} missing from {paths:?}", f.name);
        // One viewer link per store on stdout.
        let link = format!("#url=%2F{}%2F", f.name);
        assert!(server.lines.iter().any(|l| l.contains(&f.name) && l.ends_with(&link)), "{link}");
    }

    let (status, range, _, body) = get(&format!("{origin}/dense-u8-img-raw/data.zr"), Some("bytes=0-9"));
    assert_eq!(status, 206);
    assert_eq!(range.as_deref(), Some("bytes 0-9/30720"));
    assert_eq!(body, std::fs::read(fixtures_dir().join("dense-u8-img-raw/data.zr")).unwrap()[..10]);
}

#[test]
fn info_and_checksum_over_http_equal_local_for_every_fixture() {
    let server = serve(&fixtures_dir());
    let origin = server.origin();
    for f in fixtures() {
        let url = format!("{origin}/{}/", f.name);
        assert_eq!(info_json(&url), info_json(&f.path()), "{}", f.name);
        let remote = ok(&[&"checksum", &"--json", &url]);
        assert_eq!(remote, ok(&[&"checksum", &"--json", &f.path()]), "{}", f.name);
        assert_eq!(remote.lines().count() as u64, f.len);
    }
    // Text form: what only a disk can tell is left out.
    let url = format!("{origin}/dense-u8-img-zstd_dict/");
    let text = ok(&[&"info", &url]);
    assert!(text.contains(&format!("store        {url}")), "{text}");
    assert!(text.contains("dict.zr      23.81 KiB") && !text.contains("on disk"), "{text}");
}

/// nginx answers a Range request on an empty data.zr with 200 and no body:
/// `info` and `checksum` read empty stores from it as from disk.
#[test]
fn empty_stores_from_nginx_read_like_local() {
    let server = nginx::Nginx::start(&fixtures_dir());
    let empty: Vec<_> = fixtures().into_iter().filter(|f| f.len == 0).collect();
    assert!(!empty.is_empty());
    for f in empty {
        let url = server.url(&f.name);
        assert_eq!(info_json(&url), info_json(&f.path()), "{}", f.name);
        assert_eq!(ok(&[&"checksum", &url]), "", "{}", f.name);
    }
}

#[test]
fn get_export_recode_and_train_dict_read_urls_like_directories() {
    let server = serve(&fixtures_dir());
    let origin = server.origin();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in ["ragged-f32-mixed-rank-raw", "dense-i32-bigendian-zstd", "dense-u8-img-zstd_dict"] {
        let (url, local) = (format!("{origin}/{name}"), fixtures_dir().join(name));
        let args = |s: &dyn AsRef<std::ffi::OsStr>| ok(&[&"get", &"--json", s, &"0", &"2", &"1"]);
        assert_eq!(args(&url), args(&local), "{name}");
    }
    // Dense and Ragged exports are byte-identical to the local ones.
    let url = format!("{origin}/dense-f32-zstd/");
    ok(&[&"export", &url, &d.join("remote.npy")]);
    ok(&[&"export", &fixtures_dir().join("dense-f32-zstd"), &d.join("local.npy")]);
    assert_eq!(std::fs::read(d.join("remote.npy")).unwrap(), std::fs::read(d.join("local.npy")).unwrap());
    let url = format!("{origin}/ragged-i32-tokens-zstd/");
    ok(&[&"export", &url, &d.join("rv.npy"), &d.join("ro.npy")]);
    ok(&[&"export", &fixtures_dir().join("ragged-i32-tokens-zstd"), &d.join("lv.npy"), &d.join("lo.npy")]);
    assert_eq!(std::fs::read(d.join("rv.npy")).unwrap(), std::fs::read(d.join("lv.npy")).unwrap());
    assert_eq!(std::fs::read(d.join("ro.npy")).unwrap(), std::fs::read(d.join("lo.npy")).unwrap());
    // Recode from a URL, training the dictionary over HTTP: the same
    // dictionary as from disk, the same records.
    ok(&[&"recode", &url, &d.join("recoded"), &"--codec", &"zstd_dict", &"--dict-tier", &"fast"]);
    ok(&[
        &"train-dict",
        &fixtures_dir().join("ragged-i32-tokens-zstd"),
        &"--tier",
        &"fast",
        &"-o",
        &d.join("l.dict"),
    ]);
    assert_eq!(std::fs::read(d.join("recoded/dict.zr")).unwrap(), std::fs::read(d.join("l.dict")).unwrap());
    assert_eq!(
        ok(&[&"checksum", &d.join("recoded")]),
        ok(&[&"checksum", &fixtures_dir().join("ragged-i32-tokens-zstd")])
    );
    // loaderx trained the fixture's dictionary from these records.
    ok(&[&"train-dict", &format!("{origin}/dense-u8-img-raw/"), &"-o", &d.join("r.dict")]);
    assert_eq!(
        std::fs::read(d.join("r.dict")).unwrap(),
        std::fs::read(fixtures_dir().join("dense-u8-img-zstd_dict/dict.zr")).unwrap()
    );
}

#[test]
fn verify_over_http_passes_fixtures_and_names_damaged_records() {
    let server = serve(&fixtures_dir());
    let origin = server.origin();
    for f in fixtures() {
        let url = format!("{origin}/{}/", f.name);
        let text = ok(&[&"verify", &url]);
        assert!(text.contains(": ok: ") && text.contains("0 problems, 0 warnings"), "{}: {text}", f.name);
        assert!(text.contains("note: not checked remotely: files other than"), "{text}");
        let v: Value = serde_json::from_str(&ok(&[&"verify", &"--json", &url])).unwrap();
        assert_eq!((v["ok"].as_bool(), v["len"].as_u64()), (Some(true), Some(f.len)), "{}", f.name);
        assert_eq!(v["not_checked"].as_array().unwrap().len(), 2);
    }
    for name in unpublished() {
        let out = run(&[&"verify", &format!("{origin}/{name}/")]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("problem: unpublished build"), "{name}");
    }

    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join("damaged");
    copy_store(&fixtures_dir().join("dense-u8-img-zstd"), &damaged);
    damage_record(&damaged, 7);
    damage_record(&damaged, 31);
    let bad_loc = dir.path().join("bad-loc");
    copy_store(&fixtures_dir().join("ragged-i32-tokens-raw"), &bad_loc);
    let mut meta = std::fs::read(bad_loc.join("meta.zr")).unwrap();
    meta[4096 + 16 * 5..4096 + 16 * 5 + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(bad_loc.join("meta.zr"), meta).unwrap();
    let short = dir.path().join("short");
    copy_store(&fixtures_dir().join("dense-f32-zstd"), &short);
    let data = std::fs::read(short.join("data.zr")).unwrap();
    std::fs::write(short.join("data.zr"), &data[..data.len() - 1]).unwrap();
    let tmp_server = serve(dir.path());
    let base = tmp_server.origin();

    let out = run(&[&"verify", &format!("{base}/damaged/")]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("problem: ") && text.contains("record 7") && text.contains("record 31"), "{text}");
    assert!(text.contains("FAILED"), "{text}");
    let out = run(&[&"verify", &"--json", &format!("{base}/damaged")]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let indices: Vec<u64> =
        v["problems"].as_array().unwrap().iter().filter_map(|p| p["index"].as_u64()).collect();
    assert_eq!(indices, [7, 31], "{v}");
    // Local and remote find the same problems.
    let local: Value = serde_json::from_slice(&run(&[&"verify", &"--json", &damaged]).stdout).unwrap();
    assert_eq!(v["problems"], local["problems"]);

    let out = run(&[&"verify", &format!("{base}/bad-loc/")]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("record 5") && text.contains("tail_offset"), "{text}");

    // A data.zr shorter than tail_offset is a problem, not an error.
    let out = run(&[&"verify", &format!("{base}/short/")]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("problem: bad format: data.zr"), "{text}");
}

#[test]
fn verify_over_http_batches_its_requests() {
    // A store of 3,000 small records: far fewer requests than records.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("many");
    let npy = dir.path().join("rows.npy");
    let rows: Vec<u8> = (0..3000u32 * 8).map(|i| (i * 7 % 251) as u8).collect();
    let mut file =
        zrecord::convert::npy::encode_header(&zrecord::DType::parse("|u1").unwrap(), false, &[3000, 8]);
    file.extend(&rows);
    std::fs::write(&npy, file).unwrap();
    ok(&[&"import", &"npy", &npy, &store, &"--codec", &"zstd"]);
    std::fs::remove_file(&npy).unwrap();
    let server = serve(dir.path());
    let v: Value =
        serde_json::from_str(&ok(&[&"verify", &"--json", &format!("{}/many/", server.origin())])).unwrap();
    assert_eq!(v["ok"], true);
    let requests = v["requests"].as_u64().unwrap();
    // Open, data.zr's size, locations and frames, and the sealed store's sidecar.
    assert!(requests <= 5, "{requests} requests for 3000 records");
}

#[test]
fn unreachable_urls_fail_clearly() {
    // Nothing listens on a port we just closed.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/store/");
    let out = run(&[&"info", &url]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("error: ") && err.contains(&url), "{err}");
    let server = serve(&fixtures_dir());
    let out = run(&[&"checksum", &format!("{}/no-such-store/", server.origin())]);
    assert!(String::from_utf8(out.stderr).unwrap().contains("not found (HTTP 404)"));
}

#[test]
fn view_serves_one_store_and_prints_its_link() {
    let store = fixtures_dir().join("dense-u8-img-raw");
    let server =
        Served::start(&[&"view", &store, &"--port", &"0", &"--index", &"3"], |l| l.starts_with("serving "));
    let link = server.viewer();
    assert!(link.ends_with("/#url=%2F&i=3"), "{link}");
    let origin = server.origin();
    // The store is the root: only it is served.
    let (_, _, _, body) = get(&format!("{origin}/api/stores"), None);
    let listed: Vec<Value> = serde_json::from_slice(&body).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["url"], "/");
    let (status, _, _, _) = get(&format!("{origin}/meta.zr"), Some("bytes=0-31"));
    assert_eq!(status, 206);
    assert_eq!(info_json(&format!("{origin}/")), info_json(&store));
}

#[test]
fn demo_serves_its_stores_with_the_viewer() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("demo");
    let server =
        Served::start(&[&"demo", &"--dir", &out_dir, &"--port", &"0"], |l| l.starts_with("serving "));
    let text = server.lines.join("\n");
    assert!(text.contains("demo stores in") && text.contains("#url=%2Fimages-raw%2F"), "{text}");
    let origin = server.origin();
    let (_, _, _, body) = get(&format!("{origin}/api/stores"), None);
    // Six stores and the dataset's four streams.
    assert_eq!(serde_json::from_slice::<Vec<Value>>(&body).unwrap().len(), 10);
    assert!(text.contains("#url=%2Fdataset%2F"), "{text}");
    assert!(text.contains(&format!("try:  zrecord info {origin}/images-raw/")), "{text}");
    let url = format!("{origin}/tokens-zstd/");
    assert_eq!(ok(&[&"checksum", &url]), ok(&[&"checksum", &out_dir.join("tokens-zstd")]));
}

#[test]
fn a_taken_port_falls_back_or_fails() {
    // The default port taken (by us, or by anyone): a free port, said on stderr.
    let _hold = TcpListener::bind(("127.0.0.1", 8750));
    let mut server = Served::start(&[&"serve", &fixtures_dir()], |l| l.starts_with("read over HTTP:"));
    assert!(!server.viewer().contains(":8750/"), "{}", server.viewer());
    let _ = server.child.kill();
    let mut err = String::new();
    server.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("port 8750 is taken; serving on a free port"), "{err}");
    // A port asked for and taken: an error.
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let out = run(&[&"serve", &fixtures_dir(), &"--port", &port]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bind") && err.contains("--port"), "{err}");
}

/// `serve` lists a dataset beside the stores (a `kind` field the viewer can
/// tell it by; store entries unchanged), and it reads over HTTP.
#[test]
fn serve_lists_datasets_and_they_read_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ds");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dataset-v1");
    assert!(Command::new("cp").arg("-r").arg(&fixture).arg(&root).status().unwrap().success());
    let served = serve(dir.path());
    assert!(served.lines.iter().any(|l| l == "datasets:"), "{:?}", served.lines);
    let (status, _, _, body) = get(&format!("{}/api/stores", served.origin()), None);
    assert_eq!(status, 200);
    let list: Value = serde_json::from_slice(&body).unwrap();
    let ds = list.as_array().unwrap().iter().find(|e| e["path"] == "ds").unwrap();
    assert_eq!(ds["kind"], "dataset");
    assert_eq!(ds["dataset"]["length"], 10);
    assert_eq!(ds["dataset"]["columns"], serde_json::json!(["x", "tokens"]));
    assert!(list
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"].is_null())
        .all(|e| e["files"]["meta.zr"].is_u64()));
    let url = format!("{}/ds/", served.origin());
    let info: Value = serde_json::from_str(&ok(&[&"info", &"--json", &url])).unwrap();
    assert_eq!((info["dataset"].as_bool(), info["len"].as_u64()), (Some(true), Some(10)));
    assert!(ok(&[&"verify", &url]).contains(": ok: version 1"));
}
