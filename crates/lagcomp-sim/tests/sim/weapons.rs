//! Every weapon's floors (issue 25, "Floors"): honest bots carrying the rifle, the
//! shotgun, the rocket launcher (its flight's claim and its blast's), the knife and the
//! sniper rifle, each claim judged by the full validator; and the cheat classes that bend
//! a weapon other than the rifle, all refused (`floors.rs`' cheat test plays every class;
//! the sniper's through-the-wall claims are refused for the reason of their own here).

use std::collections::BTreeMap;

use lagcomp_game::cheat::Cheat;
use lagcomp_game::weapon::Arm;
use lagcomp_sim::ModeResult;
use lagcomp_sim::scenario::{Scenario, parse_preset};

/// Pooled like `floors.rs`' agreement floor, over fewer seeds: the mix's claims are
/// judged by the same validator, and its own floors need counts, not more time.
const SEEDS: [u64; 3] = [1, 2, 3];

#[test]
fn every_weapon_agrees_with_honest_clients_up_to_300_ms() {
    let presets = ["LAN", "40/10/0.2%", "100/25/2%", "200/50/4%", "300/75/6%"];
    let mut pooled: Vec<BTreeMap<Arm, ModeResult>> = vec![BTreeMap::new(); presets.len()];
    for seed in SEEDS {
        let mut s = Scenario::named("default").expect("a built-in scenario");
        s.duration = 20.0;
        s.presets = presets
            .iter()
            .map(|p| parse_preset(p).expect("a known preset"))
            .collect();
        s.cheats = Vec::new();
        s.seed = seed;
        assert!(s.arsenal, "the default scenario's bots carry every weapon");
        let result = s.run(|_, _, _| {});
        for (run, sums) in result.runs.iter().zip(&mut pooled) {
            for (arm, m) in &run.weapons {
                let sum = sums.entry(*arm).or_default();
                sum.shots_arrived += m.shots_arrived;
                sum.client_hits += m.client_hits;
                sum.agreed += m.agreed;
                sum.false_confirmations += m.false_confirmations;
                for (reason, n) in &m.rejections {
                    *sum.rejections.entry(reason.clone()).or_default() += n;
                }
            }
        }
    }
    let mut hits: BTreeMap<Arm, u64> = BTreeMap::new();
    for (preset, sums) in presets.iter().zip(&pooled) {
        for (arm, m) in sums {
            eprintln!(
                "{preset} {}: {} of {} hits agreed, {} claims, rejections {:?}",
                arm.name(),
                m.agreed,
                m.client_hits,
                m.shots_arrived,
                m.rejections
            );
            *hits.entry(*arm).or_default() += m.client_hits;
            assert!(
                m.agreed * 1000 >= m.client_hits * 999,
                "{preset} {}: {} of {} hits agreed",
                arm.name(),
                m.agreed,
                m.client_hits
            );
            assert_eq!(m.false_confirmations, 0, "{preset} {}", arm.name());
            if *preset == "300/75/6%" {
                let rejected: u64 = m.rejections.values().sum();
                assert!(
                    rejected * 1000 <= m.shots_arrived,
                    "{preset} {}: {:?}",
                    arm.name(),
                    m.rejections
                );
            } else {
                assert!(
                    m.rejections.is_empty(),
                    "{preset} {}: {:?}",
                    arm.name(),
                    m.rejections
                );
            }
        }
    }
    // Every weapon was used where it fits, often enough to be judged (the knife least:
    // a target must come within reach).
    for arm in Arm::ALL {
        let least = if arm == Arm::Knife { 5 } else { 100 };
        let n = hits.get(&arm).copied().unwrap_or(0);
        assert!(n >= least, "{}: only {n} hits", arm.name());
    }
}

#[test]
fn a_sniper_round_claimed_through_a_wall_is_beyond_its_power() {
    // The round crosses players, never walls: every claim naming a body a wall hides is
    // refused by the server's own walk, as beyond the round's power.
    let mut s = Scenario::named("default").expect("a built-in scenario");
    s.duration = 20.0;
    s.presets = vec![parse_preset("40/10/0.2%").expect("a known preset")];
    s.cheats = vec![Cheat::ThroughTheWallSniper];
    let result = s.run(|_, _, _| {});
    let cheat = &result.cheats[0];
    assert_eq!(cheat.class, "through_the_wall_sniper");
    assert!(cheat.attempts >= 10, "only {} attempts", cheat.attempts);
    assert_eq!(cheat.accepted, 0, "{:?}", cheat.outcomes);
    assert_eq!(
        cheat.outcomes.get("penetration_beyond_power"),
        Some(&cheat.attempts),
        "{:?}",
        cheat.outcomes
    );
}
