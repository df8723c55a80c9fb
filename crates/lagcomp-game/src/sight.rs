//! What a bot's client sees along a line: the nearest drawn hitbox a shot meets, and the
//! walls, level pieces, breakable wall and movers (doors, the tram) in its way, as this
//! client knows them at the moment drawn.

use glam::Vec3;
use lagcomp::{HitboxId, PlacedShape, Rig};

use super::{BotBrain, Stops};
use crate::body::{Arena, BONES};

impl BotBrain {
    /// The nearest hitbox of any drawn entity (or only of `only`) along the shot, unless
    /// something in `stops` comes first.
    #[expect(clippy::too_many_arguments, reason = "the cheats bend each of these")]
    pub(super) fn client_trace(
        &self,
        me: usize,
        origin: Vec3,
        direction: Vec3,
        arena: &Arena,
        rig: &Rig,
        stops: Stops,
        only: Option<usize>,
    ) -> Option<(usize, HitboxId, Vec3)> {
        let mut best: Option<(f32, usize, HitboxId)> = None;
        for (i, remote) in self.remotes.iter().enumerate() {
            let bones = &remote.scratch;
            if i == me || remote.view.is_none() || bones.len() != BONES {
                continue;
            }
            if only.is_some_and(|o| o != i) {
                continue;
            }
            for hitbox in rig.hitboxes() {
                let placed = hitbox.placed(&bones[usize::from(hitbox.bone)]);
                if let Some(c) = placed
                    .cast_line(origin, direction)
                    .and_then(|c| c.clip(200.0))
                    && best.is_none_or(|b| c.enter < b.0)
                {
                    best = Some((c.enter, i, hitbox.id));
                }
            }
        }
        let (distance, i, hitbox) = best?;
        let wall = match stops {
            Stops::All => self
                .cover_distance(arena, origin, direction)
                .min(self.mover_distance(origin, direction)),
            Stops::CoverOnly => self.cover_distance(arena, origin, direction),
            Stops::Nothing => f32::INFINITY,
        };
        (distance < wall).then(|| (i, hitbox, origin + direction * distance))
    }

    /// How far along the line the first wall, piece of the level or standing breakable
    /// wall is (as this client knows them at the moment drawn; infinity when none).
    pub(super) fn cover_distance(&self, arena: &Arena, origin: Vec3, direction: Vec3) -> f32 {
        self.cover_distance_at(arena, origin, direction, self.drawn_at)
    }

    /// [`BotBrain::cover_distance`] with the breakable wall as this client knows it at
    /// server time `time` (a rocket's step is traced at its own moment).
    pub(super) fn cover_distance_at(
        &self,
        arena: &Arena,
        origin: Vec3,
        direction: Vec3,
        time: f64,
    ) -> f32 {
        let scenery = self
            .scenery
            .as_ref()
            .map_or(f32::INFINITY, |s| s.cover_distance(origin, direction, time));
        wall_distance(arena, origin, direction).min(scenery)
    }

    /// How far along the line the first wall or piece of the level is, leaving out the
    /// breakable wall (whose fall or rebuilding this client may not have heard of yet).
    pub(super) fn fixed_cover_distance(&self, arena: &Arena, origin: Vec3, direction: Vec3) -> f32 {
        let level = self.scenery.as_ref().map_or(f32::INFINITY, |s| {
            s.level_distance(origin, direction, self.drawn_at)
        });
        wall_distance(arena, origin, direction).min(level)
    }

    /// How far along the line the first door or tram as drawn is (infinity when none).
    pub(super) fn mover_distance(&self, origin: Vec3, direction: Vec3) -> f32 {
        self.scenery
            .as_ref()
            .map_or(f32::INFINITY, |s| s.mover_distance(origin, direction))
    }

    /// Whether a wall or the level stands between `eye` and `point`.
    pub(super) fn behind_cover(&self, eye: Vec3, point: Vec3, arena: &Arena) -> bool {
        let to = point - eye;
        self.cover_distance(arena, eye, to.normalize_or_zero()) < to.length()
    }

    /// Whether a wall or piece of the level other than the breakable wall stands between
    /// `eye` and `point`: cover this client knows the server has too, whatever news of the
    /// breakable wall's fall or rebuilding it has not heard yet.
    pub(super) fn behind_fixed_cover(&self, eye: Vec3, point: Vec3, arena: &Arena) -> bool {
        let to = point - eye;
        self.fixed_cover_distance(arena, eye, to.normalize_or_zero()) < to.length()
    }

    /// Whether a door or the tram as drawn, and nothing else, stands between `eye` and
    /// `point`.
    pub(super) fn behind_door(&self, eye: Vec3, point: Vec3, arena: &Arena) -> bool {
        let to = point - eye;
        let direction = to.normalize_or_zero();
        self.mover_distance(eye, direction) < to.length() && !self.behind_cover(eye, point, arena)
    }
}

/// How far along the line the first wall is (infinity when none).
fn wall_distance(arena: &Arena, origin: Vec3, direction: Vec3) -> f32 {
    arena
        .walls
        .iter()
        .filter_map(|(shape, pose)| {
            PlacedShape::new(*pose, *shape)
                .cast_line(origin, direction)
                .and_then(|c| c.clip(200.0))
                .map(|c| c.enter)
        })
        .fold(f32::INFINITY, f32::min)
}
