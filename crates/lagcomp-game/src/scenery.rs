//! The scenery a map has besides players and the arena's walls: sliding doors, a tram
//! driving a loop, a wall blown down mid-match and rebuilt, and a triangle-mesh level
//! (floor, ramps, crates).
//!
//! [`Scenery`] is what the server and every client know before the match, as a map file
//! would tell them: shapes, schedules, the level's triangles. The server plays it
//! ([`ServerCore::furnish`](crate::server::ServerCore::furnish)): the doors and the tram
//! are entities that block ([`EntityRole::Blocker`] for a door; the tram is a vehicle,
//! [`EntityRole::TargetAndBlocker`]) it moves, records each tick and sends in its
//! snapshots; the mesh is loaded into its history ([`History::load_level`]); the wall
//! is a static piece removed when it falls and added again when it is rebuilt, so a shot
//! rendered before the fall is still stopped by it. A client holds a [`SceneryView`]: its
//! own copy of the level, traced with the same core queries the server uses; the doors
//! and the tram where its snapshots drew them (interpolated like the players); the wall
//! standing or not as the snapshots' [`WallNews`] told it. A shot's line of sight on the
//! client is then the server's, and an honest shot a door stops is `Blocked`, not refused.

use std::sync::Arc;

use glam::{Quat, Vec3};
use lagcomp::{
    BoneTransform, EntityId, EntityRole, History, HistoryConfig, Hitbox, Level, LevelError,
    LevelPiece, PlacedShape, Pose, Ray, Rig, Shape, StaticWorld, Tick, Zone,
};
use lagcomp_net::interp::{Snapshot, SnapshotBuffer, View};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::body::Arena;
use crate::traffic::EntityUpdate;

/// How far a client traces a shot, metres: the rifle's range.
const REACH: f32 = 200.0;

/// Something that moves on a schedule and stops shots: a door or the tram. It is a box,
/// one bone, spawned with its [`Mover::role`]: it stops traces where it was at the moment
/// rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Mover {
    /// What it is, for logs ("door", "tram").
    pub name: &'static str,
    /// What it is to a trace: a door is a [`EntityRole::Blocker`], never hit; the tram a
    /// vehicle, [`EntityRole::TargetAndBlocker`]: it can be hit, and stops a shot at
    /// anyone behind it.
    pub role: EntityRole,
    /// Half its size along its own axes, metres.
    pub half_extents: Vec3,
    /// How it moves.
    pub motion: Motion,
}

/// How a [`Mover`] moves, as a function of the server's time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Motion {
    /// A sliding door: closed at `closed` (turned `yaw` radians about +Y), it slides
    /// `travel` metres along its own +X to open. Each `period` seconds (shifted by
    /// `phase`) it stays closed for 40 % of the time, opens over 10 %, stays open for 40 %
    /// and closes over the last 10 %.
    Slide {
        /// Centre when closed.
        closed: Vec3,
        /// Turn about +Y, radians.
        yaw: f32,
        /// How far it slides open, metres.
        travel: f32,
        /// One cycle, seconds.
        period: f64,
        /// Seconds added to the time before the cycle is taken.
        phase: f64,
    },
    /// A tram driving a circle of `radius` metres about `centre` at `speed` metres per
    /// second, facing where it goes.
    Circle {
        /// The circle's centre (and the tram's height).
        centre: Vec3,
        /// Radius, metres.
        radius: f32,
        /// Speed along the circle, metres per second.
        speed: f32,
    },
}

impl Mover {
    /// Where it is at server time `time`.
    #[must_use]
    pub fn pose(&self, time: f64) -> Pose {
        match self.motion {
            Motion::Slide {
                closed,
                yaw,
                travel,
                period,
                phase,
            } => {
                let rotation = Quat::from_rotation_y(yaw);
                let open = door_opening((time + phase).rem_euclid(period) / period) as f32;
                Pose::new(closed + rotation * Vec3::X * (travel * open), rotation)
            }
            Motion::Circle {
                centre,
                radius,
                speed,
            } => {
                let angle = (time * f64::from(speed / radius)).rem_euclid(std::f64::consts::TAU);
                let (sin, cos) = (angle.sin() as f32, angle.cos() as f32);
                let offset = Vec3::new(cos, 0.0, sin) * radius;
                // Facing along the tangent, (-sin, 0, cos): its long side is its +X.
                let rotation = Quat::from_rotation_y(-(angle as f32) - std::f32::consts::FRAC_PI_2);
                Pose::new(centre + offset, rotation)
            }
        }
    }

    /// Whether it is a door shut at `time` (a tram is never shut).
    #[must_use]
    pub fn shut(&self, time: f64) -> bool {
        match self.motion {
            Motion::Slide { period, phase, .. } => {
                door_opening((time + phase).rem_euclid(period) / period) == 0.0
            }
            Motion::Circle { .. } => false,
        }
    }

    /// Its rig: one bone, one box on it.
    ///
    /// # Errors
    /// [`MoverError`]: a box the core refuses (a size not finite and positive), or a
    /// motion whose numbers are not finite, or whose period or radius is not positive.
    pub fn rig(&self) -> Result<Arc<Rig>, MoverError> {
        let finite = match self.motion {
            Motion::Slide {
                closed,
                yaw,
                travel,
                period,
                phase,
            } => {
                closed.is_finite()
                    && yaw.is_finite()
                    && travel.is_finite()
                    && phase.is_finite()
                    && period.is_finite()
                    && period > 0.0
            }
            Motion::Circle {
                centre,
                radius,
                speed,
            } => centre.is_finite() && speed.is_finite() && radius.is_finite() && radius > 0.0,
        };
        if !finite {
            return Err(MoverError::Motion);
        }
        let hull = Hitbox::new(
            0,
            self.name,
            Zone::Custom(0),
            0,
            Shape::cuboid(self.half_extents),
        );
        Ok(Arc::new(Rig::new(1, vec![hull])?))
    }
}

/// Why a [`Mover`] was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MoverError {
    /// Its box is refused by the core.
    #[error("its box: {0}")]
    Shape(#[from] lagcomp::RigError),
    /// A number of its motion is not finite, or its period or radius is not positive.
    #[error("its motion has a number that is not finite, or a period or radius not above 0")]
    Motion,
}

/// Why a [`Scenery`] was refused; nothing of it was added.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SceneryError {
    /// A piece of the level, or the breakable wall (the last piece), is refused.
    #[error(transparent)]
    Level(#[from] LevelError),
    /// A mover is refused.
    #[error("mover {index}: {error}")]
    Mover {
        /// Its position in [`Scenery::movers`].
        index: usize,
        /// What is wrong with it.
        error: MoverError,
    },
}

/// Every mover's rig, or the first mover refused.
fn rigs(movers: &[Mover]) -> Result<Vec<Arc<Rig>>, SceneryError> {
    movers
        .iter()
        .enumerate()
        .map(|(index, m)| {
            m.rig()
                .map_err(|error| SceneryError::Mover { index, error })
        })
        .collect()
}

/// How far open a door is (0 shut, 1 open) at `cycle` (0..1) of its period.
fn door_opening(cycle: f64) -> f64 {
    match cycle {
        c if c < 0.4 => 0.0,
        c if c < 0.5 => (c - 0.4) / 0.1,
        c if c < 0.9 => 1.0,
        c => 1.0 - (c - 0.9) / 0.1,
    }
}

/// A wall that is blown down at one time and rebuilt at a later one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Breakable {
    /// Half its size, metres.
    pub half_extents: Vec3,
    /// Where it stands.
    pub pose: Pose,
    /// Server time it falls, seconds.
    pub falls: f64,
    /// Server time it stands again, seconds (after `falls`).
    pub rises: f64,
}

impl Breakable {
    /// Its shape where it stands.
    #[must_use]
    pub fn placed(&self) -> PlacedShape {
        PlacedShape::new(self.pose, Shape::cuboid(self.half_extents))
    }
}

/// What the server has told its clients about the breakable wall: when it fell and when it
/// was rebuilt, as times of the server's frames. Sent with every snapshot (a few bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WallNews {
    /// The frame time it fell at, once it has.
    pub fell: Option<f64>,
    /// The frame time it stood again at, once it has.
    pub rebuilt: Option<f64>,
}

impl WallNews {
    /// Whether the wall stands for a trace looking at `time`: the history's rule, a piece
    /// exists from the time it was added until the time it was removed.
    #[must_use]
    pub fn stands_at(&self, time: f64) -> bool {
        match (self.fell, self.rebuilt) {
            (None, _) => true,
            (Some(fell), rebuilt) => time < fell || rebuilt.is_some_and(|r| time >= r),
        }
    }
}

/// The scenery of one match (see the [module documentation](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct Scenery {
    /// Doors and the tram, in the order they are spawned.
    pub movers: Vec<Mover>,
    /// The wall blown down and rebuilt, if any.
    pub breakable: Option<Breakable>,
    /// The triangle-mesh level: floor, ramps, crates.
    pub level: Vec<LevelPiece>,
}

impl Scenery {
    /// Nothing: no movers, no breakable wall, no level.
    #[must_use]
    pub fn empty() -> Self {
        Self {
            movers: Vec::new(),
            breakable: None,
            level: Vec::new(),
        }
    }

    /// The simulator's scenery for `arena`, drawn from `seed`: three sliding doors, a tram
    /// on a circle, a wall that falls at `falls` and is rebuilt at `rises` (server times,
    /// seconds), and a mesh level of about 1,300 triangles (a floor grid, four ramps,
    /// eight crates).
    #[must_use]
    pub fn around(arena: &Arena, seed: u64, falls: f64, rises: f64) -> Self {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let h = arena.half_size;
        let spot = |rng: &mut Pcg64Mcg, y: f32| {
            Vec3::new(
                rng.random_range(-h * 0.6..h * 0.6),
                y,
                rng.random_range(-h * 0.6..h * 0.6),
            )
        };
        let mut movers: Vec<Mover> = (0..3)
            .map(|i| Mover {
                name: "door",
                role: EntityRole::Blocker,
                half_extents: Vec3::new(0.8, 1.2, 0.08),
                motion: Motion::Slide {
                    closed: spot(&mut rng, 1.2),
                    yaw: rng.random_range(0.0..std::f32::consts::PI),
                    travel: 1.7,
                    period: 4.0 + f64::from(i),
                    phase: rng.random_range(0.0..4.0),
                },
            })
            .collect();
        movers.push(Mover {
            name: "tram",
            role: EntityRole::TargetAndBlocker,
            half_extents: Vec3::new(1.6, 1.0, 0.9),
            motion: Motion::Circle {
                centre: Vec3::new(0.0, 1.0, 0.0),
                radius: h * 0.35,
                speed: 2.5,
            },
        });
        let breakable = Breakable {
            half_extents: Vec3::new(1.8, 1.25, 0.2),
            pose: Pose::new(
                spot(&mut rng, 1.25),
                Quat::from_rotation_y(rng.random_range(0.0..std::f32::consts::PI)),
            ),
            falls,
            rises,
        };
        let mut mesh = Mesh::default();
        mesh.floor(h, 24);
        for _ in 0..4 {
            let at = spot(&mut rng, 0.0);
            mesh.ramp(
                at,
                rng.random_range(0.0..std::f32::consts::TAU),
                4.0,
                1.5,
                1.2,
            );
        }
        for _ in 0..8 {
            let at = spot(&mut rng, 0.0);
            mesh.crate_at(at, rng.random_range(0.0..std::f32::consts::TAU), 0.6);
        }
        Self {
            movers,
            breakable: Some(breakable),
            level: vec![LevelPiece::Mesh {
                vertices: mesh.vertices,
                triangles: mesh.triangles,
                layers: u32::MAX,
            }],
        }
    }

    /// One line on what the scenery holds, for a report: "3 sliding doors, a tram, a
    /// wall down from 12 s to 22 s, a 1,272-triangle mesh level".
    #[must_use]
    pub fn describe(&self) -> String {
        let doors = self
            .movers
            .iter()
            .filter(|m| matches!(m.motion, Motion::Slide { .. }))
            .count();
        let trams = self.movers.len() - doors;
        let mut parts = vec![format!("{doors} sliding doors"), format!("{trams} tram")];
        if let Some(wall) = self.breakable {
            parts.push(format!(
                "a wall down from {:.0} s to {:.0} s",
                wall.falls, wall.rises
            ));
        }
        parts.push(format!("a {}-triangle mesh level", self.triangles()));
        parts.join(", ")
    }

    /// Triangles in the level.
    #[must_use]
    pub fn triangles(&self) -> usize {
        self.level
            .iter()
            .map(|p| match p {
                LevelPiece::Mesh { triangles, .. } => triangles.len(),
                _ => 0,
            })
            .sum()
    }

    /// What a client starts with: its own copy of the level, the movers known by the
    /// entities the server spawned them as (`movers`, in [`Scenery::movers`]' order), the
    /// breakable wall standing.
    ///
    /// # Errors
    /// [`SceneryError`] for a level or a mover the core refuses (the server refused it
    /// too).
    ///
    /// # Panics
    /// Never: the history that builds the level has the default configuration.
    pub fn view(&self, movers: &[EntityId]) -> Result<SceneryView, SceneryError> {
        let rigs = rigs(&self.movers)?;
        // A history serves as the level's builder: the client traces the very structure
        // (tree, meshes) the server's history traces.
        let mut builder =
            History::new(HistoryConfig::default()).expect("the default configuration is valid");
        builder.load_level(self.level.iter().cloned())?;
        // The wall is traced apart (it stands or not as the news has it), checked as the
        // server's history checks it: the piece after the level's.
        if let Some(wall) = &self.breakable {
            wall_piece(wall).check().map_err(|error| LevelError {
                piece: self.level.len(),
                error,
            })?;
        }
        Ok(SceneryView {
            level: builder.level().clone(),
            breakable: self.breakable.map(|b| (b.placed(), WallNews::default())),
            props: rigs
                .into_iter()
                .zip(movers)
                .map(|(rig, &id)| DrawnProp {
                    id,
                    rig,
                    buffer: SnapshotBuffer::new(192),
                    scratch: Vec::new(),
                    view: None,
                })
                .collect(),
        })
    }
}

/// Triangles being built.
#[derive(Debug, Default)]
struct Mesh {
    vertices: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
}

impl Mesh {
    /// A quad, corners in order around it.
    fn quad(&mut self, corners: [Vec3; 4]) {
        let base = self.vertices.len() as u32;
        self.vertices.extend(corners);
        self.triangles
            .extend([[base, base + 1, base + 2], [base, base + 2, base + 3]]);
    }

    /// A flat floor at y = 0 over the arena, `cells` by `cells` squares.
    fn floor(&mut self, half_size: f32, cells: u32) {
        let step = 2.0 * half_size / cells as f32;
        for i in 0..cells {
            for j in 0..cells {
                let (x, z) = (-half_size + i as f32 * step, -half_size + j as f32 * step);
                self.quad([
                    Vec3::new(x, 0.0, z),
                    Vec3::new(x + step, 0.0, z),
                    Vec3::new(x + step, 0.0, z + step),
                    Vec3::new(x, 0.0, z + step),
                ]);
            }
        }
    }

    /// A wedge rising from the floor at `at` to `height` over `length`, `width` wide,
    /// turned `yaw` about +Y.
    fn ramp(&mut self, at: Vec3, yaw: f32, length: f32, width: f32, height: f32) {
        let turn = Quat::from_rotation_y(yaw);
        let p = |x: f32, y: f32, z: f32| at + turn * Vec3::new(x, y, z);
        let (l, w) = (length / 2.0, width / 2.0);
        let (low_a, low_b) = (p(-l, 0.0, -w), p(-l, 0.0, w));
        let (foot_a, foot_b) = (p(l, 0.0, -w), p(l, 0.0, w));
        let (top_a, top_b) = (p(l, height, -w), p(l, height, w));
        self.quad([low_a, low_b, top_b, top_a]);
        self.quad([foot_a, foot_b, top_b, top_a]);
        let base = self.vertices.len() as u32;
        self.vertices
            .extend([low_a, foot_a, top_a, low_b, foot_b, top_b]);
        self.triangles
            .extend([[base, base + 1, base + 2], [base + 3, base + 4, base + 5]]);
    }

    /// A cube of half size `half` on the floor at `at`, turned `yaw`.
    fn crate_at(&mut self, at: Vec3, yaw: f32, half: f32) {
        let turn = Quat::from_rotation_y(yaw);
        let c =
            |x: f32, y: f32, z: f32| at + turn * Vec3::new(x * half, (y + 1.0) * half, z * half);
        let faces = [
            [
                c(-1., -1., -1.),
                c(1., -1., -1.),
                c(1., 1., -1.),
                c(-1., 1., -1.),
            ],
            [
                c(-1., -1., 1.),
                c(1., -1., 1.),
                c(1., 1., 1.),
                c(-1., 1., 1.),
            ],
            [
                c(-1., -1., -1.),
                c(-1., -1., 1.),
                c(-1., 1., 1.),
                c(-1., 1., -1.),
            ],
            [
                c(1., -1., -1.),
                c(1., -1., 1.),
                c(1., 1., 1.),
                c(1., 1., -1.),
            ],
            [
                c(-1., 1., -1.),
                c(1., 1., -1.),
                c(1., 1., 1.),
                c(-1., 1., 1.),
            ],
            [
                c(-1., -1., -1.),
                c(1., -1., -1.),
                c(1., -1., 1.),
                c(-1., -1., 1.),
            ],
        ];
        for face in faces {
            self.quad(face);
        }
    }
}

/// A mover as a client draws it.
#[derive(Debug, Clone)]
struct DrawnProp {
    id: EntityId,
    rig: Arc<Rig>,
    buffer: SnapshotBuffer,
    scratch: Vec<BoneTransform>,
    view: Option<View>,
}

/// The scenery as one client knows and draws it (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct SceneryView {
    level: Level,
    breakable: Option<(PlacedShape, WallNews)>,
    props: Vec<DrawnProp>,
}

impl SceneryView {
    /// Takes `update` if it is one of the movers' (kept to be drawn) and gives it back
    /// otherwise: a snapshot of tick `tick` at server time `time`.
    pub fn take(&mut self, tick: Tick, time: f64, update: EntityUpdate) -> Option<EntityUpdate> {
        let Some(prop) = self.props.iter_mut().find(|p| p.id == update.id) else {
            return Some(update);
        };
        if update.bones.len() == 1 {
            prop.buffer.push(Snapshot {
                tick,
                time,
                bones: update.bones,
                velocity: update.velocity,
                teleport: false,
            });
        }
        None
    }

    /// What the server said of the breakable wall (news older than what is known is
    /// ignored: a fall or a rebuild, once known, stays known).
    pub fn learn(&mut self, news: WallNews) {
        if let Some((_, known)) = &mut self.breakable {
            known.fell = known.fell.or(news.fell);
            known.rebuilt = known.rebuilt.or(news.rebuilt);
        }
    }

    /// Draws the movers at server time `render`, extrapolating at most `max_extrapolation`
    /// seconds past their newest snapshot, as the players are drawn.
    pub fn draw(&mut self, render: f64, max_extrapolation: f64) {
        for prop in &mut self.props {
            prop.view = prop
                .buffer
                .sample(render, max_extrapolation, &mut prop.scratch);
        }
    }

    /// How far along the line from `origin` the level or the breakable wall (when it
    /// stands at `time`) first stops it, metres; infinity when nothing does.
    #[must_use]
    pub fn cover_distance(&self, origin: Vec3, direction: Vec3, time: f64) -> f32 {
        let level = self.level_distance(origin, direction, time);
        let wall = self
            .breakable
            .filter(|(_, news)| news.stands_at(time))
            .and_then(|(placed, _)| placed.cast_line(origin, direction))
            .and_then(|c| c.clip(REACH))
            .map_or(f32::INFINITY, |c| c.enter);
        level.min(wall)
    }

    /// How far along the line from `origin` the level first stops it, metres; infinity
    /// when nothing does. The breakable wall is left out: whether it stands is news that
    /// may not have arrived yet.
    #[must_use]
    pub fn level_distance(&self, origin: Vec3, direction: Vec3, time: f64) -> f32 {
        let Ok(ray) = Ray::new(origin, direction, REACH) else {
            return f32::INFINITY;
        };
        self.level
            .cast_ray(&ray, u32::MAX, time)
            .map_or(f32::INFINITY, |hit| hit.distance.max(0.0))
    }

    /// How far along the line from `origin` the first mover as drawn stops it, metres;
    /// infinity when none does.
    #[must_use]
    pub fn mover_distance(&self, origin: Vec3, direction: Vec3) -> f32 {
        self.props
            .iter()
            .filter(|p| p.view.is_some() && p.scratch.len() == 1)
            .flat_map(|p| {
                p.rig
                    .hitboxes()
                    .iter()
                    .map(|h| h.placed(&p.scratch[usize::from(h.bone)]))
            })
            .filter_map(|placed| placed.cast_line(origin, direction)?.clip(REACH))
            .map(|c| c.enter)
            .fold(f32::INFINITY, f32::min)
    }
}

/// Doors and the tram as the server moves them: their entities and poses this tick.
#[derive(Debug, Clone)]
pub(crate) struct Stage {
    pub(crate) movers: Vec<(EntityId, Mover)>,
    /// Each mover's bone this tick and the last.
    pub(crate) bones: Vec<[BoneTransform; 1]>,
    pub(crate) velocities: Vec<Vec3>,
    pub(crate) last_time: Option<f64>,
    /// The breakable wall, its current piece, and what has happened to it.
    pub(crate) breakable: Option<(Breakable, lagcomp::StaticId)>,
    pub(crate) news: WallNews,
}

impl Stage {
    /// Spawns the movers and loads the level and the wall into `history`: all of it, or
    /// (on an error) nothing.
    pub(crate) fn build(history: &mut History, scenery: &Scenery) -> Result<Self, SceneryError> {
        let rigs = rigs(&scenery.movers)?;
        // The level and the wall in one batch: refused whole, or loaded whole.
        let wall = scenery.breakable.map(|b| wall_piece(&b));
        let ids = history.load_level(scenery.level.iter().cloned().chain(wall))?;
        let breakable = scenery
            .breakable
            .map(|b| (b, lagcomp::StaticId(ids.end.0 - 1)));
        let movers: Vec<_> = rigs
            .into_iter()
            .zip(&scenery.movers)
            .map(|(rig, m)| (history.spawn_as(rig, m.role), m.clone()))
            .collect();
        Ok(Self {
            bones: vec![[BoneTransform::IDENTITY]; movers.len()],
            velocities: vec![Vec3::ZERO; movers.len()],
            movers,
            last_time: None,
            breakable,
            news: WallNews::default(),
        })
    }

    /// Moves the movers to server time `time` and brings the wall down or up when its
    /// time has come, in `history` (before the frame at `time` is recorded).
    pub(crate) fn advance(&mut self, history: &mut History, time: f64) {
        let dt = self.last_time.map(|last| (time - last) as f32);
        for ((_, mover), (bone, velocity)) in self
            .movers
            .iter()
            .zip(self.bones.iter_mut().zip(&mut self.velocities))
        {
            let pose = mover.pose(time);
            if let Some(dt) = dt.filter(|dt| *dt > 0.0) {
                *velocity = (pose.translation - bone[0].translation) / dt;
            }
            bone[0] = BoneTransform {
                translation: pose.translation,
                rotation: pose.rotation,
                scale: Vec3::ONE,
            };
        }
        self.last_time = Some(time);
        if let Some((wall, piece)) = &mut self.breakable {
            // The piece exists, is removed once, and its replacement is added after the
            // removal, at a finite frame time: the history refuses none of these.
            if self.news.fell.is_none() && time >= wall.falls {
                let _ = history.remove_static(*piece, time);
                self.news.fell = Some(time);
            } else if self.news.fell.is_some() && self.news.rebuilt.is_none() && time >= wall.rises
            {
                if let Ok(ids) = history.add_pieces_at([wall_piece(wall)], time) {
                    *piece = ids.start;
                }
                self.news.rebuilt = Some(time);
            }
        }
    }
}

/// The breakable wall as a level piece.
fn wall_piece(wall: &Breakable) -> LevelPiece {
    LevelPiece::Primitive {
        shape: Shape::cuboid(wall.half_extents),
        pose: wall.pose,
        layers: u32::MAX,
    }
}

#[cfg(test)]
mod tests {
    use lagcomp::{RewindTarget, StaticWorld, WindowPolicy};
    use rand::SeedableRng;

    use super::*;
    use crate::server::{CoreConfig, ServerCore};

    #[test]
    fn a_door_stays_shut_slides_open_and_shuts_again() {
        let door = Mover {
            name: "door",
            role: EntityRole::Blocker,
            half_extents: Vec3::new(0.8, 1.2, 0.08),
            motion: Motion::Slide {
                closed: Vec3::new(1.0, 1.2, 2.0),
                yaw: 0.0,
                travel: 1.7,
                period: 4.0,
                phase: 0.0,
            },
        };
        // (time, shut, how far along +X from where it is shut)
        for (time, shut, slid) in [
            (0.0, true, 0.0),
            (1.5, true, 0.0),
            (1.8, false, 0.85),
            (2.5, false, 1.7),
            (3.8, false, 0.85),
            (4.0, true, 0.0),
            (5.0, true, 0.0),
        ] {
            assert_eq!(door.shut(time), shut, "at {time} s");
            let at = door.pose(time).translation;
            assert!(
                (at - Vec3::new(1.0 + slid, 1.2, 2.0)).length() < 1e-4,
                "at {time} s: {at}"
            );
        }
    }

    #[test]
    fn the_wall_stands_until_it_falls_and_again_once_rebuilt() {
        let news = |fell, rebuilt| WallNews { fell, rebuilt };
        for (known, time, stands) in [
            (news(None, None), 100.0, true),
            (news(Some(5.0), None), 4.99, true),
            (news(Some(5.0), None), 5.0, false),
            (news(Some(5.0), None), 100.0, false),
            (news(Some(5.0), Some(8.0)), 7.99, false),
            (news(Some(5.0), Some(8.0)), 8.0, true),
            (news(Some(5.0), Some(8.0)), 3.0, true),
        ] {
            assert_eq!(known.stands_at(time), stands, "{known:?} at {time}");
        }
    }

    /// A client fed the server's snapshots sees the doors, the tram, the breakable wall
    /// and the level where the server's rewound traces meet them.
    #[test]
    fn a_client_sees_the_scenery_where_the_server_rewinds_it() {
        let config = CoreConfig {
            respawn_rate: 0.0,
            ..CoreConfig::default()
        };
        // No walls of the arena's own: the client traces those apart from the scenery.
        let arena = Arena::new(23.0, 0, &mut Pcg64Mcg::seed_from_u64(1));
        let mut core = ServerCore::new(config, arena.clone()).expect("valid");
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        core.join(&mut rng);
        let scenery = Scenery::around(&arena, 3, 1.0, 1.5);
        assert!(scenery.triangles() > 1000, "{}", scenery.triangles());
        let movers = core.furnish(&scenery).expect("a valid level");
        let mut view = scenery.view(&movers).expect("the same level");
        let dt = 1.0 / config.tick_rate;
        let (mut compared, mut walls_compared) = (0, 0);
        for tick in 0..128_u32 {
            let time = f64::from(tick) * dt;
            drop(core.tick(Tick(tick), time, dt, &mut rng).expect("in order"));
            view.learn(core.wall_news());
            for e in core.props().collect::<Vec<_>>() {
                let update = EntityUpdate {
                    id: e.id,
                    bones: e.bones,
                    velocity: e.velocity,
                    last_teleport: None,
                    protected: false,
                    in_view_since: None,
                };
                assert!(view.take(Tick(tick), time, update).is_none());
            }
            if tick < 2 {
                continue;
            }
            // Between the two ticks before the newest, as a client interpolates.
            let render = time - 1.6 * dt;
            view.draw(render, 0.25);
            let history = core.history();
            for mover in &scenery.movers {
                let centre = mover.pose(render).translation;
                let origin = centre + Vec3::new(6.0, 0.3, 4.0);
                let direction = (centre - origin).normalize();
                let ray = Ray::new(origin, direction, REACH).expect("a ray");
                let trace = history
                    .query(RewindTarget::Time(render))
                    .window_policy(WindowPolicy::Reject)
                    .ray(&ray)
                    .expect("inside the window");
                let client = view.mover_distance(origin, direction);
                if let Some(block) = trace.blocking_entity {
                    assert!(
                        (block.distance - client).abs() < 1e-3,
                        "tick {tick}: server {} m, client {client} m",
                        block.distance
                    );
                    compared += 1;
                }
            }
            let wall = scenery.breakable.expect("a breakable wall");
            let origin = wall.pose.translation + wall.pose.rotation * Vec3::new(0.3, 0.2, 5.0);
            let direction = (wall.pose.translation - origin).normalize();
            let ray = Ray::new(origin, direction, REACH).expect("a ray");
            let server = history
                .level()
                .cast_ray(&ray, u32::MAX, render)
                .map_or(f32::INFINITY, |h| h.distance);
            let client = view.cover_distance(origin, direction, render);
            assert!(
                (server - client).abs() < 1e-3 || server == client,
                "tick {tick}: server {server} m, client {client} m"
            );
            walls_compared += usize::from(server < 6.0);
        }
        assert!(compared > 200, "{compared} mover traces compared");
        // Standing before 1 s and after 1.5 s, down in between.
        assert!((60..110).contains(&walls_compared), "{walls_compared}");
    }
}

#[cfg(test)]
mod refused {
    use rand::SeedableRng;

    use super::*;
    use crate::server::{CoreConfig, ServerCore};

    #[test]
    fn a_bad_mover_or_level_piece_is_refused_and_nothing_is_added() {
        let arena = Arena::standard();
        let good = Scenery::around(&arena, 5, 3.0, 4.0);
        let mut bad_mover = good.clone();
        bad_mover.movers[1].half_extents = Vec3::new(f32::NAN, 1.0, 1.0);
        let mut bad_motion = good.clone();
        if let Motion::Slide { period, .. } = &mut bad_motion.movers[0].motion {
            *period = 0.0;
        }
        let mut bad_wall = good.clone();
        bad_wall.breakable.as_mut().expect("a wall").half_extents.y = -1.0;
        let mut bad_mesh = good.clone();
        if let LevelPiece::Mesh { vertices, .. } = &mut bad_mesh.level[0] {
            vertices[7] = Vec3::new(0.0, f32::INFINITY, 0.0);
        }
        let mesh_pieces = good.level.len();
        for (scenery, expected) in [
            (&bad_mover, "mover 1"),
            (&bad_motion, "mover 0"),
            (&bad_wall, &*format!("level piece {mesh_pieces}")),
            (&bad_mesh, "level piece 0: vertex 7"),
        ] {
            let mut core = ServerCore::new(CoreConfig::default(), arena.clone()).expect("valid");
            let walls = core.history().level().len();
            let error = core.furnish(scenery).expect_err("refused");
            assert!(error.to_string().starts_with(expected), "{error}");
            assert_eq!(core.history().level().len(), walls, "{error}: half loaded");
            assert_eq!(core.props().count(), 0);
            // Refused on the client's side as well, not half built.
            assert!(scenery.view(&[]).is_err());
            // The server still runs, without the scenery.
            let mut rng = Pcg64Mcg::seed_from_u64(1);
            core.join(&mut rng);
            drop(
                core.tick(Tick(0), 0.0, 1.0 / 64.0, &mut rng)
                    .expect("a tick"),
            );
        }
        let mut core = ServerCore::new(CoreConfig::default(), arena).expect("valid");
        assert_eq!(core.furnish(&good).expect("accepted").len(), 4);
    }
}
