//! What a training run needs beyond a store: loaderx's sampler and weighted
//! mixtures of sources (pure, every target), the prefetching multi-stream loader and zstd dictionary training
//! (native).

pub mod mixture;
pub mod sampler;
pub mod state;

cfg_if::cfg_if! {
    if #[cfg(feature = "native")] {
        pub mod dict;
        pub mod loader;
    }
}
