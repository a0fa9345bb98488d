//! Byte kernels chosen per target: which zstd implementation decodes (and
//! encodes) frames, and the checksum's copy-and-hash loop.
//!
//! Native builds use C zstd (the `zstd` crate) with per-thread reusable
//! contexts; other targets (wasm32) use the pure-Rust `ruzstd`. Both expose
//! the same names, so the format core never knows which one it calls. The
//! checksum picks AVX2 on x86_64 at run time ([`checksum`]).

pub(crate) mod checksum;
pub mod pure;

cfg_if::cfg_if! {
    if #[cfg(feature = "native")] {
        pub mod c;
        pub use c::{decompress_exact, Dict};
        pub use c::{compress_append, compress_bound, CompressDict};
    } else {
        pub use pure::{decompress_exact, Dict};
    }
}
