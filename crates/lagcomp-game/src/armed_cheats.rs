//! The cheat classes that bend a weapon other than the rifle, as a cheating bot's client
//! plays them: a rocket claimed to strike before it could arrive, pellets drawn from a
//! seed of its choosing, a knife that strikes beyond its reach, a blast claimed through a
//! wall, a sniper round claimed through a wall. Each builds the claim an honest client would and bends the one part its class
//! is about.

use glam::Vec3;
use lagcomp::projectile::ClaimedTarget;
use lagcomp::spread::{MAX_PELLETS, pellet_seed};
use lagcomp::{PlacedShape, Pose, Shape, ShapeSweep};
use lagcomp_net::shot::stamp;
use lagcomp_validate::pellets::{PelletClaim, PelletTarget};
use lagcomp_validate::penetration::{ClaimedLayer, MAX_PENETRATION_LAYERS, PenetrationClaim};
use lagcomp_validate::projectile::ProjectileHitClaim;
use lagcomp_validate::splash::{MAX_VICTIMS, SplashClaim};
use lagcomp_validate::{ClaimedHit, MeleeClaim, RenderTime, WeaponClaim};

use super::BotBrain;
use crate::body::{self, Arena};
use crate::cheat::Cheat;
use crate::traffic::FiredShot;
use crate::weapon::{self, Arm, BLAST_RADIUS, KNIFE_REACH};

/// The step an early rocket claims to have struck during: 2/64 s into its flight, a metre
/// and a quarter out, wherever the target really is.
const EARLY_STEP: u32 = 2;

/// How far an early rocket's target must be, metres: far enough that a strike on it
/// during [`EARLY_STEP`] (or the step after, the server's leeway) is a lie.
const EARLY_TARGET: f32 = 6.0;

/// How far behind a wall's near face a through-the-wall sniper's target chest must be,
/// metres: more than a body's half depth (0.3 m) and its lean, so no hitbox of it pokes out
/// in front of the wall.
const BODY_CLEARANCE: f32 = 0.6;

/// How far a long knife's target is, metres: past the knife's reach, near enough to
/// pass for a lunge.
pub(super) const LONG_KNIFE: (f32, f32) = (KNIFE_REACH + 0.5, 8.0);

impl BotBrain {
    /// A cheating claim of its class's weapon at the target (slot `self.target`; a
    /// blast-through-wall cheat takes any body it can claim), from `eye`; `None` when no
    /// body suits the class this frame, or the weapon's rate holds it back
    /// ([`BotBrain::held`] set): the cheats keep the fire rate, so what refuses them is
    /// what their class bends.
    pub(super) fn cheat_arm(
        &mut self,
        eye: Vec3,
        arena: &Arena,
    ) -> Option<(WeaponClaim, FiredShot)> {
        let cheat = self.cheat?;
        if cheat == Cheat::BlastThroughWall {
            // Any body it can claim a blast on, the target first.
            let bodies = self.remotes.len();
            let me = self.index.get(&self.me).copied();
            self.target = (0..bodies).map(|k| (self.target + k) % bodies).find(|&i| {
                Some(i) != me
                    && self.remotes[i].view.is_some()
                    && self.shown_protected(i) == Some(false)
                    && self.blast_spot(eye, i, arena).is_some()
            })?;
        }
        let aimed = self.target;
        let view = self.remotes[aimed].view?;
        let render_time = RenderTime::from(stamp(&view));
        let at = self.claimed_at(aimed, render_time)?;
        let arm = match cheat {
            Cheat::EarlyRocket => Arm::RocketLauncher,
            Cheat::ChosenPelletSeed => Arm::Shotgun,
            Cheat::LongKnife => Arm::Knife,
            Cheat::BlastThroughWall => Arm::RocketBlast,
            Cheat::ThroughTheWallSniper => Arm::SniperRifle,
            _ => return None,
        };
        let chest = self.remotes[aimed].scratch[body::CHEST as usize].translation;
        let aim = (chest - eye).normalize_or_zero();
        let distance = chest.distance(eye);
        if aim == Vec3::ZERO {
            return None;
        }
        if !self.arsenal.as_ref().is_some_and(|a| a.may_fire(arm, at)) {
            self.held = true;
            return None;
        }
        let target = self.remotes[aimed].id;
        let claim = match cheat {
            Cheat::EarlyRocket => {
                if distance < EARLY_TARGET {
                    return None;
                }
                let flight = self.arsenal.as_ref()?.flight;
                let mut state = flight.launch(eye, aim).ok()?;
                for _ in 0..EARLY_STEP {
                    state = flight.advance(&state);
                }
                WeaponClaim::Projectile(ProjectileHitClaim {
                    shooter: self.me,
                    weapon: weapon::ROCKET_LAUNCHER,
                    seq: self.take_seq(),
                    render_time,
                    origin: eye,
                    direction: aim,
                    step: EARLY_STEP,
                    target: ClaimedTarget::Entity {
                        entity: target,
                        hitbox: body::CHEST_BOX,
                    },
                    position: state.position,
                })
            }
            Cheat::ChosenPelletSeed => {
                let pellets = self.arsenal.as_ref()?.spread.pellets();
                let seq = self.take_seq();
                // Every pellet on the target, from a seed that is not the one the server
                // draws from (one whose pellets the client liked better).
                let mut hits = [None; MAX_PELLETS];
                for slot in &mut hits[..pellets] {
                    *slot = Some(PelletTarget {
                        target,
                        hitbox: None,
                    });
                }
                WeaponClaim::Pellets(PelletClaim {
                    shooter: self.me,
                    weapon: weapon::SHOTGUN,
                    seq,
                    render_time,
                    origin: eye,
                    direction: aim,
                    seed: pellet_seed(self.me.to_bits(), seq) ^ 0x5eed,
                    pellets: u8::try_from(pellets).ok()?,
                    hits,
                })
            }
            Cheat::LongKnife => {
                if !(LONG_KNIFE.0..LONG_KNIFE.1).contains(&distance) {
                    return None;
                }
                // The blade starts half a metre short of the target's chest: far out of
                // the hand.
                let blade = PlacedShape::new(
                    Pose::from_translation(chest - aim * 0.5),
                    Shape::sphere(0.08),
                );
                WeaponClaim::Melee(MeleeClaim {
                    shooter: self.me,
                    weapon: weapon::KNIFE,
                    seq: self.take_seq(),
                    render_time,
                    eye,
                    aim,
                    sweep: ShapeSweep::line(blade, aim, 0.6).ok()?,
                    hit: Some(ClaimedHit {
                        target,
                        hitbox: None,
                        point: None,
                    }),
                })
            }
            Cheat::BlastThroughWall => {
                let blast = self.blast_spot(eye, aimed, arena)?;
                let mut victims = [None; MAX_VICTIMS];
                victims[0] = Some(target);
                WeaponClaim::Splash(SplashClaim {
                    shooter: self.me,
                    weapon: weapon::ROCKET_LAUNCHER,
                    seq: self.take_seq(),
                    render_time,
                    origin: eye,
                    direction: aim,
                    blast,
                    victims,
                })
            }
            Cheat::ThroughTheWallSniper => {
                // Only a target a wall or the level really hides, within the rifle's range;
                // not the breakable wall, which may have fallen on the server already.
                // And the wall clearly between: a body leaning on a wall's far face pokes
                // out in front of it (its torso box is struck before the wall: a true claim,
                // seen twice in seed 5), and an eye at a wall's near face crosses only what
                // is left of it.
                let wall = self.fixed_cover_distance(arena, eye, aim);
                if wall < 0.3 || wall + BODY_CLEARANCE > distance || distance > 190.0 {
                    return None;
                }
                let mut layers = [None; MAX_PENETRATION_LAYERS];
                layers[0] = Some(ClaimedLayer::Body {
                    target,
                    hitbox: None,
                });
                WeaponClaim::Penetration(PenetrationClaim {
                    shooter: self.me,
                    weapon: weapon::SNIPER_RIFLE,
                    seq: self.take_seq(),
                    render_time,
                    origin: eye,
                    direction: aim,
                    layers,
                })
            }
            _ => return None,
        };
        if let Some(arsenal) = &mut self.arsenal {
            arsenal.fired(at);
        }
        let mut shot = self.fired_any(
            &claim,
            arm,
            Some((aimed, body::CHEST_BOX, chest)),
            aimed,
            true,
        );
        shot.cheat = true;
        Some((claim, shot))
    }

    /// Where a blast-through-wall cheat at `eye` puts its blast to claim the body in slot
    /// `i`: just the other side of a wall within the blast's radius of it, when that
    /// walls the body off from the blast (`None` otherwise). The wall between the two
    /// first, then one in any of eight directions round the body (a claimed blast may be
    /// anywhere within the launcher's range).
    pub(super) fn blast_spot(&self, eye: Vec3, i: usize, arena: &Arena) -> Option<Vec3> {
        let chest = self.remotes[i]
            .scratch
            .get(body::CHEST as usize)?
            .translation;
        let toward_eye = (eye - chest).normalize_or_zero();
        let around = (0..8).map(|k| {
            let (sin, cos) = (k as f32 * std::f32::consts::FRAC_PI_4).sin_cos();
            Vec3::new(cos, 0.0, sin)
        });
        std::iter::once(toward_eye)
            .chain(around)
            .filter(|d| *d != Vec3::ZERO)
            .find_map(|d| {
                let wall = self.cover_distance(arena, chest, d);
                let blast = chest + d * (wall + 0.2);
                (wall > 0.3 && wall + 0.2 < BLAST_RADIUS && blast.distance(eye) < 50.0)
                    .then_some(blast)
                    .filter(|&blast| self.walled_off(blast, i, arena))
            })
    }

    /// Whether walls or the level stand between `blast` and every part of the body in
    /// slot `i` (its bones, and points a body's width to each side of, above and below
    /// each), the breakable wall left out: a blast there can only catch it
    /// through a wall.
    fn walled_off(&self, blast: Vec3, i: usize, arena: &Arena) -> bool {
        let Some(rig) = self.arsenal.as_ref().map(|a| &a.rig) else {
            return false;
        };
        let bones = &self.remotes[i].scratch;
        let chest = bones[body::CHEST as usize].translation;
        let across = (chest - blast).cross(Vec3::Y).normalize_or_zero() * 0.3;
        let up = Vec3::Y * 0.2;
        // The server looks from the blast to each hitbox's nearest point: those, and
        // points round them and round every bone, all behind a wall well before.
        let nearest = rig
            .hitboxes()
            .iter()
            .map(|h| h.placed(&bones[usize::from(h.bone)]).closest_point(blast));
        bones
            .iter()
            .map(|b| b.translation)
            .chain(nearest)
            .flat_map(|at| [at, at + across, at - across, at + up, at - up])
            .all(|point| {
                let to = point - blast;
                self.fixed_cover_distance(arena, blast, to.normalize_or_zero()) + 0.1 < to.length()
            })
    }
}
