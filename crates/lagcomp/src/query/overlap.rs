//! Volume overlaps at a rewound time: spheres (explosions) and oriented boxes (melee).

use glam::Vec3;

use super::observer::QueryObserver;
use super::{Overlap, Query, QueryError, Rewind, RoleMasks, Walk, admit, check_radius};
use crate::history::{Bracket, Sample};
use crate::math::{Aabb, BoneTransform, check_rotation, check_translation};
use crate::narrow::{Obb, PlacedShape};

/// The query volume.
#[derive(Clone, Copy)]
enum Volume {
    Sphere { center: Vec3, radius: f32 },
    Box(Obb),
}

impl Volume {
    fn aabb(&self) -> Aabb {
        match self {
            Self::Sphere { center, radius } => Aabb::around_sphere(*center, *radius),
            Self::Box(obb) => obb.aabb(),
        }
    }

    fn center(&self) -> Vec3 {
        match self {
            Self::Sphere { center, .. } => *center,
            Self::Box(obb) => obb.center,
        }
    }

    /// The point of `placed` nearest the volume's centre, when the two overlap.
    ///
    /// PERF: a sphere's overlap test is that point's distance, so it is found once, not
    /// once to test and again for the result (a box's nearest point is about a hundred
    /// instructions; 10 m blasts on the 200 x 20 scene test about 100 hitboxes each).
    #[inline]
    fn nearest_if_overlaps(&self, placed: &PlacedShape) -> Option<Vec3> {
        match self {
            // `PlacedShape::overlaps_sphere`'s test, on the same point.
            Self::Sphere { center, radius } => {
                let nearest = placed.closest_point(*center);
                (nearest.distance_squared(*center) <= radius * radius).then_some(nearest)
            }
            Self::Box(obb) => placed
                .overlaps_obb(obb)
                .then(|| placed.closest_point(obb.center)),
        }
    }
}

impl<O: QueryObserver> Query<'_, '_, O> {
    /// Every hitbox overlapping the sphere at the target time, one per (entity, hitbox),
    /// nearest to the centre first, into `out` (cleared first).
    ///
    /// # Errors
    /// [`QueryError`] for a bad centre or radius, or a target that cannot be resolved.
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{Axis, BoneTransform, EntityState, History, HistoryConfig, Hitbox, HitboxId, Obb, Quat, Ray, RewindTarget, Rig, Shape, Tick, Vec3, WindowPolicy, Zone};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let humanoid = Arc::new(Rig::new(4, vec![
    /// #     Hitbox::new(0, "pelvis", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.18, 0.12, 0.12))),
    /// #     Hitbox::new(1, "chest", Zone::Torso, 1, Shape::capsule(0.2, 0.15, Axis::Y)),
    /// #     Hitbox::new(2, "head", Zone::Head, 2, Shape::sphere(0.12)),
    /// # ])?);
    /// # // Pelvis, chest, head and eye bones of a player standing at `feet`, in metres.
    /// # let pose = |feet: Vec3| [0.95, 1.35, 1.7, 1.68].map(|y| BoneTransform::from_translation(feet + Vec3::Y * y));
    /// # let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// # let target = history.spawn(humanoid);
    /// # for tick in 1..=32_u32 {
    /// #     let time = f64::from(tick) / 64.0;
    /// #     let mut frame = history.begin_frame(Tick(tick), time)?;
    /// #     frame.record(target, &pose(Vec3::X * 4.0 * time as f32), EntityState::default())?;
    /// # }
    /// // A grenade that went off at tick 16, 20 cm up and 50 cm behind the target's feet, with
    /// // a 1 m blast radius: it reaches the pelvis and the chest, not the head.
    /// let mut caught = Vec::new();
    /// let blast = Vec3::new(1.0, 0.2, 0.5);
    /// history.query(RewindTarget::at(0.25)).overlap_sphere(blast, 1.0, &mut caught)?;
    /// let ids: Vec<_> = caught.iter().map(|o| o.hitbox).collect();
    /// assert_eq!(ids, [HitboxId(0), HitboxId(1)]); // nearest first
    /// assert!(caught[0].distance < caught[1].distance); // metres from the blast's centre
    /// # Ok(())
    /// # }
    /// ```
    pub fn overlap_sphere(
        &mut self,
        center: Vec3,
        radius: f32,
        out: &mut Vec<Overlap>,
    ) -> Result<Rewind, QueryError> {
        check_translation(center).map_err(|_| QueryError::Volume)?;
        check_radius(radius)?;
        self.overlap(Volume::Sphere { center, radius }, out)
    }

    /// Every hitbox overlapping the oriented box at the target time, nearest to its centre
    /// first, into `out` (cleared first).
    ///
    /// # Errors
    /// [`QueryError`] for a malformed box or a target that cannot be resolved.
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{Axis, BoneTransform, EntityState, History, HistoryConfig, Hitbox, HitboxId, Obb, Quat, Ray, RewindTarget, Rig, Shape, Tick, Vec3, WindowPolicy, Zone};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let humanoid = Arc::new(Rig::new(4, vec![
    /// #     Hitbox::new(0, "pelvis", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.18, 0.12, 0.12))),
    /// #     Hitbox::new(1, "chest", Zone::Torso, 1, Shape::capsule(0.2, 0.15, Axis::Y)),
    /// #     Hitbox::new(2, "head", Zone::Head, 2, Shape::sphere(0.12)),
    /// # ])?);
    /// # // Pelvis, chest, head and eye bones of a player standing at `feet`, in metres.
    /// # let pose = |feet: Vec3| [0.95, 1.35, 1.7, 1.68].map(|y| BoneTransform::from_translation(feet + Vec3::Y * y));
    /// # let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// # let target = history.spawn(humanoid);
    /// # for tick in 1..=32_u32 {
    /// #     let time = f64::from(tick) / 64.0;
    /// #     let mut frame = history.begin_frame(Tick(tick), time)?;
    /// #     frame.record(target, &pose(Vec3::X * 4.0 * time as f32), EntityState::default())?;
    /// # }
    /// // A melee swing at tick 16: a 1 m box, 40 cm tall, at chest height in front of the target.
    /// let swing = Obb::new(Vec3::new(1.0, 1.35, -0.5), Quat::IDENTITY, Vec3::new(0.5, 0.2, 0.5));
    /// let mut struck = Vec::new();
    /// history.query(RewindTarget::at(0.25)).overlap_box(&swing, &mut struck)?;
    /// assert_eq!(struck.len(), 1);
    /// assert_eq!((struck[0].hitbox, struck[0].zone), (HitboxId(1), Zone::Torso));
    /// # Ok(())
    /// # }
    /// ```
    pub fn overlap_box(&mut self, obb: &Obb, out: &mut Vec<Overlap>) -> Result<Rewind, QueryError> {
        check_translation(obb.center).map_err(|_| QueryError::Volume)?;
        check_rotation(obb.rotation).map_err(|_| QueryError::Volume)?;
        let h = obb.half_extents;
        if !(h.is_finite() && h.min_element() >= 0.0 && h.max_element() <= crate::math::MAX_EXTENT)
        {
            return Err(QueryError::Volume);
        }
        self.overlap(Volume::Box(*obb), out)
    }

    fn overlap(&mut self, volume: Volume, out: &mut Vec<Overlap>) -> Result<Rewind, QueryError> {
        let bracket = self.bracket()?;
        // Blockers are never a volume's targets.
        let masks = RoleMasks([0, self.layers, 0, self.layers]);
        self.overlap_at(&bracket, volume, &masks, out);
        out.sort_unstable_by(|a, b| {
            a.distance
                .total_cmp(&b.distance)
                .then(a.entity.cmp(&b.entity))
                .then(a.hitbox.cmp(&b.hitbox))
        });
        Ok((&bracket).into())
    }

    /// Every hitbox overlapping the sphere at `bracket`, of the entities `masks` admit, into
    /// `out` (cleared first) in walk order: each entity's hitboxes next to each other, in
    /// its rig's order. The caller has checked the centre and the radius.
    pub(super) fn sphere_overlaps_at(
        &mut self,
        bracket: &Bracket,
        center: Vec3,
        radius: f32,
        masks: &RoleMasks,
        out: &mut Vec<Overlap>,
    ) {
        self.overlap_at(bracket, Volume::Sphere { center, radius }, masks, out);
    }

    /// The walk of [`Query::overlap_sphere`] and [`Query::overlap_box`], unsorted.
    fn overlap_at(
        &mut self,
        bracket: &Bracket,
        volume: Volume,
        masks: &RoleMasks,
        out: &mut Vec<Overlap>,
    ) {
        out.clear();
        let bracket = *bracket;
        let history = self.history;
        let tree = match history.entity_tree(&bracket) {
            Some(tree) => tree,
            // Rare: no one tree holds the bracket's frames (across the last rebuild).
            None if !O::ENABLED => {
                return self.every_entity().overlap_at(&bracket, volume, masks, out);
            }
            None => history.current_entity_tree(),
        };
        let query_box = volume.aabb();
        let observer = &mut self.observer;
        let ignore = self.ignore;
        let mut visit = |index: usize, walk: Walk| {
            let Some((rig, id, sample)) = admit(
                history,
                index,
                &bracket,
                walk,
                masks,
                ignore,
                &mut *observer,
                |bounds, _| bounds.intersects(&query_box),
            ) else {
                return;
            };
            let public_sample = Sample {
                time: bracket.time,
                kind: sample.kind,
            };
            if O::ENABLED {
                observer.sample(id, &public_sample);
            }
            let present = O::ENABLED.then(|| history.sample_present(index)).flatten();
            let view = history.view(index, &sample);
            let mut cached_bone = usize::MAX;
            let mut bone = BoneTransform::IDENTITY;
            for (i, hitbox) in rig.hitboxes().iter().enumerate() {
                let bone_index = usize::from(hitbox.bone);
                let (origin, max_scale) = view.bone_origin(bone_index);
                let reach = rig.hitbox_reach(i) * max_scale;
                if !Aabb::around_sphere(origin, reach).intersects(&query_box) {
                    continue;
                }
                if bone_index != cached_bone {
                    bone = view.bone(bone_index);
                    cached_bone = bone_index;
                }
                let placed = hitbox.placed(&bone);
                if O::ENABLED {
                    let now = present.map(|p| hitbox.placed(&history.bone(index, &p, bone_index)));
                    observer.hitbox(id, hitbox, &placed, now.as_ref());
                }
                let Some(closest_point) = volume.nearest_if_overlaps(&placed) else {
                    continue;
                };
                let overlap = Overlap {
                    entity: id,
                    hitbox: hitbox.id,
                    hitbox_index: i as u16,
                    zone: hitbox.zone,
                    closest_point,
                    distance: closest_point.distance(volume.center()),
                    sample: public_sample,
                    placement: placed,
                    bone_scale: bone.scale,
                    state: sample.state,
                };
                if O::ENABLED {
                    observer.overlap(&overlap);
                }
                out.push(overlap);
            }
        };
        if O::ENABLED {
            for index in 0..history.slot_count() {
                visit(index, Walk::Everyone);
            }
        } else {
            tree.overlap(bracket.spans, &query_box, |index| {
                visit(index as usize, Walk::Tree)
            });
            for index in history.uncompensated() {
                visit(index, Walk::Uncompensated);
            }
        }
    }
}
