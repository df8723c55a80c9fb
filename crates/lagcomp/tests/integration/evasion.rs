//! Spawn protection (`invulnerable`) and a registered dodge (`evasive`): per-tick facts
//! recorded in the frame's flag bits, seen by queries at the rewound time and by
//! `present_state` at the present, and, unlike `lag_compensated: false`, never moving the
//! entity to its present pose.

use lagcomp::{BoneTransform, EntityState, RewindTarget, SampleKind, Tick, Vec3, WindowPolicy};

use crate::support::{at, box_rig, history, ray_at, tick_time};

const RATE: f64 = 64.0;

/// Where the player stands at `tick`: one metre further along x each tick.
fn root(tick: u32) -> Vec3 {
    Vec3::new(tick as f32, 0.0, 0.0)
}

#[test]
fn protection_and_dodges_are_seen_at_the_rewound_time_on_the_rewound_pose() {
    let mut h = history(RATE, 1.0);
    let player = h.spawn(box_rig());
    for tick in 0..=20_u32 {
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        let state = EntityState {
            invulnerable: (5..=9).contains(&tick),
            evasive: (12..=15).contains(&tick) || tick == 20,
            ..EntityState::default()
        };
        frame
            .record_rigid(player, BoneTransform::from_translation(root(tick)), state)
            .unwrap();
    }
    // (tick traced, invulnerable then, evasive then): each row is traced where the player
    // stood at that tick, never at its present pose.
    let rows = [
        (4, false, false),  // before protection
        (5, true, false),   // protection's first tick
        (9, true, false),   // its last
        (10, false, false), // over
        (12, false, true),  // the dodge's first tick
        (15, false, true),  // its last
        (16, false, false), // over
    ];
    for (tick, invulnerable, evasive) in rows {
        let trace = h
            .query(at(tick_time(tick, RATE)))
            .ray(&ray_at(root(tick)))
            .unwrap();
        let hit = trace.hit.unwrap_or_else(|| panic!("tick {tick}: no hit"));
        assert_eq!(hit.entity, player);
        assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(tick) });
        assert_eq!(hit.state.invulnerable, invulnerable, "tick {tick}");
        assert_eq!(hit.state.evasive, evasive, "tick {tick}");
        assert!(hit.state.lag_compensated, "tick {tick}: still rewound");
        let rebuilt = h
            .entity_at(
                player,
                RewindTarget::Time(tick_time(tick, RATE)),
                WindowPolicy::Reject,
            )
            .unwrap()
            .unwrap();
        assert_eq!(rebuilt.state(), hit.state, "tick {tick}");
        assert_eq!(rebuilt.bone(0).unwrap().translation, root(tick));
    }
    // The present: the dodge registered at tick 20, whatever the rewound moment says.
    let now = h.present_state(player).unwrap();
    assert!(now.evasive && !now.invulnerable);
}

#[test]
fn every_combination_of_flags_round_trips() {
    // Five flags in one byte: every combination comes back as recorded, none leaks into
    // another.
    let mut h = history(RATE, 1.0);
    let player = h.spawn(box_rig());
    let state_of = |bits: u32| EntityState {
        alive: bits & 1 != 0,
        lag_compensated: bits & 2 != 0,
        teleported: bits & 4 != 0,
        invulnerable: bits & 8 != 0,
        evasive: bits & 16 != 0,
        layers: 1,
        user: bits as u16,
    };
    for bits in 0..32_u32 {
        let mut frame = h.begin_frame(Tick(bits), tick_time(bits, RATE)).unwrap();
        frame
            .record_rigid(
                player,
                BoneTransform::from_translation(root(bits)),
                state_of(bits),
            )
            .unwrap();
        drop(frame);
        assert_eq!(h.present_state(player).unwrap(), state_of(bits));
    }
    for bits in 0..32_u32 {
        let recorded = h
            .entity_as_recorded(
                player,
                RewindTarget::Time(tick_time(bits, RATE)),
                WindowPolicy::Reject,
            )
            .unwrap()
            .unwrap();
        assert_eq!(recorded.state(), state_of(bits), "bits {bits:05b}");
    }
}
