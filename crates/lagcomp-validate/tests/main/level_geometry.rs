//! The level's own geometry in verdicts: an honest shot at a target behind a triangle-mesh
//! wall is `Blocked` naming the wall (never `tampered_claim`), a wall destroyed at a tick
//! blocks shots rendered before it fell and not after, and a server's own world
//! ([`lagcomp::StaticWorld`]) blocks like the history's.

use std::sync::Arc;

use lagcomp::{
    Blocker, BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, LevelPiece,
    Quat, Ray, Rig, Shape, StaticId, StaticWorld, Tick, Vec3, WorldHit, Zone,
};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Participant, RejectReason, RenderTime, RuleSet, ShotClaim, Validator,
    VerdictOutcome, WeaponId,
};

pub(crate) const RATE: f64 = 64.0;
pub(crate) const HEAD: f32 = 0.12;
/// The target's head, straight down -Z from the shooter.
pub(crate) const TARGET: Vec3 = Vec3::new(0.0, 0.0, -20.0);

pub(crate) const TIMING: ClientTiming = ClientTiming {
    srtt: 0.1,
    rttvar: 0.005,
    interp_delay: 0.1,
};

/// A mesh wall of two triangles across the line of fire at z = `z`.
fn mesh_wall(z: f32) -> LevelPiece {
    LevelPiece::Mesh {
        vertices: vec![
            Vec3::new(-5.0, -5.0, z),
            Vec3::new(5.0, -5.0, z),
            Vec3::new(5.0, 5.0, z),
            Vec3::new(-5.0, 5.0, z),
        ],
        triangles: vec![[0, 1, 2], [0, 2, 3]],
        layers: u32::MAX,
    }
}

/// A shooter at the origin, a head at [`TARGET`], 40 recorded ticks, and a validator.
fn scene() -> (History, Validator, EntityId, EntityId) {
    let mut history = History::new(HistoryConfig {
        tick_rate: RATE,
        max_rewind: 0.5,
    })
    .unwrap();
    let ball = || {
        Arc::new(
            Rig::rigid(vec![Hitbox::new(
                0,
                "head",
                Zone::Head,
                0,
                Shape::sphere(HEAD),
            )])
            .unwrap(),
        )
    };
    let shooter = history.spawn(ball());
    let target = history.spawn(ball());
    for tick in 0..40_u32 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / RATE)
            .unwrap();
        let at = |p: Vec3| BoneTransform {
            translation: p,
            rotation: Quat::IDENTITY,
            scale: Vec3::ONE,
        };
        frame
            .record_rigid(shooter, at(Vec3::ZERO), EntityState::default())
            .unwrap();
        frame
            .record_rigid(target, at(TARGET), EntityState::default())
            .unwrap();
    }
    let rules = RuleSet::from_toml(
        r#"
        [weapons.rifle]
        id = 1
        max_range = 100.0
        min_interval = 0.1
        aim_tolerance_deg = 10.0
        origin_tolerance = 0.5
        hit_leeway = 1.25
        hit_leeway_min = 0.05
        max_rewind = 0.5
        "#,
    )
    .unwrap();
    let mut validator = Validator::new(rules);
    for (entity, team) in [(shooter, 1), (target, 2)] {
        validator.register(
            entity,
            Participant {
                team,
                aim_bone: 0,
                aim_forward: Vec3::NEG_Z,
            },
        );
    }
    validator.set_timing(shooter, TIMING).unwrap();
    (history, validator, shooter, target)
}

/// A shot rendered at tick `render_tick` down -Z, claiming the head (or nothing), and the
/// time it arrives.
fn shot(shooter: EntityId, target: EntityId, render_tick: u32, claim: bool) -> (ShotClaim, f64) {
    let render = f64::from(render_tick) / RATE;
    let claim = ShotClaim {
        shooter,
        weapon: WeaponId(1),
        seq: 1,
        render_time: RenderTime::Time(render),
        origin: Vec3::ZERO,
        direction: Vec3::NEG_Z,
        hit: claim.then_some(ClaimedHit {
            target,
            hitbox: None,
            point: Some(TARGET + Vec3::Z * HEAD),
        }),
    };
    (claim, render + TIMING.expected_rewind())
}

#[test]
fn an_honest_shot_behind_a_mesh_wall_is_blocked_by_the_wall_not_rejected() {
    for claims_the_hit in [true, false] {
        let (mut history, mut validator, shooter, target) = scene();
        history.load_level([mesh_wall(-10.0)]).unwrap();
        let (claim, arrives) = shot(shooter, target, 30, claims_the_hit);
        let outcome = validator.validate(&history, &claim, arrives).outcome;
        match outcome {
            VerdictOutcome::Blocked { by, distance } => {
                assert_eq!(by, Blocker::Wall(StaticId(0)));
                assert!((distance - 10.0).abs() < 1e-4, "{distance}");
            }
            other => panic!("claims the hit: {claims_the_hit}: {other:?}"),
        }
    }
}

#[test]
fn a_destroyed_wall_blocks_shots_rendered_before_it_fell_and_not_after() {
    // Rows: the tick the shooter saw, and whether the shot is blocked. The wall falls in
    // the frame of tick 25.
    let cases = [(15, true), (24, true), (25, false), (33, false)];
    for (render_tick, blocked) in cases {
        let (mut history, mut validator, shooter, target) = scene();
        let wall = history.load_level([mesh_wall(-10.0)]).unwrap().start;
        history.remove_static(wall, 25.0 / RATE).unwrap();
        let (claim, arrives) = shot(shooter, target, render_tick, true);
        let outcome = validator.validate(&history, &claim, arrives).outcome;
        if blocked {
            assert!(
                matches!(
                    outcome,
                    VerdictOutcome::Blocked {
                        by: Blocker::Wall(StaticId(0)),
                        ..
                    }
                ),
                "rendered at tick {render_tick}: {outcome:?}"
            );
        } else {
            assert!(
                matches!(&outcome, VerdictOutcome::Confirmed(hit) if hit.target == target),
                "rendered at tick {render_tick}: {outcome:?}"
            );
        }
    }
}

/// The server's own physics world: a wall across the line of fire at z = -12.
struct ServerWall;

impl StaticWorld for ServerWall {
    fn cast_ray(&self, ray: &Ray, layers: u32, time: f64) -> Option<WorldHit> {
        self.cast_sphere(ray, 0.0, layers, time)
    }

    fn cast_sphere(&self, ray: &Ray, radius: f32, _layers: u32, _time: f64) -> Option<WorldHit> {
        if ray.dir().z >= 0.0 {
            return None;
        }
        let distance = (ray.origin().z - radius + 12.0) / -ray.dir().z;
        (0.0..=ray.max_distance())
            .contains(&distance)
            .then_some(WorldHit {
                id: 1 << 40,
                distance,
                normal: Vec3::Z,
            })
    }
}

#[test]
fn a_server_world_blocks_validated_and_examined_shots() {
    let (history, mut validator, shooter, target) = scene();
    let (claim, arrives) = shot(shooter, target, 30, true);
    let blocked = VerdictOutcome::Blocked {
        by: Blocker::Wall(StaticId(1 << 40)),
        distance: 12.0,
    };
    let outcome = validator
        .validate_in_world(&history, &ServerWall, &claim, arrives)
        .outcome;
    assert_eq!(outcome, blocked);
    let (history, mut validator, ..) = scene();
    let examined = validator.examine_in_world(&history, &ServerWall, &claim, arrives);
    assert_eq!(validator.settle(examined).unwrap().outcome, blocked);
    // Without the world the same shot lands.
    let (history, mut validator, ..) = scene();
    let outcome = validator.validate(&history, &claim, arrives).outcome;
    assert!(
        matches!(outcome, VerdictOutcome::Confirmed(_)),
        "{outcome:?}"
    );
    assert_ne!(
        outcome,
        VerdictOutcome::Rejected {
            reason: RejectReason::TamperedClaim
        }
    );
}
