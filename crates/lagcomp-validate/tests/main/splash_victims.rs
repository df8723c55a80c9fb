//! Whom a blast may damage: a splash claim's victims are held to the checks a pellet's
//! target is (friendly fire, lag compensation), each cheat next to its honest twin, in
//! `kinds.rs`'s scene (the rocket's blast 1.5 m in front of `front`).

use lagcomp::{EntityId, EntityState, Vec3};
use lagcomp_validate::splash::{SplashResult, SplashVerdict};
use lagcomp_validate::{Participant, RejectReason, Validator};

use crate::kinds::{ARRIVAL, Kinds, scene, scene_with};

fn explode(s: &Kinds, validator: &Validator, victims: &[EntityId]) -> SplashVerdict {
    validator
        .clone()
        .validate_splash(&s.history, None, &s.blast(victims), ARRIVAL)
}

#[track_caller]
fn confirmed(verdict: &SplashVerdict, target: EntityId) {
    assert_eq!(verdict.outcome.label(), "confirmed", "{verdict:?}");
    assert!(
        matches!(verdict.victims[0], SplashResult::Caught { target: t, .. } if t == target),
        "{verdict:?}"
    );
}

#[test]
fn a_blast_on_a_teammate_is_friendly_fire_unless_the_weapon_allows_it() {
    let mut s = scene();
    // The honest twin: `front` is on the other team.
    confirmed(&explode(&s, &s.validator, &[s.front]), s.front);
    // The same blast with `front` on the shooter's team: refused, as a pellet on it is.
    s.validator.register(
        s.front,
        Participant {
            team: 1,
            aim_bone: 1,
            aim_forward: Vec3::NEG_Z,
        },
    );
    let verdict = explode(&s, &s.validator, &[s.front]);
    assert_eq!(
        verdict.outcome.label(),
        RejectReason::FriendlyFire.name(),
        "{verdict:?}"
    );
    // A launcher with friendly fire deals it.
    let mut rules = s.validator.rules().clone();
    rules.weapons.get_mut("rocket").unwrap().friendly_fire = true;
    let mut allowed = s.validator.clone();
    allowed.set_rules(rules);
    confirmed(&explode(&s, &allowed, &[s.front]), s.front);
}

#[test]
fn a_blast_on_a_target_out_of_lag_compensation_is_refused_as_a_pellet_is() {
    let s = scene();
    confirmed(&explode(&s, &s.validator, &[s.front]), s.front);
    // `front` stands where it stood, in the open within the radius, but out of lag
    // compensation: the server does not rewind it, so a claim on it is refused.
    let s = scene_with(EntityState {
        lag_compensated: false,
        ..EntityState::default()
    });
    let verdict = explode(&s, &s.validator, &[s.front]);
    assert_eq!(
        verdict.outcome.label(),
        RejectReason::TargetNotCompensated.name(),
        "{verdict:?}"
    );
}
