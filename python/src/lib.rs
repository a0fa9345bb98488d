//! `zrecord._native`: the thin PyO3 layer under the `zrecord` Python package.
//!
//! The Python package (`python/zrecord/`) keeps loaderx 2.0.1's argument
//! checks and shapes its results; this module only moves bytes: it opens
//! stores (local, `http(s)://` or in buckets), gathers with the GIL released, hands the
//! gathered buffers to NumPy without copying, writes, trains dictionaries,
//! samples and drives the prefetching loader; it also writes, commits and
//! opens datasets, whose columns are read as stores.

#![deny(unsafe_code)]

mod arrays;
mod dataset;
mod errors;
mod fork;
mod loader;
mod mixture;
mod pool;
mod store;
mod train;
mod writer;

use pyo3::prelude::*;

/// The module's contents; see the `zrecord` package for the public API.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    fork::home_pid();
    m.add_class::<store::NativeStore>()?;
    m.add_class::<pool::Pooled>()?;
    m.add_class::<writer::NativeWriter>()?;
    m.add_class::<loader::NativeSampler>()?;
    m.add_class::<loader::NativeLoader>()?;
    m.add_class::<mixture::NativeMixture>()?;
    m.add_function(wrap_pyfunction!(train::dict_tiers, m)?)?;
    m.add_function(wrap_pyfunction!(train::dict_sample_indices, m)?)?;
    m.add_function(wrap_pyfunction!(train::train_dict_store, m)?)?;
    m.add_function(wrap_pyfunction!(train::train_dict_native, m)?)?;
    m.add_function(wrap_pyfunction!(store::store_url, m)?)?;
    m.add_function(wrap_pyfunction!(store::cache_stats, m)?)?;
    m.add_class::<dataset::NativeDataset>()?;
    m.add_class::<dataset::NativeShardWriter>()?;
    m.add_function(wrap_pyfunction!(dataset::commit, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::upload_shard, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::gc, m)?)?;
    Ok(())
}
