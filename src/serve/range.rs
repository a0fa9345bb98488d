//! `Range: bytes=…` (RFC 9110 §14) for a single representation: the syntax
//! is parsed by `http-range-header`; what we answer is decided here.
//!
//! One range is served as `206`. A syntactically invalid header, a unit other
//! than `bytes`, or a multi-range request (`bytes=0-1,5-9`) is *ignored* and
//! answered with the full `200` body, as RFC 9110 allows and as S3 does: our
//! clients coalesce ranges themselves and never need `multipart/byteranges`.
//! A well-formed single range that selects no byte is `416`, an empty
//! representation included.

use http_range_header::{parse_range_header, RangeUnsatisfiableError};

/// What to send for a representation of a given size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RangeReply {
    /// No usable Range header: send everything with `200`.
    Full,
    /// Send bytes `start..=end` with `206`.
    Partial { start: u64, end: u64 },
    /// A well-formed single range that selects no byte: `416`.
    Unsatisfiable,
}

/// Decide what a `Range` header value asks of a `size`-byte representation.
pub(crate) fn parse_range(value: &str, size: u64) -> RangeReply {
    let parsed = match parse_range_header(value.trim()) {
        Ok(p) if p.len() == 1 => p,
        _ => return RangeReply::Full,
    };
    match parsed.validate(size).as_deref() {
        Ok([r]) => RangeReply::Partial { start: *r.start(), end: *r.end() },
        // An empty representation has no byte to select (the crate calls a
        // suffix range on it valid and empty).
        Ok([]) | Err(RangeUnsatisfiableError::Unsatisfiable) => RangeReply::Unsatisfiable,
        _ => RangeReply::Full,
    }
}

#[cfg(test)]
mod tests {
    use super::RangeReply::{Full, Partial, Unsatisfiable};
    use super::*;

    #[test]
    fn single_ranges() {
        assert_eq!(parse_range("bytes=0-9", 100), Partial { start: 0, end: 9 });
        assert_eq!(parse_range("bytes=10-", 100), Partial { start: 10, end: 99 });
        assert_eq!(parse_range("bytes=-10", 100), Partial { start: 90, end: 99 });
        assert_eq!(parse_range("bytes=-1000", 100), Partial { start: 0, end: 99 });
        assert_eq!(parse_range("bytes=90-1000", 100), Partial { start: 90, end: 99 });
        assert_eq!(parse_range("bytes=99-99", 100), Partial { start: 99, end: 99 });
        assert_eq!(parse_range(" Bytes=1-2 ", 100), Partial { start: 1, end: 2 });
        assert_eq!(parse_range("bytes=0-99999999999999999999999", 100), Partial { start: 0, end: 99 });
    }

    #[test]
    fn unsatisfiable() {
        assert_eq!(parse_range("bytes=100-", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=100-200", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-0", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=-5", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=99999999999999999999999-", 100), Unsatisfiable);
    }

    #[test]
    fn ignored() {
        for v in [
            "bytes=0-1,5-9",
            "items=0-1",
            "bytes=5-2",
            "bytes=a-b",
            "bytes=-",
            "bytes=1",
            "bytes=+1-2",
            "bytes=--1",
            "bytes = 1-2",
            "",
            "bytes",
        ] {
            assert_eq!(parse_range(v, 100), Full, "{v}");
        }
    }
}
