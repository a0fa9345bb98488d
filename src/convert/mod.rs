//! Other formats records come from and go to: NumPy's `.npy` today (the
//! CLI's `import` and `export`, the benches' data).

pub mod npy;
