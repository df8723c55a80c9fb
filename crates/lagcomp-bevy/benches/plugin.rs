//! The plugin's overhead over the core: recording 200 skeletal entities of 20 bones (one
//! hitbox each) through the plugin (poses composed from 4,000 joint entities' transforms)
//! against the core recording the same poses (`core`: handed finished; `core_composed`:
//! composed each tick from the same joint transforms, as a server without Bevy whose
//! animation gives joint-local poses does), and a rewound ray through `RewoundHitboxes`
//! against the core's query.
//!
//! `cargo bench -p lagcomp-bevy --bench plugin`

use std::hint::black_box;
use std::sync::Arc;

use bevy_app::{App, FixedPostUpdate};
use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemState;
use bevy_transform::components::Transform;
use criterion::Criterion;
use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, Quat, Ray, RewindTarget,
    Rig, Shape, Tick, Vec3, WindowPolicy, Zone,
};
use lagcomp_bevy::{HitboxEntities, Hitboxes, LagCompHistory, LagCompPlugin, RewoundHitboxes};

const ENTITIES: usize = 200;
const BONES: u16 = 20;
const TICK_RATE: f64 = 64.0;

/// Twenty bones, bone `b` the child of bone `(b - 1) / 2`, one capsule on each.
fn rig() -> Arc<Rig> {
    let hitboxes = (0..BONES)
        .map(|b| {
            Hitbox::new(
                b,
                format!("bone{b}"),
                Zone::Torso,
                b,
                Shape::capsule(0.08, 0.12, lagcomp::Axis::Y),
            )
        })
        .collect();
    Arc::new(Rig::new(BONES, hitboxes).expect("a valid rig"))
}

fn joint_names() -> Vec<String> {
    (0..BONES).map(|b| format!("joint{b}")).collect()
}

/// Where rig `e` stands, and its joints' local transforms: joint `b` the child of joint
/// `(b - 1) / 2` (joint 0 of the rig's entity), bent a little each.
fn rig_pose(e: usize) -> (Vec3, Vec<Transform>) {
    let at = Vec3::new((e % 20) as f32 * 5.0, 0.0, (e / 20) as f32 * 5.0);
    let locals = (0..usize::from(BONES))
        .map(|b| {
            let bend = Quat::from_rotation_x(0.05 * (b + e % 7) as f32);
            Transform::from_xyz(0.0, 0.2, 0.0).with_rotation(bend)
        })
        .collect();
    (at, locals)
}

/// The app: `ENTITIES` rigs on a 20 x 10 grid 5 m apart, posed by [`rig_pose`].
fn app() -> App {
    let mut app = App::new();
    app.add_plugins(LagCompPlugin::new(TICK_RATE, 0.5).expect("a valid config"));
    let rig = rig();
    let names = joint_names();
    for e in 0..ENTITIES {
        let (at, locals) = rig_pose(e);
        let hitboxes = Hitboxes::skeletal(rig.clone(), names.clone()).expect("one name per bone");
        let root = app
            .world_mut()
            .spawn((Transform::from_translation(at), hitboxes))
            .id();
        let mut joints: Vec<Entity> = Vec::with_capacity(usize::from(BONES));
        for (b, local) in locals.into_iter().enumerate() {
            let parent = if b == 0 { root } else { joints[(b - 1) / 2] };
            joints.push(
                app.world_mut()
                    .spawn((Name::new(names[b].clone()), local, ChildOf(parent)))
                    .id(),
            );
        }
    }
    // Find the joints and fill the window.
    for _ in 0..40 {
        app.world_mut().run_schedule(FixedPostUpdate);
    }
    app
}

/// The same entities in a bare history, with the poses the plugin records (each joint's
/// world transform composed down the hierarchy as `Transform::mul_transform` does), as a
/// server without Bevy would hand them to the core.
fn core_twin(app: &App) -> (History, Vec<(EntityId, EntityState)>, Vec<BoneTransform>) {
    let plugin = app.world().resource::<LagCompHistory>();
    let mut history = History::new(*plugin.config()).expect("a valid config");
    let rig = rig();
    let mut batch = Vec::new();
    let mut bones = Vec::new();
    for e in 0..ENTITIES {
        let (at, locals) = rig_pose(e);
        let mut world: Vec<Transform> = Vec::with_capacity(locals.len());
        for (b, local) in locals.into_iter().enumerate() {
            let parent = if b == 0 {
                Transform::from_translation(at)
            } else {
                world[(b - 1) / 2]
            };
            world.push(parent.mul_transform(local));
        }
        batch.push((history.spawn(rig.clone()), EntityState::default()));
        bones.extend(world.iter().map(|joint| {
            BoneTransform::new(joint.translation, joint.rotation).with_scale(joint.scale)
        }));
    }
    // The plugin recorded the same poses.
    let newest = plugin.newest_tick().expect("frames recorded");
    for e in [0, ENTITIES - 1] {
        let recorded = plugin
            .entity_at(
                EntityId::from_bits(e as u64),
                RewindTarget::between(newest, newest, 0.0),
                WindowPolicy::Reject,
            )
            .expect("a valid target")
            .expect("recorded");
        for b in 0..BONES {
            let twin = bones[e * usize::from(BONES) + usize::from(b)].translation;
            let got = recorded.bone(b).expect("a bone").translation;
            assert!(
                got.distance(twin) < 1e-5,
                "rig {e} bone {b}: {got} vs {twin}"
            );
        }
    }
    (history, batch, bones)
}

/// Every rig's joints composed from their local transforms into `bones` (rig after rig,
/// bone `b` the child of bone `(b - 1) / 2`, bone 0 of the rig's root), as
/// [`core_twin`]'s poses were.
fn compose_rigs(roots: &[Transform], locals: &[Transform], bones: &mut [BoneTransform]) {
    let per_rig = usize::from(BONES);
    let rigs = roots
        .iter()
        .zip(locals.chunks_exact(per_rig))
        .zip(bones.chunks_exact_mut(per_rig));
    for ((root, locals), bones) in rigs {
        for (b, local) in locals.iter().enumerate() {
            let parent = if b == 0 {
                *root
            } else {
                let above = bones[(b - 1) / 2];
                Transform {
                    translation: above.translation,
                    rotation: above.rotation,
                    scale: above.scale,
                }
            };
            let joint = parent.mul_transform(*local);
            bones[b] =
                BoneTransform::new(joint.translation, joint.rotation).with_scale(joint.scale);
        }
    }
}

fn record(c: &mut Criterion) {
    let mut app = app();
    let (mut history, batch, bones) = core_twin(&app);
    let (roots, locals): (Vec<Transform>, Vec<Vec<Transform>>) = (0..ENTITIES)
        .map(|e| {
            let (at, locals) = rig_pose(e);
            (Transform::from_translation(at), locals)
        })
        .unzip();
    let locals: Vec<Transform> = locals.into_iter().flatten().collect();
    let mut composed = vec![BoneTransform::IDENTITY; bones.len()];
    compose_rigs(&roots, &locals, &mut composed);
    assert_eq!(composed, bones, "the same poses as the twin's");
    let mut group = c.benchmark_group("bevy_record_200x20");
    group.bench_function("plugin", |b| {
        b.iter(|| app.world_mut().run_schedule(FixedPostUpdate));
    });
    let mut tick = 0_u32;
    group.bench_function("core", |b| {
        b.iter(|| {
            tick += 1;
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / TICK_RATE)
                .expect("ticks increase");
            black_box(frame.record_all(black_box(&batch), black_box(&bones))).expect("valid poses");
        });
    });
    group.bench_function("core_composed", |b| {
        b.iter(|| {
            tick += 1;
            compose_rigs(black_box(&roots), black_box(&locals), &mut composed);
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / TICK_RATE)
                .expect("ticks increase");
            black_box(frame.record_all(black_box(&batch), black_box(&composed)))
                .expect("valid poses");
        });
    });
    group.finish();
}

/// The rigid reading of "200 entities x 20 hitboxes": twenty hitboxes on each entity's
/// own transform (one bone), so the core records 200 bones and the plugin composes none.
fn record_rigid(c: &mut Criterion) {
    let hitboxes: Vec<Hitbox> = (0..BONES)
        .map(|b| {
            Hitbox::new(b, format!("part{b}"), Zone::Torso, 0, Shape::sphere(0.1))
                .offset_by(Vec3::Y * 0.1 * f32::from(b))
        })
        .collect();
    let rig = Arc::new(Rig::rigid(hitboxes).expect("a valid rig"));
    let mut app = App::new();
    app.add_plugins(LagCompPlugin::new(TICK_RATE, 0.5).expect("a valid config"));
    let mut history = History::new(HistoryConfig::default()).expect("a valid config");
    let mut batch = Vec::new();
    let mut bones = Vec::new();
    for e in 0..ENTITIES {
        let at = Vec3::new((e % 20) as f32 * 5.0, 0.0, (e / 20) as f32 * 5.0);
        let hitboxes = Hitboxes::from_rig(rig.clone()).expect("one bone");
        app.world_mut()
            .spawn((Transform::from_translation(at), hitboxes));
        batch.push((history.spawn(rig.clone()), EntityState::default()));
        bones.push(BoneTransform::from_translation(at));
    }
    for _ in 0..40 {
        app.world_mut().run_schedule(FixedPostUpdate);
    }
    let mut group = c.benchmark_group("bevy_record_200x20_rigid");
    group.bench_function("plugin", |b| {
        b.iter(|| app.world_mut().run_schedule(FixedPostUpdate));
    });
    let mut tick = 0_u32;
    group.bench_function("core", |b| {
        b.iter(|| {
            tick += 1;
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / TICK_RATE)
                .expect("ticks increase");
            black_box(frame.record_all(black_box(&batch), black_box(&bones))).expect("valid poses");
        });
    });
    group.finish();
}

fn ray(c: &mut Criterion) {
    let mut app = app();
    let newest = app
        .world()
        .resource::<LagCompHistory>()
        .newest_tick()
        .expect("frames");
    let target = RewindTarget::between(Tick(newest.0 - 9), Tick(newest.0 - 8), 0.3);
    // Along the first row of rigs, through their lower bones.
    let ray = Ray::new(Vec3::new(-5.0, 0.25, 0.0), Vec3::X, 200.0).expect("a valid ray");
    let mut state = SystemState::<RewoundHitboxes>::new(app.world_mut());
    let mut group = c.benchmark_group("bevy_ray");
    {
        let rewound = state.get(app.world()).expect("the plugin's resources");
        assert!(
            rewound.at(target).ray(&ray).expect("valid").hit.is_some(),
            "the ray hits"
        );
    }
    group.bench_function("system_param", |b| {
        b.iter(|| {
            let rewound = state.get(app.world()).expect("the plugin's resources");
            black_box(
                rewound
                    .at(black_box(target))
                    .ray(black_box(&ray))
                    .expect("valid"),
            );
        });
    });
    let history = &app.world().resource::<LagCompHistory>().0;
    assert_eq!(app.world().resource::<HitboxEntities>().len(), ENTITIES);
    group.bench_function("core", |b| {
        b.iter(|| {
            black_box(
                history
                    .query(black_box(target))
                    .ray(black_box(&ray))
                    .expect("valid"),
            )
        });
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args();
    record(&mut c);
    record_rigid(&mut c);
    ray(&mut c);
    c.final_summary();
}
