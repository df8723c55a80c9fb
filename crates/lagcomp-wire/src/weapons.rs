//! Claims of every weapon kind in a client's [`crate::Input`] (version 6): a kind byte,
//! then the kind's claim, each array encoded only as far as it is used.
//!
//! | kind | claim | body after the common head (shooter, weapon, seq, render time) |
//! | --- | --- | --- |
//! | `0` | hitscan | as in `shots` |
//! | `1` | projectile hit | origin, direction, step `u32`, target (tag `0`: entity `u64` + hitbox `u16`; tag `1`: static piece `u64`), position |
//! | `2` | pellets | origin, direction, seed `u64`, pellets fired `u8`, hits `u8` × (pellet index `u8`, flags, target `u64`, \[hitbox `u16`\]) |
//! | `3` | melee | eye, aim, sweep (start pose, shape, path), hit as in `shots` |
//! | `4` | splash | origin, direction, blast point, victims `u8` × (slot `u8`, entity `u64`) |
//! | `5` | penetration | origin, direction, layers `u8` × (slot `u8`, tag: `0` any wall, `1` wall + piece `u64`, `2` body + entity `u64`, `3` body + entity `u64` + hitbox `u16`) |
//!
//! Kind bytes are open-ended: a kind this build does not know is an
//! [`DecodeError::UnknownTag`], as are unknown shape and path tags.

use lagcomp::projectile::ClaimedTarget;
use lagcomp::spread::MAX_PELLETS;
use lagcomp::{
    Axis, EntityId, HitboxId, PlacedShape, Pose, Shape, ShapeSweep, StaticId, SweepPath, Swing,
    Vec3,
};
use lagcomp_validate::pellets::{PelletClaim, PelletTarget};
use lagcomp_validate::penetration::{ClaimedLayer, MAX_PENETRATION_LAYERS, PenetrationClaim};
use lagcomp_validate::projectile::ProjectileHitClaim;
use lagcomp_validate::splash::{MAX_VICTIMS, SplashClaim};
use lagcomp_validate::{MeleeClaim, WeaponClaim};

use crate::MAX_SHOTS_PER_INPUT;
use crate::client::{
    AimFields, Head, SHOT_AIM, read_claim, read_head, read_hit, write_claim, write_head, write_hit,
};
use crate::codec::{Reader, Writer};
use crate::error::{DecodeError, EncodeError};

/// The protocol version whose inputs carry `weapon_shots`.
pub(crate) const WEAPON_SHOTS_SINCE: u16 = 6;

const KIND_HITSCAN: u8 = 0;
const KIND_PROJECTILE: u8 = 1;
const KIND_PELLETS: u8 = 2;
const KIND_MELEE: u8 = 3;
const KIND_SPLASH: u8 = 4;
const KIND_PENETRATION: u8 = 5;

const LAYER_ANY_WALL: u8 = 0;
const LAYER_WALL: u8 = 1;
const LAYER_BODY: u8 = 2;
const LAYER_BODY_HITBOX: u8 = 3;

const TARGET_ENTITY: u8 = 0;
const TARGET_STATIC: u8 = 1;

const PELLET_HITBOX: u8 = 1 << 0;

const SHAPE_SPHERE: u8 = 0;
const SHAPE_BOX: u8 = 1;
const SHAPE_CAPSULE: u8 = 2;

const PATH_LINE: u8 = 0;
const PATH_ARC: u8 = 1;

/// A blade's two vectors, where a shot has its origin and direction.
const MELEE_AIM: AimFields = [
    "input.weapon_shots.melee.eye",
    "input.weapon_shots.melee.aim",
];

/// The fewest bytes a weapon shot takes: its sequence number, kind byte and the common
/// head (shooter, weapon, seq, a tick stamp).
const MIN_WEAPON_SHOT_BYTES: usize = 4 + 1 + 8 + 2 + 4 + 1 + 8;

/// The fewest bytes a pellet hit or a victim takes.
const MIN_SLOT_BYTES: usize = 1 + 8;

/// The fewest bytes a penetration layer takes: its slot and tag (a wall of any id).
const MIN_LAYER_BYTES: usize = 1 + 1;

pub(crate) fn write_weapon_shots(
    w: &mut Writer<'_>,
    shots: &[(u32, WeaponClaim)],
) -> Result<(), EncodeError> {
    if shots.len() > MAX_SHOTS_PER_INPUT {
        return Err(EncodeError::TooMany {
            field: "input.weapon_shots",
            count: shots.len(),
            max: MAX_SHOTS_PER_INPUT,
        });
    }
    // The cap is far below 256: one byte.
    w.u8(shots.len() as u8);
    for (seq, claim) in shots {
        w.u32(*seq);
        write_weapon_claim(w, claim)?;
    }
    Ok(())
}

pub(crate) fn read_weapon_shots(
    r: &mut Reader<'_>,
) -> Result<Vec<(u32, WeaponClaim)>, DecodeError> {
    let count = r.count_u8(
        "input.weapon_shots.count",
        "input.weapon_shots",
        MAX_SHOTS_PER_INPUT,
        MIN_WEAPON_SHOT_BYTES,
    )?;
    let mut shots = Vec::with_capacity(count);
    for _ in 0..count {
        let seq = r.u32("input.weapon_shots.seq")?;
        shots.push((seq, read_weapon_claim(r)?));
    }
    Ok(shots)
}

fn write_weapon_claim(w: &mut Writer<'_>, claim: &WeaponClaim) -> Result<(), EncodeError> {
    match claim {
        WeaponClaim::Hitscan(shot) => {
            w.u8(KIND_HITSCAN);
            write_claim(w, shot)
        }
        WeaponClaim::Projectile(hit) => {
            w.u8(KIND_PROJECTILE);
            let head = Head {
                shooter: hit.shooter,
                weapon: hit.weapon,
                seq: hit.seq,
                render_time: hit.render_time,
                from: hit.origin,
                toward: hit.direction,
            };
            write_head(w, &head, SHOT_AIM)?;
            w.u32(hit.step);
            match hit.target {
                ClaimedTarget::Entity { entity, hitbox } => {
                    w.u8(TARGET_ENTITY);
                    w.u64(entity.to_bits());
                    w.u16(hitbox.0);
                }
                ClaimedTarget::Static(piece) => {
                    w.u8(TARGET_STATIC);
                    w.u64(piece.0);
                }
            }
            w.vec3(hit.position, "input.weapon_shots.projectile.position")
        }
        WeaponClaim::Pellets(shot) => {
            w.u8(KIND_PELLETS);
            let head = Head {
                shooter: shot.shooter,
                weapon: shot.weapon,
                seq: shot.seq,
                render_time: shot.render_time,
                from: shot.origin,
                toward: shot.direction,
            };
            write_head(w, &head, SHOT_AIM)?;
            w.u64(shot.seed);
            if usize::from(shot.pellets) > MAX_PELLETS {
                return Err(EncodeError::Invalid {
                    field: "input.weapon_shots.pellets.pellets",
                    reason: "more pellets than a shot fires",
                });
            }
            w.u8(shot.pellets);
            // At most MAX_PELLETS (32): one byte.
            w.u8(shot.hits.iter().flatten().count() as u8);
            for (index, hit) in shot.hits.iter().enumerate() {
                let Some(hit) = hit else { continue };
                w.u8(index as u8);
                w.u8(if hit.hitbox.is_some() {
                    PELLET_HITBOX
                } else {
                    0
                });
                w.u64(hit.target.to_bits());
                if let Some(hitbox) = hit.hitbox {
                    w.u16(hitbox.0);
                }
            }
            Ok(())
        }
        WeaponClaim::Melee(strike) => {
            w.u8(KIND_MELEE);
            let head = Head {
                shooter: strike.shooter,
                weapon: strike.weapon,
                seq: strike.seq,
                render_time: strike.render_time,
                from: strike.eye,
                toward: strike.aim,
            };
            write_head(w, &head, MELEE_AIM)?;
            write_sweep(w, &strike.sweep)?;
            write_hit(w, strike.hit)
        }
        WeaponClaim::Splash(blast) => {
            w.u8(KIND_SPLASH);
            let head = Head {
                shooter: blast.shooter,
                weapon: blast.weapon,
                seq: blast.seq,
                render_time: blast.render_time,
                from: blast.origin,
                toward: blast.direction,
            };
            write_head(w, &head, SHOT_AIM)?;
            w.vec3(blast.blast, "input.weapon_shots.splash.blast")?;
            // At most MAX_VICTIMS (16): one byte.
            w.u8(blast.victims.iter().flatten().count() as u8);
            for (slot, victim) in blast.victims.iter().enumerate() {
                let Some(victim) = victim else { continue };
                w.u8(slot as u8);
                w.u64(victim.to_bits());
            }
            Ok(())
        }
        WeaponClaim::Penetration(round) => {
            w.u8(KIND_PENETRATION);
            let head = Head {
                shooter: round.shooter,
                weapon: round.weapon,
                seq: round.seq,
                render_time: round.render_time,
                from: round.origin,
                toward: round.direction,
            };
            write_head(w, &head, SHOT_AIM)?;
            // At most MAX_PENETRATION_LAYERS (8): one byte.
            w.u8(round.layers.iter().flatten().count() as u8);
            for (slot, layer) in round.layers.iter().enumerate() {
                let Some(layer) = layer else { continue };
                w.u8(slot as u8);
                match *layer {
                    ClaimedLayer::Wall { piece: None } => w.u8(LAYER_ANY_WALL),
                    ClaimedLayer::Wall { piece: Some(piece) } => {
                        w.u8(LAYER_WALL);
                        w.u64(piece.0);
                    }
                    ClaimedLayer::Body {
                        target,
                        hitbox: None,
                    } => {
                        w.u8(LAYER_BODY);
                        w.u64(target.to_bits());
                    }
                    ClaimedLayer::Body {
                        target,
                        hitbox: Some(hitbox),
                    } => {
                        w.u8(LAYER_BODY_HITBOX);
                        w.u64(target.to_bits());
                        w.u16(hitbox.0);
                    }
                }
            }
            Ok(())
        }
    }
}

fn read_weapon_claim(r: &mut Reader<'_>) -> Result<WeaponClaim, DecodeError> {
    let offset = r.offset();
    Ok(match r.u8("input.weapon_shots.kind")? {
        KIND_HITSCAN => WeaponClaim::Hitscan(read_claim(r)?),
        KIND_PROJECTILE => {
            let Head {
                shooter,
                weapon,
                seq,
                render_time,
                from: origin,
                toward: direction,
            } = read_head(r, SHOT_AIM)?;
            let step = r.u32("input.weapon_shots.projectile.step")?;
            let offset = r.offset();
            let target = match r.u8("input.weapon_shots.projectile.target")? {
                TARGET_ENTITY => ClaimedTarget::Entity {
                    entity: EntityId::from_bits(r.u64("input.weapon_shots.projectile.entity")?),
                    hitbox: HitboxId(r.u16("input.weapon_shots.projectile.hitbox")?),
                },
                TARGET_STATIC => {
                    ClaimedTarget::Static(StaticId(r.u64("input.weapon_shots.projectile.static")?))
                }
                tag => {
                    return Err(DecodeError::UnknownTag {
                        offset,
                        field: "input.weapon_shots.projectile.target",
                        tag,
                    });
                }
            };
            WeaponClaim::Projectile(ProjectileHitClaim {
                shooter,
                weapon,
                seq,
                render_time,
                origin,
                direction,
                step,
                target,
                position: r.vec3("input.weapon_shots.projectile.position")?,
            })
        }
        KIND_PELLETS => {
            let Head {
                shooter,
                weapon,
                seq,
                render_time,
                from: origin,
                toward: direction,
            } = read_head(r, SHOT_AIM)?;
            let seed = r.u64("input.weapon_shots.pellets.seed")?;
            let offset = r.offset();
            let pellets = r.u8("input.weapon_shots.pellets.pellets")?;
            if usize::from(pellets) > MAX_PELLETS {
                return Err(DecodeError::Invalid {
                    offset,
                    field: "input.weapon_shots.pellets.pellets",
                    reason: "more pellets than a shot fires",
                });
            }
            let count = r.count_u8(
                "input.weapon_shots.pellets.hits.count",
                "input.weapon_shots.pellets.hits",
                MAX_PELLETS,
                MIN_SLOT_BYTES,
            )?;
            let mut hits = [None; MAX_PELLETS];
            read_slots(
                r,
                count,
                MAX_PELLETS,
                "input.weapon_shots.pellets.hits.index",
                |r, index| {
                    let flags = r.flags("input.weapon_shots.pellets.hits.flags", PELLET_HITBOX)?;
                    let target =
                        EntityId::from_bits(r.u64("input.weapon_shots.pellets.hits.target")?);
                    let hitbox = if flags & PELLET_HITBOX != 0 {
                        Some(HitboxId(r.u16("input.weapon_shots.pellets.hits.hitbox")?))
                    } else {
                        None
                    };
                    hits[index] = Some(PelletTarget { target, hitbox });
                    Ok(())
                },
            )?;
            WeaponClaim::Pellets(PelletClaim {
                shooter,
                weapon,
                seq,
                render_time,
                origin,
                direction,
                seed,
                pellets,
                hits,
            })
        }
        KIND_MELEE => {
            let Head {
                shooter,
                weapon,
                seq,
                render_time,
                from: eye,
                toward: aim,
            } = read_head(r, MELEE_AIM)?;
            let sweep = read_sweep(r)?;
            WeaponClaim::Melee(MeleeClaim {
                shooter,
                weapon,
                seq,
                render_time,
                eye,
                aim,
                sweep,
                hit: read_hit(r)?,
            })
        }
        KIND_SPLASH => {
            let Head {
                shooter,
                weapon,
                seq,
                render_time,
                from: origin,
                toward: direction,
            } = read_head(r, SHOT_AIM)?;
            let blast = r.vec3("input.weapon_shots.splash.blast")?;
            let count = r.count_u8(
                "input.weapon_shots.splash.victims.count",
                "input.weapon_shots.splash.victims",
                MAX_VICTIMS,
                MIN_SLOT_BYTES,
            )?;
            let mut victims = [None; MAX_VICTIMS];
            read_slots(
                r,
                count,
                MAX_VICTIMS,
                "input.weapon_shots.splash.victims.slot",
                |r, slot| {
                    victims[slot] = Some(EntityId::from_bits(
                        r.u64("input.weapon_shots.splash.victims.entity")?,
                    ));
                    Ok(())
                },
            )?;
            WeaponClaim::Splash(SplashClaim {
                shooter,
                weapon,
                seq,
                render_time,
                origin,
                direction,
                blast,
                victims,
            })
        }
        KIND_PENETRATION => {
            let Head {
                shooter,
                weapon,
                seq,
                render_time,
                from: origin,
                toward: direction,
            } = read_head(r, SHOT_AIM)?;
            let count = r.count_u8(
                "input.weapon_shots.penetration.layers.count",
                "input.weapon_shots.penetration.layers",
                MAX_PENETRATION_LAYERS,
                MIN_LAYER_BYTES,
            )?;
            let mut layers = [None; MAX_PENETRATION_LAYERS];
            read_slots(
                r,
                count,
                MAX_PENETRATION_LAYERS,
                "input.weapon_shots.penetration.layers.slot",
                |r, slot| {
                    let offset = r.offset();
                    let field = "input.weapon_shots.penetration.layers.target";
                    layers[slot] =
                        Some(match r.u8("input.weapon_shots.penetration.layers.tag")? {
                            LAYER_ANY_WALL => ClaimedLayer::Wall { piece: None },
                            LAYER_WALL => ClaimedLayer::Wall {
                                piece: Some(StaticId(r.u64(field)?)),
                            },
                            LAYER_BODY => ClaimedLayer::Body {
                                target: EntityId::from_bits(r.u64(field)?),
                                hitbox: None,
                            },
                            LAYER_BODY_HITBOX => ClaimedLayer::Body {
                                target: EntityId::from_bits(r.u64(field)?),
                                hitbox: Some(HitboxId(
                                    r.u16("input.weapon_shots.penetration.layers.hitbox")?,
                                )),
                            },
                            tag => {
                                return Err(DecodeError::UnknownTag {
                                    offset,
                                    field: "input.weapon_shots.penetration.layers.tag",
                                    tag,
                                });
                            }
                        });
                    Ok(())
                },
            )?;
            WeaponClaim::Penetration(PenetrationClaim {
                shooter,
                weapon,
                seq,
                render_time,
                origin,
                direction,
                layers,
            })
        }
        tag => {
            return Err(DecodeError::UnknownTag {
                offset,
                field: "input.weapon_shots.kind",
                tag,
            });
        }
    })
}

/// Reads `count` slot indices of a fixed array of `len` slots, each strictly after the
/// one before (so a slot is named once, and a claim has one encoding), and hands each to
/// `read` to fill.
fn read_slots(
    r: &mut Reader<'_>,
    count: usize,
    len: usize,
    field: &'static str,
    mut read: impl FnMut(&mut Reader<'_>, usize) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let mut next = 0;
    for _ in 0..count {
        let offset = r.offset();
        let index = usize::from(r.u8(field)?);
        if index < next || index >= len {
            return Err(DecodeError::Invalid {
                offset,
                field,
                reason: "out of order or past the array",
            });
        }
        next = index + 1;
        read(r, index)?;
    }
    Ok(())
}

fn write_sweep(w: &mut Writer<'_>, sweep: &ShapeSweep) -> Result<(), EncodeError> {
    let start = sweep.start();
    w.vec3(
        start.pose.translation,
        "input.weapon_shots.melee.sweep.position",
    )?;
    w.quat(
        start.pose.rotation,
        "input.weapon_shots.melee.sweep.rotation",
    )?;
    match start.shape {
        Shape::Sphere { radius } => {
            w.u8(SHAPE_SPHERE);
            w.f32(radius, "input.weapon_shots.melee.sweep.radius")?;
        }
        Shape::Box { half_extents } => {
            w.u8(SHAPE_BOX);
            w.vec3(half_extents, "input.weapon_shots.melee.sweep.half_extents")?;
        }
        Shape::Capsule {
            radius,
            half_height,
            axis,
        } => {
            w.u8(SHAPE_CAPSULE);
            w.f32(radius, "input.weapon_shots.melee.sweep.radius")?;
            w.f32(half_height, "input.weapon_shots.melee.sweep.half_height")?;
            w.u8(match axis {
                Axis::X => 0,
                Axis::Y => 1,
                Axis::Z => 2,
            });
        }
    }
    match sweep.path() {
        SweepPath::Line {
            direction,
            distance,
        } => {
            w.u8(PATH_LINE);
            let direction = settled(direction, |d| {
                ShapeSweep::line(*start, d, distance)
                    .ok()
                    .and_then(|sweep| line_direction(&sweep))
            })
            .ok_or(EncodeError::Invalid {
                field: "input.weapon_shots.melee.sweep.direction",
                reason: "no direction the receiver rebuilds bit for bit",
            })?;
            w.vec3(direction, "input.weapon_shots.melee.sweep.direction")?;
            w.f32(distance, "input.weapon_shots.melee.sweep.distance")?;
        }
        SweepPath::Arc(swing) => {
            w.u8(PATH_ARC);
            let axis = settled(swing.axis(), |a| {
                Swing::new(swing.pivot(), a, swing.angle())
                    .ok()
                    .map(|s| s.axis())
            })
            .ok_or(EncodeError::Invalid {
                field: "input.weapon_shots.melee.sweep.axis",
                reason: "no axis the receiver rebuilds bit for bit",
            })?;
            w.vec3(swing.pivot(), "input.weapon_shots.melee.sweep.pivot")?;
            w.vec3(axis, "input.weapon_shots.melee.sweep.axis")?;
            w.f32(swing.angle(), "input.weapon_shots.melee.sweep.angle")?;
        }
    }
    Ok(())
}

/// The direction a line sweep keeps.
fn line_direction(sweep: &ShapeSweep) -> Option<Vec3> {
    match sweep.path() {
        SweepPath::Line { direction, .. } => Some(direction),
        SweepPath::Arc(_) => None,
    }
}

/// What goes on the wire for a stored unit vector `v` (a line's direction, a swing's
/// axis) that the receiver's constructor `rebuild` normalizes again: a value `z` with
/// `rebuild(z) == v` and `rebuild(rebuild(z)) == z`, bit for bit, so the receiver stores
/// exactly `v` and re-encodes exactly `z`. Renormalizing a unit vector moves it by a last
/// bit at most and ends in a fixed point or a pair that map to each other; a `v` that is
/// neither is first carried there (its last bits may change).
fn settled(mut v: Vec3, rebuild: impl Fn(Vec3) -> Option<Vec3>) -> Option<Vec3> {
    for _ in 0..8 {
        let once = rebuild(v)?;
        if same_bits(rebuild(once)?, v) {
            return Some(once);
        }
        v = once;
    }
    None
}

/// Whether a value read from the wire is one [`settled`] writes.
fn stable(x: Vec3, rebuild: impl Fn(Vec3) -> Option<Vec3>) -> bool {
    rebuild(x)
        .and_then(&rebuild)
        .is_some_and(|twice| same_bits(twice, x))
}

fn same_bits(a: Vec3, b: Vec3) -> bool {
    a.to_array().map(f32::to_bits) == b.to_array().map(f32::to_bits)
}

/// What [`write_sweep`] wrote, built with the sweep's own checks. A direction or axis
/// the constructor would have normalized differently is non-canonical: what the encoder
/// writes is always the normalized one.
fn read_sweep(r: &mut Reader<'_>) -> Result<ShapeSweep, DecodeError> {
    let offset = r.offset();
    let translation = r.vec3("input.weapon_shots.melee.sweep.position")?;
    let rotation = r.quat("input.weapon_shots.melee.sweep.rotation")?;
    let tag_at = r.offset();
    let shape = match r.u8("input.weapon_shots.melee.sweep.shape")? {
        SHAPE_SPHERE => Shape::Sphere {
            radius: r.f32("input.weapon_shots.melee.sweep.radius")?,
        },
        SHAPE_BOX => Shape::Box {
            half_extents: r.vec3("input.weapon_shots.melee.sweep.half_extents")?,
        },
        SHAPE_CAPSULE => {
            let radius = r.f32("input.weapon_shots.melee.sweep.radius")?;
            let half_height = r.f32("input.weapon_shots.melee.sweep.half_height")?;
            let axis_at = r.offset();
            let axis = match r.u8("input.weapon_shots.melee.sweep.axis")? {
                0 => Axis::X,
                1 => Axis::Y,
                2 => Axis::Z,
                tag => {
                    return Err(DecodeError::UnknownTag {
                        offset: axis_at,
                        field: "input.weapon_shots.melee.sweep.axis",
                        tag,
                    });
                }
            };
            Shape::Capsule {
                radius,
                half_height,
                axis,
            }
        }
        tag => {
            return Err(DecodeError::UnknownTag {
                offset: tag_at,
                field: "input.weapon_shots.melee.sweep.shape",
                tag,
            });
        }
    };
    let start = PlacedShape::new(Pose::new(translation, rotation), shape);
    let invalid = |_| DecodeError::Invalid {
        offset,
        field: "input.weapon_shots.melee.sweep",
        reason: "not a sweep the validator can trace",
    };
    let path_at = r.offset();
    let sweep = match r.u8("input.weapon_shots.melee.sweep.path")? {
        PATH_LINE => {
            let direction = r.vec3("input.weapon_shots.melee.sweep.direction")?;
            let distance = r.f32("input.weapon_shots.melee.sweep.distance")?;
            let sweep = ShapeSweep::line(start, direction, distance).map_err(invalid)?;
            let along = |d| {
                ShapeSweep::line(start, d, distance)
                    .ok()
                    .and_then(|sweep| line_direction(&sweep))
            };
            if !stable(direction, along) {
                return Err(DecodeError::NonCanonical {
                    offset: path_at,
                    field: "input.weapon_shots.melee.sweep.direction",
                });
            }
            sweep
        }
        PATH_ARC => {
            let pivot = r.vec3("input.weapon_shots.melee.sweep.pivot")?;
            let axis = r.vec3("input.weapon_shots.melee.sweep.axis")?;
            let angle = r.f32("input.weapon_shots.melee.sweep.angle")?;
            let swing = Swing::new(pivot, axis, angle).map_err(|_| DecodeError::Invalid {
                offset: path_at,
                field: "input.weapon_shots.melee.sweep.swing",
                reason: "not a swing the validator can trace",
            })?;
            let about = |a| Swing::new(pivot, a, angle).ok().map(|s| s.axis());
            if !stable(axis, about) {
                return Err(DecodeError::NonCanonical {
                    offset: path_at,
                    field: "input.weapon_shots.melee.sweep.axis",
                });
            }
            ShapeSweep::arc(start, swing).map_err(invalid)?
        }
        tag => {
            return Err(DecodeError::UnknownTag {
                offset: path_at,
                field: "input.weapon_shots.melee.sweep.path",
                tag,
            });
        }
    };
    Ok(sweep)
}
