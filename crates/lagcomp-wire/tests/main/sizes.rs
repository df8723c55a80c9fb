//! The sizes `docs/WIRE.md` gives for each message are the encoder's.

use lagcomp::projectile::ClaimedTarget;
use lagcomp::spread::MAX_PELLETS;
use lagcomp::{
    BoneTransform, EntityId, HitboxId, PlacedShape, Pose, Quat, Shape, ShapeSweep, Swing, Tick,
    Vec3,
};
use lagcomp_net::{Ping, Pong};
use lagcomp_validate::pellets::{PelletClaim, PelletTarget};
use lagcomp_validate::penetration::{ClaimedLayer, MAX_PENETRATION_LAYERS, PenetrationClaim};
use lagcomp_validate::projectile::ProjectileHitClaim;
use lagcomp_validate::splash::{MAX_VICTIMS, SplashClaim};
use lagcomp_validate::{
    ClaimedHit, MeleeClaim, RejectReason, RenderTime, ShotClaim, WeaponClaim, WeaponId,
};
use lagcomp_wire::{
    ClientMessage, EntityFrame, EntityPose, HumanoidStance, Input, MAX_SHOTS_PER_INPUT,
    MAX_VERDICTS_PER_MESSAGE, ProbeReply, RttProbe, ServerMessage, SnapshotPart, Verdicts, Welcome,
    WireOutcome, WireVerdict,
};

const WIRE_MD: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/WIRE.md"));

/// `(kind, smallest, largest)` from every "### `0xNN` Name (...)" heading; the largest is
/// `None` for "N bytes + ...".
fn documented() -> Vec<(u8, usize, Option<usize>)> {
    WIRE_MD
        .lines()
        .filter_map(|line| line.strip_prefix("### `0x"))
        .map(|rest| {
            let kind = u8::from_str_radix(&rest[..2], 16).expect("a hex kind");
            let sizes = &rest[rest.find('(').expect("a size") + 1..rest.find(')').expect(")")];
            let numbers: Vec<usize> = sizes
                .split(' ')
                .filter_map(|word| word.parse().ok())
                .collect();
            let largest = if sizes.contains('+') {
                None
            } else {
                Some(*numbers.last().expect("a size"))
            };
            (kind, numbers[0], largest)
        })
        .collect()
}

fn size(message: &ServerMessage) -> usize {
    let mut bytes = Vec::new();
    message.encode(&mut bytes).expect("valid");
    bytes.len()
}

fn client_size(input: Input) -> usize {
    let mut bytes = Vec::new();
    ClientMessage::Input(input)
        .encode(&mut bytes)
        .expect("valid");
    bytes.len()
}

/// One claim of each weapon kind (hitscan, projectile, pellets, melee, splash,
/// penetration) with every optional part present and every array full.
fn every_kind_at_its_largest() -> [WeaponClaim; 6] {
    let shooter = EntityId::from_bits(1);
    let render_time = RenderTime::Ticks {
        from: Tick(1),
        to: Tick(2),
        fraction: 0.5,
    };
    let hit = ClaimedHit {
        target: EntityId::from_bits(2),
        hitbox: Some(HitboxId(1)),
        point: Some(Vec3::ONE),
    };
    let blade = PlacedShape::new(
        Pose::from_translation(Vec3::Y),
        Shape::cuboid(Vec3::new(0.3, 0.02, 0.01)),
    );
    [
        WeaponClaim::Hitscan(ShotClaim {
            shooter,
            weapon: WeaponId(1),
            seq: 1,
            render_time,
            origin: Vec3::ZERO,
            direction: Vec3::X,
            hit: Some(hit),
        }),
        WeaponClaim::Projectile(ProjectileHitClaim {
            shooter,
            weapon: WeaponId(7),
            seq: 1,
            render_time,
            origin: Vec3::ZERO,
            direction: Vec3::X,
            step: 24,
            target: ClaimedTarget::Entity {
                entity: hit.target,
                hitbox: HitboxId(0),
            },
            position: Vec3::X,
        }),
        biggest_weapon_shot(),
        WeaponClaim::Melee(MeleeClaim {
            shooter,
            weapon: WeaponId(11),
            seq: 1,
            render_time,
            eye: Vec3::Y,
            aim: Vec3::NEG_Z,
            sweep: ShapeSweep::arc(blade, Swing::new(Vec3::Y, Vec3::Y, 1.5).unwrap()).unwrap(),
            hit: Some(hit),
        }),
        WeaponClaim::Splash(SplashClaim {
            shooter,
            weapon: WeaponId(7),
            seq: 1,
            render_time,
            origin: Vec3::ZERO,
            direction: Vec3::X,
            blast: Vec3::X,
            victims: [Some(hit.target); MAX_VICTIMS],
        }),
        WeaponClaim::Penetration(PenetrationClaim {
            shooter,
            weapon: WeaponId(5),
            seq: 1,
            render_time,
            origin: Vec3::ZERO,
            direction: Vec3::X,
            layers: [Some(ClaimedLayer::Body {
                target: hit.target,
                hitbox: Some(HitboxId(1)),
            }); MAX_PENETRATION_LAYERS],
        }),
    ]
}

/// The largest weapon shot: a pellet claim with every pellet struck and its hitbox named.
fn biggest_weapon_shot() -> WeaponClaim {
    WeaponClaim::Pellets(PelletClaim {
        shooter: EntityId::from_bits(1),
        weapon: WeaponId(9),
        seq: 1,
        render_time: RenderTime::Ticks {
            from: Tick(1),
            to: Tick(2),
            fraction: 0.5,
        },
        origin: Vec3::ZERO,
        direction: Vec3::X,
        seed: 7,
        pellets: MAX_PELLETS as u8,
        hits: [Some(PelletTarget {
            target: EntityId::from_bits(2),
            hitbox: Some(HitboxId(1)),
        }); MAX_PELLETS],
    })
}

/// The smallest and largest encoding of each kind (a snapshot part's largest is not
/// fixed: its smallest and one 15-bone entity's share are checked instead).
fn measured(kind: u8) -> (usize, usize) {
    match kind {
        0x01 => {
            let bare = Input {
                frame: 0,
                ping: None,
                probe_reply: None,
                aim: Quat::IDENTITY,
                interp_delay: 0.0,
                newest_tick: None,
                verdicts_received: None,
                shots: Vec::new(),
                weapon_shots: Vec::new(),
            };
            let biggest_shot = ShotClaim {
                shooter: EntityId::from_bits(1),
                weapon: WeaponId(1),
                seq: 1,
                render_time: RenderTime::Ticks {
                    from: Tick(1),
                    to: Tick(2),
                    fraction: 0.5,
                },
                origin: Vec3::ZERO,
                direction: Vec3::X,
                hit: Some(ClaimedHit {
                    target: EntityId::from_bits(2),
                    hitbox: Some(HitboxId(1)),
                    point: Some(Vec3::ONE),
                }),
            };
            let full = Input {
                ping: Some(Ping {
                    id: 1,
                    client_send: 1.0,
                }),
                probe_reply: Some(ProbeReply {
                    id: 1,
                    client_time: 1.0,
                }),
                newest_tick: Some(Tick(1)),
                verdicts_received: Some(1),
                shots: vec![(1, biggest_shot); MAX_SHOTS_PER_INPUT],
                weapon_shots: vec![(1, biggest_weapon_shot()); MAX_SHOTS_PER_INPUT],
                ..bare.clone()
            };
            // The shot sizes the document gives.
            let mut smallest_shot = biggest_shot;
            smallest_shot.render_time = RenderTime::Time(1.0);
            smallest_shot.hit = None;
            let one = |claim| {
                client_size(Input {
                    shots: vec![(1, claim)],
                    weapon_shots: Vec::new(),
                    ..bare.clone()
                }) - client_size(bare.clone())
            };
            assert_eq!((one(smallest_shot), one(biggest_shot)), (52, 78));
            // A weapon shot of each kind at its largest: the document's table.
            let weapon = |claim| {
                client_size(Input {
                    weapon_shots: vec![(1, claim)],
                    ..bare.clone()
                }) - client_size(bare.clone())
            };
            let sizes: Vec<usize> = every_kind_at_its_largest()
                .into_iter()
                .map(weapon)
                .collect();
            assert_eq!(sizes, [79, 83, 450, 149, 213, 153]);
            assert_eq!(weapon(biggest_weapon_shot()), 450);
            (client_size(bare), client_size(full))
        }
        0x81 => {
            let n = size(&ServerMessage::Welcome(Welcome {
                you: EntityId::from_bits(1),
                tick_rate: 64.0,
                send_rate: 32.0,
                max_rewind: 1.0,
                bones: 15,
                arena_half_size: 23.0,
                arena_walls: 5,
                arena_seed: 0x00a7_e4a0,
            }));
            (n, n)
        }
        0x82 => {
            let mut part = SnapshotPart {
                tick: Tick(1),
                server_time: 0.0,
                part: 0,
                parts: 1,
                entities: Vec::new(),
            };
            let empty = size(&ServerMessage::Snapshot(part.clone()));
            part.entities.push(EntityFrame {
                id: EntityId::from_bits(1),
                alive: true,
                last_teleport: None,
                protected: false,
                in_view_since: None,
                velocity: Vec3::ZERO,
                pose: EntityPose::Bones(vec![BoneTransform::IDENTITY; 15]),
            });
            let humanoid = size(&ServerMessage::Snapshot(part.clone())) - empty;
            assert_eq!(humanoid, 443);
            assert!(WIRE_MD.contains("A 15-bone humanoid is 443 bytes"));
            part.entities[0].last_teleport = Some(Tick(9));
            assert_eq!(
                size(&ServerMessage::Snapshot(part.clone())) - empty,
                443 + 4
            );
            part.entities[0].in_view_since = Some(Tick(3));
            assert_eq!(
                size(&ServerMessage::Snapshot(part.clone())) - empty,
                443 + 8
            );
            part.entities[0].last_teleport = None;
            part.entities[0].in_view_since = None;
            if let EntityPose::Bones(bones) = &mut part.entities[0].pose {
                bones[0].scale = Vec3::splat(2.0);
            }
            assert_eq!(
                size(&ServerMessage::Snapshot(part.clone())) - empty,
                23 + 15 * 40
            );
            // The humanoid sent as its stance: 61 bytes, 65 with an in-view tick.
            part.entities[0].pose = EntityPose::Humanoid(HumanoidStance {
                position: Vec3::ZERO,
                yaw: 0.0,
                crouch: 0.0,
                phase: 0.0,
                aim: Quat::IDENTITY,
            });
            assert_eq!(size(&ServerMessage::Snapshot(part.clone())) - empty, 61);
            assert!(WIRE_MD.contains("as its stance is 61 bytes (65 with an in-view tick)"));
            part.entities[0].in_view_since = Some(Tick(3));
            assert_eq!(size(&ServerMessage::Snapshot(part)) - empty, 65);
            (empty, empty)
        }
        0x83 => {
            let n = size(&ServerMessage::Pong(Pong {
                id: 1,
                client_send: 1.0,
                server_receive: 1.0,
                server_send: 1.0,
            }));
            (n, n)
        }
        0x84 => {
            let n = size(&ServerMessage::RttProbe(RttProbe {
                id: 1,
                server_time: 1.0,
            }));
            (n, n)
        }
        0x85 => {
            let n = size(&ServerMessage::ShotAck { up_to: 1 });
            (n, n)
        }
        0x86 => {
            let verdicts = |results: Vec<WireOutcome>| {
                size(&ServerMessage::Verdicts(Verdicts {
                    first: 1,
                    results: results
                        .into_iter()
                        .map(|outcome| WireVerdict { seq: 1, outcome })
                        .collect(),
                }))
            };
            let confirmed = WireOutcome::Confirmed {
                target: EntityId::from_bits(1),
                hitbox: HitboxId(1),
            };
            let empty = verdicts(Vec::new());
            // The verdict sizes the document gives.
            let one = |outcome| verdicts(vec![outcome]) - empty;
            let sizes = [
                one(WireOutcome::Miss),
                one(WireOutcome::Blocked),
                one(WireOutcome::Rejected(RejectReason::FireRate)),
                one(confirmed),
            ];
            assert_eq!(sizes, [5, 5, 7, 15]);
            (empty, verdicts(vec![confirmed; MAX_VERDICTS_PER_MESSAGE]))
        }
        other => panic!("docs/WIRE.md documents unknown kind {other:#04x}"),
    }
}

#[test]
fn the_document_gives_every_message_its_size() {
    let documented = documented();
    let kinds: Vec<u8> = documented.iter().map(|d| d.0).collect();
    assert_eq!(kinds, [0x01, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86]);
    for (kind, smallest, largest) in documented {
        let (min, max) = measured(kind);
        assert_eq!(smallest, min, "smallest of kind {kind:#04x}");
        if let Some(largest) = largest {
            assert_eq!(largest, max, "largest of kind {kind:#04x}");
        }
    }
}
