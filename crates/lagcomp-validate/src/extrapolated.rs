//! Judging a claim against the picture its client extrapolated
//! ([`RenderTime::Extrapolated`](crate::RenderTime::Extrapolated)): the claimed target is
//! rebuilt with [`lagcomp::History::entity_extrapolated`], and an entity the trace found in
//! front of it is looked at where the client drew it too. Walls and static geometry do not
//! move, so the trace (at the frame the picture was extrapolated from) answers for them.

use lagcomp::{EntityAt, EntityId, History, HitboxId, Ray, Rig, Tick};

/// The snapshot tick a claim's client extrapolated from and by how long, seconds; `None`
/// for a claim judged at a rewound moment.
pub(crate) type Extrapolation = Option<(Tick, f64)>;

/// Where the shot's line first enters a hitbox of `then` (the one named, or any), within
/// its range: the point a claim without one is judged at.
pub(crate) fn line_point_on(
    then: &EntityAt<'_>,
    rig: &Rig,
    ray: &Ray,
    named: Option<HitboxId>,
) -> Option<lagcomp::Vec3> {
    first_entry(then, rig, ray, named, ray.max_distance()).map(|distance| ray.at(distance))
}

/// Whether `entity`, as the client drew it (extrapolated like the claimed target), stood
/// on the shot's line closer than `before` metres.
pub(crate) fn in_front_in_the_picture(
    history: &History,
    entity: EntityId,
    (from, by): (Tick, f64),
    ray: &Ray,
    before: f32,
) -> bool {
    let (Ok(Some(then)), Ok(rig)) = (
        history.entity_extrapolated(entity, from, by),
        history.rig(entity),
    ) else {
        // Not in the frame the client extrapolated from: the trace's own word stands.
        return true;
    };
    first_entry(&then, rig, ray, None, before).is_some()
}

/// The distance along `ray` at which it first enters a hitbox of `then` (the one named, or
/// any), if that is within `limit`.
fn first_entry(
    then: &EntityAt<'_>,
    rig: &Rig,
    ray: &Ray,
    named: Option<HitboxId>,
    limit: f32,
) -> Option<f32> {
    rig.hitboxes()
        .iter()
        .filter(|h| named.is_none_or(|id| id == h.id))
        .filter_map(|h| then.hitbox(h.id)?.cast_line(ray.origin(), ray.dir()))
        .map(|crossing| crossing.enter.max(0.0))
        .filter(|&enter| enter <= limit)
        .min_by(f32::total_cmp)
}
