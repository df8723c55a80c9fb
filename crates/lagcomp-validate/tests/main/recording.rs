//! Match recordings: a scripted match recorded live and re-validated offline, changed
//! rules, bad recordings refused with their line, and the format document's example and
//! JSON shapes checked against what the library really writes.

use crate::recording_support;
use std::collections::BTreeSet;
use std::io;

use crate::recording_support::{
    EXAMPLE_RULES, MATCH_RULES, Played, RIFLE, SMG, example_recording, match_rules, play_match,
};
use lagcomp::{
    Blocker, BoneTransform, EntityId, EntityState, HistoryConfig, NearestReason, Pose, Quat, Rig,
    SampleKind, Shape, StaticId, Tick, TransformError, Vec3, Zone,
};
use lagcomp_validate::recording::{
    FORMAT_VERSION, RecordType, RecordedFrame, Recording, RecordingEntry, RecordingError,
    RecordingErrorKind, RecordingWriter, limits, revalidate,
};
use lagcomp_validate::{
    Basis, ClaimedHit, ClientTiming, Confirmed, Participant, RejectReason, RenderTime, ShotClaim,
    TornTail, Verdict, VerdictOutcome, WeaponId,
};

fn read(bytes: &[u8]) -> Recording {
    Recording::read(bytes).unwrap_or_else(|e| panic!("{e}"))
}

fn read_err(bytes: &[u8]) -> RecordingError {
    match Recording::read(bytes) {
        Ok(_) => panic!("read a bad recording"),
        Err(e) => e,
    }
}

fn text_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8(bytes.to_vec())
        .expect("UTF-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn joined(lines: &[String]) -> Vec<u8> {
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}

/// Whether two claims are the same, counting NaN equal to NaN (a claim's non-finite
/// numbers are written as `null` and read back as NaN).
fn same_claim(a: &ShotClaim, b: &ShotClaim) -> bool {
    let bits = |v: Vec3| v.to_array().map(f32::to_bits);
    let nan_as_one = |v: Vec3| {
        bits(Vec3::from_array(
            v.to_array()
                .map(|x| if x.is_finite() { x } else { f32::NAN }),
        ))
    };
    a.shooter == b.shooter
        && a.weapon == b.weapon
        && a.seq == b.seq
        && a.render_time == b.render_time
        && nan_as_one(a.origin) == nan_as_one(b.origin)
        && nan_as_one(a.direction) == nan_as_one(b.direction)
        && a.hit == b.hit
}

#[test]
fn a_recorded_match_revalidates_to_every_live_verdict() {
    let Played {
        bytes,
        judged,
        expected,
        ghost,
    } = play_match();

    // The live verdicts are what the script meant them to be, and cover the outcomes.
    let live_labels: Vec<&str> = judged.iter().map(|(_, _, v)| v.outcome.label()).collect();
    assert_eq!(live_labels, expected);
    let kinds: BTreeSet<&str> = live_labels.iter().copied().collect();
    for wanted in [
        "confirmed",
        "miss",
        "blocked",
        "replayed",
        "fire_rate",
        "backtrack",
        "tampered_claim",
        "no_timing",
        "unknown_weapon",
        "non_finite",
        "friendly_fire",
        "target_not_compensated",
        "target_not_alive",
        "unknown_shooter",
        "time_in_future",
        "angle_too_far",
        "origin_too_far",
        "sequence_too_old",
    ] {
        assert!(kinds.contains(wanted), "no {wanted} verdict in {kinds:?}");
    }
    // The server's ids are not the ones a fresh history gives (slot 0 was used before
    // the match), so the replay has to map them.
    assert_eq!(judged[0].1.shooter.generation(), 1);

    let recording = read(&bytes);
    assert_eq!(recording.claims(), judged.len());
    assert_eq!(recording.config.tick_rate, 64.0);
    assert_eq!(recording.rules, Some(match_rules()));
    let frames = recording
        .records
        .iter()
        .filter(|(_, r)| matches!(r, RecordingEntry::Frame(_)))
        .count();
    assert_eq!(frames, recording_support::TICKS as usize);

    let mut progress = Vec::new();
    let again = revalidate(&recording, None, |done, total| progress.push((done, total)))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.len(), judged.len());
    assert_eq!(
        progress,
        (1..=judged.len())
            .map(|done| (done, judged.len()))
            .collect::<Vec<_>>()
    );
    let mut previous_line = 0;
    for (now, (received_at, claim, live)) in again.iter().zip(&judged) {
        assert_eq!(now.verdict, *live, "line {}", now.line);
        assert_eq!(now.recorded, Some(*live), "line {}", now.line);
        assert!(!now.changed());
        assert_eq!(now.received_at, *received_at);
        assert!(same_claim(&now.claim, claim), "line {}", now.line);
        assert!(now.line > previous_line);
        previous_line = now.line;
    }

    // The claim with a NaN origin and an infinite direction: written as null, read as NaN.
    let non_finite = again
        .iter()
        .find(|r| r.verdict.outcome.reason() == Some(RejectReason::NonFinite))
        .expect("a non-finite claim");
    assert!(non_finite.claim.origin.y.is_nan());
    assert!(non_finite.claim.direction.x.is_nan());
    let raw = &text_lines(&bytes)[non_finite.line - 1];
    assert!(raw.contains("\"origin\":[0.0,null,"), "{raw}");

    // The claim naming an entity that never existed stayed unknown on replay.
    let ghostly = again
        .iter()
        .find(|r| r.claim.hit.is_some_and(|h| h.target == ghost))
        .expect("the ghost claim");
    assert_eq!(
        ghostly.verdict.outcome.reason(),
        Some(RejectReason::TamperedClaim)
    );
}

#[test]
fn writing_what_was_read_gives_the_same_bytes() {
    for bytes in [play_match().bytes, example_recording()] {
        let recording = read(&bytes);
        let written = recording.write(Vec::new()).expect("writes");
        assert_eq!(
            String::from_utf8(written).expect("UTF-8"),
            String::from_utf8(bytes.clone()).expect("UTF-8")
        );
        // Line by line too, through `RecordingEntry::parse` and `RecordingEntry::to_json`.
        for (line, (number, record)) in text_lines(&bytes).iter().zip(&recording.records) {
            let parsed =
                RecordingEntry::parse(line).unwrap_or_else(|e| panic!("line {number}: {e}"));
            assert_eq!(parsed.kind(), record.kind());
            assert_eq!(&parsed.to_json(), line);
            assert_eq!(&serde_json::to_string(record).expect("serializes"), line);
        }
        // A second pass through reading and writing changes nothing either (compared as
        // bytes: a claim's NaN is not equal to itself).
        let twice = read(&recording.write(Vec::new()).expect("writes"))
            .write(Vec::new())
            .expect("writes");
        assert_eq!(twice, bytes);
    }
}

#[test]
fn changed_rules_change_the_verdicts_they_should() {
    let played = play_match();
    let recording = read(&played.bytes);

    // The recording's own rules, given explicitly: nothing changes.
    let same = revalidate(&recording, Some(&match_rules()), |_, _| {}).expect("replays");
    assert!(same.iter().all(|r| !r.changed()));

    // A shorter SMG and a tighter rifle cone.
    let stricter = lagcomp_validate::RuleSet::from_toml(
        &MATCH_RULES
            .replace("max_range = 25.0", "max_range = 15.0")
            .replace("aim_tolerance_deg = 4.0", "aim_tolerance_deg = 2.0"),
    )
    .expect("valid rules");
    let again = revalidate(&recording, Some(&stricter), |_, _| {}).expect("replays");
    let changed: Vec<(u32, WeaponId, &str, &str)> = again
        .iter()
        .filter(|r| r.changed())
        .map(|r| {
            (
                r.claim.seq,
                r.claim.weapon,
                r.recorded.expect("recorded").outcome.label(),
                r.verdict.outcome.label(),
            )
        })
        .collect();
    assert_eq!(
        changed,
        [
            // 2.5 degrees over the head: inside 4 degrees, outside 2.
            (4, RIFLE, "miss", "angle_too_far"),
            // Aimed at a point a metre beside the head: 2.9 degrees off the view.
            (6, RIFLE, "tampered_claim", "angle_too_far"),
            // The SMG's head shot from 20 m: the trace no longer reaches, and the claimed
            // point lies beyond the range.
            (10, SMG, "confirmed", "tampered_claim"),
            // Too far off under both; the verdict now measures it against 2 degrees.
            (16, RIFLE, "angle_too_far", "angle_too_far"),
            (317, RIFLE, "miss", "angle_too_far"),
        ]
    );
    // Every other verdict is the recorded one, exactly.
    for r in again.iter().filter(|r| !r.changed()) {
        assert_eq!(Some(r.verdict), r.recorded);
    }
}

/// The example recording's lines, to break one at a time.
fn example_lines() -> Vec<String> {
    text_lines(&example_recording())
}

/// Reads `lines` with line `at` (1-based) replaced by `f` of it, and returns the error.
fn with_line(at: usize, f: impl FnOnce(&str) -> String) -> RecordingError {
    let mut lines = example_lines();
    lines[at - 1] = f(&lines[at - 1]);
    read_err(&joined(&lines))
}

fn assert_line(e: &RecordingError, line: usize) {
    assert_eq!(e.line, line, "{e}");
    assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
}

#[test]
fn broken_files_name_the_line() {
    // Nothing at all.
    let e = read_err(b"");
    assert_line(&e, 1);
    assert!(matches!(e.kind, RecordingErrorKind::Empty), "{e}");

    // No header: the rules come first.
    let lines = example_lines();
    let e = read_err(&joined(&lines[1..]));
    assert_line(&e, 1);
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::MissingHeader {
                found: RecordType::Rules
            }
        ),
        "{e}"
    );

    // Another format; a future version.
    let e = with_line(1, |l| l.replace("lagcomp-recording", "replay-v2"));
    assert!(
        matches!(&e.kind, RecordingErrorKind::WrongFormat(f) if f == "replay-v2"),
        "{e}"
    );
    let e = with_line(1, |l| {
        l.replace(&format!("\"version\":{FORMAT_VERSION}"), "\"version\":99")
            .replace("\"tick_rate\"", "\"rate\"")
    });
    assert_line(&e, 1);
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::UnsupportedVersion {
                found: 99,
                supported: FORMAT_VERSION
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("version 99"), "{e}");

    // A second header.
    let mut lines = example_lines();
    lines.insert(3, lines[0].clone());
    let e = read_err(&joined(&lines));
    assert_line(&e, 4);
    assert!(matches!(e.kind, RecordingErrorKind::DuplicateHeader), "{e}");

    // Cut off anywhere in the last line (a writer killed mid-line): every complete line
    // before it is read, and the torn one is named.
    let bytes = example_recording();
    let last = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .expect("more than one line")
        + 1;
    let complete = read(&bytes[..last]);
    assert_eq!(complete.torn, None);
    for at in last + 1..bytes.len() - 1 {
        let torn = read(&bytes[..at]);
        assert_eq!(torn.records, complete.records, "cut at {at}");
        assert_eq!(
            torn.torn,
            Some(TornTail {
                line: 24,
                bytes: at - last
            }),
            "cut at {at}"
        );
    }
    let said = read(&bytes[..bytes.len() - 40])
        .torn
        .expect("torn")
        .to_string();
    assert!(
        said.starts_with("line 24: the file ends mid-record"),
        "{said}"
    );
    // Cut inside a character of more than one byte: torn as well, not "not UTF-8".
    let mut split = bytes[..last].to_vec();
    split.extend_from_slice("{\"type\":\"despawn\",\"entity\":\"é".as_bytes());
    split.pop();
    assert_eq!(read(&split).torn.map(|t| t.line), Some(24));
    let cut = &bytes[..bytes.len() - 40];
    // The same cut followed by a newline is malformed JSON, not a torn tail.
    let mut with_newline = cut.to_vec();
    with_newline.push(b'\n');
    let e = read_err(&with_newline);
    assert_line(&e, 24);
    assert!(matches!(e.kind, RecordingErrorKind::Json { .. }), "{e}");
    // A last line without its newline is fine when it is complete.
    let whole = read(&bytes[..bytes.len() - 1]);
    assert_eq!(whole.records.len(), 24);

    // Malformed JSON in the middle, with the column.
    let e = with_line(9, |l| l.replacen("\"tick\":2,", "\"tick\":2,,", 1));
    assert_line(&e, 9);
    assert!(
        matches!(e.kind, RecordingErrorKind::Json { column: 26, .. }),
        "{e}"
    );
    let e = with_line(9, |_| "[1, 2, 3]".into());
    assert!(matches!(e.kind, RecordingErrorKind::NotAnObject), "{e}");
    let e = with_line(9, |_| String::new());
    assert_line(&e, 9);
    assert!(matches!(e.kind, RecordingErrorKind::EmptyLine), "{e}");
    let mut bytes = joined(&example_lines());
    let at = bytes
        .windows(8)
        .position(|w| w == b"\"static\"")
        .expect("the static line");
    bytes[at + 2] = 0xff;
    let e = read_err(&bytes);
    assert_line(&e, 3);
    assert!(matches!(e.kind, RecordingErrorKind::NotUtf8 { .. }), "{e}");

    // Unknown, missing and mistyped members.
    let e = with_line(6, |l| l.replace("\"type\":\"timing\"", "\"type\":\"ping\""));
    assert_line(&e, 6);
    assert!(
        matches!(&e.kind, RecordingErrorKind::UnknownType(t) if t == "ping"),
        "{e}"
    );
    let e = with_line(6, |l| l.replace("\"type\":\"timing\",", ""));
    assert!(matches!(e.kind, RecordingErrorKind::MissingType), "{e}");
    let e = with_line(8, |l| l.replace("\"time\":0.1", "\"when\":0.1"));
    assert_line(&e, 8);
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::Invalid {
                kind: RecordType::Frame,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("`when`"), "{e}");
    let e = with_line(8, |l| l.replace("\"tick\":1", "\"tick\":\"one\""));
    assert!(e.to_string().contains("invalid frame record"), "{e}");
    let e = with_line(13, |l| l.replace(",\"by_leeway\":false", ""));
    assert_line(&e, 13);
    assert!(matches!(e.kind, RecordingErrorKind::Verdict(_)), "{e}");
    assert!(e.to_string().contains("by_leeway"), "{e}");
}

#[test]
fn inconsistent_recordings_name_the_line() {
    // Frames out of order: by tick (frames of ticks 2 and 3 swapped), and by time.
    let mut lines = example_lines();
    lines.swap(8, 9);
    let e = read_err(&joined(&lines));
    assert_line(&e, 10);
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::TickOutOfOrder {
                tick: 2,
                previous: 3
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "line 10: frames out of order: tick 2 after tick 3"
    );
    let e = with_line(10, |l| l.replace("\"time\":0.3", "\"time\":0.15"));
    assert_line(&e, 10);
    assert!(
        matches!(e.kind, RecordingErrorKind::TimeOutOfOrder { .. }),
        "{e}"
    );
    let e = with_line(10, |l| l.replace("\"time\":0.3", "\"time\":1e13"));
    assert!(matches!(e.kind, RecordingErrorKind::BadTime(_)), "{e}");

    // An entity never spawned, in a frame and as a shooter.
    let e = with_line(9, |l| l.replace("{\"entity\":1,", "{\"entity\":77,"));
    assert_line(&e, 9);
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::UnknownEntity {
                entity: 77,
                role: "frame"
            }
        ),
        "{e}"
    );
    let e = with_line(17, |l| l.replace("\"shooter\":0", "\"shooter\":5"));
    assert!(
        matches!(e.kind, RecordingErrorKind::UnknownEntity { entity: 5, .. }),
        "{e}"
    );

    // A despawned entity recorded later.
    let mut lines = example_lines();
    lines.insert(9, r#"{"type":"despawn","entity":1}"#.into());
    let e = read_err(&joined(&lines));
    assert_line(&e, 11);
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::Despawned {
                entity: 1,
                despawned: 10,
                ..
            }
        ),
        "{e}"
    );

    // Twice in one frame; spawned twice.
    let e = with_line(8, |l| l.replace("{\"entity\":1,", "{\"entity\":0,"));
    assert!(
        matches!(e.kind, RecordingErrorKind::RecordedTwice { entity: 0 }),
        "{e}"
    );
    let e = with_line(5, |l| l.replace("\"entity\":1", "\"entity\":0"));
    assert_line(&e, 5);
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::SpawnedTwice {
                entity: 0,
                first: 4
            }
        ),
        "{e}"
    );

    // Wrong bone count: a second bone for a one-bone rig.
    let bone =
        r#"{"translation":[0.0,1.6,0.0],"rotation":[0.0,0.0,0.0,1.0],"scale":[1.0,1.0,1.0]}"#;
    let e = with_line(8, |l| l.replacen(bone, &format!("{bone},{bone}"), 1));
    assert_line(&e, 8);
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::BoneCount {
                entity: 0,
                expected: 1,
                got: 2
            }
        ),
        "{e}"
    );

    // Transforms that are not: non-finite (JSON can only say so with null or a number
    // beyond f32), out of range, not a rotation, a zero scale.
    for non_finite in ["[0.0,null,0.0]", "[0.0,1e39,0.0]"] {
        let e = with_line(8, |l| l.replacen("[0.0,1.6,0.0]", non_finite, 1));
        assert_line(&e, 8);
        assert!(
            matches!(
                e.kind,
                RecordingErrorKind::Invalid {
                    kind: RecordType::Frame,
                    ..
                }
            ),
            "{e}"
        );
    }
    for (from, to, error) in [
        (
            "[0.0,1.6,0.0]",
            "[0.0,2e6,0.0]",
            TransformError::TranslationOutOfRange,
        ),
        (
            "[0.0,0.0,0.0,1.0]",
            "[0.0,0.0,0.0,2.0]",
            TransformError::RotationNotNormalized,
        ),
        (
            "[1.0,1.0,1.0]",
            "[1.0,0.0,1.0]",
            TransformError::InvalidScale,
        ),
    ] {
        let e = with_line(8, |l| l.replacen(from, to, 1));
        assert_line(&e, 8);
        assert!(
            matches!(e.kind, RecordingErrorKind::Transform { entity: 0, bone: 0, error: got } if got == error),
            "{e}"
        );
    }

    // Verdicts belong right after their claims; rules before the first claim.
    let mut lines = example_lines();
    lines.remove(11);
    let e = read_err(&joined(&lines));
    assert_line(&e, 12);
    assert!(
        matches!(e.kind, RecordingErrorKind::VerdictWithoutClaim),
        "{e}"
    );
    let e = with_line(13, |l| l.replace("\"seq\":1", "\"seq\":8"));
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::VerdictMismatch {
                seq: 8,
                claim_seq: 1,
                ..
            }
        ),
        "{e}"
    );
    let mut lines = example_lines();
    let rules = lines.remove(1);
    lines.insert(13, rules);
    let e = read_err(&joined(&lines));
    assert_line(&e, 14);
    assert!(
        matches!(e.kind, RecordingErrorKind::RulesAfterClaim { claim: 11 }),
        "{e}"
    );
    let e = with_line(2, |l| l.replace("\"max_range\":50.0", "\"max_range\":-1.0"));
    assert_line(&e, 2);
    assert!(e.to_string().contains("weapons.rifle.max_range"), "{e}");

    // A rig that cannot be built, a wall that cannot stand.
    let e = with_line(5, |l| l.replace("\"id\":1,", "\"id\":0,"));
    assert!(
        matches!(e.kind, RecordingErrorKind::Rig { entity: 1, .. }),
        "{e}"
    );
    let e = with_line(3, |l| l.replace("[0.2,1.5,0.1]", "[0.2,-1.5,0.1]"));
    assert!(matches!(e.kind, RecordingErrorKind::Static(_)), "{e}");
    let e = with_line(1, |l| l.replace("\"tick_rate\":10.0", "\"tick_rate\":0.0"));
    assert!(matches!(e.kind, RecordingErrorKind::Config(_)), "{e}");
}

#[test]
fn absurd_sizes_are_refused() {
    // Bones: a count far past the limit, and one just past it.
    for count in [1_000_000_u64, u64::from(limits::MAX_BONES) + 1] {
        let e = with_line(4, |l| {
            l.replace("\"bone_count\":1", &format!("\"bone_count\":{count}"))
        });
        assert_line(&e, 4);
        assert!(
            matches!(e.kind, RecordingErrorKind::TooLarge { got, limit: 256, .. } if got == count),
            "{e}"
        );
        assert!(e.to_string().contains("bone count"), "{e}");
    }

    // Hitboxes: one past the limit is refused before the rig is built.
    let hitbox = |id: usize| {
        format!(
            r#"{{"id":{id},"name":"h","zone":"Torso","bone":0,"offset":{{"translation":[0.0,0.0,0.0],"rotation":[0.0,0.0,0.0,1.0]}},"shape":{{"Sphere":{{"radius":0.1}}}}}}"#
        )
    };
    let spawn = |count: usize| {
        let hitboxes: Vec<String> = (0..count).map(hitbox).collect();
        format!(
            r#"{{"type":"spawn","entity":9,"bone_count":1,"hitboxes":[{}]}}"#,
            hitboxes.join(",")
        )
    };
    let mut lines = example_lines();
    lines.insert(5, spawn(limits::MAX_HITBOXES + 1));
    let e = read_err(&joined(&lines));
    assert_line(&e, 6);
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::TooLarge {
                got: 257,
                limit: 256,
                ..
            }
        ),
        "{e}"
    );
    lines[5] = spawn(limits::MAX_HITBOXES);
    read(&joined(&lines));

    // A rig declaring a million hitboxes (about 150 MB) is a line far over the limit:
    // refused having read little more than the limit.
    let lines = example_lines();
    let mut input = io::BufReader::new(Generated {
        head: joined(&lines[..5]),
        part: hitbox(0).into_bytes(),
        left: 1_000_000,
        tail: joined(&lines[5..]),
        ..Generated::default()
    });
    input
        .get_mut()
        .head
        .extend_from_slice(br#"{"type":"spawn","entity":9,"bone_count":1,"hitboxes":["#);
    let e = Recording::read(&mut input).expect_err("too long");
    assert_line(&e, 6);
    assert!(
        matches!(e.kind, RecordingErrorKind::LineTooLong { limit } if limit == limits::MAX_LINE_BYTES),
        "{e}"
    );
    let left = input.get_ref().left;
    assert!(left > 800_000, "read {} hitboxes", 1_000_000 - left);

    // Too many entities in one frame, all of them spawned.
    let count = limits::MAX_ENTITIES_PER_FRAME + 1;
    let mut lines = example_lines()[..6].to_vec();
    let entity = |i: usize| {
        format!(
            r#"{{"entity":{},"state":{{"alive":true,"lag_compensated":true,"teleported":false,"layers":1,"user":0}},"bones":[{{"translation":[0.0,0.0,0.0],"rotation":[0.0,0.0,0.0,1.0],"scale":[1.0,1.0,1.0]}}]}}"#,
            100 + i
        )
    };
    for i in 0..count {
        lines.push(lines[3].replace("\"entity\":0", &format!("\"entity\":{}", 100 + i)));
    }
    let all: Vec<String> = (0..count).map(entity).collect();
    lines.push(format!(
        r#"{{"type":"frame","tick":0,"time":0.0,"entities":[{}]}}"#,
        all.join(",")
    ));
    let e = read_err(&joined(&lines));
    assert_line(&e, lines.len());
    assert!(
        matches!(e.kind, RecordingErrorKind::TooLarge { got, .. } if got == count as u64),
        "{e}"
    );

    // A history that would not fit in memory: 1000 Hz, 10 s, and rigs of 256 bones.
    let mut lines = example_lines()[..3].to_vec();
    lines[0] = lines[0]
        .replace("\"tick_rate\":10.0", "\"tick_rate\":1000.0")
        .replace("\"max_rewind\":1.0", "\"max_rewind\":10.0");
    let big = example_lines()[3].replace("\"bone_count\":1", "\"bone_count\":256");
    for i in 0..200 {
        lines.push(big.replace("\"entity\":0", &format!("\"entity\":{i}")));
    }
    let e = read_err(&joined(&lines));
    assert!(
        matches!(e.kind, RecordingErrorKind::TooLarge { limit, .. } if limit == limits::MAX_HISTORY_BYTES),
        "{e}"
    );
    assert!(e.line > 4 && e.line < lines.len(), "{e}");
}

#[test]
fn nothing_is_half_applied() {
    let recording = read(&example_recording());

    // A recording edited after reading: a frame out of order after the first claim. The
    // replay refuses it before judging any claim.
    let mut edited = recording.clone();
    let at = edited
        .records
        .iter()
        .position(|(_, r)| matches!(r, RecordingEntry::Verdict(_)))
        .expect("a verdict");
    edited.records.insert(
        at + 1,
        (
            99,
            RecordingEntry::Frame(RecordedFrame {
                tick: Tick(1),
                time: 0.1,
                entities: Vec::new(),
            }),
        ),
    );
    let mut calls = 0;
    let e = revalidate(&edited, None, |_, _| calls += 1).expect_err("out of order");
    assert_eq!(calls, 0, "no claim was judged");
    assert_line(&e, 99);
    assert!(
        matches!(e.kind, RecordingErrorKind::TickOutOfOrder { .. }),
        "{e}"
    );

    // Fields that disagree with the records.
    let mut edited = recording.clone();
    edited.config.tick_rate = 20.0;
    let e = revalidate(&edited, None, |_, _| calls += 1).expect_err("inconsistent");
    assert!(
        matches!(e.kind, RecordingErrorKind::Inconsistent("config")),
        "{e}"
    );
    let mut edited = recording.clone();
    edited.rules = None;
    let e = revalidate(&edited, None, |_, _| calls += 1).expect_err("inconsistent");
    assert!(
        matches!(e.kind, RecordingErrorKind::Inconsistent("rules")),
        "{e}"
    );
    assert_eq!(calls, 0);

    // Claims and no rules: refused on the first claim's line, unless rules are given.
    let mut lines = example_lines();
    lines.remove(1);
    let without_rules = read(&joined(&lines));
    assert!(without_rules.rules.is_none());
    let e = revalidate(&without_rules, None, |_, _| calls += 1).expect_err("no rules");
    assert_line(&e, 11);
    assert!(matches!(e.kind, RecordingErrorKind::NoRules), "{e}");
    assert_eq!(calls, 0);
    let rules = lagcomp_validate::RuleSet::from_toml(EXAMPLE_RULES).expect("valid");
    let judged = revalidate(&without_rules, Some(&rules), |_, _| {}).expect("with rules");
    assert!(judged.iter().all(|r| !r.changed()));

    // Given rules that fail their checks: line 0, nothing replayed.
    let mut bad = rules.clone();
    bad.weapons.get_mut("rifle").expect("rifle").max_range = f32::NAN;
    let e = revalidate(&recording, Some(&bad), |_, _| calls += 1).expect_err("bad rules");
    assert_eq!(e.line, 0);
    assert!(e.to_string().starts_with("rules: "), "{e}");
    assert_eq!(calls, 0);
}

#[test]
fn the_writer_refuses_what_a_reader_would() {
    let config = HistoryConfig {
        tick_rate: 10.0,
        max_rewind: 1.0,
    };
    let rig = Rig::rigid(vec![lagcomp::Hitbox::new(
        0,
        "body",
        Zone::Torso,
        0,
        Shape::sphere(0.5),
    )])
    .expect("valid rig");
    let a = EntityId::from_bits(7);
    let b = EntityId::from_bits(8);
    let mut out = RecordingWriter::new(Vec::new(), &config).expect("header");
    out.spawn(a, &rig, &Participant::default()).expect("spawn");
    let bones = [BoneTransform::IDENTITY];
    let state = EntityState::default();
    out.frame(Tick(1), 0.1, &[(a, state, &bones)])
        .expect("frame");
    let before = out.lines();

    let refused = |r: io::Result<()>| {
        let e = r.expect_err("refused");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        e.to_string()
    };
    let e = refused(out.frame(Tick(2), 0.2, &[(b, state, &bones)]));
    assert!(e.starts_with("line 4: frame names entity 8"), "{e}");
    refused(out.frame(Tick(1), 0.2, &[(a, state, &bones)]));
    let nan = [BoneTransform::from_translation(Vec3::new(
        f32::NAN,
        0.0,
        0.0,
    ))];
    refused(out.frame(Tick(2), 0.2, &[(a, state, &nan)]));
    refused(out.timing(
        a,
        &ClientTiming {
            srtt: f64::INFINITY,
            rttvar: 0.0,
            interp_delay: 0.0,
        },
    ));
    refused(out.spawn(a, &rig, &Participant::default()));
    refused(out.verdict(&Verdict {
        shooter: a,
        seq: 1,
        weapon: WeaponId(1),
        outcome: VerdictOutcome::Miss,
        basis: Basis::default(),
    }));
    refused(out.static_collider(Shape::sphere(-1.0), Pose::IDENTITY, 1));
    assert_eq!(out.lines(), before, "nothing written");

    // Still usable, and what it wrote reads back.
    out.frame(Tick(2), 0.2, &[(a, state, &bones)])
        .expect("frame");
    out.despawn(a).expect("despawn");
    refused(out.despawn(a));
    let bytes = out.finish().expect("flushed");
    let recording = read(&bytes);
    assert_eq!(recording.records.len(), 5);
}

#[test]
fn the_documented_errors_are_the_real_ones() {
    let doc = format_md();
    let block = doc_block(&doc, "## Errors");
    let mut lines = example_lines();
    lines.swap(8, 9);
    let out_of_order = read_err(&joined(&lines));
    let mut lines = example_lines();
    lines.insert(9, r#"{"type":"despawn","entity":1}"#.into());
    let despawned = read_err(&joined(&lines));
    let bone =
        r#"{"translation":[0.0,1.6,0.0],"rotation":[0.0,0.0,0.0,1.0],"scale":[1.0,1.0,1.0]}"#;
    let hitbox = r#"{"id":0,"name":"h","zone":"Torso","bone":0,"offset":{"translation":[0.0,0.0,0.0],"rotation":[0.0,0.0,0.0,1.0]},"shape":{"Sphere":{"radius":0.1}}}"#;
    let mut lines = example_lines();
    lines.insert(
        5,
        format!(
            r#"{{"type":"spawn","entity":9,"bone_count":1,"hitboxes":[{}]}}"#,
            vec![hitbox; 257].join(",")
        ),
    );
    let too_many = read_err(&joined(&lines));
    let bytes = example_recording();
    let torn = read(&bytes[..bytes.len() - 40]).torn.expect("torn");
    for e in [
        with_line(1, |l| {
            l.replace(&format!("\"version\":{FORMAT_VERSION}"), "\"version\":99")
        }),
        with_line(9, |l| l.replacen("\"tick\":2,", "\"tick\":2,,", 1)),
        out_of_order,
        despawned,
        with_line(8, |l| l.replacen(bone, &format!("{bone},{bone}"), 1)),
        too_many,
    ] {
        let message = e.to_string();
        assert!(
            block.contains(&format!("{message}\n")),
            "FORMAT.md lacks {message}"
        );
    }
    // A torn last line is not an error; the file structure section shows its report.
    let message = torn.to_string();
    let (documented, _) = message.split_once('(').expect("a detail");
    let unwrapped = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        unwrapped.contains(&format!("`{documented}(")),
        "FORMAT.md lacks {message}"
    );
}

/// A reader of `head`, then `part` `left` times with commas between, then `]}`, a newline
/// and `tail`, made as it is read.
#[derive(Default)]
struct Generated {
    head: Vec<u8>,
    part: Vec<u8>,
    left: usize,
    tail: Vec<u8>,
    buf: Vec<u8>,
    at: usize,
    started: bool,
}

impl io::Read for Generated {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.buf.len() {
            self.at = 0;
            self.buf = if !self.head.is_empty() {
                std::mem::take(&mut self.head)
            } else if self.left > 0 {
                self.left -= 1;
                let mut part = if self.started {
                    b",".to_vec()
                } else {
                    Vec::new()
                };
                self.started = true;
                part.extend_from_slice(&self.part);
                part
            } else if !self.tail.is_empty() {
                let mut end = b"]}\n".to_vec();
                end.append(&mut self.tail);
                end
            } else {
                return Ok(0);
            };
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The example recording (`tests/data/example.jsonl`, shown in `docs/FORMAT.md`).
const EXAMPLE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/example.jsonl");
const FORMAT_MD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/FORMAT.md");

fn format_md() -> String {
    std::fs::read_to_string(FORMAT_MD).expect("docs/FORMAT.md")
}

/// The fenced block of `docs/FORMAT.md` that follows the line `marker`.
fn doc_block(doc: &str, marker: &str) -> String {
    let after = &doc[doc
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in FORMAT.md"))..];
    let open = after.find("```").expect("a fenced block");
    let body = &after[open..];
    let start = body.find('\n').expect("fence line") + 1;
    let end = body[start..].find("\n```").expect("closing fence") + start + 1;
    body[start..end].to_owned()
}

#[test]
fn the_example_is_what_the_library_writes_and_the_document_shows() {
    let generated = String::from_utf8(example_recording()).expect("UTF-8");
    if std::env::var_os("LAGCOMP_BLESS").is_some() {
        std::fs::write(EXAMPLE_PATH, &generated).expect("writes the example");
    }
    let file = std::fs::read_to_string(EXAMPLE_PATH).expect("tests/data/example.jsonl");
    assert_eq!(
        file, generated,
        "the example is stale: rerun with LAGCOMP_BLESS=1 and update docs/FORMAT.md"
    );
    assert_eq!(
        doc_block(&format_md(), "<!-- example.jsonl -->"),
        file,
        "docs/FORMAT.md's example differs from tests/data/example.jsonl"
    );

    let recording = read(file.as_bytes());
    let judged = revalidate(&recording, None, |_, _| {}).expect("replays");
    let labels: Vec<&str> = judged.iter().map(|r| r.verdict.outcome.label()).collect();
    assert_eq!(
        labels,
        ["confirmed", "replayed", "blocked", "fire_rate", "miss"]
    );
    for r in &judged {
        assert_eq!(r.recorded, Some(r.verdict), "line {}", r.line);
    }
}

#[test]
fn any_entity_numbers_will_do() {
    // A tool may number entities as it likes: the example with its entities renumbered
    // 0 -> 4294967301 (slot 5, generation 1) and 1 -> 12 gives the same verdicts, under
    // the new numbers.
    let renumber = |l: &str| {
        l.replace("\"entity\":0", "\"entity\":4294967301")
            .replace("\"shooter\":0", "\"shooter\":4294967301")
            .replace("\"entity\":1", "\"entity\":12")
            .replace("\"target\":1", "\"target\":12")
    };
    let lines: Vec<String> = example_lines().iter().map(|l| renumber(l)).collect();
    let recording = read(&joined(&lines));
    let judged = revalidate(&recording, None, |_, _| {}).expect("replays");
    assert_eq!(judged.len(), 5);
    for r in &judged {
        assert_eq!(r.recorded, Some(r.verdict), "line {}", r.line);
        assert_eq!(r.verdict.shooter, EntityId::from_bits(4_294_967_301));
    }
    let VerdictOutcome::Confirmed(hit) = judged[0].verdict.outcome else {
        panic!("the first shot hits");
    };
    assert_eq!(hit.target, EntityId::from_bits(12));
}

#[test]
fn the_document_shows_the_real_json_shapes() {
    let doc = format_md();
    let json = |v: &dyn erased::Json| v.json();
    let samples: Vec<String> = vec![
        json(&Shape::sphere(0.15)),
        json(&Shape::cuboid(Vec3::new(0.25, 0.8, 0.2))),
        json(&Shape::capsule(0.2, 0.15, lagcomp::Axis::Y)),
        json(&Zone::Head),
        json(&Zone::Torso),
        json(&Zone::Limb),
        json(&Zone::Custom(7)),
        json(&Pose::new(Vec3::new(0.0, 1.6, 0.0), Quat::IDENTITY)),
        json(&BoneTransform::from_translation(Vec3::new(1.0, 0.0, 10.0))),
        json(&EntityState::default()),
        json(
            &lagcomp::Hitbox::new(1, "head", Zone::Head, 0, Shape::sphere(0.15))
                .offset_by(Vec3::new(0.0, 1.6, 0.0)),
        ),
        json(&RenderTime::Ticks {
            from: Tick(3),
            to: Tick(4),
            fraction: 0.25,
        }),
        json(&RenderTime::Time(0.3)),
        json(&SampleKind::Exact { tick: Tick(3) }),
        json(&SampleKind::Interpolated {
            from: Tick(3),
            to: Tick(4),
            alpha: 0.5,
        }),
        json(&SampleKind::Nearest {
            tick: Tick(3),
            reason: NearestReason::Teleport,
        }),
        json(&SampleKind::Nearest {
            tick: Tick(3),
            reason: NearestReason::MissingNeighbour,
        }),
        json(&SampleKind::Present { tick: Tick(3) }),
        json(&Basis {
            received_at: 0.45,
            requested_time: Some(0.3),
            time_used: Some(0.3),
            oldest: Some(0.0),
            newest: Some(0.4),
            sample: Some(SampleKind::Exact { tick: Tick(3) }),
            rewound: true,
            fallback: false,
            shooter_latency: Some(0.05),
            interp_delay: Some(0.1),
            measured: None,
        }),
    ];
    for sample in &samples {
        assert!(doc.contains(sample.as_str()), "FORMAT.md lacks {sample}");
    }
    // Every rejection reason's name, and every record type.
    for reason in RejectReason::ALL {
        assert!(doc.contains(&format!("`{}`", reason.name())), "{reason}");
        assert_eq!(json(&reason), format!("\"{}\"", reason.name()));
    }
    for kind in RecordType::ALL {
        assert!(doc.contains(&format!("### `{kind}`")), "{kind}");
    }
    // The verdict shapes of each outcome, through the writer.
    let shooter = EntityId::from_bits(0);
    let verdict = |outcome| Verdict {
        shooter,
        seq: 2,
        weapon: WeaponId(1),
        outcome,
        basis: Basis {
            received_at: 0.55,
            ..Basis::default()
        },
    };
    for (outcome, shape) in [
        (
            VerdictOutcome::Confirmed(Confirmed {
                target: EntityId::from_bits(1),
                hitbox: lagcomp::HitboxId(1),
                zone: Zone::Head,
                damage_multiplier: 4.0,
                distance: 9.5,
                point: Vec3::new(0.5, 1.6, 9.85),
                by_leeway: false,
            }),
            r#""outcome":"confirmed","target":1,"hitbox":1,"zone":"Head","damage_multiplier":4.0,"distance":9.5,"point":[0.5,1.6,9.85],"by_leeway":false,"basis""#,
        ),
        (VerdictOutcome::Miss, r#""outcome":"miss","basis""#),
        (
            VerdictOutcome::Blocked {
                by: Blocker::Wall(StaticId(0)),
                distance: 4.5,
            },
            r#""outcome":"blocked","wall":0,"distance":4.5,"basis""#,
        ),
        (
            VerdictOutcome::Blocked {
                by: Blocker::Entity(EntityId::from_bits(3 | (1 << 32))),
                distance: 4.5,
            },
            r#""outcome":"blocked","entity":4294967299,"distance":4.5,"basis""#,
        ),
        (
            VerdictOutcome::Rejected {
                reason: RejectReason::FireRate,
            },
            r#""outcome":"rejected","reason":"fire_rate","basis""#,
        ),
    ] {
        let line = RecordingEntry::Verdict(verdict(outcome)).to_json();
        assert!(line.contains(shape), "{line}");
        assert!(doc.contains(shape), "FORMAT.md lacks {shape}");
    }
    // A claim with a hit and non-finite numbers.
    let claim = RecordingEntry::Claim {
        received_at: 0.45,
        claim: ShotClaim {
            shooter,
            weapon: WeaponId(1),
            seq: 1,
            render_time: RenderTime::Time(0.3),
            origin: Vec3::new(f32::NAN, 1.6, 0.0),
            direction: Vec3::new(0.5, f32::INFINITY, 10.0),
            hit: Some(ClaimedHit {
                target: EntityId::from_bits(1),
                hitbox: None,
                point: None,
            }),
        },
    }
    .to_json();
    let shape = r#"{"type":"claim","received_at":0.45,"shooter":0,"weapon":1,"seq":1,"render_time":{"time":0.3},"origin":[null,1.6,0.0],"direction":[0.5,null,10.0],"hit":{"target":1}}"#;
    assert_eq!(claim, shape);
    assert!(doc.contains(shape), "FORMAT.md lacks {shape}");
}

/// Serializing samples of different types through one closure.
mod erased {
    /// A value with its JSON.
    pub(crate) trait Json {
        fn json(&self) -> String;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).expect("serializes")
        }
    }
}

/// The verdict labels a recording in `tests/data/repro/` re-validates to.
fn repro_labels(name: &str) -> Vec<&'static str> {
    let path = format!("{}/tests/data/repro/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let judged = revalidate(&read(&bytes), None, |_, _| {}).expect("replays");
    judged.iter().map(|r| r.verdict.outcome.label()).collect()
}

#[test]
fn an_entity_on_no_layer_is_hit_neither_by_the_trace_nor_by_a_claim() {
    // A head recorded with layers 0 straight ahead: the bare shot misses it, and the same
    // shot claiming it, with a point within the leeway, is no hit either.
    assert_eq!(
        repro_labels("layers0_leeway.jsonl"),
        ["miss", "tampered_claim"]
    );
}

#[test]
fn a_refused_time_neither_counts_as_fired_nor_clears_the_fire_rate_memory() {
    // Two head shots 0.01 s of claimed time apart against a 0.1 s interval...
    assert_eq!(
        repro_labels("fire_rate_control.jsonl"),
        ["confirmed", "fire_rate"]
    );
    // ...and the same with an absurd future claim between them: still too fast.
    assert_eq!(
        repro_labels("fire_rate_flush.jsonl"),
        ["confirmed", "time_in_future", "fire_rate"]
    );
}

#[test]
fn switching_weapons_forgets_no_shot() {
    // A rifle shot at 0.3, a shot of a weapon with no interval at 0.4, then a rifle shot
    // claimed at 0.25: 0.05 s from the first rifle shot, too fast for the rifle.
    assert_eq!(
        repro_labels("fire_rate_switch.jsonl"),
        ["confirmed", "confirmed", "fire_rate"]
    );
}

#[test]
fn a_sequence_number_exactly_the_window_behind_the_highest_passes() {
    // sequence_window 4: 16 is 4 behind 20.
    assert_eq!(
        repro_labels("sequence_window.jsonl"),
        ["confirmed", "confirmed", "confirmed"]
    );
}
