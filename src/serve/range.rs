//! `Range: bytes=…` parsing (RFC 9110 §14) for a single representation.
//!
//! One range is served as `206`. A syntactically invalid header, a unit other
//! than `bytes`, or a multi-range request (`bytes=0-1,5-9`) is *ignored* and
//! answered with the full `200` body, as RFC 9110 allows and as S3 does: our
//! clients coalesce ranges themselves and never need `multipart/byteranges`.

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
    let value = value.trim();
    let Some((unit, set)) = value.split_once('=') else {
        return RangeReply::Full;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") || set.contains(',') {
        return RangeReply::Full;
    }
    let Some((first, last)) = set.trim().split_once('-') else {
        return RangeReply::Full;
    };
    let (first, last) = (first.trim(), last.trim());
    let num = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Digits beyond u64 are a position past any file: saturate.
        Some(s.parse().unwrap_or(u64::MAX))
    };
    if first.is_empty() {
        // Suffix range `-N`: the last N bytes.
        let Some(n) = num(last) else {
            return RangeReply::Full;
        };
        if n == 0 || size == 0 {
            return RangeReply::Unsatisfiable;
        }
        return RangeReply::Partial { start: size - n.min(size), end: size - 1 };
    }
    let Some(start) = num(first) else {
        return RangeReply::Full;
    };
    let end = if last.is_empty() {
        u64::MAX
    } else {
        match num(last) {
            Some(e) if e >= start => e,
            // `5-2` or junk: invalid, so ignored.
            _ => return RangeReply::Full,
        }
    };
    if start >= size {
        return RangeReply::Unsatisfiable;
    }
    RangeReply::Partial { start, end: end.min(size - 1) }
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
        assert_eq!(parse_range(" Bytes = 1 - 2 ", 100), Partial { start: 1, end: 2 });
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
            "",
            "bytes",
        ] {
            assert_eq!(parse_range(v, 100), Full, "{v}");
        }
    }
}
