//! The shape prefix of Ragged records: `u8 rank`, `rank` × `u64` dims, payload.

use super::dtype::DType;

/// Most dimensions a Ragged record can carry (the rank is one byte).
pub const MAX_RANK: usize = 255;

/// Bytes of the prefix for a record of `rank` dimensions.
pub fn prefix_len(rank: usize) -> usize {
    1 + 8 * rank
}

/// Append the prefix for `shape` to `out`.
pub fn write_prefix(shape: &[u64], out: &mut Vec<u8>) {
    out.push(shape.len() as u8);
    for d in shape {
        out.extend_from_slice(&d.to_le_bytes());
    }
}

/// Payload bytes a record of `shape` must hold, if it fits in `u64`.
pub fn payload_len(shape: &[u64], dtype: &DType) -> Option<u64> {
    shape.iter().try_fold(dtype.itemsize() as u64, |acc, &d| acc.checked_mul(d))
}

/// Split a decoded Ragged record into its shape (appended to `dims`) and the
/// offset where its payload starts.
///
/// # Errors
/// A message when the prefix does not fit the record or the payload size
/// differs from `prod(shape) * itemsize`.
pub fn parse_prefix(record: &[u8], dtype: &DType, dims: &mut Vec<u64>) -> Result<usize, String> {
    let Some(&rank) = record.first() else {
        return Err("empty record has no shape prefix".into());
    };
    let head = prefix_len(rank as usize);
    if record.len() <= head {
        return Err(format!(
            "shape prefix of rank {rank} needs {head} bytes plus a payload, record has {}",
            record.len()
        ));
    }
    let start = dims.len();
    for d in record[1..head].chunks_exact(8) {
        dims.push(u64::from_le_bytes(d.try_into().expect("8 bytes")));
    }
    let have = (record.len() - head) as u64;
    match payload_len(&dims[start..], dtype) {
        Some(want) if want == have => Ok(head),
        want => {
            let shape = dims[start..].to_vec();
            dims.truncate(start);
            Err(format!(
                "shape {shape:?} of {dtype} needs {} payload bytes, record holds {have}",
                want.map_or("more than 2^64".to_string(), |w| w.to_string())
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_round_trip() {
        let dt = DType::parse("<i4").unwrap();
        let mut rec = Vec::new();
        write_prefix(&[2, 3], &mut rec);
        rec.extend([0u8; 24]);
        let mut dims = Vec::new();
        assert_eq!(parse_prefix(&rec, &dt, &mut dims), Ok(17));
        assert_eq!(dims, [2, 3]);
        rec.pop();
        assert!(parse_prefix(&rec, &dt, &mut dims).is_err());
        assert_eq!(dims, [2, 3]);
        assert!(parse_prefix(&[0], &dt, &mut dims).is_err());
        assert!(parse_prefix(&[9, 1, 2], &dt, &mut dims).is_err());
    }
}
