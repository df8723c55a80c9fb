//! What a bot's brain and the server exchange, as values: the snapshot updates it is
//! given, the input it sends each frame, the shots it remembers, and the claim
//! fingerprint both sides use to tell a redundant copy of a shot from a replay. The brain
//! that makes and reads them is the `brain` module, the server's side the `server` module.

use glam::{Quat, Vec3};
use lagcomp::projectile::ClaimedTarget;
use lagcomp::{BoneTransform, EntityId, HitboxId, Tick};
use lagcomp::{PlacedShape, SweepPath};
use lagcomp_net::clock::Ping;
use lagcomp_net::shot::Fingerprint;
use lagcomp_validate::penetration::ClaimedLayer;
use lagcomp_validate::{ClaimedHit, RenderTime, ShotClaim, WeaponClaim};

use crate::weapon::Arm;

/// One entity's state in a snapshot, as the server sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityUpdate {
    /// The entity.
    pub id: EntityId,
    /// World transforms of its bones.
    pub bones: Vec<BoneTransform>,
    /// Its velocity, for extrapolation.
    pub velocity: Vec3,
    /// The tick of its latest teleport. The brain compares it with the newest snapshot it
    /// holds: a teleport in frames it never received (a lost snapshot) still forbids the
    /// blend, as the core's rebuild does.
    pub last_teleport: Option<Tick>,
    /// Whether it is spawn-protected (just respawned, invulnerable).
    pub protected: bool,
    /// The tick since which the server has sent this entity to this client without a
    /// break (`None`: always, as the simulator's server sends everyone). When it is newer
    /// than the newest snapshot of the entity the brain holds, the entity was out of view
    /// in between: what the brain holds is dropped rather than blended into the new
    /// snapshots.
    pub in_view_since: Option<Tick>,
}

/// What a brain sends in one frame: one input.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientInput {
    /// The frame counter, one more each frame (wrapping).
    pub frame: u32,
    /// The view.
    pub aim: Quat,
    /// A clock-sync ping, when one is due.
    pub ping: Option<Ping>,
    /// The id of the server's latest round-trip probe, answered once.
    pub probe_reply: Option<u32>,
    /// Shots not yet acknowledged (and a replaying cheat's extra one): the sender's
    /// sequence number and the claim, of any weapon kind.
    pub shots: Vec<(u32, WeaponClaim)>,
    /// How far behind the server's present it draws others, seconds (half its round trip
    /// plus its interpolation delay).
    pub interp_delay: f64,
    /// The newest snapshot tick received.
    pub newest_tick: Option<Tick>,
}

/// What a brain remembers about a shot it fired, to judge the server's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FiredShot {
    /// The claim's content hash ([`claim_fingerprint`]).
    pub fingerprint: u64,
    /// The weapon it was fired with (the rocket's blast for its splash claim).
    pub arm: Arm,
    /// The claim's sequence number.
    pub seq: u32,
    /// The entity and hitbox the client saw hit (the first struck, for pellets and
    /// blasts).
    pub client_hit: Option<(EntityId, HitboxId)>,
    /// The target's bones as the client drew them (for the reconstruction error).
    pub drawn: Vec<BoneTransform>,
    /// Whether the view was a plain blend, an exact frame or an extrapolation (not a
    /// teleport's nearer frame).
    pub clean_view: bool,
    /// Whether this shot is a cheat's.
    pub cheat: bool,
}

/// One frame's output: the input to send and the shot fired, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct BotFrame {
    /// The input.
    pub input: ClientInput,
    /// The shot fired this frame.
    pub fired: Option<FiredShot>,
    /// The blast of the rocket whose projectile claim is [`BotFrame::fired`]: its splash
    /// claim, sent with it.
    pub blast: Option<FiredShot>,
}

/// A content hash of a claim, so redundant copies are told from replays: every field,
/// floats by their bits.
///
/// PERF: field by field, without formatting the claim (it is taken for every shot a server
/// receives, and a flood of replayed copies must cost no allocation).
#[must_use]
pub fn fingerprint(claim: &ShotClaim) -> u64 {
    let vec3 = |f: Fingerprint, v: Vec3| f.f32(v.x).f32(v.y).f32(v.z);
    let f = Fingerprint::new()
        .u64(claim.shooter.to_bits())
        .u32(u32::from(claim.weapon.0))
        .u32(claim.seq);
    let f = match claim.render_time {
        RenderTime::Ticks { from, to, fraction } => f.u32(0).u32(from.0).u32(to.0).f32(fraction),
        RenderTime::Time(time) => f.u32(1).f64(time),
        RenderTime::Extrapolated { from, by } => f.u32(2).u32(from.0).f64(by),
    };
    let f = vec3(vec3(f, claim.origin), claim.direction);
    hit_print(f, claim.hit).finish()
}

/// [`fingerprint`] for a claim of any kind: a hitscan claim's is [`fingerprint`]'s own, the
/// other kinds' hash their kind, every field the hitscan claim has, and their own fields.
///
/// PERF: as [`fingerprint`], field by field with no allocation.
#[must_use]
pub fn claim_fingerprint(claim: &WeaponClaim) -> u64 {
    let vec3 = |f: Fingerprint, v: Vec3| f.f32(v.x).f32(v.y).f32(v.z);
    let common = |kind: u32, aim: &ShotClaim| {
        // The kind first, so no two kinds' fields can line up into one hash.
        Fingerprint::new().u32(kind).u64(fingerprint(aim))
    };
    let shot = |render_time: RenderTime, origin: Vec3, direction: Vec3| ShotClaim {
        shooter: claim.shooter(),
        weapon: claim.weapon(),
        seq: claim.seq(),
        render_time,
        origin,
        direction,
        hit: None,
    };
    match claim {
        WeaponClaim::Hitscan(shot) => fingerprint(shot),
        WeaponClaim::Projectile(hit) => {
            let f = common(1, &shot(hit.render_time, hit.origin, hit.direction)).u32(hit.step);
            let f = match hit.target {
                ClaimedTarget::Entity { entity, hitbox } => {
                    f.u32(0).u64(entity.to_bits()).u32(u32::from(hitbox.0))
                }
                ClaimedTarget::Static(piece) => f.u32(1).u64(piece.0),
            };
            vec3(f, hit.position).finish()
        }
        WeaponClaim::Pellets(pellets) => {
            let f = common(
                2,
                &shot(pellets.render_time, pellets.origin, pellets.direction),
            )
            .u64(pellets.seed)
            .u32(u32::from(pellets.pellets));
            pellets
                .hits
                .iter()
                .fold(f, |f, hit| match hit {
                    None => f.u32(0),
                    Some(hit) => {
                        let f = f.u32(1).u64(hit.target.to_bits());
                        match hit.hitbox {
                            None => f.u32(0),
                            Some(hitbox) => f.u32(1).u32(u32::from(hitbox.0)),
                        }
                    }
                })
                .finish()
        }
        WeaponClaim::Melee(strike) => {
            let f = common(3, &shot(strike.render_time, strike.eye, strike.aim));
            let start: &PlacedShape = strike.sweep.start();
            let f = vec3(f, start.pose.translation)
                .f32(start.pose.rotation.x)
                .f32(start.pose.rotation.y)
                .f32(start.pose.rotation.z)
                .f32(start.pose.rotation.w)
                .f32(start.shape.bounding_radius());
            let f = match strike.sweep.path() {
                SweepPath::Line {
                    direction,
                    distance,
                } => vec3(f.u32(0), direction).f32(distance),
                SweepPath::Arc(swing) => {
                    vec3(vec3(f.u32(1), swing.pivot()), swing.axis()).f32(swing.angle())
                }
            };
            hit_print(f, strike.hit).finish()
        }
        WeaponClaim::Splash(blast) => {
            let f = common(4, &shot(blast.render_time, blast.origin, blast.direction));
            let f = vec3(f, blast.blast);
            blast
                .victims
                .iter()
                .fold(f, |f, victim| match victim {
                    None => f.u32(0),
                    Some(victim) => f.u32(1).u64(victim.to_bits()),
                })
                .finish()
        }
        WeaponClaim::Penetration(round) => {
            let f = common(5, &shot(round.render_time, round.origin, round.direction));
            round
                .layers
                .iter()
                .fold(f, |f, layer| match *layer {
                    None => f.u32(0),
                    Some(ClaimedLayer::Wall { piece }) => match piece {
                        None => f.u32(1),
                        Some(piece) => f.u32(2).u64(piece.0),
                    },
                    Some(ClaimedLayer::Body { target, hitbox }) => {
                        let f = f.u32(3).u64(target.to_bits());
                        match hitbox {
                            None => f.u32(0),
                            Some(hitbox) => f.u32(1).u32(u32::from(hitbox.0)),
                        }
                    }
                })
                .finish()
        }
    }
}

/// A claimed hit folded into `f`.
fn hit_print(f: Fingerprint, hit: Option<ClaimedHit>) -> Fingerprint {
    let vec3 = |f: Fingerprint, v: Vec3| f.f32(v.x).f32(v.y).f32(v.z);
    match hit {
        None => f.u32(0),
        Some(hit) => {
            let f = f.u32(1).u64(hit.target.to_bits());
            let f = match hit.hitbox {
                None => f.u32(0),
                Some(hitbox) => f.u32(1).u32(u32::from(hitbox.0)),
            };
            match hit.point {
                None => f.u32(0),
                Some(point) => vec3(f.u32(1), point),
            }
        }
    }
}
