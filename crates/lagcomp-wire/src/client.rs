//! What a client sends: one [`Input`] per frame, carrying its view, its clock-sync ping,
//! its answer to the server's round-trip probe, its interpolation delay and its
//! not-yet-acknowledged shots.

use glam::{Quat, Vec3};
use lagcomp::{EntityId, HitboxId, Tick};
use lagcomp_net::Ping;
use lagcomp_validate::{ClaimedHit, RenderTime, ShotClaim, WeaponClaim, WeaponId};

use crate::MAX_SHOTS_PER_INPUT;
use crate::codec::{Reader, Writer, encode_into, kind};
use crate::error::{DecodeError, Direction, EncodeError};

/// A message from a client to the server.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientMessage {
    /// The client's frame: view, timing and shots.
    Input(Input),
}

impl ClientMessage {
    /// Decodes one message (one renet message payload) received by the server.
    ///
    /// # Errors
    /// Whatever is wrong with the bytes, with where; see [`DecodeError`].
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (mut reader, kind) = Reader::open(bytes, Direction::ToServer)?;
        let message = match kind {
            kind::INPUT => Self::Input(Input::read(&mut reader)?),
            // `Reader::open` lets through only this direction's kinds.
            other => return Err(DecodeError::UnknownKind { kind: other }),
        };
        reader.finish()?;
        Ok(message)
    }

    /// Encodes the message into `out` (cleared first; its capacity is reused).
    ///
    /// # Errors
    /// When the message would not decode: a non-finite number or too many shots. `out` is
    /// then empty.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Self::Input(input) => encode_into(out, kind::INPUT, |w| input.write(w)),
        }
    }
}

/// The client's answer to the server's round-trip [`crate::RttProbe`], sent with the next
/// input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeReply {
    /// The probe's id.
    pub id: u32,
    /// The client's clock when it answered, seconds.
    pub client_time: f64,
}

/// One client frame.
///
/// Sent unreliably every frame: the shots in it are repeated until acknowledged
/// ([`lagcomp_net::ShotSender`]), and everything else is superseded by the next input.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The client's frame number, increasing by one per input (wrapping): a server can
    /// ignore the view of an input older than one it has already applied.
    pub frame: u32,
    /// A clock-sync probe, when one is due ([`lagcomp_net::ClockSync::ping_due`]).
    pub ping: Option<Ping>,
    /// The answer to the server's latest round-trip probe, once.
    pub probe_reply: Option<ProbeReply>,
    /// Where the player looks (the view the server records for the angle check).
    pub aim: Quat,
    /// How far behind the server's present the client draws others, seconds (half its
    /// round trip plus its interpolation delay, as the simulator's clients report it).
    pub interp_delay: f64,
    /// The newest snapshot tick the client has received, if any.
    pub newest_tick: Option<Tick>,
    /// Every shot verdict numbered below this has arrived
    /// ([`crate::VerdictInbox::received`]): the server stops repeating them. `None` from a
    /// client that has had none.
    pub verdicts_received: Option<u32>,
    /// Shots not yet acknowledged, oldest first: the sender's sequence number and the
    /// claim ([`lagcomp_net::ShotSender::packet`]). At most [`MAX_SHOTS_PER_INPUT`].
    ///
    /// Each claim carries a shooter id for the validator's sake; the server must set it
    /// to the connection's own entity rather than trust it.
    pub shots: Vec<(u32, ShotClaim)>,
    /// Claims of the other weapon kinds not yet acknowledged (version 6): projectile hits,
    /// shotgun pellets, melee strikes, blasts, each with the sender's sequence number,
    /// oldest first. At most [`MAX_SHOTS_PER_INPUT`]. A hitscan claim may come here too,
    /// though [`Input::shots`] is its place. As with `shots`, the server sets the
    /// shooter to the connection's own entity.
    pub weapon_shots: Vec<(u32, WeaponClaim)>,
}

const INPUT_PING: u8 = 1 << 0;
const INPUT_PROBE_REPLY: u8 = 1 << 1;
const INPUT_NEWEST_TICK: u8 = 1 << 2;
const INPUT_VERDICTS_RECEIVED: u8 = 1 << 3;

const RENDER_TIME: u8 = 0;
const RENDER_TICKS: u8 = 1;
/// Since version 5.
const RENDER_EXTRAPOLATED: u8 = 2;

const HIT: u8 = 1 << 0;
const HIT_HITBOX: u8 = 1 << 1;
const HIT_POINT: u8 = 1 << 2;

/// The fewest bytes a shot takes: sequence numbers, shooter, weapon, a tick stamp, origin,
/// direction and an empty hit byte.
const MIN_SHOT_BYTES: usize = 4 + 8 + 2 + 4 + 1 + 8 + 12 + 12 + 1;

impl Input {
    fn write(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        if self.shots.len() > MAX_SHOTS_PER_INPUT {
            return Err(EncodeError::TooMany {
                field: "input.shots",
                count: self.shots.len(),
                max: MAX_SHOTS_PER_INPUT,
            });
        }
        w.u32(self.frame);
        let mut flags = 0;
        if self.ping.is_some() {
            flags |= INPUT_PING;
        }
        if self.probe_reply.is_some() {
            flags |= INPUT_PROBE_REPLY;
        }
        if self.newest_tick.is_some() {
            flags |= INPUT_NEWEST_TICK;
        }
        if self.verdicts_received.is_some() {
            flags |= INPUT_VERDICTS_RECEIVED;
        }
        w.u8(flags);
        if let Some(ping) = self.ping {
            w.u32(ping.id);
            w.f64(ping.client_send, "input.ping.client_send")?;
        }
        if let Some(reply) = self.probe_reply {
            w.u32(reply.id);
            w.f64(reply.client_time, "input.probe_reply.client_time")?;
        }
        w.quat(self.aim, "input.aim")?;
        w.f64(self.interp_delay, "input.interp_delay")?;
        if let Some(tick) = self.newest_tick {
            w.u32(tick.0);
        }
        if let Some(received) = self.verdicts_received {
            w.u32(received);
        }
        // The cap is far below 256: one byte.
        w.u8(self.shots.len() as u8);
        for (seq, claim) in &self.shots {
            w.u32(*seq);
            write_claim(w, claim)?;
        }
        crate::weapons::write_weapon_shots(w, &self.weapon_shots)
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let frame = r.u32("input.frame")?;
        let flags = r.flags(
            "input.flags",
            INPUT_PING | INPUT_PROBE_REPLY | INPUT_NEWEST_TICK | INPUT_VERDICTS_RECEIVED,
        )?;
        let ping = if flags & INPUT_PING != 0 {
            Some(Ping {
                id: r.u32("input.ping.id")?,
                client_send: r.f64("input.ping.client_send")?,
            })
        } else {
            None
        };
        let probe_reply = if flags & INPUT_PROBE_REPLY != 0 {
            Some(ProbeReply {
                id: r.u32("input.probe_reply.id")?,
                client_time: r.f64("input.probe_reply.client_time")?,
            })
        } else {
            None
        };
        let aim = r.quat("input.aim")?;
        let interp_delay = r.f64("input.interp_delay")?;
        let newest_tick = if flags & INPUT_NEWEST_TICK != 0 {
            Some(Tick(r.u32("input.newest_tick")?))
        } else {
            None
        };
        let verdicts_received = if flags & INPUT_VERDICTS_RECEIVED != 0 {
            Some(r.u32("input.verdicts_received")?)
        } else {
            None
        };
        let count = r.count_u8(
            "input.shots.count",
            "input.shots",
            MAX_SHOTS_PER_INPUT,
            MIN_SHOT_BYTES,
        )?;
        let mut shots = Vec::with_capacity(count);
        for _ in 0..count {
            let seq = r.u32("input.shots.seq")?;
            shots.push((seq, read_claim(r)?));
        }
        // Version 6; older inputs carry hitscan claims only.
        let weapon_shots = if r.version() >= crate::weapons::WEAPON_SHOTS_SINCE {
            crate::weapons::read_weapon_shots(r)?
        } else {
            Vec::new()
        };
        Ok(Self {
            frame,
            ping,
            probe_reply,
            aim,
            interp_delay,
            newest_tick,
            verdicts_received,
            shots,
            weapon_shots,
        })
    }
}

/// The members every kind's claim starts with: shooter, weapon, seq, render time, and
/// where it came from and went (a shot's origin and direction, a blade's eye and aim),
/// whose fields `aim` names.
pub(crate) struct Head {
    pub(crate) shooter: EntityId,
    pub(crate) weapon: WeaponId,
    pub(crate) seq: u32,
    pub(crate) render_time: RenderTime,
    pub(crate) from: Vec3,
    pub(crate) toward: Vec3,
}

/// The field names of a claim's two vectors in errors: origin and direction, or eye and
/// aim.
pub(crate) type AimFields = [&'static str; 2];

pub(crate) const SHOT_AIM: AimFields = ["input.shots.claim.origin", "input.shots.claim.direction"];

pub(crate) fn write_head(
    w: &mut Writer<'_>,
    head: &Head,
    aim: AimFields,
) -> Result<(), EncodeError> {
    let Head {
        shooter,
        weapon,
        seq,
        render_time,
        from,
        toward,
    } = *head;
    w.u64(shooter.to_bits());
    w.u16(weapon.0);
    w.u32(seq);
    match render_time {
        RenderTime::Time(time) => {
            w.u8(RENDER_TIME);
            w.f64(time, "input.shots.claim.render_time")?;
        }
        RenderTime::Ticks { from, to, fraction } => {
            w.u8(RENDER_TICKS);
            w.u32(from.0);
            w.u32(to.0);
            w.f32(fraction, "input.shots.claim.render_time.fraction")?;
        }
        RenderTime::Extrapolated { from, by } => {
            w.u8(RENDER_EXTRAPOLATED);
            w.u32(from.0);
            w.f64(by, "input.shots.claim.render_time.by")?;
        }
    }
    w.vec3(from, aim[0])?;
    w.vec3(toward, aim[1])
}

pub(crate) fn write_claim(w: &mut Writer<'_>, claim: &ShotClaim) -> Result<(), EncodeError> {
    let head = Head {
        shooter: claim.shooter,
        weapon: claim.weapon,
        seq: claim.seq,
        render_time: claim.render_time,
        from: claim.origin,
        toward: claim.direction,
    };
    write_head(w, &head, SHOT_AIM)?;
    write_hit(w, claim.hit)
}

/// A claimed hit: flags, then the target and what the flags announce.
pub(crate) fn write_hit(w: &mut Writer<'_>, hit: Option<ClaimedHit>) -> Result<(), EncodeError> {
    let Some(hit) = hit else {
        w.u8(0);
        return Ok(());
    };
    let mut flags = HIT;
    if hit.hitbox.is_some() {
        flags |= HIT_HITBOX;
    }
    if hit.point.is_some() {
        flags |= HIT_POINT;
    }
    w.u8(flags);
    w.u64(hit.target.to_bits());
    if let Some(hitbox) = hit.hitbox {
        w.u16(hitbox.0);
    }
    if let Some(point) = hit.point {
        w.vec3(point, "input.shots.claim.hit.point")?;
    }
    Ok(())
}

/// What [`write_head`] wrote.
pub(crate) fn read_head(r: &mut Reader<'_>, aim: AimFields) -> Result<Head, DecodeError> {
    let shooter = EntityId::from_bits(r.u64("input.shots.claim.shooter")?);
    let weapon = WeaponId(r.u16("input.shots.claim.weapon")?);
    let seq = r.u32("input.shots.claim.seq")?;
    let offset = r.offset();
    let render_time = match r.u8("input.shots.claim.render_time.tag")? {
        RENDER_TIME => RenderTime::Time(r.f64("input.shots.claim.render_time")?),
        RENDER_TICKS => RenderTime::Ticks {
            from: Tick(r.u32("input.shots.claim.render_time.from")?),
            to: Tick(r.u32("input.shots.claim.render_time.to")?),
            fraction: r.f32("input.shots.claim.render_time.fraction")?,
        },
        RENDER_EXTRAPOLATED => RenderTime::Extrapolated {
            from: Tick(r.u32("input.shots.claim.render_time.from")?),
            by: r.f64("input.shots.claim.render_time.by")?,
        },
        tag => {
            return Err(DecodeError::UnknownTag {
                offset,
                field: "input.shots.claim.render_time.tag",
                tag,
            });
        }
    };
    Ok(Head {
        shooter,
        weapon,
        seq,
        render_time,
        from: r.vec3(aim[0])?,
        toward: r.vec3(aim[1])?,
    })
}

pub(crate) fn read_claim(r: &mut Reader<'_>) -> Result<ShotClaim, DecodeError> {
    let head = read_head(r, SHOT_AIM)?;
    Ok(ShotClaim {
        shooter: head.shooter,
        weapon: head.weapon,
        seq: head.seq,
        render_time: head.render_time,
        origin: head.from,
        direction: head.toward,
        hit: read_hit(r)?,
    })
}

/// What [`write_hit`] wrote.
pub(crate) fn read_hit(r: &mut Reader<'_>) -> Result<Option<ClaimedHit>, DecodeError> {
    let offset = r.offset();
    let flags = r.flags("input.shots.claim.hit.flags", HIT | HIT_HITBOX | HIT_POINT)?;
    let hit = if flags & HIT != 0 {
        let target = EntityId::from_bits(r.u64("input.shots.claim.hit.target")?);
        let hitbox = if flags & HIT_HITBOX != 0 {
            Some(HitboxId(r.u16("input.shots.claim.hit.hitbox")?))
        } else {
            None
        };
        let point = if flags & HIT_POINT != 0 {
            Some(r.vec3("input.shots.claim.hit.point")?)
        } else {
            None
        };
        Some(ClaimedHit {
            target,
            hitbox,
            point,
        })
    } else if flags != 0 {
        // A hitbox or point without a hit.
        return Err(DecodeError::BadFlags {
            offset,
            field: "input.shots.claim.hit.flags",
            bits: flags,
        });
    } else {
        None
    };
    Ok(hit)
}
