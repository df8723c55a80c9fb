//! A shooter behind a laggy link fires at strafing targets; the server checks every shot
//! against the present and against the rewound past, and prints how often each agrees with
//! what the shooter saw.
//!
//! Run: `cargo run --release --example rewind_demo`
//!
//! The client's view is computed independently of the history: it interpolates the targets'
//! ticked positions itself and decides hit or miss with the same narrow-phase geometry, as
//! a real client would. The server only sees the ray and the ticks the client drew between.

use std::sync::Arc;

use lagcomp::{
    Axis, BoneTransform, EntityState, History, HistoryConfig, Hitbox, HitboxId, PlacedShape, Pose,
    Ray, RewindTarget, Rig, Shape, Tick, Vec3, Zone,
};
use rand::{Rng, SeedableRng};

const TICK_RATE: f64 = 64.0;
const TARGETS: usize = 8;
const SHOTS: usize = 2_000;
const ONE_WAY_LATENCY: f64 = 0.060;
const INTERP_DELAY: f64 = 0.100;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
    let rig = Arc::new(Rig::rigid(vec![
        Hitbox::on_bone(
            0,
            HitboxId(0),
            "body",
            Zone::Torso,
            Shape::capsule(0.35, 0.55, Axis::Y),
        )
        .offset_by(Vec3::Y * 0.9),
        Hitbox::on_bone(0, HitboxId(1), "head", Zone::Head, Shape::sphere(0.14))
            .offset_by(Vec3::Y * 1.72),
    ])?);
    let mut history = History::new(HistoryConfig {
        tick_rate: TICK_RATE,
        max_rewind: 0.5,
    })?;
    let targets: Vec<_> = (0..TARGETS).map(|_| history.spawn(rig.clone())).collect();
    // Each target strafes along x with its own speed and phase, in its own lane.
    let motion: Vec<(f32, f32)> = (0..TARGETS)
        .map(|_| {
            (
                rng.random_range(3.0..7.0),
                rng.random_range(0.0..std::f32::consts::TAU),
            )
        })
        .collect();
    let position = |i: usize, tick: u32| {
        let t = tick as f32 / TICK_RATE as f32;
        let (speed, phase) = motion[i];
        // Reverses direction every ~0.6 s, like a player dodging.
        let x = speed * 0.6 * (t / 0.6 * std::f32::consts::PI + phase).sin();
        Vec3::new(x, 0.0, 20.0 + 3.0 * i as f32)
    };

    let (mut seen_hits, mut present_agree, mut rewound_agree, mut false_confirms) = (0, 0, 0, 0);
    let mut tick = 0_u32;
    let record = |history: &mut History, tick: u32| -> Result<(), Box<dyn std::error::Error>> {
        let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / TICK_RATE)?;
        for (i, &id) in targets.iter().enumerate() {
            frame.record_rigid(
                id,
                BoneTransform::from_translation(position(i, tick)),
                EntityState::default(),
            )?;
        }
        Ok(())
    };
    // Fill the window first.
    while tick < 64 {
        record(&mut history, tick)?;
        tick += 1;
    }
    for _ in 0..SHOTS {
        record(&mut history, tick)?;
        let now = f64::from(tick) / TICK_RATE;
        // What the client drew when it fired: the server's past, delayed by the link and
        // by its interpolation buffer.
        let render = now - ONE_WAY_LATENCY - INTERP_DELAY;
        let from = (render * TICK_RATE).floor() as u32;
        let fraction = (render * TICK_RATE - f64::from(from)) as f32;
        let target = rng.random_range(0..TARGETS);
        let seen =
            |i: usize| lagcomp::math::lerp(position(i, from), position(i, from + 1), fraction);
        let muzzle = Vec3::new(rng.random_range(-4.0..4.0), 1.6, 0.0);
        let aim =
            seen(target) + Vec3::new(rng.random_range(-0.5..0.5), rng.random_range(0.6..1.9), 0.0);
        let ray = Ray::new(muzzle, aim - muzzle, 100.0)?;
        // The client's own verdict, from its own picture.
        let client_hit = (0..TARGETS).any(|i| {
            rig.hitboxes().iter().any(|hb| {
                let placed: PlacedShape =
                    hb.placed(&BoneTransform::from(Pose::from_translation(seen(i))));
                placed
                    .cast_line(ray.origin(), ray.dir())
                    .and_then(|c| c.clip(100.0))
                    .is_some()
            })
        });
        let present = history
            .query(RewindTarget::at(now))
            .ray(&ray)?
            .hit
            .is_some();
        let rewound = history
            .query(RewindTarget::between(Tick(from), Tick(from + 1), fraction))
            .ray(&ray)?
            .hit
            .is_some();
        if client_hit {
            seen_hits += 1;
            present_agree += usize::from(present);
            rewound_agree += usize::from(rewound);
        } else {
            false_confirms += usize::from(rewound);
        }
        tick += 1;
    }
    let pct = |n: usize| 100.0 * n as f64 / seen_hits.max(1) as f64;
    println!(
        "{SHOTS} shots, {seen_hits} hits on the shooter's screen ({:.0} ms one way, {:.0} ms interpolation delay)",
        ONE_WAY_LATENCY * 1e3,
        INTERP_DELAY * 1e3
    );
    println!("{:<28} {:>10}", "server check", "agreement");
    println!(
        "{:<28} {:>9.1}%",
        "present (no compensation)",
        pct(present_agree)
    );
    println!("{:<28} {:>9.1}%", "rewound (lagcomp)", pct(rewound_agree));
    println!("false confirmations (rewound): {false_confirms}");
    Ok(())
}
