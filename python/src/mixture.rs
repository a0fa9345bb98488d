//! `NativeMixture`: the core's weighted mixture of sources
//! (`zrecord::training::mixture`), each step's `(sources, indices)` handed to
//! NumPy without a copy.

use crate::errors::IntoPy;
use numpy::PyArray1;
use pyo3::prelude::*;
use zrecord::training::mixture::Mixture;
use zrecord::training::sampler::Mode;

/// The core's mixture, built from the arguments `zrecord.Mixture` checked.
fn build(
    py: Python<'_>,
    lengths: &[u64],
    weights: &[f64],
    batch_size: u64,
    seed: u64,
    modes: &[u8],
    schedule: &[(u64, Vec<f64>)],
) -> PyResult<Mixture> {
    let modes = modes.iter().map(|&c| Mode::try_from(c)).collect::<zrecord::Result<Vec<_>>>().py_err(py)?;
    let mut m = Mixture::new(lengths, weights, batch_size, seed).and_then(|m| m.modes(&modes)).py_err(py)?;
    for (step, w) in schedule {
        m = m.schedule(*step, w).py_err(py)?;
    }
    Ok(m)
}

/// One slice as NumPy arrays: `(sources, indices)`.
type Slice<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u64>>);

/// A mixture's stream of `(sources, indices)` batch slices.
#[pyclass(module = "zrecord._native")]
pub struct NativeMixture {
    mixture: Mixture,
}

#[pymethods]
impl NativeMixture {
    #[new]
    #[pyo3(signature = (lengths, weights, batch_size, seed, modes, schedule, rank, world))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        lengths: Vec<u64>,
        weights: Vec<f64>,
        batch_size: u64,
        seed: u64,
        modes: Vec<u8>,
        schedule: Vec<(u64, Vec<f64>)>,
        rank: u64,
        world: u64,
    ) -> PyResult<Self> {
        let mixture = build(py, &lengths, &weights, batch_size, seed, &modes, &schedule)?;
        Ok(NativeMixture { mixture: mixture.shard(rank, world).py_err(py)? })
    }

    /// The next slice: `(sources, indices)` as new `uint32` and `uint64` arrays.
    fn next<'py>(&mut self, py: Python<'py>) -> PyResult<Slice<'py>> {
        let m = &mut self.mixture;
        let (sources, indices) = py.detach(|| m.next_batch()).py_err(py)?;
        Ok((PyArray1::from_vec(py, sources), PyArray1::from_vec(py, indices)))
    }

    /// Position the stream so the next slice is step `step`'s.
    fn seek(&mut self, py: Python<'_>, step: u64) {
        let m = &mut self.mixture;
        py.detach(|| m.seek(step));
    }

    /// The step the next slice comes from.
    #[getter]
    fn step(&self) -> u64 {
        self.mixture.step()
    }

    /// Records per slice.
    #[getter]
    fn batch_len(&self) -> u64 {
        self.mixture.batch_len()
    }

    /// Records each source has drawn before `step` (all ranks together).
    #[getter]
    fn drawn(&self) -> Vec<u64> {
        self.mixture.drawn().to_vec()
    }
}
