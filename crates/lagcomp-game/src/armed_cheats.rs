//! The cheat classes that bend a weapon other than the rifle, as a cheating bot's client
//! plays them: a rocket claimed to strike before it could arrive, pellets drawn from a
//! seed of its choosing, a knife that strikes beyond its reach, a blast claimed through a
//! wall. Each builds the claim an honest client would and bends the one part its class
//! is about.

use glam::Vec3;
use lagcomp::projectile::ClaimedTarget;
use lagcomp::spread::{MAX_PELLETS, pellet_seed};
use lagcomp::{PlacedShape, Pose, Shape, ShapeSweep};
use lagcomp_net::shot::stamp;
use lagcomp_validate::pellets::{PelletClaim, PelletTarget};
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

/// How far a long knife's target is, metres: past the knife's reach, near enough to
/// pass for a lunge.
pub(super) const LONG_KNIFE: (f32, f32) = (KNIFE_REACH + 0.5, 8.0);

impl BotBrain {
    /// A cheating claim of its class's weapon at the target (slot `self.target`, its
    /// chest at `chest`), from `eye`; `None` when the target does not suit the class this
    /// frame, or the weapon's rate holds it back ([`BotBrain::held`] set): the cheats
    /// keep the fire rate, so what refuses them is what their class bends.
    pub(super) fn cheat_arm(
        &mut self,
        eye: Vec3,
        chest: Vec3,
        arena: &Arena,
    ) -> Option<(WeaponClaim, FiredShot)> {
        let cheat = self.cheat?;
        let aimed = self.target;
        let view = self.remotes[aimed].view?;
        let render_time = RenderTime::from(stamp(&view));
        let at = self.claimed_at(aimed, render_time)?;
        let arm = match cheat {
            Cheat::EarlyRocket => Arm::RocketLauncher,
            Cheat::ChosenPelletSeed => Arm::Shotgun,
            Cheat::LongKnife => Arm::Knife,
            Cheat::BlastThroughWall => Arm::RocketBlast,
            _ => return None,
        };
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
                // A blast just this side of the wall the target stands behind, claimed
                // to catch it.
                let wall = self.cover_distance(arena, eye, aim);
                if wall >= distance || distance - wall > BLAST_RADIUS - 0.5 || wall < 1.0 {
                    return None;
                }
                let blast = eye + aim * (wall - 0.2);
                if !self.walled_off(blast, aimed, arena) {
                    return None;
                }
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

    /// Whether walls or the level stand between `blast` and every part of the body in
    /// slot `i` (its bones, and points a body's width to each side of its chest): a blast
    /// there can only catch it through a wall.
    fn walled_off(&self, blast: Vec3, i: usize, arena: &Arena) -> bool {
        let bones = &self.remotes[i].scratch;
        let chest = bones[body::CHEST as usize].translation;
        let across = (chest - blast).cross(Vec3::Y).normalize_or_zero() * 0.4;
        bones
            .iter()
            .map(|b| b.translation)
            .chain([chest + across, chest - across, chest + Vec3::Y * 0.6])
            .all(|point| self.behind_cover(blast, point, arena))
    }
}
