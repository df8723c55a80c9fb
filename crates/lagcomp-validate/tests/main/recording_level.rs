//! Level geometry in recordings (format version 2): a match on a mesh level with a wall
//! destroyed and a barricade built re-validates offline to the verdicts it had live
//! (`Blocked` behind the mesh included), bad mesh input in a file is refused with its line
//! and piece before anything is loaded, and version 1 recordings read and re-validate as
//! they always did.

use std::sync::Arc;

use lagcomp::{
    Blocker, BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, LevelError,
    LevelPiece, PieceError, Pose, Quat, Rig, Shape, StaticError, StaticId, Tick, Vec3, Zone,
};
use lagcomp_validate::recording::{
    FORMAT_VERSION, RecordType, Recording, RecordingEntry, RecordingErrorKind, RecordingWriter,
    revalidate,
};
use lagcomp_validate::{
    ClaimedHit, Participant, RenderTime, RuleSet, ShotClaim, Validator, Verdict, VerdictOutcome,
    WeaponId,
};

// The scene of the level geometry tests: the target's head straight down -Z from the
// shooter at the origin.
use crate::level_geometry::{HEAD, RATE, TARGET, TIMING};
const RULES: &str = r#"
[weapons.rifle]
id = 1
max_range = 100.0
min_interval = 0.0
aim_tolerance_deg = 10.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.5
"#;

/// A square mesh wall of two triangles across the line of fire at z = `z`, `x` to the
/// side.
fn mesh_wall(x: f32, z: f32) -> LevelPiece {
    LevelPiece::Mesh {
        vertices: vec![
            Vec3::new(x - 2.0, -2.0, z),
            Vec3::new(x + 2.0, -2.0, z),
            Vec3::new(x + 2.0, 2.0, z),
            Vec3::new(x - 2.0, 2.0, z),
        ],
        triangles: vec![[0, 1, 2], [0, 2, 3]],
        layers: u32::MAX,
    }
}

/// Flat ground under everyone, 3 m down: in the level so heightfields are recorded too.
fn ground() -> LevelPiece {
    LevelPiece::HeightField {
        heights: vec![0.0; 9],
        rows: 3,
        columns: 3,
        size: Vec3::new(100.0, 1.0, 100.0),
        pose: Pose {
            translation: Vec3::new(0.0, -3.0, 0.0),
            rotation: Quat::IDENTITY,
        },
        layers: u32::MAX,
    }
}

/// A live server on a mesh level that records every call next to making it.
struct LevelServer {
    history: History,
    validator: Validator,
    out: RecordingWriter<Vec<u8>>,
    live: Vec<Verdict>,
}

impl LevelServer {
    fn new() -> Self {
        let config = HistoryConfig {
            tick_rate: RATE,
            max_rewind: 0.5,
        };
        let rules = RuleSet::from_toml(RULES).unwrap();
        let mut out = RecordingWriter::new(Vec::new(), &config).unwrap();
        out.rules(&rules).unwrap();
        Self {
            history: History::new(config).unwrap(),
            validator: Validator::new(rules),
            out,
            live: Vec::new(),
        }
    }

    fn level(&mut self, pieces: &[LevelPiece]) -> std::ops::Range<StaticId> {
        self.out.level(pieces).unwrap();
        self.history.load_level(pieces.iter().cloned()).unwrap()
    }

    fn level_add(&mut self, time: f64, pieces: &[LevelPiece]) -> std::ops::Range<StaticId> {
        self.out.level_add(time, pieces).unwrap();
        self.history
            .add_pieces_at(pieces.iter().cloned(), time)
            .unwrap()
    }

    fn level_remove(&mut self, piece: StaticId, time: f64) {
        self.out.level_remove(piece, time).unwrap();
        self.history.remove_static(piece, time).unwrap();
    }

    fn spawn(&mut self, team: u16) -> EntityId {
        let rig = Arc::new(
            Rig::rigid(vec![Hitbox::new(
                0,
                "head",
                Zone::Head,
                0,
                Shape::sphere(HEAD),
            )])
            .unwrap(),
        );
        let id = self.history.spawn(Arc::clone(&rig));
        let participant = Participant {
            team,
            aim_bone: 0,
            aim_forward: Vec3::NEG_Z,
        };
        self.validator.register(id, participant);
        self.out.spawn(id, &rig, &participant).unwrap();
        id
    }

    fn frame(&mut self, tick: u32, at: &[(EntityId, Vec3)]) {
        let time = f64::from(tick) / RATE;
        let bones: Vec<[BoneTransform; 1]> = at
            .iter()
            .map(|&(_, p)| {
                [BoneTransform {
                    translation: p,
                    rotation: Quat::IDENTITY,
                    scale: Vec3::ONE,
                }]
            })
            .collect();
        let mut frame = self.history.begin_frame(Tick(tick), time).unwrap();
        for ((id, _), b) in at.iter().zip(&bones) {
            frame.record(*id, b, EntityState::default()).unwrap();
        }
        frame.finish();
        let entities: Vec<(EntityId, EntityState, &[BoneTransform])> = at
            .iter()
            .zip(&bones)
            .map(|((id, _), b)| (*id, EntityState::default(), &b[..]))
            .collect();
        self.out.frame(Tick(tick), time, &entities).unwrap();
    }

    /// A shot down -Z seen at `render_tick`, claiming the head at `target`.
    fn shoot(&mut self, shooter: EntityId, target: EntityId, seq: u32, render_tick: u32) {
        let render = f64::from(render_tick) / RATE;
        let claim = ShotClaim {
            shooter,
            weapon: WeaponId(1),
            seq,
            render_time: RenderTime::Time(render),
            origin: Vec3::ZERO,
            direction: Vec3::NEG_Z,
            hit: Some(ClaimedHit {
                target,
                hitbox: None,
                point: Some(TARGET + Vec3::Z * HEAD),
            }),
        };
        let arrives = render + TIMING.expected_rewind();
        self.out.claim(arrives, &claim).unwrap();
        let verdict = self.validator.validate(&self.history, &claim, arrives);
        self.out.verdict(&verdict).unwrap();
        self.live.push(verdict);
    }
}

/// The match: ground and a mesh wall in front of the target (loaded at the start), the
/// wall destroyed in the frame of tick 25, a mesh barricade built at tick 32; shots seen
/// at ticks 20 (behind the wall), 28 (open), 36 (behind the barricade). Returns the
/// recording and the live verdicts.
fn mesh_match() -> (Vec<u8>, Vec<Verdict>) {
    let mut server = LevelServer::new();
    let shooter = server.spawn(1);
    let target = server.spawn(2);
    server
        .validator
        .set_timing(shooter, TIMING)
        .expect("valid timing");
    server.out.timing(shooter, &TIMING).unwrap();
    // A primitive first, so the level's ids start after it, as they do live.
    let (ball, aside) = (
        Shape::sphere(0.5),
        Pose::from_translation(Vec3::new(30.0, 0.0, 0.0)),
    );
    server.out.static_collider(ball, aside, 1).unwrap();
    server.history.add_static(ball, aside, 1).unwrap();
    let level = server.level(&[ground(), mesh_wall(0.0, -10.0)]);
    let wall = StaticId(level.end.0 - 1);
    let mut seq = 0;
    for tick in 0..60_u32 {
        server.frame(tick, &[(shooter, Vec3::ZERO), (target, TARGET)]);
        if tick == 25 {
            server.level_remove(wall, f64::from(tick) / RATE);
        }
        if tick == 32 {
            server.level_add(f64::from(tick) / RATE, &[mesh_wall(0.0, -12.0)]);
        }
        // Each shot arrives a round trip and interpolation after what it saw.
        for render in [20, 28, 36] {
            if tick == render + 13 {
                seq += 1;
                server.shoot(shooter, target, seq, render);
            }
        }
    }
    (server.out.finish().unwrap(), server.live)
}

#[test]
fn a_mesh_level_with_a_destroyed_wall_revalidates_to_the_live_verdicts() {
    let (bytes, live) = mesh_match();
    // The live verdicts are the ones the level's rules give: blocked by the wall, a hit
    // once it fell, blocked by the barricade built later.
    let labels: Vec<&str> = live.iter().map(|v| v.outcome.label()).collect();
    assert_eq!(labels, ["blocked", "confirmed", "blocked"], "{live:?}");
    let walls: Vec<StaticId> = live
        .iter()
        .filter_map(|v| match v.outcome {
            VerdictOutcome::Blocked {
                by: Blocker::Wall(wall),
                ..
            } => Some(wall),
            _ => None,
        })
        .collect();
    // The sphere is 0, the ground 1, the wall 2, the barricade 3.
    assert_eq!(walls, [StaticId(2), StaticId(3)]);

    let recording = Recording::read(&bytes[..]).expect("reads");
    let kinds: Vec<RecordType> = recording.records.iter().map(|(_, r)| r.kind()).collect();
    for kind in [
        RecordType::Level,
        RecordType::LevelAdd,
        RecordType::LevelRemove,
    ] {
        assert!(kinds.contains(&kind), "{kind} recorded");
    }
    let judged = revalidate(&recording, None, |_, _| {}).expect("replays");
    assert_eq!(judged.len(), 3);
    for (r, live) in judged.iter().zip(&live) {
        assert_eq!(r.recorded, Some(*live), "line {}", r.line);
        assert_eq!(r.verdict, *live, "line {}", r.line);
        assert!(!r.changed());
    }
    // And the file written again from what was read is the same file.
    assert_eq!(recording.write(Vec::new()).unwrap(), bytes);
}

#[test]
fn without_its_level_records_the_match_would_not_revalidate_the_same() {
    // The level records carry the verdicts: drop the removal and the shot after the wall
    // fell is blocked on replay, not confirmed (what a v1 recording of this match gave).
    let (bytes, _) = mesh_match();
    let text = String::from_utf8(bytes).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.contains("\"type\":\"level_remove\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let recording = Recording::read(without.as_bytes()).expect("reads");
    let judged = revalidate(&recording, None, |_, _| {}).expect("replays");
    assert!(judged[1].changed(), "{:?}", judged[1].verdict);
    assert_eq!(judged[1].verdict.outcome.label(), "blocked");
}

/// The match's text with the wall's mesh edited by `edit` (on the `level` line).
fn with_level_line(edit: impl Fn(&str) -> String) -> (String, usize) {
    let (bytes, _) = mesh_match();
    let text = String::from_utf8(bytes).unwrap();
    let mut at = 0;
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if l.contains("\"type\":\"level\"") {
                at = i + 1;
                edit(l)
            } else {
                l.to_owned()
            }
        })
        .collect();
    assert_ne!(at, 0, "a level line");
    (lines.join("\n") + "\n", at)
}

#[test]
fn bad_mesh_input_is_refused_with_its_line_and_piece_and_nothing_loads() {
    // Rows: the edit to the wall's mesh (piece 1 of the level line), the error expected.
    let cases: [(&str, &str, PieceError); 4] = [
        // An index past the last vertex.
        (
            "[0,2,3]",
            "[0,2,9]",
            PieceError::IndexOutOfRange {
                triangle: 1,
                index: 9,
            },
        ),
        // No triangles at all.
        ("[[0,1,2],[0,2,3]]", "[]", PieceError::Empty),
        // A triangle with a repeated vertex.
        ("[0,1,2]", "[0,1,1]", PieceError::DegenerateTriangle(0)),
        // Far beyond the coordinate range.
        (
            "[2.0,2.0,-10.0]",
            "[2.0,2e20,-10.0]",
            PieceError::VertexOutOfRange(2),
        ),
    ];
    for (from, to, expected) in cases {
        let (text, line) = with_level_line(|l| {
            assert!(l.contains(from), "{from} in {l}");
            l.replacen(from, to, 1)
        });
        let e = Recording::read(text.as_bytes()).expect_err(to);
        assert_eq!(e.line, line, "{e}");
        match e.kind {
            RecordingErrorKind::Level(LevelError { piece: 1, error }) => {
                assert_eq!(error, expected, "{to}");
            }
            other => panic!("{to}: {other:?}"),
        }
        assert!(e.to_string().contains(&format!("line {line}")), "{e}");
    }
    // JSON has no NaN or infinity (the writer refuses them before writing): a vertex
    // written `null` or too large for f32 is a mistyped member, on its line too.
    let (text, line) = with_level_line(|l| l.replacen("[2.0,2.0,-10.0]", "[2.0,null,-10.0]", 1));
    let e = Recording::read(text.as_bytes()).expect_err("null vertex");
    assert_eq!(e.line, line);
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::Invalid {
                kind: RecordType::Level,
                ..
            }
        ),
        "{e}"
    );
    let (text, line) = with_level_line(|l| l.replacen("[2.0,2.0,-10.0]", "[2.0,2e39,-10.0]", 1));
    let e = Recording::read(text.as_bytes()).expect_err("2e39");
    assert_eq!(e.line, line);
    assert!(e.to_string().contains("number out of range"), "{e}");
}

#[test]
fn the_writer_refuses_bad_level_records_and_writes_nothing() {
    let mut server = LevelServer::new();
    let before = server.out.lines();
    let mut bad = mesh_wall(0.0, -10.0);
    if let LevelPiece::Mesh { vertices, .. } = &mut bad {
        vertices[3].x = f32::NAN;
    }
    let refused = |r: std::io::Result<()>| {
        let e = r.expect_err("refused");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
    };
    refused(server.out.level(&[ground(), bad.clone()]));
    refused(server.out.level_add(1.0, &[bad]));
    refused(server.out.level_add(f64::NAN, &[ground()]));
    // No piece 0 yet; then one removed twice, and one removed before it was added.
    refused(server.out.level_remove(StaticId(0), 1.0));
    assert_eq!(server.out.lines(), before);
    server.level(&[ground()]);
    server.level_add(2.0, &[mesh_wall(0.0, -10.0)]);
    server.level_remove(StaticId(0), 1.0);
    refused(server.out.level_remove(StaticId(0), 3.0));
    refused(server.out.level_remove(StaticId(1), 1.5));
    assert_eq!(server.out.lines(), before + 3);
}

#[test]
fn a_removal_read_from_a_file_is_checked_before_anything_replays() {
    let (bytes, _) = mesh_match();
    let text = String::from_utf8(bytes).unwrap();
    let at = text
        .lines()
        .position(|l| l.contains("\"type\":\"level_remove\""))
        .unwrap()
        + 1;
    for (piece, kind) in [
        ("\"piece\":2", "\"piece\":7"),
        ("\"piece\":2", "\"piece\":18446744073709551615"),
    ] {
        let edited = text.replacen(piece, kind, 1);
        let e = Recording::read(edited.as_bytes()).expect_err(kind);
        assert_eq!(e.line, at, "{e}");
        assert!(
            matches!(
                e.kind,
                RecordingErrorKind::LevelRemove(StaticError::UnknownPiece(_))
            ),
            "{e}"
        );
    }
}

#[test]
fn version_1_recordings_read_and_revalidate_as_before() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let mut files = vec![format!("{data}/v1/example.jsonl")];
    for entry in std::fs::read_dir(format!("{data}/repro")).unwrap() {
        files.push(entry.unwrap().path().display().to_string());
    }
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let text = std::str::from_utf8(&bytes).unwrap();
        assert!(
            text.starts_with(
                "{\"type\":\"header\",\"format\":\"lagcomp-recording\",\"version\":1,"
            ),
            "{path} is a version 1 file"
        );
        let recording = Recording::read(&bytes[..]).unwrap_or_else(|e| panic!("{path}: {e}"));
        let judged =
            revalidate(&recording, None, |_, _| {}).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(!judged.is_empty(), "{path}");
        for r in &judged {
            assert!(!r.changed(), "{path} line {}: {:?}", r.line, r.verdict);
        }
    }
    // The v1 example's verdicts, as the current example gives them.
    let recording =
        Recording::read(&std::fs::read(format!("{data}/v1/example.jsonl")).unwrap()[..]).unwrap();
    let labels: Vec<&str> = revalidate(&recording, None, |_, _| {})
        .unwrap()
        .iter()
        .map(|r| r.verdict.outcome.label())
        .collect();
    assert_eq!(
        labels,
        ["confirmed", "replayed", "blocked", "fire_rate", "miss"]
    );
}

#[test]
fn a_version_1_file_may_not_hold_level_records() {
    let (bytes, _) = mesh_match();
    let text = String::from_utf8(bytes).unwrap().replacen(
        &format!("\"version\":{FORMAT_VERSION}"),
        "\"version\":1",
        1,
    );
    let e = Recording::read(text.as_bytes()).expect_err("a level record in a v1 file");
    assert!(
        matches!(
            e.kind,
            RecordingErrorKind::NotInVersion {
                kind: RecordType::Level,
                needs: 2,
                version: 1
            }
        ),
        "{e}"
    );
    let level_line = text
        .lines()
        .position(|l| l.contains("\"type\":\"level\""))
        .unwrap()
        + 1;
    assert_eq!(e.line, level_line);
}

#[test]
fn a_level_record_parses_and_prints_back_the_same() {
    let entry = RecordingEntry::LevelAdd {
        time: 1.5,
        pieces: vec![ground(), mesh_wall(1.0, -4.0)],
    };
    let json = entry.to_json();
    assert!(
        json.starts_with("{\"type\":\"level_add\",\"time\":1.5,\"pieces\":[{\"height_field\":"),
        "{json}"
    );
    assert_eq!(RecordingEntry::parse(&json).unwrap(), entry);
}

#[test]
fn the_documented_level_errors_are_the_real_ones() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/FORMAT.md"))
        .unwrap();
    let unwrapped = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let (text, _) = with_level_line(|l| l.replacen("[0,2,3]", "[0,2,9]", 1));
    let bad_index = Recording::read(text.as_bytes()).expect_err("bad index");
    let (bytes, _) = mesh_match();
    let text = String::from_utf8(bytes).unwrap();
    let removal = Recording::read(text.replacen("\"piece\":2", "\"piece\":7", 1).as_bytes())
        .expect_err("unknown piece");
    let v1 = Recording::read(
        text.replacen(&format!("\"version\":{FORMAT_VERSION}"), "\"version\":1", 1)
            .as_bytes(),
    )
    .expect_err("v1");
    // The document quotes the messages (kinds), without this match's line numbers.
    for e in [bad_index, removal, v1] {
        let message = e.kind.to_string();
        assert!(unwrapped.contains(&message), "FORMAT.md lacks {message}");
    }
}

#[test]
fn a_mesh_costs_about_35_bytes_a_triangle_in_a_recording() {
    // A 100,000-triangle level: a 224 x 224 grid of vertices 0.37 m apart on a gently
    // curved surface (coordinates with several digits, as a real level's are).
    let n = 224_u32;
    let vertices: Vec<Vec3> = (0..n * n)
        .map(|i| {
            let (x, z) = ((i % n) as f32 * 0.37, (i / n) as f32 * 0.37);
            Vec3::new(x - 41.3, (x * 0.11).sin() + (z * 0.07).cos(), z - 41.3)
        })
        .collect();
    let mut triangles = Vec::new();
    for row in 0..n - 1 {
        for column in 0..n - 1 {
            let a = row * n + column;
            triangles.push([a, a + 1, a + n]);
            triangles.push([a + 1, a + n + 1, a + n]);
        }
    }
    let count = triangles.len();
    assert!(count > 99_000, "{count}");
    let piece = LevelPiece::Mesh {
        vertices,
        triangles,
        layers: 1,
    };
    let writer = || {
        RecordingWriter::new(
            Vec::new(),
            &HistoryConfig {
                tick_rate: RATE,
                max_rewind: 0.5,
            },
        )
        .unwrap()
    };
    let out = writer();
    let header = out.lines();
    let before = out.finish().unwrap().len();
    let mut out = writer();
    out.level(std::slice::from_ref(&piece)).unwrap();
    assert_eq!(out.lines(), header + 1);
    let bytes = out.finish().unwrap();
    let per_triangle = (bytes.len() - before) as f64 / count as f64;
    println!(
        "{count} triangles: {} bytes, {per_triangle:.1} a triangle",
        bytes.len() - before
    );
    assert!((25.0..=45.0).contains(&per_triangle), "{per_triangle}");
    // And it reads back to the same piece.
    let recording = Recording::read(&bytes[..]).unwrap();
    assert_eq!(
        recording.records[1].1,
        RecordingEntry::Level {
            pieces: vec![piece]
        }
    );
}

#[test]
fn a_piece_check_refuses_what_loading_refuses() {
    // The reader checks pieces with `LevelPiece::check` so that nothing is half-loaded on
    // replay: it must refuse exactly what `History::load_level` refuses, with the same error.
    let mut non_finite = mesh_wall(0.0, -10.0);
    if let LevelPiece::Mesh { vertices, .. } = &mut non_finite {
        vertices[1].y = f32::INFINITY;
    }
    let mut bad_grid = ground();
    if let LevelPiece::HeightField { heights, .. } = &mut bad_grid {
        heights.pop();
    }
    let mut bad_height = ground();
    if let LevelPiece::HeightField { heights, .. } = &mut bad_height {
        heights[4] = f32::NAN;
    }
    let mut flat_size = ground();
    if let LevelPiece::HeightField { size, .. } = &mut flat_size {
        size.x = 0.0;
    }
    let pieces = [
        mesh_wall(0.0, -10.0),
        ground(),
        non_finite,
        bad_grid,
        bad_height,
        flat_size,
        LevelPiece::Primitive {
            shape: Shape::sphere(-1.0),
            pose: Pose::IDENTITY,
            layers: 1,
        },
        LevelPiece::Mesh {
            vertices: vec![Vec3::ZERO, Vec3::X, Vec3::Y],
            triangles: vec![[0, 1, 3]],
            layers: 1,
        },
    ];
    let mut refused = 0;
    for piece in pieces {
        let mut history = History::new(HistoryConfig::default()).unwrap();
        let loaded = history.load_level([piece.clone()]).map(|_| ());
        let checked = piece
            .check()
            .map_err(|error| LevelError { piece: 0, error });
        assert_eq!(checked, loaded, "{piece:?}");
        refused += usize::from(checked.is_err());
    }
    assert_eq!(refused, 6);
}
