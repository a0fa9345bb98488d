//! The MsgPack schema that follows the Header: exactly
//! `{"dtype", "item_shape"}` (Dense) or `{"dtype"}` (Ragged).

use super::dtype::DType;
use serde::{Deserialize, Serialize};

/// Whether every record has one shape, or each its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Geometry {
    /// Every record is one item of `item_shape` (empty: scalar records).
    Dense {
        /// Shape of each record.
        item_shape: Vec<u64>,
    },
    /// Each record carries its own shape in a prefix.
    Ragged,
}

/// A decoded schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    /// Element type of every record.
    pub dtype: DType,
    /// Dense or Ragged.
    pub geometry: Geometry,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DenseWire {
    dtype: String,
    item_shape: Vec<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireAny {
    dtype: String,
    /// Absent for Ragged; when present it must be a list (`nil` is not "absent").
    #[serde(default, deserialize_with = "present")]
    item_shape: Option<Vec<u64>>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<u64>>, D::Error> {
    use serde::de::Error;
    Vec::<u64>::deserialize(d).map(Some).map_err(|e| D::Error::custom(format!("item_shape: {e}")))
}

/// Most `item_shape` dimensions: a batch adds one axis, and NumPy arrays have at most 64.
pub const MAX_DENSE_RANK: usize = 63;

#[derive(Serialize)]
struct RaggedWire<'a> {
    dtype: &'a str,
}

impl Schema {
    /// Decode the schema bytes, accepting exactly loaderx's fields.
    ///
    /// # Errors
    /// A message naming what is wrong (missing or unexpected field, negative
    /// or non-integer dimension, unknown dtype, trailing bytes).
    pub fn parse(bytes: &[u8]) -> Result<Schema, String> {
        // rmp-serde would also read a struct from an array; loaderx wants a map.
        if !matches!(bytes.first(), Some(0x80..=0x8f | 0xde | 0xdf)) {
            return Err("schema is not a MsgPack map".into());
        }
        let mut cursor = std::io::Cursor::new(bytes);
        let mut de = rmp_serde::Deserializer::new(&mut cursor);
        let wire = WireAny::deserialize(&mut de).map_err(|e| format!("schema does not decode: {e}"))?;
        let used = cursor.position() as usize;
        if used != bytes.len() {
            return Err(format!("schema has {} trailing bytes after the MsgPack map", bytes.len() - used));
        }
        let dtype = DType::parse(&wire.dtype)?;
        let geometry = match wire.item_shape {
            Some(item_shape) => {
                if item_shape.len() > MAX_DENSE_RANK {
                    return Err(format!(
                        "item_shape has {} dimensions (at most {MAX_DENSE_RANK}, as loaderx and NumPy)",
                        item_shape.len()
                    ));
                }
                Geometry::Dense { item_shape }
            }
            None => Geometry::Ragged,
        };
        Ok(Schema { dtype, geometry })
    }

    /// Encode as Python's `msgpack.dumps` would (keys in loaderx's order).
    pub fn encode(&self) -> Vec<u8> {
        let out = match &self.geometry {
            Geometry::Dense { item_shape } => rmp_serde::to_vec_named(&DenseWire {
                dtype: self.dtype.as_str().to_string(),
                item_shape: item_shape.clone(),
            }),
            Geometry::Ragged => rmp_serde::to_vec_named(&RaggedWire { dtype: self.dtype.as_str() }),
        };
        out.expect("serializing a map of strings and integers cannot fail")
    }

    /// Bytes of one Dense record (`prod(item_shape) * itemsize`), or `None`
    /// for Ragged stores and for shapes whose size overflows `u64`.
    pub fn row_bytes(&self) -> Option<u64> {
        match &self.geometry {
            Geometry::Dense { item_shape } => {
                item_shape.iter().try_fold(self.dtype.itemsize() as u64, |acc, &d| acc.checked_mul(d))
            }
            Geometry::Ragged => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_msgpack() {
        let s = Schema {
            dtype: DType::parse("<f4").unwrap(),
            geometry: Geometry::Dense { item_shape: vec![2, 3] },
        };
        let mut want = vec![0x82, 0xA5];
        want.extend(b"dtype");
        want.push(0xA3);
        want.extend(b"<f4");
        want.push(0xAA);
        want.extend(b"item_shape");
        want.extend([0x92, 0x02, 0x03]);
        assert_eq!(s.encode(), want);
        assert_eq!(Schema::parse(&want).unwrap(), s);
    }

    #[test]
    fn rejects_wrong_fields() {
        let extra =
            rmp_serde::to_vec_named(&std::collections::BTreeMap::from([("dtype", "<f4"), ("x", "y")]))
                .unwrap();
        assert!(Schema::parse(&extra).is_err());
        let neg = [
            0x82, 0xA5, b'd', b't', b'y', b'p', b'e', 0xA3, b'<', b'f', b'4', 0xAA, b'i', b't', b'e', b'm',
            b'_', b's', b'h', b'a', b'p', b'e', 0x91, 0xFF,
        ];
        assert!(Schema::parse(&neg).is_err());
        assert!(Schema::parse(&[0x80]).is_err());
        assert!(Schema::parse(&[]).is_err());
        // A struct as an array, and `item_shape: nil`, are not loaderx schemas.
        let array = rmp_serde::to_vec(&DenseWire { dtype: "<f4".into(), item_shape: vec![2] }).unwrap();
        assert_eq!(array[0], 0x92);
        assert!(Schema::parse(&array).is_err());
        let mut nil = vec![0x82, 0xA5];
        nil.extend(b"dtype");
        nil.push(0xA3);
        nil.extend(b"<f4");
        nil.push(0xAA);
        nil.extend(b"item_shape");
        nil.push(0xC0);
        assert!(Schema::parse(&nil).is_err());
    }
}
