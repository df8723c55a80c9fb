//! Spawn protection and registered dodges: a hit every check confirms is refused honestly
//! (`VerdictOutcome::Refused`, not a rejection) when the target was `invulnerable`, or
//! `evasive` with the policy's dodge rule letting the dodge win; a claim that is wrong in
//! itself is still rejected for that.
//!
//! Every shot here is alpha's head drawn at tick ~54.4 and arriving at tick 64, the newest
//! frame the server has recorded when it judges the shot (the present).

use std::ops::RangeInclusive;

use lagcomp::Vec3;
use lagcomp_validate::{
    DodgeRule, Refusal, RejectReason, RuleSet, Verdict, VerdictOutcome, audit::AuditLog,
};

use crate::fixture::{HEAD, LAST_TICK, RULES, Role, Scene, Script, Shot, timing};

/// What a verdict came to, for the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Came {
    Confirmed,
    Refused(Refusal),
    Rejected(RejectReason),
}

fn came(verdict: &Verdict) -> Came {
    match verdict.outcome {
        VerdictOutcome::Confirmed(_) => Came::Confirmed,
        VerdictOutcome::Refused { refusal, .. } => Came::Refused(refusal),
        VerdictOutcome::Rejected { reason } => Came::Rejected(reason),
        other => panic!("unexpected {other:?}"),
    }
}

/// The rules under `dodge`, through the TOML a server writes.
fn rules_with(dodge: DodgeRule) -> RuleSet {
    let name = match dodge {
        DodgeRule::DodgeWins => "dodge_wins",
        DodgeRule::ShooterWins => "shooter_wins",
    };
    let toml = RULES.replace(
        "time_mismatch = \"reject\"",
        &format!("time_mismatch = \"reject\"\ndodge = \"{name}\""),
    );
    let rules = RuleSet::from_toml(&toml).expect("valid rules");
    assert_eq!(rules.policy.dodge, dodge);
    rules
}

/// The shooter's honest head shot at alpha, arriving with the newest recorded tick.
fn head_shot(scene: &Scene) -> Shot {
    let arrival = scene.time_of(LAST_TICK);
    scene.shoot(Role::Alpha, HEAD, arrival - timing().expected_rewind())
}

#[test]
fn the_dodge_rule_is_in_the_policy_and_defaults_to_dodge_wins() {
    assert_eq!(
        RuleSet::from_toml(RULES).unwrap().policy.dodge,
        DodgeRule::DodgeWins
    );
    let error = RuleSet::from_toml(&RULES.replace(
        "time_mismatch = \"reject\"",
        "time_mismatch = \"reject\"\ndodge = \"nobody\"",
    ))
    .unwrap_err();
    assert!(error.to_string().contains("dodge"), "{error}");
}

#[test]
fn a_dodge_registered_before_the_shot_arrived_wins_unless_the_shooter_does() {
    // (alpha's dodge over these ticks, under dodge_wins, under shooter_wins).
    let dodged = Came::Refused(Refusal::Dodged);
    let rows: [(RangeInclusive<u32>, Came, Came); 5] = [
        // Over before the shooter's picture: nothing to win.
        (30..=40, Came::Confirmed, Came::Confirmed),
        // In the shooter's picture, over before the shot arrived.
        (50..=58, dodged, Came::Confirmed),
        // Registered after the picture, before the shot arrived (Overwatch's case).
        (60..=LAST_TICK, dodged, Came::Confirmed),
        // Through the picture and the arrival.
        (52..=LAST_TICK, dodged, Came::Confirmed),
        // Registered after the shot arrived: not yet recorded when it is judged.
        (
            LAST_TICK + 1..=LAST_TICK + 20,
            Came::Confirmed,
            Came::Confirmed,
        ),
    ];
    for (ticks, dodge_wins, shooter_wins) in rows {
        let scene = Scene::with(Script::default().evades(Role::Alpha, ticks.clone()));
        let shot = head_shot(&scene);
        for (rule, expected) in [
            (DodgeRule::DodgeWins, dodge_wins),
            (DodgeRule::ShooterWins, shooter_wins),
        ] {
            let verdict = scene.judge(&mut scene.validator_with(rules_with(rule)), &shot);
            assert_eq!(
                came(&verdict),
                expected,
                "dodge {ticks:?}, {rule:?}: {verdict:#?}"
            );
            // The trace (no claimed hit) comes to the same.
            let verdict = scene.judge(
                &mut scene.validator_with(rules_with(rule)),
                &shot.unclaimed(),
            );
            assert_eq!(
                came(&verdict),
                expected,
                "unclaimed, dodge {ticks:?}, {rule:?}"
            );
        }
    }
}

#[test]
fn spawn_protection_at_the_picture_or_at_the_arrival_refuses_honestly() {
    let refused = Came::Refused(Refusal::Invulnerable);
    // (alpha protected over these ticks, what the honest shot comes to); the dodge rule
    // does not matter to protection.
    let rows: [(RangeInclusive<u32>, Came); 4] = [
        // Protection long over.
        (20..=30, Came::Confirmed),
        // Protected in the shooter's picture only.
        (50..=58, refused),
        // Protected at the arrival only (respawned, say): no damage now either.
        (62..=LAST_TICK, refused),
        // Both.
        (40..=LAST_TICK, refused),
    ];
    for (ticks, expected) in rows {
        let scene = Scene::with(Script::default().protects(Role::Alpha, ticks.clone()));
        let shot = head_shot(&scene);
        for rule in [DodgeRule::DodgeWins, DodgeRule::ShooterWins] {
            let verdict = scene.judge(&mut scene.validator_with(rules_with(rule)), &shot);
            assert_eq!(came(&verdict), expected, "protected {ticks:?}, {rule:?}");
            if let VerdictOutcome::Refused {
                target, distance, ..
            } = verdict.outcome
            {
                assert_eq!(target, scene.id(Role::Alpha));
                assert!(
                    (distance - shot.claim.direction.length()).abs() < 0.5,
                    "{distance}"
                );
            }
        }
    }
}

#[test]
fn a_claim_wrong_in_itself_is_still_a_cheat_on_a_protected_or_dodging_target() {
    for script in [
        Script::default().protects(Role::Alpha, 40..=LAST_TICK),
        Script::default().evades(Role::Alpha, 40..=LAST_TICK),
    ] {
        let scene = Scene::with(script);
        let honest = head_shot(&scene);
        // A point a metre off the shot's line: tampered, not refused.
        let tampered = honest.through(honest.claimed_point() + honest.across() * 1.0);
        assert_eq!(
            came(&scene.judge(&mut scene.validator(), &tampered)),
            Came::Rejected(RejectReason::TamperedClaim)
        );
        // A moment older than the client could have drawn: backtrack.
        let old = scene.shoot(Role::Alpha, HEAD, scene.time_of(LAST_TICK) - 0.3);
        let old = old.arriving_at(honest.received_at);
        assert_eq!(
            came(&scene.judge(&mut scene.validator(), &old)),
            Came::Rejected(RejectReason::Backtrack)
        );
        // A shot at an empty spot beside alpha claimed as a hit on it.
        let beside = honest.through(honest.aim_point + Vec3::X * 3.0);
        assert!(matches!(
            came(&scene.judge(&mut scene.validator(), &beside)),
            Came::Rejected(_)
        ));
    }
}

#[test]
fn lag_compensation_off_keeps_its_old_meaning() {
    // Recordings, C callers and Bevy apps that turned lag compensation off for a dodge get
    // the rejection they always got.
    let scene = Scene::with(Script::default().dodges(Role::Alpha, 50..=LAST_TICK));
    let verdict = scene.judge(&mut scene.validator(), &head_shot(&scene));
    assert_eq!(
        came(&verdict),
        Came::Rejected(RejectReason::TargetNotCompensated)
    );
}

#[test]
fn a_refusal_has_a_stable_name_code_label_and_json() {
    assert_eq!(
        Refusal::ALL.map(|r| (r.name(), r.code())),
        [("invulnerable", 1001), ("dodged", 1002)]
    );
    let scene = Scene::with(Script::default().evades(Role::Alpha, 60..=LAST_TICK));
    let verdict = scene.judge(&mut scene.validator(), &head_shot(&scene));
    assert_eq!(verdict.outcome.label(), "dodged");
    assert_eq!(verdict.outcome.refusal(), Some(Refusal::Dodged));
    assert_eq!(verdict.outcome.reason(), None, "not a rejection");
    assert!(verdict.rejection().is_none());
    let text = verdict.to_string();
    assert!(text.contains("refused (dodged)"), "{text}");
    // The audit log's JSON names it and reads back the same.
    let mut log = AuditLog::new(Vec::new());
    log.write(&verdict).unwrap();
    let json = String::from_utf8(log.finish().unwrap()).unwrap();
    assert!(
        json.contains(r#""outcome":"refused""#) && json.contains(r#""refusal":"dodged""#),
        "{json}"
    );
    let back: Verdict = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(back, verdict);
}
