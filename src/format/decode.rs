//! Decoding stored records into the caller's buffer, and assembling batches.

use super::{header::Codec, loc::RecordLoc, ragged, store_core::StoreCore, store_info::StoreInfo};
use crate::codec;
use crate::format::batch::RaggedBatch;
use crate::{Error, Result};
use std::ops::Range;

/// Decode one stored record (`src`, its `phys_length` bytes) into `dst`
/// (exactly `logic_length` bytes), as `codec` says: the plan's copy of the
/// store's codec, so that a batch over many stores (a dataset's 60 shards)
/// reads nothing of theirs but a dictionary and, for an error, the name.
///
/// # Errors
/// `CorruptRecord` when the frame fails or decodes to another size.
#[inline]
pub fn decode_record(core: &StoreCore, codec: Codec, index: u64, src: &[u8], dst: &mut [u8]) -> Result<()> {
    let corrupt = |why: String| Error::CorruptRecord { store: core.info().name.clone(), index, why };
    match codec {
        Codec::Raw => {
            if src.len() != dst.len() {
                return Err(corrupt(format!("{} stored bytes for {} decoded", src.len(), dst.len())));
            }
            dst.copy_from_slice(src);
            Ok(())
        }
        Codec::Zstd => codec::decompress_exact(src, dst, None).map_err(corrupt),
        Codec::ZstdDict => codec::decompress_exact(src, dst, core.dict()).map_err(corrupt),
    }
}

/// Most bytes a zstd frame decodes to per stored byte: the densest encoding is
/// a 4-byte RLE block (3-byte header, 1 byte) regenerating a full 128 KiB block.
pub const MAX_ZSTD_EXPANSION: u64 = 32 << 10;

/// Check a record's location before any buffer is sized by its `logic_length`:
/// the docs/FORMAT.md location rules (`BadFormat`), and that the stored bytes can
/// decode to that many bytes at all (`CorruptRecord`), so a small frame that
/// claims 2^31 bytes is refused instead of allocated for.
pub fn check_record_loc(info: &StoreInfo, index: u64, loc: &RecordLoc) -> Result<()> {
    loc.validate(&info.name, index, info.codec(), info.header.tail_offset)?;
    let (phys, logic) = (u64::from(loc.phys_length), u64::from(loc.logic_length));
    if info.codec().is_compressed() && logic > phys * MAX_ZSTD_EXPANSION {
        return Err(Error::CorruptRecord {
            store: info.name.clone(),
            index,
            why: format!(
                "a {phys}-byte zstd frame cannot decode to logic_length {logic} \
                 (zstd expands at most {MAX_ZSTD_EXPANSION}x)"
            ),
        });
    }
    Ok(())
}

/// Longest zstd frame header (magic, descriptor, window, dictionary id, content size).
pub const ZSTD_MAX_HEADER: usize = 18;

/// The content size a zstd frame header declares (`None` when it declares none).
///
/// # Errors
/// A message when `frame` does not start with a whole zstd frame header.
pub fn zstd_declared_size(frame: &[u8]) -> Result<Option<u64>, String> {
    const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
    if frame.len() < 5 || frame[..4] != MAGIC || frame[4] & 0x08 != 0 {
        return Err("not a zstd frame (bad magic or header)".into());
    }
    let descriptor = frame[4];
    let single_segment = descriptor & 0x20 != 0;
    let at = 5 + usize::from(!single_segment) + [0, 1, 2, 4][usize::from(descriptor & 3)];
    let width = match descriptor >> 6 {
        0 => usize::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let field = frame.get(at..at + width).ok_or("zstd frame header cut short")?;
    let mut le = [0u8; 8];
    le[..width].copy_from_slice(field);
    let size = u64::from_le_bytes(le);
    Ok(match width {
        0 => None,
        2 => Some(size + 256),
        _ => Some(size),
    })
}

/// Dense batches larger than this have every location checked (and a
/// remote reader fetches their bytes) before the batch buffer is allocated;
/// smaller ones are checked as they are read.
pub const PRECHECK_BYTES: usize = 16 << 20;

/// Compressed records claiming more decoded bytes than this have their frame
/// header checked ([`check_frame_header`]) before any buffer is sized for them.
pub const CHECK_HEADER_ABOVE: u32 = 1 << 20;

/// Whether `loc` claims enough that its frame header must be checked before
/// a buffer is sized by its `logic_length`.
pub fn is_big_claim(info: &StoreInfo, loc: &RecordLoc) -> bool {
    info.codec().is_compressed() && loc.logic_length > CHECK_HEADER_ABOVE
}

/// Check that a compressed record's frame header (its first
/// `min(phys_length, ZSTD_MAX_HEADER)` bytes) declares its `logic_length`.
///
/// # Errors
/// `CorruptRecord` for another declared size or a broken header.
pub fn check_frame_header(info: &StoreInfo, index: u64, loc: &RecordLoc, head: &[u8]) -> Result<()> {
    let corrupt = |why: String| Error::CorruptRecord { store: info.name.clone(), index, why };
    match zstd_declared_size(head) {
        Ok(Some(n)) if n != u64::from(loc.logic_length) => {
            Err(corrupt(format!("zstd frame declares {n} bytes, location says {}", loc.logic_length)))
        }
        Ok(_) => Ok(()),
        Err(why) => Err(corrupt(why)),
    }
}

/// Check a Dense record's location (as [`check_record_loc`]) and its row width.
pub fn check_dense_loc(info: &StoreInfo, index: u64, loc: &RecordLoc, row_bytes: u64) -> Result<()> {
    check_record_loc(info, index, loc)?;
    if u64::from(loc.logic_length) != row_bytes {
        return Err(Error::CorruptRecord {
            store: info.name.clone(),
            index,
            why: format!("logic_length {} is not the row width {row_bytes}", loc.logic_length),
        });
    }
    Ok(())
}

/// Where each record of a Ragged gather is decoded (`slots`, cleared
/// first), and the buffer size they need.
///
/// Each slot starts one byte before a multiple of 8. A shape prefix is
/// `1 + 8 * rank` bytes, so every payload then starts on a multiple of 8,
/// aligned for any dtype: a batch with gaps leaves each record where it was
/// decoded, and packing ([`compact_ragged`]) only ever moves payloads towards
/// the start of the buffer (one allocation, never a second copy of the batch).
pub fn ragged_slots_into(locs: &[RecordLoc], slots: &mut Vec<Range<usize>>) -> Result<usize, String> {
    let mut end: usize = 0;
    slots.clear();
    for loc in locs {
        let start = end.next_multiple_of(8) + 7;
        end = start
            .checked_add(loc.logic_length as usize)
            .ok_or_else(|| "batch larger than the address space".to_string())?;
        slots.push(start..end);
    }
    Ok(end)
}

/// Clear `out`'s shapes and spans before records are placed with [`place_ragged`].
pub fn begin_ragged(out: &mut RaggedBatch) {
    out.dims.clear();
    out.dim_starts.clear();
    out.spans.clear();
    out.dim_starts.push(0);
}

/// Place one decoded Ragged record (with its shape prefix) in a packed batch:
/// parse the prefix into `out`'s shapes and give its payload the next span,
/// aligned for `info`'s dtype, starting at or after `*at`. Returns the prefix
/// length and the span; the caller moves the payload there.
///
/// # Errors
/// `CorruptRecord` for a prefix that does not fit its record.
#[inline]
pub fn place_ragged(
    info: &StoreInfo,
    index: u64,
    record: &[u8],
    at: &mut usize,
    out: &mut RaggedBatch,
) -> Result<(usize, Range<usize>)> {
    let head = ragged::parse_prefix(record, info.dtype(), &mut out.dims)
        .map_err(|why| Error::CorruptRecord { store: info.name.clone(), index, why })?;
    let start = at.next_multiple_of(info.dtype().alignment());
    let span = start..start + (record.len() - head);
    out.spans.push(span.clone());
    out.dim_starts.push(out.dims.len());
    *at = span.end;
    Ok((head, span))
}

/// Split `buf` into one mutable part per slot (slots sorted and disjoint, as
/// [`ragged_slots_into`] makes them), so each record can be decoded in place.
pub fn slot_parts<'a>(buf: &'a mut [u8], slots: &[Range<usize>]) -> Vec<&'a mut [u8]> {
    let mut parts = Vec::with_capacity(slots.len());
    let mut rest = buf;
    let mut at = 0;
    for slot in slots {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(slot.start - at);
        let (mine, tail) = tail.split_at_mut(slot.len());
        parts.push(mine);
        rest = tail;
        at = slot.end;
    }
    parts
}

/// Turn decoded records sitting in their slots of `out.data` (as
/// [`ragged_slots_into`] lays them out) into a batch: parse each shape
/// prefix, and either leave each payload where it is (a batch that allows
/// gaps) or move it down to its packed, aligned place. Reuses `out`'s vectors.
///
/// # Errors
/// `CorruptRecord` for a prefix that does not fit its record.
pub fn compact_ragged(
    info: &StoreInfo,
    indices: &[u64],
    slots: &[Range<usize>],
    out: &mut RaggedBatch,
) -> Result<()> {
    begin_ragged(out);
    if out.gaps {
        let buf = out.data.as_slice();
        for (slot, &index) in slots.iter().zip(indices) {
            let head = ragged::parse_prefix(&buf[slot.clone()], info.dtype(), &mut out.dims)
                .map_err(|why| Error::CorruptRecord { store: info.name.clone(), index, why })?;
            let span = slot.start + head..slot.end;
            debug_assert_eq!(
                span.start % info.dtype().alignment(),
                0,
                "slots put payloads on 8-byte boundaries"
            );
            out.spans.push(span);
            out.dim_starts.push(out.dims.len());
        }
        return Ok(());
    }
    let mut at = 0usize;
    let mut data = std::mem::take(&mut out.data);
    for (slot, &index) in slots.iter().zip(indices) {
        let buf = data.as_mut_slice();
        let placed = place_ragged(info, index, &buf[slot.clone()], &mut at, out);
        let (head, span) = match placed {
            Ok(p) => p,
            Err(e) => {
                out.data = data;
                return Err(e);
            }
        };
        buf.copy_within(slot.start + head..slot.end, span.start);
    }
    data.truncate(at);
    out.data = data;
    Ok(())
}
