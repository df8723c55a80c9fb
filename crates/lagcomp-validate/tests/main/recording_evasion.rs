//! Spawn protection and dodges in recordings (format 4): a match where the target dodges
//! and respawns protected re-validates to the live verdicts (refused ones included), the
//! flags round-trip, and the same members under a version 3 header are refused.

use std::sync::Arc;

use lagcomp::{
    BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Vec3, Zone,
};
use lagcomp_validate::recording::{
    FORMAT_VERSION, Recording, RecordingEntry, RecordingErrorKind, RecordingWriter, revalidate,
};
use lagcomp_validate::{
    ClaimedHit, Refusal, RenderTime, RuleSet, ShotClaim, Validator, Verdict, VerdictOutcome,
    WeaponId,
};

use crate::doors::{RATE, TIMING};
use crate::recording_roles::spawn_duel;
use crate::weapon_layers::weapon;

/// The target's state at `tick`: dodging over 20..=24, spawn-protected over 36..=40.
fn target_state(tick: u32) -> EntityState {
    EntityState {
        evasive: (20..=24).contains(&tick),
        invulnerable: (36..=40).contains(&tick),
        ..EntityState::default()
    }
}

/// A shooter at z = 10 looking -z, a head at z = -10; shots drawn at ticks 6, 14, 22 and
/// 30 are judged 10 ticks later. Returns the file and the live verdicts.
fn evasion_match() -> (Vec<u8>, Vec<Verdict>) {
    let config = HistoryConfig {
        tick_rate: RATE,
        max_rewind: 0.5,
    };
    let rules = RuleSet::from_toml(&weapon("rifle", 1, "")).unwrap();
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
    )]);
    let ball = Arc::new(ball.unwrap());
    let (shooter, target) = spawn_duel(&mut history, &mut validator, &mut out, &ball);
    let mut live = Vec::new();
    for tick in 0..48_u32 {
        let time = f64::from(tick) / RATE;
        let poses = [
            (
                shooter,
                EntityState::default(),
                [BoneTransform::from_translation(Vec3::Z * 10.0)],
            ),
            (
                target,
                target_state(tick),
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
        for (seq, render) in [6_u32, 14, 22, 30].into_iter().enumerate() {
            if tick != render + 10 {
                continue;
            }
            let render = f64::from(render) / RATE;
            let claim = ShotClaim {
                shooter,
                weapon: WeaponId(1),
                seq: seq as u32 + 1,
                render_time: RenderTime::Time(render),
                origin: Vec3::Z * 10.0,
                direction: Vec3::NEG_Z,
                hit: Some(ClaimedHit {
                    target,
                    hitbox: None,
                    point: Some(Vec3::Z * -9.88),
                }),
            };
            let arrives = render + TIMING.expected_rewind();
            out.claim(arrives, &claim).unwrap();
            let verdict = validator.validate(&history, &claim, arrives);
            out.verdict(&verdict).unwrap();
            live.push(verdict);
        }
    }
    (out.finish().unwrap(), live)
}

#[test]
fn a_match_with_dodges_and_spawn_protection_revalidates_to_the_live_verdicts() {
    let (bytes, live) = evasion_match();
    let labels: Vec<&str> = live.iter().map(|v| v.outcome.label()).collect();
    // Drawn at 6: nothing. At 14, judged at 24: dodging then. At 22: dodging in the
    // picture. At 30, judged at 40: protected then.
    assert_eq!(labels, ["confirmed", "dodged", "dodged", "invulnerable"]);
    assert!(matches!(
        live[3].outcome,
        VerdictOutcome::Refused {
            refusal: Refusal::Invulnerable,
            ..
        }
    ));
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains(&format!("\"version\":{FORMAT_VERSION}")));
    assert!(text.contains("\"evasive\":true") && text.contains("\"invulnerable\":true"));
    let recording = Recording::read(&bytes[..]).expect("reads");
    let states: Vec<(bool, bool)> = recording
        .records
        .iter()
        .filter_map(|(_, r)| match r {
            RecordingEntry::Frame(f) => Some((
                f.entities[1].state.evasive,
                f.entities[1].state.invulnerable,
            )),
            _ => None,
        })
        .collect();
    let expected: Vec<(bool, bool)> = (0..48)
        .map(|t| (target_state(t).evasive, target_state(t).invulnerable))
        .collect();
    assert_eq!(states, expected);
    let judged = revalidate(&recording, None, |_, _| {}).expect("replays");
    assert_eq!(judged.len(), live.len());
    for (r, live) in judged.iter().zip(&live) {
        assert_eq!(r.recorded, Some(*live), "line {}", r.line);
        assert_eq!(r.verdict, *live, "line {}", r.line);
    }
    assert_eq!(recording.write(Vec::new()).unwrap(), bytes);
}

#[test]
fn evasion_members_need_format_4() {
    let (bytes, _) = evasion_match();
    let text = String::from_utf8(bytes).unwrap();
    let older = text.replacen(&format!("\"version\":{FORMAT_VERSION}"), "\"version\":3", 1);
    let e = Recording::read(older.as_bytes()).expect_err("format 4 members in a v3 file");
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::MemberNotInVersion {
                needs: 4,
                version: 3,
                ..
            }
        ),
        "{e}"
    );
    let first = older
        .lines()
        .position(|l| l.contains("\"evasive\":true"))
        .unwrap()
        + 1;
    assert_eq!(e.line, first, "{e}");
}
