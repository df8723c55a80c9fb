//! Splitting a world into snapshot parts: within budget, in order, complete, and with a
//! buffer that stops growing.

use lagcomp::{BoneTransform, EntityId, Quat, Tick, Vec3};
use lagcomp_wire::{
    EncodeError, EncodedEntities, EntityFrame, EntityPose, HumanoidStance, MAX_BONES,
    MAX_MESSAGE_BYTES, MAX_SNAPSHOT_PARTS, ServerMessage, SnapshotEncoder, SnapshotPart,
};

fn humanoid(i: u64, bones: usize) -> EntityFrame {
    EntityFrame {
        id: EntityId::from_bits(i << 32 | i),
        alive: !i.is_multiple_of(3),
        last_teleport: i.is_multiple_of(5).then_some(Tick(i as u32)),
        protected: i.is_multiple_of(7),
        in_view_since: None,
        velocity: Vec3::new(i as f32, 0.0, -1.5),
        pose: EntityPose::Bones(
            (0..bones)
                .map(|b| BoneTransform {
                    translation: Vec3::new(i as f32 * 0.1, b as f32 * 0.13, 1.0 / 3.0),
                    rotation: Quat::from_rotation_y(b as f32 * 0.7 + i as f32).normalize(),
                    scale: Vec3::ONE,
                })
                .collect(),
        ),
    }
}

/// Entity `i` as `humanoid` gives it, but sent as a stance.
fn stanced(i: u64) -> EntityFrame {
    EntityFrame {
        pose: EntityPose::Humanoid(HumanoidStance {
            position: Vec3::new(i as f32 * 0.3, 0.0, -(i as f32) / 7.0),
            yaw: i as f32 * 0.9,
            crouch: 1.0 / (i as f32 + 3.0),
            phase: i as f32 * 11.1,
            aim: Quat::from_rotation_x(0.01 * i as f32),
        }),
        ..humanoid(i, 0)
    }
}

fn bones_mut(frame: &mut EntityFrame) -> &mut Vec<BoneTransform> {
    match &mut frame.pose {
        EntityPose::Bones(bones) => bones,
        EntityPose::Humanoid(_) => panic!("a humanoid stance has no bones"),
    }
}

fn decode_parts(encoder: &mut SnapshotEncoder, world: &[EntityFrame]) -> Vec<SnapshotPart> {
    encoder
        .encode(Tick(77), 1.203125, world)
        .expect("a valid world")
        .map(|bytes| {
            assert!(bytes.len() <= MAX_MESSAGE_BYTES);
            match ServerMessage::decode(bytes).expect("parts decode") {
                ServerMessage::Snapshot(part) => part,
                other => panic!("not a snapshot: {other:?}"),
            }
        })
        .collect()
}

#[test]
fn a_world_splits_within_budget_and_comes_back_whole() {
    let world: Vec<EntityFrame> = (0..40).map(|i| humanoid(i, 15)).collect();
    for budget in [
        SnapshotEncoder::MIN_BUDGET,
        600,
        1100,
        4000,
        MAX_MESSAGE_BYTES,
    ] {
        let mut encoder = SnapshotEncoder::new(budget).expect("a valid budget");
        let sizes: Vec<usize> = encoder
            .encode(Tick(77), 1.203125, &world)
            .expect("valid")
            .map(<[u8]>::len)
            .collect();
        let one_entity = 5 + 16 + world[0].wire_bytes();
        for &size in &sizes {
            // Over budget only when a single entity is.
            assert!(size <= budget.max(one_entity), "{size} > {budget}");
        }
        let parts = decode_parts(&mut encoder, &world);
        assert_eq!(parts.len(), sizes.len());
        let mut entities = Vec::new();
        for (i, part) in parts.into_iter().enumerate() {
            assert_eq!((part.part as usize, part.parts as usize), (i, sizes.len()));
            assert_eq!((part.tick, part.server_time), (Tick(77), 1.203125));
            assert!(!part.entities.is_empty());
            entities.extend(part.entities);
        }
        assert_eq!(entities, world, "budget {budget}");
        // Greedy packing: no two neighbouring parts would have fit in one.
        for pair in sizes.windows(2) {
            assert!(pair[0] + pair[1] - 21 > budget, "{pair:?} under {budget}");
        }
    }
    // 445-byte humanoids, two to a default part.
    let mut encoder = SnapshotEncoder::default();
    assert_eq!(world[1].wire_bytes(), 23 + 15 * 28);
    assert_eq!(world[0].wire_bytes(), 23 + 4 + 15 * 28);
    assert_eq!(
        encoder.encode(Tick(1), 0.0, &world).expect("valid").len(),
        20
    );
}

#[test]
fn an_empty_world_is_one_empty_part() {
    let mut encoder = SnapshotEncoder::default();
    let parts = decode_parts(&mut encoder, &[]);
    assert_eq!(parts.len(), 1);
    assert_eq!((parts[0].part, parts[0].parts), (0, 1));
    assert!(parts[0].entities.is_empty());
}

#[test]
fn an_entity_bigger_than_the_budget_travels_alone() {
    let world = vec![humanoid(1, 2), humanoid(2, MAX_BONES), humanoid(3, 2)];
    let mut encoder = SnapshotEncoder::new(200).expect("a valid budget");
    let parts = decode_parts(&mut encoder, &world);
    let counts: Vec<usize> = parts.iter().map(|p| p.entities.len()).collect();
    assert_eq!(counts, [1, 1, 1]);
    assert_eq!(parts[1].entities[0], world[1]);
}

#[test]
fn bad_worlds_and_budgets_are_refused() {
    assert!(matches!(
        SnapshotEncoder::new(SnapshotEncoder::MIN_BUDGET - 1),
        Err(EncodeError::Budget { .. })
    ));
    assert!(SnapshotEncoder::new(MAX_MESSAGE_BYTES + 1).is_err());
    let mut encoder = SnapshotEncoder::new(SnapshotEncoder::MIN_BUDGET).expect("valid");
    // One boneless entity per part: 256 parts is one too many.
    let world: Vec<EntityFrame> = (0..=MAX_SNAPSHOT_PARTS as u64)
        .map(|i| humanoid(i, 0))
        .collect();
    assert_eq!(
        encoder.encode(Tick(0), 0.0, &world).err(),
        Some(EncodeError::TooMany {
            field: "snapshot parts",
            count: MAX_SNAPSHOT_PARTS + 1,
            max: MAX_SNAPSHOT_PARTS
        })
    );
    assert_eq!(
        encoder
            .encode(Tick(0), 0.0, &world[..MAX_SNAPSHOT_PARTS])
            .expect("255 parts are fine")
            .len(),
        MAX_SNAPSHOT_PARTS
    );
    let mut nan = humanoid(1, 3);
    bones_mut(&mut nan)[2].rotation.w = f32::NAN;
    assert_eq!(
        encoder.encode(Tick(0), 0.0, &[humanoid(0, 1), nan]).err(),
        Some(EncodeError::NonFinite {
            field: "snapshot.entities.bones.rotation"
        })
    );
    assert!(
        encoder
            .encode(Tick(0), f64::INFINITY, &[humanoid(0, 1)])
            .is_err()
    );
    // A stance's numbers are checked as bones' are.
    for (field, spoil) in [
        (
            "snapshot.entities.stance.phase",
            (|s: &mut HumanoidStance| s.phase = f32::INFINITY) as fn(&mut HumanoidStance),
        ),
        ("snapshot.entities.stance.aim", |s| s.aim.y = f32::NAN),
        ("snapshot.entities.stance.position", |s| {
            s.position.z = f32::NEG_INFINITY;
        }),
    ] {
        let mut bad = stanced(2);
        let EntityPose::Humanoid(stance) = &mut bad.pose else {
            unreachable!()
        };
        spoil(stance);
        assert_eq!(
            encoder.encode(Tick(0), 0.0, &[stanced(1), bad]).err(),
            Some(EncodeError::NonFinite { field }),
        );
    }
}

#[test]
fn a_stance_takes_40_bytes_where_8_bones_take_226() {
    let bones = humanoid(6, 8);
    let stance = stanced(6);
    assert_eq!(bones.wire_bytes(), 23 + 224);
    assert_eq!(stance.wire_bytes(), 21 + 40);
    // A client's view of 16 bodies (each with its in-view tick) fits one default part.
    let world: Vec<EntityFrame> = (0..16)
        .map(|i| EntityFrame {
            in_view_since: Some(Tick(3)),
            ..stanced(i)
        })
        .collect();
    let parts = decode_parts(&mut SnapshotEncoder::default(), &world);
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].entities, world);
}

#[test]
fn the_encoder_stops_allocating_once_warm() {
    let world: Vec<EntityFrame> = (0..24).map(|i| humanoid(i, 15)).collect();
    let mut encoder = SnapshotEncoder::default();
    let first: Vec<Vec<u8>> = encoder
        .encode(Tick(1), 0.0, &world)
        .expect("valid")
        .map(<[u8]>::to_vec)
        .collect();
    let pointer = |e: &mut SnapshotEncoder| {
        e.encode(Tick(2), 0.03125, &world)
            .expect("valid")
            .next()
            .map(<[u8]>::as_ptr)
    };
    let before = pointer(&mut encoder);
    for _ in 0..10 {
        assert_eq!(pointer(&mut encoder), before, "the buffer moved");
    }
    // Same world, same tick: the same bytes.
    let again: Vec<Vec<u8>> = encoder
        .encode(Tick(1), 0.0, &world)
        .expect("valid")
        .map(<[u8]>::to_vec)
        .collect();
    assert_eq!(first, again);
}

#[test]
fn decoded_frames_feed_the_interpolation_buffer_unchanged() {
    // Entity 10 last teleported at tick 10; the part is tick 77.
    let world = vec![humanoid(4, 15), humanoid(10, 15)];
    let mut encoder = SnapshotEncoder::default();
    let part = decode_parts(&mut encoder, &world).remove(0);
    let (tick, time) = (part.tick, part.server_time);
    let mut frames = part.entities.into_iter();
    let never = frames.next().expect("two entities");
    let jumped = frames.next().expect("two entities");
    assert!(!never.teleported_since(None));
    // Holding nothing, or only frames up to the teleport's tick, the client must not
    // blend; holding a frame after it, the teleport is behind it.
    assert!(jumped.teleported_since(None));
    assert!(jumped.teleported_since(Some(Tick(9))));
    assert!(!jumped.teleported_since(Some(Tick(10))));
    assert!(!jumped.teleported_since(Some(Tick(76))));
    let snapshot = jumped.into_snapshot(tick, time, Some(Tick(8)), |_| {
        panic!("bones are not rebuilt")
    });
    assert!(snapshot.teleport);
    assert_eq!(Some(snapshot.bones.as_slice()), world[1].pose.bones());
    assert_eq!((snapshot.tick, snapshot.time), (Tick(77), 1.203125));
    assert_eq!(snapshot.velocity, world[1].velocity);
    assert!(
        !never
            .into_snapshot(tick, time, Some(Tick(75)), |_| Vec::new())
            .teleport
    );
    // A stance's bones are what the client's rebuild makes of the stance it was sent.
    let sent = stanced(5);
    let part = decode_parts(&mut encoder, std::slice::from_ref(&sent)).remove(0);
    let frame = part.entities.into_iter().next().expect("one entity");
    let snapshot = frame.into_snapshot(tick, time, None, |stance| {
        assert_eq!(
            Some(stance),
            match &sent.pose {
                EntityPose::Humanoid(s) => Some(s),
                EntityPose::Bones(_) => None,
            }
        );
        vec![BoneTransform::from_translation(stance.position); 2]
    });
    assert_eq!(snapshot.bones.len(), 2);
    assert!(
        snapshot.teleport,
        "entity 5 teleported at tick 5, nothing held"
    );
}

/// Each client's view packed from entities encoded once is byte for byte what encoding
/// that client's frames directly gives.
#[test]
fn a_view_packed_from_entities_encoded_once_is_what_direct_encoding_gives() {
    // Every third one sent as a stance.
    let mut world: Vec<EntityFrame> = (0..30)
        .map(|i| {
            if i % 3 == 1 {
                stanced(i)
            } else {
                humanoid(i, 8)
            }
        })
        .collect();
    bones_mut(&mut world[3])[1].scale = Vec3::splat(1.5); // a scaled one travels too
    let mut encoded = EncodedEntities::default();
    encoded.encode(Tick(77), 1.203125, &world).expect("valid");
    assert_eq!(encoded.len(), 30);
    // Rows: which entities a client sees (in this order), and since when.
    let views: [Vec<(usize, Option<Tick>)>; 5] = [
        vec![],                                                   // nothing: one empty part
        vec![(0, None)],                                          // its own body only
        vec![(3, Some(Tick(70))), (5, None), (0, Some(Tick(0)))], // scaled, teleported
        (0..30).map(|i| (i, Some(Tick(i as u32)))).collect(),     // everyone, several parts
        vec![(7, Some(Tick(u32::MAX))), (7, None)],               // the same twice
    ];
    for budget in [SnapshotEncoder::MIN_BUDGET, 700, 1100, MAX_MESSAGE_BYTES] {
        let mut by_view = SnapshotEncoder::new(budget).expect("valid");
        let mut direct = SnapshotEncoder::new(budget).expect("valid");
        for view in &views {
            let frames: Vec<EntityFrame> = view
                .iter()
                .map(|&(i, since)| EntityFrame {
                    in_view_since: since,
                    ..world[i].clone()
                })
                .collect();
            let expected: Vec<Vec<u8>> = direct
                .encode(Tick(77), 1.203125, &frames)
                .expect("valid")
                .map(<[u8]>::to_vec)
                .collect();
            let got: Vec<Vec<u8>> = by_view
                .encode_view(&encoded, view.iter().copied())
                .expect("valid")
                .map(<[u8]>::to_vec)
                .collect();
            assert_eq!(got, expected, "budget {budget}, view {view:?}");
            let decoded: Vec<EntityFrame> = got
                .iter()
                .flat_map(|bytes| match ServerMessage::decode(bytes) {
                    Ok(ServerMessage::Snapshot(part)) => part.entities,
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(decoded, frames);
        }
    }
}

#[test]
fn a_view_of_an_entity_not_encoded_is_refused_and_leaves_nothing() {
    let world: Vec<EntityFrame> = (0..3).map(|i| humanoid(i, 8)).collect();
    let mut encoded = EncodedEntities::default();
    encoded.encode(Tick(1), 0.5, &world).expect("valid");
    let mut encoder = SnapshotEncoder::default();
    assert_eq!(
        encoder.encode_view(&encoded, [(0, None), (3, None)]).err(),
        Some(EncodeError::UnknownEntity { index: 3, len: 3 })
    );
    // A bad world holds nothing afterwards.
    let mut nan = humanoid(9, 2);
    nan.velocity.y = f32::NAN;
    assert!(
        encoded
            .encode(Tick(2), 0.5, &[world[0].clone(), nan])
            .is_err()
    );
    assert!(encoded.is_empty());
    assert!(encoded.encode(Tick(2), f64::NAN, &world).is_err());
    assert!(encoded.is_empty());
    assert_eq!(
        encoder.encode_view(&encoded, [(0, None)]).err(),
        Some(EncodeError::UnknownEntity { index: 0, len: 0 })
    );
}

#[test]
fn views_stop_allocating_once_warm() {
    let world: Vec<EntityFrame> = (0..24).map(|i| humanoid(i, 8)).collect();
    let mut encoded = EncodedEntities::default();
    let mut encoder = SnapshotEncoder::default();
    let view: Vec<(usize, Option<Tick>)> = (0..24).step_by(2).map(|i| (i, Some(Tick(1)))).collect();
    encoded.encode(Tick(1), 0.0, &world).expect("valid");
    let first = encoder
        .encode_view(&encoded, view.iter().copied())
        .expect("valid")
        .next()
        .map(<[u8]>::as_ptr);
    for tick in 2..10 {
        encoded
            .encode(Tick(tick), f64::from(tick) / 64.0, &world)
            .expect("valid");
        let pointer = encoder
            .encode_view(&encoded, view.iter().copied())
            .expect("valid")
            .next()
            .map(<[u8]>::as_ptr);
        assert_eq!(pointer, first, "the buffer moved");
    }
}
