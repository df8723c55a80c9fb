//! Penetration claims end to end: a sniper rifle's `penetration` table from TOML, the
//! rewound walk through walls and bodies compared with the claimed chain, table-driven
//! (a thin wooden wall, a thick concrete one, bodies in a row, a round that lodges, a door
//! that closed or opened since, a target that moved since), check 9 and spared bodies,
//! the folded verdicts, and every number of the table range-checked with its field named.
//!
//! The two penetration reasons' cheats next to their honest twins are here too, listed
//! in `reasons.rs` with every other reason.

use std::sync::Arc;

use lagcomp::query::penetration::PenetrationChain;
use lagcomp::{
    BoneTransform, EntityId, EntityRole, EntityState, History, HistoryConfig, Hitbox, HitboxId,
    MaterialId, Pose, Ray, RewindTarget, Rig, Shape, StaticId, StaticWorld, Tick, Vec3, WorldHit,
    Zone,
};
use lagcomp_validate::penetration::{
    ClaimedLayer, MAX_PENETRATION_LAYERS, PenetrationClaim, PenetrationLayerResult,
    PenetrationOutcome, PenetrationReason, PenetrationVerdict,
};
use lagcomp_validate::{
    ClientTiming, Participant, RejectReason, RenderTime, RuleSet, RulesError, Validator,
    VerdictOutcome, WeaponClaim, WeaponId, WeaponVerdict,
};

/// A sniper rifle whose round crosses 1 m of concrete, or 4 m of wood, or 2 m of flesh;
/// damage x 0.75 per layer crossed, x 2 on the torso. A plain rifle beside it.
const RULES: &str = r#"
[weapons.sniper]
id = 3
max_range = 100.0
min_interval = 1.0
aim_tolerance_deg = 5.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35
damage = { torso = 2.0 }

[weapons.sniper.penetration]
power = 1.0
# concrete, wood, flesh
costs = [1.0, 0.25, 0.5]
layer_damage = 0.75
body_material = 2

[weapons.rifle]
id = 1
max_range = 100.0
min_interval = 0.1
aim_tolerance_deg = 5.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35
"#;

pub(crate) const SNIPER: WeaponId = WeaponId(3);
const RIFLE: WeaponId = WeaponId(1);
/// The torso's damage multiplier.
const TORSO: f32 = 2.0;
/// The torso's multiplier after one, two and three layers crossed.
const W75: f32 = TORSO * 0.75;
const W56: f32 = W75 * 0.75;
const W42: f32 = W56 * 0.75;
const CONCRETE: u16 = 0;
const WOOD: u16 = 1;
/// The shooter's eye; every shot goes straight down -Z from it, 1.6 m up.
const EYE: Vec3 = Vec3::new(0.0, 1.6, 0.0);
/// Where each honest shot was drawn, and when it arrives (150 ms later).
const RENDER: f64 = 0.5;
pub(crate) const ARRIVAL: f64 = 0.65;

/// A wall across the line: its centre's distance down the line, thickness and material.
#[derive(Clone, Copy)]
struct Wall(f32, f32, u16);

/// Where a body's feet are at `t` seconds: each body is a 0.6 m box (0.3 of flesh to
/// cross), 1.8 m tall.
type Path = fn(f32) -> Vec3;

/// A body of the scene: where it stands (or walks) and what it is.
#[derive(Clone, Copy)]
struct Body {
    feet: Vec3,
    path: Option<Path>,
    team: u16,
    state: EntityState,
}

/// A red body standing still `z` metres down the line.
fn at(z: f32) -> Body {
    Body {
        feet: Vec3::new(0.0, 0.0, -z),
        path: None,
        team: 2,
        state: EntityState::default(),
    }
}

/// A door across the line 5 m out; where it stands at `t` seconds (closed at x = 0).
type DoorPath = fn(f32) -> f32;

/// The shooter, its walls, bodies and door, recorded for a second at 64 Hz, and a
/// validator with [`RULES`].
pub(crate) struct Range {
    pub(crate) history: History,
    pub(crate) validator: Validator,
    pub(crate) shooter: EntityId,
    pub(crate) bodies: Vec<EntityId>,
    walls: Vec<StaticId>,
}

fn range(walls: &[Wall], bodies: &[Body], door: Option<DoorPath>) -> Range {
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
    let shooter = history.spawn(Arc::clone(&rig));
    let ids: Vec<EntityId> = bodies
        .iter()
        .map(|_| history.spawn(Arc::clone(&rig)))
        .collect();
    let door_id = door.map(|_| {
        let panel = Rig::rigid(vec![Hitbox::new(
            0,
            "door",
            Zone::Torso,
            0,
            Shape::cuboid(Vec3::new(1.0, 1.5, 0.05)),
        )])
        .unwrap();
        history.spawn_as(Arc::new(panel), EntityRole::Blocker)
    });
    let wall_ids = walls
        .iter()
        .map(|&Wall(z, thick, material)| {
            let id = history
                .add_static(
                    Shape::cuboid(Vec3::new(2.0, 2.0, thick / 2.0)),
                    Pose::from_translation(Vec3::new(0.0, 1.0, -z)),
                    u32::MAX,
                )
                .unwrap();
            history
                .set_static_material(id, MaterialId(material))
                .unwrap();
            id
        })
        .collect();
    for tick in 0..=64 {
        let t = f64::from(tick) / 64.0;
        let mut frame = history.begin_frame(Tick(tick), t).unwrap();
        frame
            .record(shooter, &bones(Vec3::ZERO), EntityState::default())
            .unwrap();
        for (id, body) in ids.iter().zip(bodies) {
            frame
                .record(
                    *id,
                    &bones(body.path.map_or(body.feet, |path| path(t as f32))),
                    body.state,
                )
                .unwrap();
        }
        if let (Some(id), Some(path)) = (door_id, door) {
            let at = Vec3::new(path(t as f32), 1.5, -5.0);
            frame
                .record_rigid(
                    id,
                    BoneTransform::from_translation(at),
                    EntityState::default(),
                )
                .unwrap();
        }
    }
    let mut validator = Validator::new(RuleSet::from_toml(RULES).unwrap());
    let eye = Participant {
        team: 1,
        aim_bone: 1,
        aim_forward: Vec3::NEG_Z,
    };
    validator.register(shooter, eye);
    for (id, body) in ids.iter().zip(bodies) {
        validator.register(
            *id,
            Participant {
                team: body.team,
                ..eye
            },
        );
    }
    validator
        .set_timing(
            shooter,
            ClientTiming {
                srtt: 0.1,
                rttvar: 0.005,
                interp_delay: 0.1,
            },
        )
        .unwrap();
    Range {
        history,
        validator,
        shooter,
        bodies: ids,
        walls: wall_ids,
    }
}

/// One layer of a claim, by index into the range's walls and bodies.
#[derive(Clone, Copy)]
pub(crate) enum L {
    /// The wall, named by its id.
    Wall(usize),
    /// A wall, unnamed.
    AnyWall,
    /// The body, any hitbox.
    Body(usize),
    /// The body, a hitbox it does not have.
    BadHitbox(usize),
}

impl Range {
    /// The sniper's shot down the line as drawn at [`RENDER`], claiming `layers`.
    pub(crate) fn claim(&self, layers: &[L]) -> PenetrationClaim {
        let mut claimed = [None; MAX_PENETRATION_LAYERS];
        for (slot, layer) in claimed.iter_mut().zip(layers) {
            *slot = Some(match *layer {
                L::Wall(i) => ClaimedLayer::Wall {
                    piece: Some(self.walls[i]),
                },
                L::AnyWall => ClaimedLayer::Wall { piece: None },
                L::Body(i) => ClaimedLayer::Body {
                    target: self.bodies[i],
                    hitbox: None,
                },
                L::BadHitbox(i) => ClaimedLayer::Body {
                    target: self.bodies[i],
                    hitbox: Some(HitboxId(5)),
                },
            });
        }
        PenetrationClaim {
            shooter: self.shooter,
            weapon: SNIPER,
            seq: 0,
            render_time: RenderTime::Time(RENDER),
            origin: EYE,
            direction: Vec3::NEG_Z,
            layers: claimed,
        }
    }

    /// `claim` judged on a fresh copy of the validator.
    pub(crate) fn fire(&self, claim: &PenetrationClaim) -> PenetrationVerdict {
        self.validator
            .clone()
            .validate_penetration(&self.history, None, claim, ARRIVAL)
    }
}

/// What a row expects.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Confirmed, each claimed body with this damage multiplier, in claim order (walls
    /// left out).
    Confirmed(&'static [f32]),
    /// Refused for this reason.
    Refused(PenetrationReason),
}

/// The bodies a verdict hit and their damage multipliers, in claim order.
fn damages(verdict: &PenetrationVerdict) -> Vec<f32> {
    verdict
        .layers
        .iter()
        .filter_map(|layer| match layer {
            PenetrationLayerResult::Hit {
                damage_multiplier, ..
            } => Some(*damage_multiplier),
            _ => None,
        })
        .collect()
}

#[track_caller]
fn check(name: &str, range: &Range, layers: &[L], expect: Expect) -> PenetrationVerdict {
    let verdict = range.fire(&range.claim(layers));
    match expect {
        Expect::Confirmed(want) => {
            assert_eq!(
                verdict.outcome,
                PenetrationOutcome::Confirmed {
                    bodies: want.len() as u8
                },
                "{name}: {verdict:#?}"
            );
            let got = damages(&verdict);
            assert_eq!(got.len(), want.len(), "{name}: {got:?}");
            for (got, want) in got.iter().zip(want) {
                assert!(
                    (got - want).abs() < 1e-5,
                    "{name}: damage {got}, want {want}"
                );
            }
        }
        Expect::Refused(reason) => {
            assert_eq!(
                verdict.outcome,
                PenetrationOutcome::Disproved { reason },
                "{name}: {verdict:#?}"
            );
            // The layer the claim was refused on says so.
            assert!(
                verdict
                    .layers
                    .contains(&PenetrationLayerResult::Unmatched { reason }),
                "{name}: {verdict:#?}"
            );
        }
    }
    verdict
}

/// A door that stood across the line until 0.6 s, then slid 3 m aside.
fn opened(t: f32) -> f32 {
    if t <= 0.6 { 0.0 } else { 3.0 }
}

/// A door that stood aside until 0.6 s, then slid across the line.
fn closed(t: f32) -> f32 {
    if t <= 0.6 { 3.0 } else { 0.0 }
}

/// On the line until 0.6 s, then 3 m to the right.
fn left_the_line(t: f32) -> Vec3 {
    Vec3::new(if t <= 0.6 { 0.0 } else { 3.0 }, 0.0, -10.0)
}

/// 3 m to the right until 0.6 s, then on the line.
fn stepped_in(t: f32) -> Vec3 {
    Vec3::new(if t <= 0.6 { 3.0 } else { 0.0 }, 0.0, -10.0)
}

/// Every layer costs flesh 0.3 a body, wood 0.025 per 10 cm, concrete 1.0 per metre; the
/// round starts with 1.0.
#[test]
fn the_claimed_chain_is_judged_against_the_rewound_walk() {
    use PenetrationReason::{PenetrationBeyondPower as Beyond, PenetrationOffChain as Off};
    let wood = [Wall(5.0, 0.1, WOOD)];
    let concrete = [Wall(5.0, 1.5, CONCRETE)];
    let thin_concrete = [Wall(5.0, 0.2, CONCRETE)];
    let one = [at(10.0)];
    let two = [at(8.0), at(12.0)];
    let five = [at(6.0), at(8.0), at(10.0), at(12.0), at(14.0)];
    let moved = |path: Path| {
        [Body {
            path: Some(path),
            ..at(10.0)
        }]
    };
    #[rustfmt::skip]
    let rows: Vec<(&str, Range, Vec<L>, Expect)> = vec![
        // Through 10 cm of wood (0.025 of the power) into the body behind: one layer
        // crossed, damage x 0.75.
        ("thin wood, wall named", range(&wood, &one, None), vec![L::Wall(0), L::Body(0)], Expect::Confirmed(&[W75])),
        // The client need not name the wall: the server counts it all the same.
        ("thin wood, wall left out", range(&wood, &one, None), vec![L::Body(0)], Expect::Confirmed(&[W75])),
        ("thin wood, any wall", range(&wood, &one, None), vec![L::AnyWall, L::Body(0)], Expect::Confirmed(&[W75])),
        // 20 cm of concrete costs 0.2: crossed.
        ("thin concrete", range(&thin_concrete, &one, None), vec![L::Wall(0), L::Body(0)], Expect::Confirmed(&[W75])),
        // 1.5 m of concrete costs 1.5: the round stops at its face.
        ("thick concrete", range(&concrete, &one, None), vec![L::Wall(0), L::Body(0)], Expect::Refused(Beyond)),
        ("thick concrete, wall left out", range(&concrete, &one, None), vec![L::Body(0)], Expect::Refused(Beyond)),
        // Claiming only the wall it struck is honest: no body.
        ("thick concrete, the wall alone", range(&concrete, &one, None), vec![L::Wall(0)], Expect::Confirmed(&[])),
        // Two bodies in a row: the first at full damage, the second after one layer.
        ("two in a row", range(&[], &two, None), vec![L::Body(0), L::Body(1)], Expect::Confirmed(&[TORSO, W75])),
        ("the second alone", range(&[], &two, None), vec![L::Body(1)], Expect::Confirmed(&[W75])),
        ("through wood then two", range(&wood, &two, None), vec![L::Wall(0), L::Body(0), L::Body(1)], Expect::Confirmed(&[W75, W56])),
        ("out of order", range(&[], &two, None), vec![L::Body(1), L::Body(0)], Expect::Refused(Off)),
        ("one body twice", range(&[], &two, None), vec![L::Body(0), L::Body(0)], Expect::Refused(Off)),
        ("a hitbox it does not have", range(&[], &two, None), vec![L::BadHitbox(0)], Expect::Refused(Off)),
        // Five bodies, 0.3 each: the fourth is where the power runs out (the round lodges,
        // still a hit), the fifth is beyond it.
        ("lodged in the fourth", range(&[], &five, None), vec![L::Body(0), L::Body(1), L::Body(2), L::Body(3)], Expect::Confirmed(&[TORSO, W75, W56, W42])),
        ("the fifth, beyond the power", range(&[], &five, None), vec![L::Body(0), L::Body(1), L::Body(2), L::Body(3), L::Body(4)], Expect::Refused(Beyond)),
        // The same disagreements where the round ran out of power: still off the
        // chain, not beyond it (the walk met those bodies).
        ("lodged, out of order", range(&[], &five, None), vec![L::Body(1), L::Body(0)], Expect::Refused(Off)),
        ("lodged, one body twice", range(&[], &five, None), vec![L::Body(0), L::Body(0)], Expect::Refused(Off)),
        ("lodged, a hitbox it does not have", range(&[], &five, None), vec![L::BadHitbox(3)], Expect::Refused(Off)),
        // A wall claimed where there is none, a body off the line.
        ("a wall that is not there", range(&[], &one, None), vec![L::AnyWall, L::Body(0)], Expect::Refused(Off)),
        ("a body off the line", range(&[], &[Body { feet: Vec3::new(5.0, 0.0, -10.0), ..at(10.0) }], None), vec![L::Body(0)], Expect::Refused(Off)),
        // A door (a blocker) stops the round wherever it stood as the shooter saw it.
        ("door closed then, open now", range(&[], &one, Some(opened)), vec![L::Body(0)], Expect::Refused(Beyond)),
        ("door open then, closed now", range(&[], &one, Some(closed)), vec![L::Body(0)], Expect::Confirmed(&[TORSO])),
        // The walk is at the rewound time: a target that moved since.
        ("on the line then, gone now", range(&wood, &moved(left_the_line), None), vec![L::Wall(0), L::Body(0)], Expect::Confirmed(&[W75])),
        ("off the line then, on it now", range(&wood, &moved(stepped_in), None), vec![L::Wall(0), L::Body(0)], Expect::Refused(Off)),
    ];
    for (name, range, layers, expect) in &rows {
        check(name, range, layers, *expect);
    }
}

#[test]
fn the_verdict_breaks_the_chain_down_and_folds_one_verdict_per_body() {
    let r = range(&[Wall(5.0, 0.1, WOOD)], &[at(8.0), at(12.0)], None);
    let verdict = r.fire(&r.claim(&[L::Wall(0), L::Body(0), L::Body(1)]));
    let PenetrationLayerResult::Wall {
        piece,
        crossed,
        entry,
        exit,
    } = verdict.layers[0]
    else {
        panic!("{verdict:#?}")
    };
    assert_eq!((piece, crossed), (r.walls[0], true));
    assert!(
        (entry - 4.95).abs() < 1e-4 && (exit - 5.05).abs() < 1e-4,
        "{entry} {exit}"
    );
    let PenetrationLayerResult::Hit {
        target,
        distance,
        lodged,
        ..
    } = verdict.layers[1]
    else {
        panic!("{verdict:#?}")
    };
    assert_eq!((target, lodged), (r.bodies[0], false));
    assert!((distance - 7.7).abs() < 1e-4, "{distance}");
    assert_eq!(verdict.layers[3], PenetrationLayerResult::NotTraced);
    // The walk's end: its reach, with the power left (1 - 0.025 - 0.3 - 0.3).
    let traced = verdict.traced.expect("walked");
    assert!((traced.power_left - 0.375).abs() < 1e-4, "{traced:?}");
    assert!((verdict.basis.time_used.unwrap() - RENDER).abs() < 1e-9);
    assert_eq!(
        verdict.basis.sample,
        Some(lagcomp::SampleKind::Exact {
            tick: lagcomp::Tick(32)
        })
    );
    // The chain a client's own walk met, as it would claim it: the same verdict (every
    // body named at its first hitbox).
    let mut chain = PenetrationChain::new();
    let rules = r
        .validator
        .rules()
        .weapon(SNIPER)
        .unwrap()
        .penetration_rules()
        .unwrap();
    r.history
        .query(RewindTarget::at(RENDER))
        .ignore(&[r.shooter])
        .penetrate(
            &Ray::new(EYE, Vec3::NEG_Z, 100.0).unwrap(),
            &rules,
            &mut chain,
        )
        .unwrap();
    let walked = PenetrationClaim {
        layers: PenetrationClaim::layers_walked(&chain),
        ..r.claim(&[])
    };
    assert_eq!(
        &walked.layers[..4],
        &[
            Some(ClaimedLayer::Wall {
                piece: Some(r.walls[0])
            }),
            Some(ClaimedLayer::Body {
                target: r.bodies[0],
                hitbox: Some(HitboxId(0))
            }),
            Some(ClaimedLayer::Body {
                target: r.bodies[1],
                hitbox: Some(HitboxId(0))
            }),
            None,
        ]
    );
    let again = r.fire(&walked);
    assert_eq!(
        (again.outcome, again.layers),
        (verdict.outcome, verdict.layers)
    );
    // The verdict survives JSON (the audit tools' form), per-layer results and all.
    let json = serde_json::to_string(&verdict).unwrap();
    assert!(json.contains(r#""result":"wall""#), "{json}");
    let back: PenetrationVerdict = serde_json::from_str(&json).unwrap();
    assert_eq!(back, verdict);
    // One confirmed verdict per body, with the layer damage in its multiplier.
    let folded: Vec<_> = verdict.verdicts().collect();
    assert_eq!(folded.len(), 2);
    for (v, (body, damage)) in folded.iter().zip([
        (r.bodies[0], TORSO * 0.75),
        (r.bodies[1], TORSO * 0.75 * 0.75),
    ]) {
        assert!(
            matches!(v.outcome, VerdictOutcome::Confirmed(hit) if hit.target == body && (hit.damage_multiplier - damage).abs() < 1e-5),
            "{v:?}"
        );
    }
    // A refused claim folds into one rejection with the reason's code.
    let verdict = r.fire(&r.claim(&[L::Body(1), L::Body(0)]));
    let folded: Vec<_> = verdict.verdicts().collect();
    assert_eq!(folded.len(), 1);
    let reason = folded[0].outcome.reason().unwrap();
    assert_eq!(
        (reason, reason.code(), reason.name()),
        (
            RejectReason::PenetrationOffChain,
            1202,
            "penetration_off_chain"
        )
    );
    // A claim naming no body is a miss.
    let verdict = r.fire(&r.claim(&[L::Wall(0)]));
    let folded: Vec<_> = verdict.verdicts().collect();
    assert_eq!(folded.len(), 1);
    assert_eq!(folded[0].outcome, VerdictOutcome::Miss);
}

#[test]
fn claimed_bodies_are_checked_as_hitscan_targets_and_spared_bodies_take_no_damage() {
    let teammate = Body { team: 1, ..at(8.0) };
    let r = range(&[], &[teammate, at(12.0)], None);
    // Through a teammate, claiming only the enemy behind: the teammate still counts a
    // layer.
    check(
        "through a teammate",
        &r,
        &[L::Body(1)],
        Expect::Confirmed(&[TORSO * 0.75]),
    );
    // Claiming the teammate refuses the whole claim, as a pellet on a teammate does.
    let verdict = r.fire(&r.claim(&[L::Body(0), L::Body(1)]));
    assert_eq!(
        verdict.outcome,
        PenetrationOutcome::Rejected {
            reason: RejectReason::FriendlyFire
        }
    );
    assert!(
        verdict
            .layers
            .iter()
            .all(|l| *l == PenetrationLayerResult::NotTraced)
    );
    // A spawn-protected body in front is spared; the one behind is hit through it.
    let protected = Body {
        state: EntityState {
            invulnerable: true,
            ..at(8.0).state
        },
        ..at(8.0)
    };
    let r = range(&[], &[protected, at(12.0)], None);
    let verdict = check(
        "through a protected body",
        &r,
        &[L::Body(0), L::Body(1)],
        Expect::Confirmed(&[TORSO * 0.75]),
    );
    assert!(
        matches!(verdict.layers[0], PenetrationLayerResult::Spared { target, .. } if target == r.bodies[0]),
        "{verdict:#?}"
    );
    let folded: Vec<_> = verdict.verdicts().collect();
    assert!(
        matches!(folded[0].outcome, VerdictOutcome::Refused { target, .. } if target == r.bodies[0])
    );
    assert!(
        matches!(folded[1].outcome, VerdictOutcome::Confirmed(hit) if hit.target == r.bodies[1])
    );
}

#[test]
fn a_weapon_without_a_penetration_table_is_refused_before_the_shot_counts() {
    let r = range(&[], &[at(10.0)], None);
    let mut validator = r.validator.clone();
    let claim = PenetrationClaim {
        weapon: RIFLE,
        ..r.claim(&[L::Body(0)])
    };
    let verdict = validator.validate_penetration(&r.history, None, &claim, ARRIVAL);
    assert_eq!(
        verdict.outcome,
        PenetrationOutcome::Rejected {
            reason: RejectReason::WrongWeaponKind
        }
    );
    // The sequence number was not used up: the same shot with the sniper stands.
    let verdict =
        validator.validate_penetration(&r.history, None, &r.claim(&[L::Body(0)]), ARRIVAL);
    assert_eq!(verdict.outcome.label(), "confirmed");
    // A weapon of unknown id is unknown.
    let claim = PenetrationClaim {
        weapon: WeaponId(77),
        seq: 1,
        ..claim
    };
    let verdict = validator.validate_penetration(&r.history, None, &claim, ARRIVAL + 1.0);
    assert_eq!(verdict.outcome.label(), "unknown_weapon");
}

/// A server's own world: one slab across the line, `thick` metres of `material` whose
/// near face is 5 m out, for shots down -Z.
struct Slab {
    thick: f32,
    material: u16,
}

impl Slab {
    const ID: u64 = 1 << 40;

    /// Where a ray down -Z meets the face at depth `z`, metres along it.
    fn at(ray: &Ray, z: f32) -> Option<f32> {
        (ray.dir().z < 0.0).then(|| (ray.origin().z + z) / -ray.dir().z)
    }
}

impl StaticWorld for Slab {
    fn cast_ray(&self, ray: &Ray, layers: u32, time: f64) -> Option<WorldHit> {
        self.cast_sphere(ray, 0.0, layers, time)
    }

    fn cast_sphere(&self, ray: &Ray, radius: f32, _layers: u32, _time: f64) -> Option<WorldHit> {
        let distance = Self::at(ray, 5.0 - radius)?;
        (0.0..=ray.max_distance())
            .contains(&distance)
            .then_some(WorldHit {
                id: Self::ID,
                distance,
                normal: Vec3::Z,
            })
    }

    fn material(&self, _id: u64) -> MaterialId {
        MaterialId(self.material)
    }

    fn exit_distance(
        &self,
        _id: u64,
        ray: &Ray,
        entry: f32,
        max_thickness: f32,
        _layers: u32,
        _time: f64,
    ) -> Option<f32> {
        Self::at(ray, 5.0 + self.thick).filter(|exit| exit - entry <= max_thickness)
    }
}

#[test]
fn a_server_world_wall_is_walked_through_by_its_material() {
    let r = range(&[], &[at(10.0)], None);
    let mut claim = r.claim(&[]);
    claim.layers[0] = Some(ClaimedLayer::Wall {
        piece: Some(StaticId(Slab::ID)),
    });
    claim.layers[1] = Some(ClaimedLayer::Body {
        target: r.bodies[0],
        hitbox: None,
    });
    let fire = |world: &Slab| {
        r.validator
            .clone()
            .validate_penetration(&r.history, Some(world), &claim, ARRIVAL)
    };
    // 10 cm of wood: crossed, the body behind hit after one layer.
    let verdict = fire(&Slab {
        thick: 0.1,
        material: WOOD,
    });
    assert_eq!(damages(&verdict), [W75], "{verdict:#?}");
    assert!(
        matches!(verdict.layers[0], PenetrationLayerResult::Wall { piece, crossed: true, .. } if piece == StaticId(Slab::ID))
    );
    // 1.5 m of concrete: the round stops at its face, the body is beyond its power.
    let verdict = fire(&Slab {
        thick: 1.5,
        material: CONCRETE,
    });
    assert_eq!(
        verdict.outcome,
        PenetrationOutcome::Disproved {
            reason: PenetrationReason::PenetrationBeyondPower
        }
    );
    // Without the server's world there is no wall to claim.
    let verdict = r
        .validator
        .clone()
        .validate_penetration(&r.history, None, &claim, ARRIVAL);
    assert_eq!(
        verdict.outcome,
        PenetrationOutcome::Disproved {
            reason: PenetrationReason::PenetrationOffChain
        }
    );
}

/// The sniper's rules with `table` as its penetration table.
fn sniper_with(table: &str) -> String {
    format!(
        "[weapons.w]\nid = 3\nmax_range = 100.0\nmin_interval = 1.0\naim_tolerance_deg = 5.0\n\
         origin_tolerance = 0.5\nhit_leeway = 1.25\nhit_leeway_min = 0.05\nmax_rewind = 0.35\n\
         penetration = {{ {table} }}\n"
    )
}

#[test]
fn every_penetration_number_is_range_checked_with_its_field_named() {
    let cases = [
        ("power = -1.0, costs = [1.0]", "weapons.w.penetration.power"),
        ("power = nan, costs = [1.0]", "weapons.w.penetration.power"),
        ("power = 1e5, costs = [1.0]", "weapons.w.penetration.power"),
        ("power = 1.0, costs = []", "weapons.w.penetration.costs"),
        (
            "power = 1.0, costs = [1.0, -0.5]",
            "weapons.w.penetration.costs[1]",
        ),
        (
            "power = 1.0, costs = [nan]",
            "weapons.w.penetration.costs[0]",
        ),
        (
            "power = 1.0, costs = [1.0], layer_damage = 1.5",
            "weapons.w.penetration.layer_damage",
        ),
        (
            "power = 1.0, costs = [1.0], max_layers = 0",
            "weapons.w.penetration.max_layers",
        ),
        (
            "power = 1.0, costs = [1.0], max_layers = 9",
            "weapons.w.penetration.max_layers",
        ),
        (
            "power = 1.0, costs = [1.0], body_material = 1",
            "weapons.w.penetration.body_material",
        ),
        (
            "power = 1.0, costs = [1.0, 2.0], zones = { head = 2 }",
            "weapons.w.penetration.zones.head",
        ),
        (
            "power = 1.0, costs = [1.0], zones = { custom = { 7 = 3 } }",
            "weapons.w.penetration.zones.custom.7",
        ),
    ];
    for (table, field) in cases {
        let e = RuleSet::from_toml(&sniper_with(table)).unwrap_err();
        assert!(matches!(e, RulesError::OutOfRange { .. }), "{table}: {e}");
        assert!(
            e.to_string().starts_with(&format!("{field}:")),
            "{table}: {e}"
        );
    }
    // A thick shot has no line to walk.
    let e = RuleSet::from_toml(&format!(
        "{}radius = 0.1\n",
        sniper_with("power = 1.0, costs = [1.0]")
    ))
    .unwrap_err();
    assert!(e.to_string().starts_with("weapons.w.radius:"), "{e}");
    // Unknown fields are refused, in the table and in its zones.
    for table in [
        "power = 1.0, costs = [1.0], armour = 2.0",
        "power = 1.0, costs = [1.0], zones = { neck = 0 }",
    ] {
        let e = RuleSet::from_toml(&sniper_with(table)).unwrap_err();
        assert!(matches!(e, RulesError::Parse(_)), "{table}: {e}");
    }
    // Only a hitscan weapon penetrates.
    let e = RuleSet::from_toml(&format!(
        "{}kind = \"pellets\"\npellets = {{ count = 8, half_angle_deg = 4.0 }}\n",
        sniper_with("power = 1.0, costs = [1.0]")
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "weapons.w: kind pellets has no use for a penetration table"
    );
    // `inf` is a material never crossed; the rules survive a file.
    let rules = RuleSet::from_toml(&sniper_with(
        "power = 1.0, costs = [inf, 0.25], zones = { head = 1 }",
    ))
    .unwrap();
    let sniper = rules.weapon(WeaponId(3)).unwrap();
    let built = sniper.penetration_rules().unwrap();
    assert_eq!(built.cost_per_metre(MaterialId(0)), f32::INFINITY);
    assert_eq!(built.zone_material(Zone::Head), MaterialId(1));
    assert_eq!(built.zone_material(Zone::Torso), MaterialId(0));
    assert_eq!(RuleSet::from_toml(&rules.to_toml()).unwrap(), rules);
    // Absent: no loss per layer, as many layers as a claim lists.
    let table = sniper.penetration.as_ref().unwrap();
    assert_eq!(
        (table.layer_damage, table.max_layers),
        (1.0, MAX_PENETRATION_LAYERS as u16)
    );
    // A rifle without the table does not penetrate.
    let rifle = RuleSet::from_toml(RULES).unwrap();
    assert!(rifle.weapon(RIFLE).unwrap().penetration_rules().is_none());
}

/// The thin wooden wall's honest twin: the body behind it, confirmed.
#[track_caller]
fn through_wood_confirmed() {
    let r = range(&[Wall(5.0, 0.1, WOOD)], &[at(10.0)], None);
    check(
        "honest twin",
        &r,
        &[L::Wall(0), L::Body(0)],
        Expect::Confirmed(&[TORSO * 0.75]),
    );
}

/// The reason the one verdict a refused claim folds into carries.
fn folded_reason(verdict: &PenetrationVerdict) -> RejectReason {
    let folded: Vec<_> = verdict.verdicts().collect();
    assert_eq!(folded.len(), 1, "{folded:?}");
    folded[0].outcome.reason().expect("rejected")
}

/// The same shot through 1.5 m of concrete (its twin: through 10 cm of wood).
pub(crate) fn penetration_beyond_power() -> RejectReason {
    through_wood_confirmed();
    let r = range(&[Wall(5.0, 1.5, CONCRETE)], &[at(10.0)], None);
    folded_reason(&r.fire(&r.claim(&[L::Wall(0), L::Body(0)])))
}

/// The body behind the wood claimed, with a wall the round never met in front of the
/// wall it did (its twin: the chain as walked).
pub(crate) fn penetration_off_chain() -> RejectReason {
    through_wood_confirmed();
    let r = range(&[Wall(5.0, 0.1, WOOD)], &[at(10.0)], None);
    folded_reason(&r.fire(&r.claim(&[L::Wall(0), L::AnyWall, L::Body(0)])))
}

/// The honest claim through wood into a body, for the allocation count.
pub(crate) fn through_wood() -> (Range, PenetrationClaim) {
    let r = range(&[Wall(5.0, 0.1, WOOD)], &[at(8.0), at(12.0)], None);
    let claim = r.claim(&[L::Wall(0), L::Body(0), L::Body(1)]);
    (r, claim)
}

#[test]
fn a_penetration_claim_through_the_one_entry_point_is_judged_as_by_its_own() {
    let (range, claim) = through_wood();
    let any = range.validator.clone().validate_any(
        &range.history,
        None,
        &WeaponClaim::Penetration(claim),
        ARRIVAL,
    );
    assert_eq!(any, WeaponVerdict::Penetration(range.fire(&claim)));
    assert_eq!(any.kind(), "penetration");
    assert!(any.verdicts().eq(range.fire(&claim).verdicts()));
    let json = serde_json::to_string(&WeaponClaim::Penetration(claim)).unwrap();
    assert!(json.contains("\"kind\":\"penetration\""), "{json}");
}
