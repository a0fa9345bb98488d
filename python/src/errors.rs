//! zrecord errors as Python exceptions: format and I/O failures become
//! `zrecord.ZrecordError` (with loaderx's numeric `code`; a buffer that
//! cannot be allocated is also a `MemoryError`), a missing store
//! `FileNotFoundError`, bad indices `IndexError`, bad arguments `ValueError`.
//! The message is the library's, which names the store and the failed check.

use pyo3::exceptions::{PyFileNotFoundError, PyIndexError, PyValueError};
use pyo3::prelude::*;
use zrecord::Error;

/// loaderx's codes (`loaderx/_store.py`), so `exc.code` means the same.
fn code(e: &Error) -> i32 {
    match e {
        Error::Io { .. } | Error::Remote { .. } | Error::StoreChanged { .. } => -2,
        Error::RecordTooLarge { .. } => -4,
        Error::StoreFull { .. } => -5,
        Error::CorruptRecord { .. } => -7,
        Error::DictTraining { .. } => -9,
        Error::NotFound { .. } => -11,
        Error::AlreadyExists { .. } => -12,
        Error::Busy { .. } => -13,
        Error::OutOfMemory { .. } => -1,
        Error::Loader { source, .. } => code(source),
        _ => -8,
    }
}

/// A `zrecord.ZrecordError(code, message)`.
pub fn zrecord_error(py: Python<'_>, code: i32, message: String) -> PyErr {
    raise(py, "ZrecordError", code, message)
}

/// An instance of `zrecord._errors.<class>(code, message)`.
fn raise(py: Python<'_>, class: &str, code: i32, message: String) -> PyErr {
    match py.import("zrecord._errors").and_then(|m| m.getattr(class)) {
        Ok(ty) => match ty.call1((code, message)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// The Python exception for a library error.
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let inner = match &e {
        Error::Loader { source, .. } => source.as_ref(),
        other => other,
    };
    let mut message = e.to_string();
    if let Error::Unpublished { .. } = inner {
        message.push_str(" (create(..., overwrite=True) replaces it)");
    }
    match inner {
        Error::NotFound { .. } => PyFileNotFoundError::new_err(message),
        Error::IndexOutOfRange { .. } => PyIndexError::new_err(message),
        Error::InvalidArgument { .. }
        | Error::Config(_)
        | Error::Npy { .. }
        | Error::WorldSize { .. }
        | Error::StateMismatch { .. } => PyValueError::new_err(message),
        // A MemoryError too, as loaderx raises for a batch too large.
        Error::OutOfMemory { .. } => raise(py, "ZrecordMemoryError", code(&e), message),
        // A schema that is not what was asked for is also a ValueError, as in loaderx.
        Error::BadFormat { check, .. } if check.contains("schema") => {
            raise(py, "ZrecordSchemaError", code(&e), message)
        }
        _ => zrecord_error(py, code(&e), message),
    }
}

/// `Result` → `PyResult` with [`to_py`].
pub trait IntoPy<T> {
    /// Convert the error.
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for zrecord::Result<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
