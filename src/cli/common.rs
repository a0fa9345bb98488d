//! What every command shares: the failure type, progress bars, stdout,
//! sizes for humans, and removing a half-made output.

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{self, BufWriter, IsTerminal, StdoutLock, Write};
use std::path::{Path, PathBuf};
use zrecord::training::dict::Tier;
use zrecord::{Codec, CreateOptions};

/// Why a command failed.
#[derive(Debug)]
pub enum Fail {
    /// Print `error: <message>` and exit 1.
    Msg(String),
    /// Stdout was closed by its reader: stop quietly.
    BrokenPipe,
    /// Already reported on stdout/stderr (verify's problems): exit 1 silently.
    Reported,
}

/// Result of a command step.
pub type CliResult<T = ()> = Result<T, Fail>;

impl From<zrecord::Error> for Fail {
    fn from(e: zrecord::Error) -> Self {
        Fail::Msg(e.to_string())
    }
}

impl From<String> for Fail {
    fn from(s: String) -> Self {
        Fail::Msg(s)
    }
}

impl From<&str> for Fail {
    fn from(s: &str) -> Self {
        Fail::Msg(s.to_string())
    }
}

/// An I/O error on `path` while doing `op`, as a user-facing failure.
pub fn io_fail(path: &Path, op: &str, e: io::Error) -> Fail {
    Fail::Msg(format!("{}: {op}: {e}", path.display()))
}

/// Settings shared by every command.
pub struct Ctx {
    quiet: bool,
    bars: bool,
}

impl Ctx {
    pub fn new(quiet: bool) -> Ctx {
        Ctx { quiet, bars: !quiet && io::stderr().is_terminal() }
    }

    /// A progress bar over `len` records, drawn on stderr when it is a terminal.
    pub fn bar(&self, len: u64, what: &str) -> ProgressBar {
        if !self.bars {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg:>10} [{bar:32}] {human_pos}/{human_len} records ({elapsed}, {eta} left)",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_message(what.to_string());
        bar
    }

    /// A spinner for work of unknown length (dictionary training).
    pub fn spinner(&self, what: &str) -> ProgressBar {
        if !self.bars {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("valid template"));
        bar.set_message(what.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        bar
    }

    /// A warning on stderr (suppressed by `--quiet`).
    pub fn warn(&self, message: &str) {
        if !self.quiet {
            let _ = writeln!(io::stderr(), "warning: {message}");
        }
    }
}

/// Buffered stdout whose write errors become failures (a closed pipe ends quietly).
pub struct Out {
    w: BufWriter<StdoutLock<'static>>,
}

impl Out {
    pub fn new() -> Out {
        Out { w: BufWriter::with_capacity(1 << 16, io::stdout().lock()) }
    }
    pub fn line(&mut self, text: &str) -> CliResult {
        self.w.write_all(text.as_bytes()).and_then(|()| self.w.write_all(b"\n")).map_err(out_fail)
    }
    pub fn flush(&mut self) -> CliResult {
        self.w.flush().map_err(out_fail)
    }
}

fn out_fail(e: io::Error) -> Fail {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Fail::BrokenPipe
    } else {
        Fail::Msg(format!("writing to stdout: {e}"))
    }
}

/// `12.50 KiB (12800 bytes)`.
pub fn size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{} ({bytes} bytes)", HumanBytes(bytes))
    }
}

/// A shape as NumPy prints it: `()`, `(5,)`, `(3, 16, 16)`.
pub fn shape_text(shape: &[u64]) -> String {
    match shape {
        [d] => format!("({d},)"),
        _ => format!("({})", shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// A shape as a JSON array with Python's spacing: `[3, 16, 16]`.
pub fn shape_json(shape: &[u64]) -> String {
    format!("[{}]", shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", "))
}

/// Removes an output a command created when the command fails (or panics).
///
/// A store output must not exist or be an empty directory; a file output
/// must not exist. On failure a store directory the command created is
/// removed whole; in a directory that existed (empty) only its contents go.
pub struct Cleanup {
    path: PathBuf,
    what: Made,
    armed: bool,
}

enum Made {
    StoreDir,
    ContentsOfExistingDir,
    File,
}

impl Cleanup {
    /// Claim `path` for a new store.
    pub fn store(path: &Path) -> CliResult<Cleanup> {
        let what = match std::fs::read_dir(path) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(Fail::Msg(format!(
                        "{}: already exists and is not empty; choose a new path (or remove it first)",
                        path.display()
                    )));
                }
                Made::ContentsOfExistingDir
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Made::StoreDir,
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                return Err(Fail::Msg(format!(
                    "{}: already exists as a file; choose a new path for the store",
                    path.display()
                )))
            }
            Err(e) => return Err(io_fail(path, "list", e)),
        };
        Ok(Cleanup { path: path.to_path_buf(), what, armed: true })
    }

    /// Claim `path` for a new file (the caller creates it with `create_new`).
    pub fn file(path: &Path) -> CliResult<Cleanup> {
        if path.symlink_metadata().is_ok() {
            return Err(Fail::Msg(format!(
                "{}: already exists; choose a new path (or remove it first)",
                path.display()
            )));
        }
        Ok(Cleanup { path: path.to_path_buf(), what: Made::File, armed: true })
    }

    /// Create the claimed file, refusing one that appeared meanwhile.
    pub fn create_file(&self) -> CliResult<std::fs::File> {
        std::fs::OpenOptions::new().write(true).create_new(true).open(&self.path).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                Fail::Msg(format!("{}: already exists; choose a new path", self.path.display()))
            } else {
                io_fail(&self.path, "create", e)
            }
        })
    }

    /// The output is complete: keep it.
    pub fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let _ = match self.what {
            Made::StoreDir => std::fs::remove_dir_all(&self.path),
            Made::File => std::fs::remove_file(&self.path),
            Made::ContentsOfExistingDir => std::fs::read_dir(&self.path).map(|entries| {
                for entry in entries.flatten() {
                    let _ = std::fs::remove_file(entry.path());
                }
            }),
        };
    }
}

/// Parse `RANK/WORLD`.
pub fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (r, w) = s.split_once('/').ok_or_else(|| format!("{s:?}: expected RANK/WORLD, e.g. 0/4"))?;
    let num = |t: &str| t.trim().parse::<u64>().map_err(|_| format!("{s:?}: expected RANK/WORLD, e.g. 0/4"));
    Ok((num(r)?, num(w)?))
}

/// `--codec`, `--dict-tier` and `--dict`, shared by the commands that write stores.
#[derive(clap::Args, Debug)]
pub struct CodecArgs {
    /// Record codec of the new store: raw, zstd or zstd_dict.
    #[arg(long, default_value = "zstd", value_parser = parse_codec)]
    pub codec: Codec,
    /// Dictionary tier for zstd_dict (trained from the input): fast, balanced or max.
    #[arg(long, default_value = "balanced", value_parser = parse_tier, conflicts_with = "dict")]
    pub dict_tier: Tier,
    /// Use this dictionary file for zstd_dict instead of training one (see train-dict).
    #[arg(long, value_name = "FILE")]
    pub dict: Option<PathBuf>,
}

fn parse_codec(s: &str) -> Result<Codec, String> {
    s.parse()
}

pub fn parse_tier(s: &str) -> Result<Tier, String> {
    s.parse()
}

impl CodecArgs {
    /// Create options for the new store; `train` is called only when a
    /// `zstd_dict` store needs a dictionary and none was given.
    pub fn options(
        &self,
        ctx: &Ctx,
        train: impl FnOnce(Tier) -> CliResult<Vec<u8>>,
    ) -> CliResult<CreateOptions> {
        if self.codec != Codec::ZstdDict {
            if self.dict.is_some() {
                return Err(Fail::Msg(format!(
                    "--dict needs --codec zstd_dict (the codec is {})",
                    self.codec
                )));
            }
            return Ok(CreateOptions::codec(self.codec));
        }
        let dict = match &self.dict {
            Some(path) => std::fs::read(path).map_err(|e| io_fail(path, "read dictionary", e))?,
            None => {
                let spin = ctx.spinner(&format!("training a {} dictionary", tier_name(self.dict_tier)));
                let dict = train(self.dict_tier);
                spin.finish_and_clear();
                dict.map_err(|e| match e {
                    Fail::Msg(m) => Fail::Msg(format!("{m}; or pass a dictionary with --dict FILE")),
                    other => other,
                })?
            }
        };
        Ok(CreateOptions::with_dict(dict))
    }
}

/// `fast`, `balanced` or `max`.
pub fn tier_name(t: Tier) -> &'static str {
    match t {
        Tier::Fast => "fast",
        Tier::Balanced => "balanced",
        Tier::Max => "max",
    }
}

/// A size in bytes: a number with an optional unit (`K`/`KiB`, `M`/`MiB`,
/// `G`/`GiB`, `T`/`TiB`: powers of 1024; `B` or none: bytes).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().trim_end_matches("ib").trim_end_matches('b') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(format!("{s:?}: unknown unit (use B, KiB, MiB, GiB or TiB)")),
    };
    let n: f64 = num.parse().map_err(|_| format!("{s:?}: not a size (e.g. 512MiB, 20GiB)"))?;
    let bytes = n * (1u64 << shift) as f64;
    if !(bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64) {
        return Err(format!("{s:?}: out of range"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod size_tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("20 GiB").unwrap(), 20 << 30);
        assert_eq!(parse_size("7b").unwrap(), 7);
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
    }
}
