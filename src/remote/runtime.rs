//! The one tokio runtime of a native process, shared by the HTTP client and
//! the object-store transport.
//!
//! The driver's futures are `!Send` (the browser's are) and run on the
//! caller's thread under our own tiny executor; network I/O runs as tokio
//! tasks, and the driver awaits their `JoinHandle`s, which any executor may
//! poll. Dropping the awaiting future aborts the task, so a cancelled gather
//! stops its requests.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::JoinHandle;

/// The process's runtime: two to four worker threads do the socket (and TLS)
/// work of hundreds of requests in flight; the bytes are decoded on the
/// caller's threads. A forked child (Python's multiprocessing) has none of
/// its parent's threads, so it starts its own runtime on first use.
pub fn handle() -> &'static Handle {
    static RUNTIME: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    match *slot {
        Some((owner, rt)) if owner == pid => rt.handle(),
        _ => {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            let rt = Builder::new_multi_thread()
                .worker_threads(cores.clamp(2, 4))
                .thread_name("zrecord-io")
                .enable_all()
                .build()
                .expect("starting the tokio runtime for remote reads");
            // Kept for the life of the process (a parent's, copied by fork,
            // is left alone: its threads are not in the child).
            let rt: &'static Runtime = Box::leak(Box::new(rt));
            *slot = Some((pid, rt));
            rt.handle()
        }
    }
}

/// Time since the first call, on a monotonic clock.
pub fn now() -> Duration {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

/// A task on the runtime, awaited from any executor; dropped, it aborts the task.
pub struct Task<T>(JoinHandle<T>);

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> Future for Task<T> {
    /// `None` if the task panicked or was aborted.
    type Output = Option<T>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        Pin::new(&mut self.0).poll(cx).map(Result::ok)
    }
}

/// Run `future` on the runtime.
pub fn spawn<F>(future: F) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    Task(handle().spawn(future))
}

/// Run blocking `work` (waiting on a file lock, on another task) on the
/// runtime's blocking threads, awaited from any executor.
pub fn spawn_blocking<T, F>(work: F) -> Task<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Task(handle().spawn_blocking(work))
}

/// Wait `duration` on the runtime's timer.
pub async fn sleep(duration: Duration) {
    spawn(async move { tokio::time::sleep(duration).await }).await;
}

/// Run `future` to completion from synchronous code (not from inside a runtime task).
pub fn block_on<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    super::exec::block_on(spawn(future)).expect("a runtime task panicked")
}
