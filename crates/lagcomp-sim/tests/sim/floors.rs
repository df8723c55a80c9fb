//! The floors the simulator must show (issue: "Floors the simulator must show, held by
//! tests"), on shorter matches than the default scenario so the suite stays quick, and
//! determinism: same seed, same numbers.

use lagcomp_game::cheat::Cheat;
use lagcomp_sim::scenario::{Scenario, parse_preset};
use lagcomp_sim::{Mode, ModeResult};

fn scenario(duration: f64, presets: &[&str], cheats: Vec<Cheat>) -> Scenario {
    let mut s = Scenario::named("default").expect("a built-in scenario");
    s.duration = duration;
    s.presets = presets
        .iter()
        .map(|p| parse_preset(p).expect("a known preset"))
        .collect();
    s.cheats = cheats;
    s
}

/// Seeds pooled by the floor tests: one 20 s match holds about 170 client hits per
/// preset, too few to tell 99.9 % from 100 %, and a floor that holds for one seed only
/// proves nothing.
const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

#[test]
fn full_compensation_agrees_with_honest_clients_up_to_300_ms() {
    let presets = ["LAN", "40/10/0.2%", "100/25/2%", "200/50/4%", "300/75/6%"];
    // Per preset: client hits, agreed, false confirmations, arrived, honest rejected,
    // honest shots blocked by a door or the tram, of those seen as hits by the client.
    let mut pooled = [[0_u64; 7]; 5];
    // Honest shots claiming an extrapolated view (after lost snapshots), and rejected.
    let mut extrapolated = lagcomp_sim::ExtrapolatedShots::default();
    // Honest hits refused, by refusal, over every preset and seed.
    let mut refused: std::collections::BTreeMap<String, u64> = Default::default();
    for seed in SEEDS {
        let mut s = scenario(20.0, &presets, Vec::new());
        s.seed = seed;
        // The rifle only: these floors (and the counts they need) are the hitscan modes'
        // at the rifle's rate; every weapon's are `weapons.rs`'.
        s.arsenal = false;
        let result = s.run(|_, _, _| {});
        assert_eq!(result.runs.len(), presets.len());
        for (run, sums) in result.runs.iter().zip(&mut pooled) {
            let full = &run.modes[&Mode::Full];
            // Bots dodge and respawn under protection; neither is ever a reason to reject
            // an honest shot (it once was: `target_not_compensated`). Their hits are
            // refused instead, honestly, and counted apart.
            assert!(
                !full.rejections.contains_key("target_not_compensated"),
                "seed {seed}, {}: {:?}",
                run.preset,
                full.rejections
            );
            for (name, n) in &run.refused {
                *refused.entry(name.clone()).or_default() += n;
            }
            for (sum, n) in sums.iter_mut().zip([
                full.client_hits,
                full.agreed,
                full.false_confirmations,
                full.shots_arrived,
                run.honest_rejected,
                run.blocked_by_movers,
                run.blocked_by_movers_disputed,
            ]) {
                *sum += n;
            }
            extrapolated.shots += run.extrapolated.shots;
            extrapolated.rejected += run.extrapolated.rejected;
            assert!(
                run.reconstruction.samples >= 100 && run.reconstruction.p99_mm < 1.0,
                "seed {seed}, {}: reconstruction {:?}",
                run.preset,
                run.reconstruction
            );
            if run.preset == "100/25/2%" {
                // Without compensation, 100 ms already costs most of the hits: the gap
                // this project exists for.
                let none = &run.modes[&Mode::None];
                assert!(none.agreement < 0.7, "no compensation at 100 ms: {none:?}");
                assert!(none.agreement + 0.25 < full.agreement);
            }
        }
    }
    // Dodges registered before a shot arrived won over it, for every preset pooled: the
    // rule was exercised, not just never reached.
    assert!(
        refused.get("dodged").is_some_and(|&n| n >= 10),
        "{refused:?}"
    );
    assert!(
        refused
            .keys()
            .all(|k| ["dodged", "invulnerable"].contains(&k.as_str())),
        "{refused:?}"
    );
    for (
        preset,
        [
            hits,
            agreed,
            false_confirmations,
            arrived,
            rejected,
            movers,
            disputed,
        ],
    ) in presets.iter().zip(pooled)
    {
        // The scenery is on (the default scenario's): doors and the tram stop honest shots
        // as `blocked` (never a rejection), and the clients drew them there too.
        eprintln!(
            "{preset}: doors and tram blocked {movers} honest shots, {disputed} seen as hits"
        );
        assert!(
            movers >= 10,
            "{preset}: only {movers} honest shots met a door or the tram"
        );
        assert!(
            disputed * 50 <= movers,
            "{preset}: {disputed} of {movers} honest shots a mover blocked were hits to the client"
        );
        assert!(hits >= 800, "{preset}: too few hits to judge: {hits}");
        let agreement = agreed as f64 / hits as f64;
        // The floor is 99.9 % up to 300/75/6%. The 1 s window holds every rewind
        // up to there (under 0.55 s at 300/75/6%: a round trip, the interpolation delay,
        // jitter and resends); the old 0.5 s one rejected 1 shot in 700 at 300/75/6% as
        // `time_too_old` and held agreement at 99.8 %.
        assert!(
            agreement >= 0.999,
            "{preset}: agreement {agreement:.4} ({agreed} of {hits})"
        );
        assert_eq!(false_confirmations, 0, "{preset}");
        // Honest shots rejected: the issue asks for none. About 1 shot in 10,000 is (a
        // client extrapolating after a burst of lost snapshots draws what the server
        // cannot rebuild).
        assert!(
            rejected * 1000 <= arrived,
            "{preset}: {rejected} honest shots rejected of {arrived}"
        );
    }
    // Issue 24: a shot fired at an extrapolated picture says so, and the server rebuilds
    // that picture: extrapolation costs no honest shot. (Rare: 13 shots over these seeds
    // and presets were fired while extrapolating.)
    assert!(
        extrapolated.shots >= 10,
        "too few extrapolated shots to judge: {extrapolated:?}"
    );
    assert_eq!(extrapolated.rejected, 0, "{extrapolated:?}");
}

/// Runs `presets` (no cheats) over [`SEEDS`] with `threshold` as the rifle's no-rewind
/// threshold; per preset, the pooled full and no-compensation results and the largest
/// rewind any honest shot needed (ms).
fn pooled(presets: &[&str], threshold: Option<f64>) -> Vec<(ModeResult, ModeResult, f64)> {
    let mut out = vec![(ModeResult::default(), ModeResult::default(), 0.0); presets.len()];
    for seed in SEEDS {
        let mut s = scenario(20.0, presets, Vec::new());
        s.seed = seed;
        s.no_rewind_above_rtt = threshold;
        // The rifle only, as in the floors above.
        s.arsenal = false;
        let result = s.run(|_, _, _| {});
        for (run, (full, none, rewind)) in result.runs.iter().zip(&mut out) {
            for (sum, mode) in [(full, Mode::Full), (none, Mode::None)] {
                let m = &run.modes[&mode];
                sum.client_hits += m.client_hits;
                sum.agreed += m.agreed;
                sum.shots_arrived += m.shots_arrived;
                sum.false_confirmations += m.false_confirmations;
                for (reason, n) in &m.rejections {
                    *sum.rejections.entry(reason.clone()).or_default() += n;
                }
            }
            *rewind = run.rewind.max_ms.max(*rewind);
            assert_eq!(run.rewind.beyond_window, 0, "seed {seed}, {}", run.preset);
        }
    }
    out
}

#[test]
fn full_compensation_holds_at_500_ms_round_trip() {
    // Unity's 50 / 150 / 500 ms ladder. At 500 ms a shot reaches about 560 ms back (the
    // round trip and a 60 ms interpolation delay): the old 0.5 s window rejected every
    // one as `time_too_old`; the default 1 s window holds them all.
    let ladder = ["50/0/0%", "150/0/0%", "500/0/0%"];
    for (preset, (full, _, rewind)) in ladder.iter().zip(pooled(&ladder, None)) {
        assert!(full.client_hits >= 800, "{preset}: {full:?}");
        let agreement = full.agreed as f64 / full.client_hits as f64;
        assert!(
            agreement >= 0.99,
            "{preset}: agreement {agreement:.4}: {full:?}"
        );
        assert!(full.rejections.is_empty(), "{preset}: {full:?}");
        assert_eq!(full.false_confirmations, 0, "{preset}");
        assert!(rewind < 1000.0, "{preset}: a rewind of {rewind} ms");
    }
}

#[test]
fn the_no_rewind_threshold_stops_rewinding_above_it_only() {
    // A rifle that rewinds nobody above 300 ms of round trip: the 50 and 150 ms players
    // are judged exactly as without it; the 500 ms ones against the present, where their
    // targets no longer are, so about as few of their hits count as with no compensation
    // at all (they would have to lead their targets).
    let ladder = ["50/0/0%", "150/0/0%", "500/0/0%"];
    let without = pooled(&ladder, None);
    let with = pooled(&ladder, Some(0.3));
    for ((preset, (full, none, _)), (rewound, _, _)) in ladder.iter().zip(&with).zip(&without) {
        let agreement = full.agreed as f64 / full.client_hits as f64;
        if *preset == "500/0/0%" {
            let present = none.agreed as f64 / none.client_hits as f64;
            assert!(
                agreement <= present + 0.02 && agreement < 0.2,
                "{preset}: {agreement:.4} with the threshold, {present:.4} uncompensated"
            );
            // Misses, not cheats: each shooter fired from where its client drew it, so
            // the origin and view are checked there (they once were at the present, and
            // every honest shot of a moving 500 ms player was refused `origin_too_far`).
            // Only a present-time hit on a dodging target is refused, as it is today.
            for reason in ["origin_too_far", "angle_too_far"] {
                assert!(!full.rejections.contains_key(reason), "{preset}: {full:?}");
            }
            let refused: u64 = full.rejections.values().sum();
            assert!(refused * 100 <= full.shots_arrived, "{preset}: {full:?}");
        } else {
            assert_eq!(
                full, rewound,
                "{preset}: below the threshold nothing changes"
            );
        }
    }
}

#[test]
fn no_cheat_class_gets_a_single_hit_through() {
    let mut attempts = [0_u64; Cheat::ALL.len()];
    for seed in &SEEDS[..3] {
        let mut s = scenario(20.0, &[], Cheat::ALL.to_vec());
        s.seed = *seed;
        let result = s.run(|_, _, _| {});
        assert_eq!(result.cheats.len(), Cheat::ALL.len());
        for (cheat, tried) in result.cheats.iter().zip(&mut attempts) {
            *tried += cheat.attempts;
            if cheat.class == "too_old" {
                // Older than the window, whatever the window: refused for that, not as
                // some other failure.
                assert_eq!(
                    cheat.outcomes.keys().collect::<Vec<_>>(),
                    ["time_too_old"],
                    "seed {seed}"
                );
            }
            assert_eq!(
                cheat.accepted, 0,
                "seed {seed}, {}: {:?}",
                cheat.class, cheat.outcomes
            );
            if cheat.class == "invulnerable" {
                // Its hits on spawn-protected targets are refused: no damage, so nothing
                // gained, and no cheat rejection needed for an aim that was true.
                assert!(
                    cheat.outcomes.contains_key("invulnerable")
                        && !cheat.outcomes.contains_key("target_not_compensated"),
                    "seed {seed}: {:?}",
                    cheat.outcomes
                );
            }
        }
    }
    // The invulnerable cheat waits for a respawn, the wall cheat for a wall in the line:
    // they try least.
    for (cheat, tried) in Cheat::ALL.iter().zip(attempts) {
        assert!(tried >= 20, "{cheat:?}: only {tried} attempts");
    }
}

#[test]
fn the_same_seed_gives_the_same_numbers() {
    let s = scenario(6.0, &["100/25/2%"], vec![Cheat::Backtrack]);
    let a = serde_json::to_string(&s.run(|_, _, _| {})).unwrap();
    let b = serde_json::to_string(&s.run(|_, _, _| {})).unwrap();
    assert_eq!(a, b);
    let mut other = s.clone();
    other.seed += 1;
    let c = serde_json::to_string(&other.run(|_, _, _| {})).unwrap();
    assert_ne!(a, c, "a different seed plays a different match");
}

#[test]
fn fake_latency_backtracks_no_further_than_the_true_round_trip_allows() {
    // The cheat answers probes 500 ms late and claims moments 250 ms older than it drew,
    // firing from where its own body was then. Trusting the probes alone lets a good part
    // of its shots through; held to its snapshot acknowledgements, it gets what the
    // backtracking cheat gets at its true round trip (same seed, same match): nothing.
    let (mut trusted, mut held, mut backtracking) = (0, 0, 0);
    for seed in &SEEDS[..3] {
        let mut s = scenario(20.0, &[], vec![Cheat::FakeLatency]);
        s.seed = *seed;
        let defended = &s.run(|_, _, _| {}).cheats[0];
        assert!(defended.attempts >= 30, "seed {seed}: {defended:?}");
        held += defended.accepted;
        s.echo_ceiling = false;
        trusted += s.run(|_, _, _| {}).cheats[0].accepted;
        s.echo_ceiling = true;
        s.cheats = vec![Cheat::Backtrack];
        backtracking += s.run(|_, _, _| {}).cheats[0].accepted;
    }
    assert!(
        trusted >= 30,
        "the cheat works when probes are trusted: {trusted}"
    );
    assert_eq!(held, backtracking, "held to the echo");
    assert_eq!(held, 0);
}

#[test]
fn the_echo_ceiling_costs_honest_players_nothing() {
    let presets = ["100/25/2%", "300/75/6%"];
    for seed in &SEEDS[..2] {
        let mut s = scenario(15.0, &presets, Vec::new());
        s.seed = *seed;
        let with = s.run(|_, _, _| {});
        s.echo_ceiling = false;
        let without = s.run(|_, _, _| {});
        for (a, b) in with.runs.iter().zip(&without.runs) {
            let (a, b) = (&a.modes[&Mode::Full], &b.modes[&Mode::Full]);
            let rejected = |m: &lagcomp_sim::ModeResult| m.rejections.values().sum::<u64>();
            assert!(
                rejected(a) <= rejected(b) && a.agreed >= b.agreed,
                "seed {seed}: with {a:?}, without {b:?}"
            );
        }
    }
}
