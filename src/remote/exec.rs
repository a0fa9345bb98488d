//! The little async machinery the driver needs, written on `std` alone so it
//! runs the same in a browser (single-threaded, `!Send` futures) and natively:
//! bounded concurrency, cancellation by a racing future, and `block_on`.

use super::transport::LocalBoxFuture;
use crate::{Error, Result};
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Run `futures` with at most `limit` in flight, handing each output to
/// `done(index, value)` as it completes (on the calling task, so `done` may
/// write into borrowed buffers). The first error stops everything: futures
/// still in flight are dropped, which aborts their requests.
pub(crate) async fn for_each_bounded<'a, T>(
    futures: Vec<LocalBoxFuture<'a, Result<T>>>,
    limit: usize,
    mut done: impl FnMut(usize, T) -> Result<()>,
) -> Result<()> {
    let limit = limit.max(1);
    let mut queue = futures.into_iter().enumerate();
    let mut running: Vec<(usize, LocalBoxFuture<'a, Result<T>>)> = Vec::with_capacity(limit);
    poll_fn(|cx: &mut Context<'_>| loop {
        while running.len() < limit {
            match queue.next() {
                Some(next) => running.push(next),
                None => break,
            }
        }
        if running.is_empty() {
            return Poll::Ready(Ok(()));
        }
        let mut progressed = false;
        let mut k = 0;
        while k < running.len() {
            match running[k].1.as_mut().poll(cx) {
                Poll::Ready(out) => {
                    let (index, _) = running.swap_remove(k);
                    progressed = true;
                    if let Err(e) = out.and_then(|v| done(index, v)) {
                        running.clear();
                        return Poll::Ready(Err(e));
                    }
                }
                Poll::Pending => k += 1,
            }
        }
        if !progressed {
            return Poll::Pending;
        }
    })
    .await
}

/// Run `work` unless `cancel` completes first, in which case `work` is
/// dropped (aborting its requests) and the result is [`Error::Cancelled`].
///
/// ```
/// # zrecord::remote::block_on(async {
/// let never = std::future::pending::<()>();
/// let r = zrecord::remote::cancellable(async { Ok(7) }, never).await;
/// assert_eq!(r.unwrap(), 7);
/// let r = zrecord::remote::cancellable(std::future::pending::<zrecord::Result<u8>>(), async {}).await;
/// assert!(matches!(r, Err(zrecord::Error::Cancelled)));
/// # });
/// ```
///
/// # Errors
/// `work`'s error, or `Cancelled`.
pub async fn cancellable<T>(
    work: impl Future<Output = Result<T>>,
    cancel: impl Future<Output = ()>,
) -> Result<T> {
    let mut work = pin!(work);
    let mut cancel = pin!(cancel);
    poll_fn(|cx| {
        if let Poll::Ready(v) = work.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        match cancel.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Error::Cancelled)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Drive a future to completion on the current thread, parking between
/// wake-ups. For native callers of the async reader (the blocking API, the
/// CLI); in a browser, `await` instead.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A future that is pending `n` times (waking itself) before yielding `v`,
    /// tracking how many run at once.
    fn after<T: 'static>(
        n: usize,
        v: T,
        live: Rc<Cell<usize>>,
        peak: Rc<Cell<usize>>,
    ) -> LocalBoxFuture<'static, Result<T>> {
        let mut left = n;
        let mut started = false;
        let mut v = Some(v);
        Box::pin(poll_fn(move |cx| {
            if !started {
                started = true;
                live.set(live.get() + 1);
                peak.set(peak.get().max(live.get()));
            }
            if left == 0 {
                live.set(live.get() - 1);
                Poll::Ready(Ok(v.take().expect("polled once after ready")))
            } else {
                left -= 1;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }))
    }

    #[test]
    fn bounded_and_complete() {
        let live = Rc::new(Cell::new(0));
        let peak = Rc::new(Cell::new(0));
        let futs = (0..20).map(|i| after(i % 4, i, live.clone(), peak.clone())).collect();
        let mut seen = [false; 20];
        block_on(for_each_bounded(futs, 3, |k, v| {
            assert_eq!(k, v);
            seen[k] = true;
            Ok(())
        }))
        .unwrap();
        assert!(seen.iter().all(|&s| s));
        assert_eq!(peak.get(), 3);
    }

    #[test]
    fn first_error_stops() {
        let futs: Vec<LocalBoxFuture<'static, Result<u32>>> = vec![
            Box::pin(async { Ok(1) }),
            Box::pin(async { Err(Error::Cancelled) }),
            Box::pin(async { Ok(3) }),
        ];
        let mut got = Vec::new();
        let r = block_on(for_each_bounded(futs, 1, |_, v| {
            got.push(v);
            Ok(())
        }));
        assert!(matches!(r, Err(Error::Cancelled)));
        assert_eq!(got, vec![1]);
    }
}
