//! The command line: one small module per command, sharing [`common`]
//! (errors, progress bars, output cleanup) and [`records`] (the store a
//! command reads from: a directory, or a bucket or `http(s)://` URL).
//!
//! Conventions every command follows:
//! - results go to stdout, progress bars and warnings to stderr; bars show
//!   only on a terminal and never with `--quiet`;
//! - a failure prints `error: <message>` on stderr and exits with status 1
//!   (2 for a command line clap rejects); `verify` exits 1 when it finds a
//!   problem;
//! - a command that creates a store or file refuses an existing output (an
//!   existing empty directory is accepted for a store, as loaderx does) and,
//!   when it fails, removes what it created; a store whose build is
//!   interrupted harder (a kill) keeps the writer's building marker and
//!   never opens as a valid store;
//! - a closed stdout (`zrecord checksum s | head`) ends the command quietly.

mod bench;
mod checksum;
mod common;
#[cfg(feature = "serve")]
mod demo;
mod export;
mod gc;
mod get;
mod import;
mod info;
mod npyfile;
#[cfg(all(feature = "cloud", feature = "serve"))]
mod presign;
#[cfg(feature = "cloud")]
mod push;
mod recode;
mod records;
mod sample;
mod seal;
#[cfg(feature = "serve")]
mod serve;
mod train_dict;
mod values;
mod verify;
mod verify_dataset;

use clap::{Parser, Subcommand};
use common::{Ctx, Fail};
use std::io::Write;
use std::process::ExitCode;

/// Random-access record stores for ML training data (loaderx 2.0.1 format).
#[derive(Parser, Debug)]
#[command(name = "zrecord", version, about, max_term_width = 100)]
struct Cli {
    /// No progress bars or warnings on stderr (errors are still printed).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Describe a store: geometry, dtype, codec, length and sizes.
    Info(info::Args),
    /// SHA-256 of every record's payload, one line per record.
    Checksum(checksum::Args),
    /// Rewrite a store with another codec.
    Recode(recode::Args),
    /// Print the sampler's index batches, one JSON array per line.
    Sample(sample::Args),
    /// Make a store from .npy files.
    #[command(subcommand)]
    Import(import::Source),
    /// Write a store's records to .npy files.
    Export(export::Args),
    /// Print records for a quick look.
    Get(get::Args),
    /// Decode every record and check every rule of the format (and the checksums, when sealed).
    Verify(verify::Args),
    /// Write a store's checksum sidecar (sums.zr) so silent corruption can be detected.
    Seal(seal::Args),
    /// Train a zstd dictionary from a store or a .npy file.
    TrainDict(train_dict::Args),
    /// Write small demo stores and serve them with the web viewer.
    #[cfg(feature = "serve")]
    Demo(demo::Args),
    /// Random batches from a store, local or remote: records/s, latency, requests per batch.
    Bench(bench::Args),
    /// Remove a dataset's uncommitted shards older than an age.
    Gc(gc::Args),
    /// Publish a local store to a bucket (s3://, gs://, az://), meta.zr last.
    #[cfg(feature = "cloud")]
    Push(push::Args),
    /// A viewer link that opens a private s3:// store or small dataset, no credentials, until it expires.
    #[cfg(all(feature = "cloud", feature = "serve"))]
    Presign(presign::Args),
    /// Serve a directory of stores over HTTP with the web viewer, until Ctrl-C.
    #[cfg(feature = "serve")]
    Serve(serve::ServeArgs),
    /// Serve one store with the web viewer and print its link, until Ctrl-C.
    #[cfg(feature = "serve")]
    View(serve::ViewArgs),
}

/// Parse the command line, run the command, report a failure.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let ctx = Ctx::new(cli.quiet);
    let result = match cli.command {
        Command::Info(a) => info::run(&ctx, a),
        Command::Checksum(a) => checksum::run(&ctx, a),
        Command::Recode(a) => recode::run(&ctx, a),
        Command::Sample(a) => sample::run(&ctx, a),
        Command::Import(a) => import::run(&ctx, a),
        Command::Export(a) => export::run(&ctx, a),
        Command::Get(a) => get::run(&ctx, a),
        Command::Verify(a) => verify::run(&ctx, a),
        Command::Seal(a) => seal::run(&ctx, a),
        Command::TrainDict(a) => train_dict::run(&ctx, a),
        #[cfg(feature = "serve")]
        Command::Demo(a) => demo::run(&ctx, a),
        Command::Bench(a) => bench::run(&ctx, a),
        Command::Gc(a) => gc::run(&ctx, a),
        #[cfg(feature = "cloud")]
        Command::Push(a) => push::run(&ctx, a),
        #[cfg(all(feature = "cloud", feature = "serve"))]
        Command::Presign(a) => presign::run(&ctx, a),
        #[cfg(feature = "serve")]
        Command::Serve(a) => serve::run_serve(&ctx, a),
        #[cfg(feature = "serve")]
        Command::View(a) => serve::run_view(&ctx, a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail::BrokenPipe) => ExitCode::SUCCESS,
        Err(Fail::Reported) => ExitCode::FAILURE,
        Err(Fail::Msg(message)) => {
            let _ = writeln!(std::io::stderr(), "error: {message}");
            ExitCode::FAILURE
        }
    }
}
