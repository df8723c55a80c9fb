//! The sniper rifle's round as a bot's client fires it: the players it passes through, as
//! this client draws them, listed nearest first in a penetration claim. Walls stop the
//! round (their material costs all its power within a centimetre); each player's hitboxes
//! cost flesh by the metre and one layer each, as the server's walk counts them.

use glam::Vec3;
use lagcomp::{HitboxId, Rig};
use lagcomp_net::interp::View;
use lagcomp_net::shot::stamp;
use lagcomp_validate::penetration::{ClaimedLayer, MAX_PENETRATION_LAYERS, PenetrationClaim};
use lagcomp_validate::{RenderTime, ShotClaim, WeaponClaim};

use super::BotBrain;
use crate::body::{Arena, BONES};
use crate::traffic::{FiredShot, claim_fingerprint};
use crate::weapon::{SNIPER_FLESH_COST, SNIPER_POWER};

/// How far the round's line may be moved sideways, metres, and still cross a player for
/// the client to list it: a player the line grazes is left out rather than risk the
/// server's walk seeing the edge a hair differently (as the shotgun's pellets are).
const LINE_MARGIN: f32 = 0.02;

/// The most hitbox layers the round may have crossed, up to and through a listed player:
/// half the weapon's layers, so hitboxes the server's walk grazes and this client's line
/// missed cannot end the walk before a listed player.
const LAYERS_LISTED: u32 = (MAX_PENETRATION_LAYERS / 2) as u32;

/// The share of the round's power the flesh up to and through a listed player may cost:
/// the rest is slack for a line a hair different from the server's.
const POWER_LISTED: f32 = 0.6;

/// How much nearer, metres, a listed player must be met than the next wall (or door) on
/// every line tried.
const WALL_GAP: f32 = 0.3;

/// How much farther, metres, a listed player must be met than the one listed before it:
/// two players met nearly together could be met in the other order by the server, which
/// refuses a chain out of order.
const BODY_GAP: f32 = 0.05;

/// The farthest the round is traced, metres (the sniper rifle's `max_range`).
const REACH: f32 = 200.0;

/// One player the round's line crosses, as this client draws it.
#[derive(Debug, Clone, Copy)]
struct Crossed {
    /// The remote's slot.
    slot: usize,
    /// Where the line first enters one of its hitboxes, metres from the muzzle.
    enter: f32,
    /// That hitbox.
    hitbox: HitboxId,
    /// How many of its hitboxes the line crosses.
    layers: u32,
    /// The line's length inside them, metres.
    flesh: f32,
}

impl BotBrain {
    /// The sniper rifle's `shot` (built by [`BotBrain::fire`], remembered as `fired`) as a
    /// penetration claim: the players its line crosses as this client draws them, nearest
    /// first, before any wall or door, each drawn plainly at the moment the claim names
    /// and crossed by lines [`LINE_MARGIN`] to each side as well, while the layers and
    /// flesh crossed stay well within the round's power. The first listed is the one the
    /// client saw hit.
    pub(super) fn penetrating(
        &self,
        me: usize,
        shot: &ShotClaim,
        mut fired: FiredShot,
        arena: &Arena,
        rig: &Rig,
    ) -> (WeaponClaim, FiredShot) {
        let (origin, direction) = (shot.origin, shot.direction);
        let nearest = self.players_crossed(me, origin, direction, rig);
        let wall = self.round_stopped_at(arena, origin, direction);
        let mut layers = [None; MAX_PENETRATION_LAYERS];
        let mut listed = 0;
        let (mut crossed, mut flesh) = (0, 0.0);
        let mut last = f32::NEG_INFINITY;
        let mut first = None;
        for player in nearest.iter().flatten() {
            crossed += player.layers;
            flesh += player.flesh;
            if player.enter + WALL_GAP > wall
                || crossed > LAYERS_LISTED
                || flesh * SNIPER_FLESH_COST > POWER_LISTED * SNIPER_POWER
                || player.enter < last + BODY_GAP
            {
                break;
            }
            if !self.drawn_as_claimed(player.slot, shot.render_time)
                || !self.crossed_on_every_side(player.slot, origin, direction, arena, rig)
            {
                continue;
            }
            layers[listed] = Some(ClaimedLayer::Body {
                target: self.remotes[player.slot].id,
                hitbox: None,
            });
            listed += 1;
            last = player.enter;
            first.get_or_insert((self.remotes[player.slot].id, player.hitbox));
        }
        let claim = WeaponClaim::Penetration(PenetrationClaim {
            shooter: shot.shooter,
            weapon: shot.weapon,
            seq: shot.seq,
            render_time: shot.render_time,
            origin,
            direction,
            layers,
        });
        fired.fingerprint = claim_fingerprint(&claim);
        fired.client_hit = first;
        (claim, fired)
    }

    /// The players the line crosses, nearest first (as many as a claim can list), each
    /// with its nearest hitbox, the count of its hitboxes crossed and the flesh crossed.
    fn players_crossed(
        &self,
        me: usize,
        origin: Vec3,
        direction: Vec3,
        rig: &Rig,
    ) -> [Option<Crossed>; MAX_PENETRATION_LAYERS] {
        let mut nearest: [Option<Crossed>; MAX_PENETRATION_LAYERS] = [None; MAX_PENETRATION_LAYERS];
        for (slot, remote) in self.remotes.iter().enumerate() {
            let bones = &remote.scratch;
            if slot == me || remote.view.is_none() || bones.len() != BONES {
                continue;
            }
            let mut player: Option<Crossed> = None;
            for hitbox in rig.hitboxes() {
                let placed = hitbox.placed(&bones[usize::from(hitbox.bone)]);
                let Some(c) = placed
                    .cast_line(origin, direction)
                    .and_then(|c| c.clip(REACH))
                else {
                    continue;
                };
                let p = player.get_or_insert(Crossed {
                    slot,
                    enter: c.enter,
                    hitbox: hitbox.id,
                    layers: 0,
                    flesh: 0.0,
                });
                if c.enter < p.enter {
                    (p.enter, p.hitbox) = (c.enter, hitbox.id);
                }
                p.layers += 1;
                p.flesh += (c.exit.min(REACH) - c.enter.max(0.0)).max(0.0);
            }
            // Kept in order of distance; the farthest falls off the end.
            let Some(mut player) = player else {
                continue;
            };
            for place in &mut nearest {
                match place {
                    Some(held) if held.enter <= player.enter => {}
                    _ => match place.replace(player) {
                        Some(farther) => player = farther,
                        None => break,
                    },
                }
            }
        }
        nearest
    }

    /// How far along the line the round is stopped: the first wall, piece of the level,
    /// breakable wall, door or tram as drawn.
    fn round_stopped_at(&self, arena: &Arena, origin: Vec3, direction: Vec3) -> f32 {
        self.cover_distance(arena, origin, direction)
            .min(self.mover_distance(origin, direction))
    }

    /// Whether the remote in `slot` was drawn from snapshots (an exact frame or a blend)
    /// at the moment `render_time` names: the moment the server rewinds it to.
    fn drawn_as_claimed(&self, slot: usize, render_time: RenderTime) -> bool {
        self.remotes[slot].view.is_some_and(|view| {
            matches!(view, View::Exact { .. } | View::Interpolated { .. })
                && RenderTime::from(stamp(&view)) == render_time
        })
    }

    /// Whether lines [`LINE_MARGIN`] to each side of the round's cross the player in
    /// `slot` too, each well before its own first wall.
    fn crossed_on_every_side(
        &self,
        slot: usize,
        origin: Vec3,
        direction: Vec3,
        arena: &Arena,
        rig: &Rig,
    ) -> bool {
        let side = direction.any_orthonormal_vector();
        let up = direction.cross(side);
        [side, -side, up, -up].iter().all(|&offset| {
            let from = origin + offset * LINE_MARGIN;
            let bones = &self.remotes[slot].scratch;
            let enter = rig
                .hitboxes()
                .iter()
                .filter_map(|h| {
                    h.placed(&bones[usize::from(h.bone)])
                        .cast_line(from, direction)
                        .and_then(|c| c.clip(REACH))
                        .map(|c| c.enter)
                })
                .fold(f32::INFINITY, f32::min);
            enter + WALL_GAP <= self.round_stopped_at(arena, from, direction)
        })
    }
}
