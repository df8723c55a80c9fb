//! A simulation result built by hand for the report tests: four network conditions with
//! all three modes, histograms, honest rejections, three cheat classes (one of them with
//! accepted shots) and a shot picture with every kind of outline.
//!
//! Shared by the `report` and `report_browser` test modules.

use std::collections::BTreeMap;

use lagcomp_sim::{
    CheatResult, DistanceStats, Mode, ModeResult, Outline, PresetRun, RewindStats, ShotPicture,
    SimResult,
};

/// The reasons the full validator rejected honest shots for, over all conditions.
pub(crate) const REJECTION_REASONS: [&str; 4] = [
    "angle_too_wide",
    "rewind_too_far",
    "time_in_future",
    "too_fast",
];

/// Four network conditions, 0 to 200 ms; agreement falls with latency for the modes
/// that do not use the client's stamp.
pub(crate) fn realistic() -> SimResult {
    // (name, rtt, jitter, loss, agreement without compensation, with the server's guess)
    let presets = [
        ("LAN 0/0/0%", 0.0, 0.0, 0.0, 0.99, 0.995),
        ("50/10/1%", 50.0, 10.0, 0.01, 0.71, 0.93),
        ("100/25/2%", 100.0, 25.0, 0.02, 0.48, 0.86),
        ("200/50/5%", 200.0, 50.0, 0.05, 0.22, 0.74),
    ];
    let runs = presets
        .iter()
        .enumerate()
        .map(|(i, &(name, rtt_ms, jitter_ms, loss, none, guess))| {
            let shots_sent = 4_000 + 100 * i as u64;
            let shots_arrived = (shots_sent as f64 * (1.0 - loss)).round() as u64;
            let client_hits = shots_arrived / 2;
            let mode = |agreement: f64, rejections: &[(&str, u64)]| {
                let agreed = (client_hits as f64 * agreement).round() as u64;
                ModeResult {
                    shots_sent,
                    shots_arrived,
                    client_hits,
                    confirmed: agreed + 3,
                    agreed,
                    agreement: agreed as f64 / client_hits as f64,
                    false_confirmations: 3,
                    rejections: rejections.iter().map(|&(r, n)| (r.to_owned(), n)).collect(),
                }
            };
            // Later conditions reject for more reasons, so every reason is not in every run.
            let full_rejections: Vec<(&str, u64)> = REJECTION_REASONS
                .iter()
                .take(i + 1)
                .enumerate()
                .map(|(k, &r)| (r, (k as u64 + 1) * (i as u64 + 2)))
                .collect();
            let full = mode(0.999 - 0.002 * i as f64, &full_rejections);
            let honest_rejected = full.rejections.values().sum();
            let modes = BTreeMap::from([
                (Mode::None, mode(none, &[])),
                (Mode::ServerGuess, mode(guess, &[])),
                (Mode::Full, full),
            ]);
            let spread = 1.0 + i as f64;
            let histogram = vec![
                (Some(1.0), 900 - 150 * i as u64),
                (Some(2.0), 500),
                (Some(5.0), 200 + 80 * i as u64),
                (Some(10.0), 60 * (i as u64 + 1)),
                (Some(20.0), 10 * (i as u64 + 1)),
                (None, i as u64),
            ];
            PresetRun {
                preset: name.to_owned(),
                rtt_ms,
                jitter_ms,
                loss,
                modes,
                reconstruction: DistanceStats {
                    samples: histogram.iter().map(|&(_, n)| n).sum(),
                    mean_mm: 1.4 * spread,
                    p99_mm: 8.0 * spread,
                    max_mm: 15.0 * spread + 10.0,
                    histogram,
                },
                honest_rejected,
                extrapolated: lagcomp_sim::ExtrapolatedShots::default(),
                refused: [
                    ("dodged".to_owned(), 3 + i as u64),
                    ("invulnerable".to_owned(), 1),
                ]
                .into(),
                rewind: RewindStats {
                    shots: 3_000,
                    median_ms: 1.2 * rtt_ms + 60.0,
                    p99_ms: 1.5 * rtt_ms + 70.0,
                    max_ms: 1.6 * rtt_ms + 80.0,
                    beyond_window: 0,
                },
                blocked_by_movers: 40,
                blocked_by_movers_disputed: 0,
                weapons: Default::default(),
            }
        })
        .collect();
    SimResult {
        scenario: "skirmish".to_owned(),
        seed: 42,
        duration: 60.0,
        bots: 8,
        tick_rate: 64.0,
        send_rate: 32.0,
        max_rewind: 1.0,
        no_rewind_above_rtt: None,
        scenery: Some("3 sliding doors, 1 tram, a 1272-triangle mesh level".to_owned()),
        runs,
        cheats: vec![
            cheat(
                "backtrack",
                "claims a render time 400 ms old",
                812,
                0,
                &[("rewind_too_far", 790), ("miss", 22)],
            ),
            cheat(
                "rapid_fire",
                "fires twice as fast as the weapon allows",
                1_604,
                0,
                &[("too_fast", 802), ("miss", 0)],
            ),
            cheat(
                "wall_shot",
                "claims hits through cover",
                97,
                3,
                &[("blocked", 94)],
            ),
        ],
        picture: Some(picture()),
        scenes: Default::default(),
    }
}

fn cheat(
    class: &str,
    description: &str,
    attempts: u64,
    accepted: u64,
    outcomes: &[(&str, u64)],
) -> CheatResult {
    CheatResult {
        class: class.to_owned(),
        description: description.to_owned(),
        attempts,
        accepted,
        outcomes: outcomes.iter().map(|&(r, n)| (r.to_owned(), n)).collect(),
        honest_rejected: 1,
    }
}

/// A target running to the right: head (circle), torso (stadium), a shield (polygon);
/// rewound 0.4 m back along its path; the ray from 12 m away hits the rewound torso.
pub(crate) fn picture() -> ShotPicture {
    let body = |dx: f32| {
        vec![
            Outline::Circle {
                center: [0.1 + dx, -0.05],
                radius: 0.12,
            },
            Outline::Stadium {
                a: [dx - 0.15, 0.0],
                b: [dx + 0.15, 0.0],
                radius: 0.2,
            },
            Outline::Polygon {
                points: vec![
                    [dx + 0.25, -0.3],
                    [dx + 0.4, -0.3],
                    [dx + 0.4, 0.3],
                    [dx + 0.25, 0.3],
                ],
            },
        ]
    };
    ShotPicture {
        caption: "Shot 1207: the server rewound the target 0.4 m and confirmed the torso hit"
            .to_owned(),
        present: body(0.4),
        rewound: body(0.0),
        ray_from: [-2.0, 12.0],
        ray_to: [0.0, 0.05],
        hit: Some([0.0, 0.05]),
    }
}
