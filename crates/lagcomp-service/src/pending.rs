//! The answer to one submitted job, as a future or a blocking wait.
//!
//! What lives here: [`Pending`] (the caller's end: a [`Future`] that works on any executor,
//! or [`Pending::wait`] without one), the worker's end (`Promise`), and [`ServiceError`].
//! A promise dropped unanswered resolves its [`Pending`] with an error, so a waiting caller
//! never hangs, whatever happens to the job.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Why a submitted job has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// The service was closed or dropped before the job ran.
    #[error("the service shut down before the job ran")]
    ShutDown,
    /// The job was dropped unanswered: its worker panicked (a bug in a query or in the
    /// validator).
    #[error("the job was dropped unanswered: its worker panicked")]
    Abandoned,
}

/// What the caller and the worker share.
struct Slot<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

struct State<T> {
    answer: Option<Result<T, ServiceError>>,
    /// The task to wake when the answer comes, if it was polled first.
    waker: Option<Waker>,
    /// Whether a thread is blocked in `wait`: only then is the condition variable
    /// signalled (a system call, paid by every answer otherwise).
    waiting: bool,
}

impl<T> Slot<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing panics while holding this lock but a waker's clone, after which the
        // state is still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A new job's two ends.
pub(crate) fn promise<T>() -> (Promise<T>, Pending<T>) {
    let slot = Arc::new(Slot {
        state: Mutex::new(State {
            answer: None,
            waker: None,
            waiting: false,
        }),
        ready: Condvar::new(),
    });
    (
        Promise {
            slot: Some(Arc::clone(&slot)),
        },
        Pending { slot: Some(slot) },
    )
}

/// The worker's end: answers once. Dropped unanswered, it answers
/// [`ServiceError::Abandoned`].
pub(crate) struct Promise<T> {
    slot: Option<Arc<Slot<T>>>,
}

impl<T> Promise<T> {
    /// Delivers the answer and wakes the waiting caller, if any.
    pub(crate) fn answer(mut self, answer: Result<T, ServiceError>) {
        if let Some(slot) = self.slot.take() {
            deliver(&slot, answer);
        }
    }
}

fn deliver<T>(slot: &Slot<T>, answer: Result<T, ServiceError>) {
    let (waker, waiting) = {
        let mut state = slot.lock();
        state.answer = Some(answer);
        (state.waker.take(), state.waiting)
    };
    if waiting {
        slot.ready.notify_all();
    }
    // Woken outside the lock: the executor may poll right away, on this thread.
    if let Some(waker) = waker {
        waker.wake();
    }
}

impl<T> Drop for Promise<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            deliver(&slot, Err(ServiceError::Abandoned));
        }
    }
}

impl<T> fmt::Debug for Promise<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Promise")
            .field("answered", &self.slot.is_none())
            .finish()
    }
}

/// The answer to a submitted job, once a worker has computed it.
///
/// Await it on any executor (it needs no runtime: the worker wakes the task), or block on
/// [`Pending::wait`]. It always resolves: with the answer, or with a [`ServiceError`] if
/// the service shut down first.
#[must_use = "the answer is lost unless it is awaited or waited for"]
pub struct Pending<T> {
    /// `None` once the answer was taken by `poll`.
    slot: Option<Arc<Slot<T>>>,
}

impl<T> Pending<T> {
    /// Blocks the calling thread until the answer comes.
    ///
    /// # Errors
    /// [`ServiceError`] when the job will never be answered.
    ///
    /// # Panics
    /// If the answer was already taken by polling this as a future to completion.
    pub fn wait(mut self) -> Result<T, ServiceError> {
        let slot = self.slot.take().expect("the answer was already taken");
        let mut state = slot.lock();
        loop {
            if let Some(answer) = state.answer.take() {
                return answer;
            }
            state.waiting = true;
            state = slot
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Blocks the calling thread until the answer comes or `timeout` passes; on timeout
    /// gives itself back to wait again.
    ///
    /// # Errors
    /// `Err(self)` on timeout.
    ///
    /// # Panics
    /// As [`Pending::wait`].
    pub fn wait_timeout(mut self, timeout: Duration) -> Result<Result<T, ServiceError>, Self> {
        let deadline = Instant::now() + timeout;
        let slot = self.slot.take().expect("the answer was already taken");
        let mut state = slot.lock();
        loop {
            if let Some(answer) = state.answer.take() {
                return Ok(answer);
            }
            let now = Instant::now();
            if now >= deadline {
                drop(state);
                return Err(Self { slot: Some(slot) });
            }
            state.waiting = true;
            state = slot
                .ready
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Whether the answer has come (waiting for it would not block).
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.slot
            .as_ref()
            .is_some_and(|slot| slot.lock().answer.is_some())
    }
}

impl<T> Future for Pending<T> {
    type Output = Result<T, ServiceError>;

    /// # Panics
    /// If polled again after it returned `Ready`.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let slot = self
            .slot
            .as_ref()
            .expect("a Pending polled after it returned Ready");
        let mut state = slot.lock();
        if let Some(answer) = state.answer.take() {
            drop(state);
            self.slot = None;
            return Poll::Ready(answer);
        }
        // Keep the newest task's waker: the future may have moved between tasks.
        match &mut state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            waker => *waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<T> fmt::Debug for Pending<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending")
            .field("ready", &self.is_ready())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_sent_before_the_wait_is_there() {
        let (promise, pending) = promise::<u32>();
        assert!(!pending.is_ready());
        promise.answer(Ok(7));
        assert!(pending.is_ready());
        assert_eq!(pending.wait(), Ok(7));
    }

    #[test]
    fn a_waiting_thread_is_woken_by_the_answer() {
        let (promise, pending) = promise::<u32>();
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            promise.answer(Ok(9));
        });
        assert_eq!(pending.wait(), Ok(9));
        worker.join().expect("the worker finishes");
    }

    #[test]
    fn a_dropped_promise_answers_abandoned() {
        let (promise, pending) = promise::<u32>();
        drop(promise);
        assert_eq!(pending.wait(), Err(ServiceError::Abandoned));
    }

    #[test]
    fn wait_timeout_gives_the_pending_back_and_waits_again() {
        let (promise, pending) = promise::<u32>();
        let pending = pending
            .wait_timeout(Duration::from_millis(10))
            .expect_err("nothing answered yet");
        promise.answer(Err(ServiceError::ShutDown));
        let answer = pending
            .wait_timeout(Duration::from_secs(5))
            .expect("answered by now");
        assert_eq!(answer, Err(ServiceError::ShutDown));
    }
}
