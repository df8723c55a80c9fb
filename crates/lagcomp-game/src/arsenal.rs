//! The weapons besides the rifle as a bot's client fires them: which one fits the target,
//! whether the server's fire-rate rule lets it fire now, and each kind's claim built from
//! what this client draws (pellets from the seed, the knife's thrust, the rocket's flight
//! step by step and its blast). The rifle's shot is the brain's own `fire`; the sniper
//! rifle's is that shot with the players its round passes through (`sniper.rs`).

use std::collections::VecDeque;

use glam::Vec3;
use lagcomp::projectile::{ClaimedTarget, Flight, FlightState};
use lagcomp::spread::{MAX_PELLETS, Pellets, Spread, pellet_seed};
use lagcomp::{BoneTransform, HitboxId, PlacedShape, Pose, Rig, Shape, ShapeSweep};
use lagcomp_net::interp::View;
use lagcomp_net::shot::stamp;
use lagcomp_validate::pellets::{PelletClaim, PelletTarget};
use lagcomp_validate::projectile::ProjectileHitClaim;
use lagcomp_validate::splash::{MAX_VICTIMS, SplashClaim};
use lagcomp_validate::{ClaimedHit, MeleeClaim, RenderTime, WeaponClaim};

use super::{BotBrain, Stops};
use crate::body::{self, Arena, BONES, EYE};
use crate::traffic::{FiredShot, claim_fingerprint};
use crate::weapon::{self, Arm, KNIFE_REACH, ROCKET_SPEED};

/// Targets nearer than this (eye to chest, metres) get the knife.
const KNIFE_RANGE: f32 = 1.4;
/// Targets nearer than this get the shotgun.
const SHOTGUN_RANGE: f32 = 7.0;
/// Targets from [`SHOTGUN_RANGE`] plus 2 m up to this get a rocket: a flight of under half
/// a second, so the claim arrives while the history still holds the moment it was fired.
const ROCKET_RANGE: f32 = 18.0;
/// Targets farther than this get the sniper rifle.
const SNIPER_RANGE: f32 = 22.0;
/// The shotgun's reach in the rules: a pellet that strikes farther is claimed as nothing.
const SHOTGUN_REACH: f32 = 39.0;

/// Seconds of margin a rocket's claim keeps inside the window: resends after lost
/// inputs, the frame and step it waits for.
const ROCKET_MARGIN: f64 = 0.15;

/// How far a pellet's line may be moved sideways, metres, and still strike the same body
/// for the client to claim it: a pellet that grazes an edge is left unclaimed rather than
/// risk the server's trace seeing the edge a hair differently.
const PELLET_MARGIN: f32 = 0.02;

/// The knife's blade: a sphere this big (radius, metres), thrust from this far in front of
/// the eye along the view for [`THRUST`] metres: the farthest it can touch stays inside
/// [`KNIFE_REACH`].
const BLADE: f32 = 0.08;
const HAND: f32 = 0.2;
const THRUST: f32 = 1.5;

/// How far off the thrust the views reported in the last round trip and interpolation
/// delay may have looked, degrees: the server judges a strike by the view it recorded at
/// the moment drawn (within the knife's 90 degrees), which a bot turning after a target
/// close by may have swept past.
const KNIFE_STEADY: f32 = 60.0;

/// Views remembered: a second and a half of frames at 60 a second.
const VIEWS_KEPT: usize = 96;

/// What a brain with the whole arsenal keeps besides the rifle's state.
#[derive(Debug, Clone)]
pub(super) struct Arsenal {
    /// The shotgun's spread, from the server's rules.
    pub(super) spread: Spread,
    /// The rocket's flight, from the server's rules.
    pub(super) flight: Flight,
    /// The claimed times of its latest shots, oldest first: what the server's fire-rate
    /// rule spaces a new shot from, whatever weapon fired them.
    recent: VecDeque<f64>,
    /// The rocket in flight, if any: it holds fire until the rocket has struck.
    rocket: Option<Rocket>,
    /// The server's rewind window, seconds.
    window: f64,
    /// Each remote's bones at the moment a rocket step is traced.
    sampled: Vec<Vec<BoneTransform>>,
    /// The views it reported lately, oldest first: (local time, forward).
    views: VecDeque<(f64, Vec3)>,
    /// The players' rig (for a cheat that judges a blast's sight lines to their
    /// hitboxes).
    pub(super) rig: std::sync::Arc<Rig>,
}

/// A rocket this client fired and is flying, step by step, through what it draws.
#[derive(Debug, Clone, Copy)]
struct Rocket {
    /// The server time drawn when it was fired: the moment its claim names.
    fired_at: f64,
    render_time: RenderTime,
    origin: Vec3,
    direction: Vec3,
    state: FlightState,
    /// The remote whose view stamped the fire, and whether that view was clean.
    shown: usize,
    clean_view: bool,
}

impl Arsenal {
    /// The arsenal for a server whose window is `window` seconds; `None` when the rules
    /// refuse that window (the brain then carries the rifle only).
    pub(super) fn new(window: f64) -> Option<Self> {
        let rules = weapon::rules(window, None).ok()?;
        let spread = rules.weapon(weapon::SHOTGUN)?.pellet_weapon()?.spread;
        let flight = rules.weapon(weapon::ROCKET_LAUNCHER)?.flight()?;
        Some(Self {
            spread,
            flight,
            window,
            recent: VecDeque::with_capacity(32),
            rocket: None,
            sampled: Vec::new(),
            views: VecDeque::with_capacity(VIEWS_KEPT),
            rig: body::humanoid(),
        })
    }

    /// Whether `arm` may fire a shot claiming server time `at`, by the server's rule (a
    /// run of `k` shots ending with this one spans at least `k` of this weapon's
    /// intervals, less the server's 5 % slack, whatever weapon fired the earlier ones),
    /// with a margin for the claim's `f32` fraction.
    ///
    /// The server looks back `(burst + 2) * 4` of the weapon's intervals; this looks back
    /// as far for a burst of one (the rocket's), and allows no burst: never more
    /// lenient than the server.
    pub(super) fn may_fire(&self, arm: Arm, at: f64) -> bool {
        let spacing = 0.97 * arm.interval();
        let horizon = 12.0 * arm.interval();
        self.recent
            .iter()
            .rev()
            .take_while(|&&f| at - f <= horizon)
            .enumerate()
            .all(|(k, &f)| at - f >= (k as f64 + 1.0) * spacing)
    }

    /// Remembers a shot claiming server time `at`. The server looks back at most 8 of
    /// the slowest weapon's intervals (10 s); older shots are forgotten.
    pub(super) fn fired(&mut self, at: f64) {
        while self.recent.front().is_some_and(|&f| at - f > 10.0) || self.recent.len() >= 32 {
            self.recent.pop_front();
        }
        self.recent.push_back(at);
    }

    /// Remembers the view reported at local time `local` (forward, unit length).
    pub(super) fn viewed(&mut self, local: f64, forward: Vec3) {
        while self.views.len() >= VIEWS_KEPT {
            self.views.pop_front();
        }
        self.views.push_back((local, forward));
    }

    /// Whether every view reported since local time `since` looks within `degrees` of
    /// `aim` (unit length).
    fn steady_since(&self, since: f64, aim: Vec3, degrees: f32) -> bool {
        let cos = degrees.to_radians().cos();
        self.views
            .iter()
            .filter(|(at, _)| *at >= since)
            .all(|(_, forward)| forward.dot(aim) >= cos)
    }

    /// Whether a rocket is in flight (the brain holds fire).
    pub(super) fn flying(&self) -> bool {
        self.rocket.is_some()
    }
}

/// Which weapon fits a target `distance` metres away (eye to chest).
pub(super) fn pick(distance: f32) -> Arm {
    if distance < KNIFE_RANGE {
        Arm::Knife
    } else if distance < SHOTGUN_RANGE {
        Arm::Shotgun
    } else if (SHOTGUN_RANGE + 2.0..ROCKET_RANGE).contains(&distance) {
        Arm::RocketLauncher
    } else if distance > SNIPER_RANGE {
        Arm::SniperRifle
    } else {
        Arm::Rifle
    }
}

impl BotBrain {
    /// An honest shot with the weapon that fits the target (slot `self.target`, its chest
    /// at `chest`), from `eye` as drawn at server time `render`. A rocket is launched and
    /// flown in later frames ([`BotBrain::fly_rocket`]): nothing to send yet. `None` as
    /// well when the weapon's rate holds it back ([`BotBrain::held`] set).
    #[expect(clippy::too_many_arguments, reason = "one step of the frame")]
    pub(super) fn fire_arm(
        &mut self,
        me: usize,
        eye: Vec3,
        chest: Vec3,
        render: f64,
        local: f64,
        arena: &Arena,
        rig: &Rig,
    ) -> Option<(WeaponClaim, FiredShot)> {
        let aimed = self.target;
        let view = self.remotes[aimed].view?;
        let render_time = RenderTime::from(stamp(&view));
        let at = self.claimed_at(aimed, render_time)?;
        // Weapons other than the rifles only on a plain view (a frame or a blend of two):
        // an extrapolated or teleport's view is the rifle's alone, whose claim names the
        // one body it hit; and a rocket only when its claim will reach the server while
        // the history still holds the moment it was fired.
        let plain = matches!(view, View::Exact { .. } | View::Interpolated { .. });
        let distance = chest.distance(eye);
        let arm = match pick(distance) {
            Arm::Rifle | Arm::SniperRifle => pick(distance),
            _ if !plain => Arm::Rifle,
            Arm::RocketLauncher if !self.rocket_arrives_in_time(distance / ROCKET_SPEED) => {
                Arm::Rifle
            }
            arm => arm,
        };
        let allowed = self.arsenal.as_ref().is_some_and(|a| a.may_fire(arm, at));
        if !allowed {
            self.held = true;
            return None;
        }
        let clean_view = matches!(
            view,
            View::Exact { .. } | View::Interpolated { .. } | View::Extrapolated { .. }
        );
        let aim = self.aim_with_error(chest, eye);
        let shot = match arm {
            Arm::Knife => self.thrust(me, eye, aim, render_time, clean_view, arena, rig),
            Arm::Shotgun => self.pellets(me, eye, aim, render_time, clean_view, arena, rig),
            Arm::RocketLauncher => {
                self.launch(eye, aim, at, render_time, clean_view, local)?;
                return None;
            }
            Arm::Rifle | Arm::SniperRifle | Arm::RocketBlast => {
                self.arm = arm;
                let shot = self.fire(me, eye, render, arena, rig, false);
                self.arm = Arm::Rifle;
                // The sniper round passes through players: claimed as the chain this
                // client drew, when the target was drawn from snapshots (an extrapolated
                // picture is the rifle's alone).
                // Nor across a gap of lost snapshots: 3 honest penetration claims over 10
                // seeds, each drawn from a blend of two snapshots 6 ticks apart, named a body
                // the server's walk did not meet (a hitscan claim's leeway absorbs that).
                let adjacent = match view {
                    View::Exact { .. } => true,
                    View::Interpolated { from, to, .. } => to.0.wrapping_sub(from.0) == 1,
                    _ => false,
                };
                return shot.map(|(claim, shot)| match arm {
                    Arm::SniperRifle if adjacent => self.penetrating(me, &claim, shot, arena, rig),
                    _ => (WeaponClaim::Hitscan(claim), shot),
                });
            }
        };
        if shot.is_some()
            && let Some(arsenal) = &mut self.arsenal
        {
            arsenal.fired(at);
        }
        shot
    }

    /// Whether a rocket claim for a strike `flight` seconds into the flight reaches the
    /// server while its history still holds the moment the rocket was fired: that moment
    /// is a round trip and the interpolation delay old when the claim is sent (half a
    /// round trip to arrive), plus the flight, plus a margin for a resend or two.
    fn rocket_arrives_in_time(&self, flight: f32) -> bool {
        let age = self.clock.rtt().srtt().unwrap_or(0.0) + self.delay.delay() + f64::from(flight);
        self.arsenal
            .as_ref()
            .is_some_and(|a| age + ROCKET_MARGIN <= a.window)
    }

    /// Where a player's aim lands on a target's chest: off by a human-sized error.
    fn aim_with_error(&mut self, chest: Vec3, eye: Vec3) -> Vec3 {
        let noise = Vec3::new(
            super::gaussian(&mut self.rng),
            super::gaussian(&mut self.rng),
            super::gaussian(&mut self.rng),
        ) * 0.12;
        (chest + noise - eye).normalize_or_zero()
    }

    /// The next sequence number.
    pub(super) fn take_seq(&mut self) -> u32 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// The shotgun: the pellets drawn from the seed the server will draw them from, each
    /// traced through what this client draws; a pellet is claimed on the body it strikes
    /// only when lines [`PELLET_MARGIN`] to each side strike it too.
    #[expect(clippy::too_many_arguments, reason = "one shot's inputs")]
    fn pellets(
        &mut self,
        me: usize,
        eye: Vec3,
        aim: Vec3,
        render_time: RenderTime,
        clean_view: bool,
        arena: &Arena,
        rig: &Rig,
    ) -> Option<(WeaponClaim, FiredShot)> {
        let spread = self.arsenal.as_ref()?.spread;
        let seq = self.take_seq();
        let seed = pellet_seed(self.me.to_bits(), seq);
        let drawn = Pellets::new(&spread, aim, seed).ok()?;
        let mut hits = [None; MAX_PELLETS];
        let mut first = None;
        for (slot, &direction) in hits.iter_mut().zip(drawn.directions()) {
            // Pellets are claimed on the body aimed at, whose view stamped the claim.
            let Some((i, hitbox, at)) = self
                .robust_trace(me, eye, direction, arena, rig)
                .filter(|(i, _, _)| *i == self.target)
            else {
                continue;
            };
            *slot = Some(PelletTarget {
                target: self.remotes[i].id,
                hitbox: None,
            });
            first.get_or_insert((i, hitbox, at));
        }
        let claim = WeaponClaim::Pellets(PelletClaim {
            shooter: self.me,
            weapon: weapon::SHOTGUN,
            seq,
            render_time,
            origin: eye,
            direction: aim,
            seed,
            pellets: u8::try_from(spread.pellets()).ok()?,
            hits,
        });
        let shown = first.map_or(self.target, |(i, _, _)| i);
        let shot = self.fired_any(&claim, Arm::Shotgun, first, shown, clean_view);
        Some((claim, shot))
    }

    /// What a pellet along `direction` strikes, when lines moved [`PELLET_MARGIN`] to
    /// each side strike the same body within the shotgun's reach.
    fn robust_trace(
        &self,
        me: usize,
        eye: Vec3,
        direction: Vec3,
        arena: &Arena,
        rig: &Rig,
    ) -> Option<(usize, HitboxId, Vec3)> {
        let hit = self.client_trace(me, eye, direction, arena, rig, Stops::All, None)?;
        if hit.2.distance(eye) > SHOTGUN_REACH {
            return None;
        }
        let side = direction.any_orthonormal_vector();
        let up = direction.cross(side);
        let same = [side, -side, up, -up].iter().all(|&offset| {
            self.client_trace(
                me,
                eye + offset * PELLET_MARGIN,
                direction,
                arena,
                rig,
                Stops::All,
                None,
            )
            .is_some_and(|(i, _, _)| i == hit.0)
        });
        same.then_some(hit)
    }

    /// The knife: a blade thrust along the view from the hand. Only a thrust whose blade,
    /// and a thinner one, meet the same body well inside the reach, with no wall, level
    /// piece or mover on the way, is made (`None` otherwise: the brain tries again).
    #[expect(clippy::too_many_arguments, reason = "one strike's inputs")]
    fn thrust(
        &mut self,
        me: usize,
        eye: Vec3,
        aim: Vec3,
        render_time: RenderTime,
        clean_view: bool,
        arena: &Arena,
        rig: &Rig,
    ) -> Option<(WeaponClaim, FiredShot)> {
        // The view the server will judge by is one this client reported up to a round
        // trip and its interpolation delay ago.
        let looked = self.clock.rtt().srtt().unwrap_or(0.0) + self.delay.delay() + 0.15;
        let now = self.views_now();
        if !self
            .arsenal
            .as_ref()
            .is_some_and(|a| a.steady_since(now - looked, aim, KNIFE_STEADY))
        {
            return None;
        }
        let hand = eye + aim * HAND;
        let struck = |radius: f32| -> Option<(f32, usize, HitboxId)> {
            let mut best: Option<(f32, usize, HitboxId)> = None;
            for (i, remote) in self.remotes.iter().enumerate() {
                if i == me || remote.view.is_none() || remote.scratch.len() != BONES {
                    continue;
                }
                for hitbox in rig.hitboxes() {
                    let placed = hitbox.placed(&remote.scratch[usize::from(hitbox.bone)]);
                    if let Some(c) = placed.cast_sphere_line(hand, aim, radius)
                        && (0.0..=THRUST).contains(&c.enter)
                        && best.is_none_or(|b| c.enter < b.0)
                    {
                        best = Some((c.enter, i, hitbox.id));
                    }
                }
            }
            best
        };
        let (enter, i, hitbox) = struck(BLADE)?;
        let thin = struck(BLADE * 0.4)?;
        let wall = self
            .cover_distance(arena, eye, aim)
            .min(self.mover_distance(eye, aim));
        let reach = HAND + enter + BLADE;
        if thin.1 != i || enter > THRUST - 0.2 || wall < reach + 0.3 || reach > KNIFE_REACH - 0.2 {
            return None;
        }
        let sweep = ShapeSweep::line(
            PlacedShape::new(Pose::from_translation(hand), Shape::sphere(BLADE)),
            aim,
            THRUST,
        )
        .ok()?;
        let claim = WeaponClaim::Melee(MeleeClaim {
            shooter: self.me,
            weapon: weapon::KNIFE,
            seq: self.take_seq(),
            render_time,
            eye,
            aim,
            sweep,
            hit: Some(ClaimedHit {
                target: self.remotes[i].id,
                hitbox: None,
                point: None,
            }),
        });
        let at = hand + aim * (enter + BLADE);
        let shot = self.fired_any(&claim, Arm::Knife, Some((i, hitbox, at)), i, clean_view);
        Some((claim, shot))
    }

    /// The local time of the latest view remembered.
    fn views_now(&self) -> f64 {
        self.arsenal
            .as_ref()
            .and_then(|a| a.views.back())
            .map_or(f64::NEG_INFINITY, |(at, _)| *at)
    }

    /// Fires a rocket from `eye` along `aim` at server time `at` (what `render_time`
    /// names); it flies in the frames to come.
    fn launch(
        &mut self,
        eye: Vec3,
        aim: Vec3,
        at: f64,
        render_time: RenderTime,
        clean_view: bool,
        local: f64,
    ) -> Option<()> {
        let shown = self.target;
        let arsenal = self.arsenal.as_mut()?;
        let state = arsenal.flight.launch(eye, aim).ok()?;
        arsenal.rocket = Some(Rocket {
            fired_at: at,
            render_time,
            origin: eye,
            direction: aim,
            state,
            shown,
            clean_view,
        });
        arsenal.fired(at);
        // The view follows the rocket until it has struck.
        self.aim = body::look_along(aim);
        self.hold_aim_until = local + f64::from(arsenal.flight.max_time());
        Some(())
    }

    /// Flies the rocket in flight through every step that ends by the moment drawn now
    /// (`render`), each step traced against the bodies as drawn at its own moment (the
    /// fire moment plus its flight time), as the server re-flies it. When it strikes a
    /// body, returns its projectile claim and its blast's splash claim, in that order:
    /// the server judges the projectile's fire rate as if it had arrived when it was
    /// fired, so the blast, judged at its arrival, must come after it. When it strikes a
    /// wall, a level piece or a mover, or expires, it is dropped with nothing to claim.
    pub(super) fn fly_rocket(
        &mut self,
        me: usize,
        render: f64,
        local: f64,
        arena: &Arena,
        rig: &Rig,
    ) -> Option<[(WeaponClaim, FiredShot); 2]> {
        let arsenal = self.arsenal.as_mut()?;
        let mut rocket = arsenal.rocket?;
        let flight = arsenal.flight;
        let mut sampled = std::mem::take(&mut arsenal.sampled);
        sampled.resize_with(self.remotes.len(), Vec::new);
        let mut outcome = None;
        loop {
            let step = rocket.state.step;
            let start = rocket.fired_at + flight.time_of_step(step);
            if step >= flight.steps() {
                outcome = Some(None);
                break;
            }
            if rocket.fired_at + flight.time_of_step(step + 1) > render {
                break;
            }
            let next = flight.advance(&rocket.state);
            let from = rocket.state.position;
            let along = next.position - from;
            let length = along.length();
            let direction = along / length;
            for (remote, bones) in self.remotes.iter_mut().zip(sampled.iter_mut()) {
                if remote.buffer.sample(start, 0.0, bones).is_none() {
                    bones.clear();
                }
            }
            let struck = strike(&sampled, me, rig, from, direction, length);
            let wall = self
                .cover_distance_at(arena, from, direction, start)
                .min(self.mover_distance(from, direction));
            if wall <= length && struck.is_none_or(|(d, _, _)| wall < d + 0.3) {
                outcome = Some(None);
                break;
            }
            if let Some((distance, i, hitbox)) = struck {
                // A strike whose claim would arrive after the history let go of the fire
                // moment is not claimed: the server could only refuse it as too old.
                let in_time = self.rocket_arrives_in_time(flight.time_of_step(step) as f32);
                let mine = sampled[me].get(EYE as usize).map(|b| b.translation);
                outcome = Some(
                    mine.filter(|_| in_time)
                        .map(|eye| (step, start, from + direction * distance, i, hitbox, eye)),
                );
                break;
            }
            rocket.state = next;
        }
        let arsenal = self.arsenal.as_mut()?;
        arsenal.sampled = sampled;
        arsenal.rocket = outcome.is_none().then_some(rocket);
        let (step, start, position, i, hitbox, eye) = outcome??;
        let target = self.remotes[i].id;
        let hit = ClaimedTarget::Entity {
            entity: target,
            hitbox,
        };
        let mut victims = [None; MAX_VICTIMS];
        victims[0] = Some(target);
        let projectile = WeaponClaim::Projectile(ProjectileHitClaim {
            shooter: self.me,
            weapon: weapon::ROCKET_LAUNCHER,
            seq: self.take_seq(),
            render_time: rocket.render_time,
            origin: rocket.origin,
            direction: rocket.direction,
            step,
            target: hit,
            position,
        });
        // The blast is a shot of its own: the moment drawn when it went off, from where
        // the shooter stood then.
        let blast = WeaponClaim::Splash(SplashClaim {
            shooter: self.me,
            weapon: weapon::ROCKET_LAUNCHER,
            seq: self.take_seq(),
            render_time: RenderTime::Time(start),
            origin: eye,
            // Where it was aimed: the view its inputs report until the claims are in.
            direction: rocket.direction,
            blast: position,
            victims,
        });
        if let Some(arsenal) = &mut self.arsenal {
            arsenal.fired(start);
        }
        // The server spaces arrivals by a rocket's interval per claim, the projectile's
        // counted from when it was fired: two intervals from now.
        self.next_fire = self
            .next_fire
            .max(local + 2.0 * Arm::RocketLauncher.interval());
        // The view stays on the rocket's line while the claims may still be resent.
        self.hold_aim_until = local + 0.3;
        let struck = Some((i, hitbox, position));
        let blast_shot = self.fired_any(&blast, Arm::RocketBlast, struck, i, rocket.clean_view);
        let rocket_shot = self.fired_any(
            &projectile,
            Arm::RocketLauncher,
            struck,
            rocket.shown,
            rocket.clean_view,
        );
        Some([(projectile, rocket_shot), (blast, blast_shot)])
    }

    /// What this client remembers of a claim of any kind.
    pub(super) fn fired_any(
        &self,
        claim: &WeaponClaim,
        arm: Arm,
        hit: Option<(usize, HitboxId, Vec3)>,
        shown: usize,
        clean_view: bool,
    ) -> FiredShot {
        FiredShot {
            fingerprint: claim_fingerprint(claim),
            arm,
            seq: claim.seq(),
            client_hit: hit.map(|(i, h, _)| (self.remotes[i].id, h)),
            drawn: self.remotes[shown].scratch.clone(),
            clean_view,
            cheat: false,
        }
    }
}

/// The nearest hitbox of any body in `sampled` but `me` that the segment from `from`,
/// `length` metres along `direction`, meets: its distance, slot and hitbox.
fn strike(
    sampled: &[Vec<BoneTransform>],
    me: usize,
    rig: &Rig,
    from: Vec3,
    direction: Vec3,
    length: f32,
) -> Option<(f32, usize, HitboxId)> {
    let mut best: Option<(f32, usize, HitboxId)> = None;
    for (i, bones) in sampled.iter().enumerate() {
        if i == me || bones.len() != BONES {
            continue;
        }
        for hitbox in rig.hitboxes() {
            let placed = hitbox.placed(&bones[usize::from(hitbox.bone)]);
            if let Some(c) = placed
                .cast_line(from, direction)
                .and_then(|c| c.clip(length))
                && best.is_none_or(|b| c.enter < b.0)
            {
                best = Some((c.enter, i, hitbox.id));
            }
        }
    }
    best
}
