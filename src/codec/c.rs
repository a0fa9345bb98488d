//! C zstd: per-thread decompression contexts, dictionaries digested once.

use std::cell::RefCell;
use zstd::zstd_safe::{self, DCtx, DDict};

/// A digested decompression dictionary, shared by every thread of one store.
pub struct Dict {
    ddict: DDict<'static>,
}

impl Dict {
    /// Digest dictionary bytes (as stored in `dict.zr`).
    ///
    /// # Errors
    /// A message when zstd rejects the dictionary.
    pub fn new(bytes: &[u8]) -> Result<Dict, String> {
        DDict::try_create(bytes)
            .map(|ddict| Dict { ddict })
            .ok_or_else(|| "zstd could not load dict.zr as a dictionary".to_string())
    }
}

impl std::fmt::Debug for Dict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dict")
    }
}

thread_local! {
    static DCTX: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

/// Decode one complete frame into `dst`, which must be exactly its content size.
///
/// # Errors
/// A message when the frame is damaged, declares another size, or decodes to
/// fewer or more bytes than `dst`.
pub fn decompress_exact(src: &[u8], dst: &mut [u8], dict: Option<&Dict>) -> Result<(), String> {
    let got = DCTX.with(|ctx| {
        let mut ctx = ctx.borrow_mut();
        match dict {
            Some(d) => ctx.decompress_using_ddict(dst, src, &d.ddict),
            None => ctx.decompress(dst, src),
        }
    });
    match got {
        Ok(n) if n == dst.len() => Ok(()),
        // The frame's header, read only to say what is wrong (reading it
        // first for every frame cost 1.5% of a gather of small records).
        _ => Err(match (zstd_safe::get_frame_content_size(src), got) {
            (Err(_), _) => "not a zstd frame (bad magic or header)".into(),
            (Ok(Some(n)), _) if n != dst.len() as u64 => {
                format!("zstd frame declares {n} bytes, location says {}", dst.len())
            }
            (_, Ok(n)) => format!("zstd frame decoded to {n} bytes, expected {}", dst.len()),
            (_, Err(code)) => format!("zstd frame does not decode: {}", zstd_safe::get_error_name(code)),
        }),
    }
}

/// A digested compression dictionary at a fixed level, shared by all threads.
pub struct CompressDict {
    cdict: zstd_safe::CDict<'static>,
}

impl CompressDict {
    /// Digest dictionary bytes for compression at `level`.
    ///
    /// # Errors
    /// A message when zstd rejects the dictionary.
    pub fn new(bytes: &[u8], level: i32) -> Result<CompressDict, String> {
        zstd_safe::CDict::try_create(bytes, level)
            .map(|cdict| CompressDict { cdict })
            .ok_or_else(|| "zstd could not load the dictionary".to_string())
    }
}

thread_local! {
    static CCTX: RefCell<zstd_safe::CCtx<'static>> = RefCell::new(zstd_safe::CCtx::create());
}

/// Largest frame `compress_append` can produce for `len` input bytes.
pub fn compress_bound(len: usize) -> usize {
    zstd_safe::compress_bound(len)
}

/// Compress `src` as one frame (content size in the header) and append it to `out`.
/// Returns the frame's length. The frame is written straight into `out`'s
/// spare capacity (reserved here), not staged and copied.
///
/// # Errors
/// A message from zstd (it only fails on resource exhaustion).
pub fn compress_append(
    src: &[u8],
    level: i32,
    dict: Option<&CompressDict>,
    out: &mut Vec<u8>,
) -> Result<usize, String> {
    let start = out.len();
    out.reserve(zstd_safe::compress_bound(src.len()));
    let mut tail = std::io::Cursor::new(out);
    tail.set_position(start as u64);
    let n = CCTX.with(|ctx| {
        let mut ctx = ctx.borrow_mut();
        match dict {
            Some(d) => ctx.compress_using_cdict(&mut tail, src, &d.cdict),
            None => ctx.compress(&mut tail, src, level),
        }
    });
    n.map_err(|code| format!("zstd compression failed: {}", zstd_safe::get_error_name(code)))
}
