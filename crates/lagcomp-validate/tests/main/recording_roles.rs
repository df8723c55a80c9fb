//! Entity roles and per-weapon layers in recordings (format 3): a match with a sliding door
//! (a blocker entity) and a rifle and a sniper rifle with layer masks re-validates to the
//! live verdicts (blocked by the door, confirmed once it opened, the sniper round through
//! it, a claim on the door refused); the same members under an older header are refused
//! with the line; a version 2 file still reads and re-validates.

use std::sync::Arc;

use lagcomp::{
    Blocker, BoneTransform, EntityId, EntityRole, EntityState, History, HistoryConfig, Hitbox, Rig,
    Shape, Tick, Vec3, Zone,
};
use lagcomp_validate::recording::{
    FORMAT_VERSION, Recording, RecordingEntry, RecordingErrorKind, RecordingWriter, revalidate,
};
use lagcomp_validate::{
    ClaimedHit, Participant, RejectReason, RenderTime, RuleSet, ShotClaim, Validator, Verdict,
    VerdictOutcome, WeaponId,
};

use crate::doors::{OPENS_AT, RATE, TIMING};
use crate::weapon_layers::weapon;

/// The door's layer: the sniper rifle is not blocked by it.
const DOOR_LAYER: u32 = 2;

/// A shooter at z = 10 looking -z, a head at z = -10, a door across z = 0 until
/// [`OPENS_AT`]; every call made live and written. Returns the file, the live verdicts and
/// the door.
fn door_match() -> (Vec<u8>, Vec<Verdict>, EntityId) {
    let config = HistoryConfig {
        tick_rate: RATE,
        max_rewind: 0.5,
    };
    let rules = [
        weapon("rifle", 1, ""),
        weapon("sniper", 2, "blocked_by = 0xfffffffd"),
    ]
    .concat();
    let rules = RuleSet::from_toml(&rules).unwrap();
    let mut out = RecordingWriter::new(Vec::new(), &config).unwrap();
    out.rules(&rules).unwrap();
    let mut history = History::new(config).unwrap();
    let mut validator = Validator::new(rules);
    let ball = Rig::rigid(vec![Hitbox::new(
        0,
        "head",
        Zone::Head,
        0,
        Shape::sphere(0.12),
    )])
    .unwrap();
    let ball = Arc::new(ball);
    let panel = Hitbox::new(
        0,
        "panel",
        Zone::Custom(7),
        0,
        Shape::cuboid(Vec3::new(1.0, 1.5, 0.05)),
    );
    let door_rig = Arc::new(Rig::rigid(vec![panel]).unwrap());
    let door = history.spawn_as(Arc::clone(&door_rig), EntityRole::Blocker);
    out.spawn_as(door, &door_rig, EntityRole::Blocker, None)
        .unwrap();
    let (shooter, target) = spawn_duel(&mut history, &mut validator, &mut out, &ball);
    let mut live = Vec::new();
    let mut seq = 0;
    for tick in 0..48_u32 {
        let time = f64::from(tick) / RATE;
        let door_at = if tick < OPENS_AT {
            Vec3::ZERO
        } else {
            Vec3::X * 3.0
        };
        let on_door_layer = EntityState {
            layers: DOOR_LAYER,
            ..EntityState::default()
        };
        let poses = [
            (
                door,
                on_door_layer,
                [BoneTransform::from_translation(door_at)],
            ),
            (
                shooter,
                EntityState::default(),
                [BoneTransform::from_translation(Vec3::Z * 10.0)],
            ),
            (
                target,
                EntityState::default(),
                [BoneTransform::from_translation(Vec3::Z * -10.0)],
            ),
        ];
        let mut frame = history.begin_frame(Tick(tick), time).unwrap();
        for (id, state, bones) in &poses {
            frame.record(*id, bones, *state).unwrap();
        }
        frame.finish();
        let entities: Vec<_> = poses.iter().map(|(id, s, b)| (*id, *s, &b[..])).collect();
        out.frame(Tick(tick), time, &entities).unwrap();
        // (drawn at, weapon, claimed target).
        for (render, weapon, claimed) in [
            (6, 1, target),
            (14, 2, target),
            (22, 1, door),
            (OPENS_AT + 6, 1, target),
        ] {
            if tick != render + 10 {
                continue;
            }
            seq += 1;
            let render = f64::from(render) / RATE;
            let claim = ShotClaim {
                shooter,
                weapon: WeaponId(weapon),
                seq,
                render_time: RenderTime::Time(render),
                origin: Vec3::Z * 10.0,
                direction: Vec3::NEG_Z,
                hit: Some(ClaimedHit {
                    target: claimed,
                    hitbox: None,
                    point: Some(if claimed == door {
                        Vec3::Z * 0.05
                    } else {
                        Vec3::Z * -9.88
                    }),
                }),
            };
            let arrives = render + TIMING.expected_rewind();
            out.claim(arrives, &claim).unwrap();
            let verdict = validator.validate(&history, &claim, arrives);
            out.verdict(&verdict).unwrap();
            live.push(verdict);
        }
    }
    (out.finish().unwrap(), live, door)
}

/// A shooter (team 1, looking -z) and its target (team 2, looking +z), both `rig`,
/// spawned, registered and written; the shooter's timing is [`TIMING`].
pub(crate) fn spawn_duel(
    history: &mut History,
    validator: &mut Validator,
    out: &mut RecordingWriter<Vec<u8>>,
    rig: &Arc<Rig>,
) -> (EntityId, EntityId) {
    let mut players = Vec::new();
    for (team, forward) in [(1, Vec3::NEG_Z), (2, Vec3::Z)] {
        let id = history.spawn(Arc::clone(rig));
        let participant = Participant {
            team,
            aim_bone: 0,
            aim_forward: forward,
        };
        validator.register(id, participant);
        out.spawn(id, rig, &participant).unwrap();
        players.push(id);
    }
    validator.set_timing(players[0], TIMING).unwrap();
    out.timing(players[0], &TIMING).unwrap();
    (players[0], players[1])
}

#[test]
fn a_match_with_a_door_and_layer_masks_revalidates_to_the_live_verdicts() {
    let (bytes, live, door) = door_match();
    let outcomes: Vec<VerdictOutcome> = live.iter().map(|v| v.outcome).collect();
    assert!(
        matches!(outcomes[0], VerdictOutcome::Blocked { by: Blocker::Entity(d), .. } if d == door),
        "{outcomes:?}"
    );
    assert!(
        matches!(outcomes[1], VerdictOutcome::Confirmed(_)),
        "the sniper round passes"
    );
    assert_eq!(outcomes[2].reason(), Some(RejectReason::NotATarget));
    assert!(
        matches!(outcomes[3], VerdictOutcome::Confirmed(_)),
        "the door is open"
    );

    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains(&format!("\"version\":{FORMAT_VERSION}")));
    const { assert!(FORMAT_VERSION >= 3) };
    assert!(text.contains("\"role\":\"blocker\""), "{text}");
    assert!(text.contains("\"blocked_by\":4294967293"), "{text}");
    let recording = Recording::read(&bytes[..]).expect("reads");
    let roles: Vec<EntityRole> = recording
        .records
        .iter()
        .filter_map(|(_, r)| match r {
            RecordingEntry::Spawn { role, .. } => Some(*role),
            _ => None,
        })
        .collect();
    assert_eq!(
        roles,
        [EntityRole::Blocker, EntityRole::Target, EntityRole::Target]
    );
    let judged = revalidate(&recording, None, |_, _| {}).expect("replays");
    assert_eq!(judged.len(), live.len());
    for (r, live) in judged.iter().zip(&live) {
        assert_eq!(r.recorded, Some(*live), "line {}", r.line);
        assert_eq!(r.verdict, *live, "line {}", r.line);
    }
    assert_eq!(recording.write(Vec::new()).unwrap(), bytes);
}

#[test]
fn roles_and_layer_masks_need_format_3() {
    let (bytes, _, _) = door_match();
    let text = String::from_utf8(bytes).unwrap();
    let older = text.replacen(&format!("\"version\":{FORMAT_VERSION}"), "\"version\":2", 1);
    let e = Recording::read(older.as_bytes()).expect_err("format 3 members in a v2 file");
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::MemberNotInVersion {
                needs: 3,
                version: 2,
                ..
            }
        ),
        "{e}"
    );
    // The rules line (line 2) is the first with a format 3 member.
    assert_eq!(e.line, 2, "{e}");
    // Without the masks, the door's spawn is the first.
    let no_masks = older.replace(",\"blocked_by\":4294967293", "");
    let e = Recording::read(no_masks.as_bytes()).expect_err("a role in a v2 file");
    let spawn_line = no_masks
        .lines()
        .position(|l| l.contains("\"role\""))
        .unwrap()
        + 1;
    assert_eq!(e.line, spawn_line, "{e}");
    assert!(e.to_string().contains("spawn.role"), "{e}");
}

#[test]
fn a_version_2_file_reads_and_revalidates_as_before() {
    // The door match with a plain target for a door and no masks is a valid v2 file.
    let (bytes, _, _) = door_match();
    let text = String::from_utf8(bytes).unwrap();
    let v2: String = text
        .replacen(&format!("\"version\":{FORMAT_VERSION}"), "\"version\":2", 1)
        .replace(",\"blocked_by\":4294967293", "")
        .replace(",\"role\":\"blocker\"", "")
        .lines()
        // The verdicts were judged with the door a blocker; keep only the claims.
        .filter(|l| !l.contains("\"type\":\"verdict\""))
        .flat_map(|l| [l, "\n"])
        .collect();
    let recording = Recording::read(v2.as_bytes()).expect("a v2 file reads");
    let judged = revalidate(&recording, None, |_, _| {}).expect("replays");
    let labels: Vec<&str> = judged.iter().map(|r| r.verdict.outcome.label()).collect();
    // Before roles the door was a target, and a file without them judges as main did
    // (the issue's report): a claim on the player behind the closed door is
    // `tampered_claim` for both weapons, and a claim on the door itself counts.
    assert_eq!(
        labels,
        ["tampered_claim", "tampered_claim", "confirmed", "confirmed"],
        "{judged:?}"
    );
}

#[test]
fn the_version_2_example_reads_and_revalidates_to_its_verdicts() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/v2/example.jsonl");
    let bytes = std::fs::read(path).unwrap();
    assert!(
        String::from_utf8_lossy(&bytes)
            .starts_with(r#"{"type":"header","format":"lagcomp-recording","version":2,"#),
        "{path} is a version 2 file"
    );
    let recording = Recording::read(&bytes[..]).unwrap();
    let judged = revalidate(&recording, None, |_, _| {}).unwrap();
    let labels: Vec<&str> = judged.iter().map(|r| r.verdict.outcome.label()).collect();
    assert_eq!(
        labels,
        ["confirmed", "replayed", "blocked", "fire_rate", "miss"]
    );
    for r in &judged {
        assert!(!r.changed(), "line {}: {:?}", r.line, r.verdict);
    }
}
