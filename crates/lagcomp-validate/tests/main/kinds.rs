//! Weapon kinds from the rules, end to end: a projectile, a shotgun and a rocket's blast
//! judged with their parameters from one TOML rule set, each kind's reasons from a cheat
//! next to its honest twin (listed in `reasons.rs` with every other reason), a claim of
//! one kind for a weapon of another refused, and every kind's verdict folded into the one
//! [`Verdict`] the audit log reads.

use std::sync::Arc;

use lagcomp::projectile::ClaimedTarget;
use lagcomp::spread::{MAX_PELLETS, Pellets, pellet_seed};
use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, HitboxId, Pose, Ray,
    RewindTarget, Rig, Shape, Tick, Trace, Vec3, Zone,
};
use lagcomp_validate::pellets::{PelletClaim, PelletOutcome, PelletTarget, PelletVerdict};
use lagcomp_validate::projectile::{ProjectileHitClaim, ProjectileOutcome};
use lagcomp_validate::splash::{MAX_VICTIMS, SplashClaim, SplashOutcome, SplashVerdict};
use lagcomp_validate::{
    AuditLog, ClientTiming, Participant, RejectReason, RenderTime, RuleSet, ShotClaim, Validator,
    Verdict, VerdictOutcome, WeaponClaim, WeaponId, WeaponVerdict,
};

/// A rifle, a projectile launcher whose rockets blast on impact, and a shotgun.
const RULES: &str = r#"
[weapons.rifle]
id = 1
max_range = 60.0
min_interval = 0.1
aim_tolerance_deg = 5.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35

[weapons.rocket]
kind = "projectile"
id = 7
max_range = 60.0
min_interval = 0.5
aim_tolerance_deg = 10.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35
damage = { torso = 2.0 }
flight = { speed = 25.0, radius = 0.1, step = 0.015625, max_time = 3.0 }
area = { radius = 5.0, falloff = { start = 1.0, end = 5.0, min = 0.1 }, bodies_block = true }

[weapons.shotgun]
kind = "pellets"
id = 9
max_range = 60.0
min_interval = 0.5
aim_tolerance_deg = 5.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35
pellets = { count = 12, half_angle_deg = 4.0, falloff = { start = 5.0, end = 15.0, min = 0.5 } }
"#;

pub(crate) const RIFLE: WeaponId = WeaponId(1);
const ROCKET: WeaponId = WeaponId(7);
const SHOTGUN: WeaponId = WeaponId(9);
/// The shooter's eye.
pub(crate) const EYE: Vec3 = Vec3::new(0.0, 1.6, 0.0);
/// Where each honest shot was drawn, and when it arrives (150 ms later).
pub(crate) const RENDER: f64 = 0.5;
pub(crate) const ARRIVAL: f64 = 0.65;

/// The shooter at the origin looking along -Z; `front` 10 m ahead; `walled` 4 m to its
/// right behind a wall; `far` 15 m to its right. Bodies are 0.6 x 1.8 x 0.6 m boxes.
pub(crate) struct Kinds {
    pub(crate) history: History,
    pub(crate) validator: Validator,
    pub(crate) shooter: EntityId,
    pub(crate) front: EntityId,
    walled: EntityId,
    far: EntityId,
}

pub(crate) fn scene() -> Kinds {
    scene_with(EntityState::default())
}

/// [`scene`], with `front` recorded in `state`.
pub(crate) fn scene_with(state: EntityState) -> Kinds {
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
    // Between `front` and `walled`, 2 m to the right.
    history
        .add_static(
            Shape::cuboid(Vec3::new(0.1, 2.0, 2.0)),
            Pose::from_translation(Vec3::new(2.0, 1.0, -10.0)),
            u32::MAX,
        )
        .unwrap();
    let feet = [
        Vec3::ZERO,
        Vec3::new(0.0, 0.0, -10.0),
        Vec3::new(4.0, 0.0, -10.0),
        Vec3::new(15.0, 0.0, -10.0),
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
    let mut validator = Validator::new(RuleSet::from_toml(RULES).unwrap());
    let eye = Participant {
        team: 1,
        aim_bone: 1,
        aim_forward: Vec3::NEG_Z,
    };
    validator.register(ids[0], eye);
    for id in &ids[1..] {
        validator.register(*id, Participant { team: 2, ..eye });
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
    Kinds {
        history,
        validator,
        shooter: ids[0],
        front: ids[1],
        walled: ids[2],
        far: ids[3],
    }
}

impl Kinds {
    /// The rocket fired at `front`: its front face (9.7 m) is reached with the rocket's
    /// centre at 9.6 m, 0.384 s in: step 24 of 1/64 s.
    pub(crate) fn rocket(&self) -> ProjectileHitClaim {
        ProjectileHitClaim {
            shooter: self.shooter,
            weapon: ROCKET,
            seq: 0,
            render_time: RenderTime::Time(RENDER),
            origin: EYE,
            direction: Vec3::NEG_Z,
            step: 24,
            target: ClaimedTarget::Entity {
                entity: self.front,
                hitbox: HitboxId(0),
            },
            position: Vec3::new(0.0, 1.6, -9.6),
        }
    }

    fn fly(&self, claim: &ProjectileHitClaim) -> ProjectileOutcome {
        let at = ARRIVAL + f64::from(claim.step) / 64.0;
        self.validator
            .clone()
            .validate_projectile(&self.history, None, claim, at)
            .outcome
    }

    /// The shotgun fired at `front`, each pellet claimed on what the client's own fan
    /// struck.
    pub(crate) fn shotgun(&self) -> PelletClaim {
        let weapon = self
            .validator
            .rules()
            .weapon(SHOTGUN)
            .and_then(|w| w.pellet_weapon())
            .unwrap();
        let seed = pellet_seed(self.shooter.to_bits(), 0);
        let drawn = Pellets::new(&weapon.spread, Vec3::NEG_Z, seed).unwrap();
        let rays: Vec<Ray> = drawn
            .directions()
            .iter()
            .map(|&d| Ray::new(EYE, d, 60.0).unwrap())
            .collect();
        let mut traces: Vec<Trace> = Vec::new();
        self.history
            .query(RewindTarget::at(RENDER))
            .ignore(&[self.shooter])
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
            shooter: self.shooter,
            weapon: SHOTGUN,
            seq: 0,
            render_time: RenderTime::Time(RENDER),
            origin: EYE,
            direction: Vec3::NEG_Z,
            seed,
            pellets: 12,
            hits,
        }
    }

    fn fire(&self, claim: &PelletClaim) -> PelletVerdict {
        self.validator
            .clone()
            .validate_pellets(&self.history, None, claim, ARRIVAL)
    }

    /// The rocket's blast 1.5 m in front of `front`, catching `victims`.
    pub(crate) fn blast(&self, victims: &[EntityId]) -> SplashClaim {
        let mut named = [None; MAX_VICTIMS];
        for (slot, victim) in named.iter_mut().zip(victims) {
            *slot = Some(*victim);
        }
        SplashClaim {
            shooter: self.shooter,
            weapon: ROCKET,
            seq: 0,
            render_time: RenderTime::Time(RENDER),
            origin: EYE,
            direction: Vec3::new(0.0, 1.0, -8.5) - EYE,
            blast: Vec3::new(0.0, 1.0, -8.5),
            victims: named,
        }
    }

    fn explode(&self, claim: &SplashClaim) -> SplashVerdict {
        self.validator
            .clone()
            .validate_splash(&self.history, None, claim, ARRIVAL)
    }
}

/// Asserts `outcome` refuses for `reason` (folded from the kind's own), and returns it.
#[track_caller]
fn refused(label: &str, reason: RejectReason) -> RejectReason {
    assert_eq!(label, reason.name());
    reason
}

#[track_caller]
fn rocket_struck_front(s: &Kinds) {
    let outcome = s.fly(&s.rocket());
    assert!(
        matches!(outcome, ProjectileOutcome::Confirmed(hit) if hit.target == s.front && hit.damage_multiplier == 2.0),
        "{outcome:?}"
    );
}

/// The rocket claimed on the target 4 m to the right of the one it flew at.
pub(crate) fn projectile_off_path() -> RejectReason {
    let s = scene();
    rocket_struck_front(&s);
    let cheat = ProjectileHitClaim {
        target: ClaimedTarget::Entity {
            entity: s.walled,
            hitbox: HitboxId(0),
        },
        position: Vec3::new(3.6, 1.6, -10.0),
        ..s.rocket()
    };
    refused(s.fly(&cheat).label(), RejectReason::ProjectileOffPath)
}

/// The rocket claimed to have struck at step 3, 2 m out, before it could arrive.
pub(crate) fn projectile_too_early() -> RejectReason {
    let s = scene();
    rocket_struck_front(&s);
    let cheat = ProjectileHitClaim {
        step: 3,
        position: Vec3::new(0.0, 1.6, -2.0),
        ..s.rocket()
    };
    refused(s.fly(&cheat).label(), RejectReason::ProjectileTooEarly)
}

#[track_caller]
fn shotgun_struck_front(s: &Kinds) -> PelletClaim {
    let honest = s.shotgun();
    let claimed = honest.hits.iter().flatten().count();
    assert!(claimed > 0, "some pellets strike the target 10 m out");
    let verdict = s.fire(&honest);
    assert!(
        matches!(verdict.outcome, PelletOutcome::Confirmed { hits, .. } if usize::from(hits) == claimed),
        "{verdict:?}"
    );
    honest
}

/// Thirteen pellets from the twelve-pellet shotgun.
pub(crate) fn pellet_count_mismatch() -> RejectReason {
    let s = scene();
    let honest = shotgun_struck_front(&s);
    let mut cheat = PelletClaim {
        pellets: 13,
        ..honest
    };
    cheat.hits[12] = Some(PelletTarget {
        target: s.front,
        hitbox: None,
    });
    refused(
        s.fire(&cheat).outcome.label(),
        RejectReason::PelletCountMismatch,
    )
}

/// A seed of the client's choosing (one whose pellets it liked better).
pub(crate) fn pellet_seed_mismatch() -> RejectReason {
    let s = scene();
    let honest = shotgun_struck_front(&s);
    let cheat = PelletClaim {
        seed: honest.seed ^ 1,
        ..honest
    };
    refused(
        s.fire(&cheat).outcome.label(),
        RejectReason::PelletSeedMismatch,
    )
}

/// A pellet that struck `front` claimed on the target behind the wall.
pub(crate) fn pellet_off_target() -> RejectReason {
    let s = scene();
    let honest = shotgun_struck_front(&s);
    let mut cheat = honest;
    let slot = cheat.hits.iter_mut().flatten().next().unwrap();
    slot.target = s.walled;
    slot.hitbox = None;
    refused(
        s.fire(&cheat).outcome.label(),
        RejectReason::PelletOffTarget,
    )
}

#[track_caller]
fn blast_caught_front(s: &Kinds) {
    let verdict = s.explode(&s.blast(&[s.front]));
    assert_eq!(
        verdict.outcome,
        SplashOutcome::Confirmed { victims: 1 },
        "{verdict:?}"
    );
}

/// The blast claimed to catch the target behind the wall as well.
pub(crate) fn splash_through_wall() -> RejectReason {
    let s = scene();
    blast_caught_front(&s);
    let cheat = s.blast(&[s.front, s.walled]);
    refused(
        s.explode(&cheat).outcome.label(),
        RejectReason::SplashThroughWall,
    )
}

/// The blast claimed to catch a target 15 m from it (the radius is 5 m).
pub(crate) fn splash_out_of_radius() -> RejectReason {
    let s = scene();
    blast_caught_front(&s);
    let cheat = s.blast(&[s.front, s.far]);
    refused(
        s.explode(&cheat).outcome.label(),
        RejectReason::SplashOutOfRadius,
    )
}

/// The blast claimed 70 m down the aim line (the launcher reaches 60 m).
pub(crate) fn splash_beyond_range() -> RejectReason {
    let s = scene();
    blast_caught_front(&s);
    let cheat = SplashClaim {
        blast: Vec3::new(0.0, 1.0, -70.0),
        direction: Vec3::new(0.0, 1.0, -70.0) - EYE,
        ..s.blast(&[])
    };
    refused(
        s.explode(&cheat).outcome.label(),
        RejectReason::SplashBeyondRange,
    )
}

/// A hitscan claim for the shotgun, and a pellet claim for the rocket launcher, next to
/// the shotgun's honest pellets.
pub(crate) fn wrong_weapon_kind() -> RejectReason {
    let s = scene();
    let honest = shotgun_struck_front(&s);
    let hitscan = ShotClaim {
        shooter: s.shooter,
        weapon: SHOTGUN,
        seq: 0,
        render_time: RenderTime::Time(RENDER),
        origin: EYE,
        direction: Vec3::NEG_Z,
        hit: None,
    };
    let verdict = s.validator.clone().validate(&s.history, &hitscan, ARRIVAL);
    assert_eq!(
        verdict.outcome.reason(),
        Some(RejectReason::WrongWeaponKind)
    );
    let pellets_from_a_launcher = PelletClaim {
        weapon: ROCKET,
        ..honest
    };
    refused(
        s.fire(&pellets_from_a_launcher).outcome.label(),
        RejectReason::WrongWeaponKind,
    )
}

#[test]
fn every_kind_folds_into_the_verdicts_the_audit_log_reads() {
    let s = scene();
    let mut folded: Vec<Verdict> = Vec::new();
    // A projectile: its hit, as a hitscan hit is.
    let rocket = s.validator.clone().validate_projectile(
        &s.history,
        None,
        &s.rocket(),
        ARRIVAL + 24.0 / 64.0,
    );
    let verdict = rocket.verdict();
    assert!(
        matches!(verdict.outcome, VerdictOutcome::Confirmed(hit) if hit.target == s.front),
        "{verdict:?}"
    );
    folded.push(verdict);
    // Pellets: one verdict for the target, its pellets' damage added up.
    let pellets = s.fire(&s.shotgun());
    let PelletOutcome::Confirmed {
        damage_multiplier, ..
    } = pellets.outcome
    else {
        panic!("{pellets:?}")
    };
    let verdicts: Vec<Verdict> = pellets.verdicts().collect();
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    let VerdictOutcome::Confirmed(hit) = verdicts[0].outcome else {
        panic!("{verdicts:?}")
    };
    assert_eq!(hit.target, s.front);
    assert!((hit.damage_multiplier - damage_multiplier).abs() < 1e-5);
    folded.extend(verdicts);
    // A refused blast: one rejection with the kind's code.
    let blast = s.explode(&s.blast(&[s.front, s.walled]));
    let verdicts: Vec<Verdict> = blast.verdicts().collect();
    assert_eq!(verdicts.len(), 1);
    let reason = verdicts[0].outcome.reason().unwrap();
    assert_eq!(
        (reason, reason.code()),
        (RejectReason::SplashThroughWall, 841)
    );
    assert!(
        verdicts[0]
            .rejection()
            .unwrap()
            .to_string()
            .starts_with("splash_through_wall"),
    );
    folded.extend(verdicts);
    // An honest blast: one verdict per victim caught.
    let blast = s.explode(&s.blast(&[s.front]));
    assert_eq!(blast.verdicts().count(), 1);
    folded.extend(blast.verdicts());
    // Written to and read back from the audit log like any verdict.
    let mut log = AuditLog::new(Vec::new());
    for verdict in &folded {
        log.write(verdict).unwrap();
    }
    let bytes = log.finish().unwrap();
    let read = lagcomp_validate::audit::read_audit_log(bytes.as_slice()).unwrap();
    assert_eq!(read.verdicts, folded);
}

#[test]
fn every_kind_through_one_entry_point_is_judged_as_by_its_own() {
    let s = scene();
    let rocket_arrival = ARRIVAL + 24.0 / 64.0;
    let cases = [
        (WeaponClaim::Projectile(s.rocket()), rocket_arrival),
        (WeaponClaim::Pellets(s.shotgun()), ARRIVAL),
        (WeaponClaim::Splash(s.blast(&[s.front])), ARRIVAL),
        (WeaponClaim::Splash(s.blast(&[s.front, s.walled])), ARRIVAL),
    ];
    for (claim, arrival) in cases {
        let own = match &claim {
            WeaponClaim::Projectile(c) => WeaponVerdict::Projectile(
                s.validator
                    .clone()
                    .validate_projectile(&s.history, None, c, arrival),
            ),
            WeaponClaim::Pellets(c) => WeaponVerdict::Pellets(s.fire(c)),
            WeaponClaim::Splash(c) => WeaponVerdict::Splash(s.explode(c)),
            other => panic!("not in this table: {other:?}"),
        };
        let any = s
            .validator
            .clone()
            .validate_any(&s.history, None, &claim, arrival);
        assert_eq!(any, own, "{}", claim.kind());
        assert_eq!((any.kind(), any.seq()), (claim.kind(), claim.seq()));
        assert_eq!(any.shooter(), s.shooter);
        assert!(any.verdicts().eq(match &own {
            WeaponVerdict::Projectile(v) => vec![v.verdict()],
            WeaponVerdict::Pellets(v) => v.verdicts().collect(),
            WeaponVerdict::Splash(v) => v.verdicts().collect(),
            _ => unreachable!(),
        }));
        // In JSON each names its kind, and reads back the same.
        let json = serde_json::to_string(&claim).unwrap();
        assert!(
            json.contains(&format!("\"kind\":\"{}\"", claim.kind())),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<WeaponClaim>(&json).unwrap(), claim);
        let json = serde_json::to_string(&any).unwrap();
        assert_eq!(serde_json::from_str::<WeaponVerdict>(&json).unwrap(), any);
    }
    // A pellet claim for the rocket launcher: its own kind's refusal, through either door.
    let wrong = WeaponClaim::Pellets(PelletClaim {
        weapon: ROCKET,
        ..s.shotgun()
    });
    let any = s
        .validator
        .clone()
        .validate_any(&s.history, None, &wrong, ARRIVAL);
    let folded: Vec<Verdict> = any.verdicts().collect();
    assert_eq!(
        folded
            .iter()
            .map(|v| v.outcome.reason())
            .collect::<Vec<_>>(),
        [Some(RejectReason::WrongWeaponKind)]
    );
}
