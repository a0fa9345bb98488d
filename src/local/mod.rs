//! Stores on the local file system: the native reader (mmap or pread, across
//! all cores), the writer, sealing, and the thread pool and system calls they
//! share; measuring cold reads (`cache`: page-cache eviction, the device's
//! own limit). The remote driver's twin is [`crate::remote`].

pub mod cache;
mod claim;
mod cold;
pub mod reader;
pub(crate) mod residency;
pub mod seal;
pub mod sys;
pub(crate) mod uring;
pub(crate) mod work;
pub mod writer;
