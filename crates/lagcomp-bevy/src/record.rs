//! Recording each tick: the poses computed from the transform hierarchy as the tick left
//! it, not read from `GlobalTransform` (which Bevy only propagates in `PostUpdate`, after
//! the fixed schedules: a tick recorded from it would be the previous tick's poses).

use bevy_ecs::prelude::*;
use bevy_transform::components::Transform;
use lagcomp::{BoneTransform, EntityId, EntityState, RecordError, Tick};

use crate::entities::HitboxEntities;
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
    /// joints are not all found yet, or an entity (or joint) without a `Transform`.
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
        };
        for joint in found {
            let at = joints.place(joint?, root, parents)?;
            joints.bones.push(at);
        }
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

/// Finds the joints of skeletal rigs that have none yet (new rigs, and rigs whose joints
/// were not all spawned at the last try).
pub(crate) fn resolve_joints(
    rigs: Query<(Entity, &Hitboxes), Without<SkeletonJoints>>,
    children: Query<&Children>,
    named: Query<&Name>,
    parents: Query<&ChildOf>,
    mut commands: Commands,
) {
    for (entity, hitboxes) in &rigs {
        let Some(names) = hitboxes.joint_names() else {
            continue;
        };
        if let Some(joints) = SkeletonJoints::find(entity, names, &children, &named, &parents) {
            commands.entity(entity).insert(joints);
        }
    }
}

/// The world transform of `entity` now: its `Transform` composed with its ancestors'.
/// `None` if it or an ancestor has no `Transform`.
#[inline]
pub(crate) fn world_transform(
    entity: Entity,
    locals: &Query<(&Transform, Option<&ChildOf>)>,
) -> Option<Transform> {
    let (local, mut parent) = locals.get(entity).ok()?;
    let mut world = *local;
    while let Some(child_of) = parent {
        let (local, up) = locals.get(child_of.parent()).ok()?;
        world = local.mul_transform(world);
        parent = up;
    }
    Some(world)
}

#[inline]
fn bone(transform: &Transform) -> BoneTransform {
    BoneTransform::new(transform.translation, transform.rotation).with_scale(transform.scale)
}

/// What recording reads of each entity with hitboxes.
type Recorded = (
    Entity,
    &'static Hitboxes,
    Option<&'static SkeletonJoints>,
    Option<&'static HitboxState>,
    Has<Teleported>,
);

/// What recording reuses from tick to tick, so that a steady tick allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct RecordScratch {
    batch: Vec<(EntityId, EntityState)>,
    bones: Vec<BoneTransform>,
    chain: Vec<Transform>,
    teleported: Vec<Entity>,
}

/// Records the frame of the clock's tick: every mapped entity's bones as this tick's
/// transforms place them, and its state.
#[expect(clippy::too_many_arguments, reason = "a system's parameters")]
pub(crate) fn record_frame(
    mut history: ResMut<LagCompHistory>,
    mut clock: ResMut<LagCompClock>,
    mut report: ResMut<RecordReport>,
    entities: Res<HitboxEntities>,
    rigs: Query<Recorded>,
    locals: Query<(&Transform, Option<&ChildOf>)>,
    mut scratch: Local<RecordScratch>,
    mut commands: Commands,
) {
    let Some((tick, time)) = clock.due() else {
        return;
    };
    let RecordScratch {
        batch,
        bones,
        chain,
        teleported,
    } = &mut *scratch;
    batch.clear();
    bones.clear();
    teleported.clear();
    let mut skipped = 0;
    for (entity, hitboxes, joints, state, jumped) in &rigs {
        let Some(id) = entities.core_id(entity) else {
            skipped += 1;
            continue;
        };
        let Some(root) = world_transform(entity, &locals) else {
            skipped += 1;
            continue;
        };
        if hitboxes.joint_names().is_some() {
            let Some(joints) = joints else {
                skipped += 1;
                continue;
            };
            if !skeleton_bones(root, joints, &locals, chain, bones) {
                skipped += 1;
                continue;
            }
        } else {
            bones.push(bone(&root));
        }
        batch.push((id, state.copied().unwrap_or_default().recorded(jumped)));
        if jumped {
            teleported.push(entity);
        }
    }
    match history.begin_frame(tick, time) {
        Ok(mut frame) => {
            if let Err(error) = frame.record_all(batch, bones) {
                report.last_error = Some((tick, error));
            }
            frame.finish();
            clock.recorded(tick, time);
            report.frames += 1;
            report.entities = batch.len();
            report.skipped = skipped;
        }
        Err(error) => report.last_error = Some((tick, error)),
    }
    for &entity in teleported.iter() {
        commands.entity(entity).try_remove::<Teleported>();
    }
}

/// Appends a skeletal rig's bones, composed down its joint chain from `root`; false (and
/// nothing appended) if a joint has lost its `Transform`.
fn skeleton_bones(
    root: Transform,
    joints: &SkeletonJoints,
    locals: &Query<(&Transform, Option<&ChildOf>)>,
    chain: &mut Vec<Transform>,
    bones: &mut Vec<BoneTransform>,
) -> bool {
    chain.clear();
    for &(entity, parent) in &joints.chain {
        let Ok((local, _)) = locals.get(entity) else {
            return false;
        };
        let above = if parent == SkeletonJoints::ROOT {
            root
        } else {
            chain[usize::from(parent)]
        };
        chain.push(above.mul_transform(*local));
    }
    bones.extend(joints.bones.iter().map(|&at| bone(&chain[usize::from(at)])));
    true
}
