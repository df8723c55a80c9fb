//! Snapshots on the wire: every entity's pose at one tick, exact to the bit, split into
//! parts that each fit a budget.
//!
//! An entity's pose travels as its bones' world transforms ([`EntityPose::Bones`], any
//! rig), or, for the humanoid of `lagcomp serve`, as the few numbers its bones are a pure
//! function of ([`EntityPose::Humanoid`]: a [`HumanoidStance`], 40 bytes against 224 for
//! 8 bones). A client rebuilds the bones from a stance by the very function the server
//! records them with (`lagcomp_game::body::Stance::pose`), so it draws the server's bones
//! bit for bit: same code, same inputs (see [`HumanoidStance`] for the condition).
//!
//! A part is self-contained (it carries the tick and server time), so a client pushes the
//! entities of every part it gets into their interpolation buffers and loses only the
//! entities of a part that was dropped, never the whole tick.
//!
//! A server that sends each client only the entities near it encodes each entity once a
//! tick ([`EncodedEntities`]) and packs every client's view from those bytes
//! ([`SnapshotEncoder::encode_view`]), adding the tick each entity came into that
//! client's view ([`EntityFrame::in_view_since`]).

use std::ops::Range;

use glam::{Quat, Vec3};
use lagcomp::{BoneTransform, EntityId, Tick};
use lagcomp_net::Snapshot;

use crate::codec::{HEADER_BYTES, Reader, Writer, kind};
use crate::error::{DecodeError, EncodeError};
use crate::{MAX_BONES, MAX_MESSAGE_BYTES, MAX_SNAPSHOT_PARTS};

/// One entity at one tick, as a client needs it to draw and to shoot.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityFrame {
    /// The entity (the server's history handle).
    pub id: EntityId,
    /// Alive and hittable.
    pub alive: bool,
    /// The tick of the entity's latest teleport (respawn, teleporter), if it ever had one.
    /// A client compares it with the newest snapshot it holds
    /// ([`EntityFrame::teleported_since`]), so a teleport in a snapshot it never received
    /// still forbids blending across it, as the server's rebuild does.
    pub last_teleport: Option<Tick>,
    /// Spawn-protected: the server records it `invulnerable` and refuses hits on it; an
    /// honest client does not shoot at it. (A server that still turns lag compensation
    /// off instead sets this while `lag_compensated` is off.)
    pub protected: bool,
    /// The tick since which this client has been sent the entity without a break (a
    /// server sending each client only the entities near it), `None` when it sends
    /// everyone. A client holding only older snapshots of the entity drops them rather
    /// than blend across the time it was out of view.
    pub in_view_since: Option<Tick>,
    /// Linear velocity, units per second (for extrapolation only).
    pub velocity: Vec3,
    /// The pose: its bones, or what drives them.
    pub pose: EntityPose,
}

/// What a client draws an entity from.
#[derive(Debug, Clone, PartialEq)]
pub enum EntityPose {
    /// World transforms of the rig's bones, in bone order, exactly as the server recorded
    /// them. At most [`MAX_BONES`]. Scales travel only when some bone is scaled. Any rig.
    Bones(Vec<BoneTransform>),
    /// A humanoid's stance: the client rebuilds its bones (see [`HumanoidStance`]).
    Humanoid(HumanoidStance),
}

/// What drives the pose of `lagcomp serve`'s humanoid (`lagcomp_game::body::Stance`, field
/// for field): its 8 bones are a pure function of these numbers. Sent instead of the
/// bones, it takes 40 bytes instead of 224, so a client's whole view fits one datagram.
///
/// Bit-identical bones on both ends need the same function on the same inputs: the
/// numbers travel as their exact bits, and both ends run `lagcomp_sim`'s pose code, whose
/// `sin`/`cos` are the platform's (Rust's `std` calls the C library's `sinf`/`cosf`,
/// through glam). Server and clients built from this workspace on the same platform
/// agree bit for bit; across platforms whose C libraries round `sin` differently they
/// could differ in the last bit. glam's `libm` feature (a Rust `sin` everywhere) would
/// remove that condition; it is not switched on, since it changes the simulator's
/// numbers and has not been measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HumanoidStance {
    /// Feet position.
    pub position: Vec3,
    /// Facing about +Y, radians.
    pub yaw: f32,
    /// 0 standing, 1 fully crouched.
    pub crouch: f32,
    /// Walk cycle phase, radians.
    pub phase: f32,
    /// The view (the eye bone's rotation before normalising).
    pub aim: Quat,
}

impl EntityPose {
    /// The bones, when they travel as bones.
    #[must_use]
    pub fn bones(&self) -> Option<&[BoneTransform]> {
        match self {
            Self::Bones(bones) => Some(bones),
            Self::Humanoid(_) => None,
        }
    }

    /// Bytes the pose takes in an entity, after its header.
    fn wire_bytes(&self) -> usize {
        match self {
            Self::Bones(bones) => {
                let per_bone = if is_scaled(bones) {
                    SCALED_BONE_BYTES
                } else {
                    BONE_BYTES
                };
                2_usize.saturating_add(bones.len().saturating_mul(per_bone))
            }
            Self::Humanoid(_) => STANCE_BYTES,
        }
    }
}

impl EntityFrame {
    /// Bytes this entity takes in a snapshot part.
    #[must_use]
    pub fn wire_bytes(&self) -> usize {
        let teleport = if self.last_teleport.is_some() { 4 } else { 0 };
        let in_view = if self.in_view_since.is_some() { 4 } else { 0 };
        (ENTITY_HEAD_BYTES + teleport + in_view).saturating_add(self.pose.wire_bytes())
    }

    /// Whether the entity teleported after `newest_held`, the newest tick of this entity
    /// the client holds (`None` before any): then the client must not blend from what it
    /// holds into this frame.
    #[must_use]
    pub fn teleported_since(&self, newest_held: Option<Tick>) -> bool {
        lagcomp_net::teleported_since(self.last_teleport, newest_held)
    }

    /// The frame as a [`lagcomp_net::SnapshotBuffer`] entry at `tick` and `time` (the
    /// part's), moving the bones; `newest_held` is the newest tick of this entity the
    /// client held before this frame (see [`EntityFrame::teleported_since`]). A
    /// [`EntityPose::Humanoid`] frame's bones are `rebuild`'s (the client's copy of the
    /// server's pose function); a [`EntityPose::Bones`] frame does not call it.
    #[must_use]
    pub fn into_snapshot(
        self,
        tick: Tick,
        time: f64,
        newest_held: Option<Tick>,
        rebuild: impl FnOnce(&HumanoidStance) -> Vec<BoneTransform>,
    ) -> Snapshot {
        let teleport = self.teleported_since(newest_held);
        let bones = match self.pose {
            EntityPose::Bones(bones) => bones,
            EntityPose::Humanoid(stance) => rebuild(&stance),
        };
        Snapshot {
            tick,
            time,
            teleport,
            bones,
            velocity: self.velocity,
        }
    }
}

/// One message's share of one tick's snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotPart {
    /// The server tick.
    pub tick: Tick,
    /// The server time of the tick, seconds.
    pub server_time: f64,
    /// This part's index, below `parts`.
    pub part: u8,
    /// How many parts the tick's snapshot was split into.
    pub parts: u8,
    /// The entities in this part.
    pub entities: Vec<EntityFrame>,
}

/// Entity flags on the wire.
const ALIVE: u8 = 1 << 0;
/// The latest teleport's tick follows the velocity.
const TELEPORTED: u8 = 1 << 1;
const PROTECTED: u8 = 1 << 2;
/// Every bone carries its scale (some bone's is not exactly one).
const SCALED: u8 = 1 << 3;
/// The tick it came into the client's view follows (after the teleport tick).
const IN_VIEW: u8 = 1 << 4;
/// A [`HumanoidStance`] follows instead of bones (never with [`SCALED`]).
const HUMANOID: u8 = 1 << 5;

/// Tick, server time, part, parts, entity count.
const PART_HEADER_BYTES: usize = 4 + 8 + 1 + 1 + 2;
/// Id, flags, velocity (and 4 more with a teleport tick, 4 with an in-view tick).
const ENTITY_HEAD_BYTES: usize = 8 + 1 + 12;
/// The smallest entity: its head and a bone count of zero.
const ENTITY_HEADER_BYTES: usize = ENTITY_HEAD_BYTES + 2;
/// Position, yaw, crouch, phase, aim.
const STANCE_BYTES: usize = 12 + 4 + 4 + 4 + 16;
/// Translation and rotation.
const BONE_BYTES: usize = 12 + 16;
/// Translation, rotation and scale.
const SCALED_BONE_BYTES: usize = BONE_BYTES + 12;

/// Whether any bone's scale differs from exactly one (bit for bit), so scales must travel.
fn is_scaled(bones: &[BoneTransform]) -> bool {
    bones
        .iter()
        .any(|b| b.scale.to_array().map(f32::to_bits) != Vec3::ONE.to_array().map(f32::to_bits))
}

impl SnapshotPart {
    /// Bytes of this part as a message, header included.
    #[must_use]
    pub fn wire_bytes(&self) -> usize {
        self.entities
            .iter()
            .map(EntityFrame::wire_bytes)
            .fold(HEADER_BYTES + PART_HEADER_BYTES, usize::saturating_add)
    }

    pub(crate) fn write(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        if self.part >= self.parts {
            return Err(EncodeError::BadPart {
                part: self.part,
                parts: self.parts,
            });
        }
        // Refuse before writing anything: a part over the cap could be huge.
        let len = self.wire_bytes();
        if len > MAX_MESSAGE_BYTES {
            return Err(EncodeError::TooLong {
                len,
                max: MAX_MESSAGE_BYTES,
            });
        }
        write_part(
            w,
            self.tick,
            self.server_time,
            self.part,
            self.parts,
            &self.entities,
        )
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let tick = Tick(r.u32("snapshot.tick")?);
        let server_time = r.f64("snapshot.server_time")?;
        let offset = r.offset();
        let part = r.u8("snapshot.part")?;
        let parts = r.u8("snapshot.parts")?;
        if part >= parts {
            return Err(DecodeError::BadPart {
                offset,
                part,
                parts,
            });
        }
        let count = r.count_u16(
            "snapshot.entities.count",
            "snapshot.entities",
            usize::MAX,
            ENTITY_HEADER_BYTES,
        )?;
        let mut entities = Vec::with_capacity(count);
        for _ in 0..count {
            entities.push(read_entity(r)?);
        }
        Ok(Self {
            tick,
            server_time,
            part,
            parts,
            entities,
        })
    }
}

fn write_part(
    w: &mut Writer<'_>,
    tick: Tick,
    server_time: f64,
    part: u8,
    parts: u8,
    entities: &[EntityFrame],
) -> Result<(), EncodeError> {
    w.u32(tick.0);
    w.f64(server_time, "snapshot.server_time")?;
    w.u8(part);
    w.u8(parts);
    let count = u16::try_from(entities.len()).map_err(|_| EncodeError::TooMany {
        field: "snapshot.entities",
        count: entities.len(),
        max: usize::from(u16::MAX),
    })?;
    w.u16(count);
    for entity in entities {
        write_entity(w, entity)?;
    }
    Ok(())
}

fn write_entity(w: &mut Writer<'_>, entity: &EntityFrame) -> Result<(), EncodeError> {
    write_entity_with(w, entity, entity.in_view_since)
}

/// Writes `entity` as if its [`EntityFrame::in_view_since`] were `in_view_since`.
fn write_entity_with(
    w: &mut Writer<'_>,
    entity: &EntityFrame,
    in_view_since: Option<Tick>,
) -> Result<(), EncodeError> {
    let (scaled, humanoid) = match &entity.pose {
        EntityPose::Bones(bones) => {
            if bones.len() > MAX_BONES {
                return Err(EncodeError::TooMany {
                    field: "snapshot.entities.bones",
                    count: bones.len(),
                    max: MAX_BONES,
                });
            }
            (is_scaled(bones), false)
        }
        EntityPose::Humanoid(_) => (false, true),
    };
    let flags = [
        (entity.alive, ALIVE),
        (entity.last_teleport.is_some(), TELEPORTED),
        (entity.protected, PROTECTED),
        (scaled, SCALED),
        (in_view_since.is_some(), IN_VIEW),
        (humanoid, HUMANOID),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .fold(0, |bits, (_, bit)| bits | bit);
    w.u64(entity.id.to_bits());
    w.u8(flags);
    w.vec3(entity.velocity, "snapshot.entities.velocity")?;
    if let Some(tick) = entity.last_teleport {
        w.u32(tick.0);
    }
    if let Some(tick) = in_view_since {
        w.u32(tick.0);
    }
    match &entity.pose {
        EntityPose::Bones(bones) => {
            // At most MAX_BONES, checked above.
            w.u16(bones.len() as u16);
            for bone in bones {
                w.vec3(bone.translation, "snapshot.entities.bones.translation")?;
                w.quat(bone.rotation, "snapshot.entities.bones.rotation")?;
                if scaled {
                    w.vec3(bone.scale, "snapshot.entities.bones.scale")?;
                }
            }
        }
        EntityPose::Humanoid(stance) => {
            w.vec3(stance.position, "snapshot.entities.stance.position")?;
            w.f32(stance.yaw, "snapshot.entities.stance.yaw")?;
            w.f32(stance.crouch, "snapshot.entities.stance.crouch")?;
            w.f32(stance.phase, "snapshot.entities.stance.phase")?;
            w.quat(stance.aim, "snapshot.entities.stance.aim")?;
        }
    }
    Ok(())
}

fn read_entity(r: &mut Reader<'_>) -> Result<EntityFrame, DecodeError> {
    let id = EntityId::from_bits(r.u64("snapshot.entities.id")?);
    let flags_offset = r.offset();
    let flags = r.flags(
        "snapshot.entities.flags",
        ALIVE | TELEPORTED | PROTECTED | SCALED | IN_VIEW | HUMANOID,
    )?;
    if flags & SCALED != 0 && flags & HUMANOID != 0 {
        // A stance has no scales to announce.
        return Err(DecodeError::BadFlags {
            offset: flags_offset,
            field: "snapshot.entities.flags",
            bits: flags,
        });
    }
    let velocity = r.vec3("snapshot.entities.velocity")?;
    let last_teleport = if flags & TELEPORTED != 0 {
        Some(Tick(r.u32("snapshot.entities.last_teleport")?))
    } else {
        None
    };
    let in_view_since = if flags & IN_VIEW != 0 {
        Some(Tick(r.u32("snapshot.entities.in_view_since")?))
    } else {
        None
    };
    let pose = if flags & HUMANOID != 0 {
        EntityPose::Humanoid(HumanoidStance {
            position: r.vec3("snapshot.entities.stance.position")?,
            yaw: r.f32("snapshot.entities.stance.yaw")?,
            crouch: r.f32("snapshot.entities.stance.crouch")?,
            phase: r.f32("snapshot.entities.stance.phase")?,
            aim: r.quat("snapshot.entities.stance.aim")?,
        })
    } else {
        EntityPose::Bones(read_bones(r, flags & SCALED != 0, flags_offset)?)
    };
    Ok(EntityFrame {
        id,
        alive: flags & ALIVE != 0,
        last_teleport,
        protected: flags & PROTECTED != 0,
        in_view_since,
        velocity,
        pose,
    })
}

/// An entity's bones, scaled or not; `flags_offset` is where its flags byte was.
fn read_bones(
    r: &mut Reader<'_>,
    scaled: bool,
    flags_offset: usize,
) -> Result<Vec<BoneTransform>, DecodeError> {
    let count = r.count_u16(
        "snapshot.entities.bones.count",
        "snapshot.entities.bones",
        MAX_BONES,
        if scaled {
            SCALED_BONE_BYTES
        } else {
            BONE_BYTES
        },
    )?;
    let mut bones = Vec::with_capacity(count);
    for _ in 0..count {
        let translation = r.vec3("snapshot.entities.bones.translation")?;
        let rotation = r.quat("snapshot.entities.bones.rotation")?;
        let scale = if scaled {
            r.vec3("snapshot.entities.bones.scale")?
        } else {
            Vec3::ONE
        };
        bones.push(BoneTransform {
            translation,
            rotation,
            scale,
        });
    }
    if scaled && !is_scaled(&bones) {
        // The encoder leaves scales out when all are one; only one encoding is valid.
        return Err(DecodeError::NonCanonical {
            offset: flags_offset,
            field: "snapshot.entities.flags",
        });
    }
    Ok(bones)
}

/// Splits a whole world's snapshot into parts that each fit a byte budget, encoding them
/// back to back into a buffer it keeps, so a server that holds one encoder allocates
/// nothing per tick once the buffer has grown.
///
/// Entities are packed greedily in the order given; an entity bigger than the budget on
/// its own gets a part of its own (up to [`MAX_MESSAGE_BYTES`], which renet then sends in
/// slices). An empty world is one part with no entities, so clients still learn the tick.
///
/// ```
/// use lagcomp::{BoneTransform, EntityId, Tick, Vec3};
/// use lagcomp_wire::{EntityFrame, EntityPose, ServerMessage, SnapshotEncoder};
///
/// let entities: Vec<EntityFrame> = (0..16)
///     .map(|i| EntityFrame {
///         id: EntityId::from_bits(i),
///         alive: true,
///         last_teleport: None,
///         protected: false,
///         in_view_since: None,
///         velocity: Vec3::X,
///         pose: EntityPose::Bones(vec![BoneTransform::IDENTITY; 15]),
///     })
///     .collect();
/// let mut encoder = SnapshotEncoder::default();
/// let mut received = Vec::new();
/// for bytes in encoder.encode(Tick(7), 0.109375, &entities)? {
///     assert!(bytes.len() <= SnapshotEncoder::DEFAULT_BUDGET);
///     let ServerMessage::Snapshot(part) = ServerMessage::decode(bytes)? else { panic!() };
///     received.extend(part.entities);
/// }
/// assert_eq!(received, entities);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SnapshotEncoder {
    budget: usize,
    buffer: Vec<u8>,
    /// Entities per part, as index ranges into the world.
    groups: Vec<Range<usize>>,
    /// Each part's bytes in `buffer`.
    parts: Vec<Range<usize>>,
}

impl SnapshotEncoder {
    /// The default part budget, bytes: renet sends a message over 1200 bytes in slices, and
    /// an unreliable message is lost with any one of its slices, so a part that fits one
    /// packet (with renet's and netcode's own headers) survives loss best.
    pub const DEFAULT_BUDGET: usize = 1100;

    /// The smallest budget: a message header, a part header and one entity with no bones.
    pub const MIN_BUDGET: usize = HEADER_BYTES + PART_HEADER_BYTES + ENTITY_HEADER_BYTES;

    /// An encoder whose parts are at most `budget` bytes (but see the type's docs for an
    /// entity bigger than that).
    ///
    /// # Errors
    /// [`EncodeError::Budget`] outside [`Self::MIN_BUDGET`]`..=`[`MAX_MESSAGE_BYTES`].
    pub fn new(budget: usize) -> Result<Self, EncodeError> {
        if !(Self::MIN_BUDGET..=MAX_MESSAGE_BYTES).contains(&budget) {
            return Err(EncodeError::Budget {
                budget,
                min: Self::MIN_BUDGET,
                max: MAX_MESSAGE_BYTES,
            });
        }
        Ok(Self {
            budget,
            buffer: Vec::new(),
            groups: Vec::new(),
            parts: Vec::new(),
        })
    }

    /// The part budget, bytes.
    #[must_use]
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Encodes `entities` at `tick` and `server_time` into as few parts as the budget
    /// allows; each item of the result is one message's bytes.
    ///
    /// # Errors
    /// A non-finite number or an entity with over [`MAX_BONES`] bones; a world that needs
    /// more than [`MAX_SNAPSHOT_PARTS`] parts. Nothing is encoded then.
    pub fn encode(
        &mut self,
        tick: Tick,
        server_time: f64,
        entities: &[EntityFrame],
    ) -> Result<SnapshotParts<'_>, EncodeError> {
        self.clear();
        let result = self.encode_parts(tick, server_time, entities);
        self.finish(result)
    }

    /// Forgets the previous encoding.
    fn clear(&mut self) {
        self.buffer.clear();
        self.groups.clear();
        self.parts.clear();
    }

    /// The parts just encoded, or nothing if encoding failed.
    fn finish(
        &mut self,
        result: Result<(), EncodeError>,
    ) -> Result<SnapshotParts<'_>, EncodeError> {
        if result.is_err() {
            self.clear();
        }
        result.map(|()| SnapshotParts {
            buffer: &self.buffer,
            parts: self.parts.iter(),
        })
    }

    /// Packs entities of these encoded sizes greedily into parts under the budget (each
    /// part takes at least one entity), as index ranges into `self.groups`; returns how many
    /// parts. The first size that is an error is returned as it is.
    fn group(
        &mut self,
        sizes: impl Iterator<Item = Result<usize, EncodeError>>,
    ) -> Result<u8, EncodeError> {
        let empty = HEADER_BYTES + PART_HEADER_BYTES;
        let (mut start, mut size, mut count) = (0, empty, 0);
        for (i, bytes) in sizes.enumerate() {
            let bytes = bytes?;
            if i > start && size + bytes > self.budget {
                self.groups.push(start..i);
                start = i;
                size = empty;
            }
            size += bytes;
            count = i + 1;
        }
        self.groups.push(start..count);
        u8::try_from(self.groups.len())
            .ok()
            .filter(|&n| usize::from(n) <= MAX_SNAPSHOT_PARTS)
            .ok_or(EncodeError::TooMany {
                field: "snapshot parts",
                count: self.groups.len(),
                max: MAX_SNAPSHOT_PARTS,
            })
    }

    fn encode_parts(
        &mut self,
        tick: Tick,
        server_time: f64,
        entities: &[EntityFrame],
    ) -> Result<(), EncodeError> {
        let parts = self.group(entities.iter().map(|entity| {
            if let EntityPose::Bones(bones) = &entity.pose
                && bones.len() > MAX_BONES
            {
                return Err(EncodeError::TooMany {
                    field: "snapshot.entities.bones",
                    count: bones.len(),
                    max: MAX_BONES,
                });
            }
            Ok(entity.wire_bytes())
        }))?;
        for (part, group) in self.groups.iter().enumerate() {
            let begin = self.buffer.len();
            let mut w = Writer::append(&mut self.buffer, kind::SNAPSHOT);
            // `part < parts <= 255`.
            write_part(
                &mut w,
                tick,
                server_time,
                part as u8,
                parts,
                &entities[group.clone()],
            )?;
            w.finish()?;
            self.parts.push(begin..self.buffer.len());
        }
        Ok(())
    }
}

impl SnapshotEncoder {
    /// Encodes one client's view of a tick: the entities of `world` at the indices `view`
    /// names, in that order, each with the tick it came into this client's view (its
    /// [`EntityFrame::in_view_since`]), packed into as few parts as the budget allows,
    /// exactly as [`SnapshotEncoder::encode`] would pack the same frames. Only bytes are
    /// copied: the entities were encoded once, for every client, by
    /// [`EncodedEntities::encode`].
    ///
    /// # Errors
    /// [`EncodeError::UnknownEntity`] for an index past the world's entities, a view that
    /// needs more than [`MAX_SNAPSHOT_PARTS`] parts or more than `u16::MAX` entities in a
    /// part. Nothing is encoded then.
    pub fn encode_view<I>(
        &mut self,
        world: &EncodedEntities,
        view: I,
    ) -> Result<SnapshotParts<'_>, EncodeError>
    where
        I: IntoIterator<Item = (usize, Option<Tick>)>,
        I::IntoIter: Clone,
    {
        self.clear();
        let result = self.encode_view_parts(world, view.into_iter());
        self.finish(result)
    }

    fn encode_view_parts(
        &mut self,
        world: &EncodedEntities,
        view: impl Iterator<Item = (usize, Option<Tick>)> + Clone,
    ) -> Result<(), EncodeError> {
        // The same greedy packing as `encode_parts`, over positions in the view.
        let parts = self.group(view.clone().map(|(index, since)| {
            let entity = world
                .entities
                .get(index)
                .ok_or(EncodeError::UnknownEntity {
                    index,
                    len: world.entities.len(),
                })?;
            Ok(entity.bytes.len() + if since.is_some() { 4 } else { 0 })
        }))?;
        let mut view = view;
        for (part, group) in self.groups.iter().enumerate() {
            let begin = self.buffer.len();
            let entities = u16::try_from(group.len()).map_err(|_| EncodeError::TooMany {
                field: "snapshot.entities",
                count: group.len(),
                max: usize::from(u16::MAX),
            })?;
            let mut w = Writer::append(&mut self.buffer, kind::SNAPSHOT);
            w.u32(world.tick.0);
            w.f64(world.server_time, "snapshot.server_time")?;
            // `part < parts <= 255`.
            w.u8(part as u8);
            w.u8(parts);
            w.u16(entities);
            for (index, since) in view.by_ref().take(group.len()) {
                // Checked in the first pass.
                let entity = &world.entities[index];
                let bytes = &world.bytes[entity.bytes.clone()];
                match since {
                    None => w.bytes(bytes),
                    Some(since) => {
                        // The flags byte gains IN_VIEW and the tick goes in after the
                        // teleport tick: the layout `write_entity` writes.
                        let (head, pose) = bytes.split_at(entity.in_view_at);
                        w.bytes(&head[..FLAGS_AT]);
                        w.u8(head[FLAGS_AT] | IN_VIEW);
                        w.bytes(&head[FLAGS_AT + 1..]);
                        w.u32(since.0);
                        w.bytes(pose);
                    }
                }
            }
            w.finish()?;
            self.parts.push(begin..self.buffer.len());
        }
        Ok(())
    }
}

/// Where an entity's flags byte is in its encoding (after its id).
const FLAGS_AT: usize = 8;

/// One tick's entities, each encoded once (without [`EntityFrame::in_view_since`]), for
/// [`SnapshotEncoder::encode_view`] to pack into every client's view. Keeps its buffers:
/// a server that holds one allocates nothing per tick once they have grown.
///
/// ```
/// use lagcomp::{BoneTransform, EntityId, Tick, Vec3};
/// use lagcomp_wire::{EncodedEntities, EntityFrame, EntityPose, ServerMessage, SnapshotEncoder};
///
/// let world: Vec<EntityFrame> = (0..6)
///     .map(|i| EntityFrame {
///         id: EntityId::from_bits(i),
///         alive: true,
///         last_teleport: None,
///         protected: false,
///         in_view_since: None,
///         velocity: Vec3::X,
///         pose: EntityPose::Bones(vec![BoneTransform::IDENTITY; 8]),
///     })
///     .collect();
/// let mut encoded = EncodedEntities::default();
/// encoded.encode(Tick(40), 0.625, &world)?;
/// // One client sees entities 4 and 1, the second since tick 31.
/// let mut encoder = SnapshotEncoder::default();
/// let parts: Vec<Vec<u8>> = encoder
///     .encode_view(&encoded, [(4, None), (1, Some(Tick(31)))])?
///     .map(<[u8]>::to_vec)
///     .collect();
/// let ServerMessage::Snapshot(part) = ServerMessage::decode(&parts[0])? else { panic!() };
/// assert_eq!(part.entities[0], world[4]);
/// assert_eq!(part.entities[1].in_view_since, Some(Tick(31)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct EncodedEntities {
    tick: Tick,
    server_time: f64,
    bytes: Vec<u8>,
    entities: Vec<EncodedEntity>,
}

/// One entity's bytes in [`EncodedEntities`].
#[derive(Debug, Clone)]
struct EncodedEntity {
    bytes: Range<usize>,
    /// Where, within them, the in-view tick goes: after the teleport tick.
    in_view_at: usize,
}

impl EncodedEntities {
    /// Encodes `entities` (their `in_view_since` is left out: each client's view adds its
    /// own) at `tick` and `server_time`, replacing what was held.
    ///
    /// # Errors
    /// A non-finite number, an entity with more than [`MAX_BONES`] bones. Nothing is held
    /// then.
    pub fn encode(
        &mut self,
        tick: Tick,
        server_time: f64,
        entities: &[EntityFrame],
    ) -> Result<(), EncodeError> {
        self.bytes.clear();
        self.entities.clear();
        let result = self.encode_all(tick, server_time, entities);
        if result.is_err() {
            self.bytes.clear();
            self.entities.clear();
        }
        result
    }

    fn encode_all(
        &mut self,
        tick: Tick,
        server_time: f64,
        entities: &[EntityFrame],
    ) -> Result<(), EncodeError> {
        if !server_time.is_finite() {
            return Err(EncodeError::NonFinite {
                field: "snapshot.server_time",
            });
        }
        self.tick = tick;
        self.server_time = server_time;
        for entity in entities {
            let begin = self.bytes.len();
            let mut w = Writer::continue_at(&mut self.bytes);
            write_entity_with(&mut w, entity, None)?;
            let teleport = if entity.last_teleport.is_some() { 4 } else { 0 };
            self.entities.push(EncodedEntity {
                bytes: begin..self.bytes.len(),
                in_view_at: FLAGS_AT + 1 + 12 + teleport,
            });
        }
        Ok(())
    }

    /// Entities held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether none are held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }
}

impl Default for SnapshotEncoder {
    /// An encoder with [`SnapshotEncoder::DEFAULT_BUDGET`].
    fn default() -> Self {
        Self {
            budget: Self::DEFAULT_BUDGET,
            buffer: Vec::new(),
            groups: Vec::new(),
            parts: Vec::new(),
        }
    }
}

/// The encoded parts of one snapshot, in order: one message's bytes each.
#[derive(Debug, Clone)]
pub struct SnapshotParts<'a> {
    buffer: &'a [u8],
    parts: std::slice::Iter<'a, Range<usize>>,
}

impl<'a> Iterator for SnapshotParts<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let range = self.parts.next()?;
        self.buffer.get(range.clone())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.parts.size_hint()
    }
}

impl ExactSizeIterator for SnapshotParts<'_> {}
