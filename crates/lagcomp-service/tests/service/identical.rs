//! The service's and the batch API's answers are the synchronous API's: thousands of
//! seeded queries and claims, good and bad, submitted from two threads while the history
//! keeps recording, each answer compared with the synchronous one on a copy of the
//! history taken in the state the answer names; the batch functions against the same
//! calls one by one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{
    Gunner, World, assert_same_verdict, block_on, claim, query, rng, synchronous, text,
};
use lagcomp::{History, Ray, RewindTarget, Tick};
use lagcomp_service::{
    QueryAnswer, QueryService, RewoundRequest, ServiceConfig, SharedHistory, VerdictAnswer, batch,
};
use lagcomp_validate::{ShotClaim, Verdict};
use rand::Rng;

/// Ticks recorded before anything is asked.
const WARM_UP: u32 = 40;
/// Ticks recorded while the submitters work.
const LIVE: u32 = 120;
/// Rounds each submitter runs at least (it goes on while the recorder records).
const ROUNDS: usize = 30;

/// What one submitting thread asked, in order, with the answers.
struct Transcript {
    queries: Vec<(RewoundRequest, QueryAnswer)>,
    claims: Vec<((ShotClaim, f64), VerdictAnswer)>,
}

#[test]
fn service_answers_are_the_synchronous_answers_on_the_state_they_name() {
    let world = Arc::new(World::new(24));
    let shared = Arc::new(SharedHistory::new(world.empty_history()));
    // Every state the history passes through, by revision, copied under the write lock.
    let states: Arc<Mutex<HashMap<u64, History>>> = Arc::default();
    let mut bones = Vec::new();
    for tick in 1..=WARM_UP {
        world.record_shared(&shared, tick, &mut bones);
    }
    states
        .lock()
        .unwrap()
        .insert(shared.as_of().revision, shared.read().clone());
    let service = Arc::new(
        QueryService::new(
            Arc::clone(&shared),
            world.validator(),
            ServiceConfig {
                workers: 2,
                queue_capacity: 100_000,
            },
        )
        .expect("the service starts"),
    );

    let recorded = Arc::new(AtomicBool::new(false));
    let recorder = {
        let (world, shared, states) =
            (Arc::clone(&world), Arc::clone(&shared), Arc::clone(&states));
        let done = Arc::clone(&recorded);
        std::thread::spawn(move || {
            let mut bones = Vec::new();
            for tick in WARM_UP + 1..=WARM_UP + LIVE {
                world.frame_bones(tick, &mut bones);
                let mut writer = shared.write();
                {
                    let mut frame = writer
                        .begin_frame(Tick(tick), world.time_of(tick))
                        .expect("ticks increase");
                    world.fill(&mut frame, tick, &bones);
                }
                let copy = (*writer).clone();
                states.lock().unwrap().insert(writer.as_of().revision, copy);
                drop(writer);
                std::thread::sleep(Duration::from_millis(1));
            }
            done.store(true, Ordering::Relaxed);
        })
    };

    // Two submitters, each with its own shooters (a shooter's claims come from one
    // thread, in order); one waits on each answer, the other awaits them as futures.
    let submitters: Vec<_> = (0..2_u64)
        .map(|k| {
            let (world, service, recorded) = (
                Arc::clone(&world),
                Arc::clone(&service),
                Arc::clone(&recorded),
            );
            std::thread::spawn(move || {
                let mut rng = rng(0xa5_0000 + k);
                let mut gunners: Vec<Gunner> = (0..4)
                    .map(|i| Gunner {
                        entity: (4 * k as usize + i) * 2,
                        seq: 0,
                    })
                    .collect();
                let mut transcript = Transcript {
                    queries: Vec::new(),
                    claims: Vec::new(),
                };
                let mut round = 0;
                while round < ROUNDS || !recorded.load(Ordering::Relaxed) {
                    round += 1;
                    let newest = service.history().as_of().newest_tick().expect("recorded").0;
                    let mut queries = Vec::new();
                    let mut claims = Vec::new();
                    for _ in 0..40 {
                        let q = query(&mut rng, &world, newest);
                        queries.push((q.clone(), service.submit(q).expect("room")));
                    }
                    for _ in 0..16 {
                        let g = rng.random_range(0..gunners.len());
                        let (c, at) = claim(&mut rng, &world, &mut gunners[g], newest);
                        claims.push(((c, at), service.submit_claim(c, at).expect("room")));
                    }
                    if k == 0 {
                        for (q, pending) in queries {
                            transcript
                                .queries
                                .push((q, pending.wait().expect("answered")));
                        }
                        for (c, pending) in claims {
                            transcript
                                .claims
                                .push((c, pending.wait().expect("answered")));
                        }
                    } else {
                        block_on(async {
                            for (q, pending) in queries {
                                transcript
                                    .queries
                                    .push((q, pending.await.expect("answered")));
                            }
                            for (c, pending) in claims {
                                transcript
                                    .claims
                                    .push((c, pending.await.expect("answered")));
                            }
                        });
                    }
                }
                transcript
            })
        })
        .collect();
    let transcripts: Vec<Transcript> = submitters
        .into_iter()
        .map(|h| h.join().expect("the submitter finishes"))
        .collect();
    recorder.join().expect("the recorder finishes");
    drop(service);

    let states = states.lock().unwrap();
    let (mut checked, mut errors, mut hits) = (0, 0, 0);
    let mut seen_states = std::collections::BTreeSet::new();
    for transcript in &transcripts {
        for (q, answer) in &transcript.queries {
            let history = &states[&answer.as_of.revision];
            assert_eq!(
                answer.as_of.newest_tick(),
                history.newest_tick(),
                "the stamp names the state"
            );
            let expected = synchronous(history, q);
            assert_eq!(text(&answer.value), text(&expected), "query {q:?}");
            errors += usize::from(expected.is_err());
            hits += usize::from(expected.is_ok_and(|f| f.hit().is_some()));
            seen_states.insert(answer.as_of.revision);
            checked += 1;
        }
        // Claims: a fresh validator, each shooter's claims in submission order, each on
        // the state its answer names.
        let mut reference = World::new(24).validator();
        let mut labels = HashMap::new();
        for ((c, at), answer) in &transcript.claims {
            let history = &states[&answer.as_of.revision];
            let expected: Verdict = reference.validate(history, c, *at);
            assert_same_verdict(&answer.value, &expected);
            *labels.entry(expected.outcome.label()).or_insert(0) += 1;
            checked += 1;
        }
        // The claims reached the trace and every kind of early rejection.
        for label in [
            "confirmed",
            "miss",
            "replayed",
            "non_finite",
            "unknown_shooter",
        ] {
            assert!(labels.contains_key(label), "no {label} in {labels:?}");
        }
        eprintln!("verdicts: {labels:?}");
    }
    eprintln!(
        "{checked} answers checked; {errors} query errors, {hits} hits, {} history states",
        seen_states.len()
    );
    assert!(checked >= 2 * ROUNDS * (40 + 16));
    assert!(errors > 200 && hits > 200, "{errors} errors, {hits} hits");
    assert!(
        seen_states.len() > 20,
        "the answers saw {} states of the history",
        seen_states.len()
    );
}

#[test]
fn batch_answers_are_the_one_by_one_answers() {
    let world = World::new(24);
    let history = world.history_at(200);
    let mut rng = rng(0xba7c4);

    let queries: Vec<RewoundRequest> = (0..3000).map(|_| query(&mut rng, &world, 200)).collect();
    let answers = batch::queries(&history, &queries);
    assert_eq!(answers.len(), queries.len());
    for (q, answer) in queries.iter().zip(&answers) {
        assert_eq!(text(answer), text(&synchronous(&history, q)));
    }

    let shots: Vec<(RewindTarget, Ray)> = queries
        .iter()
        .filter_map(|q| match q.probe {
            lagcomp_service::Probe::Ray(line) => line.ray().ok().map(|ray| (q.target, ray)),
            _ => None,
        })
        .collect();
    assert!(shots.len() > 500);
    let traces = batch::rays(&history, &shots);
    for ((target, ray), trace) in shots.iter().zip(&traces) {
        assert_eq!(text(trace), text(&history.query(*target).ray(ray)));
    }

    // Claims of eight shooters, interleaved, several per shooter per batch, across
    // batches: the validator's state carries over exactly as one by one.
    let mut one_by_one = world.validator();
    let mut batched = world.validator();
    let mut gunners: Vec<Gunner> = (0..8)
        .map(|i| Gunner {
            entity: i * 3,
            seq: 0,
        })
        .collect();
    let mut labels = HashMap::new();
    for round in 0..40 {
        let tick = 120 + round;
        let history = world.history_at(tick);
        let claims: Vec<(ShotClaim, f64)> = (0..60)
            .map(|_| {
                let g = rng.random_range(0..gunners.len());
                claim(&mut rng, &world, &mut gunners[g], tick)
            })
            .collect();
        let verdicts = batch::validate_batch(&history, &mut batched, &claims);
        assert_eq!(verdicts.len(), claims.len());
        for ((c, at), verdict) in claims.iter().zip(&verdicts) {
            let expected = one_by_one.validate(&history, c, *at);
            assert_same_verdict(verdict, &expected);
            *labels.entry(expected.outcome.label()).or_insert(0) += 1;
        }
    }
    eprintln!("batch verdicts: {labels:?}");
    for label in ["confirmed", "fire_rate", "replayed", "time_too_old"] {
        assert!(labels.contains_key(label), "no {label} in {labels:?}");
    }
}
