//! Pellet claims: each cheat next to its honest twin, and the reasons' stable names.

use std::sync::Arc;

use lagcomp::spread::{Falloff, MAX_PELLETS, Pellets, Spread, SpreadKind, pellet_seed};
use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, Ray, RewindTarget, Rig,
    Shape, Tick, Trace, Vec3, Zone,
};

use super::*;
use crate::{ClientTiming, Participant, RuleSet};

/// 64 Hz, one second of history: a shooter at the origin (eye 1.6 m up, looking along
/// -z), its target 8 m ahead (a 0.6 m wide body), a bystander 1 m to the target's side.
fn scene() -> (History, Validator, [EntityId; 3]) {
    scene_with(EntityState::default())
}

/// [`scene`], the first target (`ids[1]`) recorded with `state`.
fn scene_with(state: EntityState) -> (History, Validator, [EntityId; 3]) {
    let rig = Arc::new(
        Rig::new(
            2,
            vec![Hitbox::new(
                0,
                "body",
                Zone::Torso,
                0,
                Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)),
            )],
        )
        .unwrap(),
    );
    let bones =
        |feet: Vec3| [1.0, 1.6].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up));
    let mut history = History::new(HistoryConfig {
        tick_rate: 64.0,
        max_rewind: 1.0,
    })
    .unwrap();
    let ids = [(); 3].map(|()| history.spawn(Arc::clone(&rig)));
    let feet = [
        Vec3::ZERO,
        Vec3::new(0.0, 0.0, -8.0),
        Vec3::new(1.0, 0.0, -8.5),
    ];
    for tick in 0..=64 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 64.0)
            .unwrap();
        for (i, (id, feet)) in ids.iter().zip(feet).enumerate() {
            let recorded = if i == 1 {
                state
            } else {
                EntityState::default()
            };
            frame.record(*id, &bones(feet), recorded).unwrap();
        }
    }
    let rules = "[weapons.shotgun]\nid = 9\nmax_range = 60.0\nmin_interval = 0.5\n\
                 aim_tolerance_deg = 5.0\norigin_tolerance = 0.5\nhit_leeway = 1.25\n\
                 hit_leeway_min = 0.05\nmax_rewind = 0.35\ndamage = { torso = 1.0 }\n\
                 kind = \"pellets\"\n\
                 pellets = { count = 12, half_angle_deg = 4.0, \
                 falloff = { start = 5.0, end = 15.0, min = 0.5 } }";
    let mut validator = Validator::new(RuleSet::from_toml(rules).unwrap());
    let eye = Participant {
        team: 1,
        aim_bone: 1,
        aim_forward: Vec3::NEG_Z,
    };
    validator.register(ids[0], eye);
    validator.register(ids[1], Participant { team: 2, ..eye });
    validator.register(ids[2], Participant { team: 3, ..eye });
    let timing = ClientTiming {
        srtt: 0.1,
        rttvar: 0.005,
        interp_delay: 0.1,
    };
    validator.set_timing(ids[0], timing).unwrap();
    (history, validator, ids)
}

/// Twelve pellets in a 4-degree cone (34 cm wide at 5 m, 56 cm at 8 m); full damage to
/// 5 m, half from 15 m.
fn shotgun() -> PelletWeapon {
    PelletWeapon {
        spread: Spread::new(12, 4.0, SpreadKind::Uniform).unwrap(),
        falloff: Falloff::new(5.0, 15.0, 0.5).unwrap(),
    }
}

const ORIGIN: Vec3 = Vec3::new(0.0, 1.6, 0.0);

/// What a client that drew its pellets from `seed` saw them strike at 0.5 s.
fn claim_from(history: &History, ids: [EntityId; 3], seed: u64, seq: u32) -> PelletClaim {
    let drawn = Pellets::new(&shotgun().spread, Vec3::NEG_Z, seed).unwrap();
    let rays: Vec<Ray> = drawn
        .directions()
        .iter()
        .map(|&d| Ray::new(ORIGIN, d, 60.0).unwrap())
        .collect();
    let mut traces: Vec<Trace> = Vec::new();
    history
        .query(RewindTarget::at(0.5))
        .ignore(&ids[..1])
        .ray_fan(&rays, &mut traces)
        .unwrap();
    let mut hits = [None; MAX_PELLETS];
    for (slot, trace) in hits.iter_mut().zip(&traces) {
        *slot = trace.hit.map(|hit| PelletTarget {
            target: hit.entity,
            hitbox: Some(hit.hitbox),
        });
    }
    PelletClaim {
        shooter: ids[0],
        weapon: WeaponId(9),
        seq,
        render_time: RenderTime::Time(0.5),
        origin: ORIGIN,
        direction: Vec3::NEG_Z,
        seed,
        pellets: 12,
        hits,
    }
}

fn honest(history: &History, ids: [EntityId; 3], seq: u32) -> PelletClaim {
    claim_from(history, ids, pellet_seed(ids[0].to_bits(), seq), seq)
}

fn judge(history: &History, validator: &Validator, claim: &PelletClaim) -> PelletVerdict {
    validator
        .clone()
        .validate_pellets(history, None, claim, 0.65)
}

fn hits_of(claim: &PelletClaim) -> usize {
    claim.hits.iter().flatten().count()
}

#[test]
fn an_honest_claim_is_confirmed_pellet_by_pellet_with_falloff() {
    let (history, validator, ids) = scene();
    let claim = honest(&history, ids, 0);
    let claimed = hits_of(&claim);
    assert!(
        (1..12).contains(&claimed),
        "some pellets hit, some miss: {claimed}"
    );
    let verdict = judge(&history, &validator, &claim);
    let PelletOutcome::Confirmed {
        hits,
        damage_multiplier,
    } = verdict.outcome
    else {
        panic!("{verdict:?}");
    };
    assert_eq!(usize::from(hits), claimed);
    assert_eq!(verdict.basis.time_used, Some(0.5));
    // Each pellet met the body's front face at about 7.7 m: 1 - 0.5 * 2.7 / 10 = 0.865.
    for result in verdict.pellets[..12].iter().copied() {
        match result {
            PelletResult::Hit {
                target,
                distance,
                damage_multiplier,
                ..
            } => {
                assert!(target == ids[1] || target == ids[2]);
                let expected = 1.0 - 0.5 * (distance - 5.0) / 10.0;
                assert!((damage_multiplier - expected).abs() < 1e-5);
            }
            other => assert_eq!(other, PelletResult::Unclaimed),
        }
    }
    assert!(
        verdict.pellets[12..]
            .iter()
            .all(|p| *p == PelletResult::NotTraced)
    );
    let sum: f32 = verdict
        .pellets
        .iter()
        .map(|p| match p {
            PelletResult::Hit {
                damage_multiplier, ..
            } => *damage_multiplier,
            _ => 0.0,
        })
        .sum();
    assert!((sum - damage_multiplier).abs() < 1e-5);
}

#[test]
fn extra_pellets_are_refused_next_to_the_honest_count() {
    let (history, validator, ids) = scene();
    let claim = honest(&history, ids, 0);
    assert_eq!(
        judge(&history, &validator, &claim).outcome.label(),
        "confirmed"
    );
    // One more pellet, claimed on the target.
    let mut extra = claim;
    extra.pellets = 13;
    extra.hits[12] = Some(PelletTarget {
        target: ids[1],
        hitbox: None,
    });
    assert_eq!(
        judge(&history, &validator, &extra).outcome,
        PelletOutcome::Disproved {
            reason: PelletReason::PelletCountMismatch
        }
    );
    // The honest count, but a hit smuggled in past it.
    let mut smuggled = claim;
    smuggled.hits[12] = extra.hits[12];
    assert_eq!(
        judge(&history, &validator, &smuggled).outcome.label(),
        "pellet_count_mismatch"
    );
}

#[test]
fn a_tampered_seed_is_refused_next_to_the_shots_own() {
    let (history, validator, ids) = scene();
    let honest_claim = honest(&history, ids, 3);
    assert_eq!(
        judge(&history, &validator, &honest_claim).outcome.label(),
        "confirmed"
    );
    // A client shopping for a tighter pattern: the seed with the most hits of 200 tried,
    // its claims true to that seed's own pellets.
    let best = (0..200_u64)
        .map(|seed| claim_from(&history, ids, seed, 3))
        .max_by_key(hits_of)
        .unwrap();
    assert!(hits_of(&best) > hits_of(&honest_claim));
    assert_eq!(
        judge(&history, &validator, &best).outcome,
        PelletOutcome::Disproved {
            reason: PelletReason::PelletSeedMismatch
        }
    );
}

#[test]
fn a_pellet_claimed_on_a_target_its_ray_misses_is_refused() {
    let (history, validator, ids) = scene();
    let claim = honest(&history, ids, 0);
    let verdict = judge(&history, &validator, &claim);
    assert_eq!(verdict.outcome.label(), "confirmed");
    let missed = claim.hits[..12]
        .iter()
        .position(Option::is_none)
        .expect("a pellet missed");
    let mut cheat = claim;
    cheat.hits[missed] = Some(PelletTarget {
        target: ids[1],
        hitbox: None,
    });
    let verdict = judge(&history, &validator, &cheat);
    assert_eq!(
        verdict.outcome,
        PelletOutcome::Disproved {
            reason: PelletReason::PelletOffTarget
        }
    );
    assert!(matches!(
        verdict.pellets[missed],
        PelletResult::Missed { .. }
    ));
    // A pellet that hit the target, claimed on the bystander instead.
    if let Some(hit) = claim.hits[..12]
        .iter()
        .position(|h| h.is_some_and(|h| h.target == ids[1]))
    {
        let mut swapped = claim;
        swapped.hits[hit] = Some(PelletTarget {
            target: ids[2],
            hitbox: None,
        });
        assert_eq!(
            judge(&history, &validator, &swapped).outcome.label(),
            "pellet_off_target"
        );
    }
}

#[test]
fn the_shots_own_checks_come_first() {
    let (history, validator, ids) = scene();
    let mut claim = honest(&history, ids, 0);
    claim.direction = Vec3::NAN;
    assert!(matches!(
        judge(&history, &validator, &claim).outcome,
        PelletOutcome::Rejected { .. }
    ));
}

#[test]
fn reasons_keep_their_names_and_codes() {
    let named: Vec<_> = PelletReason::ALL
        .iter()
        .map(|r| (r.name(), r.code(), r.to_string()))
        .collect();
    assert_eq!(
        named,
        [
            (
                "pellet_count_mismatch",
                831,
                "pellet_count_mismatch".to_owned()
            ),
            (
                "pellet_seed_mismatch",
                832,
                "pellet_seed_mismatch".to_owned()
            ),
            ("pellet_off_target", 833, "pellet_off_target".to_owned()),
        ]
    );
}

#[test]
fn pellets_on_a_teammate_are_friendly_fire_and_the_aim_line_alone_is_not() {
    // The hitscan checks reject a shot whose aim line meets a teammate; no pellet follows
    // that line, so the pellets are judged on what they struck: a pellet claimed on a
    // teammate is friendly fire, as a hitscan hit on one is.
    let (history, mut validator, ids) = scene();
    validator.register(
        ids[1],
        Participant {
            team: 1,
            aim_bone: 1,
            aim_forward: Vec3::NEG_Z,
        },
    );
    let claim = honest(&history, ids, 0);
    assert!(hits_of(&claim) > 0);
    let verdict = judge(&history, &validator, &claim);
    assert_eq!(verdict.outcome.label(), "friendly_fire", "{verdict:?}");
    // The same shot claiming no pellet on the teammate: nothing to refuse.
    let none = PelletClaim {
        hits: [None; MAX_PELLETS],
        ..claim
    };
    let verdict = judge(&history, &validator, &none);
    assert!(
        matches!(verdict.outcome, PelletOutcome::Confirmed { hits: 0, .. }),
        "{verdict:?}"
    );
    // A weapon with friendly fire deals it.
    let mut rules = validator.rules().clone();
    rules.weapons.get_mut("shotgun").unwrap().friendly_fire = true;
    validator.set_rules(rules);
    let verdict = judge(&history, &validator, &claim);
    assert!(
        matches!(verdict.outcome, PelletOutcome::Confirmed { hits, .. } if usize::from(hits) == hits_of(&claim)),
        "{verdict:?}"
    );
}

#[test]
fn the_spread_comes_from_the_weapon_rules() {
    let (_, validator, _) = scene();
    let rules = validator.rules().weapon(WeaponId(9)).unwrap();
    assert_eq!(rules.pellet_weapon(), Some(shotgun()));
}

#[test]
fn pellets_hit_only_the_weapons_layers() {
    // A shotgun that hits nothing on the players' layer: its pellets pass through them,
    // so a pellet claimed on one struck nothing there.
    let (history, mut validator, ids) = scene();
    let claim = honest(&history, ids, 0);
    assert!(hits_of(&claim) > 0);
    let mut rules = validator.rules().clone();
    let players = EntityState::default().layers;
    rules.weapons.get_mut("shotgun").unwrap().hit_layers = !players;
    validator.set_rules(rules);
    let verdict = judge(&history, &validator, &claim);
    assert_eq!(verdict.outcome.label(), "pellet_off_target", "{verdict:?}");
}

/// Pellets on a spawn-protected target spare it (no damage, a refused verdict for it, as a
/// hitscan hit would be), while the pellets on the other target still count.
#[test]
fn pellets_on_a_protected_target_spare_it_and_the_others_still_count() {
    let (history, validator, ids) = scene_with(EntityState {
        invulnerable: true,
        ..EntityState::default()
    });
    let claim = honest(&history, ids, 0);
    let verdict = judge(&history, &validator, &claim);
    let PelletOutcome::Confirmed { hits, .. } = verdict.outcome else {
        panic!("{verdict:?}");
    };
    let on = |target: EntityId| {
        claim
            .hits
            .iter()
            .flatten()
            .filter(|h| h.target == target)
            .count()
    };
    assert!(
        on(ids[1]) > 0,
        "the claim has pellets on the protected target"
    );
    assert_eq!(
        usize::from(hits),
        on(ids[2]),
        "only the other target's pellets hit"
    );
    for result in &verdict.pellets {
        if let PelletResult::Spared {
            target, refusal, ..
        } = result
        {
            assert_eq!((*target, *refusal), (ids[1], crate::Refusal::Invulnerable));
        }
        if let PelletResult::Hit { target, .. } = result {
            assert_eq!(*target, ids[2]);
        }
    }
    let folded: Vec<_> = verdict.verdicts().map(|v| v.outcome).collect();
    assert!(
        folded.iter().any(|o| matches!(
            o,
            crate::VerdictOutcome::Refused { target, .. } if *target == ids[1]
        )),
        "{folded:?}"
    );
    assert!(
        folded
            .iter()
            .all(|o| !matches!(o, crate::VerdictOutcome::Confirmed(hit) if hit.target == ids[1])),
        "{folded:?}"
    );
}
