//! Volume overlaps at a rewound time: spheres (explosions) and oriented boxes (melee).

use glam::Vec3;

use super::observer::QueryObserver;
use super::{Overlap, Query, QueryError, Rewind, Walk, admit, check_radius};
use crate::history::Sample;
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

    fn overlaps(&self, placed: &PlacedShape) -> bool {
        match self {
            Self::Sphere { center, radius } => placed.overlaps_sphere(*center, *radius),
            Self::Box(obb) => placed.overlaps_obb(obb),
        }
    }
}

impl<O: QueryObserver> Query<'_, '_, O> {
    /// Every hitbox overlapping the sphere at the target time, one per (entity, hitbox),
    /// nearest to the centre first, into `out` (cleared first).
    ///
    /// # Errors
    /// [`QueryError`] for a bad centre or radius, or a target that cannot be resolved.
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
        out.clear();
        let bracket = self.bracket()?;
        let history = self.history;
        let tree = match history.entity_tree(&bracket) {
            Some(tree) => tree,
            // Rare: no one tree holds the bracket's frames (across the last rebuild).
            None if !O::ENABLED => return self.every_entity().overlap(volume, out),
            None => history.current_entity_tree(),
        };
        let query_box = volume.aabb();
        let observer = &mut self.observer;
        let (layers, ignore) = (self.layers, self.ignore);
        let mut visit = |index: usize, walk: Walk| {
            let Some((rig, id, sample)) = admit(
                history,
                index,
                &bracket,
                walk,
                layers,
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
                if !volume.overlaps(&placed) {
                    continue;
                }
                let closest_point = placed.closest_point(volume.center());
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
        out.sort_unstable_by(|a, b| {
            a.distance
                .total_cmp(&b.distance)
                .then(a.entity.cmp(&b.entity))
                .then(a.hitbox.cmp(&b.hitbox))
        });
        Ok((&bracket).into())
    }
}
