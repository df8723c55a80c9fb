//! A headless Bevy game server with lag compensation: three players strafe behind a wall
//! and a sliding door, every fixed tick is recorded, and simulated clients fire shots that the plugin
//! validates; the verdicts are printed as they come.
//!
//! Run with `cargo run -p lagcomp-bevy --example headless_server`. A real server adds
//! Bevy's `TimePlugin` (or `MinimalPlugins`) so that `FixedMain` runs at the tick rate;
//! here the loop runs it once per tick itself, as fast as it can.

// ANCHOR: all
// ANCHOR: imports
use bevy_app::{App, FixedMain, FixedUpdate};
use bevy_ecs::prelude::*;
use bevy_transform::components::Transform;
use lagcomp::{Blocker, EntityRole, Hitbox, Pose, Shape, Vec3, Zone};
use lagcomp_bevy::{
    ClaimedTarget, HitboxEntities, Hitboxes, LagCompClock, LagCompHistory, LagCompPlugin, Shooter,
    ShotFired, ShotJudged,
};
use lagcomp_validate::{ClientTiming, Participant, RenderTime, RuleSet, VerdictOutcome, WeaponId};
// ANCHOR_END: imports

const TICK_RATE: f64 = 64.0;
const RIFLE: WeaponId = WeaponId(1);
/// Round trip 80 ms, others drawn 100 ms back: a shot sees the world 140 ms ago.
const VIEW_DELAY: f64 = 0.04 + 0.1;

// ANCHOR: movement
/// A player strafing along x at `speed` m/s around `home`.
#[derive(Component)]
struct Strafer {
    home: Vec3,
    speed: f32,
}

/// Who shoots, and whether its client lies about when it fired.
#[derive(Component)]
struct Bot {
    backtracks: bool,
    next_seq: u32,
}

fn strafe(clock: Res<LagCompClock>, mut players: Query<(&Strafer, &mut Transform)>) {
    let t = clock.time_of(clock.next_tick()) as f32;
    for (strafer, mut transform) in &mut players {
        transform.translation = strafer.home + Vec3::X * (strafer.speed * t).sin() * 2.0;
    }
}

/// A door that slides `by` along x and back, open for the second half of each `period`
/// seconds.
#[derive(Component)]
struct Door {
    closed_at: Vec3,
    by: f32,
    period: f64,
}

fn slide_doors(clock: Res<LagCompClock>, mut doors: Query<(&Door, &mut Transform)>) {
    let t = clock.time_of(clock.next_tick());
    for (door, mut transform) in &mut doors {
        let open = t % door.period >= door.period / 2.0;
        transform.translation = door.closed_at + Vec3::X * if open { door.by } else { 0.0 };
    }
}
// ANCHOR_END: movement

// ANCHOR: rules
fn rules() -> RuleSet {
    RuleSet::from_toml(
        r#"
        [weapons.rifle]
        id = 1
        max_range = 100.0
        min_interval = 0.1
        aim_tolerance_deg = 180.0
        origin_tolerance = 0.5
        hit_leeway = 1.05
        hit_leeway_min = 0.02
        max_rewind = 0.4
        damage = { head = 4.0, torso = 1.0, limb = 0.75 }
        "#,
    )
    .expect("the example's rules are valid")
}
// ANCHOR_END: rules

// ANCHOR: rig
fn player() -> Hitboxes {
    Hitboxes::rigid(vec![
        Hitbox::new(
            0,
            "torso",
            Zone::Torso,
            0,
            Shape::cuboid(Vec3::new(0.3, 0.5, 0.2)),
        )
        .offset_by(Vec3::Y * 0.9),
        Hitbox::new(1, "head", Zone::Head, 0, Shape::sphere(0.15)).offset_by(Vec3::Y * 1.6),
    ])
    .expect("the player rig is valid")
}
// ANCHOR_END: rig

// ANCHOR: verdict
fn print_verdict(judged: On<ShotJudged>, names: Query<&Name>, entities: Res<HitboxEntities>) {
    let shooter = names.get(judged.shooter).map_or("?", Name::as_str);
    let target = judged
        .target
        .and_then(|t| names.get(t).ok())
        .map_or("-", Name::as_str);
    let verdict = &judged.verdict;
    let detail = match verdict.outcome {
        VerdictOutcome::Confirmed(hit) => format!("{:?} x{}", hit.zone, hit.damage_multiplier),
        VerdictOutcome::Blocked {
            by: Blocker::Entity(door),
            distance,
        } => {
            let door = entities.entity(door).and_then(|e| names.get(e).ok());
            format!("{} at {distance:.1} m", door.map_or("?", Name::as_str))
        }
        VerdictOutcome::Blocked { distance, .. } => format!("wall at {distance:.1} m"),
        _ => String::new(),
    };
    println!(
        "t={:.3}s {shooter} #{} at {target}: {} {detail}",
        verdict.basis.received_at,
        verdict.seq,
        verdict.outcome.label()
    );
}
// ANCHOR_END: verdict

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ANCHOR: plugin
    let mut app = App::new();
    app.add_plugins(LagCompPlugin::new(TICK_RATE, 0.5)?.rules(rules()))
        .add_systems(FixedUpdate, (strafe, slide_doors));
    // A wall between the second bot and the players' right side.
    app.world_mut()
        .resource_mut::<LagCompHistory>()
        .add_static(
            Shape::cuboid(Vec3::new(1.0, 2.0, 0.1)),
            Pose::from_translation(Vec3::new(4.0, 1.0, 5.0)),
            u32::MAX,
        )?;
    // A sliding door (a blocker: it stops shots where it stood when the shooter saw it,
    // and is never hit) between the first bot and the left player, open every other second.
    let panel = Hitbox::new(
        0,
        "panel",
        Zone::Custom(1),
        0,
        Shape::cuboid(Vec3::new(1.0, 1.25, 0.05)),
    );
    let closed_at = Vec3::new(-1.5, 1.25, 5.0);
    app.world_mut().spawn((
        Name::new("door"),
        Door {
            closed_at,
            by: -4.0,
            period: 2.0,
        },
        Transform::from_translation(closed_at),
        Hitboxes::rigid(vec![panel])?.with_role(EntityRole::Blocker),
    ));
    // ANCHOR_END: plugin
    // ANCHOR: spawn
    let timing = ClientTiming {
        srtt: 0.08,
        rttvar: 0.004,
        interp_delay: 0.1,
    };
    let players: Vec<Entity> = [("ana", -3.0, 1.3), ("bo", 0.0, 2.1), ("cy", 4.0, 0.7)]
        .into_iter()
        .map(|(name, x, speed)| {
            let home = Vec3::new(x, 0.0, 0.0);
            app.world_mut()
                .spawn((
                    Name::new(name),
                    Strafer { home, speed },
                    Transform::from_translation(home),
                    player(),
                ))
                .id()
        })
        .collect();
    let bots: Vec<Entity> = [
        ("honest", 0.0, false),
        ("walled", 8.0, false),
        ("liar", -6.0, true),
    ]
    .into_iter()
    .map(|(name, x, backtracks)| {
        app.world_mut()
            .spawn((
                Name::new(name),
                Transform::from_xyz(x, 0.0, 10.0),
                player(),
                Shooter {
                    participant: Participant::default(),
                    timing: Some(timing),
                },
                Bot {
                    backtracks,
                    next_seq: 0,
                },
            ))
            .observe(print_verdict)
            .id()
    })
    .collect();
    // ANCHOR_END: spawn

    // ANCHOR: tick
    for tick in 0..192_u32 {
        // Every quarter second each bot fires at the torso of the player it drew.
        if tick >= 32 && tick % 16 == 0 {
            let now = app
                .world()
                .resource::<LagCompClock>()
                .time_of(lagcomp::Tick(tick));
            for (i, &bot) in bots.iter().enumerate() {
                let target = players[(tick as usize / 16 + i) % players.len()];
                let (bot_at, backtracks, seq) = {
                    let transform = app.world().get::<Transform>(bot).expect("a bot");
                    let state = app.world().get::<Bot>(bot).expect("a bot");
                    (transform.translation, state.backtracks, state.next_seq)
                };
                app.world_mut().get_mut::<Bot>(bot).expect("a bot").next_seq += 1;
                // The liar claims to have seen the world 250 ms further back than it could.
                let seen = now - VIEW_DELAY - if backtracks { 0.25 } else { 0.0 };
                let strafer = app.world().get::<Strafer>(target).expect("a player");
                let aim = strafer.home
                    + Vec3::X * (strafer.speed * seen as f32).sin() * 2.0
                    + Vec3::Y * 0.9;
                let origin = bot_at + Vec3::Y * 0.3;
                app.world_mut().write_message(ShotFired {
                    shooter: bot,
                    weapon: RIFLE,
                    seq,
                    render_time: RenderTime::Time(seen),
                    origin,
                    direction: aim - origin,
                    hit: Some(ClaimedTarget {
                        entity: target,
                        hitbox: None,
                        point: Some(aim),
                    }),
                    received_at: None,
                });
            }
        }
        app.world_mut().run_schedule(FixedMain);
    }
    // ANCHOR_END: tick
    Ok(())
}
// ANCHOR_END: all
