//! Memory-mapped files: reads are slices of the map, so a raw record is copied
//! once (map → output) and a compressed one is decoded straight from the map.

use super::ByteSource;
use std::fs::File;
use std::io;

/// A read-only memory map of a whole file.
#[derive(Debug)]
pub struct MmapSource {
    map: Option<memmap2::Mmap>,
    /// The file, for asking the page cache about it.
    file: File,
    /// Whether `mincore` sees the file's pages (else probe by reading).
    visible: bool,
}

impl MmapSource {
    /// Map an open file (an empty file maps to nothing).
    ///
    /// # Safety
    /// No process may truncate or modify the file while the map lives: the
    /// map's bytes are read as an ordinary `&[u8]`. zrecord maps a store's
    /// files only while holding loaderx's shared flock on its `meta.zr`
    /// (`Store::open_with`, which reads with pread when opened without the
    /// lock; `zrecord verify`, while its `Store` holds it): writers (ours and
    /// loaderx's) take that lock exclusively for a whole build and never
    /// rewrite a published store's bytes. `zrecord import npy` maps the
    /// `.npy` file it converts, which nothing else is expected to change.
    ///
    /// # Errors
    /// When the file cannot be mapped.
    #[allow(unsafe_code)]
    pub unsafe fn new(file: &File) -> io::Result<Self> {
        let owned = file.try_clone()?;
        let visible = crate::local::sys::page_cache_visible(file);
        if file.metadata()?.len() == 0 {
            return Ok(MmapSource { map: None, file: owned, visible });
        }
        // SAFETY: the caller's promise (see `# Safety`).
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(file)? };

        Ok(MmapSource { map: Some(map), file: owned, visible })
    }

    /// Tell the OS the map is read at random: a page fault then reads no
    /// window around its page (best effort).
    pub fn advise_random(&self) {
        if let Some(map) = &self.map {
            let _ = map.advise(memmap2::Advice::Random);
        }
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

impl ByteSource for MmapSource {
    fn size(&self) -> u64 {
        self.bytes().len() as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        super::check_range(self.size(), offset, buf.len())?;
        let start = offset as usize;
        buf.copy_from_slice(&self.bytes()[start..start + buf.len()]);
        Ok(())
    }
    fn slice(&self, offset: u64, len: usize) -> Option<&[u8]> {
        super::check_range(self.size(), offset, len).ok()?;
        let start = offset as usize;
        Some(&self.bytes()[start..start + len])
    }
    fn will_need(&self, offset: u64, len: u64) {
        crate::local::sys::will_need(&self.file, offset, len);
    }
    /// `mincore` on the page of the map holding `offset`: it asks the page
    /// cache and reads nothing. For a file `mincore` cannot see (another
    /// user's, read-only to us: Linux then says every page is in memory), a
    /// timed one-byte read ([`crate::local::sys::read_probe`]).
    fn is_resident(&self, offset: u64) -> Option<bool> {
        if !self.visible {
            return crate::local::sys::read_probe(&self.file, offset);
        }
        let bytes = self.bytes();
        let offset = usize::try_from(offset).ok().filter(|&o| o < bytes.len())?;
        // The map starts on a page boundary, so this slice does too.
        let start = offset - offset % crate::local::sys::page_size();
        crate::local::sys::is_resident(&bytes[start..=offset])
    }
}
