//! Everything known about a store after opening it: the validated Header,
//! schema and file sizes. Drivers read the first page of `meta.zr` and the
//! file sizes however they can, and this decides whether the store is valid.

use super::{
    header::{Codec, Header},
    schema::{Geometry, Schema},
    DType, HEADER_SIZE, LOC_SIZE, MAX_RECORD_BYTES, PAGE_SIZE,
};
use crate::{Error, Result};

/// Sizes of a store's files in bytes (`dict` is `None` when `dict.zr` is absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileSizes {
    /// `meta.zr`
    pub meta: u64,
    /// `data.zr`
    pub data: u64,
    /// `dict.zr`, if present.
    pub dict: Option<u64>,
}

/// A validated store description.
#[derive(Clone, Debug)]
pub struct StoreInfo {
    /// Name used in errors (path or URL).
    pub name: String,
    /// The Header.
    pub header: Header,
    /// The decoded schema.
    pub schema: Schema,
    /// The schema bytes exactly as stored.
    pub schema_bytes: Vec<u8>,
    /// File sizes at open.
    pub sizes: FileSizes,
}

impl StoreInfo {
    /// Validate a store from the first bytes of `meta.zr` (at least
    /// `min(sizes.meta, 4096)` of them) and its file sizes, applying every
    /// open-time rule of docs/FORMAT.md.
    ///
    /// # Errors
    /// `BadFormat` naming the failed check, or `Unpublished` for a build whose
    /// writer never closed.
    pub fn parse(name: &str, meta_head: &[u8], sizes: FileSizes) -> Result<StoreInfo> {
        let bad = |check: String| Error::BadFormat { store: name.to_string(), check };
        let header = Header::parse(name, meta_head)?;
        let schema_end = HEADER_SIZE + header.schema_length as usize;
        if meta_head.len() < schema_end {
            return Err(bad(format!(
                "meta.zr is {} bytes, too short for the {}-byte schema",
                sizes.meta, header.schema_length
            )));
        }
        let schema_bytes = meta_head[HEADER_SIZE..schema_end].to_vec();
        let schema = Schema::parse(&schema_bytes).map_err(bad)?;
        let table_end = u128::from(PAGE_SIZE) + u128::from(LOC_SIZE) * u128::from(header.length);
        if u128::from(sizes.meta) < table_end {
            return Err(bad(format!(
                "meta.zr is {} bytes but {} records need {table_end} (static page + location table)",
                sizes.meta, header.length
            )));
        }
        check_data_size(name, &header, sizes.data)?;
        match (header.codec, sizes.dict) {
            (Codec::ZstdDict, None) => return Err(bad("codec zstd_dict but dict.zr is missing".into())),
            (c, Some(_)) if c != Codec::ZstdDict => {
                return Err(bad(format!("dict.zr present but codec is {c}")))
            }
            _ => {}
        }
        if header.length == 0 && header.tail_offset == 0 && (sizes.meta > PAGE_SIZE || sizes.data > 0) {
            return Err(unpublished(name, sizes.meta, sizes.data));
        }
        if let Geometry::Dense { item_shape } = &schema.geometry {
            // loaderx: "invalid dense record width in schema".
            match schema.row_bytes() {
                Some(row) if (1..=MAX_RECORD_BYTES).contains(&row) => {}
                row => {
                    return Err(bad(format!(
                        "item_shape {item_shape:?} of {} makes records of {} bytes (records hold 1..=2^31)",
                        schema.dtype,
                        row.map_or("more than 2^64".to_string(), |r| r.to_string())
                    )))
                }
            }
        }
        Ok(StoreInfo { name: name.to_string(), header, schema, schema_bytes, sizes })
    }

    /// Apply the open-time rules about `data.zr`'s size on their own, for
    /// drivers that learn the size after opening (the HTTP reader takes it
    /// from the first data response instead of spending a request at open).
    ///
    /// # Errors
    /// `BadFormat` when `data.zr` is shorter than `tail_offset`, `Unpublished`
    /// for an empty store with data after it.
    pub fn check_data_size(&self, data: u64) -> Result<()> {
        check_data_size(&self.name, &self.header, data)?;
        if self.header.length == 0 && self.header.tail_offset == 0 && data > 0 {
            return Err(unpublished(&self.name, self.sizes.meta, data));
        }
        Ok(())
    }

    /// Number of published records.
    pub fn len(&self) -> u64 {
        self.header.length
    }
    /// Whether the store holds no records.
    pub fn is_empty(&self) -> bool {
        self.header.length == 0
    }
    /// Record codec.
    pub fn codec(&self) -> Codec {
        self.header.codec
    }
    /// Element type.
    pub fn dtype(&self) -> &DType {
        &self.schema.dtype
    }
    /// Dense (with item_shape) or Ragged.
    pub fn geometry(&self) -> &Geometry {
        &self.schema.geometry
    }
    /// `item_shape` of a Dense store; `None` for Ragged.
    pub fn item_shape(&self) -> Option<&[u64]> {
        match &self.schema.geometry {
            Geometry::Dense { item_shape } => Some(item_shape),
            Geometry::Ragged => None,
        }
    }
    /// Bytes of one Dense record; `None` for Ragged.
    pub fn row_bytes(&self) -> Option<u64> {
        self.schema.row_bytes()
    }

    /// Bytes of one Dense record, or `InvalidArgument` for a Ragged store.
    pub fn dense_row(&self) -> Result<usize> {
        let invalid = |why: &str| Error::InvalidArgument { store: self.name.clone(), why: why.into() };
        match self.row_bytes() {
            Some(r) => usize::try_from(r).map_err(|_| invalid("row too large")),
            None => Err(invalid("this is a Ragged store; use gather_ragged")),
        }
    }

    /// Check a Dense gather's arguments before any read: a Dense store, an
    /// output of exactly `indices.len()` rows, every index in range. Returns
    /// the row width.
    ///
    /// # Errors
    /// `InvalidArgument`, `IndexOutOfRange`.
    pub fn check_dense_gather(&self, indices: &[u64], out_len: usize) -> Result<usize> {
        let row = self.dense_row()?;
        if out_len != indices.len() * row {
            return Err(Error::InvalidArgument {
                store: self.name.clone(),
                why: format!(
                    "output buffer is {out_len} bytes, {} records of {row} bytes need {}",
                    indices.len(),
                    indices.len() * row
                ),
            });
        }
        self.check_indices(indices)?;
        Ok(row)
    }

    /// Fail with `IndexOutOfRange` unless every index is below the length.
    pub fn check_indices(&self, indices: &[u64]) -> Result<()> {
        let len = self.header.length;
        match indices.iter().find(|&&i| i >= len) {
            Some(&index) => Err(Error::IndexOutOfRange { store: self.name.clone(), index, len }),
            None => Ok(()),
        }
    }
}

fn check_data_size(name: &str, header: &Header, data: u64) -> Result<()> {
    if data < header.tail_offset {
        return Err(Error::BadFormat {
            store: name.to_string(),
            check: format!("data.zr is {data} bytes, shorter than tail_offset {}", header.tail_offset),
        });
    }
    Ok(())
}

fn unpublished(name: &str, meta: u64, data: u64) -> Error {
    Error::Unpublished {
        store: name.to_string(),
        detail: format!(
            "meta.zr holds {} bytes of locations and data.zr {data} bytes",
            meta.saturating_sub(PAGE_SIZE)
        ),
    }
}
