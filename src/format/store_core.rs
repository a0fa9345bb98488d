//! What every driver holds once a store is open: its validated description
//! and the dictionary its records decode with. Built here, once, from the
//! bytes a driver read (the first page of `meta.zr`, `dict.zr`).

use super::store_info::{FileSizes, StoreInfo};
use super::Codec;
use crate::codec::Dict;
use crate::{Error, Result};

/// Largest `dict.zr` accepted (loaderx's largest tier is 1 MiB).
pub const MAX_DICT_BYTES: u64 = 64 << 20;

/// An open store's description and decoding state, shared by every reader.
pub struct StoreCore {
    info: StoreInfo,
    dict: Option<Dict>,
    dict_bytes: Option<Vec<u8>>,
}

impl std::fmt::Debug for StoreCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreCore").field("info", &self.info).finish_non_exhaustive()
    }
}

impl StoreCore {
    /// Validate a store from the first bytes of `meta.zr` (at least
    /// `min(sizes.meta, 4096)`), its file sizes and `dict.zr`'s bytes, and
    /// load its dictionary. `sizes.dict` is taken from `dict_bytes`.
    ///
    /// # Errors
    /// `BadFormat` or `Unpublished` (see [`StoreInfo::parse`]), and
    /// `BadFormat` for a dictionary zstd refuses.
    pub fn open(
        name: &str,
        meta_head: &[u8],
        sizes: FileSizes,
        dict_bytes: Option<Vec<u8>>,
    ) -> Result<StoreCore> {
        if let Some(d) = &dict_bytes {
            check_dict_size(name, d.len() as u64)?;
        }
        let sizes = FileSizes { dict: dict_bytes.as_ref().map(|d| d.len() as u64), ..sizes };
        let info = StoreInfo::parse(name, meta_head, sizes)?;
        let dict = match (&dict_bytes, info.codec()) {
            (Some(bytes), Codec::ZstdDict) => Some(
                Dict::new(bytes).map_err(|why| Error::BadFormat { store: name.to_string(), check: why })?,
            ),
            _ => None,
        };
        Ok(StoreCore { info, dict, dict_bytes })
    }

    /// A description with no dictionary (a dataset's column as one store
    /// describes it).
    pub fn describe(info: StoreInfo) -> StoreCore {
        StoreCore { info, dict: None, dict_bytes: None }
    }

    /// The validated Header, schema and sizes.
    pub fn info(&self) -> &StoreInfo {
        &self.info
    }
    /// The dictionary records decode with (`zstd_dict` stores).
    pub fn dict(&self) -> Option<&Dict> {
        self.dict.as_ref()
    }
    /// `dict.zr`'s bytes, when the store has one.
    pub fn dict_bytes(&self) -> Option<&[u8]> {
        self.dict_bytes.as_deref()
    }
}

/// Refuse a `dict.zr` larger than any dictionary, before reading it whole.
///
/// # Errors
/// `BadFormat` naming the size.
pub fn check_dict_size(name: &str, size: u64) -> Result<()> {
    if size > MAX_DICT_BYTES {
        return Err(Error::BadFormat {
            store: name.to_string(),
            check: format!("dict.zr is {size} bytes (dictionaries are at most {MAX_DICT_BYTES})"),
        });
    }
    Ok(())
}
