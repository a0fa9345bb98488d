// A byte source that counts its reads in flight, shared by tests/cold.rs
// and the unit tests of src/local/reader/parts.rs. Included with
// `include!` in a module that has `ByteSource` and `MemorySource` in
// scope (the crate's own paths differ inside and outside it).

/// Bytes said to be out of memory, each read taking a few milliseconds,
/// counted while in flight in `now` (shared by every source of one test)
/// and the most at once in `most`.
pub struct InFlight {
    pub bytes: MemorySource,
    pub now: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    pub most: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl ByteSource for InFlight {
    fn size(&self) -> u64 {
        self.bytes.size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        self.most.fetch_max(self.now.fetch_add(1, SeqCst) + 1, SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(3));
        self.now.fetch_sub(1, SeqCst);
        self.bytes.read_exact_at(offset, buf)
    }
    fn is_resident(&self, _offset: u64) -> Option<bool> {
        Some(false)
    }
}
