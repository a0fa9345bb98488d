//! Response bodies: nothing, bytes in memory, or a byte range of a file.
//!
//! A small file range (what a store reader asks for) is read at once and sent
//! with the head; a large one is read in chunks on tokio's blocking pool, so
//! a slow client never holds more than one chunk and never blocks a worker.

use std::fs::File;
use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use hyper::body::{Bytes, Frame, SizeHint};
use tokio::task::JoinHandle;

use crate::local::sys::read_exact_at;

/// Ranges up to this size are read inline, before the response starts.
const INLINE: u64 = 64 * 1024;
/// Chunk size for larger ranges.
const CHUNK: u64 = 256 * 1024;

/// A response body with an exact length (so hyper always sends
/// `Content-Length`, never chunked encoding).
#[derive(Debug)]
pub(crate) struct Body(Kind);

#[derive(Debug)]
enum Kind {
    Empty,
    Bytes(Option<Bytes>),
    File(FileChunks),
}

impl Body {
    /// No body: 204, 304, and every answer to `HEAD`.
    pub fn empty() -> Self {
        Body(Kind::Empty)
    }

    pub fn bytes(b: impl Into<Bytes>) -> Self {
        let b = b.into();
        if b.is_empty() {
            return Body(Kind::Empty);
        }
        Body(Kind::Bytes(Some(b)))
    }

    /// `len` bytes of `file` from `start`.
    ///
    /// # Errors
    /// A small range is read here: any read error, or `UnexpectedEof` if
    /// the file is shorter than its metadata said.
    pub fn file(file: Arc<File>, start: u64, len: u64) -> io::Result<Self> {
        if len == 0 {
            return Ok(Body::empty());
        }
        if len <= INLINE {
            let mut buf = vec![0u8; len as usize];
            read_exact_at(&file, &mut buf, start)?;
            return Ok(Body::bytes(buf));
        }
        Ok(Body(Kind::File(FileChunks { file, pos: start, remaining: len, reading: None })))
    }
}

/// A chunk read on the blocking pool.
type ChunkRead = JoinHandle<io::Result<Vec<u8>>>;

#[derive(Debug)]
struct FileChunks {
    file: Arc<File>,
    pos: u64,
    remaining: u64,
    reading: Option<ChunkRead>,
}

impl FileChunks {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        if self.reading.is_none() {
            let (file, pos, n) = (Arc::clone(&self.file), self.pos, self.remaining.min(CHUNK));
            self.reading = Some(tokio::task::spawn_blocking(move || {
                let mut buf = vec![0u8; n as usize];
                read_exact_at(&file, &mut buf, pos)?;
                Ok(buf)
            }));
        }
        let handle = self.reading.as_mut().expect("set above");
        let joined = ready!(Pin::new(handle).poll(cx));
        self.reading = None;
        match joined {
            Ok(Ok(buf)) => {
                self.pos += buf.len() as u64;
                self.remaining -= buf.len() as u64;
                Poll::Ready(Some(Ok(Bytes::from(buf))))
            }
            // The file shrank under us, or the read failed: hyper closes the
            // connection, since the promised length cannot be met.
            Ok(Err(e)) => Poll::Ready(Some(Err(e))),
            Err(e) => Poll::Ready(Some(Err(io::Error::other(e)))),
        }
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        match &mut self.0 {
            Kind::Empty => Poll::Ready(None),
            Kind::Bytes(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Kind::File(f) => f.poll_chunk(cx).map(|c| c.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Kind::Empty => true,
            Kind::Bytes(b) => b.is_none(),
            Kind::File(f) => f.remaining == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(match &self.0 {
            Kind::Empty => 0,
            Kind::Bytes(b) => b.as_ref().map_or(0, |b| b.len() as u64),
            Kind::File(f) => f.remaining,
        })
    }
}
