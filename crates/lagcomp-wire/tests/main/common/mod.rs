//! Strategies for arbitrary valid messages, shared by the test binaries.

use lagcomp::projectile::ClaimedTarget;
use lagcomp::spread::MAX_PELLETS;
use lagcomp::{
    Axis, BoneTransform, EntityId, HitboxId, PlacedShape, Pose, Quat, Shape, ShapeSweep, StaticId,
    SweepPath, Swing, Tick, Vec3,
};
use lagcomp_net::{Ping, Pong};
use lagcomp_validate::pellets::{PelletClaim, PelletTarget};
use lagcomp_validate::projectile::ProjectileHitClaim;
use lagcomp_validate::splash::{MAX_VICTIMS, SplashClaim};
use lagcomp_validate::{
    ClaimedHit, MeleeClaim, Refusal, RejectReason, RenderTime, ShotClaim, WeaponClaim, WeaponId,
};
use lagcomp_wire::{
    ClientMessage, EntityFrame, EntityPose, HumanoidStance, Input, MAX_SHOTS_PER_INPUT,
    MAX_VERDICTS_PER_MESSAGE, ProbeReply, RttProbe, ServerMessage, SnapshotPart, Verdicts, Welcome,
    WireOutcome, WireVerdict,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

/// Any finite f32, with the awkward ones (signed zeros, subnormals, extremes) often.
pub(crate) fn f32_finite() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => -1000.0_f32..1000.0,
        2 => any::<u32>()
            .prop_map(f32::from_bits)
            .prop_filter("finite", |v| v.is_finite()),
        1 => prop::sample::select(vec![
            0.0,
            -0.0,
            1.0,
            f32::from_bits(1),
            -f32::from_bits(1),
            f32::MIN_POSITIVE,
            f32::MAX,
            f32::MIN,
            f32::EPSILON,
        ]),
    ]
}

/// Any finite f64, the same way.
pub(crate) fn f64_finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => -1e6_f64..1e6,
        2 => any::<u64>()
            .prop_map(f64::from_bits)
            .prop_filter("finite", |v| v.is_finite()),
        1 => prop::sample::select(vec![
            0.0,
            -0.0,
            f64::from_bits(1),
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
        ]),
    ]
}

pub(crate) fn vec3() -> impl Strategy<Value = Vec3> {
    (f32_finite(), f32_finite(), f32_finite()).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

pub(crate) fn quat() -> impl Strategy<Value = Quat> {
    (f32_finite(), f32_finite(), f32_finite(), f32_finite())
        .prop_map(|(x, y, z, w)| Quat::from_xyzw(x, y, z, w))
}

pub(crate) fn entity_id() -> impl Strategy<Value = EntityId> + Clone {
    any::<u64>().prop_map(EntityId::from_bits)
}

pub(crate) fn render_time() -> impl Strategy<Value = RenderTime> {
    prop_oneof![
        f64_finite().prop_map(RenderTime::Time),
        (any::<u32>(), any::<u32>(), f32_finite()).prop_map(|(from, to, fraction)| {
            RenderTime::Ticks {
                from: Tick(from),
                to: Tick(to),
                fraction,
            }
        }),
        (any::<u32>(), f64_finite()).prop_map(|(from, by)| RenderTime::Extrapolated {
            from: Tick(from),
            by,
        }),
    ]
}

pub(crate) fn claimed_hit() -> impl Strategy<Value = ClaimedHit> {
    (
        entity_id(),
        proptest::option::of(any::<u16>().prop_map(HitboxId)),
        proptest::option::of(vec3()),
    )
        .prop_map(|(target, hitbox, point)| ClaimedHit {
            target,
            hitbox,
            point,
        })
}

pub(crate) fn shot_claim() -> impl Strategy<Value = ShotClaim> {
    (
        entity_id(),
        any::<u16>(),
        any::<u32>(),
        render_time(),
        vec3(),
        vec3(),
        proptest::option::of(claimed_hit()),
    )
        .prop_map(
            |(shooter, weapon, seq, render_time, origin, direction, hit)| ShotClaim {
                shooter,
                weapon: WeaponId(weapon),
                seq,
                render_time,
                origin,
                direction,
                hit,
            },
        )
}

/// The head every kind's claim starts with: shooter, weapon, seq, render time, origin,
/// direction.
type Head = (EntityId, WeaponId, u32, RenderTime, Vec3, Vec3);

fn head() -> impl Strategy<Value = Head> {
    (
        entity_id(),
        any::<u16>().prop_map(WeaponId),
        any::<u32>(),
        render_time(),
        vec3(),
        vec3(),
    )
}

/// A fixed array of `N` slots, each filled with the given odds.
fn slots<T: std::fmt::Debug + Copy, const N: usize>(
    item: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = [Option<T>; N]> {
    prop::collection::vec(proptest::option::weighted(0.3, item), N).prop_map(|items| {
        let mut out = [None; N];
        out.copy_from_slice(&items);
        out
    })
}

/// A valid swept blade: any box, sphere or capsule of size, moved along a line or
/// swung about a pivot, with its direction or axis in the form that crosses the wire bit
/// for bit (see `melee_sweeps_cross_in_their_settled_form` for the others).
fn shape_sweep() -> impl Strategy<Value = ShapeSweep> {
    let size = 0.01_f32..2.0;
    let shape = prop_oneof![
        size.clone().prop_map(Shape::sphere),
        (size.clone(), size.clone(), size.clone())
            .prop_map(|(x, y, z)| Shape::cuboid(Vec3::new(x, y, z))),
        (size.clone(), size, 0..3_u8).prop_map(|(r, h, axis)| Shape::capsule(
            r,
            h,
            [Axis::X, Axis::Y, Axis::Z][usize::from(axis)]
        )),
    ];
    let place = (-100.0_f32..100.0, -100.0_f32..100.0, -100.0_f32..100.0)
        .prop_map(|(x, y, z)| Vec3::new(x, y, z));
    let unit = (-1.0_f32..1.0, -1.0_f32..1.0, -1.0_f32..1.0)
        .prop_map(|(x, y, z)| Vec3::new(x, y, z))
        .prop_filter("a direction", |v| v.length() > 0.1);
    (
        shape,
        place.clone(),
        unit.clone(),
        any::<bool>(),
        place,
        unit,
        -6.0_f32..6.0,
    )
        .prop_map(|(shape, at, dir, line, pivot, axis, amount)| {
            let start = PlacedShape::new(Pose::from_translation(at), shape);
            // Renormalized until it maps back to itself in two steps, as the encoder
            // carries it (`weapons::settled`).
            let bits = |v: Vec3| v.to_array().map(f32::to_bits);
            let settle = |mut v: Vec3, make: &dyn Fn(Vec3) -> Vec3| {
                for _ in 0..8 {
                    v = make(v);
                    if bits(make(make(v))) == bits(v) {
                        break;
                    }
                }
                v
            };
            let distance = amount.abs() + 0.01;
            if line {
                let along = |d: Vec3| match ShapeSweep::line(start, d, distance).unwrap().path() {
                    SweepPath::Line { direction, .. } => direction,
                    SweepPath::Arc(_) => unreachable!(),
                };
                ShapeSweep::line(start, settle(dir, &along), distance)
            } else {
                let about = |a: Vec3| Swing::new(pivot, a, amount).unwrap().axis();
                ShapeSweep::arc(
                    start,
                    Swing::new(pivot, settle(axis, &about), amount).unwrap(),
                )
            }
            .expect("a valid sweep")
        })
}

/// A claim of any weapon kind, every array partly filled.
pub(crate) fn weapon_claim() -> impl Strategy<Value = WeaponClaim> {
    let target = prop_oneof![
        (entity_id(), any::<u16>()).prop_map(|(entity, hitbox)| ClaimedTarget::Entity {
            entity,
            hitbox: HitboxId(hitbox),
        }),
        any::<u64>().prop_map(|piece| ClaimedTarget::Static(StaticId(piece))),
    ];
    let pellet = (
        entity_id(),
        proptest::option::of(any::<u16>().prop_map(HitboxId)),
    )
        .prop_map(|(target, hitbox)| PelletTarget { target, hitbox });
    prop_oneof![
        shot_claim().prop_map(WeaponClaim::Hitscan),
        (head(), any::<u32>(), target, vec3()).prop_map(
            |((shooter, weapon, seq, render_time, origin, direction), step, target, position)| {
                WeaponClaim::Projectile(ProjectileHitClaim {
                    shooter,
                    weapon,
                    seq,
                    render_time,
                    origin,
                    direction,
                    step,
                    target,
                    position,
                })
            }
        ),
        (
            head(),
            any::<u64>(),
            0..=MAX_PELLETS as u8,
            slots::<_, MAX_PELLETS>(pellet)
        )
            .prop_map(
                |((shooter, weapon, seq, render_time, origin, direction), seed, pellets, hits)| {
                    WeaponClaim::Pellets(PelletClaim {
                        shooter,
                        weapon,
                        seq,
                        render_time,
                        origin,
                        direction,
                        seed,
                        pellets,
                        hits,
                    })
                }
            ),
        (head(), shape_sweep(), proptest::option::of(claimed_hit())).prop_map(
            |((shooter, weapon, seq, render_time, eye, aim), sweep, hit)| {
                WeaponClaim::Melee(MeleeClaim {
                    shooter,
                    weapon,
                    seq,
                    render_time,
                    eye,
                    aim,
                    sweep,
                    hit,
                })
            }
        ),
        (head(), vec3(), slots::<_, MAX_VICTIMS>(entity_id())).prop_map(
            |((shooter, weapon, seq, render_time, origin, direction), blast, victims)| {
                WeaponClaim::Splash(SplashClaim {
                    shooter,
                    weapon,
                    seq,
                    render_time,
                    origin,
                    direction,
                    blast,
                    victims,
                })
            }
        ),
    ]
}

pub(crate) fn input() -> impl Strategy<Value = Input> {
    (
        any::<u32>(),
        proptest::option::of((any::<u32>(), f64_finite())),
        proptest::option::of((any::<u32>(), f64_finite())),
        quat(),
        f64_finite(),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u32>()),
        prop::collection::vec((any::<u32>(), shot_claim()), 0..=MAX_SHOTS_PER_INPUT),
        prop::collection::vec((any::<u32>(), weapon_claim()), 0..=MAX_SHOTS_PER_INPUT),
    )
        .prop_map(
            |(
                frame,
                ping,
                reply,
                aim,
                interp_delay,
                newest_tick,
                verdicts_received,
                shots,
                weapon_shots,
            )| {
                Input {
                    frame,
                    ping: ping.map(|(id, client_send)| Ping { id, client_send }),
                    probe_reply: reply.map(|(id, client_time)| ProbeReply { id, client_time }),
                    aim,
                    interp_delay,
                    newest_tick: newest_tick.map(Tick),
                    verdicts_received,
                    shots,
                    weapon_shots,
                }
            },
        )
}

pub(crate) fn client_message() -> impl Strategy<Value = ClientMessage> {
    input().prop_map(ClientMessage::Input)
}

pub(crate) fn bone(scaled: bool) -> BoxedStrategy<BoneTransform> {
    let scale = if scaled {
        vec3().boxed()
    } else {
        Just(Vec3::ONE).boxed()
    };
    (vec3(), quat(), scale)
        .prop_map(|(translation, rotation, scale)| BoneTransform {
            translation,
            rotation,
            scale,
        })
        .boxed()
}

pub(crate) fn entity_frame() -> impl Strategy<Value = EntityFrame> {
    (
        entity_id(),
        any::<[bool; 2]>(),
        proptest::option::of(any::<u32>().prop_map(Tick)),
        proptest::option::of(any::<u32>().prop_map(Tick)),
        vec3(),
        entity_pose(),
    )
        .prop_map(
            |(id, [alive, protected], last_teleport, in_view_since, velocity, pose)| EntityFrame {
                id,
                alive,
                last_teleport,
                protected,
                in_view_since,
                velocity,
                pose,
            },
        )
}

/// Bones (scaled or not, any count up to 24) or a humanoid's stance (any finite numbers:
/// the wire carries them as they are).
pub(crate) fn entity_pose() -> impl Strategy<Value = EntityPose> {
    prop_oneof![
        any::<bool>()
            .prop_flat_map(|scaled| prop::collection::vec(bone(scaled), 0..24))
            .prop_map(EntityPose::Bones),
        (vec3(), f32_finite(), f32_finite(), f32_finite(), quat()).prop_map(
            |(position, yaw, crouch, phase, aim)| EntityPose::Humanoid(HumanoidStance {
                position,
                yaw,
                crouch,
                phase,
                aim,
            })
        ),
    ]
}

pub(crate) fn snapshot_part() -> impl Strategy<Value = SnapshotPart> {
    (
        any::<u32>(),
        f64_finite(),
        (1..=u8::MAX).prop_flat_map(|parts| (0..parts, Just(parts))),
        prop::collection::vec(entity_frame(), 0..6),
    )
        .prop_map(
            |(tick, server_time, (part, parts), entities)| SnapshotPart {
                tick: Tick(tick),
                server_time,
                part,
                parts,
                entities,
            },
        )
}

pub(crate) fn shot_outcome() -> impl Strategy<Value = WireOutcome> {
    prop_oneof![
        (entity_id(), any::<u16>()).prop_map(|(target, hitbox)| WireOutcome::Confirmed {
            target,
            hitbox: HitboxId(hitbox),
        }),
        Just(WireOutcome::Miss),
        Just(WireOutcome::Blocked),
        prop::sample::select(RejectReason::ALL.to_vec()).prop_map(WireOutcome::Rejected),
        (entity_id(), prop::sample::select(Refusal::ALL.to_vec()))
            .prop_map(|(target, refusal)| WireOutcome::Refused { target, refusal }),
    ]
}

pub(crate) fn server_message() -> impl Strategy<Value = ServerMessage> {
    prop_oneof![
        (
            entity_id(),
            f64_finite(),
            f64_finite(),
            f64_finite(),
            any::<u16>(),
            (f32_finite(), any::<u16>(), any::<u64>()),
        )
            .prop_map(
                |(you, tick_rate, send_rate, max_rewind, bones, (half_size, walls, seed))| {
                    ServerMessage::Welcome(Welcome {
                        you,
                        tick_rate,
                        send_rate,
                        max_rewind,
                        bones,
                        arena_half_size: half_size,
                        arena_walls: walls,
                        arena_seed: seed,
                    })
                }
            ),
        snapshot_part().prop_map(ServerMessage::Snapshot),
        (any::<u32>(), f64_finite(), f64_finite(), f64_finite()).prop_map(
            |(id, client_send, server_receive, server_send)| ServerMessage::Pong(Pong {
                id,
                client_send,
                server_receive,
                server_send,
            })
        ),
        (any::<u32>(), f64_finite())
            .prop_map(|(id, server_time)| ServerMessage::RttProbe(RttProbe { id, server_time })),
        any::<u32>().prop_map(|up_to| ServerMessage::ShotAck { up_to }),
        (
            any::<u32>(),
            prop::collection::vec(
                (any::<u32>(), shot_outcome())
                    .prop_map(|(seq, outcome)| WireVerdict { seq, outcome }),
                0..=MAX_VERDICTS_PER_MESSAGE
            )
        )
            .prop_map(|(first, results)| ServerMessage::Verdicts(Verdicts { first, results })),
    ]
}

/// `count` encoded valid messages of both directions, the same ones on every run.
pub(crate) fn seed_corpus(count: usize) -> Vec<Vec<u8>> {
    let mut runner = TestRunner::deterministic();
    let clients = client_message();
    let servers = server_message();
    (0..count)
        .map(|i| {
            let mut bytes = Vec::new();
            if i % 2 == 0 {
                let message = clients.new_tree(&mut runner).expect("a value").current();
                message.encode(&mut bytes).expect("valid messages encode");
            } else {
                let message = servers.new_tree(&mut runner).expect("a value").current();
                message.encode(&mut bytes).expect("valid messages encode");
            }
            bytes
        })
        .collect()
}
