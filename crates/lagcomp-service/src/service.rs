//! The query service: worker threads that answer rewound queries and judge shot claims
//! against a [`SharedHistory`] while the game thread keeps recording.
//!
//! What lives here: [`QueryService`] (submit from any thread, get a [`Pending`] back), its
//! [`ServiceConfig`], the [`Answer`] every job resolves to, and the errors of starting and
//! submitting. The one-shot future is in [`crate::pending`]; the queries themselves in
//! [`crate::request`].
//!
//! How claims keep their order. A shooter's verdicts depend on its earlier claims
//! (sequence numbers, fire rate), so a claim must be judged after every claim of the same
//! shooter submitted before it, even when another worker picked that one up. Each claim
//! is therefore judged in the validator's two halves: any worker examines it against the
//! history at once, in parallel with everything else ([`Validator::examine`], the costly
//! part: the trace), and it is settled ([`Validator::settle`], a few comparisons) in its
//! shooter's submission order. Each shooter has a lane of tickets handed out at
//! submission; a claim examined before its turn is parked in the lane, and whoever settles
//! the claim before it settles it next. No worker ever waits for another.
//!
//! Locks, always taken in this order and never the other way round: the queue, then the
//! lanes; the history, then the validator; the lanes are never held while waiting for
//! either of the others.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::num::NonZero;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{
    Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use std::thread::JoinHandle;

use lagcomp::{EntityId, QueryError};
use lagcomp_validate::validator::ExaminedShot;
use lagcomp_validate::{ShotClaim, Validator, Verdict};

use crate::pending::{Pending, Promise, ServiceError, promise};
use crate::request::{Found, RewoundRequest};
use crate::shared::{AsOf, SharedHistory};

/// How many workers and how much queue a [`QueryService`] has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceConfig {
    /// Worker threads (at least one).
    pub workers: usize,
    /// Jobs that may wait for a worker; submitting more is refused with
    /// [`SubmitError::QueueFull`] (at least one).
    pub queue_capacity: usize,
}

impl Default for ServiceConfig {
    /// One worker per core, and room for 4096 waiting jobs (a 64-player server firing
    /// 10 shots a second each queues 640 a second).
    fn default() -> Self {
        Self {
            workers: std::thread::available_parallelism().map_or(1, NonZero::get),
            queue_capacity: 4096,
        }
    }
}

/// Why a service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// [`ServiceConfig::workers`] was zero.
    #[error("a query service needs at least one worker")]
    NoWorkers,
    /// [`ServiceConfig::queue_capacity`] was zero.
    #[error("a query service needs room for at least one waiting job")]
    NoQueue,
    /// The operating system refused a worker thread.
    #[error("could not start a worker thread: {0}")]
    Spawn(#[from] std::io::Error),
}

/// Why a job was refused at submission. Gives the request back (boxed: refusals are rare,
/// and a claim would make every submission's `Result` 150 bytes).
#[derive(Debug, thiserror::Error)]
pub enum SubmitError<T> {
    /// [`ServiceConfig::queue_capacity`] jobs are already waiting for a worker.
    #[error("the queue is full: {capacity} jobs are waiting")]
    QueueFull {
        /// The queue's capacity.
        capacity: usize,
        /// The refused request.
        request: Box<T>,
    },
    /// The service was closed.
    #[error("the service is shut down")]
    ShutDown {
        /// The refused request.
        request: Box<T>,
    },
}

impl<T> SubmitError<T> {
    /// The refused request.
    #[must_use]
    pub fn into_request(self) -> T {
        match self {
            Self::QueueFull { request, .. } | Self::ShutDown { request } => *request,
        }
    }
}

/// A job's answer, and the state of the history it was computed on.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer<T> {
    /// The history's state when the answer was computed: the same query or claim run
    /// synchronously on a history in this state gives the same answer.
    pub as_of: AsOf,
    /// The answer.
    pub value: T,
}

/// What a submitted query resolves to: the query's own result, errors included.
pub type QueryAnswer = Answer<Result<Found, QueryError>>;

/// What a submitted claim resolves to.
pub type VerdictAnswer = Answer<Verdict>;

/// A claim submitted with when it arrived.
pub type ClaimRequest = (ShotClaim, f64);

/// Worker threads answering rewound queries and judging shot claims against a
/// [`SharedHistory`], each answer stamped with the history state it saw ([`AsOf`]).
///
/// Submit from any thread (`&self`); each submission returns a [`Pending`], a future that
/// needs no particular runtime, or a blocking [`Pending::wait`]. Answers are exactly those
/// of the synchronous API on the history as it was ([`RewoundRequest::run`],
/// [`Validator::validate`] with each shooter's claims in submission order).
///
/// Dropping the service (or [`QueryService::shutdown`]) stops taking jobs, answers every
/// job not started with [`ServiceError::ShutDown`], lets the workers finish the jobs they
/// started and joins them.
#[derive(Debug)]
pub struct QueryService {
    inner: Arc<Inner>,
    workers: Vec<JoinHandle<()>>,
}

impl QueryService {
    /// Starts `config.workers` threads answering against `history`, judging claims with
    /// `validator` (the service owns it; configure it with
    /// [`QueryService::with_validator`]).
    ///
    /// # Errors
    /// [`StartError`] for zero workers or queue capacity, or when a thread cannot start.
    pub fn new(
        history: Arc<SharedHistory>,
        validator: Validator,
        config: ServiceConfig,
    ) -> Result<Self, StartError> {
        if config.workers == 0 {
            return Err(StartError::NoWorkers);
        }
        if config.queue_capacity == 0 {
            return Err(StartError::NoQueue);
        }
        let inner = Arc::new(Inner {
            history,
            validator: RwLock::new(validator),
            queue: Mutex::new(Queue {
                jobs: VecDeque::with_capacity(config.queue_capacity),
                open: true,
                idle: 0,
            }),
            work: Condvar::new(),
            lanes: Mutex::new(HashMap::new()),
            capacity: config.queue_capacity,
            workers: config.workers,
            closed: AtomicBool::new(false),
        });
        let mut service = Self {
            inner,
            workers: Vec::with_capacity(config.workers),
        };
        for i in 0..config.workers {
            let inner = Arc::clone(&service.inner);
            let worker = std::thread::Builder::new()
                .name(format!("lagcomp-service-{i}"))
                .spawn(move || inner.work())?;
            // On an early return the workers started so far are joined by `Drop`.
            service.workers.push(worker);
        }
        Ok(service)
    }

    /// Queues a rewound query.
    ///
    /// # Errors
    /// [`SubmitError`] (with the query) when the queue is full or the service closed.
    pub fn submit(
        &self,
        query: RewoundRequest,
    ) -> Result<Pending<QueryAnswer>, SubmitError<RewoundRequest>> {
        let mut queue = self.inner.lock_queue();
        if let Err(refusal) = self.inner.room(&queue) {
            return Err(refusal.with(query));
        }
        let (promise, pending) = promise();
        queue.jobs.push_back(Job::Query { query, promise });
        self.inner.wake_one(queue);
        Ok(pending)
    }

    /// Queues a shot claim that arrived at server time `received_at`. It is judged after
    /// every claim of the same shooter submitted before it.
    ///
    /// # Errors
    /// [`SubmitError`] (with the claim) when the queue is full or the service closed.
    pub fn submit_claim(
        &self,
        claim: ShotClaim,
        received_at: f64,
    ) -> Result<Pending<VerdictAnswer>, SubmitError<ClaimRequest>> {
        let mut queue = self.inner.lock_queue();
        if let Err(refusal) = self.inner.room(&queue) {
            return Err(refusal.with((claim, received_at)));
        }
        // Tickets are handed out under the queue's lock, so a shooter's tickets follow the
        // queue's order: a claim is always taken by a worker after the ones before it.
        let ticket = {
            let mut lanes = self.inner.lock_lanes();
            let lane = lanes.entry(claim.shooter).or_default();
            lane.issued += 1;
            lane.issued - 1
        };
        let (promise, pending) = promise();
        queue.jobs.push_back(Job::Claim(Claim {
            claim,
            received_at,
            ticket,
            promise,
        }));
        self.inner.wake_one(queue);
        Ok(pending)
    }

    /// The shared history the service reads.
    #[must_use]
    pub fn history(&self) -> &Arc<SharedHistory> {
        &self.inner.history
    }

    /// Runs `f` on the service's validator, between claims: register and forget players,
    /// set their timing, change the rules. Claims examined before a change and settled
    /// after it are judged again under the new configuration.
    ///
    /// `f` must not lock the service's history (it would deadlock against the workers,
    /// which lock the history first).
    pub fn with_validator<R>(&self, f: impl FnOnce(&mut Validator) -> R) -> R {
        f(&mut write(&self.inner.validator))
    }

    /// Jobs waiting for a worker.
    #[must_use]
    pub fn queued(&self) -> usize {
        self.inner.lock_queue().jobs.len()
    }

    /// How many jobs may wait for a worker.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// Worker threads.
    #[must_use]
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Stops taking jobs: later submissions are refused with [`SubmitError::ShutDown`]
    /// and every job still queued is answered [`ServiceError::ShutDown`] now. A job a
    /// worker has started is finished; the few it had taken with it but not started are
    /// answered `ShutDown` as it reaches them. The workers stop then; dropping the service
    /// joins them. Returns how many queued jobs were refused here.
    pub fn close(&self) -> usize {
        let refused: Vec<Job> = {
            let mut queue = self.inner.lock_queue();
            queue.open = false;
            self.inner.closed.store(true, Ordering::Release);
            queue.jobs.drain(..).collect()
        };
        self.inner.work.notify_all();
        let n = refused.len();
        for job in refused {
            job.refuse();
        }
        n
    }

    /// [`QueryService::close`], then waits for the workers to finish the jobs in hand.
    /// Returns how many waiting jobs were refused.
    pub fn shutdown(self) -> usize {
        self.close()
        // `Drop` joins the workers.
    }
}

impl Drop for QueryService {
    fn drop(&mut self) {
        self.close();
        for worker in self.workers.drain(..) {
            // Jobs run under `catch_unwind`; a worker that still panicked has nothing
            // left to answer (its promises answered `Abandoned` as they dropped).
            let _ = worker.join();
        }
    }
}

/// What the service and its workers share.
#[derive(Debug)]
struct Inner {
    history: Arc<SharedHistory>,
    validator: RwLock<Validator>,
    queue: Mutex<Queue>,
    /// Signalled when a job is queued or the queue closes.
    work: Condvar,
    lanes: Mutex<HashMap<EntityId, Lane>>,
    capacity: usize,
    workers: usize,
    /// Set by `close`: jobs a worker has taken but not started are refused.
    closed: AtomicBool,
}

/// The most jobs a worker takes from the queue at once.
const MAX_TAKE: usize = 16;

#[derive(Debug)]
struct Queue {
    jobs: VecDeque<Job>,
    open: bool,
    /// Workers blocked waiting for a job: a submission signals only when there is one
    /// (signalling is a system call, paid by every job otherwise).
    idle: usize,
}

#[derive(Debug)]
enum Job {
    Query {
        query: RewoundRequest,
        promise: Promise<QueryAnswer>,
    },
    Claim(Claim),
}

impl Job {
    fn refuse(self) {
        match self {
            Self::Query { promise, .. } => promise.answer(Err(ServiceError::ShutDown)),
            Self::Claim(claim) => claim.promise.answer(Err(ServiceError::ShutDown)),
        }
    }
}

#[derive(Debug)]
struct Claim {
    claim: ShotClaim,
    received_at: f64,
    /// Its place among its shooter's claims.
    ticket: u64,
    promise: Promise<VerdictAnswer>,
}

/// A claim examined and waiting for its turn to be settled.
#[derive(Debug)]
struct Examined {
    shot: ExaminedShot,
    as_of: AsOf,
    promise: Promise<VerdictAnswer>,
}

/// One shooter's claims in flight.
#[derive(Debug, Default)]
struct Lane {
    /// Tickets handed out.
    issued: u64,
    /// The ticket whose turn it is to be settled.
    next: u64,
    /// Claims examined before their turn, by ticket; `None` for one whose examination
    /// panicked (its turn is skipped).
    parked: BTreeMap<u64, Option<Examined>>,
}

/// Why there is no room for a job.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    Full(usize),
    Closed,
}

impl Refusal {
    fn with<T>(self, request: T) -> SubmitError<T> {
        match self {
            Self::Full(capacity) => SubmitError::QueueFull {
                capacity,
                request: Box::new(request),
            },
            Self::Closed => SubmitError::ShutDown {
                request: Box::new(request),
            },
        }
    }
}

// Locks are recovered from poisoning: jobs run under `catch_unwind`, and what the locks
// guard is whole between the calls made under them (the validator's state may miss the
// one claim whose settling panicked, which is answered `Abandoned`).
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    fn lock_queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_lanes(&self) -> MutexGuard<'_, HashMap<EntityId, Lane>> {
        self.lanes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Signals a worker about the job just queued, if one is waiting; the others take it
    /// when they finish theirs.
    fn wake_one(&self, queue: MutexGuard<'_, Queue>) {
        let idle = queue.idle > 0;
        drop(queue);
        if idle {
            self.work.notify_one();
        }
    }

    fn room(&self, queue: &Queue) -> Result<(), Refusal> {
        if !queue.open {
            Err(Refusal::Closed)
        } else if queue.jobs.len() >= self.capacity {
            Err(Refusal::Full(self.capacity))
        } else {
            Ok(())
        }
    }

    /// A worker's life: take jobs until the queue closes. Jobs are taken a few at a time
    /// (a share of the queue, at most [`MAX_TAKE`]), so that a worker and a thread
    /// submitting a burst meet on the queue's lock once per few jobs rather than per job.
    fn work(&self) {
        let mut hand = VecDeque::with_capacity(MAX_TAKE);
        while self.take_jobs(&mut hand) {
            while let Some(job) = hand.pop_front() {
                if self.closed.load(Ordering::Acquire) {
                    // Taken but not started: refused like the jobs still queued.
                    self.refuse_in_hand(job);
                    continue;
                }
                match job {
                    Job::Query { query, promise } => {
                        // A panicking query drops its promise: the caller gets `Abandoned`.
                        let _ = catch_unwind(AssertUnwindSafe(|| {
                            let answer = self.run_query(&query);
                            promise.answer(Ok(answer));
                        }));
                    }
                    Job::Claim(claim) => self.run_claim(claim),
                }
            }
        }
    }

    /// Moves this worker's share of the queued jobs into `hand`, waiting for one if
    /// there is none; `false` once the queue is closed and empty.
    fn take_jobs(&self, hand: &mut VecDeque<Job>) -> bool {
        let mut queue = self.lock_queue();
        loop {
            if !queue.jobs.is_empty() {
                let share = queue.jobs.len().div_ceil(self.workers).min(MAX_TAKE);
                hand.extend(queue.jobs.drain(..share));
                return true;
            }
            if !queue.open {
                return false;
            }
            queue.idle += 1;
            queue = self
                .work
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
            queue.idle -= 1;
        }
    }

    /// Answers a job taken but not started when the service closed: shut down. A claim's
    /// turn is passed on, so that later claims of its shooter parked by other workers are
    /// still settled.
    fn refuse_in_hand(&self, job: Job) {
        match job {
            Job::Claim(Claim {
                claim,
                ticket,
                promise,
                ..
            }) => {
                promise.answer(Err(ServiceError::ShutDown));
                self.settle_in_turn(claim.shooter, ticket, None);
            }
            query => query.refuse(),
        }
    }

    fn run_query(&self, query: &RewoundRequest) -> QueryAnswer {
        let history = self.history.read();
        Answer {
            as_of: history.as_of(),
            value: query.run(&history),
        }
    }

    fn run_claim(&self, job: Claim) {
        let Claim {
            claim,
            received_at,
            ticket,
            promise,
        } = job;
        let examined = catch_unwind(AssertUnwindSafe(|| {
            let history = self.history.read();
            let shot = read(&self.validator).examine(&history, &claim, received_at);
            (shot, history.as_of())
        }));
        let entry = match examined {
            Ok((shot, as_of)) => Some(Examined {
                shot,
                as_of,
                promise,
            }),
            // The promise drops here: the caller gets `Abandoned`.
            Err(_) => None,
        };
        self.settle_in_turn(claim.shooter, ticket, entry);
    }

    /// Settles `entry` if it is its shooter's turn, then every parked claim whose turn
    /// follows; otherwise parks it for whoever settles the claim before it.
    fn settle_in_turn(&self, shooter: EntityId, ticket: u64, entry: Option<Examined>) {
        {
            let mut lanes = self.lock_lanes();
            let Some(lane) = lanes.get_mut(&shooter) else {
                return;
            };
            if lane.next != ticket {
                lane.parked.insert(ticket, entry);
                return;
            }
        }
        // Only the holder of the turn advances the lane, so the lanes need not be held
        // while settling: a claim arriving meanwhile sees it is not its turn and parks.
        let mut entry = entry;
        loop {
            if let Some(examined) = entry {
                self.settle(examined);
            }
            let mut lanes = self.lock_lanes();
            let Some(lane) = lanes.get_mut(&shooter) else {
                return;
            };
            lane.next += 1;
            let next = lane.next;
            match lane.parked.remove(&next) {
                Some(parked) => entry = parked,
                None => {
                    if lane.next == lane.issued {
                        // Idle: forget the lane (a shooter's next claim starts a new one).
                        lanes.remove(&shooter);
                    }
                    return;
                }
            }
        }
    }

    fn settle(&self, examined: Examined) {
        let Examined {
            shot,
            as_of,
            promise,
        } = examined;
        let answer = catch_unwind(AssertUnwindSafe(|| {
            let settled = write(&self.validator).settle(shot);
            match settled {
                Ok(verdict) => Answer {
                    as_of,
                    value: verdict,
                },
                Err(stale) => {
                    // The validator's configuration changed since the claim was examined:
                    // judge it whole, the history locked first as everywhere.
                    let history = self.history.read();
                    let verdict =
                        write(&self.validator).validate(&history, &stale.claim, stale.received_at);
                    Answer {
                        as_of: history.as_of(),
                        value: verdict,
                    }
                }
            }
        }));
        // On a panic the promise drops unanswered: the caller gets `Abandoned`.
        if let Ok(answer) = answer {
            promise.answer(Ok(answer));
        }
    }
}
