//! The little async machinery the driver needs, written on `std` alone so it
//! runs the same in a browser (single-threaded, `!Send` futures) and natively:
//! bounded concurrency, cancellation by a racing future, and `block_on`.

use super::transport::LocalBoxFuture;
use crate::{Error, Result};
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Which slots of a [`for_each_bounded`] were woken, and who to tell.
#[derive(Default)]
struct Ready {
    slots: Mutex<Vec<usize>>,
    parent: Mutex<Option<Waker>>,
}

/// The waker of one slot: marks it ready and wakes the task polling them all.
struct SlotWaker {
    slot: usize,
    ready: Arc<Ready>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        lock(&self.ready.slots).push(self.slot);
        if let Some(w) = lock(&self.ready.parent).as_ref() {
            w.wake_by_ref();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Run `futures` with at most `limit` in flight, handing each output to
/// `done(index, value)` as it completes (on the calling task, so `done` may
/// write into borrowed buffers). The first error stops everything: futures
/// still in flight are dropped, which aborts their requests.
///
/// Each future has its own waker, so a wake-up polls only the futures that
/// were woken, not all in flight (hundreds, natively).
pub(crate) async fn for_each_bounded<'a, T>(
    futures: Vec<LocalBoxFuture<'a, Result<T>>>,
    limit: usize,
    mut done: impl FnMut(usize, T) -> Result<()>,
) -> Result<()> {
    let limit = limit.max(1).min(futures.len().max(1));
    let mut queue = futures.into_iter().enumerate();
    let ready = Arc::new(Ready::default());
    let wakers: Vec<Waker> =
        (0..limit).map(|slot| Waker::from(Arc::new(SlotWaker { slot, ready: ready.clone() }))).collect();
    type Running<'b, T> = Option<(usize, LocalBoxFuture<'b, Result<T>>)>;
    let mut slots: Vec<Running<'a, T>> = (0..limit).map(|_| None).collect();
    let mut live = 0usize;
    poll_fn(|cx: &mut Context<'_>| {
        {
            let mut parent = lock(&ready.parent);
            if !parent.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *parent = Some(cx.waker().clone());
            }
        }
        loop {
            // Start queued futures in free slots; each is polled once to begin.
            for (slot, running) in slots.iter_mut().enumerate() {
                if running.is_none() {
                    match queue.next() {
                        Some(next) => {
                            *running = Some(next);
                            live += 1;
                            lock(&ready.slots).push(slot);
                        }
                        None => break,
                    }
                }
            }
            if live == 0 {
                return Poll::Ready(Ok(()));
            }
            let mut woken = std::mem::take(&mut *lock(&ready.slots));
            if woken.is_empty() {
                return Poll::Pending;
            }
            woken.sort_unstable();
            woken.dedup();
            for slot in woken {
                let Some((index, future)) = slots[slot].as_mut() else { continue };
                let mut slot_cx = Context::from_waker(&wakers[slot]);
                if let Poll::Ready(out) = future.as_mut().poll(&mut slot_cx) {
                    let index = *index;
                    slots[slot] = None;
                    live -= 1;
                    if let Err(e) = out.and_then(|v| done(index, v)) {
                        slots.iter_mut().for_each(|s| *s = None);
                        return Poll::Ready(Err(e));
                    }
                }
            }
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
