//! Scenes of the example recording's verdicts, and the .glb container itself.

use lagcomp::{EntityId, Quat, Shape, StaticId, Vec3};
use lagcomp_gltf::{MarkerKind, SceneError, scene_of_shot};
use lagcomp_validate::recording::{RecordingEntry, revalidate, revalidate_until};
use serde_json::Value;

use crate::support::{every_shape, example_recording};

const SHOOTER: EntityId = EntityId::from_bits(0);
const TARGET: EntityId = EntityId::from_bits(1);

/// The JSON chunk of a .glb, after checking the container: header, chunk lengths, 4-byte
/// alignment, a BIN chunk as long as the buffer says.
fn json_of(glb: &[u8]) -> Value {
    let word = |at: usize| u32::from_le_bytes(glb[at..at + 4].try_into().unwrap()) as usize;
    assert_eq!(&glb[..4], b"glTF");
    assert_eq!(word(4), 2, "version");
    assert_eq!(word(8), glb.len(), "total length");
    let json_len = word(12);
    assert_eq!(&glb[16..20], b"JSON");
    assert_eq!(json_len % 4, 0);
    let json: Value = serde_json::from_slice(&glb[20..20 + json_len]).expect("the JSON chunk");
    let bin = 20 + json_len;
    assert_eq!(&glb[bin + 4..bin + 8], b"BIN\0");
    let bin_len = word(bin);
    assert_eq!(bin_len % 4, 0);
    assert_eq!(bin + 8 + bin_len, glb.len());
    let declared = json["buffers"][0]["byteLength"].as_u64().unwrap() as usize;
    assert!(
        declared <= bin_len && bin_len - declared < 4,
        "{declared} vs {bin_len}"
    );
    json
}

#[test]
fn a_confirmed_hit_shows_the_target_then_and_now() {
    let recording = example_recording();
    let scene = scene_of_shot(&recording, None, 1, None).expect("seq 1 has one shooter");
    let names: Vec<&str> = scene.rewound.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["body", "head"]);
    assert_eq!(scene.present.len(), 2);
    // The target moved between the rewound time (0.3 s) and the present (0.4 s).
    let moved = scene.present[1].placed.pose.translation - scene.rewound[1].placed.pose.translation;
    assert!(moved.length() > 0.05, "{moved}");
    // The shot stops where the server's trace entered the head, which the marker shows.
    let hit = scene
        .markers
        .iter()
        .find(|m| m.kind == MarkerKind::Hit)
        .expect("hit marker");
    let end = scene.shot.origin + scene.shot.direction.normalize() * scene.shot.length;
    assert!(end.distance(hit.point) < 1e-3, "{end} vs {}", hit.point);
    assert!(scene.markers.iter().any(|m| m.kind == MarkerKind::Claimed));
    let extras = &scene.extras;
    assert_eq!(extras["outcome"], "confirmed");
    assert_eq!(extras["reason"], Value::Null);
    assert_eq!(extras["seq"], 1);
    assert_eq!(extras["shooter"], SHOOTER.to_bits());
    assert_eq!(extras["target"], TARGET.to_bits());
    assert_eq!(extras["time_used"], 0.3);
    assert_eq!(extras["rewound_time"], 0.3);
    assert_eq!(extras["present_time"], 0.4);
    assert_eq!(extras["received_at"], 0.45);
    assert_eq!(extras["verdict"]["type"], "verdict");
    assert_eq!(extras["recorded_outcome"], "confirmed");
    assert_eq!(extras["changed"], false);

    let json = json_of(&scene.to_glb().unwrap());
    assert_eq!(json["scenes"][0]["extras"]["outcome"], "confirmed");
    assert_eq!(json["scenes"][0]["extras"]["target"], 1);
    let node_names: Vec<&str> = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    for name in [
        "present: head",
        "rewound: head",
        "shot",
        "hit point",
        "claimed point",
    ] {
        assert!(node_names.contains(&name), "{name} not in {node_names:?}");
    }
    // Present and rewound hitboxes: translucent, in different colours.
    let material = |name: &str| {
        json["materials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no material {name}"))
            .clone()
    };
    let (present, rewound) = (material("present hitbox"), material("rewound hitbox"));
    assert_eq!(present["alphaMode"], "BLEND");
    assert_eq!(rewound["alphaMode"], "BLEND");
    let colour = |m: &Value| m["pbrMetallicRoughness"]["baseColorFactor"].clone();
    assert_ne!(colour(&present), colour(&rewound));
}

#[test]
fn a_blocked_shot_shows_the_wall_and_stops_at_it() {
    let scene = scene_of_shot(&example_recording(), None, 2, Some(SHOOTER)).unwrap();
    assert_eq!(scene.extras["outcome"], "blocked");
    assert_eq!(scene.walls.len(), 1);
    assert_eq!(scene.walls[0].id, StaticId(0));
    assert!(matches!(scene.walls[0].placed.shape, Shape::Box { .. }));
    assert!(
        (scene.shot.length - 4.924_439_4).abs() < 1e-5,
        "{}",
        scene.shot.length
    );
    assert!((scene.walls[0].distance - scene.shot.length).abs() < 1e-4);
    // No target named, none hit: the one it passed nearest (behind the wall).
    assert_eq!(scene.extras["target_from"], "nearest");
    assert_eq!(scene.extras["target"], TARGET.to_bits());
}

#[test]
fn a_miss_that_named_nobody_shows_whom_it_passed() {
    // Seq 4 went 2 cm up per metre over the target's head: a miss, naming nobody. The
    // target is the entity it passed nearest, at the time the trace used.
    let scene = scene_of_shot(&example_recording(), None, 4, None).unwrap();
    assert_eq!(scene.extras["outcome"], "miss");
    assert_eq!(scene.extras["target"], TARGET.to_bits());
    assert_eq!(scene.extras["target_from"], "nearest");
    assert_eq!(scene.rewound.len(), 2);
    assert!(scene.markers.is_empty());
    // Drawn past the target, not to the weapon's 50 m range.
    assert!(
        scene.shot.length > 10.0 && scene.shot.length < 15.0,
        "{}",
        scene.shot.length
    );
}

#[test]
fn a_rejected_shot_shows_what_it_claimed() {
    // Seq 3 broke the fire rate: rejected before any trace, so no time was used; the
    // extras say so and carry the reason.
    let scene = scene_of_shot(&example_recording(), None, 3, None).unwrap();
    assert_eq!(scene.extras["outcome"], "fire_rate");
    assert_eq!(scene.extras["reason"], "fire_rate");
    assert_eq!(scene.extras["time_used"], Value::Null);
    assert_eq!(scene.extras["rewound_from"], "claim");
    assert_eq!(scene.extras["rewound_time"], 0.45);
    assert!(scene.to_glb().is_ok());
}

#[test]
fn the_same_scene_gives_the_same_bytes() {
    let recording = example_recording();
    let first = scene_of_shot(&recording, None, 1, None)
        .unwrap()
        .to_glb()
        .unwrap();
    let again = scene_of_shot(&recording, None, 1, None)
        .unwrap()
        .to_glb()
        .unwrap();
    assert_eq!(first, again);
    assert_eq!(
        every_shape().to_glb().unwrap(),
        every_shape().to_glb().unwrap()
    );
}

#[test]
fn a_sweep_shows_its_radius() {
    let json = json_of(&every_shape().to_glb().unwrap());
    let sweep = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .position(|n| n["name"] == "shot: sweep radius")
        .expect("a sweep node");
    // Its mesh spans the radius across the shot: positions' bounds at least 2 r wide in x.
    let accessor = json["meshes"][sweep]["primitives"][0]["attributes"]["POSITION"]
        .as_u64()
        .unwrap() as usize;
    let min = &json["accessors"][accessor]["min"];
    let max = &json["accessors"][accessor]["max"];
    let width = max[1].as_f64().unwrap() - min[1].as_f64().unwrap();
    assert!(width >= 0.2 - 1e-6, "{width}");
}

#[test]
fn numbers_that_cannot_be_drawn_are_errors() {
    let number = |e: SceneError| matches!(e, SceneError::Number { .. });
    let mut scene = every_shape();
    scene.shot.origin.x = f32::NAN;
    assert!(number(scene.to_glb().unwrap_err()));

    let mut scene = every_shape();
    scene.shot.direction = Vec3::ZERO;
    let error = scene.to_glb().unwrap_err();
    assert_eq!(error.to_string(), "shot direction is of zero length");

    let mut scene = every_shape();
    scene.shot.radius = -1.0;
    assert!(number(scene.to_glb().unwrap_err()));

    let mut scene = every_shape();
    scene.shot.length = f32::INFINITY;
    assert!(number(scene.to_glb().unwrap_err()));

    let mut scene = every_shape();
    scene.rewound[0].placed.pose.rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 2.0);
    let error = scene.to_glb().unwrap_err();
    assert!(matches!(error, SceneError::Pose { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with("rewound hitbox head"),
        "{error}"
    );

    let mut scene = every_shape();
    scene.present[1].placed.shape = Shape::cuboid(Vec3::new(0.2, f32::NAN, 0.2));
    assert!(matches!(
        scene.to_glb().unwrap_err(),
        SceneError::Shape { .. }
    ));

    let mut scene = every_shape();
    scene.walls[0].placed.pose.translation.z = f32::INFINITY;
    assert!(matches!(
        scene.to_glb().unwrap_err(),
        SceneError::Pose { .. }
    ));
}

#[test]
fn a_claim_with_numbers_that_cannot_be_drawn_is_an_error() {
    // A recording keeps a claim's NaN (the validator rejects it as non_finite); its
    // picture cannot be drawn, and says why instead of writing a broken file.
    let mut recording = example_recording();
    for (_, record) in &mut recording.records {
        if let RecordingEntry::Claim { claim, .. } = record
            && claim.seq == 4
        {
            claim.direction.y = f32::NAN;
        }
    }
    let error = scene_of_shot(&recording, None, 4, None).unwrap_err();
    assert!(matches!(error, SceneError::Number { .. }), "{error:?}");
    assert_eq!(error.to_string(), "shot direction is not finite");
}

#[test]
fn a_missing_or_ambiguous_seq_is_an_error() {
    let mut recording = example_recording();
    let error = scene_of_shot(&recording, None, 99, None).unwrap_err();
    assert!(
        matches!(
            error,
            SceneError::NoSuchShot {
                seq: 99,
                shooter: None
            }
        ),
        "{error:?}"
    );
    let error = scene_of_shot(&recording, None, 1, Some(TARGET)).unwrap_err();
    assert!(matches!(error, SceneError::NoSuchShot { .. }), "{error:?}");

    // The target fires a seq 1 of its own at the end: seq 1 alone no longer says whose.
    let last = recording.records.last().unwrap().0;
    let (_, RecordingEntry::Claim { received_at, claim }) = recording
        .records
        .iter()
        .find(|(_, r)| matches!(r, RecordingEntry::Claim { .. }))
        .cloned()
        .unwrap()
    else {
        unreachable!()
    };
    let mut theirs = claim;
    theirs.shooter = TARGET;
    theirs.hit = None;
    recording.records.push((
        last + 1,
        RecordingEntry::Claim {
            received_at: received_at + 1.0,
            claim: theirs,
        },
    ));
    let error = scene_of_shot(&recording, None, 1, None).unwrap_err();
    match &error {
        SceneError::AmbiguousShot { seq: 1, shooters } => assert_eq!(shooters, &[SHOOTER, TARGET]),
        other => panic!("{other:?}"),
    }
    assert!(error.to_string().contains("name the shooter"), "{error}");
    let theirs = scene_of_shot(&recording, None, 1, Some(TARGET)).unwrap();
    assert_eq!(theirs.extras["shooter"], TARGET.to_bits());
}

#[test]
fn revalidate_until_stops_at_the_picked_claim_with_what_revalidate_judged() {
    let recording = example_recording();
    let all = revalidate(&recording, None, |_, _| {}).unwrap();
    let mut seen = 0;
    let picked = revalidate_until(&recording, None, |replayed| {
        seen += 1;
        assert_eq!(*replayed.judged, all[seen - 1]);
        // The history holds the frames up to the claim's line, no more.
        let newest = replayed.history.window().unwrap().1;
        assert!(newest <= replayed.judged.received_at, "{newest}");
        (replayed.judged.claim.seq == 2).then_some(replayed.judged.line)
    })
    .unwrap();
    assert_eq!(picked, Some(all[2].line));
    assert_eq!(seen, 3, "claims after the picked one are not judged");
    assert_eq!(
        all[0].recorded.map(|v| v.outcome.label()),
        Some("confirmed")
    );
}

/// A shot judged live is drawn as the same shot re-validated from a recording, less the
/// recording's own facts (its line, the recorded outcome, whether it changed).
#[test]
fn a_shot_judged_live_is_drawn_as_its_replay_is() {
    let recording = example_recording();
    let mut compared = 0;
    revalidate_until(&recording, None, |replayed| {
        let judged = replayed.judged;
        let mut replay = lagcomp_gltf::scene_of_claim(replayed).expect("a scene");
        // The example's entities are numbered as a fresh history numbers them.
        assert_eq!(
            replayed.replayed_id(judged.claim.shooter),
            judged.claim.shooter
        );
        let live = lagcomp_gltf::scene_of_verdict(
            replayed.history,
            replayed.validator.rules(),
            &judged.claim,
            &judged.verdict,
            &replayed.spawned(),
        )
        .expect("a scene");
        for key in ["line", "recorded_outcome", "changed"] {
            assert!(replay.extras.remove(key).is_some(), "{key}");
        }
        assert_eq!(live, replay, "seq {}", judged.claim.seq);
        assert_eq!(live.to_glb().unwrap(), replay.to_glb().unwrap());
        compared += 1;
        None::<()>
    })
    .expect("the example re-validates");
    assert_eq!(compared, 5, "every claim of the example");
}
