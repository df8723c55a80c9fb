//! Rejections a person can read: every rejection whose check measures something says how
//! far off the claim was against what the check allows, in its `Display` and in the audit
//! log; and a timing that cannot be one is refused by `set_timing`.

use lagcomp_validate::audit::read_audit_log;
use lagcomp_validate::recording::Revalidated;
use lagcomp_validate::{
    AuditLog, ClientTiming, Measurement, RejectReason, Rejection, TimingError, Validator, Verdict,
};

use crate::fixture::{HEAD, Role, Scene, Shot, rejected, rules, timing};

/// The moment the honest shot was drawn at; it arrives 150 ms later, as its client's
/// timing says.
const RENDER: f64 = 0.8;

fn honest(scene: &Scene) -> Shot {
    scene.shoot(Role::Alpha, HEAD, RENDER)
}

/// A claim its client drew 300 ms before it arrived, where this client's shots reach
/// 150 ms back: backtracking.
pub(crate) fn backtracking(scene: &Scene) -> Shot {
    let arrival = honest(scene).received_at;
    scene
        .shoot(Role::Alpha, HEAD, arrival - 0.3)
        .arriving_at(arrival)
}

/// Judges `shot` on a fresh validator and checks it was rejected for `reason`.
#[track_caller]
fn judged(scene: &Scene, shot: &Shot, reason: RejectReason) -> Verdict {
    let verdict = scene.judge(&mut scene.validator(), shot);
    assert_eq!(rejected(&verdict), reason, "{verdict:#?}");
    verdict
}

/// The verdict's measurement, checked against the expected value and bounds.
#[track_caller]
fn measured(verdict: &Verdict, value: f64, least: Option<f64>, most: f64) -> Measurement {
    let m = verdict.basis.measured.expect("the rejection is measured");
    assert!(
        (m.value - value).abs() < 1e-6,
        "measured {} not {value}",
        m.value
    );
    match (m.least, least) {
        (Some(got), Some(want)) => assert!((got - want).abs() < 1e-9, "least {got} not {want}"),
        (got, want) => assert_eq!(got, want),
    }
    assert!((m.most - most).abs() < 1e-9, "most {} not {most}", m.most);
    m
}

#[test]
fn backtracking_says_how_far_behind_and_what_the_timing_allows() {
    let scene = Scene::new();
    let older = backtracking(&scene);
    let verdict = judged(&scene, &older, RejectReason::Backtrack);
    let policy = rules().policy;
    let t = timing();
    let tolerance = policy.rewind_tolerance + policy.rewind_jitter_factor * t.rttvar;
    let least = t.expected_rewind() - tolerance;
    let most = t.expected_rewind() + tolerance + policy.rewind_late_slack;
    measured(&verdict, 0.3, Some(least), most);
    let text = format!(
        "backtrack: claimed 0.300 s behind its arrival, allowed {least:.3} s to {most:.3} s"
    );
    assert_eq!(verdict.rejection().expect("rejected").to_string(), text);
    assert!(verdict.to_string().ends_with(&text), "{verdict}");
}

#[test]
fn a_claim_older_than_the_weapon_allows_says_by_how_much() {
    let scene = Scene::new();
    let arrival = honest(&scene).received_at;
    // 400 ms back, inside the server's window but past the rifle's 350 ms.
    let old = scene
        .shoot(Role::Alpha, HEAD, arrival - 0.4)
        .arriving_at(arrival);
    let verdict = judged(&scene, &old, RejectReason::TimeTooOld);
    measured(&verdict, 0.4, None, 0.35);
    assert_eq!(
        verdict.rejection().expect("rejected").to_string(),
        "time_too_old: claimed 0.400 s behind its arrival, allowed 0.350 s"
    );
}

#[test]
fn a_claim_from_the_future_says_how_far_ahead() {
    let scene = Scene::new();
    let arrival = honest(&scene).received_at;
    let ahead = scene
        .shoot(Role::Alpha, HEAD, arrival + 0.05)
        .arriving_at(arrival);
    let verdict = judged(&scene, &ahead, RejectReason::TimeInFuture);
    let tolerance = rules().policy.future_tolerance;
    measured(&verdict, 0.05, None, tolerance);
    assert_eq!(
        verdict.rejection().expect("rejected").to_string(),
        format!("time_in_future: claimed 0.050 s after its arrival, allowed {tolerance:.3} s")
    );
}

#[test]
fn a_muzzle_away_from_the_eye_says_how_far() {
    let scene = Scene::new();
    let shot = honest(&scene);
    // The muzzle 2 m ahead of the eye, still aimed at alpha's head.
    let mut ahead = shot;
    ahead.claim.origin += shot.claim.direction.normalize() * 2.0;
    let ahead = ahead.through(shot.aim_point);
    let verdict = judged(&scene, &ahead, RejectReason::OriginTooFar);
    let m = verdict.basis.measured.expect("measured");
    assert!((m.value - 2.0).abs() < 0.01, "{m:?}");
    measured(&verdict, m.value, None, 0.5);
    assert_eq!(
        verdict.rejection().expect("rejected").to_string(),
        format!(
            "origin_too_far: {:.2} m from the aim bone, allowed 0.50 m",
            m.value
        )
    );
    assert!(
        verdict.to_string().contains("origin_too_far: 2.0"),
        "{verdict}"
    );
}

#[test]
fn an_aimbot_snap_says_how_many_degrees_off_the_view() {
    let scene = Scene::new();
    // Bravo is about 40 degrees off where the shooter looks.
    let snap = scene.shoot(Role::Bravo, HEAD, RENDER);
    let verdict = judged(&scene, &snap, RejectReason::AngleTooFar);
    let m = verdict.basis.measured.expect("measured");
    assert!((30.0..60.0).contains(&m.value), "{m:?}");
    measured(&verdict, m.value, None, 5.0);
    assert_eq!(
        verdict.rejection().expect("rejected").to_string(),
        format!(
            "angle_too_far: {:.1} degrees from the view, allowed 5.0 degrees",
            m.value
        )
    );
}

#[test]
fn a_sequence_number_too_far_behind_says_how_far() {
    let scene = Scene::new();
    let mut v = scene.validator();
    scene.judge(&mut v, &scene.shoot(Role::Alpha, HEAD, 0.6).seq(1000));
    let late = honest(&scene).seq(1000 - 257);
    let verdict = scene.judge(&mut v, &late);
    assert_eq!(rejected(&verdict), RejectReason::SequenceTooOld);
    measured(&verdict, 257.0, None, 256.0);
    assert_eq!(
        verdict.rejection().expect("rejected").to_string(),
        "sequence_too_old: 257 behind the highest sequence number seen, allowed 256 behind"
    );
}

#[test]
fn reasons_with_nothing_to_measure_show_their_name_alone() {
    let scene = Scene::new();
    let mut v = scene.validator();
    let shot = honest(&scene);
    scene.judge(&mut v, &shot);
    let again = scene.judge(&mut v, &shot);
    assert_eq!(rejected(&again), RejectReason::Replayed);
    assert_eq!(again.basis.measured, None);
    assert_eq!(again.rejection().expect("rejected").to_string(), "replayed");
    // And a shot that counts carries no measurement and no rejection.
    let hit = scene.judge(&mut scene.validator(), &shot);
    assert_eq!((hit.basis.measured, hit.rejection()), (None, None));
    let text = format!(
        ": confirmed: hitbox {} of {}",
        HEAD.0,
        scene.id(Role::Alpha)
    );
    assert!(hit.to_string().contains(&text), "{hit}");
}

#[test]
fn the_audit_log_carries_the_measurement_and_reads_it_back() {
    let scene = Scene::new();
    let older = backtracking(&scene);
    let backtrack = judged(&scene, &older, RejectReason::Backtrack);
    let hit = scene.judge(&mut scene.validator(), &honest(&scene));
    let mut log = AuditLog::new(Vec::new());
    log.write(&backtrack).expect("writes");
    log.write(&hit).expect("writes");
    let bytes = log.finish().expect("finishes");
    let text = String::from_utf8(bytes.clone()).expect("UTF-8");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains(r#""measured":{"value":0.29999"#),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(r#""least":0.1"#), "{}", lines[0]);
    assert!(lines[0].contains(r#""most":0.25}"#), "{}", lines[0]);
    // Verdicts without a measurement keep the JSON they had.
    assert!(!lines[1].contains("measured"), "{}", lines[1]);
    let read = read_audit_log(&bytes[..]).expect("reads");
    assert_eq!(read.verdicts, [backtrack, hit]);
}

#[test]
fn a_verdict_recorded_before_measurements_is_not_a_change() {
    let scene = Scene::new();
    let older = backtracking(&scene);
    let now = judged(&scene, &older, RejectReason::Backtrack);
    let mut before = now;
    before.basis.measured = None;
    let judged_again = |recorded| Revalidated {
        line: 9,
        received_at: older.received_at,
        claim: older.claim,
        recorded: Some(recorded),
        verdict: now,
    };
    assert!(!judged_again(before).changed());
    assert!(!judged_again(now).changed());
    // A recorded measurement that differs is a change.
    let mut other = now;
    other.basis.measured = Some(Measurement {
        value: 0.25,
        ..now.basis.measured.expect("measured")
    });
    assert!(judged_again(other).changed());
}

#[test]
fn a_rejection_without_numbers_is_its_name() {
    let rejection = Rejection {
        reason: RejectReason::OriginTooFar,
        measured: None,
    };
    assert_eq!(rejection.to_string(), "origin_too_far");
}

#[test]
fn a_timing_that_cannot_be_one_is_refused_and_the_last_good_one_kept() {
    let scene = Scene::new();
    let shooter = scene.id(Role::Shooter);
    let mut v = Validator::new(rules());
    let good = timing();
    v.set_timing(shooter, good).expect("a real timing");
    let cases = [
        (
            "srtt",
            ClientTiming {
                srtt: f64::NAN,
                ..good
            },
        ),
        (
            "rttvar",
            ClientTiming {
                rttvar: f64::INFINITY,
                ..good
            },
        ),
        (
            "interp_delay",
            ClientTiming {
                interp_delay: f64::NEG_INFINITY,
                ..good
            },
        ),
        ("srtt", ClientTiming { srtt: -0.1, ..good }),
        (
            "interp_delay",
            ClientTiming {
                interp_delay: -1e-9,
                ..good
            },
        ),
        // A million seconds is no connection's variation.
        (
            "rttvar",
            ClientTiming {
                rttvar: 1e6,
                ..good
            },
        ),
        // 80 ms given in milliseconds.
        ("srtt", ClientTiming { srtt: 80.0, ..good }),
        // Implausible already at 5 s.
        (
            "interp_delay",
            ClientTiming {
                interp_delay: 5.0,
                ..good
            },
        ),
    ];
    for (field, bad) in cases {
        let error = v.set_timing(shooter, bad).expect_err("refused");
        let named = match error {
            TimingError::NotFinite { field, .. }
            | TimingError::Negative { field, .. }
            | TimingError::TooLarge { field, .. } => field,
        };
        assert_eq!(named, field, "{error}");
        assert!(error.to_string().contains(field), "{error}");
        assert!(!bad.is_valid());
        assert_eq!(v.timing(shooter), Some(good), "{error}");
    }
    assert!(matches!(
        v.set_timing(shooter, ClientTiming { srtt: -0.1, ..good }),
        Err(TimingError::Negative { value, .. }) if value == -0.1
    ));
    // Refused before any timing was set: still none, so shots say `no_timing`.
    let mut fresh = scene.validator();
    fresh.forget(shooter);
    fresh.register(shooter, crate::fixture::participant(Role::Shooter));
    assert!(
        fresh
            .set_timing(
                shooter,
                ClientTiming {
                    srtt: f64::NAN,
                    ..good
                }
            )
            .is_err()
    );
    assert_eq!(fresh.timing(shooter), None);
    let verdict = scene.judge(&mut fresh, &honest(&scene));
    assert_eq!(rejected(&verdict), RejectReason::NoTiming);
    let text = verdict.rejection().expect("rejected").to_string();
    assert!(
        text.starts_with("no_timing: ") && text.contains("set_timing"),
        "{text}"
    );
    // Never registered: the rejection says which step is missing.
    fresh.forget(shooter);
    let verdict = scene.judge(&mut fresh, &honest(&scene));
    assert_eq!(rejected(&verdict), RejectReason::UnknownShooter);
    let text = verdict.rejection().expect("rejected").to_string();
    assert!(
        text.contains("Validator::add_player") && text.contains("Validator::register"),
        "{text}"
    );
}
