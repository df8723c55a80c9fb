//! Each way a message can be wrong gives its own error, naming the field and the byte.

use lagcomp::{BoneTransform, EntityId, HitboxId, Quat, Tick, Vec3};
use lagcomp_net::Ping;
use lagcomp_validate::{ClaimedHit, RejectReason, RenderTime, ShotClaim, WeaponId};
use lagcomp_wire::{
    ClientMessage, DecodeError, Direction, EncodeError, EntityFrame, EntityPose, HumanoidStance,
    Input, MAGIC, MAX_BONES, MAX_MESSAGE_BYTES, MAX_SHOTS_PER_INPUT, PROTOCOL_VERSION,
    ServerMessage, SnapshotPart, Verdicts, Welcome, WireOutcome, WireVerdict,
};

fn claim(seq: u32) -> ShotClaim {
    ShotClaim {
        shooter: EntityId::from_bits(2),
        weapon: WeaponId(1),
        seq,
        render_time: RenderTime::Time(12.5),
        origin: Vec3::new(0.0, 1.7, 0.0),
        direction: Vec3::NEG_Z,
        hit: Some(ClaimedHit {
            target: EntityId::from_bits(5),
            hitbox: Some(HitboxId(3)),
            point: Some(Vec3::new(0.0, 1.5, -10.0)),
        }),
    }
}

fn input(shots: usize) -> Input {
    Input {
        frame: 1,
        ping: None,
        probe_reply: None,
        aim: Quat::IDENTITY,
        interp_delay: 0.1,
        newest_tick: None,
        verdicts_received: None,
        shots: (1..=shots as u32).map(|s| (s, claim(s))).collect(),
        weapon_shots: Vec::new(),
    }
}

fn encoded(message: &ClientMessage) -> Vec<u8> {
    let mut bytes = Vec::new();
    message.encode(&mut bytes).expect("valid");
    bytes
}

fn encoded_server(message: &ServerMessage) -> Vec<u8> {
    let mut bytes = Vec::new();
    message.encode(&mut bytes).expect("valid");
    bytes
}

fn welcome() -> ServerMessage {
    ServerMessage::Welcome(Welcome {
        you: EntityId::from_bits(1),
        tick_rate: 64.0,
        send_rate: 32.0,
        max_rewind: 1.0,
        bones: 15,
        arena_half_size: 23.0,
        arena_walls: 5,
        arena_seed: 0x00a7_e4a0,
    })
}

/// Version 5 only added values: a version 4 message (every claim a time or ticks) still
/// decodes to the same message, and an extrapolated claim is read back as sent. Version 6
/// added the weapon shots' count after the shots: a version 4 or 5 input without it
/// decodes to the same message with none.
#[test]
fn version_4_messages_still_decode_and_extrapolated_claims_round_trip() {
    let message = ClientMessage::Input(input(2));
    let mut old = encoded(&message);
    assert_eq!(old[2..4], PROTOCOL_VERSION.to_le_bytes());
    assert_eq!(old.pop(), Some(0), "no weapon shots");
    for version in [4_u16, 5] {
        old[2..4].copy_from_slice(&version.to_le_bytes());
        assert_eq!(
            ClientMessage::decode(&old),
            Ok(message.clone()),
            "{version}"
        );
    }
    let mut extrapolating = input(1);
    extrapolating.shots[0].1.render_time = RenderTime::Extrapolated {
        from: Tick(812),
        by: 0.0625,
    };
    let message = ClientMessage::Input(extrapolating);
    assert_eq!(ClientMessage::decode(&encoded(&message)), Ok(message));
    // A version 3 message is refused as before.
    old[2..4].copy_from_slice(&3_u16.to_le_bytes());
    assert!(matches!(
        ClientMessage::decode(&old),
        Err(DecodeError::UnsupportedVersion { found: 3, .. })
    ));
}

#[test]
fn another_version_is_refused_by_both_decoders() {
    let mut client = encoded(&ClientMessage::Input(input(1)));
    client[2..4].copy_from_slice(&(PROTOCOL_VERSION + 1).to_le_bytes());
    let expected = DecodeError::UnsupportedVersion {
        found: PROTOCOL_VERSION + 1,
        expected: PROTOCOL_VERSION,
    };
    assert_eq!(ClientMessage::decode(&client), Err(expected));
    let mut server = encoded_server(&welcome());
    server[2..4].copy_from_slice(&0_u16.to_le_bytes());
    let error = ServerMessage::decode(&server).unwrap_err();
    assert!(error.is_incompatible());
    assert_eq!(
        error.to_string(),
        format!("protocol version 0, this build speaks version {PROTOCOL_VERSION}")
    );
}

#[test]
fn headers_name_what_they_are_not() {
    assert_eq!(
        ClientMessage::decode(b"HTTP/1.1"),
        Err(DecodeError::BadMagic { found: *b"HT" })
    );
    assert_eq!(
        ClientMessage::decode(b"L"),
        Err(DecodeError::Truncated {
            offset: 0,
            field: "header.magic",
            needed: 2,
            available: 1
        })
    );
    let mut bytes = encoded_server(&welcome());
    assert_eq!(
        ClientMessage::decode(&bytes),
        Err(DecodeError::WrongDirection {
            kind: 0x81,
            expected: Direction::ToServer
        })
    );
    bytes[4] = 0x7e;
    assert_eq!(
        ServerMessage::decode(&bytes),
        Err(DecodeError::UnknownKind { kind: 0x7e })
    );
    assert_eq!(
        ClientMessage::decode(&bytes),
        Err(DecodeError::UnknownKind { kind: 0x7e })
    );
    assert!(!DecodeError::UnknownKind { kind: 0 }.is_incompatible());
}

#[test]
fn non_finite_numbers_are_refused_where_they_are() {
    let bytes = encoded(&ClientMessage::Input(input(0)));
    // Header 5, frame 4, flags 1: the aim's x starts at byte 10.
    for (at, bits) in [(10, f32::NAN.to_bits()), (14, f32::INFINITY.to_bits())] {
        let mut bad = bytes.clone();
        bad[at..at + 4].copy_from_slice(&bits.to_le_bytes());
        assert_eq!(
            ClientMessage::decode(&bad),
            Err(DecodeError::NonFinite {
                offset: at,
                field: "input.aim"
            })
        );
    }
    // The interp delay, after the 16-byte aim.
    let mut bad = bytes.clone();
    bad[26..34].copy_from_slice(&f64::NEG_INFINITY.to_le_bytes());
    let error = ClientMessage::decode(&bad).unwrap_err();
    assert_eq!(error.offset(), Some(26));
    assert_eq!(
        error.to_string(),
        "non-finite number at byte 26 in input.interp_delay"
    );
}

#[test]
fn a_welcome_with_a_non_finite_arena_is_refused_both_ways() {
    let bytes = encoded_server(&welcome());
    // Header 5, entity 8, three f64 rates 24, bones 2: the arena's half size at byte 39.
    assert_eq!(&bytes[39..43], &23.0_f32.to_le_bytes());
    let mut bad = bytes.clone();
    bad[39..43].copy_from_slice(&f32::NAN.to_le_bytes());
    assert_eq!(
        ServerMessage::decode(&bad),
        Err(DecodeError::NonFinite {
            offset: 39,
            field: "welcome.arena_half_size"
        })
    );
    let ServerMessage::Welcome(mut infinite) = welcome() else {
        unreachable!()
    };
    infinite.arena_half_size = f32::INFINITY;
    let mut out = vec![7];
    assert_eq!(
        ServerMessage::Welcome(infinite).encode(&mut out),
        Err(EncodeError::NonFinite {
            field: "welcome.arena_half_size"
        })
    );
    assert!(out.is_empty());
    // Cut inside the seed: truncated there.
    let cut = &bytes[..bytes.len() - 3];
    assert!(matches!(
        ServerMessage::decode(cut),
        Err(DecodeError::Truncated {
            field: "welcome.arena_seed",
            ..
        })
    ));
}

#[test]
fn the_encoder_refuses_what_the_decoder_would_and_leaves_nothing() {
    let mut out = vec![1, 2, 3];
    let mut nan_aim = input(1);
    nan_aim.aim = Quat::from_xyzw(0.0, f32::NAN, 0.0, 1.0);
    assert_eq!(
        ClientMessage::Input(nan_aim).encode(&mut out),
        Err(EncodeError::NonFinite { field: "input.aim" })
    );
    assert!(out.is_empty());
    let mut nan_point = input(2);
    nan_point.shots[1].1.hit = Some(ClaimedHit {
        target: EntityId::from_bits(1),
        hitbox: None,
        point: Some(Vec3::new(f32::INFINITY, 0.0, 0.0)),
    });
    assert_eq!(
        ClientMessage::Input(nan_point).encode(&mut out),
        Err(EncodeError::NonFinite {
            field: "input.shots.claim.hit.point"
        })
    );
    let mut nan_ping = input(0);
    nan_ping.ping = Some(Ping {
        id: 1,
        client_send: f64::NAN,
    });
    assert!(ClientMessage::Input(nan_ping).encode(&mut out).is_err());
    assert!(out.is_empty());
}

#[test]
fn shot_lists_are_capped_both_ways() {
    let full = ClientMessage::Input(input(MAX_SHOTS_PER_INPUT));
    let bytes = encoded(&full);
    assert_eq!(ClientMessage::decode(&bytes), Ok(full));
    let mut out = Vec::new();
    assert_eq!(
        ClientMessage::Input(input(MAX_SHOTS_PER_INPUT + 1)).encode(&mut out),
        Err(EncodeError::TooMany {
            field: "input.shots",
            count: MAX_SHOTS_PER_INPUT + 1,
            max: MAX_SHOTS_PER_INPUT
        })
    );
    // A count byte of 9 with nine shots' worth of bytes behind it is still refused.
    let mut nine = encoded(&ClientMessage::Input(input(1)));
    let count_at = 5 + 4 + 1 + 16 + 8;
    assert_eq!(nine[count_at], 1);
    nine[count_at] = 9;
    let shot = nine[count_at + 1..].to_vec();
    for _ in 0..8 {
        nine.extend_from_slice(&shot);
    }
    assert_eq!(
        ClientMessage::decode(&nine),
        Err(DecodeError::TooMany {
            offset: count_at,
            field: "input.shots",
            count: 9,
            max: MAX_SHOTS_PER_INPUT
        })
    );
}

#[test]
fn tags_and_flags_outside_the_version_are_refused() {
    let one = encoded(&ClientMessage::Input(input(1)));
    // Input flags: an undefined bit.
    let mut bad = one.clone();
    bad[9] |= 0x80;
    assert!(matches!(
        ClientMessage::decode(&bad),
        Err(DecodeError::BadFlags {
            offset: 9,
            field: "input.flags",
            ..
        })
    ));
    // The render time tag: after the shot's seq, shooter, weapon and claim seq.
    let tag_at = 5 + 4 + 1 + 16 + 8 + 1 + 4 + 8 + 2 + 4;
    assert_eq!(one[tag_at], 0);
    let mut bad = one.clone();
    bad[tag_at] = 3;
    assert_eq!(
        ClientMessage::decode(&bad),
        Err(DecodeError::UnknownTag {
            offset: tag_at,
            field: "input.shots.claim.render_time.tag",
            tag: 3
        })
    );
    // The hit flags: a point without a hit.
    let hit_at = tag_at + 1 + 8 + 24;
    assert_eq!(one[hit_at], 0b111);
    let mut bad = one.clone();
    bad[hit_at] = 0b100;
    assert!(matches!(
        ClientMessage::decode(&bad),
        Err(DecodeError::BadFlags {
            field: "input.shots.claim.hit.flags",
            bits: 0b100,
            ..
        })
    ));
}

#[test]
fn shot_results_carry_every_rejection_code_and_no_other() {
    for reason in RejectReason::ALL {
        let message = ServerMessage::Verdicts(Verdicts {
            first: 9,
            results: vec![WireVerdict {
                seq: 4,
                outcome: WireOutcome::Rejected(reason),
            }],
        });
        let bytes = encoded_server(&message);
        assert_eq!(&bytes[bytes.len() - 2..], &reason.code().to_le_bytes());
        assert_eq!(ServerMessage::decode(&bytes), Ok(message));
    }
    let mut bytes = encoded_server(&ServerMessage::Verdicts(Verdicts {
        first: 0,
        results: vec![WireVerdict {
            seq: 4,
            outcome: WireOutcome::Rejected(RejectReason::Backtrack),
        }],
    }));
    let at = bytes.len() - 2;
    bytes[at..].copy_from_slice(&999_u16.to_le_bytes());
    assert_eq!(
        ServerMessage::decode(&bytes),
        Err(DecodeError::UnknownRejectCode {
            offset: at,
            code: 999
        })
    );
}

#[test]
fn shot_results_carry_every_refusal_code_and_no_other() {
    use lagcomp_validate::Refusal;
    for refusal in Refusal::ALL {
        let outcome = WireOutcome::Refused {
            target: EntityId::from_bits(0x0000_0003_0000_0005),
            refusal,
        };
        let message = ServerMessage::Verdicts(Verdicts {
            first: 9,
            results: vec![WireVerdict { seq: 4, outcome }],
        });
        let mut bytes = encoded_server(&message);
        assert_eq!(&bytes[bytes.len() - 2..], &refusal.code().to_le_bytes());
        assert_eq!(ServerMessage::decode(&bytes), Ok(message));
        assert_eq!(outcome.label(), refusal.name());
        // A rejection's code in a refusal's place is no refusal.
        let at = bytes.len() - 2;
        bytes[at..].copy_from_slice(&RejectReason::Backtrack.code().to_le_bytes());
        assert_eq!(
            ServerMessage::decode(&bytes),
            Err(DecodeError::UnknownRejectCode {
                offset: at,
                code: RejectReason::Backtrack.code()
            })
        );
    }
}

#[test]
fn shot_outcomes_follow_the_validator() {
    use lagcomp_validate::{Confirmed, VerdictOutcome};
    let confirmed = VerdictOutcome::Confirmed(Confirmed {
        target: EntityId::from_bits(9),
        hitbox: HitboxId(2),
        zone: lagcomp::Zone::Head,
        damage_multiplier: 4.0,
        distance: 10.0,
        point: Vec3::ZERO,
        by_leeway: false,
    });
    let rejected = VerdictOutcome::Rejected {
        reason: RejectReason::FireRate,
    };
    for outcome in [confirmed, VerdictOutcome::Miss, rejected] {
        assert_eq!(WireOutcome::from(&outcome).label(), outcome.label());
    }
    assert_eq!(
        WireOutcome::from(&confirmed),
        WireOutcome::Confirmed {
            target: EntityId::from_bits(9),
            hitbox: HitboxId(2)
        }
    );
}

fn frame(bones: usize, scale: Vec3) -> EntityFrame {
    EntityFrame {
        id: EntityId::from_bits(3),
        alive: true,
        last_teleport: None,
        protected: true,
        in_view_since: None,
        velocity: Vec3::ZERO,
        pose: EntityPose::Bones(vec![
            BoneTransform {
                translation: Vec3::ONE,
                rotation: Quat::IDENTITY,
                scale,
            };
            bones
        ]),
    }
}

fn part(entities: Vec<EntityFrame>) -> ServerMessage {
    ServerMessage::Snapshot(SnapshotPart {
        tick: Tick(3),
        server_time: 0.5,
        part: 0,
        parts: 1,
        entities,
    })
}

#[test]
fn snapshots_are_capped_and_canonical() {
    // The largest entity fits in one message.
    let biggest = part(vec![frame(MAX_BONES, Vec3::splat(2.0))]);
    let bytes = encoded_server(&biggest);
    assert!(bytes.len() <= MAX_MESSAGE_BYTES);
    assert_eq!(ServerMessage::decode(&bytes), Ok(biggest));
    let mut out = Vec::new();
    assert_eq!(
        part(vec![frame(MAX_BONES + 1, Vec3::ONE)]).encode(&mut out),
        Err(EncodeError::TooMany {
            field: "snapshot.entities.bones",
            count: MAX_BONES + 1,
            max: MAX_BONES
        })
    );
    // Too many entities for one message.
    assert!(matches!(
        part(vec![frame(MAX_BONES, Vec3::ONE); 3]).encode(&mut out),
        Err(EncodeError::TooLong { .. })
    ));
    assert!(out.is_empty());

    // Unscaled bones leave their scale out; setting the scaled flag on them is refused.
    let plain = encoded_server(&part(vec![frame(2, Vec3::ONE)]));
    let flags_at = 5 + 4 + 8 + 2 + 2 + 8;
    assert_eq!(plain[flags_at], 0b0101);
    let mut scaled = plain[..flags_at + 1 + 12 + 2].to_vec();
    scaled[flags_at] |= 0b1000;
    for _ in 0..2 {
        scaled.extend_from_slice(&plain[flags_at + 15..flags_at + 15 + 28]);
        for _ in 0..3 {
            scaled.extend_from_slice(&1.0_f32.to_le_bytes());
        }
    }
    assert_eq!(
        ServerMessage::decode(&scaled),
        Err(DecodeError::NonCanonical {
            offset: flags_at,
            field: "snapshot.entities.flags"
        })
    );
    // With one scale changed, the same bytes are a valid scaled entity.
    let last = scaled.len() - 4;
    scaled[last..].copy_from_slice(&0.5_f32.to_le_bytes());
    let ServerMessage::Snapshot(decoded) = ServerMessage::decode(&scaled).expect("valid") else {
        panic!("not a snapshot");
    };
    let bones = decoded.entities[0].pose.bones().expect("bones");
    assert_eq!(bones[1].scale, Vec3::new(1.0, 1.0, 0.5));
}

#[test]
fn a_stance_is_never_scaled_and_never_truncated() {
    let stance = part(vec![EntityFrame {
        pose: EntityPose::Humanoid(HumanoidStance {
            position: Vec3::new(1.0, 0.0, -2.0),
            yaw: 0.5,
            crouch: 0.25,
            phase: 3.0,
            aim: Quat::IDENTITY,
        }),
        ..frame(0, Vec3::ONE)
    }]);
    let bytes = encoded_server(&stance);
    let flags_at = 5 + 4 + 8 + 2 + 2 + 8;
    // Alive, protected, humanoid.
    assert_eq!(bytes[flags_at], 0b10_0101);
    assert_eq!(bytes.len(), flags_at + 1 + 12 + 40);
    assert_eq!(ServerMessage::decode(&bytes).as_ref(), Ok(&stance));
    // The scaled bit means nothing to a stance: refused, not ignored.
    let mut scaled = bytes.clone();
    scaled[flags_at] |= 0b1000;
    assert_eq!(
        ServerMessage::decode(&scaled),
        Err(DecodeError::BadFlags {
            offset: flags_at,
            field: "snapshot.entities.flags",
            bits: 0b10_1101
        })
    );
    // A stance cut short, at every length, is refused: too short for the entity count
    // while under an entity's smallest size, truncated after (never a panic, never bones).
    for len in flags_at - 8..bytes.len() {
        let expected = if len - (flags_at - 8) < 23 {
            "TooMany"
        } else {
            "Truncated"
        };
        let got = ServerMessage::decode(&bytes[..len]).expect_err("short");
        assert!(format!("{got:?}").starts_with(expected), "{len}: {got:?}");
    }
    // An infinite crouch is refused where it is.
    let mut inf = bytes.clone();
    let crouch_at = flags_at + 1 + 12 + 12 + 4;
    inf[crouch_at..crouch_at + 4].copy_from_slice(&f32::INFINITY.to_le_bytes());
    assert_eq!(
        ServerMessage::decode(&inf),
        Err(DecodeError::NonFinite {
            offset: crouch_at,
            field: "snapshot.entities.stance.crouch"
        })
    );
    // Without the humanoid bit, the same bytes are bones: a count of 0 and trailing bytes.
    let mut unflagged = bytes;
    unflagged[flags_at] &= !0b10_0000;
    assert!(matches!(
        ServerMessage::decode(&unflagged),
        Err(DecodeError::TrailingBytes { .. } | DecodeError::TooMany { .. })
    ));
}

#[test]
fn snapshot_parts_must_be_numbered_within_their_count() {
    let mut out = Vec::new();
    let mut bad = SnapshotPart {
        tick: Tick(1),
        server_time: 0.0,
        part: 2,
        parts: 2,
        entities: Vec::new(),
    };
    assert_eq!(
        ServerMessage::Snapshot(bad.clone()).encode(&mut out),
        Err(EncodeError::BadPart { part: 2, parts: 2 })
    );
    bad.part = 1;
    ServerMessage::Snapshot(bad)
        .encode(&mut out)
        .expect("valid");
    let part_at = 5 + 4 + 8;
    out[part_at + 1] = 0;
    assert_eq!(
        ServerMessage::decode(&out),
        Err(DecodeError::BadPart {
            offset: part_at,
            part: 1,
            parts: 0
        })
    );
}

#[test]
fn signed_zeros_and_subnormals_keep_their_bits() {
    let tiny = f32::from_bits(1);
    let message = part(vec![EntityFrame {
        velocity: Vec3::new(-0.0, tiny, -tiny),
        ..frame(1, Vec3::ONE)
    }]);
    let bytes = encoded_server(&message);
    let ServerMessage::Snapshot(decoded) = ServerMessage::decode(&bytes).expect("valid") else {
        panic!("not a snapshot");
    };
    let bits = decoded.entities[0].velocity.to_array().map(f32::to_bits);
    assert_eq!(bits, [(-0.0_f32).to_bits(), 1, tiny.to_bits() | 1 << 31]);
    assert_eq!(MAGIC, *b"LW");
}
