//! Dictionary training for `zstd_dict` stores: the core's tiers, sampling
//! and trainer (`zrecord::training::dict`), with the GIL released while zstd trains.

use crate::errors::IntoPy;
use crate::store::NativeStore;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use zrecord::training::dict::{sample_indices, train_from_samples, train_from_store, Tier};

fn tier(name: &str) -> PyResult<Tier> {
    name.parse().map_err(PyValueError::new_err)
}

/// The core's tiers as loaderx's `DICT_TIERS`: `{name: {"size": dictionary
/// bytes, "samples": bytes of samples}}`.
#[pyfunction]
pub fn dict_tiers(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let tiers = PyDict::new(py);
    for t in Tier::ALL {
        let preset = PyDict::new(py);
        preset.set_item("size", t.dict_size())?;
        preset.set_item("samples", t.budget())?;
        tiers.set_item(t.name(), preset)?;
    }
    Ok(tiers)
}

/// The records loaderx samples from `n` records of `record_bytes` each for
/// `tier` (`unique(linspace(0, n - 1, k))`, `k` from the tier's budget).
#[pyfunction]
pub fn dict_sample_indices<'py>(
    py: Python<'py>,
    n: u64,
    record_bytes: u64,
    tier_name: &str,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let budget = tier(tier_name)?.budget() as u64;
    Ok(PyArray1::from_vec(py, sample_indices(n, record_bytes, budget)))
}

/// Train on an opened store, sampled by the core as loaderx samples a store
/// (`zrecord::training::dict::train_from_store`); reads and training run without the GIL.
#[pyfunction]
pub fn train_dict_store<'py>(
    py: Python<'py>,
    store: PyRef<'py, NativeStore>,
    tier_name: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let tier = tier(tier_name)?;
    let records = &store.store;
    let dict = py.detach(|| train_from_store(&**records, tier)).py_err(py)?;
    Ok(PyBytes::new(py, &dict))
}

/// Train on `samples` (records back to back, `sizes[i]` bytes each, in a
/// buffer the caller made for this call, which no other code holds) for
/// `tier`; the GIL is released while zstd trains.
#[pyfunction]
pub fn train_dict_native<'py>(
    py: Python<'py>,
    samples: PyReadonlyArray1<'py, u8>,
    sizes: PyReadonlyArray1<'py, u64>,
    tier_name: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let tier = tier(tier_name)?;
    let (samples, sizes) = (samples.as_slice()?, sizes.as_slice()?);
    let total = sizes.iter().try_fold(0u64, |sum, &n| sum.checked_add(n));
    if total != Some(samples.len() as u64) {
        return Err(PyValueError::new_err("sample sizes do not add up to the samples"));
    }
    let dict = py
        .detach(|| {
            let mut at = 0usize;
            let parts = sizes.iter().map(|&n| {
                let s = &samples[at..at + n as usize];
                at += n as usize;
                s
            });
            train_from_samples(parts, tier)
        })
        .py_err(py)?;
    Ok(PyBytes::new(py, &dict))
}
