//! No torn reads: a thread records the world as fast as it can while two threads query
//! it through the service for ten seconds; every answer is checked against the
//! synchronous answer on a history rebuilt to the state the answer names.
//!
//! What is recorded at each tick is a pure function of the tick (see `common`), and every
//! write is one frame from tick 1, so an answer stamped with newest tick T must be the
//! answer of a history that recorded ticks 1..=T: rebuilt from nothing (the frames still
//! in the ring) or advanced frame by frame from an earlier rebuild. An answer computed on
//! a half-recorded frame, or stamped with the wrong state, differs from it.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{
    Gunner, World, assert_same_verdict, block_on, claim, query, rng, synchronous, text,
};
use lagcomp::History;
use lagcomp_service::{QueryService, ServiceConfig, SharedHistory};
use lagcomp_validate::ShotClaim;
use rand::Rng;

/// How long the two query threads query.
const DURATION: Duration = Duration::from_secs(10);
/// Entities in the world.
const ENTITIES: usize = 24;
/// Queries and claims a query thread submits before waiting for their answers.
const QUERIES_PER_ROUND: usize = 24;
const CLAIMS_PER_ROUND: usize = 8;
/// The least number of answers the two threads must have checked: an order of magnitude
/// below what a two-core machine managed (135,000 in ten seconds).
const MIN_CHECKED: usize = 10_000;

/// What a query thread saw.
#[derive(Debug, Default)]
struct Tally {
    checked: usize,
    claims: usize,
    /// Distinct newest ticks among the answers.
    states: BTreeSet<u32>,
    /// Rounds whose answers saw more than one state.
    rounds_across_frames: usize,
    rounds: usize,
}

/// Histories in the states `ticks` name (sorted), each built once: advanced frame by
/// frame from the previous one when that is shorter than a rebuild.
fn references(world: &World, ticks: &BTreeSet<u32>) -> HashMap<u32, History> {
    let mut out = HashMap::new();
    let mut bones = Vec::new();
    let mut current: Option<(u32, History)> = None;
    for &tick in ticks {
        let history = match current.take() {
            Some((at, mut history)) if tick - at <= 8 => {
                for t in at + 1..=tick {
                    world.record(&mut history, t, &mut bones);
                }
                history
            }
            _ => world.history_at(tick),
        };
        out.insert(tick, history.clone());
        current = Some((tick, history));
    }
    out
}

fn query_thread(
    k: u64,
    world: &World,
    service: &QueryService,
    deadline: Instant,
    futures: bool,
) -> Tally {
    let mut rng = rng(0x57_2e55 + k);
    let mut gunners: Vec<Gunner> = (0..4)
        .map(|i| Gunner {
            entity: 2 * (4 * k as usize + i) + 1,
            seq: 0,
        })
        .collect();
    let mut reference = world.validator();
    let mut tally = Tally::default();
    while Instant::now() < deadline {
        let newest = service.history().as_of().newest_tick().expect("recorded").0;
        let mut queries = Vec::with_capacity(QUERIES_PER_ROUND);
        for _ in 0..QUERIES_PER_ROUND {
            let q = query(&mut rng, world, newest);
            let pending = service.submit(q.clone()).expect("room in the queue");
            queries.push((q, pending));
        }
        let mut claims: Vec<((ShotClaim, f64), _)> = Vec::with_capacity(CLAIMS_PER_ROUND);
        for _ in 0..CLAIMS_PER_ROUND {
            let g = rng.random_range(0..gunners.len());
            let (c, at) = claim(&mut rng, world, &mut gunners[g], newest);
            let pending = service.submit_claim(c, at).expect("room in the queue");
            claims.push(((c, at), pending));
        }
        let (queries, claims) = if futures {
            block_on(async {
                let mut q = Vec::new();
                for (query, pending) in queries {
                    q.push((query, pending.await.expect("answered")));
                }
                let mut c = Vec::new();
                for (claim, pending) in claims {
                    c.push((claim, pending.await.expect("answered")));
                }
                (q, c)
            })
        } else {
            (
                queries
                    .into_iter()
                    .map(|(query, pending)| (query, pending.wait().expect("answered")))
                    .collect::<Vec<_>>(),
                claims
                    .into_iter()
                    .map(|(claim, pending)| (claim, pending.wait().expect("answered")))
                    .collect::<Vec<_>>(),
            )
        };

        let stamps = queries
            .iter()
            .map(|(_, a)| a.as_of)
            .chain(claims.iter().map(|(_, a)| a.as_of));
        let mut ticks = BTreeSet::new();
        for as_of in stamps {
            let tick = as_of.newest_tick().expect("recorded").0;
            // One write per frame from tick 1: the revision is the newest tick.
            assert_eq!(as_of.revision, u64::from(tick), "{as_of:?}");
            assert_eq!(as_of.newest.map(|(_, t)| t), Some(world.time_of(tick)));
            ticks.insert(tick);
        }
        let states = references(world, &ticks);
        for (q, answer) in &queries {
            let tick = answer.as_of.newest_tick().expect("recorded").0;
            let expected = synchronous(&states[&tick], q);
            assert_eq!(
                text(&answer.value),
                text(&expected),
                "query {q:?} at tick {tick}"
            );
        }
        // Each shooter's claims in submission order, each on the state it names.
        for ((c, at), answer) in &claims {
            let tick = answer.as_of.newest_tick().expect("recorded").0;
            let expected = reference.validate(&states[&tick], c, *at);
            assert_same_verdict(&answer.value, &expected);
        }
        tally.checked += queries.len() + claims.len();
        tally.claims += claims.len();
        tally.rounds += 1;
        tally.rounds_across_frames += usize::from(ticks.len() > 1);
        tally.states.extend(ticks);
    }
    tally
}

#[test]
fn recording_at_full_rate_while_two_threads_query_never_tears() {
    let world = Arc::new(World::new(ENTITIES));
    let shared = Arc::new(SharedHistory::new(world.empty_history()));
    let mut bones = Vec::new();
    // A full window before the first query.
    let first = shared.read().capacity() as u32 + 8;
    for tick in 1..=first {
        world.record_shared(&shared, tick, &mut bones);
    }
    let service = Arc::new(
        QueryService::new(
            Arc::clone(&shared),
            world.validator(),
            ServiceConfig {
                workers: 2,
                queue_capacity: 1024,
            },
        )
        .expect("the service starts"),
    );

    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let recorder = {
        let (world, shared, stop) = (Arc::clone(&world), Arc::clone(&shared), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut bones = Vec::new();
            let mut tick = first;
            while !stop.load(Ordering::Relaxed) {
                tick += 1;
                world.record_shared(&shared, tick, &mut bones);
            }
            tick
        })
    };
    let deadline = started + DURATION;
    let queriers: Vec<_> = (0..2_u64)
        .map(|k| {
            let (world, service) = (Arc::clone(&world), Arc::clone(&service));
            std::thread::spawn(move || query_thread(k, &world, &service, deadline, k == 1))
        })
        .collect();
    let tallies: Vec<Tally> = queriers
        .into_iter()
        .map(|q| q.join().expect("the query thread finishes"))
        .collect();
    stop.store(true, Ordering::Relaxed);
    let newest = recorder.join().expect("the recorder finishes");
    let elapsed = started.elapsed().as_secs_f64();

    let checked: usize = tallies.iter().map(|t| t.checked).sum();
    let claims: usize = tallies.iter().map(|t| t.claims).sum();
    let states: BTreeSet<u32> = tallies.iter().flat_map(|t| t.states.clone()).collect();
    let rounds: usize = tallies.iter().map(|t| t.rounds).sum();
    let across: usize = tallies.iter().map(|t| t.rounds_across_frames).sum();
    let frames = newest - first;
    eprintln!(
        "stress: {checked} answers checked ({claims} claims) in {rounds} rounds over {} \
         history states; {frames} frames recorded in {elapsed:.1} s ({:.0} frames/s); \
         {across} rounds saw the history change while their answers were computed",
        states.len(),
        f64::from(frames) / elapsed,
    );
    assert!(
        checked >= MIN_CHECKED,
        "only {checked} answers checked (at least {MIN_CHECKED} expected)"
    );
    // The recording really ran alongside: the answers saw many states, and within
    // rounds the history moved on between answers.
    assert!(states.len() > 100, "{} states", states.len());
    assert!(across > 10, "{across} rounds across frames");
}
