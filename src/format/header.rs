//! The 32-byte Header at the start of `meta.zr`.

use super::{HEADER_SIZE, MAX_SCHEMA_LEN, MAX_TAIL};
use crate::{Error, Result};

/// How each record is stored in `data.zr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// The record's bytes as they are.
    Raw,
    /// One zstd frame per record (level 3 by default, as loaderx).
    Zstd,
    /// One zstd frame per record against the dictionary in `dict.zr` (level 19).
    ZstdDict,
}

impl Codec {
    /// The byte stored in the Header.
    pub fn to_byte(self) -> u8 {
        match self {
            Codec::Raw => 0,
            Codec::Zstd => 1,
            Codec::ZstdDict => 2,
        }
    }

    /// The name loaderx uses (`raw`, `zstd`, `zstd_dict`).
    pub fn name(self) -> &'static str {
        match self {
            Codec::Raw => "raw",
            Codec::Zstd => "zstd",
            Codec::ZstdDict => "zstd_dict",
        }
    }

    /// Whether records are zstd frames.
    pub fn is_compressed(self) -> bool {
        self != Codec::Raw
    }
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Codec {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "raw" => Ok(Codec::Raw),
            "zstd" => Ok(Codec::Zstd),
            "zstd_dict" | "zstd-dict" => Ok(Codec::ZstdDict),
            _ => Err(format!("unknown codec {s:?} (expected raw, zstd or zstd_dict)")),
        }
    }
}

/// Marker our writer puts in the reserved bytes until `close` publishes the
/// store: loaderx rejects nonzero reserved bytes, so an unfinished build of
/// ours never opens as a valid (empty) store anywhere.
pub const BUILDING_MARKER: [u8; 11] = *b"zr-building";

/// The decoded Header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Number of published records.
    pub length: u64,
    /// End of the published bytes in `data.zr`.
    pub tail_offset: u64,
    /// Bytes of MsgPack schema after the Header.
    pub schema_length: u32,
    /// Record codec.
    pub codec: Codec,
}

impl Header {
    /// Parse and validate the Header from the first bytes of `meta.zr`.
    ///
    /// # Errors
    /// `BadFormat` naming the failed check; `Unpublished` when the reserved
    /// bytes carry our writer's building marker.
    pub fn parse(store: &str, meta: &[u8]) -> Result<Header> {
        let bad = |check: String| Error::BadFormat { store: store.to_string(), check };
        if meta.len() < HEADER_SIZE {
            return Err(bad(format!("meta.zr is {} bytes, shorter than the 32-byte header", meta.len())));
        }
        let length = u64::from_le_bytes(meta[0..8].try_into().expect("8 bytes"));
        let tail_offset = u64::from_le_bytes(meta[8..16].try_into().expect("8 bytes"));
        let schema_length = u32::from_le_bytes(meta[16..20].try_into().expect("4 bytes"));
        let reserved = &meta[20..31];
        if reserved == BUILDING_MARKER {
            return Err(Error::Unpublished {
                store: store.to_string(),
                detail: "the header still carries zrecord's building marker".into(),
            });
        }
        if reserved.iter().any(|&b| b != 0) {
            return Err(bad("reserved header bytes 20..31 are not zero".into()));
        }
        let codec = match meta[31] {
            0 => Codec::Raw,
            1 => Codec::Zstd,
            2 => Codec::ZstdDict,
            c => return Err(bad(format!("unknown codec byte {c} (expected 0, 1 or 2)"))),
        };
        if schema_length == 0 || schema_length > MAX_SCHEMA_LEN {
            return Err(bad(format!("schema_length {schema_length} is outside 1..={MAX_SCHEMA_LEN}")));
        }
        if tail_offset > MAX_TAIL {
            return Err(bad(format!("tail_offset {tail_offset} exceeds 2^63-1")));
        }
        Ok(Header { length, tail_offset, schema_length, codec })
    }

    /// The 32 bytes of this Header as stored.
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        self.encode_with_reserved([0; 11])
    }

    /// The Header bytes our writer stores while a build is unfinished.
    pub fn encode_building(&self) -> [u8; HEADER_SIZE] {
        self.encode_with_reserved(BUILDING_MARKER)
    }

    fn encode_with_reserved(&self, reserved: [u8; 11]) -> [u8; HEADER_SIZE] {
        let mut out = [0u8; HEADER_SIZE];
        out[0..8].copy_from_slice(&self.length.to_le_bytes());
        out[8..16].copy_from_slice(&self.tail_offset.to_le_bytes());
        out[16..20].copy_from_slice(&self.schema_length.to_le_bytes());
        out[20..31].copy_from_slice(&reserved);
        out[31] = self.codec.to_byte();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let h = Header { length: 7, tail_offset: 99, schema_length: 24, codec: Codec::ZstdDict };
        assert_eq!(Header::parse("s", &h.encode()).unwrap(), h);
        assert!(matches!(Header::parse("s", &h.encode_building()), Err(Error::Unpublished { .. })));
    }
}
