//! NumPy dtype strings (`dtype.str`), parsed so callers never guess at byte
//! order or item size.

use std::fmt;

/// Byte order of a dtype's items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteOrder {
    /// `<`
    Little,
    /// `>`
    Big,
    /// `|`: single bytes or opaque data.
    NotApplicable,
}

/// The kind character of a dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `b` (NumPy bool, one byte).
    Bool,
    /// `i`
    Int,
    /// `u`
    UInt,
    /// `f`
    Float,
    /// `c`
    Complex,
    /// `S`: fixed-length bytes.
    Bytes,
    /// `U`: fixed-length UCS-4 text.
    Unicode,
    /// `V`: opaque.
    Void,
    /// `M`: datetime64.
    Datetime,
    /// `m`: timedelta64.
    Timedelta,
}

/// A parsed NumPy dtype string such as `<f4`, `|u1`, `>i4`, `<U3`, `<M8[ns]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DType {
    text: String,
    order: ByteOrder,
    kind: Kind,
    itemsize: usize,
    unit: Option<String>,
}

impl DType {
    /// Parse a dtype string as NumPy's `dtype.str` writes it.
    ///
    /// # Errors
    /// A message saying what is wrong; structured, subarray and object dtypes
    /// are not storable.
    pub fn parse(text: &str) -> Result<DType, String> {
        let err = |why: &str| format!("dtype {text:?}: {why}");
        let mut chars = text.chars();
        let order = match chars.next() {
            Some('<') => ByteOrder::Little,
            Some('>') => ByteOrder::Big,
            Some('|') => ByteOrder::NotApplicable,
            _ => return Err(err("must start with a byte order '<', '>' or '|'")),
        };
        let kind = match chars.next() {
            Some('b') => Kind::Bool,
            Some('i') => Kind::Int,
            Some('u') => Kind::UInt,
            Some('f') => Kind::Float,
            Some('c') => Kind::Complex,
            Some('S') => Kind::Bytes,
            Some('U') => Kind::Unicode,
            Some('V') => Kind::Void,
            Some('M') => Kind::Datetime,
            Some('m') => Kind::Timedelta,
            Some('O') => return Err(err("object dtypes cannot be stored")),
            _ => return Err(err("unknown kind character")),
        };
        let rest = chars.as_str();
        let (digits, unit) = match rest.find('[') {
            Some(at) => {
                if !matches!(kind, Kind::Datetime | Kind::Timedelta) || !rest.ends_with(']') {
                    return Err(err("only datetime/timedelta dtypes carry a [unit]"));
                }
                (&rest[..at], Some(rest[at + 1..rest.len() - 1].to_string()))
            }
            None => (rest, None),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 9 {
            return Err(err("item size must be a decimal number"));
        }
        let count: usize = digits.parse().map_err(|_| err("bad item size"))?;
        let itemsize = if kind == Kind::Unicode { count * 4 } else { count };
        let ok = match kind {
            Kind::Bool => itemsize == 1,
            Kind::Int | Kind::UInt => matches!(itemsize, 1 | 2 | 4 | 8),
            Kind::Float => matches!(itemsize, 2 | 4 | 8 | 12 | 16),
            Kind::Complex => matches!(itemsize, 8 | 16 | 24 | 32),
            Kind::Datetime | Kind::Timedelta => itemsize == 8,
            Kind::Bytes | Kind::Unicode | Kind::Void => itemsize >= 1,
        };
        if !ok {
            return Err(err("item size does not fit the kind"));
        }
        if let Some(u) = &unit {
            if u.is_empty() || u.len() > 8 || !u.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(err("bad datetime unit"));
            }
        }
        let multi_byte_numeric = itemsize > 1
            && matches!(
                kind,
                Kind::Int
                    | Kind::UInt
                    | Kind::Float
                    | Kind::Complex
                    | Kind::Datetime
                    | Kind::Timedelta
                    | Kind::Unicode
            );
        if multi_byte_numeric && order == ByteOrder::NotApplicable {
            return Err(err("multi-byte items need a byte order '<' or '>'"));
        }
        Ok(DType { text: text.to_string(), order, kind, itemsize, unit })
    }

    /// The string exactly as stored in the schema.
    pub fn as_str(&self) -> &str {
        &self.text
    }
    /// Byte order of the items.
    pub fn byte_order(&self) -> ByteOrder {
        self.order
    }
    /// Kind of the items.
    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// Bytes per item.
    pub fn itemsize(&self) -> usize {
        self.itemsize
    }
    /// Datetime/timedelta unit (`ns`, `s`, ...), if any.
    pub fn unit(&self) -> Option<&str> {
        self.unit.as_deref()
    }
    /// Alignment to give a buffer of these items (power of two, at most 8).
    pub fn alignment(&self) -> usize {
        let base = if self.kind == Kind::Complex { self.itemsize / 2 } else { self.itemsize };
        base.clamp(1, 8).next_power_of_two().min(8)
    }
    /// Whether items are stored in this machine's byte order (or order does not matter).
    pub fn is_native_order(&self) -> bool {
        match self.order {
            ByteOrder::NotApplicable => true,
            ByteOrder::Little => u16::from_ne_bytes([1, 0]) == 1,
            ByteOrder::Big => u16::from_ne_bytes([0, 1]) == 1,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        DType::parse(s)
    }
}

/// Rust element types that can view a gathered buffer without copying.
///
/// Implemented for the fixed-width numeric types; a view is only given when
/// the store's dtype has the same kind and size and native byte order.
pub trait Element: bytemuck::Pod {
    /// NumPy kind of this type.
    const KIND: Kind;
    /// NumPy dtype string for this type in little-endian order.
    const DTYPE_LE: &'static str;
}

macro_rules! element {
    ($($t:ty => $kind:ident, $s:literal;)*) => {
        $(impl Element for $t {
            const KIND: Kind = Kind::$kind;
            const DTYPE_LE: &'static str = $s;
        })*
    };
}
element! {
    u8 => UInt, "|u1"; i8 => Int, "|i1"; u16 => UInt, "<u2"; i16 => Int, "<i2";
    u32 => UInt, "<u4"; i32 => Int, "<i4"; u64 => UInt, "<u8"; i64 => Int, "<i8";
    f32 => Float, "<f4"; f64 => Float, "<f8";
}

impl DType {
    /// Whether a buffer of this dtype can be viewed as `[T]` directly.
    pub fn matches<T: Element>(&self) -> bool {
        self.kind == T::KIND && self.itemsize == std::mem::size_of::<T>() && self.is_native_order()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numpy_strings() {
        for (s, kind, size) in [
            ("|u1", Kind::UInt, 1),
            ("<i4", Kind::Int, 4),
            ("<f2", Kind::Float, 2),
            ("|b1", Kind::Bool, 1),
            ("<c8", Kind::Complex, 8),
            ("<c16", Kind::Complex, 16),
            (">i4", Kind::Int, 4),
            ("|S5", Kind::Bytes, 5),
            ("<U3", Kind::Unicode, 12),
            ("|V8", Kind::Void, 8),
            ("<M8[ns]", Kind::Datetime, 8),
            ("<m8[s]", Kind::Timedelta, 8),
        ] {
            let d = DType::parse(s).unwrap();
            assert_eq!((d.kind(), d.itemsize(), d.as_str()), (kind, size, s));
        }
        assert_eq!(DType::parse(">i4").unwrap().byte_order(), ByteOrder::Big);
        assert_eq!(DType::parse("<M8[ns]").unwrap().unit(), Some("ns"));
        for bad in ["", "f4", "<f3", "|O8", "<i4[ns]", "<f", "<f4x", "|i4", "<b2", "<M8[", "<V0"] {
            assert!(DType::parse(bad).is_err(), "{bad}");
        }
    }
}
