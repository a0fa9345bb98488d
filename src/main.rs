//! The `zrecord` command-line tool: inspect, check, convert and create
//! record stores. See `zrecord --help`, and `src/cli/mod.rs` for the design.
#![deny(unsafe_code)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
