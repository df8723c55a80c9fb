//! The service's edges: a full queue refuses work and gives it back, closing answers every
//! waiting job and finishes the one in hand, dropping with work pending leaves no future
//! hanging, bad configurations do not start, and claims keep their order while the
//! validator's configuration changes under them.
//!
//! A worker is held at a known point by holding the history's write lock: it takes a job
//! and waits for the read lock, so the jobs behind it stay queued.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::common::{
    Gunner, World, assert_same_verdict, block_on, claim, rng, synchronous, text, timing,
};
use lagcomp::{Ray, RewindTarget, Vec3};
use lagcomp_service::{
    Line, Probe, QueryService, RewoundRequest, ServiceConfig, ServiceError, SharedHistory,
    StartError, SubmitError,
};
use rand::Rng;

/// Ticks recorded before the tests start.
const TICKS: u32 = 60;

fn start(workers: usize, queue_capacity: usize) -> (World, Arc<SharedHistory>, QueryService) {
    let world = World::new(8);
    let shared = Arc::new(SharedHistory::new(world.history_at(TICKS)));
    let service = QueryService::new(
        Arc::clone(&shared),
        world.validator(),
        ServiceConfig {
            workers,
            queue_capacity,
        },
    )
    .expect("the service starts");
    (world, shared, service)
}

/// A ray across the arena at the newest frame.
fn a_query(world: &World, i: u32) -> RewoundRequest {
    let ray = Ray::new(
        Vec3::new(-world.arena() / 2.0, 1.3, f32::from(i as u16 % 40) - 20.0),
        Vec3::X,
        200.0,
    )
    .expect("a valid ray");
    RewoundRequest::new(
        RewindTarget::Time(world.time_of(TICKS)),
        Probe::Ray(Line::from(ray)),
    )
}

/// Waits until the workers have taken every queued job.
fn until_taken(service: &QueryService) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while service.queued() > 0 {
        assert!(Instant::now() < deadline, "no worker took the jobs");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_full_queue_refuses_and_gives_the_request_back_until_there_is_room() {
    let (world, shared, service) = start(1, 4);
    assert_eq!((service.workers(), service.capacity()), (1, 4));
    let writer = shared.write();
    let in_hand = service.submit(a_query(&world, 0)).expect("room");
    until_taken(&service);

    let mut gunner = Gunner { entity: 1, seq: 0 };
    let mut rng = rng(7);
    let claims: Vec<_> = (0..2)
        .map(|_| claim(&mut rng, &world, &mut gunner, TICKS))
        .collect();
    let waiting = vec![
        service.submit(a_query(&world, 1)).expect("room"),
        service.submit(a_query(&world, 2)).expect("room"),
    ];
    let waiting_claims: Vec<_> = claims
        .iter()
        .map(|&(c, at)| service.submit_claim(c, at).expect("room"))
        .collect();
    assert_eq!(service.queued(), 4);

    let refused = a_query(&world, 3);
    match service.submit(refused.clone()) {
        Err(SubmitError::QueueFull { capacity, request }) => {
            assert_eq!(capacity, 4);
            assert_eq!(*request, refused);
        }
        other => panic!("expected a full queue, got {other:?}"),
    }
    let (c, at) = claim(&mut rng, &world, &mut gunner, TICKS);
    let error = service.submit_claim(c, at).expect_err("the queue is full");
    assert_eq!(error.to_string(), "the queue is full: 4 jobs are waiting");
    assert_eq!(text(&error.into_request()), text(&(c, at)));
    assert!(!in_hand.is_ready() && waiting.iter().all(|p| !p.is_ready()));

    // The worker goes on: everything queued is answered, as synchronously.
    drop(writer);
    let history = shared.read().clone();
    let answer = in_hand.wait().expect("answered");
    assert_eq!(answer.value, synchronous(&history, &a_query(&world, 0)));
    for (i, pending) in waiting.into_iter().enumerate() {
        let answer = pending.wait().expect("answered");
        assert_eq!(
            answer.value,
            synchronous(&history, &a_query(&world, i as u32 + 1))
        );
    }
    let mut reference = world.validator();
    for (pending, (c, at)) in waiting_claims.into_iter().zip(&claims) {
        let answer = pending.wait().expect("answered");
        assert_same_verdict(&answer.value, &reference.validate(&history, c, *at));
    }
    // Room again.
    let again = service.submit(refused).expect("room again");
    assert!(again.wait().is_ok());
}

#[test]
fn closing_answers_the_waiting_jobs_and_finishes_the_one_in_hand() {
    let (world, shared, service) = start(1, 100);
    let writer = shared.write();
    let in_hand = service.submit(a_query(&world, 0)).expect("room");
    until_taken(&service);
    let mut gunner = Gunner { entity: 3, seq: 0 };
    let mut rng = rng(11);
    let mut waiting = Vec::new();
    let mut waiting_claims = Vec::new();
    for i in 0..25 {
        waiting.push(service.submit(a_query(&world, i)).expect("room"));
        let (c, at) = claim(&mut rng, &world, &mut gunner, TICKS);
        waiting_claims.push(service.submit_claim(c, at).expect("room"));
    }

    assert_eq!(service.close(), 50, "every waiting job is refused");
    for pending in waiting {
        let answer = pending
            .wait_timeout(Duration::from_secs(5))
            .expect("answered at once");
        assert_eq!(answer, Err(ServiceError::ShutDown));
    }
    for pending in waiting_claims {
        // Awaited as a future this time.
        assert_eq!(block_on(pending), Err(ServiceError::ShutDown));
    }
    match service.submit(a_query(&world, 99)) {
        Err(SubmitError::ShutDown { request }) => assert_eq!(*request, a_query(&world, 99)),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let (c, at) = claim(&mut rng, &world, &mut gunner, TICKS);
    assert!(matches!(
        service.submit_claim(c, at),
        Err(SubmitError::ShutDown { .. })
    ));

    // The job in hand is finished once the worker can read.
    assert!(!in_hand.is_ready());
    drop(writer);
    let answer = in_hand.wait().expect("the job in hand is finished");
    assert_eq!(
        answer.value,
        synchronous(&shared.read(), &a_query(&world, 0))
    );
    assert_eq!(service.shutdown(), 0, "nothing left to refuse");
}

#[test]
fn jobs_a_worker_took_but_had_not_started_are_refused_at_close() {
    let (world, shared, service) = start(1, 100);
    // The worker takes the first query and waits for the history...
    let writer = shared.write();
    let first = service.submit(a_query(&world, 0)).expect("room");
    until_taken(&service);
    // ...while five claims of one shooter queue up behind it.
    let mut gunner = Gunner { entity: 2, seq: 0 };
    let mut rng = rng(19);
    let claims: Vec<_> = (0..5)
        .map(|_| {
            let (c, at) = claim(&mut rng, &world, &mut gunner, TICKS);
            ((c, at), service.submit_claim(c, at).expect("room"))
        })
        .collect();
    let refused = service.with_validator(|_| {
        // With the validator held, the worker finishes the query, takes all five
        // claims at once and waits for the validator to examine the first.
        drop(writer);
        until_taken(&service);
        service.close()
    });
    assert_eq!(refused, 0, "nothing was left in the queue");
    assert!(first.wait().is_ok());
    let mut answers = claims.into_iter().map(|((c, at), p)| ((c, at), p.wait()));
    // The claim it had started is judged as synchronously; the four it had not started
    // are refused, and nothing hangs.
    let ((c, at), answer) = answers.next().expect("five claims");
    let verdict = answer.expect("the started claim is judged").value;
    assert_same_verdict(
        &verdict,
        &world.validator().validate(&shared.read(), &c, at),
    );
    for (_, answer) in answers {
        assert_eq!(answer.map(|_| ()), Err(ServiceError::ShutDown));
    }
}

#[test]
fn dropping_the_service_with_work_pending_leaves_no_future_hanging() {
    let (world, shared, service) = start(2, 10_000);
    let writer = shared.write();
    let mut gunner = Gunner { entity: 5, seq: 0 };
    let mut rng = rng(13);
    let mut queries = Vec::new();
    let mut claims = Vec::new();
    for i in 0..1000 {
        queries.push(service.submit(a_query(&world, i)).expect("room"));
        let (c, at) = claim(&mut rng, &world, &mut gunner, TICKS);
        claims.push(service.submit_claim(c, at).expect("room"));
    }
    until_taken_at_most(&service, 2000 - 2);
    // Dropping closes the queue, then joins the workers, which are waiting for the
    // history: drop on another thread, and let the workers read once it has closed.
    let dropped = Arc::new(AtomicBool::new(false));
    let dropper = {
        let dropped = Arc::clone(&dropped);
        std::thread::spawn(move || {
            drop(service);
            dropped.store(true, Ordering::SeqCst);
        })
    };
    // Refused jobs are answered before the workers are joined.
    let first = queries.pop().expect("submitted");
    let answer = first
        .wait_timeout(Duration::from_secs(10))
        .expect("answered once the service closes");
    assert_eq!(answer.map(|_| ()), Err(ServiceError::ShutDown));
    assert!(
        !dropped.load(Ordering::SeqCst),
        "the drop waits for the jobs in hand"
    );
    drop(writer);
    dropper.join().expect("the drop finishes");

    let (mut answered, mut shut_down) = (0, 0);
    let results = queries
        .into_iter()
        .map(|p| outcome(p.wait_timeout(Duration::from_secs(5)).ok()))
        .chain(
            claims
                .into_iter()
                .map(|p| outcome(p.wait_timeout(Duration::from_secs(5)).ok())),
        );
    for result in results {
        match result.expect("no future hangs") {
            Ok(()) => answered += 1,
            Err(ServiceError::ShutDown) => shut_down += 1,
            Err(other) => panic!("unexpected {other}"),
        }
    }
    // Two workers had a job each in hand; the rest were refused.
    assert_eq!(answered + shut_down, 1999);
    assert!(
        answered <= 2 && shut_down >= 1997,
        "{answered} answered, {shut_down} refused"
    );
}

/// Whether a job was answered, dropping the answer.
fn outcome<T>(answer: Option<Result<T, ServiceError>>) -> Option<Result<(), ServiceError>> {
    answer.map(|r| r.map(|_| ()))
}

/// Waits until no more than `left` jobs are queued (the workers took the rest).
fn until_taken_at_most(service: &QueryService, left: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while service.queued() > left {
        assert!(Instant::now() < deadline, "no worker took the jobs");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_service_needs_workers_and_a_queue() {
    let world = World::new(2);
    let shared = Arc::new(SharedHistory::new(world.empty_history()));
    let config = |workers, queue_capacity| ServiceConfig {
        workers,
        queue_capacity,
    };
    assert!(matches!(
        QueryService::new(Arc::clone(&shared), world.validator(), config(0, 8)),
        Err(StartError::NoWorkers)
    ));
    assert!(matches!(
        QueryService::new(Arc::clone(&shared), world.validator(), config(1, 0)),
        Err(StartError::NoQueue)
    ));
    assert!(ServiceConfig::default().workers >= 1);
}

#[test]
fn claims_keep_their_order_while_the_configuration_changes() {
    // Each change gives the validator a new revision (with the same values), so claims
    // examined before it are settled by judging them again: the verdicts must not move.
    let (world, shared, service) = start(2, 10_000);
    let service = Arc::new(service);
    let stop = Arc::new(AtomicBool::new(false));
    let changes = Arc::new(AtomicU32::new(0));
    let churn = {
        let (service, stop, changes) = (
            Arc::clone(&service),
            Arc::clone(&stop),
            Arc::clone(&changes),
        );
        let ids = world.ids.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let n = changes.fetch_add(1, Ordering::Relaxed);
                let id = ids[n as usize % ids.len()];
                service.with_validator(|v| v.set_timing(id, timing()).expect("a valid timing"));
                std::thread::yield_now();
            }
        })
    };
    let mut rng = rng(17);
    let mut gunners: Vec<Gunner> = (0..3).map(|i| Gunner { entity: i, seq: 0 }).collect();
    let mut submitted = Vec::new();
    // Rounds go on until the configuration has changed often enough (however the
    // threads are scheduled), for at most half a minute.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut rounds = 0;
    while rounds < 30 || (changes.load(Ordering::Relaxed) < 300 && Instant::now() < deadline) {
        rounds += 1;
        let pending: Vec<_> = (0..40)
            .map(|_| {
                let g = rng.random_range(0..gunners.len());
                let (c, at) = claim(&mut rng, &world, &mut gunners[g], TICKS);
                ((c, at), service.submit_claim(c, at).expect("room"))
            })
            .collect();
        for ((c, at), p) in pending {
            submitted.push(((c, at), p.wait().expect("answered")));
        }
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().expect("the churn finishes");
    let changes = changes.load(Ordering::Relaxed);
    let history = shared.read().clone();
    let mut reference = world.validator();
    let mut confirmed = 0;
    for ((c, at), answer) in &submitted {
        let expected = reference.validate(&history, c, *at);
        assert_same_verdict(&answer.value, &expected);
        confirmed += usize::from(expected.outcome.label() == "confirmed");
    }
    eprintln!(
        "{} claims under {changes} configuration changes, {confirmed} confirmed",
        submitted.len()
    );
    assert!(
        changes > 100 && confirmed > 20,
        "{changes} changes, {confirmed} confirmed"
    );
}
