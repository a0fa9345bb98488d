//! RecordLoc entries: where each record lives in `data.zr`.

use super::{header::Codec, LOC_SIZE, MAX_RECORD_BYTES, PAGE_SIZE};
use crate::{Error, Result};

/// One record's location, as stored at `4096 + 16 * i` in `meta.zr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RecordLoc {
    /// Absolute offset of the stored bytes in `data.zr`.
    pub offset: u64,
    /// Stored bytes (the zstd frame for compressed codecs).
    pub phys_length: u32,
    /// Decoded bytes.
    pub logic_length: u32,
}

impl RecordLoc {
    /// Byte offset of record `index`'s entry in `meta.zr`.
    pub fn position(index: u64) -> u64 {
        PAGE_SIZE + LOC_SIZE * index
    }

    /// Decode one 16-byte entry (no validation).
    pub fn decode(bytes: &[u8; 16]) -> RecordLoc {
        RecordLoc {
            offset: u64::from_le_bytes(bytes[0..8].try_into().expect("8 bytes")),
            phys_length: u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")),
            logic_length: u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")),
        }
    }

    /// Read entry `i` of a slice of consecutive entries.
    #[inline]
    pub fn from_table(table: &[u8], i: usize) -> RecordLoc {
        let at = i * LOC_SIZE as usize;
        RecordLoc::decode(table[at..at + 16].try_into().expect("16 bytes"))
    }

    /// The 16 bytes of this entry.
    pub fn encode(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[0..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..12].copy_from_slice(&self.phys_length.to_le_bytes());
        out[12..16].copy_from_slice(&self.logic_length.to_le_bytes());
        out
    }

    /// End of the stored bytes (exclusive).
    pub fn end(&self) -> u64 {
        self.offset + u64::from(self.phys_length)
    }

    /// Whether this location passes [`RecordLoc::validate`], without building
    /// an error (the gather hot path; call `validate` for the error when not).
    #[inline]
    pub fn is_valid(&self, codec: Codec, tail_offset: u64) -> bool {
        (1..=MAX_RECORD_BYTES).contains(&u64::from(self.logic_length))
            && self.phys_length != 0
            && (codec != Codec::Raw || self.phys_length == self.logic_length)
            && self.offset.checked_add(u64::from(self.phys_length)).is_some_and(|end| end <= tail_offset)
    }

    /// Whether this location passes [`RecordLoc::validate`] and decodes to
    /// exactly `row_bytes` bytes (a Dense row): the gather hot path's check,
    /// a handful of compares that build no error. When it says no, call
    /// `validate` (and the row check) for the error to report.
    #[inline]
    pub fn is_valid_row(&self, codec: Codec, tail_offset: u64, row_bytes: u64) -> bool {
        u64::from(self.logic_length) == row_bytes && self.is_valid(codec, tail_offset)
    }

    /// Check the rules every RecordLoc read must satisfy (docs/FORMAT.md).
    ///
    /// # Errors
    /// `BadFormat` naming the record and the rule.
    pub fn validate(&self, store: &str, index: u64, codec: Codec, tail_offset: u64) -> Result<()> {
        let bad = |check: String| Error::BadFormat {
            store: store.to_string(),
            check: format!("record {index}: {check}"),
        };
        let logic = u64::from(self.logic_length);
        if logic == 0 || logic > MAX_RECORD_BYTES {
            return Err(bad(format!("logic_length {logic} is outside 1..=2^31")));
        }
        if self.phys_length == 0 {
            return Err(bad("phys_length is 0".into()));
        }
        if codec == Codec::Raw && self.phys_length != self.logic_length {
            return Err(bad(format!(
                "raw record has phys_length {} != logic_length {}",
                self.phys_length, self.logic_length
            )));
        }
        match self.offset.checked_add(u64::from(self.phys_length)) {
            Some(end) if end <= tail_offset => Ok(()),
            _ => Err(bad(format!(
                "bytes {}..+{} reach past tail_offset {tail_offset}",
                self.offset, self.phys_length
            ))),
        }
    }
}
