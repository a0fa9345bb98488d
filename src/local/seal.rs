//! Sealing a store that exists (loaderx's included): writing its checksum
//! sidecar `sums.zr`, so later reads and `zrecord verify` can detect bytes
//! that changed silently. The store's own files are not touched; loaderx
//! ignores the sidecar.

use crate::format::sums::{self, Sums, SUMS};
use crate::local::reader::{OpenOptions, Store};
use crate::records::Records;
use crate::{Error, Result};
use std::path::Path;

/// What [`seal`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sealed {
    /// A new sidecar was written for this many records.
    Written(u64),
    /// The sidecar there already matches the store, record for record.
    UpToDate(u64),
}

/// Write `dir`'s checksum sidecar from the store as it is now.
///
/// A sidecar already there is kept when it matches the store; one that
/// disagrees is replaced only with `force` (it may be the only witness of a
/// corruption: run `zrecord verify` first).
///
/// # Errors
/// The errors of [`Store::open`] (a store being written is `Busy`), a
/// location breaking a rule, `ChecksumMismatch` for a disagreeing sidecar
/// without `force`, `Io`.
pub fn seal(dir: &Path, force: bool) -> Result<Sealed> {
    let store = Store::open_with(dir, OpenOptions::default())?;
    let fresh = store.sidecar()?;
    let path = dir.join(SUMS);
    match std::fs::read(&path) {
        Ok(old) if old == fresh => return Ok(Sealed::UpToDate(store.len())),
        Ok(old) if !force => {
            let name = &store.info().name;
            let why = match Sums::parse(name, &old) {
                Ok(o) => {
                    let new = Sums::parse(name, &fresh)?;
                    let differ = o.records.iter().zip(&new.records).filter(|(a, b)| a != b).count();
                    format!(
                        "the sidecar there covers {} records, {differ} of them with other checksums, \
                         and its table/dictionary checksums {} the store's",
                        o.header.records,
                        if (o.header.table, o.header.dict) == (new.header.table, new.header.dict) {
                            "match"
                        } else {
                            "differ from"
                        }
                    )
                }
                Err(e) => e.to_string(),
            };
            return Err(sums::mismatch(
                name,
                SUMS,
                format!(
                    "{why}; run `zrecord verify` to see what changed, or seal with --force to replace it"
                ),
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&path, "read", e)),
    }
    let partial = dir.join(format!("{SUMS}.{}.partial", std::process::id()));
    std::fs::write(&partial, &fresh).map_err(|e| Error::io(&partial, "write", e))?;
    std::fs::rename(&partial, &path).map_err(|e| Error::io(&path, "rename", e))?;
    Ok(Sealed::Written(store.len()))
}
