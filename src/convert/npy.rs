//! `.npy` headers: parsing (versions 1.0, 2.0 and 3.0) and writing, plus the
//! Fortran-to-C row copy that importing a column-major array needs.
//!
//! Pure functions over byte slices: the caller maps or reads the file. The
//! header is a Python dict literal written by NumPy, but a `.npy` file may
//! come from anywhere, so parsing is strict and bounded: exactly the keys
//! `descr`, `fortran_order` and `shape`, a header of at most
//! [`MAX_HEADER_LEN`] bytes, nesting at most [`MAX_DEPTH`] deep, and every
//! failure is an [`Error::Npy`] that says what is wrong.
//!
//! ```
//! use zrecord::convert::npy;
//! use zrecord::DType;
//!
//! let dtype = DType::parse("<f4")?;
//! let mut file = npy::encode_header(&dtype, false, &[2, 3]);
//! file.extend_from_slice(&[0u8; 24]);
//! let header = npy::parse("x.npy", &file)?;
//! assert_eq!(header.dtype.as_str(), "<f4");
//! assert_eq!(header.shape, [2, 3]);
//! assert_eq!(header.data_bytes(), Some(24));
//! assert_eq!(header.data_offset % 64, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::format::{ByteOrder, DType};
use crate::{Error, Result};
use std::ops::Range;

/// The six bytes every `.npy` file starts with.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Largest header text accepted (NumPy itself refuses more than 10 000 by default).
pub const MAX_HEADER_LEN: usize = 1 << 20;
/// Deepest nesting of brackets accepted in the header dict.
pub const MAX_DEPTH: usize = 16;
/// Alignment NumPy gives the start of the array data.
const ALIGN: usize = 64;

/// A parsed `.npy` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyHeader {
    /// Format version `(major, minor)`: 1.0, 2.0 or 3.0.
    pub version: (u8, u8),
    /// The `descr` string exactly as written in the file.
    pub descr: String,
    /// The element type as NumPy's `dtype.str` (`|u1`, `<f4`, `>i4`, ...).
    pub dtype: DType,
    /// Whether the data is stored column-major.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<u64>,
    /// Offset of the first data byte in the file.
    pub data_offset: usize,
}

impl NpyHeader {
    /// Number of items (`prod(shape)`), if it fits `u64`.
    pub fn items(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }
    /// Bytes of array data the header announces, if it fits `u64`.
    pub fn data_bytes(&self) -> Option<u64> {
        self.items()?.checked_mul(self.dtype.itemsize() as u64)
    }
}

fn npy_err(file: &str, why: impl Into<String>) -> Error {
    Error::Npy { file: file.to_string(), why: why.into() }
}

/// Bytes of the file needed to parse the header (magic, version, length
/// field and header text), read from its first 12 bytes (fewer are enough
/// for version 1.0). Lets a streaming reader fetch exactly the preamble.
///
/// # Errors
/// `Npy` for a file that is not `.npy`, an unknown version or a header
/// longer than [`MAX_HEADER_LEN`]; `Npy` "truncated" when `start` is too short
/// to tell.
pub fn preamble_len(file: &str, start: &[u8]) -> Result<usize> {
    preamble(file, start).map(|(_, _, len)| len)
}

/// `(version, text start, preamble length)`.
fn preamble(file: &str, start: &[u8]) -> Result<((u8, u8), usize, usize)> {
    if start.len() < MAGIC.len() || &start[..MAGIC.len()] != MAGIC {
        let what = if start.is_empty() { "empty file".to_string() } else { "wrong magic bytes".to_string() };
        return Err(npy_err(file, format!("not a .npy file ({what}; expected \\x93NUMPY)")));
    }
    if start.len() < 8 {
        return Err(npy_err(file, "truncated .npy file (ends inside the version bytes)"));
    }
    let version = (start[6], start[7]);
    let (field, text_start) = match version {
        (1, 0) => (2, 10),
        (2, 0) | (3, 0) => (4, 12),
        (a, b) => {
            return Err(npy_err(
                file,
                format!("unsupported .npy format version {a}.{b} (known: 1.0, 2.0, 3.0)"),
            ))
        }
    };
    if start.len() < text_start {
        return Err(npy_err(file, "truncated .npy file (ends inside the header length)"));
    }
    let len = match field {
        2 => u16::from_le_bytes([start[8], start[9]]) as usize,
        _ => u32::from_le_bytes([start[8], start[9], start[10], start[11]]) as usize,
    };
    if len > MAX_HEADER_LEN {
        return Err(npy_err(
            file,
            format!("header of {len} bytes is larger than {MAX_HEADER_LEN}; refusing it"),
        ));
    }
    Ok((version, text_start, text_start + len))
}

/// Parse the header at the start of a `.npy` file (`bytes` must hold at
/// least the whole preamble; the array data may follow or not).
///
/// # Errors
/// `Npy` naming the problem: not a `.npy` file, truncated header, unknown
/// version, a dict that is not NumPy's, a structured or object dtype, a
/// negative or non-integer dimension.
pub fn parse(file: &str, bytes: &[u8]) -> Result<NpyHeader> {
    let (version, text_start, end) = preamble(file, bytes)?;
    if bytes.len() < end {
        return Err(npy_err(
            file,
            format!("truncated .npy file: the header needs {end} bytes, the file has {}", bytes.len()),
        ));
    }
    let raw = &bytes[text_start..end];
    let text: String = if version.0 >= 3 {
        std::str::from_utf8(raw)
            .map_err(|_| npy_err(file, "header of a version 3.0 file is not UTF-8"))?
            .to_string()
    } else {
        raw.iter().map(|&b| char::from(b)).collect() // latin-1
    };
    let bad = |why: String| npy_err(file, format!("bad .npy header: {why}"));
    let value = Parser::new(&text).document().map_err(bad)?;
    let Value::Dict(entries) = value else {
        return Err(bad("the header is not a dict".into()));
    };
    let mut descr = None;
    let mut fortran_order = None;
    let mut shape = None;
    for (key, v) in entries {
        let slot = match key.as_str() {
            "descr" => &mut descr,
            "fortran_order" => &mut fortran_order,
            "shape" => &mut shape,
            other => {
                return Err(bad(format!("unexpected key {other:?} (expected descr, fortran_order, shape)")))
            }
        };
        if slot.replace(v).is_some() {
            return Err(bad(format!("key {key:?} appears twice")));
        }
    }
    let (Some(descr), Some(fortran_order), Some(shape)) = (descr, fortran_order, shape) else {
        return Err(bad("missing key (a header holds descr, fortran_order and shape)".into()));
    };
    let descr = match descr {
        Value::Str(s) => s,
        Value::List(_) => {
            return Err(npy_err(
                file,
                "structured dtype (a record with named fields) cannot be stored; save each field as its own array",
            ))
        }
        other => return Err(bad(format!("descr is {}, expected a dtype string", other.kind()))),
    };
    let dtype = descr_to_dtype(&descr).map_err(|why| npy_err(file, why))?;
    let fortran_order = match fortran_order {
        Value::Bool(b) => b,
        other => return Err(bad(format!("fortran_order is {}, expected True or False", other.kind()))),
    };
    let shape = match shape {
        Value::Tuple(dims) | Value::List(dims) => dims
            .into_iter()
            .map(|d| match d {
                Value::Int(n) => Ok(n),
                other => Err(bad(format!("shape holds {}, expected non-negative integers", other.kind()))),
            })
            .collect::<Result<Vec<u64>>>()?,
        other => return Err(bad(format!("shape is {}, expected a tuple of integers", other.kind()))),
    };
    Ok(NpyHeader { version, descr, dtype, fortran_order, shape, data_offset: end })
}

/// Turn a `.npy` `descr` string into the dtype a store records (NumPy's
/// `dtype.str`): `=`, `|` on multi-byte types and a missing byte order mean
/// native order; single-byte and opaque types take `|`.
///
/// # Errors
/// A message for object, structured or unknown dtypes.
pub fn descr_to_dtype(descr: &str) -> std::result::Result<DType, String> {
    let (order, rest) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (Some(c), &descr[1..]),
        _ => (None, descr),
    };
    let kind = rest.chars().next().ok_or_else(|| format!("dtype {descr:?} is empty"))?;
    if kind == 'O' {
        return Err(format!("dtype {descr:?}: object arrays (Python objects) cannot be stored"));
    }
    if !"biufcSUVMm".contains(kind) {
        return Err(format!(
            "dtype {descr:?} is not a dtype a store can hold (numeric, bool, S, U, V, M8, m8)"
        ));
    }
    let single = matches!(kind, 'b' | 'S' | 'V') || (matches!(kind, 'i' | 'u') && &rest[1..] == "1");
    let native = if u16::from_ne_bytes([1, 0]) == 1 { '<' } else { '>' };
    let order = match order {
        _ if single => '|',
        Some(c @ ('<' | '>')) => c,
        _ => native,
    };
    let dtype = DType::parse(&format!("{order}{rest}"))?;
    debug_assert!(dtype.itemsize() == 1 || single || dtype.byte_order() != ByteOrder::NotApplicable);
    Ok(dtype)
}

/// The header of a version 1.0 (or 2.0, when longer than 65 535 bytes)
/// `.npy` file for `dtype` and `shape`, padded as NumPy pads it so the data
/// starts at a multiple of 64.
pub fn encode_header(dtype: &DType, fortran_order: bool, shape: &[u64]) -> Vec<u8> {
    encode_header_min(dtype, fortran_order, shape, 0)
}

/// As [`encode_header`], padded with spaces to at least `min_len` bytes
/// (rounded up to 64). Writing a header for a placeholder shape first and
/// the real one later with the first one's length lets a writer stream data
/// whose length it learns only at the end.
pub fn encode_header_min(dtype: &DType, fortran_order: bool, shape: &[u64], min_len: usize) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let fortran = if fortran_order { "True" } else { "False" };
    let dict =
        format!("{{'descr': '{}', 'fortran_order': {fortran}, 'shape': {shape_text}, }}", dtype.as_str());
    // Version 1.0 has a 10-byte preamble; 2.0 a 12-byte one.
    let v1_total = (10 + dict.len() + 1).next_multiple_of(ALIGN).max(min_len.next_multiple_of(ALIGN));
    let (version, pre) = if v1_total - 10 <= usize::from(u16::MAX) { (1u8, 10) } else { (2u8, 12) };
    let total = (pre + dict.len() + 1).next_multiple_of(ALIGN).max(min_len.next_multiple_of(ALIGN));
    let text_len = total - pre;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(text_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(text_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// Copy rows `rows` (indices along axis 0) of a Fortran-ordered array into
/// `out` as C-ordered rows.
///
/// `data` holds the whole array (`prod(shape) * itemsize` bytes, column-major)
/// and `out` exactly `rows.len() * prod(shape[1..]) * itemsize` bytes. Each
/// element `(i, j…)` of a Fortran array lives at `i + n·f(j…)`, so for one
/// position `j…` inside a row the wanted rows are one contiguous run of the
/// input: the copy reads runs and scatters them to their row.
///
/// # Panics
/// If the buffers do not have those sizes, or `rows` reaches past `shape[0]`.
pub fn fortran_rows_to_c(data: &[u8], shape: &[u64], itemsize: usize, rows: Range<u64>, out: &mut [u8]) {
    let n = shape.first().copied().unwrap_or(1) as usize;
    let inner = &shape[shape.len().min(1)..];
    let row_items: usize = inner.iter().map(|&d| d as usize).product();
    let (r0, r1) = (rows.start as usize, rows.end as usize);
    assert!(r0 <= r1 && r1 <= n, "rows {r0}..{r1} outside 0..{n}");
    assert_eq!(data.len(), n * row_items * itemsize, "input is not the whole array");
    let row_bytes = row_items * itemsize;
    assert_eq!(out.len(), (r1 - r0) * row_bytes, "output is not whole rows");
    // Column-major strides of the inner dims, in items of the (n, inner...) array.
    let mut f_stride = vec![0usize; inner.len()];
    let mut s = n;
    for (k, &d) in inner.iter().enumerate() {
        f_stride[k] = s;
        s *= d as usize;
    }
    // Walk the inner positions in C order with an odometer, tracking f(j).
    let mut idx = vec![0usize; inner.len()];
    let mut f = 0usize;
    for j in 0..row_items {
        let src = (f + r0) * itemsize;
        let run = &data[src..src + (r1 - r0) * itemsize];
        for (i, item) in run.chunks_exact(itemsize).enumerate() {
            let dst = i * row_bytes + j * itemsize;
            out[dst..dst + itemsize].copy_from_slice(item);
        }
        for k in (0..inner.len()).rev() {
            idx[k] += 1;
            f += f_stride[k];
            if idx[k] < inner[k] as usize {
                break;
            }
            f -= f_stride[k] * idx[k];
            idx[k] = 0;
        }
    }
}

/// A Python literal, as far as `.npy` headers use them.
#[derive(Debug)]
enum Value {
    Str(String),
    Int(u64),
    Bool(bool),
    None,
    Tuple(Vec<Value>),
    List(Vec<Value>),
    Dict(Vec<(String, Value)>),
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Str(_) => "a string",
            Value::Int(_) => "an integer",
            Value::Bool(_) => "a boolean",
            Value::None => "None",
            Value::Tuple(_) => "a tuple",
            Value::List(_) => "a list",
            Value::Dict(_) => "a dict",
        }
    }
}

/// A recursive-descent parser for the literals above, bounded in depth.
struct Parser<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
}

type PResult<T> = std::result::Result<T, String>;

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser { text, at: 0, depth: 0 }
    }

    fn document(mut self) -> PResult<Value> {
        let v = self.value()?;
        self.skip_ws();
        if self.at != self.text.len() {
            return Err(format!("unexpected text after the dict at byte {}", self.at));
        }
        Ok(v)
    }

    fn skip_ws(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.text[self.at..].chars().next()
    }

    fn expect(&mut self, c: char) -> PResult<()> {
        match self.peek() {
            Some(got) if got == c => {
                self.at += c.len_utf8();
                Ok(())
            }
            Some(got) => Err(format!("expected {c:?} at byte {}, found {got:?}", self.at)),
            None => Err(format!("expected {c:?} at byte {}, found the end", self.at)),
        }
    }

    fn value(&mut self) -> PResult<Value> {
        match self.peek() {
            Some('{') => self.nested(|p| p.dict()),
            Some('(') => self.nested(|p| p.sequence('(', ')').map(Value::Tuple)),
            Some('[') => self.nested(|p| p.sequence('[', ']').map(Value::List)),
            Some(q @ ('\'' | '"')) => self.string(q).map(Value::Str),
            Some(c) if c.is_ascii_digit() => self.int(),
            Some('-') => Err(format!("negative number at byte {}", self.at)),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => self.name(),
            Some(c) => Err(format!("unexpected {c:?} at byte {}", self.at)),
            None => Err("unexpected end of header".into()),
        }
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self) -> PResult<Value>) -> PResult<Value> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("nesting deeper than {MAX_DEPTH}"));
        }
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn dict(&mut self) -> PResult<Value> {
        self.expect('{')?;
        let mut entries = Vec::new();
        loop {
            if self.peek() == Some('}') {
                self.at += 1;
                return Ok(Value::Dict(entries));
            }
            let key = match self.value()? {
                Value::Str(s) => s,
                other => return Err(format!("dict key is {}, expected a string", other.kind())),
            };
            self.expect(':')?;
            let v = self.value()?;
            entries.push((key, v));
            match self.peek() {
                Some(',') => self.at += 1,
                Some('}') => {}
                _ => return Err(format!("expected ',' or '}}' at byte {}", self.at)),
            }
        }
    }

    fn sequence(&mut self, open: char, close: char) -> PResult<Vec<Value>> {
        self.expect(open)?;
        let mut items = Vec::new();
        let mut trailing_comma = false;
        loop {
            if self.peek() == Some(close) {
                self.at += 1;
                // `(3)` is the integer 3 in Python, not a tuple.
                if open == '(' && items.len() == 1 && !trailing_comma {
                    return Err("a one-element tuple needs a trailing comma, as in (3,)".into());
                }
                return Ok(items);
            }
            items.push(self.value()?);
            trailing_comma = false;
            match self.peek() {
                Some(',') => {
                    self.at += 1;
                    trailing_comma = true;
                }
                Some(c) if c == close => {}
                _ => return Err(format!("expected ',' or {close:?} at byte {}", self.at)),
            }
        }
    }

    fn string(&mut self, quote: char) -> PResult<String> {
        self.at += 1;
        let mut out = String::new();
        let mut chars = self.text[self.at..].char_indices();
        while let Some((k, c)) = chars.next() {
            match c {
                c if c == quote => {
                    self.at += k + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, e @ ('\\' | '\'' | '"'))) => out.push(e),
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, e)) => return Err(format!("unsupported escape \\{e} in a string")),
                    None => break,
                },
                '\n' => return Err("newline inside a string".into()),
                c => out.push(c),
            }
        }
        Err("unterminated string".into())
    }

    fn int(&mut self) -> PResult<Value> {
        let rest = &self.text[self.at..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let n: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("integer {} does not fit 64 bits", &rest[..digits.min(40)]))?;
        self.at += digits;
        // Python 2 wrote long integers as `3L`.
        if self.text[self.at..].starts_with('L') {
            self.at += 1;
        }
        if self.text[self.at..].starts_with(|c: char| c == '.' || c == 'e' || c.is_ascii_alphabetic()) {
            return Err(format!("not an integer at byte {}", self.at));
        }
        Ok(Value::Int(n))
    }

    fn name(&mut self) -> PResult<Value> {
        let rest = &self.text[self.at..];
        let len = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_').len();
        let word = &rest[..len];
        self.at += len;
        match word {
            "True" => Ok(Value::Bool(true)),
            "False" => Ok(Value::Bool(false)),
            "None" => Ok(Value::None),
            _ => Err(format!("unexpected name {:?}", &word[..word.len().min(40)])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dict: &str, version: u8) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend([version, 0]);
        if version == 1 {
            out.extend((dict.len() as u16).to_le_bytes());
        } else {
            out.extend((dict.len() as u32).to_le_bytes());
        }
        out.extend(dict.as_bytes());
        out
    }

    #[test]
    fn parses_numpy_headers() {
        let h =
            parse("a", &file("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }   \n", 1)).unwrap();
        assert_eq!((h.dtype.as_str(), h.fortran_order, h.shape.as_slice()), ("<f4", false, &[3, 4][..]));
        let h = parse("a", &file("{\"descr\":\">i4\",\"fortran_order\":True,\"shape\":(5,)}\n", 2)).unwrap();
        assert_eq!((h.dtype.as_str(), h.fortran_order, h.shape.as_slice()), (">i4", true, &[5][..]));
        let h = parse("a", &file("{'descr': '<u1', 'fortran_order': False, 'shape': ()}", 3)).unwrap();
        assert_eq!((h.dtype.as_str(), h.shape.len(), h.version), ("|u1", 0, (3, 0)));
        let h = parse("a", &file("{'descr': '<U3', 'fortran_order': False, 'shape': (2L, 7L)}", 1)).unwrap();
        assert_eq!((h.dtype.itemsize(), h.shape.as_slice()), (12, &[2, 7][..]));
    }

    #[test]
    fn normalizes_descr() {
        for (descr, want) in [
            ("<u1", "|u1"),
            (">i1", "|i1"),
            ("|b1", "|b1"),
            ("<S5", "|S5"),
            ("|V8", "|V8"),
            ("=f8", "<f8"),
            ("f4", "<f4"),
            ("|i4", "<i4"),
            (">M8[ns]", ">M8[ns]"),
            ("<m8[s]", "<m8[s]"),
            ("<c16", "<c16"),
        ] {
            assert_eq!(descr_to_dtype(descr).unwrap().as_str(), want, "{descr}");
        }
        for bad in ["|O", "<O8", "", "<x4", "float32", "<f3", "|S0"] {
            assert!(descr_to_dtype(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hostile_headers_fail_clearly() {
        let cases: &[(&[u8], &str)] = &[
            (b"", "not a .npy file"),
            (b"PK\x03\x04 zip", "not a .npy file"),
            (b"\x93NUMPY", "truncated"),
            (b"\x93NUMPY\x01\x00\x10", "truncated"),
            (b"\x93NUMPY\x09\x00\x00\x00", "unsupported .npy format version 9.0"),
            (b"\x93NUMPY\x01\x00\xff\x00{'descr'", "truncated"),
            (b"\x93NUMPY\x02\x00\xff\xff\xff\xff", "larger than"),
        ];
        for (bytes, want) in cases {
            let e = parse("f", bytes).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} should say {want:?}");
        }
        for (dict, want) in [
            ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", "structured"),
            ("{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", "object"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "negative"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}", "not an integer"),
            ("{'descr': '<f4', 'fortran_order': False}", "missing key"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (2,)}", "twice"),
            ("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "fortran_order"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "trailing comma"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}", "64 bits"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "after the dict"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected"),
            ("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "expected"),
            ("[1, 2]", "not a dict"),
            (&format!("{}{}", "(".repeat(100), ")".repeat(100)), "nesting"),
            ("{'descr': __import__('os'), 'fortran_order': False, 'shape': (2,)}", "unexpected name"),
        ] {
            let e = parse("f", &file(dict, 1)).unwrap_err().to_string();
            assert!(e.contains(want), "{dict}: {e:?} should say {want:?}");
        }
    }

    #[test]
    fn encode_round_trips_and_aligns() {
        for (dtype, shape, fortran) in
            [("<f4", vec![2u64, 3], false), ("|u1", vec![], true), (">i8", vec![7], false)]
        {
            let dt = DType::parse(dtype).unwrap();
            let head = encode_header(&dt, fortran, &shape);
            assert_eq!(head.len() % 64, 0);
            assert_eq!(*head.last().unwrap(), b'\n');
            let h = parse("x", &head).unwrap();
            assert_eq!((h.dtype, h.shape, h.fortran_order, h.data_offset), (dt, shape, fortran, head.len()));
        }
        let dt = DType::parse("<f8").unwrap();
        let reserve = encode_header(&dt, false, &[u64::MAX]).len();
        assert_eq!(encode_header_min(&dt, false, &[5], reserve).len(), reserve);
        // Shapes too long for version 1.0 switch to 2.0.
        let long = encode_header(&dt, false, &vec![1; 30_000]);
        assert_eq!(long[6], 2);
        assert_eq!(parse("x", &long).unwrap().shape.len(), 30_000);
    }

    #[test]
    fn fortran_rows_match_c_order() {
        // A (3, 2, 4) array with value = C-order index, written column-major.
        let shape = [3u64, 2, 4];
        let mut f = vec![0u8; 24];
        for i in 0..3 {
            for j in 0..2 {
                for k in 0..4 {
                    f[i + 3 * (j + 2 * k)] = (i * 8 + j * 4 + k) as u8;
                }
            }
        }
        let mut out = vec![0u8; 16];
        fortran_rows_to_c(&f, &shape, 1, 1..3, &mut out);
        assert_eq!(out, (8u8..24).collect::<Vec<_>>());
        // Two-byte items keep their bytes together.
        let f2: Vec<u8> = f.iter().flat_map(|&v| [v, 0xAA]).collect();
        let mut out2 = vec![0u8; 48];
        fortran_rows_to_c(&f2, &shape, 2, 0..3, &mut out2);
        assert_eq!(out2, (0u8..24).flat_map(|v| [v, 0xAA]).collect::<Vec<_>>());
        // 1-D: Fortran and C coincide.
        let mut one = vec![0u8; 2];
        fortran_rows_to_c(&[5, 6, 7], &[3], 1, 1..3, &mut one);
        assert_eq!(one, [6, 7]);
    }
}
