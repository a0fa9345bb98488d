//! The checksum sidecar, `sums.zr`: one XXH3-64 checksum of each record's
//! stored bytes, of the `meta.zr` static page and location table, and of
//! `dict.zr`. The format itself stores no checksums (and zstd frames at
//! loaderx's settings carry none), so without it bit rot, a padded truncated
//! copy or a bad sync reads back as silently wrong records. loaderx ignores
//! the file: a sealed store stays a loaderx store.
//!
//! Layout (little-endian):
//!
//! | offset | size | field |
//! |---:|---:|---|
//! | 0 | 8 | magic `ZRSUMS\0\0` |
//! | 8 | 4 | version (1) |
//! | 12 | 4 | algorithm (1 = XXH3-64, seed 0) |
//! | 16 | 8 | records covered |
//! | 24 | 8 | checksum of `meta.zr` bytes `0 .. 4096 + 16 * records` |
//! | 32 | 8 | checksum of `dict.zr` (0 when the store has none) |
//! | 40 | 8 | checksum of this file, this field read as zero |
//! | 48 | 8 × records | checksum of each record's stored bytes |

use super::{StoreFile, LOC_SIZE, PAGE_SIZE};
use crate::{Error, Result};
use std::ops::Range;

pub use super::files::SUMS;
/// Magic number at the start of `sums.zr`.
pub const MAGIC: [u8; 8] = *b"ZRSUMS\0\0";
/// Size of the header before the record checksums.
pub const HEADER_LEN: u64 = 48;
/// Bytes per record checksum.
pub const SUM_LEN: u64 = 8;
const VERSION: u32 = 1;
const XXH3_64: u32 = 1;

/// The checksum every field of the sidecar uses (XXH3-64, seed 0).
#[inline]
pub fn checksum(bytes: &[u8]) -> u64 {
    crate::codec::checksum::hash64(bytes)
}

/// The sidecar's own checksum: of all its bytes, its own field read as zero.
fn own_checksum(file: &[u8]) -> u64 {
    let mut zeroed = file.to_vec();
    zeroed[40..48].fill(0);
    checksum(&zeroed)
}

/// The bytes of `meta.zr` the sidecar's table checksum covers.
pub fn table_span(records: u64) -> Range<u64> {
    0..PAGE_SIZE + LOC_SIZE * records
}

/// Where record `index`'s checksum lies in `sums.zr`.
pub fn entry_range(index: u64) -> Range<u64> {
    let at = HEADER_LEN + SUM_LEN * index;
    at..at + SUM_LEN
}

/// The header of a sidecar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumsHeader {
    /// Records covered.
    pub records: u64,
    /// Checksum of `meta.zr`'s static page and location table.
    pub table: u64,
    /// Checksum of `dict.zr` (0 without one).
    pub dict: u64,
    /// Checksum of the whole file, this field read as zero.
    pub own: u64,
}

impl SumsHeader {
    /// Parse and check a header: magic, version, algorithm, and that the
    /// file is as long as the records it says it covers.
    ///
    /// # Errors
    /// `BadFormat` naming `sums.zr` and the failed check.
    pub fn parse(store: &str, bytes: &[u8], file_len: u64) -> Result<SumsHeader> {
        let bad =
            |check: String| Error::BadFormat { store: store.to_string(), check: format!("{SUMS}: {check}") };
        if bytes.len() < HEADER_LEN as usize {
            return Err(bad(format!("{} bytes, shorter than its {HEADER_LEN}-byte header", bytes.len())));
        }
        if bytes[..8] != MAGIC {
            return Err(bad("not a checksum sidecar (bad magic)".into()));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        if u32_at(8) != VERSION {
            return Err(bad(format!("version {} (this zrecord reads version {VERSION})", u32_at(8))));
        }
        if u32_at(12) != XXH3_64 {
            return Err(bad(format!("unknown checksum algorithm {}", u32_at(12))));
        }
        let header = SumsHeader { records: u64_at(16), table: u64_at(24), dict: u64_at(32), own: u64_at(40) };
        let want = u128::from(HEADER_LEN) + u128::from(SUM_LEN) * u128::from(header.records);
        if u128::from(file_len) != want {
            return Err(bad(format!("{file_len} bytes, but {} records need {want}", header.records)));
        }
        Ok(header)
    }

    /// Write this header at the front of `file` (a whole sidecar: room for
    /// the header, then the record checksums) with the file's own checksum,
    /// and return it so. In place: a writer sealing millions of records
    /// does not copy their checksums to compute it.
    ///
    /// # Panics
    /// When `file` is shorter than the header.
    pub fn seal(self, file: &mut [u8]) -> SumsHeader {
        file[..HEADER_LEN as usize].copy_from_slice(&SumsHeader { own: 0, ..self }.encode());
        let sealed = SumsHeader { own: checksum(file), ..self };
        file[40..48].copy_from_slice(&sealed.own.to_le_bytes());
        sealed
    }

    /// The header's 48 bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut out = [0u8; HEADER_LEN as usize];
        out[..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&XXH3_64.to_le_bytes());
        out[16..24].copy_from_slice(&self.records.to_le_bytes());
        out[24..32].copy_from_slice(&self.table.to_le_bytes());
        out[32..40].copy_from_slice(&self.dict.to_le_bytes());
        out[40..48].copy_from_slice(&self.own.to_le_bytes());
        out
    }
}

/// A whole sidecar, for writing.
///
/// ```
/// use zrecord::format::sums::{checksum, Sums};
/// let records = [b"abc".as_slice(), b"de".as_slice()];
/// let sums = Sums::new(&[0u8; 4128], None, records.iter().map(|r| checksum(r)).collect());
/// let bytes = sums.encode();
/// assert_eq!(bytes.len(), 48 + 16);
/// let parsed = Sums::parse("s", &bytes).unwrap();
/// assert_eq!(parsed.record(1), checksum(b"de"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sums {
    /// The header (its `own` checksum filled by [`Sums::encode`]).
    pub header: SumsHeader,
    /// One checksum per record.
    pub records: Vec<u64>,
}

impl Sums {
    /// The sidecar of a store whose `meta.zr` starts with `table` (its static
    /// page and location table, see [`table_span`]), with `dict.zr`'s bytes
    /// and its records' checksums.
    pub fn new(table: &[u8], dict: Option<&[u8]>, records: Vec<u64>) -> Sums {
        let header = SumsHeader {
            records: records.len() as u64,
            table: checksum(table),
            dict: dict.map_or(0, checksum),
            own: 0,
        };
        Sums { header, records }
    }

    /// The file's bytes, with its own checksum.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; HEADER_LEN as usize];
        out.reserve(SUM_LEN as usize * self.records.len());
        for s in &self.records {
            out.extend_from_slice(&s.to_le_bytes());
        }
        self.header.seal(&mut out);
        out
    }

    /// Parse a whole sidecar, checking its own checksum.
    ///
    /// # Errors
    /// `BadFormat` for a broken header, `ChecksumMismatch` when the file
    /// does not match its own checksum.
    pub fn parse(store: &str, bytes: &[u8]) -> Result<Sums> {
        let header = SumsHeader::parse(store, bytes, bytes.len() as u64)?;
        if own_checksum(bytes) != header.own {
            return Err(mismatch(store, SUMS, "the sidecar does not match its own checksum".into()));
        }
        let records =
            bytes[48..].chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8"))).collect();
        Ok(Sums { header, records })
    }

    /// Record `index`'s checksum.
    ///
    /// # Panics
    /// When `index` is not covered.
    pub fn record(&self, index: u64) -> u64 {
        self.records[index as usize]
    }
}

/// When reads check records against the sidecar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verify {
    /// Never (the default; reads cost what they always did).
    #[default]
    Off,
    /// When the store is sealed (has a `sums.zr`); unsealed stores read unchecked.
    IfSealed,
    /// Always: opening an unsealed store fails.
    Always,
}

impl std::str::FromStr for Verify {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "off" => Ok(Verify::Off),
            "if-sealed" => Ok(Verify::IfSealed),
            "always" => Ok(Verify::Always),
            _ => Err(format!("unknown verify mode {s:?} (expected off, if-sealed or always)")),
        }
    }
}

/// The error for a checked open of a store with no sidecar.
pub fn not_sealed(store: &str) -> Error {
    Error::NotFound {
        store: store.to_string(),
        what: format!(
            "{SUMS} is missing: the store is not sealed, so its records cannot be checked; \
             seal it with `zrecord seal STORE`"
        ),
    }
}

/// Check a sidecar's header against its store: it covers exactly the
/// store's `length` records, `meta.zr`'s static page and location table
/// (when the caller has them: [`table_span`]) and `dict.zr` (`None` when the
/// store has none) match.
///
/// # Errors
/// `ChecksumMismatch` naming the file that changed.
pub fn check_store(
    store: &str,
    header: &SumsHeader,
    length: u64,
    table: Option<&[u8]>,
    dict: Option<&[u8]>,
) -> Result<()> {
    check_covers(store, header, length)?;
    if let Some(t) = table {
        check_table(store, header, t)?;
    }
    check_dict(store, header, dict)
}

/// Check `meta.zr`'s static page and location table ([`table_span`]).
///
/// # Errors
/// `ChecksumMismatch` naming `meta.zr`.
pub fn check_table(store: &str, header: &SumsHeader, table: &[u8]) -> Result<()> {
    if checksum(table) != header.table {
        return Err(mismatch(
            store,
            StoreFile::Meta.name(),
            "the static page or the location table does not match sums.zr".into(),
        ));
    }
    Ok(())
}

/// Check `dict.zr` (`None` when the store has none).
///
/// # Errors
/// `ChecksumMismatch` naming `dict.zr`.
pub fn check_dict(store: &str, header: &SumsHeader, dict: Option<&[u8]>) -> Result<()> {
    if dict.map_or(0, checksum) != header.dict {
        return Err(mismatch(store, StoreFile::Dict.name(), "the dictionary does not match sums.zr".into()));
    }
    Ok(())
}

/// The error for bytes that do not match their checksum.
pub fn mismatch(store: &str, file: &str, what: String) -> Error {
    Error::ChecksumMismatch { store: store.to_string(), file: file.to_string(), what }
}

/// Check that a sidecar covers exactly the store's `length` records: one
/// that disagrees is reported, never trusted.
///
/// # Errors
/// `ChecksumMismatch` naming both counts.
pub fn check_covers(store: &str, header: &SumsHeader, length: u64) -> Result<()> {
    if header.records != length {
        return Err(mismatch(
            store,
            SUMS,
            format!(
                "the sidecar covers {} records but the store holds {length}; reseal it (zrecord seal) \
                 if the store changed on purpose",
                header.records
            ),
        ));
    }
    Ok(())
}

/// Check record `index`'s stored bytes against `expected`.
///
/// # Errors
/// `ChecksumMismatch` naming the record and `data.zr`.
#[inline]
pub fn check_record(store: &str, index: u64, stored: &[u8], expected: u64) -> Result<()> {
    check_record_sum(store, index, stored.len(), checksum(stored), expected)
}

/// [`check_record`] for a checksum already computed (of `len` stored bytes).
///
/// # Errors
/// As [`check_record`].
pub fn check_record_sum(store: &str, index: u64, len: usize, got: u64, expected: u64) -> Result<()> {
    if got != expected {
        return Err(mismatch(
            store,
            StoreFile::Data.name(),
            format!("record {index}: its {len} stored bytes do not match sums.zr"),
        ));
    }
    Ok(())
}
