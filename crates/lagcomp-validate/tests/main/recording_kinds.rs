//! Format 5: claims and verdicts of every weapon kind in a recording. A server whose
//! players fire a rifle, a rocket (its hit and its blast), a shotgun and a knife records
//! each claim and verdict next to its call; the recording reads back and re-validates to
//! the same verdicts, breakdowns included, even though the fresh history numbers the
//! entities differently. Older versions may not hold the new lines; a verdict of another
//! kind than its claim, unknown kinds, oversized arrays and numbers JSON cannot hold are
//! typed errors.

use std::sync::Arc;

use lagcomp::projectile::ClaimedTarget;
use lagcomp::spread::{MAX_PELLETS, Pellets, pellet_seed};
use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, HitboxId, PlacedShape,
    Pose, Quat, Ray, RewindTarget, Rig, Shape, ShapeSweep, Swing, Tick, Trace, Vec3, Zone,
};
use lagcomp_validate::pellets::{PelletClaim, PelletOutcome, PelletTarget};
use lagcomp_validate::projectile::{ProjectileHitClaim, ProjectileOutcome};
use lagcomp_validate::recording::{
    FORMAT_VERSION, Recording, RecordingEntry, RecordingErrorKind, RecordingWriter, revalidate,
    revalidate_any,
};
use lagcomp_validate::splash::{MAX_VICTIMS, SplashClaim};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, MeleeClaim, MeleeRules, Participant, RenderTime, RuleSet, ShotClaim,
    Validator, WeaponClaim, WeaponId, WeaponVerdict,
};

const RULES: &str = r#"
[weapons.rifle]
id = 1
max_range = 60.0
min_interval = 0.1
aim_tolerance_deg = 5.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35

[weapons.rocket]
kind = "projectile"
id = 7
max_range = 60.0
min_interval = 0.0
aim_tolerance_deg = 10.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35
damage = { torso = 2.0 }
flight = { speed = 25.0, radius = 0.1, step = 0.015625, max_time = 3.0 }
area = { radius = 5.0, falloff = { start = 1.0, end = 5.0, min = 0.1 }, bodies_block = true }

[weapons.shotgun]
kind = "pellets"
id = 9
max_range = 60.0
min_interval = 0.1
aim_tolerance_deg = 5.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35
pellets = { count = 12, half_angle_deg = 4.0, falloff = { start = 5.0, end = 15.0, min = 0.5 } }

[weapons.knife]
id = 11
max_range = 3.0
min_interval = 0.1
aim_tolerance_deg = 10.0
origin_tolerance = 0.3
hit_leeway = 1.0
hit_leeway_min = 0.0
max_rewind = 0.35
"#;

const RIFLE: WeaponId = WeaponId(1);
const ROCKET: WeaponId = WeaponId(7);
const SHOTGUN: WeaponId = WeaponId(9);
const KNIFE: WeaponId = WeaponId(11);
const EYE: Vec3 = Vec3::new(0.0, 1.6, 0.0);
const RENDER: f64 = 0.5;
const ARRIVAL: f64 = 0.65;
/// How far behind its arrival a shot was drawn (half the round trip and the
/// interpolation delay).
const BEHIND: f64 = 0.15;

fn rules() -> RuleSet {
    let melee = MeleeRules::from_toml(
        "[melee.knife]\nid = 11\nreach = 2.0\nangle_deg = 60.0\nmax_blade = 0.5\nmax_swing_deg = 150.0",
    )
    .unwrap();
    RuleSet::from_toml(RULES)
        .unwrap()
        .with_melee(&melee)
        .unwrap()
}

/// A server that records each call next to making it. With `unrecorded`, its history
/// spawned one entity before the recording started, so the recorded ids are not the ones
/// a fresh history gives on replay.
struct Live {
    history: History,
    validator: Validator,
    out: RecordingWriter<Vec<u8>>,
    verdicts: Vec<WeaponVerdict>,
    shooter: EntityId,
    front: EntityId,
    close: EntityId,
}

impl Live {
    /// The shooter at the origin looking along -z; `front` 10 m ahead; `close` 0.9 m to
    /// ahead and 0.45 m to its right (the knife's, clear of the line to `front`).
    fn new(unrecorded: bool) -> Self {
        let config = HistoryConfig {
            tick_rate: 64.0,
            max_rewind: 1.0,
        };
        let rig = Arc::new(
            Rig::new(
                2,
                vec![Hitbox::new(
                    0,
                    "body",
                    Zone::Torso,
                    0,
                    Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)),
                )],
            )
            .unwrap(),
        );
        let mut history = History::new(config).unwrap();
        if unrecorded {
            history.spawn(Arc::clone(&rig));
        }
        let rules = rules();
        let mut out = RecordingWriter::new(Vec::new(), &config).unwrap();
        out.rules(&rules).unwrap();
        let mut validator = Validator::new(rules);
        let eye = Participant {
            team: 1,
            aim_bone: 1,
            aim_forward: Vec3::NEG_Z,
        };
        let ids = [(); 3].map(|()| history.spawn(Arc::clone(&rig)));
        for (i, id) in ids.iter().enumerate() {
            let participant = Participant {
                team: if i == 0 { 1 } else { 2 },
                ..eye
            };
            validator.register(*id, participant);
            out.spawn(*id, &rig, &participant).unwrap();
        }
        let feet = [
            Vec3::ZERO,
            Vec3::new(0.0, 0.0, -10.0),
            Vec3::new(0.45, 0.0, -0.9),
        ];
        let bones =
            |feet: Vec3| [1.0, 1.6].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up));
        for tick in 0..=64 {
            let time = f64::from(tick) / 64.0;
            let mut frame = history.begin_frame(Tick(tick), time).unwrap();
            let mut recorded = Vec::new();
            for (id, at) in ids.iter().zip(feet) {
                frame
                    .record(*id, &bones(at), EntityState::default())
                    .unwrap();
                recorded.push((*id, EntityState::default(), bones(at)));
            }
            frame.finish();
            let entities: Vec<_> = recorded
                .iter()
                .map(|(id, s, b)| (*id, *s, &b[..]))
                .collect();
            out.frame(Tick(tick), time, &entities).unwrap();
        }
        let timing = ClientTiming {
            srtt: 0.1,
            rttvar: 0.005,
            interp_delay: 0.1,
        };
        validator.set_timing(ids[0], timing).unwrap();
        out.timing(ids[0], &timing).unwrap();
        Self {
            history,
            validator,
            out,
            verdicts: Vec::new(),
            shooter: ids[0],
            front: ids[1],
            close: ids[2],
        }
    }

    /// Records, judges and records the verdict of `claim`, arriving at `at`.
    fn fire(&mut self, claim: WeaponClaim, at: f64) -> WeaponVerdict {
        self.out.weapon_claim(at, &claim).unwrap();
        let verdict = self.validator.validate_any(&self.history, None, &claim, at);
        self.out.weapon_verdict(&verdict).unwrap();
        self.verdicts.push(verdict);
        verdict
    }

    fn rifle(&self, seq: u32) -> ShotClaim {
        ShotClaim {
            shooter: self.shooter,
            weapon: RIFLE,
            seq,
            render_time: RenderTime::Time(RENDER),
            origin: EYE,
            direction: Vec3::new(0.0, 1.0, -10.0) - EYE,
            hit: Some(ClaimedHit {
                target: self.front,
                hitbox: None,
                point: None,
            }),
        }
    }

    /// The rocket at `front`: its centre reaches the front face at step 24 of 1/64 s.
    fn rocket(&self, seq: u32) -> ProjectileHitClaim {
        ProjectileHitClaim {
            shooter: self.shooter,
            weapon: ROCKET,
            seq,
            render_time: RenderTime::Time(RENDER),
            origin: EYE,
            direction: Vec3::NEG_Z,
            step: 24,
            target: ClaimedTarget::Entity {
                entity: self.front,
                hitbox: HitboxId(0),
            },
            position: Vec3::new(0.0, 1.6, -9.6),
        }
    }

    /// The rocket's blast 1.5 m in front of `front`.
    fn blast(&self, seq: u32) -> SplashClaim {
        let mut victims = [None; MAX_VICTIMS];
        victims[0] = Some(self.front);
        SplashClaim {
            shooter: self.shooter,
            weapon: ROCKET,
            seq,
            render_time: RenderTime::Time(RENDER),
            origin: EYE,
            direction: Vec3::new(0.0, 1.0, -8.5) - EYE,
            blast: Vec3::new(0.0, 1.0, -8.5),
            victims,
        }
    }

    /// The shotgun at `front`, drawn at `render`, each pellet claimed on what the
    /// client's own fan struck.
    fn shotgun(&self, seq: u32, render: f64) -> PelletClaim {
        let weapon = self
            .validator
            .rules()
            .weapon(SHOTGUN)
            .and_then(|w| w.pellet_weapon())
            .unwrap();
        let seed = pellet_seed(self.shooter.to_bits(), seq);
        let drawn = Pellets::new(&weapon.spread, Vec3::NEG_Z, seed).unwrap();
        let rays: Vec<Ray> = drawn
            .directions()
            .iter()
            .map(|&d| Ray::new(EYE, d, 60.0).unwrap())
            .collect();
        let mut traces: Vec<Trace> = Vec::new();
        self.history
            .query(RewindTarget::at(render))
            .ignore(&[self.shooter])
            .ray_fan(&rays, &mut traces)
            .unwrap();
        let mut hits = [None; MAX_PELLETS];
        for (slot, trace) in hits.iter_mut().zip(&traces) {
            *slot = trace.hit.map(|hit| PelletTarget {
                target: hit.entity,
                hitbox: Some(hit.hitbox),
            });
        }
        PelletClaim {
            shooter: self.shooter,
            weapon: SHOTGUN,
            seq,
            render_time: RenderTime::Time(render),
            origin: EYE,
            direction: Vec3::NEG_Z,
            seed,
            pellets: 12,
            hits,
        }
    }

    /// A knife slash from the shooter's right round to its front, at `close`.
    fn knife(&self, seq: u32) -> MeleeClaim {
        let shoulder = Vec3::new(0.0, 1.3, 0.0);
        let blade = PlacedShape::new(
            Pose::new(shoulder + Vec3::X * 0.5, Quat::IDENTITY),
            Shape::cuboid(Vec3::new(0.3, 0.02, 0.01)),
        );
        MeleeClaim {
            shooter: self.shooter,
            weapon: KNIFE,
            seq,
            render_time: RenderTime::Time(RENDER),
            eye: EYE,
            aim: Vec3::NEG_Z,
            sweep: ShapeSweep::arc(
                blade,
                Swing::new(shoulder, Vec3::Y, 90f32.to_radians()).unwrap(),
            )
            .unwrap(),
            hit: Some(ClaimedHit {
                target: self.close,
                hitbox: None,
                point: None,
            }),
        }
    }
}

/// The match: one claim of each kind, and a shotgun shot whose seed was tampered with.
fn play() -> (Vec<u8>, Vec<(WeaponClaim, WeaponVerdict)>) {
    play_on(Live::new(false))
}

fn play_on(mut live: Live) -> (Vec<u8>, Vec<(WeaponClaim, WeaponVerdict)>) {
    // Each drawn 0.12 s after the one before, so no weapon fires too fast.
    let render = |seq: u32| RenderTime::Time(0.2 + 0.12 * f64::from(seq));
    let claims = [
        WeaponClaim::Hitscan(ShotClaim {
            render_time: render(0),
            ..live.rifle(0)
        }),
        WeaponClaim::Projectile(ProjectileHitClaim {
            render_time: render(1),
            ..live.rocket(1)
        }),
        WeaponClaim::Splash(SplashClaim {
            render_time: render(2),
            ..live.blast(2)
        }),
        WeaponClaim::Pellets(live.shotgun(3, 0.56)),
        WeaponClaim::Melee(MeleeClaim {
            render_time: render(4),
            ..live.knife(4)
        }),
        WeaponClaim::Pellets(PelletClaim {
            seed: 12_345,
            ..live.shotgun(5, 0.8)
        }),
    ];
    let mut judged = Vec::new();
    for claim in claims {
        let RenderTime::Time(drawn) = claim.render_time() else {
            unreachable!("drawn at a time");
        };
        // The rocket's hit is claimed when it lands, 24 steps of 1/64 s into its flight.
        let flight = match claim {
            WeaponClaim::Projectile(_) => 24.0 / 64.0,
            _ => 0.0,
        };
        let at = drawn + BEHIND + flight;
        judged.push((claim, live.fire(claim, at)));
    }
    (live.out.finish().unwrap(), judged)
}

fn read(bytes: &[u8]) -> Recording {
    Recording::read(bytes).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_kind_is_recorded_and_revalidates_to_the_same_verdicts() {
    let (bytes, live) = play();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.starts_with(&format!(
            "{{\"type\":\"header\",\"format\":\"lagcomp-recording\",\"version\":{FORMAT_VERSION},"
        )),
        "{text:.120}"
    );
    assert_eq!(FORMAT_VERSION, 5);
    // The verdicts the live server gave are the ones each kind should give.
    let labels: Vec<&str> = live.iter().map(|(_, v)| v.label()).collect();
    assert_eq!(
        labels,
        [
            "confirmed",
            "confirmed",
            "confirmed",
            "confirmed",
            "confirmed",
            "pellet_seed_mismatch"
        ],
        "{live:#?}"
    );
    // A hitscan claim keeps its format-4 lines; the other kinds get the new ones.
    let types: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split('"').nth(3))
        .filter(|t| t.contains("claim") || t.contains("verdict"))
        .collect();
    assert_eq!(
        types,
        ["claim", "verdict"]
            .into_iter()
            .chain(["weapon_claim", "weapon_verdict"].repeat(5))
            .collect::<Vec<_>>()
    );

    let recording = read(&bytes);
    assert_eq!(recording.claims(), 1);
    assert_eq!(recording.claims_of_every_kind(), 6);
    // Written back byte for byte.
    assert_eq!(recording.write(Vec::new()).unwrap(), bytes);

    let mut progress = Vec::new();
    let again = revalidate_any(&recording, None, |done, total| progress.push((done, total)))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(progress.last(), Some(&(6, 6)));
    assert_eq!(again.len(), live.len());
    for (r, (claim, verdict)) in again.iter().zip(&live) {
        assert_eq!(r.claim, *claim, "line {}", r.line);
        assert_eq!(r.recorded.as_ref(), Some(verdict), "line {}", r.line);
        assert_eq!(r.verdict, *verdict, "line {}: re-validated", r.line);
        assert!(!r.changed(), "line {}", r.line);
    }
    // The hitscan-only replay judges the same recording and returns its one hitscan claim.
    let hitscan = revalidate(&recording, None, |_, _| {}).unwrap();
    assert_eq!(hitscan.len(), 1);
    assert_eq!(WeaponVerdict::Hitscan(hitscan[0].verdict), live[0].1);
}

#[test]
fn entity_numbers_are_mapped_inside_every_kind() {
    // The live history numbered the recorded entities from 1; the fresh one from 0. Every
    // id inside each kind's claim and verdict (shooter, targets, victims, pellets' and
    // the flown path's entities) goes through the mapping both ways.
    let (bytes, live) = play_on(Live::new(true));
    let again = revalidate_any(&read(&bytes), None, |_, _| {}).unwrap();
    for (r, (claim, verdict)) in again.iter().zip(&live) {
        assert_eq!(r.claim, *claim, "line {}", r.line);
        if matches!(claim, WeaponClaim::Pellets(_)) {
            // The seed is made from the live shooter's id, which the fresh history does
            // not give it: the one documented case a renumbered replay cannot reproduce.
            assert_eq!(r.verdict.label(), "pellet_seed_mismatch", "line {}", r.line);
        } else {
            assert_eq!(r.verdict, *verdict, "line {}", r.line);
        }
    }
}

#[test]
fn a_change_of_rules_changes_the_kind_verdicts_it_touches() {
    let (bytes, _) = play();
    let recording = read(&bytes);
    // Twelve pellets become eight: both shotgun claims now claim too many (the tampered
    // seed is checked after the count).
    let stricter = RuleSet::from_toml(&RULES.replace("count = 12", "count = 8"))
        .unwrap()
        .with_melee(
            &MeleeRules::from_toml(
                "[melee.knife]\nid = 11\nreach = 2.0\nangle_deg = 60.0\nmax_blade = 0.5\nmax_swing_deg = 150.0",
            )
            .unwrap(),
        )
        .unwrap();
    let again = revalidate_any(&recording, Some(&stricter), |_, _| {}).unwrap();
    let changed: Vec<&str> = again
        .iter()
        .filter(|r| r.changed())
        .map(|r| r.verdict.label())
        .collect();
    assert_eq!(changed, ["pellet_count_mismatch", "pellet_count_mismatch"]);
}

/// The recording's lines, and the index of the first `weapon_claim` of kind `kind`.
fn lines_and(kind: &str) -> (Vec<String>, usize) {
    let (bytes, _) = play();
    let lines: Vec<String> = String::from_utf8(bytes)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let at = lines
        .iter()
        .position(|l| l.contains("\"weapon_claim\"") && l.contains(&format!("\"kind\":\"{kind}\"")))
        .unwrap();
    (lines, at)
}

fn read_err(lines: &[String]) -> (usize, RecordingErrorKind) {
    let text = lines.join("\n") + "\n";
    let e = Recording::read(text.as_bytes()).expect_err("refused");
    (e.line, e.kind)
}

#[test]
fn malformed_kind_lines_are_typed_errors() {
    let (lines, at) = lines_and("pellets");
    let line = at + 1;
    // A version-4 file may not hold them.
    let mut old = lines.clone();
    old[0] = old[0].replace("\"version\":5", "\"version\":4");
    let (n, e) = read_err(&old);
    assert_eq!(
        n,
        lines
            .iter()
            .position(|l| l.contains("weapon_claim"))
            .unwrap()
            + 1
    );
    assert!(
        matches!(
            e,
            RecordingErrorKind::NotInVersion {
                needs: 5,
                version: 4,
                ..
            }
        ),
        "{e}"
    );
    // A hitscan verdict line after a pellet claim.
    let mut wrong = lines.clone();
    wrong[at + 1] = lines[lines
        .iter()
        .position(|l| l.contains("\"type\":\"verdict\""))
        .unwrap()]
    .replace("\"seq\":0", "\"seq\":3")
    .replace("\"weapon\":1", "\"weapon\":9");
    let (n, e) = read_err(&wrong);
    assert_eq!(n, line + 1);
    assert!(
        matches!(
            e,
            RecordingErrorKind::VerdictKindMismatch {
                verdict: "hitscan",
                claim: "pellets"
            }
        ),
        "{e}"
    );
    assert_eq!(e.to_string(), "a hitscan verdict follows a pellets claim");
    // A weapon verdict naming another seq.
    let mut other = lines.clone();
    other[at + 1] = other[at + 1].replacen("\"seq\":3", "\"seq\":4", 1);
    assert!(matches!(
        read_err(&other).1,
        RecordingErrorKind::VerdictMismatch { .. }
    ));
    // Unknown kinds, a 33rd pellet, null numbers, a missing member: the line's parse.
    let hit = r#"{"target":{"index":2,"generation":0},"hitbox":null}"#;
    for (what, edited) in [
        (
            "kind",
            lines[at].replace("\"kind\":\"pellets\"", "\"kind\":\"laser\""),
        ),
        (
            "33 pellets",
            lines[at].replacen("\"hits\":[", &format!("\"hits\":[{hit},"), 1),
        ),
        (
            "null",
            lines[at].replacen("\"origin\":[0.0,", "\"origin\":[null,", 1),
        ),
        ("seed", lines[at].replacen("\"seed\":", "\"sed\":", 1)),
        (
            "extra",
            lines[at].replacen("{\"type\"", "{\"x\":1,\"type\"", 1),
        ),
    ] {
        assert_ne!(edited, lines[at], "{what}: the edit applies");
        let mut bad = lines.clone();
        bad[at] = edited;
        let (n, e) = read_err(&bad);
        assert_eq!(n, line, "{what}");
        assert!(
            matches!(e, RecordingErrorKind::Invalid { .. }),
            "{what}: {e}"
        );
    }
    // Every truncation of a kind line is refused with a typed error, never a panic.
    for cut in 0..lines[at].len() {
        let mut bad = lines.clone();
        bad[at] = lines[at][..cut].to_owned();
        let _ = read_err(&bad);
    }
}

#[test]
fn the_writer_refuses_what_the_reader_could_not_read() {
    let mut live = Live::new(false);
    let before = live.out.lines();
    let nan = PelletClaim {
        origin: Vec3::new(f32::NAN, 1.6, 0.0),
        ..live.shotgun(0, RENDER)
    };
    let e = live
        .out
        .weapon_claim(ARRIVAL, &WeaponClaim::Pellets(nan))
        .expect_err("NaN");
    assert!(e.to_string().contains("is not finite"), "{e}");
    assert_eq!(live.out.lines(), before, "nothing written");
    // A verdict of another kind than the claim before it.
    let rifle = live.rifle(0);
    live.out
        .weapon_claim(ARRIVAL, &WeaponClaim::Hitscan(rifle))
        .unwrap();
    let claim = WeaponClaim::Pellets(live.shotgun(0, RENDER));
    let verdict = live
        .validator
        .validate_any(&live.history, None, &claim, ARRIVAL);
    let e = live.out.weapon_verdict(&verdict).expect_err("another kind");
    assert!(e.to_string().contains("follows a hitscan claim"), "{e}");
    // A hitscan claim through `weapon_claim` is the `claim` line `claim` writes.
    let bytes = live.out.finish().unwrap();
    let last = String::from_utf8(bytes)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned();
    assert_eq!(
        last,
        RecordingEntry::Claim {
            received_at: ARRIVAL,
            claim: rifle
        }
        .to_json()
    );
}

#[test]
fn the_outcome_of_the_shotgun_and_the_rocket_are_recorded_with_their_breakdown() {
    let (bytes, live) = play();
    let recording = read(&bytes);
    let verdicts: Vec<&WeaponVerdict> = recording
        .records
        .iter()
        .filter_map(|(_, r)| match r {
            RecordingEntry::WeaponVerdict(v) => Some(v.as_ref()),
            _ => None,
        })
        .collect();
    let WeaponVerdict::Pellets(pellets) = verdicts[2] else {
        panic!("{:?}", verdicts[2]);
    };
    assert!(matches!(pellets.outcome, PelletOutcome::Confirmed { .. }));
    assert_eq!(
        Some(pellets),
        match &live[3].1 {
            WeaponVerdict::Pellets(p) => Some(p),
            _ => None,
        }
    );
    let WeaponVerdict::Projectile(rocket) = verdicts[0] else {
        panic!("{:?}", verdicts[0]);
    };
    assert!(
        matches!(rocket.outcome, ProjectileOutcome::Confirmed(hit) if hit.damage_multiplier == 2.0)
    );
    assert!(rocket.flown.is_some(), "the flown path's impact is kept");
}

/// `tests/data/kinds.jsonl`: the match of [`play`], which `lagcomp validate`'s tests read.
const KINDS_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kinds.jsonl");

#[test]
fn the_kinds_fixture_is_what_the_library_writes() {
    let (bytes, _) = play();
    let generated = String::from_utf8(bytes).unwrap();
    if std::env::var_os("LAGCOMP_BLESS").is_some() {
        std::fs::write(KINDS_PATH, &generated).unwrap();
    }
    let file = std::fs::read_to_string(KINDS_PATH).expect("tests/data/kinds.jsonl");
    assert_eq!(file, generated, "stale: rerun with LAGCOMP_BLESS=1");
}

#[test]
fn a_hostile_melee_sweep_is_refused_or_judged_never_a_panic() {
    let (lines, at) = lines_and("melee");
    let arc = r#""path":{"Arc":{"pivot":[0.0,1.3,0.0],"axis":[0.0,1.0,0.0],"angle":1.5707964}}"#;
    let blade = r#""shape":{"Box":{"half_extents":[0.3,0.02,0.01]}}"#;
    assert!(lines[at].contains(arc) && lines[at].contains(blade));
    for (what, from, to) in [
        (
            "zero axis",
            arc,
            arc.replace("[0.0,1.0,0.0]", "[0.0,0.0,0.0]"),
        ),
        ("ten turns", arc, arc.replace("1.5707964", "62.83")),
        (
            "far pivot",
            arc,
            arc.replace("[0.0,1.3,0.0]", "[1e30,0.0,0.0]"),
        ),
        (
            "line",
            arc,
            r#""path":{"Line":{"direction":[0.0,0.0,0.0],"distance":-5.0}}"#.to_owned(),
        ),
        (
            "flat blade",
            blade,
            blade.replace("[0.3,0.02,0.01]", "[-0.3,0.0,0.0]"),
        ),
        (
            "no rotation",
            r#""rotation":[0.0,0.0,0.0,1.0]},"shape""#,
            r#""rotation":[0.0,0.0,0.0,0.0]},"shape""#.to_owned(),
        ),
    ] {
        let mut bad = lines.clone();
        bad[at] = bad[at].replacen(from, &to, 1);
        assert_ne!(bad[at], lines[at], "{what}: the edit applies");
        let text = bad.join("\n") + "\n";
        match Recording::read(text.as_bytes()) {
            Err(e) => assert_eq!(e.line, at + 1, "{what}: {e}"),
            Ok(recording) => {
                let judged = revalidate_any(&recording, None, |_, _| {});
                assert!(judged.is_ok(), "{what}: {judged:?}");
            }
        }
    }
}
