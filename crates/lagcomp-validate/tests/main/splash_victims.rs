//! Whom a blast may damage: a splash claim's victims are held to the checks a pellet's
//! target is (friendly fire, lag compensation), each cheat next to its honest twin.

use std::sync::Arc;

use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Vec3,
    Zone,
};
use lagcomp_validate::splash::{MAX_VICTIMS, SplashClaim, SplashOutcome, SplashResult};
use lagcomp_validate::{
    ClientTiming, Participant, RejectReason, RenderTime, RuleSet, Validator, WeaponId,
};

const RULES: &str = r#"
[weapons.grenade]
kind = "area"
id = 5
max_range = 60.0
min_interval = 0.5
aim_tolerance_deg = 10.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35
area = { radius = 5.0, falloff = { start = 1.0, end = 5.0, min = 0.1 }, bodies_block = true }
"#;

const GRENADE: WeaponId = WeaponId(5);
/// Where the grenade goes off, 8 m in front of the shooter's eye.
const BLAST: Vec3 = Vec3::new(0.0, 1.0, -8.0);
const EYE: Vec3 = Vec3::new(0.0, 1.6, 0.0);

/// The shooter (team 1) at the origin looking along -z; around the blast, each about 2.7 to
/// 3.1 m from it in the open: a teammate to its left, an enemy to its right, and an enemy
/// out of lag compensation behind it, off the aim line. Bodies are 0.6 x 1.8 x 0.6 m boxes.
struct Yard {
    history: History,
    validator: Validator,
    shooter: EntityId,
    mate: EntityId,
    enemy: EntityId,
    uncompensated: EntityId,
}

fn yard() -> Yard {
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
    let ids = [(); 4].map(|()| history.spawn(Arc::clone(&rig)));
    let feet = [
        Vec3::ZERO,
        Vec3::new(-3.0, 0.0, -8.0),
        Vec3::new(3.0, 0.0, -8.0),
        Vec3::new(2.5, 0.0, -10.5),
    ];
    for tick in 0..=64 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 64.0)
            .unwrap();
        for (i, (id, feet)) in ids.iter().zip(feet).enumerate() {
            let state = EntityState {
                lag_compensated: i != 3,
                ..EntityState::default()
            };
            frame.record(*id, &bones(feet), state).unwrap();
        }
    }
    let mut validator = Validator::new(RuleSet::from_toml(RULES).unwrap());
    let eye = Participant {
        team: 1,
        aim_bone: 1,
        aim_forward: Vec3::NEG_Z,
    };
    for (id, team) in ids.iter().zip([1, 1, 2, 2]) {
        validator.register(*id, Participant { team, ..eye });
    }
    validator
        .set_timing(
            ids[0],
            ClientTiming {
                srtt: 0.1,
                rttvar: 0.005,
                interp_delay: 0.1,
            },
        )
        .unwrap();
    let [shooter, mate, enemy, uncompensated] = ids;
    Yard {
        history,
        validator,
        shooter,
        mate,
        enemy,
        uncompensated,
    }
}

impl Yard {
    /// The grenade, drawn at 0.5 s, claimed to catch `victims`.
    fn blast(&self, victims: &[EntityId]) -> SplashClaim {
        let mut named = [None; MAX_VICTIMS];
        for (slot, victim) in named.iter_mut().zip(victims) {
            *slot = Some(*victim);
        }
        SplashClaim {
            shooter: self.shooter,
            weapon: GRENADE,
            seq: 0,
            render_time: RenderTime::Time(0.5),
            origin: EYE,
            direction: BLAST - EYE,
            blast: BLAST,
            victims: named,
        }
    }

    fn judge(&self, validator: &Validator, victims: &[EntityId]) -> SplashOutcome {
        validator
            .clone()
            .validate_splash(&self.history, None, &self.blast(victims), 0.65)
            .outcome
    }
}

#[test]
fn a_blast_on_a_teammate_is_friendly_fire_unless_the_weapon_allows_it() {
    let s = yard();
    // The honest twin: the enemy alone, the teammate beside it unnamed.
    assert_eq!(
        s.judge(&s.validator, &[s.enemy]),
        SplashOutcome::Confirmed { victims: 1 }
    );
    // Naming the teammate the blast reached refuses the claim, as a pellet on it does.
    assert_eq!(
        s.judge(&s.validator, &[s.enemy, s.mate]),
        SplashOutcome::Rejected {
            reason: RejectReason::FriendlyFire
        }
    );
    // A weapon with friendly fire deals it: both caught, with their falloff.
    let mut rules = s.validator.rules().clone();
    rules.weapons.get_mut("grenade").unwrap().friendly_fire = true;
    let mut allowed = s.validator.clone();
    allowed.set_rules(rules);
    let verdict = allowed.validate_splash(&s.history, None, &s.blast(&[s.enemy, s.mate]), 0.65);
    assert_eq!(
        verdict.outcome,
        SplashOutcome::Confirmed { victims: 2 },
        "{verdict:?}"
    );
    assert!(
        matches!(verdict.victims[1], SplashResult::Caught { target, distance, .. }
            if target == s.mate && (distance - 2.7).abs() < 1e-4),
        "{:?}",
        verdict.victims[1]
    );
}

#[test]
fn a_blast_on_a_target_out_of_lag_compensation_is_refused_as_a_pellet_is() {
    let s = yard();
    assert_eq!(
        s.judge(&s.validator, &[s.enemy]),
        SplashOutcome::Confirmed { victims: 1 }
    );
    // Standing still within the radius in the open, but not lag-compensated: the server
    // does not rewind it, so a client's claim on it is refused whatever it saw.
    assert_eq!(
        s.judge(&s.validator, &[s.enemy, s.uncompensated]),
        SplashOutcome::Rejected {
            reason: RejectReason::TargetNotCompensated
        }
    );
}
