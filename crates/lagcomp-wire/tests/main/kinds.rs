//! Version 6: claims of every weapon kind in an input, and their verdicts back. Each kind
//! crosses the wire and comes back the same; versions 4 and 5 read as inputs without any;
//! unknown kinds, oversized or out-of-order arrays, non-finite numbers and sweeps the
//! validator could not trace are typed errors.

use lagcomp::projectile::ClaimedTarget;
use lagcomp::spread::MAX_PELLETS;
use lagcomp::{
    EntityId, HitboxId, PlacedShape, Pose, Quat, Shape, ShapeSweep, StaticId, Swing, Tick, Vec3,
};
use lagcomp_validate::pellets::{
    PelletClaim, PelletOutcome, PelletResult, PelletTarget, PelletVerdict,
};
use lagcomp_validate::penetration::{ClaimedLayer, PenetrationClaim};
use lagcomp_validate::projectile::ProjectileHitClaim;
use lagcomp_validate::splash::{MAX_VICTIMS, SplashClaim};
use lagcomp_validate::{
    Basis, MeleeClaim, RejectReason, RenderTime, WeaponClaim, WeaponId, WeaponVerdict,
};
use lagcomp_wire::{
    ClientMessage, DecodeError, EncodeError, Input, MAX_SHOTS_PER_INPUT, WireOutcome, WireVerdict,
};

fn input(weapon_shots: Vec<(u32, WeaponClaim)>) -> Input {
    Input {
        frame: 1,
        ping: None,
        probe_reply: None,
        aim: Quat::IDENTITY,
        interp_delay: 0.1,
        newest_tick: Some(Tick(40)),
        verdicts_received: None,
        shots: Vec::new(),
        weapon_shots,
    }
}

const SHOOTER: EntityId = EntityId::from_bits(3);
const TARGET: EntityId = EntityId::from_bits(5);
const RENDER: RenderTime = RenderTime::Ticks {
    from: Tick(38),
    to: Tick(39),
    fraction: 0.5,
};

fn pellets(hit: &[usize]) -> PelletClaim {
    let mut hits = [None; MAX_PELLETS];
    for &i in hit {
        hits[i] = Some(PelletTarget {
            target: TARGET,
            hitbox: (i % 2 == 0).then_some(HitboxId(1)),
        });
    }
    PelletClaim {
        shooter: SHOOTER,
        weapon: WeaponId(9),
        seq: 2,
        render_time: RENDER,
        origin: Vec3::new(0.0, 1.6, 0.0),
        direction: Vec3::NEG_Z,
        seed: 0x1234_5678_9abc_def0,
        pellets: 12,
        hits,
    }
}

fn every_kind() -> Vec<(u32, WeaponClaim)> {
    let blade = PlacedShape::new(
        Pose::from_translation(Vec3::new(0.5, 1.3, 0.0)),
        Shape::cuboid(Vec3::new(0.3, 0.02, 0.01)),
    );
    let mut victims = [None; MAX_VICTIMS];
    victims[0] = Some(TARGET);
    victims[7] = Some(EntityId::from_bits(9));
    vec![
        (
            1,
            WeaponClaim::Projectile(ProjectileHitClaim {
                shooter: SHOOTER,
                weapon: WeaponId(7),
                seq: 1,
                render_time: RenderTime::Time(0.5),
                origin: Vec3::new(0.0, 1.6, 0.0),
                direction: Vec3::NEG_Z,
                step: 24,
                target: ClaimedTarget::Static(lagcomp::StaticId(4)),
                position: Vec3::new(0.0, 1.6, -9.6),
            }),
        ),
        (2, WeaponClaim::Pellets(pellets(&[0, 5, 6, 11]))),
        (
            3,
            WeaponClaim::Melee(MeleeClaim {
                shooter: SHOOTER,
                weapon: WeaponId(11),
                seq: 3,
                render_time: RenderTime::Extrapolated {
                    from: Tick(40),
                    by: 0.01,
                },
                eye: Vec3::new(0.0, 1.6, 0.0),
                aim: Vec3::NEG_Z,
                sweep: ShapeSweep::arc(
                    blade,
                    Swing::new(Vec3::new(0.0, 1.3, 0.0), Vec3::Y, 1.5).unwrap(),
                )
                .unwrap(),
                hit: None,
            }),
        ),
        (
            4,
            WeaponClaim::Splash(SplashClaim {
                shooter: SHOOTER,
                weapon: WeaponId(7),
                seq: 4,
                render_time: RENDER,
                origin: Vec3::new(0.0, 1.6, 0.0),
                direction: Vec3::NEG_Z,
                blast: Vec3::new(0.0, 1.0, -8.5),
                victims,
            }),
        ),
        (
            5,
            WeaponClaim::Penetration(PenetrationClaim {
                shooter: SHOOTER,
                weapon: WeaponId(8),
                seq: 5,
                render_time: RENDER,
                origin: Vec3::new(0.0, 1.6, 0.0),
                direction: Vec3::NEG_Z,
                // Every tag, with a gap: only the used slots travel.
                layers: [
                    Some(ClaimedLayer::Wall { piece: None }),
                    Some(ClaimedLayer::Wall {
                        piece: Some(StaticId(42)),
                    }),
                    None,
                    Some(ClaimedLayer::Body {
                        target: EntityId::from_bits(3 | 1 << 32),
                        hitbox: None,
                    }),
                    Some(ClaimedLayer::Body {
                        target: EntityId::from_bits(4),
                        hitbox: Some(HitboxId(2)),
                    }),
                    None,
                    None,
                    None,
                ],
            }),
        ),
    ]
}

fn encoded(input: &Input) -> Vec<u8> {
    let mut bytes = Vec::new();
    ClientMessage::Input(input.clone())
        .encode(&mut bytes)
        .expect("encodes");
    bytes
}

#[test]
fn every_kind_crosses_the_wire_and_back() {
    let sent = input(every_kind());
    let bytes = encoded(&sent);
    assert_eq!(
        ClientMessage::decode(&bytes),
        Ok(ClientMessage::Input(sent))
    );
}

#[test]
fn a_pellet_claim_sends_only_the_pellets_that_struck() {
    let size = |hit: &[usize]| encoded(&input(vec![(2, WeaponClaim::Pellets(pellets(hit)))])).len();
    // No pellet: the head and two counts. Each pellet: index, flags, target, and the
    // hitbox on even pellets.
    assert_eq!(size(&[1]) - size(&[]), 1 + 1 + 8);
    assert_eq!(size(&[2]) - size(&[]), 1 + 1 + 8 + 2);
    assert_eq!(size(&[0, 1, 2, 3]) - size(&[]), 4 * 10 + 2 * 2);
}

#[test]
fn versions_4_and_5_read_as_inputs_without_weapon_shots_and_version_5_refuses_them() {
    let none = input(Vec::new());
    let mut old = encoded(&none);
    assert_eq!(old.pop(), Some(0));
    for version in [4_u16, 5] {
        old[2..4].copy_from_slice(&version.to_le_bytes());
        assert_eq!(
            ClientMessage::decode(&old),
            Ok(ClientMessage::Input(none.clone()))
        );
    }
    // A version 5 peer's message ends after its shots: weapon shots after them are bytes
    // it does not have.
    let mut with = encoded(&input(every_kind()));
    let end = old.len();
    with[2..4].copy_from_slice(&5_u16.to_le_bytes());
    assert!(matches!(
        ClientMessage::decode(&with),
        Err(DecodeError::TrailingBytes { offset, .. }) if offset == end
    ));
}

/// The byte offset where the first weapon shot's kind byte is.
fn first_kind_at(input: &Input) -> usize {
    let without = encoded(&Input {
        weapon_shots: Vec::new(),
        ..input.clone()
    });
    // The count (now 0) then, in `input`, the seq.
    without.len() + 4
}

#[test]
fn bad_weapon_shots_are_typed_errors() {
    let one = |claim| input(vec![(1, claim)]);
    let decode = |bytes: &[u8]| ClientMessage::decode(bytes);

    // An unknown kind (six kinds are known: 0 to 5).
    let pellet = one(WeaponClaim::Pellets(pellets(&[0, 1])));
    let at = first_kind_at(&pellet);
    let mut bytes = encoded(&pellet);
    assert_eq!(bytes[at], 2, "the pellets' kind byte");
    bytes[at] = 6;
    assert_eq!(
        decode(&bytes),
        Err(DecodeError::UnknownTag {
            offset: at,
            field: "input.weapon_shots.kind",
            tag: 6
        })
    );

    // 33 pellets fired: refused both ways.
    let too_many = WeaponClaim::Pellets(PelletClaim {
        pellets: 33,
        ..pellets(&[])
    });
    let mut out = Vec::new();
    assert!(matches!(
        ClientMessage::Input(one(too_many)).encode(&mut out),
        Err(EncodeError::Invalid { .. })
    ));
    let mut bytes = encoded(&one(WeaponClaim::Pellets(pellets(&[]))));
    // The head: seq 4, kind 1, shooter 8, weapon 2, seq 4, ticks 13, origin and direction 24,
    // seed 8; then the pellets fired.
    let fired = at + 1 + 8 + 2 + 4 + 13 + 24 + 8;
    assert_eq!(bytes[fired], 12);
    bytes[fired] = 33;
    assert!(matches!(decode(&bytes), Err(DecodeError::Invalid { offset, .. }) if offset == fired));

    // Pellet indices out of order, repeated, or past the array.
    let two = encoded(&pellet);
    let first_index = fired + 2;
    assert_eq!((two[first_index - 1], two[first_index]), (2, 0));
    let second_index = first_index + 1 + 1 + 8 + 2;
    assert_eq!(two[second_index], 1);
    for (index, what) in [(0, "repeated"), (32, "past the array")] {
        let mut bad = two.clone();
        bad[second_index] = index;
        assert!(
            matches!(decode(&bad), Err(DecodeError::Invalid { offset, .. }) if offset == second_index),
            "{what}"
        );
    }
    // A count larger than the bytes left, or than 32.
    let mut bad = two.clone();
    bad[first_index - 1] = 33;
    assert!(matches!(decode(&bad), Err(DecodeError::TooMany { .. })));

    // A non-finite blast point.
    let claim = every_kind()[3].1;
    let mut bytes = encoded(&one(claim));
    let blast = first_kind_at(&one(claim)) + 1 + 8 + 2 + 4 + 13 + 24;
    bytes[blast..blast + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    assert!(
        matches!(decode(&bytes), Err(DecodeError::NonFinite { offset, .. }) if offset == blast)
    );
    let WeaponClaim::Splash(mut nan) = claim else {
        unreachable!()
    };
    nan.blast.x = f32::INFINITY;
    assert!(matches!(
        ClientMessage::Input(one(WeaponClaim::Splash(nan))).encode(&mut out),
        Err(EncodeError::NonFinite { .. })
    ));

    // A melee sweep the validator could not trace: a swing of more than a turn.
    let melee = every_kind()[2].1;
    let bytes = encoded(&one(melee));
    let angle = bytes.len() - 1 - 4;
    let mut bad = bytes.clone();
    bad[angle..angle + 4].copy_from_slice(&7.0_f32.to_le_bytes());
    assert!(
        matches!(decode(&bad), Err(DecodeError::Invalid { .. })),
        "{:?}",
        decode(&bad)
    );
    // An unknown path tag.
    let path = angle - 24 - 1;
    let mut bad = bytes.clone();
    assert_eq!(bad[path], 1, "the arc's tag");
    bad[path] = 2;
    assert!(matches!(decode(&bad), Err(DecodeError::UnknownTag { offset, .. }) if offset == path));

    // More weapon shots than an input carries, both ways.
    let nine = input(vec![every_kind()[0]; MAX_SHOTS_PER_INPUT + 1]);
    assert!(matches!(
        ClientMessage::Input(nine).encode(&mut out),
        Err(EncodeError::TooMany { .. })
    ));
    let eight = input(vec![every_kind()[0]; MAX_SHOTS_PER_INPUT]);
    let mut bytes = encoded(&eight);
    let count = first_kind_at(&eight) - 4 - 1;
    assert_eq!(usize::from(bytes[count]), MAX_SHOTS_PER_INPUT);
    bytes[count] = 9;
    assert!(matches!(decode(&bytes), Err(DecodeError::TooMany { .. })));
}

#[test]
fn every_cut_of_a_weapon_shot_is_an_error() {
    let bytes = encoded(&input(every_kind()));
    for len in 0..bytes.len() {
        assert!(ClientMessage::decode(&bytes[..len]).is_err(), "{len}");
    }
}

#[test]
fn a_pellet_verdict_reaches_its_shooter_target_by_target() {
    let mut verdict = PelletVerdict {
        shooter: SHOOTER,
        seq: 2,
        weapon: WeaponId(9),
        outcome: PelletOutcome::Confirmed {
            hits: 2,
            damage_multiplier: 1.5,
        },
        basis: Basis::default(),
        pellets: [PelletResult::NotTraced; MAX_PELLETS],
    };
    for (i, target) in [(0, TARGET), (3, EntityId::from_bits(9))] {
        verdict.pellets[i] = PelletResult::Hit {
            target,
            hitbox: HitboxId(1),
            zone: lagcomp::Zone::Torso,
            distance: 9.7,
            point: Vec3::ZERO,
            damage_multiplier: 0.75,
        };
    }
    let results: Vec<WireVerdict> =
        WireVerdict::of_weapon_verdict(&WeaponVerdict::Pellets(verdict)).collect();
    assert!(!results.is_empty());
    assert!(results.iter().all(|r| r.seq == 2));
    let struck: Vec<EntityId> = results
        .iter()
        .filter_map(|r| match r.outcome {
            WireOutcome::Confirmed { target, .. } => Some(target),
            _ => None,
        })
        .collect();
    assert_eq!(struck, [TARGET, EntityId::from_bits(9)]);
    // A refused claim is one rejection with the kind's code, which the wire carries.
    verdict.outcome = PelletOutcome::Disproved {
        reason: lagcomp_validate::pellets::PelletReason::PelletSeedMismatch,
    };
    let results: Vec<WireVerdict> =
        WireVerdict::of_weapon_verdict(&WeaponVerdict::Pellets(verdict)).collect();
    assert_eq!(
        results.iter().map(|r| r.outcome).collect::<Vec<_>>(),
        [WireOutcome::Rejected(RejectReason::PelletSeedMismatch)]
    );
}
