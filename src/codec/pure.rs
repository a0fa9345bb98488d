//! Pure-Rust zstd (ruzstd): the decoder for wasm32, also built natively so the
//! two can be compared on the same frames.

use ruzstd::decoding::{BlockDecodingStrategy, Dictionary, FrameDecoder};
use std::cell::RefCell;
use std::io::Read;

/// A dictionary for ruzstd: its id and the raw bytes.
#[derive(Clone, Debug)]
pub struct Dict {
    id: u32,
    raw: Vec<u8>,
}

impl Dict {
    /// Check and keep dictionary bytes (as stored in `dict.zr`).
    ///
    /// # Errors
    /// A message when the bytes are not a zstd dictionary.
    pub fn new(bytes: &[u8]) -> Result<Dict, String> {
        let d =
            Dictionary::decode_dict(bytes).map_err(|e| format!("dict.zr is not a zstd dictionary: {e}"))?;
        Ok(Dict { id: d.id, raw: bytes.to_vec() })
    }
}

thread_local! {
    static DECODER: RefCell<(FrameDecoder, Vec<u32>)> = RefCell::new((FrameDecoder::new(), Vec::new()));
}

/// Decode one complete frame into `dst`, which must be exactly its content size.
///
/// # Errors
/// A message when the frame is damaged, declares another size, or decodes to
/// fewer or more bytes than `dst`.
pub fn decompress_exact(src: &[u8], dst: &mut [u8], dict: Option<&Dict>) -> Result<(), String> {
    DECODER.with(|cell| {
        let (dec, loaded) = &mut *cell.borrow_mut();
        if let Some(d) = dict {
            if !loaded.contains(&d.id) {
                let parsed = Dictionary::decode_dict(&d.raw).map_err(|e| e.to_string())?;
                dec.add_dict(parsed).map_err(|e| e.to_string())?;
                loaded.push(d.id);
            }
        }
        let mut input = src;
        dec.reset(&mut input).map_err(|e| format!("zstd frame header: {e}"))?;
        if let Some(d) = dict {
            // Frames written without a dictionary id need the dictionary forced.
            dec.force_dict(d.id).map_err(|e| e.to_string())?;
        }
        let declared = dec.content_size();
        if declared != 0 && declared != dst.len() as u64 {
            return Err(format!("zstd frame declares {declared} bytes, location says {}", dst.len()));
        }
        let mut written = 0usize;
        loop {
            let finished = dec.is_finished();
            if !finished {
                dec.decode_blocks(&mut input, BlockDecodingStrategy::UptoBlocks(1))
                    .map_err(|e| format!("zstd frame does not decode: {e}"))?;
            }
            loop {
                let n = dec.read(&mut dst[written..]).map_err(|e| e.to_string())?;
                if n == 0 {
                    break;
                }
                written += n;
            }
            if dec.can_collect() > 0 {
                return Err(format!("zstd frame decodes to more than {} bytes", dst.len()));
            }
            if finished {
                break;
            }
        }
        if written != dst.len() {
            return Err(format!("zstd frame decoded to {written} bytes, expected {}", dst.len()));
        }
        Ok(())
    })
}
