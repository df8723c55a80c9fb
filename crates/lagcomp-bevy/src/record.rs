//! Recording each tick: the poses computed from the transform hierarchy as the tick left
//! it, not read from `GlobalTransform` (which Bevy only propagates in `PostUpdate`, after
//! the fixed schedules: a tick recorded from it would be the previous tick's poses).

use bevy_ecs::prelude::*;
use bevy_transform::components::Transform;
use lagcomp::{BoneTransform, EntityId, EntityState, RecordError, Tick};

use crate::entities::RecordedAs;
use crate::hitboxes::{HitboxState, Hitboxes, Teleported};
use crate::plugin::{LagCompClock, LagCompHistory};

/// How the last frames went: what a server logs or exports as metrics.
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub struct RecordReport {
    /// Frames recorded since the app started.
    pub frames: u64,
    /// Entities recorded in the newest frame.
    pub entities: usize,
    /// Entities with [`Hitboxes`] left out of the newest frame: a skeletal rig whose
    /// joints are not all found yet, an entity (or joint) without a `Transform`, or one
    /// whose lagcomp entity was despawned through [`LagCompHistory`] directly.
    pub skipped: usize,
    /// The last refusal from the history, and the tick it happened at (an entity with a
    /// non-finite or out-of-range transform is left out of that frame).
    pub last_error: Option<(Tick, RecordError)>,
}

/// A skeletal rig's joints, found under its entity by name: the entities on the paths
/// from the rig's entity to every joint, parents first, so that one pass composes every
/// joint's transform from its parent's.
#[derive(Component, Debug, Clone, PartialEq)]
pub struct SkeletonJoints {
    /// The entities of the paths, each with the position of its parent in this list
    /// ([`SkeletonJoints::ROOT`]: the rig's own entity).
    chain: Vec<(Entity, u16)>,
    /// For each bone, its joint's position in `chain`.
    bones: Vec<u16>,
    /// Where `chain` starts among the [`JointSlots`]: chain entity `i` copies its
    /// transform to slot `base + i` each tick.
    base: u32,
    /// `bones` is `0..chain.len()`: the bones are the whole chain, in order.
    bones_are_chain: bool,
}

/// On each entity of a skeletal rig's joint chain: the slot its transform is copied to
/// each tick, and the rig it belongs to.
///
/// PERF: recording copies every joint's `Transform` in one pass over the joints'
/// archetypes and then composes each rig from its slots, instead of looking each joint up
/// by entity (a random access per bone). 200 rigs of 20 joints: 131 us a tick looked up,
/// 83 us copied, against 11-15 us for the core's record of the same finished poses
/// (`cargo bench -p lagcomp-bevy --bench plugin`, shared 2-core machine).
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JointOf {
    rig: Entity,
    slot: u32,
}

/// The slots joint transforms are copied to: ranges handed to skeletal rigs when their
/// joints are found, and taken back when the rig goes.
#[derive(Resource, Debug, Default)]
pub(crate) struct JointSlots {
    end: u32,
    /// Ranges given back, `(start, len)`; reused first fit (rigs of one kind share a
    /// length, so a respawned character takes its predecessor's range).
    free: Vec<(u32, u32)>,
}

impl JointSlots {
    fn take(&mut self, len: u32) -> u32 {
        if let Some(at) = self.free.iter().position(|&(_, l)| l >= len) {
            let (start, l) = self.free.swap_remove(at);
            if l > len {
                self.free.push((start + len, l - len));
            }
            return start;
        }
        let start = self.end;
        self.end += len;
        start
    }

    fn give_back(&mut self, start: u32, len: u32) {
        if len > 0 {
            self.free.push((start, len));
        }
    }
}

impl SkeletonJoints {
    const ROOT: u16 = u16::MAX;

    /// The joint entity of each bone, in bone order.
    pub fn joints(&self) -> impl ExactSizeIterator<Item = Entity> + '_ {
        self.bones.iter().map(|&at| self.chain[usize::from(at)].0)
    }

    /// Finds `names` among the descendants of `root` (breadth first: the joint nearest the
    /// root wins a duplicated name). `None` until every name is found.
    fn find(
        root: Entity,
        names: &[std::borrow::Cow<'static, str>],
        children: &Query<&Children>,
        named: &Query<&Name>,
        parents: &Query<&ChildOf>,
    ) -> Option<Self> {
        let mut found: Vec<Option<Entity>> = vec![None; names.len()];
        let mut queue = std::collections::VecDeque::from([root]);
        while let Some(entity) = queue.pop_front() {
            if entity != root
                && let Ok(name) = named.get(entity)
            {
                for (slot, wanted) in found.iter_mut().zip(names) {
                    if slot.is_none() && name.as_str() == wanted {
                        *slot = Some(entity);
                    }
                }
            }
            if let Ok(kids) = children.get(entity) {
                queue.extend(kids.iter());
            }
        }
        let mut joints = Self {
            chain: Vec::new(),
            bones: Vec::with_capacity(names.len()),
            base: 0,
            bones_are_chain: false,
        };
        for joint in found {
            let at = joints.place(joint?, root, parents)?;
            joints.bones.push(at);
        }
        joints.bones_are_chain = joints.bones.len() == joints.chain.len()
            && joints
                .bones
                .iter()
                .enumerate()
                .all(|(i, &at)| usize::from(at) == i);
        Some(joints)
    }

    /// Puts `entity` and its ancestors up to `root` in the chain, parents first; its
    /// position.
    fn place(&mut self, entity: Entity, root: Entity, parents: &Query<&ChildOf>) -> Option<u16> {
        if entity == root {
            return Some(Self::ROOT);
        }
        if let Some(at) = self.chain.iter().position(|&(e, _)| e == entity) {
            return u16::try_from(at).ok();
        }
        let parent = self.place(parents.get(entity).ok()?.parent(), root, parents)?;
        let at = u16::try_from(self.chain.len())
            .ok()
            .filter(|&at| at != Self::ROOT)?;
        self.chain.push((entity, parent));
        Some(at)
    }
}

/// On a skeletal rig whose joints are to be looked for (a new rig, one whose joints were
/// not all spawned at the last try, or one that lost a joint).
///
/// PERF: looking is then a pass over the rigs that need it, not over every entity with
/// hitboxes each tick.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AwaitingJoints;

/// The skeletal rigs whose joints are to be looked for.
type Awaiting = (With<AwaitingJoints>, Without<SkeletonJoints>);

/// Finds the joints of skeletal rigs that have none yet (new rigs, and rigs whose joints
/// were not all spawned at the last try).
pub(crate) fn resolve_joints(
    rigs: Query<(Entity, &Hitboxes), Awaiting>,
    children: Query<&Children>,
    named: Query<&Name>,
    parents: Query<&ChildOf>,
    mut slots: ResMut<JointSlots>,
    mut commands: Commands,
) {
    for (entity, hitboxes) in &rigs {
        let Some(names) = hitboxes.joint_names() else {
            continue;
        };
        let Some(mut joints) = SkeletonJoints::find(entity, names, &children, &named, &parents)
        else {
            continue;
        };
        joints.base = slots.take(joints.chain.len() as u32);
        for (i, &(joint, _)) in joints.chain.iter().enumerate() {
            let slot = joints.base + i as u32;
            commands
                .entity(joint)
                .try_insert(JointOf { rig: entity, slot });
        }
        commands
            .entity(entity)
            .remove::<AwaitingJoints>()
            .insert(joints);
    }
}

/// A rig's joints are being forgotten (its rig replaced, its entity despawned): untag
/// them and give their slots back.
pub(crate) fn on_joints_removed(
    remove: On<bevy_ecs::lifecycle::Remove<SkeletonJoints>>,
    rigs: Query<&SkeletonJoints>,
    mut slots: ResMut<JointSlots>,
    mut commands: Commands,
) {
    let Ok(joints) = rigs.get(remove.entity) else {
        return;
    };
    for &(joint, _) in &joints.chain {
        if let Ok(mut tagged) = commands.get_entity(joint) {
            tagged.try_remove::<JointOf>();
        }
    }
    slots.give_back(joints.base, joints.chain.len() as u32);
}

/// The world transform now of an entity whose own transform is `local` under `parent`:
/// `local` composed with its ancestors' transforms. `None` if an ancestor has none.
#[inline]
pub(crate) fn world_transform(
    local: &Transform,
    parent: Option<&ChildOf>,
    locals: &Query<(&Transform, Option<&ChildOf>)>,
) -> Option<Transform> {
    let mut world = *local;
    let mut parent = parent.map(ChildOf::parent);
    while let Some(entity) = parent {
        let (local, up) = locals.get(entity).ok()?;
        world = local.mul_transform(world);
        parent = up.map(ChildOf::parent);
    }
    Some(world)
}

#[inline]
fn bone(transform: &Transform) -> BoneTransform {
    BoneTransform::new(transform.translation, transform.rotation).with_scale(transform.scale)
}

/// What recording reads of the common entity: rigid, without a parent, not teleported
/// this tick.
type Plain = (
    &'static RecordedAs,
    &'static Transform,
    Option<&'static HitboxState>,
);

/// Which entities are [`Plain`].
type PlainFilter = (
    With<Hitboxes>,
    Without<ChildOf>,
    Without<SkeletonJoints>,
    Without<Teleported>,
);

/// The entities with hitboxes that are not [`Plain`].
type OtherFilter = (
    With<Hitboxes>,
    Or<(With<ChildOf>, With<SkeletonJoints>, With<Teleported>)>,
);

/// What recording reads of the other entities with hitboxes.
type Recorded = (
    &'static RecordedAs,
    &'static Transform,
    Option<&'static ChildOf>,
    Option<&'static SkeletonJoints>,
    Option<&'static HitboxState>,
    Has<Teleported>,
);

/// What recording reuses from tick to tick, so that a steady tick allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct RecordScratch {
    batch: Vec<(EntityId, EntityState)>,
    bones: Vec<BoneTransform>,
    /// The entries of `batch` with other than one bone, and how many of `bones` they have:
    /// to record them one by one when the history refuses the batch whole.
    counts: Vec<(usize, u16)>,
    chain: Vec<BoneTransform>,
    teleported: Vec<Entity>,
    /// Each joint slot's transform this tick, the rig it was copied for and the frame
    /// stamp it was copied at (a slot not copied this tick holds an older stamp).
    joints: Vec<(Transform, Entity, u32)>,
    stamp: u32,
}

/// Records the frame of the clock's tick: every mapped entity's bones as this tick's
/// transforms place them, and its state.
///
/// PERF: the common entity (rigid, no parent, not teleported) in a pass that reads only
/// its lagcomp id, transform and state, with no per-entity branch on parents, skeletons or
/// teleports (the lagcomp id rides beside the transform in [`RecordedAs`]); skeletal rigs
/// composed down their joint chains from slots filled by one pass over the joints' table;
/// and the whole tick handed to the history's batched `record_all`, whose plan then skips
/// the per-entity lookups.
#[expect(clippy::too_many_arguments, reason = "a system's parameters")]
pub(crate) fn record_frame(
    mut history: ResMut<LagCompHistory>,
    mut clock: ResMut<LagCompClock>,
    mut report: ResMut<RecordReport>,
    plain: Query<Plain, PlainFilter>,
    rigs: Query<(Entity, Recorded), OtherFilter>,
    locals: Query<(&Transform, Option<&ChildOf>)>,
    joint_transforms: Query<(&Transform, &JointOf)>,
    slots: Res<JointSlots>,
    mut scratch: Local<RecordScratch>,
    mut commands: Commands,
) {
    let Some((tick, time)) = clock.due() else {
        return;
    };
    let RecordScratch {
        batch,
        bones,
        counts,
        chain,
        teleported,
        joints: joint_slots,
        stamp,
    } = &mut *scratch;
    batch.clear();
    bones.clear();
    counts.clear();
    teleported.clear();
    *stamp = stamp.wrapping_add(1);
    let stamp = *stamp;
    if joint_slots.len() < slots.end as usize {
        joint_slots.resize(
            slots.end as usize,
            (Transform::IDENTITY, Entity::PLACEHOLDER, 0),
        );
    }
    // PERF: `for_each` rather than `for`: Bevy's internal iteration runs one tight loop
    // per table instead of checking, entity by entity, where the next one is.
    joint_transforms.iter().for_each(|(transform, joint)| {
        if let Some(slot) = joint_slots.get_mut(joint.slot as usize) {
            *slot = (*transform, joint.rig, stamp);
        }
    });
    let mut skipped = 0;
    let unstated = HitboxState::default().recorded(false);
    plain.iter().for_each(|(recorded, local, state)| {
        match recorded.id() {
            Some(id) if !recorded.skeletal => {
                bones.push(bone(local));
                batch.push((id, state.map_or(unstated, |state| state.recorded(false))));
            }
            // Not recorded, or a skeletal rig whose joints are not all found yet.
            _ => skipped += 1,
        }
    });
    for (entity, (recorded, local, parent, joints, state, jumped)) in &rigs {
        let Some(id) = recorded.id() else {
            skipped += 1;
            continue;
        };
        let Some(root) = world_transform(local, parent, &locals) else {
            skipped += 1;
            continue;
        };
        let root = bone(&root);
        match joints {
            Some(joints) => {
                if !skeleton_bones(entity, root, joints, (joint_slots, stamp), chain, bones) {
                    // A joint is gone: look for the joints again from the next tick.
                    commands
                        .entity(entity)
                        .try_remove::<SkeletonJoints>()
                        .try_insert(AwaitingJoints);
                    skipped += 1;
                    continue;
                }
                if joints.bones.len() != 1 {
                    counts.push((batch.len(), joints.bones.len() as u16));
                }
            }
            // A skeletal rig whose joints are not all found yet.
            None if recorded.skeletal => {
                skipped += 1;
                continue;
            }
            None => bones.push(root),
        }
        batch.push((id, state.copied().unwrap_or_default().recorded(jumped)));
        if jumped {
            teleported.push(entity);
        }
    }
    match history.begin_frame(tick, time) {
        Ok(mut frame) => {
            let recorded = match frame.record_all(batch, bones) {
                Ok(()) => batch.len(),
                // The batch was refused whole (a handle the history no longer knows: the
                // game despawned it through `LagCompHistory` directly): record the rest.
                Err(error @ (RecordError::Entity(_) | RecordError::BatchBones { .. })) => {
                    report.last_error = Some((tick, error));
                    record_each(&mut frame, batch, counts, bones, |error| {
                        report.last_error = Some((tick, error));
                    })
                }
                Err(error) => {
                    report.last_error = Some((tick, error));
                    batch.len()
                }
            };
            frame.finish();
            clock.recorded(tick, time);
            report.frames += 1;
            report.entities = recorded;
            report.skipped = skipped + batch.len() - recorded;
        }
        Err(error) => report.last_error = Some((tick, error)),
    }
    for &entity in teleported.iter() {
        commands.entity(entity).try_remove::<Teleported>();
    }
}

/// Records the entities of `batch` one by one, each with its bones (one, or as many as
/// `counts` says), leaving out those the history refuses (each refusal given to
/// `refused`); how many were recorded.
fn record_each(
    frame: &mut lagcomp::FrameRecorder<'_>,
    batch: &[(EntityId, EntityState)],
    counts: &[(usize, u16)],
    bones: &[BoneTransform],
    mut refused: impl FnMut(RecordError),
) -> usize {
    let mut rest = bones;
    let mut counts = counts.iter().peekable();
    let mut recorded = 0;
    for (i, &(id, state)) in batch.iter().enumerate() {
        let count = counts.next_if(|&&(at, _)| at == i).map_or(1, |&(_, n)| n);
        let Some((own, next)) = rest.split_at_checked(usize::from(count)) else {
            break;
        };
        rest = next;
        match frame.record(id, own, state) {
            Ok(()) => recorded += 1,
            Err(error) => refused(error),
        }
    }
    recorded
}

/// `above` (a joint's parent, world space) composed with the joint's own `local`
/// transform: the joint in world space, computed as `Transform::mul_transform` does, bit
/// for bit.
///
/// PERF: this is most of a skeletal tick: about 98 instructions a joint with its loop
/// under callgrind (two quaternion products, the 12-byte vectors loaded and stored
/// piecewise; `Transform::mul_transform` alone takes about 89), against about 15 for the
/// core's record of a finished bone. 200 rigs of 20 joints (`cargo bench -p lagcomp-bevy
/// --bench plugin`, `bevy_record_200x20`, instructions an iteration): 549k through the
/// plugin, 8.7x the core's record of the finished poses (63k) and 1.3x the core's record
/// of poses composed from the same joint transforms (421k, `core_composed`). Composing one
/// joint of eight rigs at once in lanes (a structure of arrays) took the math to about 35
/// a joint, but moving the transforms into and out of the lanes cost more than it saved.
#[inline]
fn compose(above: &BoneTransform, local: &Transform) -> BoneTransform {
    BoneTransform::new(
        above.translation + above.rotation * (above.scale * local.translation),
        above.rotation * local.rotation,
    )
    .with_scale(above.scale * local.scale)
}

/// Appends the bones of skeletal rig `rig`, composed down its joint chain from `root`
/// with the joint transforms copied this tick (`copied`, and the tick's stamp); false (and
/// nothing appended) if a joint was not copied this tick (it lost its `Transform`, or was
/// despawned).
fn skeleton_bones(
    rig: Entity,
    root: BoneTransform,
    joints: &SkeletonJoints,
    (copied, stamp): (&[(Transform, Entity, u32)], u32),
    chain: &mut Vec<BoneTransform>,
    bones: &mut Vec<BoneTransform>,
) -> bool {
    let base = joints.base as usize;
    let Some(copied) = copied.get(base..base + joints.chain.len()) else {
        return false;
    };
    // PERF: a rig whose bones are its whole chain in order (every joint on the paths is a
    // bone, listed parents first) is composed straight into the frame's bones, without
    // the copy out of `chain`.
    if joints.bones_are_chain {
        return compose_chain(rig, root, joints, (copied, stamp), bones);
    }
    chain.clear();
    if !compose_chain(rig, root, joints, (copied, stamp), chain) {
        return false;
    }
    bones.extend(joints.bones.iter().map(|&at| chain[usize::from(at)]));
    true
}

/// Appends rig `rig`'s joint chain to `out`, each joint composed onto its parent (already
/// in `out`) or onto `root`; false, with `out` as it was, if a joint was not copied this
/// tick.
#[inline]
fn compose_chain(
    rig: Entity,
    root: BoneTransform,
    joints: &SkeletonJoints,
    (copied, stamp): (&[(Transform, Entity, u32)], u32),
    out: &mut Vec<BoneTransform>,
) -> bool {
    let start = out.len();
    for (&(_, parent), (local, owner, at)) in joints.chain.iter().zip(copied) {
        if *owner != rig || *at != stamp {
            out.truncate(start);
            return false;
        }
        let above = if parent == SkeletonJoints::ROOT {
            root
        } else {
            out[start + usize::from(parent)]
        };
        out.push(compose(&above, local));
    }
    true
}
