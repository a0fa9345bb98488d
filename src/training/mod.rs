//! What a training run needs beyond a store: loaderx's sampler (pure, every
//! target), the prefetching multi-stream loader and zstd dictionary training
//! (native).

pub mod sampler;

cfg_if::cfg_if! {
    if #[cfg(feature = "native")] {
        pub mod dict;
        pub mod loader;
    }
}
