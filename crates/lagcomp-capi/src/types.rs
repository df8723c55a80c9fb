//! The plain C structs of the interface, and their checked conversions to and from
//! `lagcomp`'s types. Enums are fixed-width integers with `#define`d values; booleans are
//! `uint8_t` 0 or 1. Units are the game's: metres (or whatever the caller records in,
//! consistently), seconds, server ticks.

use std::ffi::{CStr, c_char};

use lagcomp::{
    Axis, BoneTransform, EntityId, EntityState, Hit, Hitbox, NearestReason, Overlap, PlacedShape,
    Pose, Quat, Rewind, Sample, SampleKind, Shape, Tick, Vec3, Zone,
};

use crate::status::{
    Failure, LAGCOMP_INVALID_ARGUMENT, LAGCOMP_NOT_FINITE, LAGCOMP_NULL_POINTER, fail,
};

/// A point or direction.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LagcompVec3 {
    /// X.
    pub x: f32,
    /// Y.
    pub y: f32,
    /// Z.
    pub z: f32,
}

/// A rotation as a unit quaternion (x, y, z vector part, w scalar part).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompQuat {
    /// X.
    pub x: f32,
    /// Y.
    pub y: f32,
    /// Z.
    pub z: f32,
    /// W (1 for no rotation).
    pub w: f32,
}

/// A rigid transform: rotate, then translate.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompPose {
    /// Where the local origin lands.
    pub translation: LagcompVec3,
    /// Orientation of the local axes; unit length.
    pub rotation: LagcompQuat,
}

/// A bone's world transform for one tick. 48 bytes: the same layout `lagcomp` stores
/// them in, so an array aligned to 16 bytes is read in place; other arrays are copied
/// first (correct, slower). The padding fields are ignored.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompBoneTransform {
    /// Orientation; unit length.
    pub rotation: LagcompQuat,
    /// Bone origin in world space.
    pub translation: LagcompVec3,
    /// Scale along the bone's local axes; (1, 1, 1) for none. Every component positive.
    pub scale: LagcompVec3,
    /// Ignored.
    pub padding: [f32; 2],
}

/// `LagcompEntityState::flags`: alive and hittable.
pub const LAGCOMP_STATE_ALIVE: u32 = 1;
/// `LagcompEntityState::flags`: lag compensation applies. Clear: the entity is tested at
/// its present pose and hits on it are rejected (`target_not_compensated`); for spawn
/// protection or a dodge keep it set and use `LAGCOMP_STATE_INVULNERABLE` or
/// `LAGCOMP_STATE_EVASIVE`.
pub const LAGCOMP_STATE_LAG_COMPENSATED: u32 = 2;
/// `LagcompEntityState::flags`: the entity jumped to this tick's pose (respawn,
/// teleporter); never interpolated into from the tick before.
pub const LAGCOMP_STATE_TELEPORTED: u32 = 4;
/// `LagcompEntityState::flags`: spawn protection. The pose is rewound as usual; a good hit
/// on it is refused (`LAGCOMP_OUTCOME_REFUSED`, `"invulnerable"`), not rejected.
pub const LAGCOMP_STATE_INVULNERABLE: u32 = 8;
/// `LagcompEntityState::flags`: a dodge the server registered this tick. The pose is
/// rewound as usual; under the policy's `dodge = "dodge_wins"` (the default) a good hit on
/// it is refused (`LAGCOMP_OUTCOME_REFUSED`, `"dodged"`).
pub const LAGCOMP_STATE_EVASIVE: u32 = 16;
const STATE_FLAGS: u32 = LAGCOMP_STATE_ALIVE
    | LAGCOMP_STATE_LAG_COMPENSATED
    | LAGCOMP_STATE_TELEPORTED
    | LAGCOMP_STATE_INVULNERABLE
    | LAGCOMP_STATE_EVASIVE;

/// Per-tick facts about an entity, recorded with its bones.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagcompEntityState {
    /// `LAGCOMP_STATE_*` bits. The usual value: `LAGCOMP_STATE_ALIVE |
    /// LAGCOMP_STATE_LAG_COMPENSATED`.
    pub flags: u32,
    /// Collision layers; a query sees the entity when its mask shares a bit with these.
    pub layers: u32,
    /// Game-defined bits (team, stance), carried through to hits.
    pub user: u16,
    /// Must be 0.
    pub reserved: u16,
}

impl LagcompEntityState {
    pub(crate) fn to_rust(self) -> Result<EntityState, Failure> {
        if self.flags & !STATE_FLAGS != 0 {
            return fail(
                LAGCOMP_INVALID_ARGUMENT,
                format!("entity state flags {:#x} has unknown bits", self.flags),
            );
        }
        Ok(EntityState {
            alive: self.flags & LAGCOMP_STATE_ALIVE != 0,
            lag_compensated: self.flags & LAGCOMP_STATE_LAG_COMPENSATED != 0,
            teleported: self.flags & LAGCOMP_STATE_TELEPORTED != 0,
            invulnerable: self.flags & LAGCOMP_STATE_INVULNERABLE != 0,
            evasive: self.flags & LAGCOMP_STATE_EVASIVE != 0,
            layers: self.layers,
            user: self.user,
        })
    }

    pub(crate) fn from_rust(state: EntityState) -> Self {
        Self {
            flags: (u32::from(state.alive) * LAGCOMP_STATE_ALIVE)
                | (u32::from(state.lag_compensated) * LAGCOMP_STATE_LAG_COMPENSATED)
                | (u32::from(state.teleported) * LAGCOMP_STATE_TELEPORTED)
                | (u32::from(state.invulnerable) * LAGCOMP_STATE_INVULNERABLE)
                | (u32::from(state.evasive) * LAGCOMP_STATE_EVASIVE),
            layers: state.layers,
            user: state.user,
            reserved: 0,
        }
    }
}

/// `LagcompShape::kind`: a ball of `radius`.
pub const LAGCOMP_SHAPE_SPHERE: u32 = 0;
/// `LagcompShape::kind`: a box of `half_extents`.
pub const LAGCOMP_SHAPE_BOX: u32 = 1;
/// `LagcompShape::kind`: a segment of `2 * half_height` along `axis`, grown by `radius`.
pub const LAGCOMP_SHAPE_CAPSULE: u32 = 2;
/// `LagcompShape::axis`: local X.
pub const LAGCOMP_AXIS_X: u32 = 0;
/// `LagcompShape::axis`: local Y.
pub const LAGCOMP_AXIS_Y: u32 = 1;
/// `LagcompShape::axis`: local Z.
pub const LAGCOMP_AXIS_Z: u32 = 2;

/// A hitbox's or wall's geometry in its own axes, centred on its origin. Only the fields
/// of its kind are read.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompShape {
    /// `LAGCOMP_SHAPE_*`.
    pub kind: u32,
    /// `LAGCOMP_AXIS_*`, for capsules.
    pub axis: u32,
    /// Spheres and capsules.
    pub radius: f32,
    /// Capsules: half the length of the inner segment (0: a sphere).
    pub half_height: f32,
    /// Boxes: half the size along each axis.
    pub half_extents: LagcompVec3,
}

/// `zone` fields: head and neck.
pub const LAGCOMP_ZONE_HEAD: u16 = 0;
/// `zone` fields: chest, stomach, pelvis.
pub const LAGCOMP_ZONE_TORSO: u16 = 1;
/// `zone` fields: arms and legs.
pub const LAGCOMP_ZONE_LIMB: u16 = 2;
/// `zone` fields: a game-defined zone, numbered by the `zone_custom` beside it.
pub const LAGCOMP_ZONE_CUSTOM: u16 = 3;

/// One hit volume on a bone of a rig.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LagcompHitbox {
    /// Stable id, unique within the rig (what clients put in claims).
    pub id: u16,
    /// The bone it rides on.
    pub bone: u16,
    /// `LAGCOMP_ZONE_*`.
    pub zone: u16,
    /// The zone's number when `zone` is `LAGCOMP_ZONE_CUSTOM`.
    pub zone_custom: u16,
    /// Placement relative to the bone.
    pub offset: LagcompPose,
    /// The volume.
    pub shape: LagcompShape,
    /// A NUL-terminated UTF-8 name for logs and recordings ("head"), or null. Copied.
    pub name: *const c_char,
}

/// `sample_kind` fields: the target fell on a recorded frame.
pub const LAGCOMP_SAMPLE_EXACT: u8 = 0;
/// `sample_kind` fields: blended between `from_tick` and `to_tick` at `alpha`.
pub const LAGCOMP_SAMPLE_INTERPOLATED: u8 = 1;
/// `sample_kind` fields: one frame used as is (`nearest_reason` says why).
pub const LAGCOMP_SAMPLE_NEAREST: u8 = 2;
/// `sample_kind` fields: lag compensation was off: the present pose was used.
pub const LAGCOMP_SAMPLE_PRESENT: u8 = 3;
/// `sample_kind` fields of a verdict's basis: the check that samples was not reached.
pub const LAGCOMP_SAMPLE_NONE: u8 = 255;
/// `nearest_reason`: the entity teleported between the bracketing frames.
pub const LAGCOMP_NEAREST_TELEPORT: u8 = 1;
/// `nearest_reason`: the entity is missing from one of the bracketing frames.
pub const LAGCOMP_NEAREST_MISSING_NEIGHBOUR: u8 = 2;

/// When and how an entity was sampled.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompSample {
    /// The server time rewound to, seconds.
    pub time: f64,
    /// `LAGCOMP_SAMPLE_*`.
    pub kind: u8,
    /// `LAGCOMP_NEAREST_*` for `LAGCOMP_SAMPLE_NEAREST`, else 0.
    pub nearest_reason: u8,
    /// Must be ignored.
    pub reserved: u16,
    /// The frame used (exact, nearest, present) or the older of the two blended.
    pub from_tick: u32,
    /// The newer frame blended (equal to `from_tick` otherwise).
    pub to_tick: u32,
    /// Progress from `from_tick` to `to_tick` (0 unless interpolated).
    pub alpha: f32,
}

impl LagcompSample {
    pub(crate) fn from_kind(time: f64, kind: SampleKind) -> Self {
        let (code, reason, from, to, alpha) = match kind {
            SampleKind::Exact { tick } => (LAGCOMP_SAMPLE_EXACT, 0, tick, tick, 0.0),
            SampleKind::Interpolated { from, to, alpha } => {
                (LAGCOMP_SAMPLE_INTERPOLATED, 0, from, to, alpha)
            }
            SampleKind::Nearest { tick, reason } => {
                let reason = match reason {
                    NearestReason::Teleport => LAGCOMP_NEAREST_TELEPORT,
                    NearestReason::MissingNeighbour => LAGCOMP_NEAREST_MISSING_NEIGHBOUR,
                };
                (LAGCOMP_SAMPLE_NEAREST, reason, tick, tick, 0.0)
            }
            SampleKind::Present { tick } => (LAGCOMP_SAMPLE_PRESENT, 0, tick, tick, 0.0),
        };
        Self {
            time,
            kind: code,
            nearest_reason: reason,
            reserved: 0,
            from_tick: from.0,
            to_tick: to.0,
            alpha,
        }
    }

    pub(crate) fn from_rust(sample: Sample) -> Self {
        Self::from_kind(sample.time, sample.kind)
    }
}

/// The moment a query looked at.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompRewind {
    /// The time asked for, seconds.
    pub requested: f64,
    /// The time used: `requested` unless clamped to the window.
    pub time: f64,
    /// The oldest time the window allowed.
    pub oldest: f64,
    /// The newest recorded time.
    pub newest: f64,
    /// 1 when `LAGCOMP_WINDOW_CLAMP` moved the target.
    pub clamped: u8,
    /// Must be ignored.
    pub reserved: [u8; 7],
}

impl LagcompRewind {
    pub(crate) fn from_rust(r: Rewind) -> Self {
        Self {
            requested: r.requested,
            time: r.time,
            oldest: r.oldest,
            newest: r.newest,
            clamped: u8::from(r.clamped),
            reserved: [0; 7],
        }
    }
}

/// A hitbox as placed in the world at the rewound time (the shape scaled by its bone).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompPlacedShape {
    /// Where its centre and axes were.
    pub pose: LagcompPose,
    /// Its geometry.
    pub shape: LagcompShape,
}

/// One hitbox a trace touched.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompHit {
    /// The entity.
    pub entity: u64,
    /// The hitbox's id.
    pub hitbox: u16,
    /// Its index in the rig as given at spawn, sorted by bone.
    pub hitbox_index: u16,
    /// `LAGCOMP_ZONE_*`.
    pub zone: u16,
    /// The zone's number for `LAGCOMP_ZONE_CUSTOM`.
    pub zone_custom: u16,
    /// Distance along the trace to the entry (0 when it started inside).
    pub distance: f32,
    /// Distance to where it leaves the hitbox.
    pub exit_distance: f32,
    /// Where it entered.
    pub entry_point: LagcompVec3,
    /// Outward normal there.
    pub entry_normal: LagcompVec3,
    /// Where it left.
    pub exit_point: LagcompVec3,
    /// Outward normal there.
    pub exit_normal: LagcompVec3,
    /// `exit_distance - distance`.
    pub penetration: f32,
    /// 1 when the trace started inside the hitbox.
    pub started_inside: u8,
    /// Must be ignored.
    pub reserved: [u8; 3],
    /// The entity's state then.
    pub state: LagcompEntityState,
    /// When and how it was sampled.
    pub sample: LagcompSample,
    /// The hitbox then.
    pub placement: LagcompPlacedShape,
    /// Its bone's scale then.
    pub bone_scale: LagcompVec3,
}

/// One hitbox a volume overlapped.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompOverlap {
    /// The entity.
    pub entity: u64,
    /// The hitbox's id.
    pub hitbox: u16,
    /// Its index in the rig.
    pub hitbox_index: u16,
    /// `LAGCOMP_ZONE_*`.
    pub zone: u16,
    /// The zone's number for `LAGCOMP_ZONE_CUSTOM`.
    pub zone_custom: u16,
    /// The hitbox point nearest the volume's centre.
    pub closest_point: LagcompVec3,
    /// Distance from the volume's centre to the hitbox (0 inside).
    pub distance: f32,
    /// The entity's state then.
    pub state: LagcompEntityState,
    /// When and how it was sampled.
    pub sample: LagcompSample,
    /// The hitbox then.
    pub placement: LagcompPlacedShape,
    /// Its bone's scale then.
    pub bone_scale: LagcompVec3,
}

// --- conversions ---

pub(crate) fn vec3(v: LagcompVec3) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

pub(crate) fn c_vec3(v: Vec3) -> LagcompVec3 {
    LagcompVec3 {
        x: v.x,
        y: v.y,
        z: v.z,
    }
}

pub(crate) fn quat(q: LagcompQuat) -> Quat {
    Quat::from_xyzw(q.x, q.y, q.z, q.w)
}

pub(crate) fn c_quat(q: Quat) -> LagcompQuat {
    LagcompQuat {
        x: q.x,
        y: q.y,
        z: q.z,
        w: q.w,
    }
}

pub(crate) fn pose(p: &LagcompPose) -> Pose {
    Pose::new(vec3(p.translation), quat(p.rotation))
}

pub(crate) fn c_pose(p: Pose) -> LagcompPose {
    LagcompPose {
        translation: c_vec3(p.translation),
        rotation: c_quat(p.rotation),
    }
}

pub(crate) fn bone(b: &LagcompBoneTransform) -> BoneTransform {
    BoneTransform::new(vec3(b.translation), quat(b.rotation)).with_scale(vec3(b.scale))
}

pub(crate) fn c_bone(b: BoneTransform) -> LagcompBoneTransform {
    LagcompBoneTransform {
        rotation: c_quat(b.rotation),
        translation: c_vec3(b.translation),
        scale: c_vec3(b.scale),
        padding: [0.0; 2],
    }
}

/// Refuses NaN and infinities in `values`, naming `what`.
pub(crate) fn finite(what: &str, values: &[f32]) -> Result<(), Failure> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        fail(LAGCOMP_NOT_FINITE, format!("{what} is not finite"))
    }
}

pub(crate) fn finite_vec3(what: &str, v: LagcompVec3) -> Result<Vec3, Failure> {
    finite(what, &[v.x, v.y, v.z])?;
    Ok(vec3(v))
}

pub(crate) fn finite_pose(what: &str, p: &LagcompPose) -> Result<Pose, Failure> {
    let (t, r) = (p.translation, p.rotation);
    finite(what, &[t.x, t.y, t.z, r.x, r.y, r.z, r.w])?;
    let pose = pose(p);
    pose.validate()
        .map_err(|e| Failure::new(LAGCOMP_INVALID_ARGUMENT, format!("{what}: {e}")))?;
    Ok(pose)
}

impl LagcompShape {
    pub(crate) fn to_rust(self) -> Result<Shape, Failure> {
        let axis = match self.axis {
            LAGCOMP_AXIS_X => Axis::X,
            LAGCOMP_AXIS_Y => Axis::Y,
            LAGCOMP_AXIS_Z => Axis::Z,
            other => return fail(LAGCOMP_INVALID_ARGUMENT, format!("unknown axis {other}")),
        };
        let shape = match self.kind {
            LAGCOMP_SHAPE_SPHERE => Shape::sphere(self.radius),
            LAGCOMP_SHAPE_BOX => Shape::cuboid(vec3(self.half_extents)),
            LAGCOMP_SHAPE_CAPSULE => Shape::capsule(self.radius, self.half_height, axis),
            other => {
                return fail(
                    LAGCOMP_INVALID_ARGUMENT,
                    format!("unknown shape kind {other}"),
                );
            }
        };
        let h = self.half_extents;
        finite(
            "a shape dimension",
            &[self.radius, self.half_height, h.x, h.y, h.z],
        )?;
        shape
            .validate()
            .map_err(|e| Failure::new(LAGCOMP_INVALID_ARGUMENT, format!("shape: {e}")))?;
        Ok(shape)
    }

    pub(crate) fn from_rust(shape: Shape) -> Self {
        let zero = LagcompVec3::default();
        match shape {
            Shape::Sphere { radius } => Self {
                kind: LAGCOMP_SHAPE_SPHERE,
                axis: LAGCOMP_AXIS_Y,
                radius,
                half_height: 0.0,
                half_extents: zero,
            },
            Shape::Box { half_extents } => Self {
                kind: LAGCOMP_SHAPE_BOX,
                axis: LAGCOMP_AXIS_Y,
                radius: 0.0,
                half_height: 0.0,
                half_extents: c_vec3(half_extents),
            },
            Shape::Capsule {
                radius,
                half_height,
                axis,
            } => Self {
                kind: LAGCOMP_SHAPE_CAPSULE,
                axis: axis.index() as u32,
                radius,
                half_height,
                half_extents: zero,
            },
        }
    }
}

pub(crate) fn zone(zone: u16, custom: u16) -> Result<Zone, Failure> {
    Ok(match zone {
        LAGCOMP_ZONE_HEAD => Zone::Head,
        LAGCOMP_ZONE_TORSO => Zone::Torso,
        LAGCOMP_ZONE_LIMB => Zone::Limb,
        LAGCOMP_ZONE_CUSTOM => Zone::Custom(custom),
        other => return fail(LAGCOMP_INVALID_ARGUMENT, format!("unknown zone {other}")),
    })
}

/// `(zone, zone_custom)` of a zone.
pub(crate) fn c_zone(zone: Zone) -> (u16, u16) {
    match zone {
        Zone::Head => (LAGCOMP_ZONE_HEAD, 0),
        Zone::Torso => (LAGCOMP_ZONE_TORSO, 0),
        Zone::Limb => (LAGCOMP_ZONE_LIMB, 0),
        Zone::Custom(n) => (LAGCOMP_ZONE_CUSTOM, n),
    }
}

/// A NUL-terminated UTF-8 string argument; `null` when the pointer is null.
///
/// # Safety
/// `text` is null or points to a NUL-terminated string that stays alive and unchanged for
/// the call.
pub(crate) unsafe fn text<'a>(what: &str, text: *const c_char) -> Result<Option<&'a str>, Failure> {
    if text.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract: non-null and NUL-terminated.
    let bytes = unsafe { CStr::from_ptr(text) };
    bytes
        .to_str()
        .map(Some)
        .map_err(|_| Failure::new(LAGCOMP_INVALID_ARGUMENT, format!("{what} is not UTF-8")))
}

/// [`text`] that must not be null.
///
/// # Safety
/// As [`text`].
pub(crate) unsafe fn required_text<'a>(what: &str, ptr: *const c_char) -> Result<&'a str, Failure> {
    // SAFETY: passed through.
    match unsafe { text(what, ptr) }? {
        Some(s) => Ok(s),
        None => fail(LAGCOMP_NULL_POINTER, format!("{what} is null")),
    }
}

impl LagcompHitbox {
    /// # Safety
    /// `self.name` is null or a NUL-terminated string alive for the call.
    pub(crate) unsafe fn to_rust(self) -> Result<Hitbox, Failure> {
        let context =
            |f: Failure| Failure::new(f.status, format!("hitbox {}: {}", self.id, f.message));
        // SAFETY: the caller's contract.
        let name = unsafe { text("the hitbox name", self.name) }.map_err(context)?;
        let shape = self.shape.to_rust().map_err(context)?;
        let offset = finite_pose("the offset", &self.offset).map_err(context)?;
        let zone = zone(self.zone, self.zone_custom).map_err(context)?;
        Ok(Hitbox::new(self.id, name.unwrap_or(""), zone, self.bone, shape).with_offset(offset))
    }
}

pub(crate) fn c_placed(p: PlacedShape) -> LagcompPlacedShape {
    LagcompPlacedShape {
        pose: c_pose(p.pose),
        shape: LagcompShape::from_rust(p.shape),
    }
}

impl LagcompHit {
    pub(crate) fn from_rust(hit: &Hit) -> Self {
        let (zone, zone_custom) = c_zone(hit.zone);
        Self {
            entity: hit.entity.to_bits(),
            hitbox: hit.hitbox.0,
            hitbox_index: hit.hitbox_index,
            zone,
            zone_custom,
            distance: hit.distance,
            exit_distance: hit.exit_distance,
            entry_point: c_vec3(hit.entry.point),
            entry_normal: c_vec3(hit.entry.normal),
            exit_point: c_vec3(hit.exit.point),
            exit_normal: c_vec3(hit.exit.normal),
            penetration: hit.penetration,
            started_inside: u8::from(hit.started_inside),
            reserved: [0; 3],
            state: LagcompEntityState::from_rust(hit.state),
            sample: LagcompSample::from_rust(hit.sample),
            placement: c_placed(hit.placement),
            bone_scale: c_vec3(hit.bone_scale),
        }
    }
}

impl LagcompOverlap {
    pub(crate) fn from_rust(o: &Overlap) -> Self {
        let (zone, zone_custom) = c_zone(o.zone);
        Self {
            entity: o.entity.to_bits(),
            hitbox: o.hitbox.0,
            hitbox_index: o.hitbox_index,
            zone,
            zone_custom,
            closest_point: c_vec3(o.closest_point),
            distance: o.distance,
            state: LagcompEntityState::from_rust(o.state),
            sample: LagcompSample::from_rust(o.sample),
            placement: c_placed(o.placement),
            bone_scale: c_vec3(o.bone_scale),
        }
    }
}

pub(crate) fn entity(bits: u64) -> EntityId {
    EntityId::from_bits(bits)
}

pub(crate) fn tick(t: u32) -> Tick {
    Tick(t)
}
