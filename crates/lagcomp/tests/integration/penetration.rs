//! Penetrating shots: walls and bodies crossed by material and thickness, damage falling
//! per layer, the shot stopped where its power runs out, mesh walls as thick as the boxes
//! they model, a server's own world, and bad rules refused.

use std::sync::Arc;

use lagcomp::query::penetration::{
    Penetrated, PenetrationChain, PenetrationRules, PenetrationRulesError, PenetrationStop,
    PenetrationTrace,
};
use lagcomp::{
    BoneTransform, EntityId, EntityRole, EntityState, History, HistoryConfig, Hitbox, LevelPiece,
    MaterialId, Pose, Ray, RewindTarget, Rig, Shape, StaticId, StaticWorld, Tick, Vec3, WorldHit,
    Zone,
};

const CONCRETE: MaterialId = MaterialId(0);
const WOOD: MaterialId = MaterialId(1);
const FLESH: MaterialId = MaterialId(2);
const METAL: MaterialId = MaterialId(3);

/// Costs per metre by material: concrete 1, wood 0.25, flesh 0.5, metal 4.
fn rifle(power: f32) -> PenetrationRules {
    PenetrationRules::new(power, 0.75, vec![1.0, 0.25, 0.5, 4.0])
        .unwrap()
        .with_body_material(FLESH)
}

/// Radius of every test body's one hitbox: the shot crosses 30 cm of it through the centre.
const BODY_RADIUS: f32 = 0.15;

/// A wall across the shot (which runs along +z from the origin): `thickness` metres from
/// `near` on, 4 m square.
#[derive(Clone, Copy)]
struct Slab {
    near: f32,
    thickness: f32,
    material: MaterialId,
}

/// A history with the walls and one body (a sphere of [`BODY_RADIUS`], zone torso) centred
/// on the shot at each of `bodies` metres; returns the bodies' ids.
fn scene(walls: &[Slab], bodies: &[f32]) -> (History, Vec<EntityId>) {
    scene_with_roles(
        walls,
        &bodies
            .iter()
            .map(|&z| (z, EntityRole::Target))
            .collect::<Vec<_>>(),
    )
}

fn scene_with_roles(walls: &[Slab], bodies: &[(f32, EntityRole)]) -> (History, Vec<EntityId>) {
    let mut history = History::new(HistoryConfig {
        tick_rate: 64.0,
        max_rewind: 0.5,
    })
    .unwrap();
    for wall in walls {
        let id = history
            .add_static(
                Shape::cuboid(Vec3::new(2.0, 2.0, wall.thickness / 2.0)),
                Pose::from_translation(Vec3::Z * (wall.near + wall.thickness / 2.0)),
                1,
            )
            .unwrap();
        history.set_static_material(id, wall.material).unwrap();
    }
    let rig = Arc::new(
        Rig::rigid(vec![Hitbox::new(
            0,
            "chest",
            Zone::Torso,
            0,
            Shape::sphere(BODY_RADIUS),
        )])
        .unwrap(),
    );
    let ids: Vec<_> = bodies
        .iter()
        .map(|&(_, role)| history.spawn_as(rig.clone(), role))
        .collect();
    let mut frame = history.begin_frame(Tick(1), 1.0 / 64.0).unwrap();
    for (&id, &(z, _)) in ids.iter().zip(bodies) {
        frame
            .record_rigid(
                id,
                BoneTransform::from_translation(Vec3::Z * z),
                EntityState::default(),
            )
            .unwrap();
    }
    drop(frame);
    (history, ids)
}

fn shoot(
    history: &History,
    rules: &PenetrationRules,
    chain: &mut PenetrationChain,
) -> PenetrationTrace {
    let ray = Ray::new(Vec3::ZERO, Vec3::Z, 100.0).unwrap();
    history
        .query(RewindTarget::at(1.0 / 64.0))
        .penetrate(&ray, rules, chain)
        .unwrap()
}

/// What a row expects the shot to end at.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ends {
    Reach,
    Wall(u64),
    InBody,
}

struct Row<'a> {
    what: &'static str,
    walls: &'a [Slab],
    bodies: &'static [f32],
    power: f32,
    /// (body index, damage factor) of each body hit, in order.
    hits: &'static [(usize, f32)],
    ends: Ends,
    power_left: f32,
}

const fn slab(near: f32, thickness: f32, material: MaterialId) -> Slab {
    Slab {
        near,
        thickness,
        material,
    }
}

#[test]
fn walls_and_bodies_cost_power_by_material_and_thickness_and_damage_falls_per_layer() {
    let rows = [
        Row {
            what: "20 cm of wood, then a body: hit at one layer's damage",
            walls: &[slab(5.0, 0.2, WOOD)],
            bodies: &[7.35],
            power: 1.0,
            hits: &[(0, 0.75)],
            ends: Ends::Reach,
            power_left: 1.0 - 0.2 * 0.25 - 0.3 * 0.5,
        },
        Row {
            what: "1.5 m of concrete stops a power-1 shot at its face",
            walls: &[slab(5.0, 1.5, CONCRETE)],
            bodies: &[8.0],
            power: 1.0,
            hits: &[],
            ends: Ends::Wall(0),
            power_left: 1.0,
        },
        Row {
            what: "two bodies in a row: full damage, then one layer's",
            walls: &[],
            bodies: &[4.0, 6.0],
            power: 1.0,
            hits: &[(0, 1.0), (1, 0.75)],
            ends: Ends::Reach,
            power_left: 1.0 - 2.0 * 0.3 * 0.5,
        },
        Row {
            what: "a wall, then two bodies: one and two layers",
            walls: &[slab(2.0, 0.1, CONCRETE)],
            bodies: &[4.0, 6.0],
            power: 1.0,
            hits: &[(0, 0.75), (1, 0.75 * 0.75)],
            ends: Ends::Reach,
            power_left: 1.0 - 0.1 - 2.0 * 0.3 * 0.5,
        },
        Row {
            what: "40 cm of wood costs 0.1",
            walls: &[slab(5.0, 0.4, WOOD)],
            bodies: &[],
            power: 1.0,
            hits: &[],
            ends: Ends::Reach,
            power_left: 0.9,
        },
        Row {
            what: "40 cm of concrete costs 0.4",
            walls: &[slab(5.0, 0.4, CONCRETE)],
            bodies: &[],
            power: 1.0,
            hits: &[],
            ends: Ends::Reach,
            power_left: 0.6,
        },
        Row {
            what: "40 cm of metal would cost 1.6: stopped",
            walls: &[slab(5.0, 0.4, METAL)],
            bodies: &[],
            power: 1.0,
            hits: &[],
            ends: Ends::Wall(0),
            power_left: 1.0,
        },
        Row {
            what: "a material past the weapon's table is never crossed",
            walls: &[slab(5.0, 0.01, MaterialId(9))],
            bodies: &[7.0],
            power: 100.0,
            hits: &[],
            ends: Ends::Wall(0),
            power_left: 100.0,
        },
        Row {
            what: "power 0.1 lodges in the first body (0.15 to cross): hit, nothing behind",
            walls: &[],
            bodies: &[4.0, 6.0],
            power: 0.1,
            hits: &[(0, 1.0)],
            ends: Ends::InBody,
            power_left: 0.0,
        },
        Row {
            what: "the second wall of two is the one too many",
            walls: &[slab(2.0, 0.5, CONCRETE), slab(3.0, 0.6, CONCRETE)],
            bodies: &[6.0],
            power: 1.0,
            hits: &[],
            ends: Ends::Wall(1),
            power_left: 0.5,
        },
    ];
    let mut chain = PenetrationChain::new();
    for row in rows {
        let (history, bodies) = scene(row.walls, row.bodies);
        let trace = shoot(&history, &rifle(row.power), &mut chain);
        let hits: Vec<_> = chain
            .hits()
            .map(|(hit, factor)| {
                (
                    bodies.iter().position(|&b| b == hit.entity).unwrap(),
                    factor,
                )
            })
            .collect();
        assert_eq!(hits.len(), row.hits.len(), "{}: {hits:?}", row.what);
        for (&(body, factor), &(want_body, want_factor)) in hits.iter().zip(row.hits) {
            assert_eq!(body, want_body, "{}", row.what);
            assert_approx_eq!(factor, want_factor, 1e-6, "{}", row.what);
        }
        let ends = match trace.stop {
            PenetrationStop::Reach => Ends::Reach,
            PenetrationStop::Wall { id, .. } => Ends::Wall(id.0),
            PenetrationStop::Body { layer } => {
                assert!(!chain.layers()[layer].crossed, "{}", row.what);
                Ends::InBody
            }
            other => panic!("{}: ended at {other:?}", row.what),
        };
        assert_eq!(ends, row.ends, "{}", row.what);
        assert_approx_eq!(trace.power_left, row.power_left, 1e-5, "{}", row.what);
        // Every layer is met in order, and each costs what its material and thickness say.
        let rules = rifle(row.power);
        for pair in chain.layers().windows(2) {
            assert!(pair[0].exit <= pair[1].entry, "{}: {pair:?}", row.what);
        }
        for layer in chain.layers().iter().filter(|layer| layer.crossed) {
            let expected = rules.cost_per_metre(layer.material) * (layer.exit - layer.entry);
            assert_approx_eq!(layer.cost, expected, 1e-6, "{}", row.what);
        }
    }
}

#[test]
fn a_lodged_shot_stops_where_its_power_ran_out_in_the_body() {
    let (history, bodies) = scene(&[], &[4.0]);
    let mut chain = PenetrationChain::new();
    let trace = shoot(&history, &rifle(0.1), &mut chain);
    assert_eq!(trace.stop, PenetrationStop::Body { layer: 0 });
    let layer = chain.layers()[0];
    assert_eq!(layer.hit().unwrap().entity, bodies[0]);
    assert_approx_eq!(layer.entry, 4.0 - BODY_RADIUS, 1e-5);
    // 0.1 of power at 0.5 a metre: 20 cm in.
    assert_approx_eq!(layer.exit, 4.0 - BODY_RADIUS + 0.2, 1e-5);
    assert_approx_eq!(layer.cost, 0.1, 1e-7);
}

#[test]
fn a_zone_made_of_armour_stops_the_shot_that_flesh_would_not() {
    let (history, _) = scene(&[], &[4.0, 6.0]);
    let mut chain = PenetrationChain::new();
    let armoured = rifle(1.0).with_zone_material(Zone::Torso, METAL);
    let trace = shoot(&history, &armoured, &mut chain);
    // 30 cm of metal costs 1.2: the first body is hit, the shot stays in it.
    assert_eq!(trace.stop, PenetrationStop::Body { layer: 0 });
    assert_eq!(chain.hits().count(), 1);
    assert_eq!(chain.layers()[0].material, METAL);
    // A head zone is still flesh.
    assert_eq!(armoured.zone_material(Zone::Head), FLESH);
}

#[test]
fn a_door_stops_a_penetrating_shot_as_it_stops_any_trace() {
    let (history, ids) = scene_with_roles(
        &[],
        &[
            (4.0, EntityRole::Target),
            (6.0, EntityRole::Blocker),
            (8.0, EntityRole::Target),
        ],
    );
    let mut chain = PenetrationChain::new();
    let trace = shoot(&history, &rifle(10.0), &mut chain);
    let PenetrationStop::Blocker(block) = trace.stop else {
        panic!("{:?}", trace.stop);
    };
    assert_eq!(block.entity, ids[1]);
    assert_approx_eq!(block.distance, 6.0 - BODY_RADIUS, 1e-5);
    let hit: Vec<_> = chain.hits().map(|(hit, _)| hit.entity).collect();
    assert_eq!(hit, [ids[0]]);
}

/// A closed box mesh: the 12 triangles of the box `center +- half`, wound outwards.
fn box_mesh(center: Vec3, half: Vec3) -> LevelPiece {
    let corner = |i: u32| {
        let pick = |bit: u32, h: f32| if i & bit == 0 { -h } else { h };
        center + Vec3::new(pick(1, half.x), pick(2, half.y), pick(4, half.z))
    };
    let faces: [[u32; 4]; 6] = [
        [0, 2, 6, 4], // -x
        [1, 5, 7, 3], // +x
        [0, 4, 5, 1], // -y
        [2, 3, 7, 6], // +y
        [0, 1, 3, 2], // -z
        [4, 6, 7, 5], // +z
    ];
    LevelPiece::Mesh {
        vertices: (0..8).map(corner).collect(),
        triangles: faces
            .iter()
            .flat_map(|&[a, b, c, d]| [[a, b, c], [a, c, d]])
            .collect(),
        layers: 1,
    }
}

#[test]
fn a_closed_mesh_wall_is_as_thick_as_the_primitive_box_it_models() {
    let center = Vec3::new(0.3, -0.2, 6.0);
    let half = Vec3::new(1.5, 1.0, 0.35);
    let mut primitive = History::new(HistoryConfig::default()).unwrap();
    primitive
        .add_static(Shape::cuboid(half), Pose::from_translation(center), 1)
        .unwrap();
    let mut mesh = History::new(HistoryConfig::default()).unwrap();
    mesh.load_level([box_mesh(center, half)]).unwrap();
    // Nothing recorded: the shots look at the present of an empty history.
    for history in [&mut primitive, &mut mesh] {
        history.begin_frame(Tick(1), 1.0 / 64.0).unwrap();
    }
    let rules = PenetrationRules::new(10.0, 0.75, vec![1.0]).unwrap();
    // Straight through, and at slants that leave by the far face and by a side face.
    let shots = [
        (Vec3::ZERO, Vec3::Z),
        (Vec3::new(0.1, 0.2, 0.0), Vec3::new(0.05, -0.03, 1.0)),
        (Vec3::new(-1.0, 0.0, 0.0), Vec3::new(0.4, 0.1, 1.0)),
        (Vec3::new(0.0, 0.0, 12.0), Vec3::new(0.02, 0.01, -1.0)),
    ];
    let mut chain = PenetrationChain::new();
    for (origin, dir) in shots {
        let ray = Ray::new(origin, dir, 50.0).unwrap();
        let mut thickness = [0.0_f32; 2];
        for (history, out) in [&primitive, &mesh].into_iter().zip(&mut thickness) {
            let trace = history
                .query(RewindTarget::at(1.0 / 64.0))
                .penetrate(&ray, &rules, &mut chain)
                .unwrap();
            assert_eq!(trace.stop, PenetrationStop::Reach);
            let [wall] = chain.layers() else {
                panic!("one wall: {:?}", chain.layers());
            };
            assert!(matches!(wall.layer, Penetrated::Wall(StaticId(0))));
            assert!(wall.crossed);
            *out = wall.exit - wall.entry;
            assert_approx_eq!(trace.power_left, 10.0 - *out, 1e-5);
        }
        assert!(thickness[0] > 0.5, "{origin} {dir}: {thickness:?}");
        assert_approx_eq!(thickness[1], thickness[0], 1e-4, "{origin} along {dir}");
    }
}

#[test]
fn two_walls_in_one_mesh_count_only_their_own_thickness() {
    let mut history = History::new(HistoryConfig::default()).unwrap();
    let (
        LevelPiece::Mesh {
            vertices: mut v,
            triangles: mut t,
            ..
        },
        LevelPiece::Mesh {
            vertices: v2,
            triangles: t2,
            ..
        },
    ) = (
        box_mesh(Vec3::Z * 3.0, Vec3::new(2.0, 2.0, 0.1)),
        box_mesh(Vec3::Z * 6.0, Vec3::new(2.0, 2.0, 0.1)),
    )
    else {
        unreachable!()
    };
    let offset = v.len() as u32;
    v.extend(v2);
    t.extend(t2.into_iter().map(|tri| tri.map(|i| i + offset)));
    history
        .load_level([LevelPiece::Mesh {
            vertices: v,
            triangles: t,
            layers: 1,
        }])
        .unwrap();
    history.begin_frame(Tick(1), 1.0 / 64.0).unwrap();
    let mut chain = PenetrationChain::new();
    let trace = shoot(&history, &rifle(1.0), &mut chain);
    assert_eq!(trace.stop, PenetrationStop::Reach);
    let crossed: Vec<_> = chain.layers().iter().map(|l| (l.entry, l.exit)).collect();
    assert_eq!(crossed.len(), 2, "{crossed:?}");
    for ((entry, exit), near) in crossed.into_iter().zip([2.9, 5.9]) {
        assert_approx_eq!(entry, near, 1e-5);
        assert_approx_eq!(exit, near + 0.2, 1e-4);
    }
    assert_approx_eq!(trace.power_left, 0.6, 1e-4);
}

/// A server's own world: solid slabs across z, each `[near, far)`, with materials; it
/// answers exits with the trait's provided back-cast.
struct ServerSlabs(Vec<(f32, f32, MaterialId)>);

impl StaticWorld for ServerSlabs {
    fn cast_ray(&self, ray: &Ray, layers: u32, _time: f64) -> Option<WorldHit> {
        if layers & 1 == 0 || ray.dir().z == 0.0 {
            return None;
        }
        let (z, dz) = (ray.origin().z, ray.dir().z);
        self.0
            .iter()
            .enumerate()
            .filter_map(|(id, &(near, far, _))| {
                let (a, b) = ((near - z) / dz, (far - z) / dz);
                let (enter, exit) = (a.min(b), a.max(b));
                (exit >= 0.0 && enter <= ray.max_distance()).then(|| WorldHit {
                    id: 100 + id as u64,
                    distance: enter.max(0.0),
                    normal: Vec3::Z * -dz.signum(),
                })
            })
            .min_by(|a, b| a.distance.total_cmp(&b.distance))
    }

    fn cast_sphere(&self, ray: &Ray, _radius: f32, layers: u32, time: f64) -> Option<WorldHit> {
        self.cast_ray(ray, layers, time)
    }

    fn material(&self, id: u64) -> MaterialId {
        self.0[(id - 100) as usize].2
    }
}

#[test]
fn a_server_world_is_crossed_by_its_own_materials_and_back_cast_exits() {
    let (history, bodies) = scene(&[slab(2.0, 0.1, CONCRETE)], &[8.0]);
    let world = ServerSlabs(vec![(4.0, 4.3, WOOD), (5.0, 5.2, CONCRETE)]);
    let mut chain = PenetrationChain::new();
    let ray = Ray::new(Vec3::ZERO, Vec3::Z, 100.0).unwrap();
    let trace = history
        .query(RewindTarget::at(1.0 / 64.0))
        .world(&world)
        .penetrate(&ray, &rifle(1.0), &mut chain)
        .unwrap();
    assert_eq!(trace.stop, PenetrationStop::Reach);
    let walls: Vec<_> = chain
        .layers()
        .iter()
        .filter_map(|l| match l.layer {
            Penetrated::Wall(id) => Some((id.0, l.material, l.exit - l.entry)),
            Penetrated::Body(_) => None,
        })
        .collect();
    assert_eq!(walls.len(), 3, "{walls:?}");
    for (&(id, material, thickness), (want_id, want_material, want)) in
        walls
            .iter()
            .zip([(0, CONCRETE, 0.1), (100, WOOD, 0.3), (101, CONCRETE, 0.2)])
    {
        assert_eq!((id, material), (want_id, want_material));
        assert_approx_eq!(thickness, want, 1e-5, "wall {id}");
    }
    let (hit, factor) = chain.hits().next().expect("the body behind three walls");
    assert_eq!(hit.entity, bodies[0]);
    assert_approx_eq!(factor, 0.75_f32.powi(3), 1e-6);
    assert_approx_eq!(trace.power_left, 1.0 - 0.1 - 0.075 - 0.2 - 0.15, 1e-5);
    // Less power: the server's concrete is the wall too many.
    let trace = history
        .query(RewindTarget::at(1.0 / 64.0))
        .world(&world)
        .penetrate(&ray, &rifle(0.3), &mut chain)
        .unwrap();
    assert_eq!(
        trace.stop,
        PenetrationStop::Wall {
            id: StaticId(101),
            distance: 5.0
        }
    );
}

#[test]
fn bad_rules_are_refused_naming_the_number() {
    use PenetrationRulesError as E;
    let rows: [(f32, f32, Vec<f32>, E); 6] = [
        (-1.0, 0.5, vec![1.0], E::Power(-1.0)),
        (f32::INFINITY, 0.5, vec![1.0], E::Power(f32::INFINITY)),
        (1.0, 1.5, vec![1.0], E::LayerDamage(1.5)),
        (1.0, -0.1, vec![1.0], E::LayerDamage(-0.1)),
        (
            1.0,
            0.5,
            vec![1.0, -2.0],
            E::Cost {
                material: 1,
                cost: -2.0,
            },
        ),
        (1.0, 0.5, vec![1.0; 70_000], E::TooManyMaterials(70_000)),
    ];
    for (power, layer_damage, costs, want) in rows {
        let got = PenetrationRules::new(power, layer_damage, costs).unwrap_err();
        assert_eq!(got, want);
    }
    // NaN never equals itself: the variant and the material are what is checked.
    let nan_cost = PenetrationRules::new(1.0, 0.5, vec![0.0, 0.0, f32::NAN]).unwrap_err();
    assert!(matches!(nan_cost, E::Cost { material: 2, cost } if cost.is_nan()));
    let nan_damage = PenetrationRules::new(1.0, f32::NAN, vec![]).unwrap_err();
    assert!(matches!(nan_damage, E::LayerDamage(d) if d.is_nan()));
    assert_eq!(
        PenetrationRules::new(f32::NAN, 0.5, vec![])
            .unwrap_err()
            .to_string(),
        "penetration power NaN must be finite and at least 0"
    );
    assert_eq!(rifle(1.0).with_max_layers(0).unwrap_err(), E::MaxLayers);
    // Infinity is a cost: never crossed.
    assert!(PenetrationRules::new(1.0, 0.5, vec![f32::INFINITY]).is_ok());
}

#[test]
fn a_walk_through_many_cheap_walls_stops_at_the_layer_limit() {
    let walls: Vec<_> = (0..30)
        .map(|i| slab(1.0 + i as f32 * 0.5, 0.05, WOOD))
        .collect();
    let (history, _) = scene(&walls, &[]);
    let rules = PenetrationRules::new(1.0, 0.9, vec![0.0, 0.0])
        .unwrap()
        .with_max_layers(8)
        .unwrap();
    let mut chain = PenetrationChain::new();
    let trace = shoot(&history, &rules, &mut chain);
    assert_eq!(trace.stop, PenetrationStop::LayerLimit);
    assert_eq!(chain.layers().len(), 8);
    assert_eq!(trace.power_left, 1.0);
}

#[test]
fn a_bad_ray_target_is_an_error_and_the_chain_is_left_usable() {
    let (history, _) = scene(&[slab(5.0, 0.2, WOOD)], &[7.35]);
    let mut chain = PenetrationChain::new();
    let ray = Ray::new(Vec3::ZERO, Vec3::Z, 100.0).unwrap();
    let far_future =
        history
            .query(RewindTarget::at(100.0))
            .penetrate(&ray, &rifle(1.0), &mut chain);
    assert!(far_future.is_err());
    // A ray that is not finite cannot be made: refused before any query.
    assert!(Ray::new(Vec3::NAN, Vec3::Z, 1.0).is_err());
    assert!(Ray::new(Vec3::ZERO, Vec3::Z, f32::INFINITY).is_err());
    let trace = shoot(&history, &rifle(1.0), &mut chain);
    assert_eq!(trace.stop, PenetrationStop::Reach);
    assert_eq!(chain.hits().count(), 1);
}

#[test]
fn pieces_are_the_default_material_until_told_and_unknown_pieces_are_refused() {
    let (mut history, _) = scene(&[slab(2.0, 0.1, CONCRETE), slab(4.0, 0.1, CONCRETE)], &[]);
    let level = history.level();
    assert_eq!(level.material(StaticId(1)), Some(MaterialId::DEFAULT));
    assert_eq!(level.material(StaticId(2)), None);
    history.set_static_material(StaticId(1), METAL).unwrap();
    assert_eq!(history.level().material(StaticId(1)), Some(METAL));
    assert_eq!(history.level().material(StaticId(0)), Some(CONCRETE));
    assert_eq!(StaticWorld::material(history.level(), 1), METAL);
    assert_eq!(
        history.set_static_material(StaticId(7), WOOD),
        Err(lagcomp::StaticError::UnknownPiece(StaticId(7)))
    );
    assert_eq!(history.level().material(StaticId(7)), None);
}

/// The history's level seen only through its casts and materials: exits come from the
/// trait's provided back-cast instead of the level's exact answer.
struct BackCastOnly<'l>(&'l lagcomp::Level);

impl StaticWorld for BackCastOnly<'_> {
    fn cast_ray(&self, ray: &Ray, layers: u32, time: f64) -> Option<WorldHit> {
        self.0.cast_ray(ray, layers, time)
    }

    fn cast_sphere(&self, ray: &Ray, radius: f32, layers: u32, time: f64) -> Option<WorldHit> {
        self.0.cast_sphere(ray, radius, layers, time)
    }

    fn material(&self, id: u64) -> MaterialId {
        self.0.material(StaticId(id)).unwrap_or_default()
    }
}

#[test]
fn the_provided_back_cast_finds_the_exits_the_level_knows_exactly() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_pcg::Pcg64::seed_from_u64(25);
    let mut chain = PenetrationChain::new();
    let mut compared = 0;
    for _ in 0..200 {
        // Two to five walls of random materials with gaps between them: at least 50 cm
        // apart and turned by at most 0.05 rad, so where the shot crosses (within 3 m of
        // the axis) they never touch, and every gap is wider than a 128th of the longest
        // reach into a wall (2 power / 0.25 per metre = 8 m): the back-cast's bisection
        // always lands in it.
        let mut walls = Vec::new();
        let mut z = 1.0;
        for _ in 0..rng.random_range(2..=5) {
            z += rng.random_range(0.5..2.0);
            let thickness = rng.random_range(0.02..0.6);
            walls.push((z, thickness, MaterialId(rng.random_range(0..3))));
            z += thickness;
        }
        // Walls in the server's world only: the level stays empty, so every exit comes
        // from one answer or the other.
        let mut level_history = History::new(HistoryConfig::default()).unwrap();
        for &(near, thickness, material) in &walls {
            let id = level_history
                .add_static(
                    Shape::cuboid(Vec3::new(3.0, 3.0, thickness / 2.0)),
                    Pose::new(
                        Vec3::Z * (near + thickness / 2.0),
                        lagcomp::Quat::from_rotation_y(rng.random_range(-0.05..0.05)),
                    ),
                    1,
                )
                .unwrap();
            level_history.set_static_material(id, material).unwrap();
        }
        level_history.begin_frame(Tick(1), 1.0 / 64.0).unwrap();
        let mut targets = History::new(HistoryConfig::default()).unwrap();
        targets.begin_frame(Tick(1), 1.0 / 64.0).unwrap();
        let rules = rifle(rng.random_range(0.2..2.0));
        let ray = Ray::new(
            Vec3::new(
                rng.random_range(-0.5..0.5),
                rng.random_range(-0.5..0.5),
                0.0,
            ),
            Vec3::new(
                rng.random_range(-0.2..0.2),
                rng.random_range(-0.2..0.2),
                1.0,
            ),
            40.0,
        )
        .unwrap();
        let mut walk = |world: &dyn StaticWorld| {
            let trace = targets
                .query(RewindTarget::at(1.0 / 64.0))
                .world(world)
                .penetrate(&ray, &rules, &mut chain)
                .unwrap();
            let layers: Vec<_> = chain
                .layers()
                .iter()
                .map(|l| (l.layer, l.crossed, l.entry, l.exit))
                .collect();
            (trace.stop, trace.power_left, layers)
        };
        let exact = walk(level_history.level());
        let back = walk(&BackCastOnly(level_history.level()));
        // The same stop; a wall's distance may differ in the last bits (the walk resumes
        // past an exit found two ways).
        match (exact.0, back.0) {
            (
                PenetrationStop::Wall { id, distance },
                PenetrationStop::Wall {
                    id: back_id,
                    distance: back_distance,
                },
            ) => {
                assert_eq!(id, back_id, "{walls:?} {ray:?}");
                assert_approx_eq!(distance, back_distance, 1e-4, "{walls:?}");
            }
            (exact_stop, back_stop) => assert_eq!(exact_stop, back_stop, "{walls:?} {ray:?}"),
        }
        assert_approx_eq!(exact.1, back.1, 1e-4, "{walls:?}");
        assert_eq!(exact.2.len(), back.2.len(), "{walls:?}");
        for (a, b) in exact.2.iter().zip(&back.2) {
            assert_eq!((a.0, a.1), (b.0, b.1), "{walls:?}");
            assert_approx_eq!(a.2, b.2, 1e-4, "{walls:?}");
            assert_approx_eq!(a.3, b.3, 1e-4, "{walls:?}");
        }
        compared += exact.2.len();
    }
    assert!(compared > 400, "{compared} layers compared");
    assert!(compared > 100, "{compared} layers compared");
}
