//! The `zrecord` command-line tool: inspect, check, convert and create
//! record stores. See `zrecord --help`, and `src/cli/mod.rs` for the design.
#![deny(unsafe_code)]

mod cli;

/// mimalloc rather than the system allocator: `zrecord serve` allocates a
/// dozen small buffers per request (request and response heads, header
/// values, the body), where glibc's malloc took a measurable share of each
/// answer's CPU time. Set here, in the binary only: the library leaves the
/// choice to the application that links it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
