//! Splash damage at one moment: every hitbox within a blast's radius, and whether the
//! blast could see it.

use glam::Vec3;

use super::observer::QueryObserver;
use super::trace::first_wall;
use super::{Overlap, Query, QueryError, Ray, Rewind, RoleMasks, check_radius};
use crate::history::{Bracket, EntityId};
use crate::math::{check_translation, ray_recip};
use crate::rig::{HitboxId, REACH_PAD};
use crate::spread::Falloff;
use crate::world::StaticId;

/// A blast: where, how far it reaches, how its damage falls off, and what stops it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Blast {
    /// The blast's centre, world space at the query's moment.
    pub center: Vec3,
    /// How far it reaches, metres (up to [`crate::math::MAX_EXTENT`]).
    pub radius: f32,
    /// Damage multiplier by distance from the centre to the hitbox.
    pub falloff: Falloff,
    /// Whether other entities' hitboxes shield what is behind them (walls always do).
    pub bodies_block: bool,
}

/// What stood between a blast and a hitbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Cover {
    /// Static geometry: the history's level or the server's world.
    Wall(StaticId),
    /// Another entity's hitbox (only when [`Blast::bodies_block`]).
    Body(EntityId),
    /// An entity that blocks ([`crate::EntityRole::Blocker`]: a door, a lift), as it stood
    /// then. Like walls, always.
    Blocker(EntityId),
}

/// One hitbox within a blast's radius.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplashHit {
    /// The hitbox, where it was, and its distance from the centre.
    pub overlap: Overlap,
    /// What hid it from the blast; `None` when the blast could see it.
    pub cover: Option<Cover>,
    /// The damage multiplier: the falloff at its distance, 0 when covered.
    pub multiplier: f32,
}

impl<O: QueryObserver> Query<'_, '_, O> {
    /// Every hitbox within `blast.radius` of its centre at the target time, nearest first,
    /// each with its line of sight from the centre (a ray to the hitbox's nearest point,
    /// stopped by walls, by the server's world when the query has one, and by other
    /// entities' hitboxes when `bodies_block`) and its damage multiplier, into `out`
    /// (cleared first). The line of sight stops where a closest-hit trace ([`Query::ray`])
    /// along it would: a door or other blocker entity in front hides the hitbox, then a
    /// wall, then another entity's hitbox when `bodies_block`; a line that meets the
    /// victim's own hitboxes first is not hidden by a body behind them. `scratch` holds
    /// every hitbox in the sphere that could hide another (victims, bodies and blockers);
    /// reuse both across blasts to allocate nothing. The query's layers, blocking layers
    /// and ignore list apply to victims and shields alike.
    ///
    /// For a blast at the present (a server-side grenade), query at the newest frame's
    /// time: the same code with no rewind.
    ///
    /// # Errors
    /// [`QueryError`] for a bad centre or radius, or a target that cannot be resolved.
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, Pose, RewindTarget, Rig, Shape, Tick, Vec3, Zone};
    /// use lagcomp::query::splash::{Blast, Cover};
    /// use lagcomp::spread::Falloff;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Two crates of 1 m standing 3 m either side of a grenade; a wall hides the one at +x.
    /// let rig = Arc::new(Rig::rigid(vec![Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::splat(0.5)))])?);
    /// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// let (left, right) = (history.spawn(Arc::clone(&rig)), history.spawn(rig));
    /// history.add_static(Shape::cuboid(Vec3::new(0.1, 2.0, 2.0)), Pose::from_translation(Vec3::new(1.5, 1.0, 0.0)), u32::MAX)?;
    /// for tick in 0..=16_u32 {
    ///     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
    ///     frame.record_rigid(left, BoneTransform::from_translation(Vec3::new(-3.0, 1.0, 0.0)), EntityState::default())?;
    ///     frame.record_rigid(right, BoneTransform::from_translation(Vec3::new(3.0, 1.0, 0.0)), EntityState::default())?;
    /// }
    /// let blast = Blast { center: Vec3::Y, radius: 5.0, falloff: Falloff::new(1.0, 5.0, 0.0)?, bodies_block: true };
    /// let (mut scratch, mut caught) = (Vec::new(), Vec::new());
    /// history.query(RewindTarget::at(0.125)).splash(&blast, &mut scratch, &mut caught)?;
    /// assert_eq!(caught.len(), 2);
    /// let seen = caught.iter().find(|s| s.overlap.entity == left).unwrap();
    /// assert!(seen.cover.is_none() && (seen.multiplier - 0.625).abs() < 1e-5); // 2.5 m away
    /// let hidden = caught.iter().find(|s| s.overlap.entity == right).unwrap();
    /// assert!(matches!(hidden.cover, Some(Cover::Wall(_))) && hidden.multiplier == 0.0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn splash(
        &mut self,
        blast: &Blast,
        scratch: &mut Vec<Overlap>,
        out: &mut Vec<SplashHit>,
    ) -> Result<Rewind, QueryError> {
        // PERF: one walk of the entity tree for the whole blast, not one trace per hitbox.
        // A line of sight ends inside the blast's sphere, so only what the sphere holds can
        // stand in its way: the walk gathers every hitbox in it that a trace would stop at
        // (victims, bodies, doors) with its rewound pose, and each line is tested against
        // those alone, one entity's ball first. On the 200 x 20 scene (10 m blasts, 76
        // hitboxes in range) a blast went from 423.7k instructions (a closest-hit trace
        // per hitbox through the whole tree, 65 % of it in the tree walks) to 105k, under
        // callgrind on `cargo bench -p lagcomp-bench --bench pellets -- --profile-time 2
        // splash`; about half of what is left is the walk's own placing of ~95 hitboxes.
        out.clear();
        check_translation(blast.center).map_err(|_| QueryError::Volume)?;
        check_radius(blast.radius)?;
        let bracket = self.bracket()?;
        let masks = self.role_masks();
        // A shield is crossed at least a centimetre inside the radius (each line stops that
        // short of its hitbox), but rounding in a far corner of the world can be coarser:
        // gather the shields a few ulps of the coordinates beyond it.
        let slack = (blast.center.abs().max_element() + blast.radius) * 8.0 * f32::EPSILON;
        self.sphere_overlaps_at(
            &bracket,
            blast.center,
            blast.radius + slack,
            &masks,
            scratch,
        );
        let shields = Shields::gather(scratch, blast.center, blast.radius);
        let radius_squared = blast.radius * blast.radius;
        let is_victim = |overlap: &Overlap| {
            // The same test `overlap_sphere` makes, on the same nearest point.
            let role = self.history.slot_role(overlap.entity.index() as usize);
            masks.hits(role, overlap.state.layers)
                && overlap.closest_point.distance_squared(blast.center) <= radius_squared
        };
        // PERF: the victims are put in order by a 128-bit key on the stack, and each
        // one's hit is made in that order: sorting the hits themselves (about 170 bytes
        // each, compared field by field) was about 28k of the 178k instructions a 10 m
        // blast took on the 200 x 20 scene.
        let mut order = [0_u128; MAX_ORDERED];
        let mut victims = 0;
        let keyed = scratch.len() <= usize::from(u16::MAX);
        for (at, overlap) in scratch.iter().enumerate() {
            if !keyed || victims > MAX_ORDERED {
                break;
            }
            if is_victim(overlap) {
                if let Some(slot) = order.get_mut(victims) {
                    *slot = order_key(overlap) | at as u128;
                }
                victims += 1;
            }
        }
        if keyed && victims <= MAX_ORDERED {
            let order = &mut order[..victims];
            order.sort_unstable();
            for key in order.iter() {
                let overlap = &scratch[(*key & 0xffff) as usize];
                let cover = self.cover(blast, overlap, scratch, &shields, &masks, &bracket)?;
                out.push(splash_hit(blast, overlap, cover));
            }
        } else {
            // Rare: more victims than the keys have room for; their hits are sorted.
            for overlap in scratch.iter().filter(|o| is_victim(o)) {
                let cover = self.cover(blast, overlap, scratch, &shields, &masks, &bracket)?;
                out.push(splash_hit(blast, overlap, cover));
            }
            out.sort_unstable_by_key(|hit| order_key(&hit.overlap));
        }
        Ok((&bracket).into())
    }

    /// What hides `victim` from the blast's centre, if anything: what a closest-hit trace
    /// ([`Query::ray`]) along its line of sight would stop at, found among the hitboxes
    /// in the blast's sphere (`scratch`, grouped by `shields`).
    fn cover(
        &mut self,
        blast: &Blast,
        victim: &Overlap,
        scratch: &[Overlap],
        shields: &Shields,
        masks: &RoleMasks,
        bracket: &Bracket,
    ) -> Result<Option<Cover>, QueryError> {
        // A ray to the hitbox's nearest point, stopped a centimetre short so the hitbox's
        // own surface (or a wall it leans on) does not count as cover.
        const SHORT: f32 = 0.01;
        let to = victim.closest_point - blast.center;
        let reach = victim.distance - SHORT;
        if reach <= 0.0 {
            return Ok(None);
        }
        let ray = Ray::new(blast.center, to, reach)?;
        let history = self.history;
        let wall = if history.level().is_empty() && self.world.is_none() {
            None
        } else {
            first_wall(
                history,
                self.world,
                &ray,
                ray_recip(ray.dir()),
                0.0,
                self.blocking,
                bracket.time,
            )
        };
        if let Some(wall) = wall.as_ref().filter(|_| O::ENABLED) {
            self.observer.blocked(wall);
        }
        let line = Line {
            origin: ray.origin(),
            dir: ray.dir(),
        };
        // The nearest touch of another entity first; the victim's own hitboxes matter only
        // when one is in front of it (the trace would end at them, and they are no cover).
        let reach = wall.map_or(reach, |w| w.distance);
        let others = line.nearest(scratch, shields, reach, None, |e| e != victim.entity);
        let nearest = match others {
            Some(other) => line
                .nearest(scratch, shields, other.distance, Some(other), |e| {
                    e == victim.entity
                })
                .unwrap_or(other),
            None => return Ok(wall.map(|w| Cover::Wall(w.id))),
        };
        if nearest.entity == victim.entity {
            return Ok(wall.map(|w| Cover::Wall(w.id)));
        }
        let role = history.slot_role(nearest.entity.index() as usize);
        let layers = scratch[nearest.at].state.layers;
        Ok(if !masks.hits(role, layers) {
            Some(Cover::Blocker(nearest.entity))
        } else if let Some(wall) = wall {
            Some(Cover::Wall(wall.id))
        } else {
            blast.bodies_block.then_some(Cover::Body(nearest.entity))
        })
    }
}

/// The hit of `victim`: its cover, and the falloff at its distance unless covered.
fn splash_hit(blast: &Blast, victim: &Overlap, cover: Option<Cover>) -> SplashHit {
    SplashHit {
        overlap: *victim,
        cover,
        multiplier: if cover.is_some() {
            0.0
        } else {
            blast.falloff.multiplier(victim.distance)
        },
    }
}

/// The most victims of one blast put in order by their [`order_key`]s on the stack; the
/// hits of any more are sorted themselves.
const MAX_ORDERED: usize = 256;

/// Where a victim's hit goes among a blast's, as [`Query::overlap_sphere`] orders its
/// overlaps: nearest first, then by entity, then by hitbox; the low 16 bits are left for
/// the overlap's index. A distance is never negative nor NaN, so its bits order as it does.
fn order_key(overlap: &Overlap) -> u128 {
    let entity = (u64::from(overlap.entity.index()) << 32) | u64::from(overlap.entity.generation());
    (u128::from(overlap.distance.to_bits()) << 96)
        | (u128::from(entity) << 32)
        | (u128::from(overlap.hitbox.0) << 16)
}

/// The most entities in one blast whose hitboxes are culled together; the hitboxes of any
/// beyond are culled one by one. PERF: a fixed array, so a blast allocates nothing.
const MAX_SHIELDS: usize = 64;

/// One entity's run of hitboxes in a blast's overlaps and the ball that holds them.
#[derive(Clone, Copy)]
struct Shield {
    entity: EntityId,
    start: u32,
    end: u32,
    center: Vec3,
    radius: f32,
    /// The nearest of its hitboxes to the blast's centre, metres.
    distance: f32,
}

/// The entities in a blast's sphere, each with the ball around its hitboxes there, in the
/// order of its overlaps.
struct Shields {
    runs: [Shield; MAX_SHIELDS],
    len: usize,
    /// Where the hitboxes with no run of their own start (the overlaps' end when none).
    rest: usize,
    /// The first few hitboxes that hold the blast's centre, by index in the overlaps.
    inside: [u32; MAX_INSIDE],
    inside_len: usize,
    /// How far a line's entry into a hitbox may fall short of the hitbox's distance from
    /// the centre by rounding: a generous bound, many ulps of the blast's coordinates.
    rounding: f32,
}

/// How many hitboxes holding a blast's centre are tried first (see [`Line::nearest`]).
const MAX_INSIDE: usize = 8;

impl Shields {
    /// The runs of `overlaps` (each entity's hitboxes are next to each other there).
    fn gather(overlaps: &[Overlap], center: Vec3, radius: f32) -> Self {
        let empty = Shield {
            entity: EntityId::from_bits(0),
            start: 0,
            end: 0,
            center: Vec3::ZERO,
            radius: 0.0,
            distance: 0.0,
        };
        let mut shields = Self {
            runs: [empty; MAX_SHIELDS],
            len: 0,
            rest: overlaps.len(),
            inside: [0; MAX_INSIDE],
            inside_len: 0,
            rounding: (center.abs().max_element() + radius) * 64.0 * f32::EPSILON,
        };
        for (at, o) in overlaps.iter().enumerate() {
            if o.distance == 0.0 && shields.inside_len < MAX_INSIDE {
                shields.inside[shields.inside_len] = at as u32;
                shields.inside_len += 1;
            }
        }
        let mut start = 0;
        while start < overlaps.len() {
            if shields.len == MAX_SHIELDS {
                shields.rest = start;
                break;
            }
            let entity = overlaps[start].entity;
            let end = start
                + overlaps[start..]
                    .iter()
                    .position(|o| o.entity != entity)
                    .unwrap_or(overlaps.len() - start);
            let run = &overlaps[start..end];
            let (mut lo, mut hi) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
            for o in run {
                let r = ball(o);
                lo = lo.min(o.placement.pose.translation - r);
                hi = hi.max(o.placement.pose.translation + r);
            }
            let center = (lo + hi) * 0.5;
            let radius = run.iter().fold(0.0_f32, |most, o| {
                most.max(o.placement.pose.translation.distance(center) + ball(o))
            });
            // Padded so that rounding here never culls a hitbox whose own ball passes.
            let pad = center.abs().max_element() * 8.0 * f32::EPSILON;
            shields.runs[shields.len] = Shield {
                entity,
                start: start as u32,
                end: end as u32,
                center,
                radius: radius * REACH_PAD + pad,
                distance: run.iter().fold(f32::INFINITY, |d, o| d.min(o.distance)),
            };
            shields.len += 1;
            start = end;
        }
        shields
    }
}

/// The radius around a placed hitbox's centre that holds it, padded as a rig pads its
/// hitboxes' balls.
#[inline]
fn ball(overlap: &Overlap) -> f32 {
    overlap.placement.shape.bounding_radius() * REACH_PAD
}

/// A line of sight from a blast.
struct Line {
    origin: Vec3,
    /// Unit.
    dir: Vec3,
}

/// The hitbox a line of sight touches first: as a trace orders its touches, by distance,
/// then entity, then hitbox.
#[derive(Clone, Copy)]
struct Touch {
    distance: f32,
    entity: EntityId,
    hitbox: HitboxId,
    /// Its index in the overlaps.
    at: usize,
}

impl Touch {
    fn before(&self, other: &Self) -> bool {
        (self.distance, self.entity, self.hitbox) < (other.distance, other.entity, other.hitbox)
    }
}

impl Line {
    /// The first touch, before `best`, of a hitbox in `overlaps` whose entity `pick`
    /// chooses, entered within `reach`; `best` when there is none.
    fn nearest(
        &self,
        overlaps: &[Overlap],
        shields: &Shields,
        mut reach: f32,
        mut best: Option<Touch>,
        pick: impl Fn(EntityId) -> bool,
    ) -> Option<Touch> {
        // PERF: the hitboxes that hold the blast's centre first (a rocket that went off
        // inside a body): each line touches them at 0, and after a touch at 0 only a lower
        // entity or hitbox can come first, so most hitboxes are passed over without a test.
        for &at in &shields.inside[..shields.inside_len] {
            let at = at as usize;
            self.scan(
                overlaps,
                at..at + 1,
                shields.rounding,
                &mut reach,
                &mut best,
                &pick,
            );
        }
        for shield in &shields.runs[..shields.len] {
            let beaten = best.is_some_and(|b| b.distance == 0.0 && shield.entity > b.entity);
            if pick(shield.entity)
                && !beaten
                && shield.distance <= reach + shields.rounding
                && self.passes_near(shield.center, shield.radius, reach)
            {
                let run = shield.start as usize..shield.end as usize;
                self.scan(
                    overlaps,
                    run,
                    shields.rounding,
                    &mut reach,
                    &mut best,
                    &pick,
                );
            }
        }
        self.scan(
            overlaps,
            shields.rest..overlaps.len(),
            shields.rounding,
            &mut reach,
            &mut best,
            &pick,
        );
        best
    }

    /// [`Line::nearest`] over `overlaps[range]`, shrinking `reach` to the best touch.
    #[inline]
    fn scan(
        &self,
        overlaps: &[Overlap],
        range: std::ops::Range<usize>,
        rounding: f32,
        reach: &mut f32,
        best: &mut Option<Touch>,
        pick: &impl Fn(EntityId) -> bool,
    ) {
        let start = range.start;
        for (at, o) in overlaps[range].iter().enumerate() {
            let beaten = best
                .is_some_and(|b| b.distance == 0.0 && (o.entity, o.hitbox) >= (b.entity, b.hitbox));
            // A line enters a hitbox no nearer than the hitbox is to its origin.
            if beaten
                || o.distance > *reach + rounding
                || !pick(o.entity)
                || !self.passes_near(o.placement.pose.translation, ball(o), *reach)
            {
                continue;
            }
            let Some(crossing) = o
                .placement
                .cast_sphere_line_inline(self.origin, self.dir, 0.0)
                .and_then(|c| c.clip(*reach))
            else {
                continue;
            };
            let touch = Touch {
                distance: crossing.enter.max(0.0),
                entity: o.entity,
                hitbox: o.hitbox,
                at: start + at,
            };
            if best.is_none_or(|b| touch.before(&b)) {
                *best = Some(touch);
                *reach = touch.distance;
            }
        }
    }

    /// Whether the line passes within `radius` of `center` somewhere in `[0, reach]`: the
    /// cull a trace makes before its exact test, the same numbers.
    #[inline]
    fn passes_near(&self, center: Vec3, radius: f32, reach: f32) -> bool {
        let to_center = center - self.origin;
        let along = to_center.dot(self.dir);
        !((along < -radius)
            | (along - radius > reach)
            | ((to_center - self.dir * along).length_squared() > radius * radius))
    }
}
