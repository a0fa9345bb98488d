//! Record values for people (`get`) and for scripts (`get --json`), for
//! every dtype a store can hold, in either byte order.
//!
//! Text follows NumPy's printing: nested brackets, right-aligned items, and
//! for records of more than [`THRESHOLD`] items only the first and last
//! [`EDGE`] along each axis. JSON gives every value: booleans, integers,
//! numbers (`"nan"`, `"inf"`, `"-inf"` as strings), complex as `[re, im]`,
//! `|S` as the body of Python's bytes literal (trailing NULs dropped, as
//! NumPy shows them), `<U` as text, `|V` and extended-precision floats as
//! hex strings, datetime/timedelta as the stored integer (unit in the dtype;
//! NaT is null).

use serde_json::{json, Value};
use zrecord::format::Kind;
use zrecord::DType;

/// Records with more items than this are summarised in text output.
pub const THRESHOLD: usize = 1000;
/// Items shown at each end of a summarised axis.
pub const EDGE: usize = 3;
/// Text lines are wrapped to this width.
const WIDTH: usize = 100;

/// Item bytes in little-endian order.
fn le<const N: usize>(b: &[u8], d: &DType) -> [u8; N] {
    let mut out: [u8; N] = b[..N].try_into().expect("N bytes");
    if d.byte_order() == zrecord::format::ByteOrder::Big {
        out.reverse();
    }
    out
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = if h >> 15 == 1 { -1.0f32 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let mant = f32::from(h & 0x3ff);
    match exp {
        0 => sign * mant * 2f32.powi(-24),
        31 if mant == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        _ => sign * (1.0 + mant / 1024.0) * 2f32.powi(exp - 15),
    }
}

/// A float as a finite number or NumPy's `nan`/`inf`.
#[derive(Clone, Copy)]
enum Float {
    F32(f32),
    F64(f64),
}

impl Float {
    fn text(self) -> String {
        let (v, s) = match self {
            Float::F32(v) => (f64::from(v), format!("{v:?}")),
            Float::F64(v) => (v, format!("{v:?}")),
        };
        match v {
            v if v.is_nan() => "nan".into(),
            v if v.is_infinite() => if v > 0.0 { "inf" } else { "-inf" }.into(),
            _ => s,
        }
    }
    fn json(self) -> Value {
        let v = match self {
            // Through the shortest decimal form, so 0.1f32 stays 0.1 and not 0.10000000149.
            Float::F32(v) => format!("{v}").parse::<f64>().unwrap_or(f64::NAN),
            Float::F64(v) => v,
        };
        serde_json::Number::from_f64(v).map_or_else(|| json!(self.text()), Value::Number)
    }
}

fn float(d: &DType, b: &[u8]) -> Option<Float> {
    match d.itemsize() {
        2 => Some(Float::F32(f16_to_f32(u16::from_le_bytes(le(b, d))))),
        4 => Some(Float::F32(f32::from_le_bytes(le(b, d)))),
        8 => Some(Float::F64(f64::from_le_bytes(le(b, d)))),
        _ => None,
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::from("0x");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// The body of Python's bytes literal for `b`, trailing NULs dropped.
fn bytes_body(b: &[u8]) -> String {
    let end = b.iter().rposition(|&x| x != 0).map_or(0, |p| p + 1);
    let mut s = String::new();
    for &x in &b[..end] {
        match x {
            b'\\' => s.push_str("\\\\"),
            b'\'' => s.push_str("\\'"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\r' => s.push_str("\\r"),
            0x20..=0x7e => s.push(x as char),
            _ => s.push_str(&format!("\\x{x:02x}")),
        }
    }
    s
}

/// UCS-4 text, trailing NULs dropped, invalid code points as U+FFFD.
fn ucs4(d: &DType, b: &[u8]) -> String {
    let chars: Vec<u32> = b.chunks_exact(4).map(|c| u32::from_le_bytes(le(c, d))).collect();
    let end = chars.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1);
    chars[..end].iter().map(|&c| char::from_u32(c).unwrap_or('\u{fffd}')).collect()
}

fn int(d: &DType, b: &[u8]) -> Value {
    let signed = d.kind() != Kind::UInt;
    match (d.itemsize(), signed) {
        (1, true) => json!(b[0] as i8),
        (1, false) => json!(b[0]),
        (2, true) => json!(i16::from_le_bytes(le(b, d))),
        (2, false) => json!(u16::from_le_bytes(le(b, d))),
        (4, true) => json!(i32::from_le_bytes(le(b, d))),
        (4, false) => json!(u32::from_le_bytes(le(b, d))),
        (8, true) => json!(i64::from_le_bytes(le(b, d))),
        _ => json!(u64::from_le_bytes(le(b, d))),
    }
}

/// One item as JSON.
pub fn item_json(d: &DType, b: &[u8]) -> Value {
    match d.kind() {
        Kind::Bool => json!(b[0] != 0),
        Kind::Int | Kind::UInt => int(d, b),
        Kind::Float => float(d, b).map_or_else(|| json!(hex(b)), Float::json),
        Kind::Complex => {
            let half = d.itemsize() / 2;
            let part = DType::parse(&format!("{}f{half}", &d.as_str()[..1]));
            match part.ok().and_then(|p| Some((float(&p, &b[..half])?, float(&p, &b[half..])?))) {
                Some((re, im)) => json!([re.json(), im.json()]),
                None => json!(hex(b)),
            }
        }
        Kind::Bytes => json!(bytes_body(b)),
        Kind::Unicode => json!(ucs4(d, b)),
        Kind::Void => json!(hex(b)),
        Kind::Datetime | Kind::Timedelta => {
            let v = i64::from_le_bytes(le(b, d));
            if v == i64::MIN {
                Value::Null
            } else {
                json!(v)
            }
        }
    }
}

/// One item as NumPy would print it inside an array.
pub fn item_text(d: &DType, b: &[u8]) -> String {
    match d.kind() {
        Kind::Bool => if b[0] != 0 { "True" } else { "False" }.into(),
        Kind::Int | Kind::UInt => int(d, b).to_string(),
        Kind::Float => float(d, b).map_or_else(|| hex(b), Float::text),
        Kind::Complex => match item_json(d, b) {
            Value::Array(parts) => {
                let re = text_of(&parts[0]);
                let im = text_of(&parts[1]);
                let sign = if im.starts_with('-') { "" } else { "+" };
                format!("{re}{sign}{im}j")
            }
            other => text_of(&other),
        },
        Kind::Bytes => format!("b'{}'", bytes_body(b)),
        Kind::Unicode => format!("{:?}", ucs4(d, b)),
        Kind::Void => hex(b),
        Kind::Datetime => {
            let v = i64::from_le_bytes(le(b, d));
            datetime_text(v, d.unit().unwrap_or(""))
        }
        Kind::Timedelta => {
            let v = i64::from_le_bytes(le(b, d));
            if v == i64::MIN {
                "NaT".into()
            } else {
                format!("{v} {}", d.unit().unwrap_or("generic"))
            }
        }
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `YYYY-MM-DD` from days since 1970-01-01 (proleptic Gregorian).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A datetime64 value as NumPy prints it (`2024-01-02T03:04:05.123`).
fn datetime_text(v: i64, unit: &str) -> String {
    if v == i64::MIN {
        return "NaT".into();
    }
    // (units per second, digits of the fraction) for sub-day units.
    let (per_sec, digits, per_day) = match unit {
        "Y" => return format!("{}", 1970 + v),
        "M" => return format!("{}-{:02}", 1970 + v.div_euclid(12), v.rem_euclid(12) + 1),
        "W" => return datetime_text(v.saturating_mul(7), "D"),
        "D" => {
            let (y, m, d) = civil(v);
            return format!("{y}-{m:02}-{d:02}");
        }
        "h" => (0, 0, 24),
        "m" => (0, 0, 1440),
        "s" => (1, 0, 86_400),
        "ms" => (1_000, 3, 86_400_000),
        "us" => (1_000_000, 6, 86_400_000_000),
        "ns" => (1_000_000_000, 9, 86_400_000_000_000),
        _ => return format!("{v} {}", if unit.is_empty() { "generic" } else { unit }),
    };
    let (days, rest) = (v.div_euclid(per_day), v.rem_euclid(per_day));
    let (y, m, d) = civil(days);
    let date = format!("{y}-{m:02}-{d:02}");
    match unit {
        "h" => format!("{date}T{rest:02}"),
        "m" => format!("{date}T{:02}:{:02}", rest / 60, rest % 60),
        _ => {
            let (secs, frac) = (rest / per_sec, rest % per_sec);
            let hms = format!("{date}T{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
            if digits == 0 {
                hms
            } else {
                format!("{hms}.{frac:0digits$}")
            }
        }
    }
}

/// Every value of a record as nested JSON arrays (a scalar record is one value).
pub fn record_json(d: &DType, shape: &[u64], bytes: &[u8]) -> Value {
    match shape {
        [] => item_json(d, bytes),
        [n, rest @ ..] => {
            let step = bytes.len() / (*n as usize).max(1);
            Value::Array(
                (0..*n as usize).map(|k| record_json(d, rest, &bytes[k * step..(k + 1) * step])).collect(),
            )
        }
    }
}

enum Node {
    Leaf(String),
    List(Vec<Node>),
    Ellipsis,
}

fn build(d: &DType, shape: &[u64], bytes: &[u8], summarize: bool) -> Node {
    match shape {
        [] => Node::Leaf(item_text(d, bytes)),
        [n, rest @ ..] => {
            let n = *n as usize;
            let step = bytes.len() / n.max(1);
            let sub = |k: usize| build(d, rest, &bytes[k * step..(k + 1) * step], summarize);
            if summarize && n > 2 * EDGE {
                let mut items: Vec<Node> = (0..EDGE).map(sub).collect();
                items.push(Node::Ellipsis);
                items.extend((n - EDGE..n).map(sub));
                Node::List(items)
            } else {
                Node::List((0..n).map(sub).collect())
            }
        }
    }
}

fn widest(node: &Node) -> usize {
    match node {
        Node::Leaf(s) => s.chars().count(),
        Node::List(items) => items.iter().map(widest).max().unwrap_or(0),
        Node::Ellipsis => 3,
    }
}

fn render(node: &Node, depth: usize, rank: usize, width: usize, out: &mut String) {
    match node {
        Node::Leaf(s) => out.push_str(&format!("{s:>width$}")),
        Node::Ellipsis => out.push_str("..."),
        Node::List(items) if depth + 1 == rank => {
            // Innermost axis: items on a line, wrapped.
            out.push('[');
            let indent = depth + 1;
            let mut col = indent;
            for (k, item) in items.iter().enumerate() {
                let mut text = String::new();
                render(item, depth + 1, rank, width, &mut text);
                if k > 0 {
                    if col + 1 + text.len() > WIDTH {
                        out.push('\n');
                        out.push_str(&" ".repeat(indent));
                        col = indent;
                    } else {
                        out.push(' ');
                        col += 1;
                    }
                }
                out.push_str(&text);
                col += text.len();
            }
            out.push(']');
        }
        Node::List(items) => {
            out.push('[');
            let gap = "\n".repeat((rank - depth - 1).min(2));
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push_str(&gap);
                    out.push_str(&" ".repeat(depth + 1));
                }
                render(item, depth + 1, rank, width, out);
            }
            out.push(']');
        }
    }
}

/// A record as NumPy-style text, and whether it was summarised.
pub fn record_text(d: &DType, shape: &[u64], bytes: &[u8], full: bool) -> (String, bool) {
    let items = bytes.len() / d.itemsize().max(1);
    let summarize = !full && items > THRESHOLD && shape.iter().any(|&n| n as usize > 2 * EDGE);
    let node = build(d, shape, bytes, summarize);
    let mut out = String::new();
    render(&node, 0, shape.len(), widest(&node), &mut out);
    (out, summarize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(s: &str) -> DType {
        DType::parse(s).unwrap()
    }

    #[test]
    fn items_in_every_dtype() {
        assert_eq!(item_text(&dt(">i4"), &[0, 0, 1, 2]), "258");
        assert_eq!(item_text(&dt("<i2"), &[0xff, 0xff]), "-1");
        assert_eq!(item_text(&dt("<f2"), &[0x00, 0x3c]), "1.0");
        assert_eq!(item_text(&dt("<f4"), &0.1f32.to_le_bytes()), "0.1");
        assert_eq!(item_json(&dt("<f4"), &0.1f32.to_le_bytes()), json!(0.1));
        assert_eq!(item_text(&dt("<f8"), &f64::NAN.to_le_bytes()), "nan");
        assert_eq!(item_json(&dt("<f8"), &f64::NEG_INFINITY.to_le_bytes()), json!("-inf"));
        let c: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(item_text(&dt("<c8"), &c), "1.5-2.0j");
        assert_eq!(item_json(&dt("<c8"), &c), json!([1.5, -2.0]));
        assert_eq!(item_text(&dt("|S5"), b"a'\x01\0\0"), "b'a\\'\\x01'");
        assert_eq!(item_json(&dt("|S3"), b"ab\0"), json!("ab"));
        assert_eq!(item_text(&dt("<U2"), &[104, 0, 0, 0, 0, 0, 0, 0]), "\"h\"");
        assert_eq!(item_text(&dt("|b1"), &[1]), "True");
        assert_eq!(item_text(&dt("|V2"), &[1, 0xab]), "0x01ab");
        assert_eq!(item_text(&dt("<M8[s]"), &1_700_000_000i64.to_le_bytes()), "2023-11-14T22:13:20");
        assert_eq!(item_text(&dt("<M8[ms]"), &(-1i64).to_le_bytes()), "1969-12-31T23:59:59.999");
        assert_eq!(item_text(&dt("<M8[D]"), &19_000i64.to_le_bytes()), "2022-01-08");
        assert_eq!(item_text(&dt("<m8[s]"), &i64::MIN.to_le_bytes()), "NaT");
        assert_eq!(item_json(&dt("<M8[ns]"), &5i64.to_le_bytes()), json!(5));
    }

    #[test]
    fn arrays_print_like_numpy() {
        let d = dt("|u1");
        let (t, cut) = record_text(&d, &[2, 3], &[1, 2, 3, 40, 50, 60], false);
        assert_eq!(t, "[[ 1  2  3]\n [40 50 60]]");
        assert!(!cut);
        let big: Vec<u8> = (0..=255).cycle().take(2000).collect();
        let (t, cut) = record_text(&d, &[2000], &big, false);
        assert_eq!(t, "[  0   1   2 ... 205 206 207]");
        assert!(cut);
        assert_eq!(record_text(&d, &[], &[7], false).0, "7");
        assert_eq!(record_json(&d, &[2, 1], &[1, 2]), json!([[1], [2]]));
    }
}
