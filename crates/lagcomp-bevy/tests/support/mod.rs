//! What the tests share: an app with the plugin, a rig, rules, and ways to run ticks.

use bevy_app::{App, FixedMain, FixedUpdate, PostUpdate};
use bevy_ecs::prelude::*;
use bevy_transform::components::Transform;
use lagcomp::{Hitbox, Shape, Vec3, Zone};
use lagcomp_bevy::{Hitboxes, LagCompPlugin, LagCompSystems, Shooter, ShotJudged};
use lagcomp_validate::{ClientTiming, Participant, RuleSet, WeaponId};

/// Ticks per second in every test.
pub(crate) const TICK_RATE: f64 = 64.0;

/// The weapon the rules define.
pub(crate) const RIFLE: WeaponId = WeaponId(1);

/// An app with the plugin (64 Hz, half a second), the rules and the transform plugin
/// (so that `PostUpdate` propagates `GlobalTransform`s to compare with).
pub(crate) fn app() -> App {
    let mut app = App::new();
    app.add_plugins((
        LagCompPlugin::new(TICK_RATE, 0.5)
            .expect("a valid config")
            .rules(rules()),
        bevy_transform::TransformPlugin,
    ));
    app.init_resource::<Judged>().add_systems(
        bevy_app::FixedPostUpdate,
        collect_judged.after(LagCompSystems::Validate),
    );
    app
}

/// Runs one server tick: the fixed schedules (movement in `FixedUpdate`, recording and
/// validation in `FixedPostUpdate`).
pub(crate) fn tick(app: &mut App) {
    app.world_mut().run_schedule(FixedMain);
}

/// Brings `GlobalTransform`s up to date, as the frame's `PostUpdate` would.
pub(crate) fn propagate(app: &mut App) {
    app.world_mut().run_schedule(PostUpdate);
}

/// Adds a movement system to `FixedUpdate`.
pub(crate) fn moving<M>(
    app: &mut App,
    system: impl IntoScheduleConfigs<bevy_ecs::system::ScheduleSystem, M>,
) {
    app.add_systems(FixedUpdate, system);
}

/// Every verdict written as a message, in order.
#[derive(Resource, Debug, Default)]
pub(crate) struct Judged(pub(crate) Vec<ShotJudged>);

fn collect_judged(mut reader: MessageReader<ShotJudged>, mut judged: ResMut<Judged>) {
    judged.0.extend(reader.read().copied());
}

/// A standing player: a torso box and a head sphere above it, on one bone at the feet.
pub(crate) fn player() -> Hitboxes {
    Hitboxes::rigid(player_hitboxes()).expect("the player rig is valid")
}

/// The hitboxes of [`player`].
pub(crate) fn player_hitboxes() -> Vec<Hitbox> {
    vec![
        Hitbox::new(
            0,
            "torso",
            Zone::Torso,
            0,
            Shape::cuboid(Vec3::new(0.3, 0.5, 0.2)),
        )
        .offset_by(Vec3::Y * 0.9),
        Hitbox::new(1, "head", Zone::Head, 0, Shape::sphere(0.15)).offset_by(Vec3::Y * 1.6),
    ]
}

/// A [`player`] of team 1 at `at` that fires, its eye bone (0, at its feet) looking
/// along `aim_forward`, its client timed as [`timing`] says.
pub(crate) fn shooter(at: Vec3, aim_forward: Vec3) -> impl Bundle {
    (
        Transform::from_translation(at),
        player(),
        Shooter {
            participant: Participant {
                team: 1,
                aim_bone: 0,
                aim_forward,
            },
            timing: Some(timing()),
        },
    )
}

/// A rifle reaching 200 m, 10 shots a second, generous aim and origin tolerances (the
/// tests aim exactly), hits accepted within the hitbox grown 5 %.
pub(crate) fn rules() -> RuleSet {
    RuleSet::from_toml(
        r#"
        [weapons.rifle]
        id = 1
        max_range = 200.0
        min_interval = 0.05
        aim_tolerance_deg = 180.0
        origin_tolerance = 0.5
        hit_leeway = 1.05
        hit_leeway_min = 0.02
        max_rewind = 0.5
        damage = { head = 4.0, torso = 1.0, limb = 0.75 }
        "#,
    )
    .expect("the test rules are valid")
}

/// A client 100 ms round trip away drawing others 100 ms back: its shots reach 150 ms.
pub(crate) fn timing() -> ClientTiming {
    ClientTiming {
        srtt: 0.1,
        rttvar: 0.005,
        interp_delay: 0.1,
    }
}

/// The server time of `tick`.
pub(crate) fn time_of(tick: u32) -> f64 {
    f64::from(tick) / TICK_RATE
}

/// Asserts two floats are within `tolerance`, saying by how much they are not.
#[track_caller]
pub(crate) fn assert_near(actual: Vec3, expected: Vec3, tolerance: f32) {
    let off = (actual - expected).abs().max_element();
    assert!(
        off <= tolerance,
        "{actual} is {off} from {expected}, more than the {tolerance} allowed"
    );
}
