//! The audit trail: every verdict is a `tracing` event (target `lagcomp::verdict`, WARN
//! for rejections) and the JSON Lines audit log reads back to the same verdicts.

use std::sync::{Arc, Mutex};

use crate::fixture::{HEAD, Role, Scene};
use lagcomp_validate::audit::{AuditReadError, read_audit_log};
use lagcomp_validate::{AuditLog, RejectReason, Verdict};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One captured event: level and its fields as text.
#[derive(Debug, Clone)]
struct Captured {
    level: Level,
    fields: Vec<(String, String)>,
}

impl Captured {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

/// A subscriber that keeps every `lagcomp::verdict` event.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

impl Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "lagcomp::verdict"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            fields,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Two verdicts: an honest head shot confirmed, then the same sequence number with the
/// direction reversed, rejected as replayed.
fn hit_then_replay() -> [Verdict; 2] {
    let scene = Scene::new();
    let mut v = scene.validator();
    let honest = scene.shoot(Role::Alpha, HEAD, 0.8);
    let mut replayed = honest.claim;
    replayed.direction = -replayed.direction;
    [
        scene.judge(&mut v, &honest),
        v.validate(&scene.history, &replayed, honest.received_at),
    ]
}

#[test]
fn every_verdict_is_a_tracing_event_and_an_audit_line() {
    let capture = Capture::default();
    let verdicts = tracing::subscriber::with_default(capture.clone(), hit_then_replay);
    assert_eq!(verdicts[0].outcome.label(), "confirmed");
    assert_eq!(verdicts[1].outcome.reason(), Some(RejectReason::Replayed));

    let events = capture.0.lock().unwrap().clone();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(events[0].level, Level::INFO);
    assert_eq!(events[0].field("outcome"), Some("confirmed"));
    assert_eq!(events[0].field("seq"), Some("1"));
    assert_eq!(events[1].level, Level::WARN);
    assert_eq!(events[1].field("reason"), Some("replayed"));
    assert_eq!(events[1].field("code"), Some("201"));
    let shooter = verdicts[1].shooter.to_bits().to_string();
    assert_eq!(events[1].field("shooter"), Some(shooter.as_str()));

    let mut log = AuditLog::new(Vec::new());
    for verdict in &verdicts {
        log.write(verdict).unwrap();
    }
    assert_eq!(log.written(), 2);
    let bytes = log.finish().unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let read: Vec<Verdict> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is a verdict"))
        .collect();
    assert_eq!(read, verdicts);
}

#[test]
fn an_audit_log_cut_anywhere_in_its_last_line_reads_to_its_complete_lines() {
    // Under a subscriber of its own too: the tests run in parallel, and tracing caches
    // whether a callsite is wanted; the same verdict events hit with no subscriber at all
    // could leave them unwanted for the other test's capture (seen once in 2 runs).
    let verdicts = tracing::subscriber::with_default(Capture::default(), hit_then_replay);
    let mut log = AuditLog::new(Vec::new());
    for verdict in &verdicts {
        log.write(verdict).unwrap();
    }
    let bytes = log.finish().unwrap();
    let whole = read_audit_log(&bytes[..]).unwrap();
    assert_eq!(whole.verdicts, verdicts);
    assert_eq!(whole.torn, None);
    // Without the last newline, the last line is still complete.
    let unended = read_audit_log(&bytes[..bytes.len() - 1]).unwrap();
    assert_eq!((unended.verdicts.len(), unended.torn), (2, None));

    // A server killed at any byte of the second line: the first verdict, and the torn
    // second line named.
    let second = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    for cut in second + 1..bytes.len() - 1 {
        let read = read_audit_log(&bytes[..cut]).unwrap();
        assert_eq!(read.verdicts, verdicts[..1], "cut at {cut}");
        let torn = read.torn.expect("a torn tail");
        assert_eq!((torn.line, torn.bytes), (2, cut - second), "cut at {cut}");
        let said = torn.to_string();
        assert!(said.contains("line 2: the file ends mid-record"), "{said}");
    }

    // A line cut short in the middle of the file is an error, with its line.
    let mut middle = bytes[..second - 10].to_vec();
    middle.push(b'\n');
    middle.extend_from_slice(&bytes[second..]);
    let e = read_audit_log(&middle[..]).expect_err("a broken first line");
    assert!(
        matches!(e, AuditReadError::NotAVerdict { line: 1, .. }),
        "{e}"
    );
    assert!(e.to_string().starts_with("line 1: not a verdict"), "{e}");
}

#[test]
fn a_rejection_event_says_how_far_off_the_claim_was() {
    let capture = Capture::default();
    let verdict = tracing::subscriber::with_default(capture.clone(), || {
        let scene = Scene::new();
        let older = crate::readable::backtracking(&scene);
        scene.judge(&mut scene.validator(), &older)
    });
    assert_eq!(verdict.outcome.reason(), Some(RejectReason::Backtrack));
    let events = capture.0.lock().unwrap().clone();
    assert_eq!(events.len(), 1, "{events:#?}");
    let message = events[0].field("message").expect("a message");
    let rejection = verdict.rejection().expect("rejected").to_string();
    assert_eq!(message, format!("shot rejected: {rejection}"));
    assert!(
        message
            .starts_with("shot rejected: backtrack: claimed 0.300 s behind its arrival, allowed "),
        "{message}"
    );
    let measured = verdict.basis.measured.expect("measured");
    assert_eq!(
        events[0].field("measured"),
        Some(format!("{:?}", measured.value).as_str())
    );
    assert_eq!(
        events[0].field("allowed"),
        Some(format!("{:?}", measured.most).as_str())
    );
}
