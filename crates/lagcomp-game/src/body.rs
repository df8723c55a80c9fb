//! Bots' bodies: the humanoid rig the server records, how bots move (strafing with random
//! reversals, running, crouching, respawning), and the arena: its walls, and the
//! [`ArenaSpec`] a server sends its clients so they build the same one.

use std::sync::Arc;

use glam::{EulerRot, Quat, Vec3};
use lagcomp::{Axis, BoneTransform, Hitbox, HitboxId, Pose, Rig, Shape, Zone};
use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// Bones of the humanoid, in order.
pub const PELVIS: u16 = 0;
/// The chest bone.
pub const CHEST: u16 = 1;
/// The head bone.
pub const HEAD: u16 = 2;
/// The eye: a bare bone whose rotation is the view (forward is -Z). The validator's aim
/// bone.
pub const EYE: u16 = 3;
/// Bones in the rig.
pub const BONES: usize = 8;

/// Hitbox ids.
pub const HEAD_BOX: HitboxId = HitboxId(2);
/// The chest hitbox.
pub const CHEST_BOX: HitboxId = HitboxId(1);

/// Standing eye height, metres.
const EYE_HEIGHT: f32 = 1.62;
/// How much lower everything above the hips is when fully crouched.
const CROUCH_DROP: f32 = 0.45;

/// The humanoid rig: pelvis and chest boxes, head sphere, arm and leg capsules.
#[must_use]
pub fn humanoid() -> Arc<Rig> {
    let hitboxes = vec![
        Hitbox::new(
            0,
            "pelvis",
            Zone::Torso,
            PELVIS,
            Shape::cuboid(Vec3::new(0.18, 0.12, 0.12)),
        ),
        Hitbox::new(
            1,
            "chest",
            Zone::Torso,
            CHEST,
            Shape::cuboid(Vec3::new(0.2, 0.22, 0.13)),
        ),
        Hitbox::new(2, "head", Zone::Head, HEAD, Shape::sphere(0.12)),
        Hitbox::new(
            3,
            "arm_l",
            Zone::Limb,
            4,
            Shape::capsule(0.05, 0.25, Axis::Y),
        )
        .offset_by(Vec3::new(0.0, -0.25, 0.0)),
        Hitbox::new(
            4,
            "arm_r",
            Zone::Limb,
            5,
            Shape::capsule(0.05, 0.25, Axis::Y),
        )
        .offset_by(Vec3::new(0.0, -0.25, 0.0)),
        Hitbox::new(
            5,
            "leg_l",
            Zone::Limb,
            6,
            Shape::capsule(0.07, 0.35, Axis::Y),
        )
        .offset_by(Vec3::new(0.0, -0.4, 0.0)),
        Hitbox::new(
            6,
            "leg_r",
            Zone::Limb,
            7,
            Shape::capsule(0.07, 0.35, Axis::Y),
        )
        .offset_by(Vec3::new(0.0, -0.4, 0.0)),
    ];
    Arc::new(Rig::new(BONES as u16, hitboxes).expect("the humanoid rig is valid"))
}

/// Where a bot is and what it is doing, as the server simulates it.
#[derive(Debug, Clone)]
pub struct Body {
    /// Feet position.
    pub position: Vec3,
    /// Velocity, m/s.
    pub velocity: Vec3,
    /// Facing (about +Y), radians.
    pub yaw: f32,
    /// 0 standing, 1 fully crouched.
    pub crouch: f32,
    /// The view, as last reported by the bot's client.
    pub aim: Quat,
    /// Walk cycle phase, radians.
    pub phase: f32,
    strafe: f32,
    speed: f32,
    crouch_target: f32,
    /// Seconds until the next change of direction / stance.
    next_change: f64,
    /// Server time until which the bot is invulnerable (after a respawn).
    pub invulnerable_until: f64,
    /// Server time until which the bot's dodge lasts (registered by the server when it
    /// started).
    pub evasive_until: f64,
    /// Set for the one frame after a respawn.
    pub teleported: bool,
}

/// A dodging body's dash speed, m/s: a sprinter's, the top of a run.
const DODGE_SPEED: f32 = 6.5;

impl Body {
    /// A body at a random spot of the arena.
    pub fn spawn(arena: &Arena, rng: &mut Pcg64Mcg) -> Self {
        let mut body = Self {
            position: arena.random_spot(rng),
            velocity: Vec3::ZERO,
            yaw: rng.random_range(0.0..std::f32::consts::TAU),
            crouch: 0.0,
            aim: Quat::IDENTITY,
            phase: 0.0,
            strafe: 1.0,
            speed: 3.0,
            crouch_target: 0.0,
            next_change: 0.0,
            invulnerable_until: f64::NEG_INFINITY,
            evasive_until: f64::NEG_INFINITY,
            teleported: false,
        };
        body.aim = Quat::from_rotation_y(body.yaw);
        body
    }

    /// Advances the body by `dt` at server time `now`: strafing with random reversals,
    /// bursts of running, crouching, now and then a respawn elsewhere (a teleport,
    /// followed by a second of invulnerability), and `dodge_rate` times a second on
    /// average a dodge: a dash the other way, evasive for 0.3 to 0.5 s.
    pub fn step(
        &mut self,
        arena: &Arena,
        now: f64,
        dt: f64,
        (respawn_rate, dodge_rate): (f64, f64),
        rng: &mut Pcg64Mcg,
    ) {
        self.teleported = false;
        if rng.random_bool((respawn_rate * dt).clamp(0.0, 1.0)) {
            self.position = arena.random_spot(rng);
            self.velocity = Vec3::ZERO;
            self.teleported = true;
            self.invulnerable_until = now + 1.0;
            return;
        }
        // No draw at a zero rate: a match without dodges plays as it did before they
        // existed, seed for seed.
        if dodge_rate > 0.0
            && !self.evasive(now)
            && rng.random_bool((dodge_rate * dt).clamp(0.0, 1.0))
        {
            self.evasive_until = now + rng.random_range(0.3..0.5);
            self.strafe = -self.strafe;
            self.speed = DODGE_SPEED;
            // The dash lasts the dodge; the next change of mind comes after it.
            self.next_change = self.evasive_until - now;
        }
        self.next_change -= dt;
        if self.next_change <= 0.0 {
            self.next_change = rng.random_range(0.25..1.5);
            if rng.random_bool(0.6) {
                self.strafe = -self.strafe;
            }
            self.speed = if rng.random_bool(0.3) {
                rng.random_range(5.0..6.5)
            } else {
                rng.random_range(2.0..4.0)
            };
            self.crouch_target = if rng.random_bool(0.2) { 1.0 } else { 0.0 };
            self.yaw += rng.random_range(-0.6..0.6);
        }
        let dt32 = dt as f32;
        let side = Quat::from_rotation_y(self.yaw) * Vec3::X;
        let wanted = side * self.strafe * self.speed * (1.0 - 0.5 * self.crouch);
        // Accelerate towards the wanted velocity (about 0.1 s to turn around).
        self.velocity += (wanted - self.velocity) * (dt32 * 10.0).min(1.0);
        let mut next = self.position + self.velocity * dt32;
        if !arena.contains(next) {
            self.strafe = -self.strafe;
            self.velocity = -self.velocity;
            next = self.position;
        }
        self.position = next;
        self.crouch += (self.crouch_target - self.crouch) * (dt32 * 8.0).min(1.0);
        self.phase += self.velocity.length() * dt32 * 4.0;
    }

    /// Whether the bot is invulnerable (spawn-protected) at server time `now`.
    #[must_use]
    pub fn invulnerable(&self, now: f64) -> bool {
        now < self.invulnerable_until
    }

    /// Whether the bot is dodging at server time `now`.
    #[must_use]
    pub fn evasive(&self, now: f64) -> bool {
        now < self.evasive_until
    }

    /// What its bones are computed from.
    #[must_use]
    pub fn stance(&self) -> Stance {
        Stance {
            position: self.position,
            yaw: self.yaw,
            crouch: self.crouch,
            phase: self.phase,
            aim: self.aim,
        }
    }

    /// The world transform of every bone: [`Stance::pose`] of its [`Body::stance`].
    pub fn pose(&self, out: &mut [BoneTransform]) {
        self.stance().pose(out);
    }
}

/// What the humanoid's bones are a pure function of ([`Stance::pose`]): where it stands,
/// which way it faces and looks, how far it crouches, where it is in its walk cycle.
///
/// A server can send this instead of the 8 bones (`lagcomp serve` does): a client that
/// runs [`Stance::pose`] on the same numbers gets the bones the server recorded bit for
/// bit, as long as both run this code with the same `sin`/`cos` (glam calls `std`'s, which
/// are the platform C library's: the same on one platform).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stance {
    /// Feet position.
    pub position: Vec3,
    /// Facing (about +Y), radians.
    pub yaw: f32,
    /// 0 standing, 1 fully crouched.
    pub crouch: f32,
    /// Walk cycle phase, radians.
    pub phase: f32,
    /// The view (the eye bone's rotation, normalised when posed).
    pub aim: Quat,
}

impl Stance {
    /// The world transform of every bone.
    ///
    /// # Panics
    /// When `out` does not hold exactly [`BONES`] transforms.
    pub fn pose(&self, out: &mut [BoneTransform]) {
        assert_eq!(out.len(), BONES, "one transform per bone");
        let turn = Quat::from_rotation_y(self.yaw);
        let drop = CROUCH_DROP * self.crouch;
        let at = |local: Vec3| self.position + turn * local;
        let swing = 0.5 * self.phase.sin();
        let bone = |t: Vec3, r: Quat| BoneTransform::new(t, r.normalize());
        out[PELVIS as usize] = bone(at(Vec3::new(0.0, 0.95 - 0.6 * drop, 0.0)), turn);
        out[CHEST as usize] = bone(at(Vec3::new(0.0, 1.3 - drop, 0.0)), turn);
        out[HEAD as usize] = bone(at(Vec3::new(0.0, EYE_HEIGHT - 0.02 - drop, 0.0)), turn);
        out[EYE as usize] = bone(at(Vec3::new(0.0, EYE_HEIGHT - drop, -0.08)), self.aim);
        for (i, side, sign) in [(4_usize, -0.27_f32, 1.0_f32), (5, 0.27, -1.0)] {
            let r = turn * Quat::from_rotation_x(sign * swing);
            out[i] = bone(at(Vec3::new(side, 1.45 - drop, 0.0)), r);
        }
        for (i, side, sign) in [(6_usize, -0.1_f32, -1.0_f32), (7, 0.1, 1.0)] {
            let r = turn * Quat::from_rotation_x(sign * swing);
            out[i] = bone(at(Vec3::new(side, 0.9 - 0.6 * drop, 0.0)), r);
        }
    }
}

/// A view rotation looking along `direction` (forward is -Z), without roll.
#[must_use]
pub fn look_along(direction: Vec3) -> Quat {
    let d = direction.normalize_or(Vec3::NEG_Z);
    let yaw = (-d.x).atan2(-d.z);
    let pitch = d.y.clamp(-1.0, 1.0).asin();
    Quat::from_euler(EulerRot::YXZ, yaw, pitch, 0.0)
}

/// The arena: a square floor with a few walls.
#[derive(Debug, Clone)]
pub struct Arena {
    /// Half the side, metres.
    pub half_size: f32,
    /// Walls: box shape and pose.
    pub walls: Vec<(Shape, Pose)>,
}

/// What a client needs to build the very arena the server plays on: its size, how many
/// walls and the seed they are drawn from. `lagcomp serve` sends it in its welcome and
/// `lagcomp bots` builds the arena from it ([`ArenaSpec::build`]), so both trace shots
/// against the same walls bit for bit (same code, same seeded generator).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArenaSpec {
    /// Half the side of the square floor, metres.
    pub half_size: f32,
    /// How many walls.
    pub walls: u16,
    /// The seed the walls are drawn from.
    pub seed: u64,
}

/// Why an [`ArenaSpec`] cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ArenaError {
    /// The half size is not a finite number of metres in
    /// [`ArenaSpec::MIN_HALF_SIZE`]`..=`[`ArenaSpec::MAX_HALF_SIZE`].
    #[error(
        "arena half size {0} m is not between {min} and {max} m",
        min = ArenaSpec::MIN_HALF_SIZE,
        max = ArenaSpec::MAX_HALF_SIZE
    )]
    HalfSize(f32),
    /// More walls than [`ArenaSpec::MAX_WALLS`].
    #[error("{0} arena walls is more than {max}", max = ArenaSpec::MAX_WALLS)]
    Walls(u16),
}

impl ArenaSpec {
    /// The standard arena: 46 m square with 5 walls, the simulator's size for 8 players.
    pub const STANDARD: Self = Self {
        half_size: 23.0,
        walls: 5,
        seed: 0x00a7_e4a0,
    };

    /// Players the standard arena is sized for.
    pub const STANDARD_PLAYERS: usize = 8;

    /// The smallest half size, metres: room for a body and a wall.
    pub const MIN_HALF_SIZE: f32 = 5.0;

    /// The largest half size, metres (well inside the history's coordinate range).
    pub const MAX_HALF_SIZE: f32 = 5000.0;

    /// The most walls (each is a static collider of the history and a client's trace).
    pub const MAX_WALLS: u16 = 4096;

    /// An arena sized for `players`: the standard arena's floor per player and walls in
    /// the same proportion (so a 200-player match is as crowded as an 8-player one), never
    /// smaller than the standard arena; the standard walls' seed.
    #[must_use]
    pub fn for_players(players: usize) -> Self {
        let scale = (players as f64 / Self::STANDARD_PLAYERS as f64).max(1.0);
        let half_size = (f64::from(Self::STANDARD.half_size) * scale.sqrt())
            .min(f64::from(Self::MAX_HALF_SIZE)) as f32;
        let walls = (f64::from(Self::STANDARD.walls) * scale)
            .round()
            .min(f64::from(Self::MAX_WALLS)) as u16;
        Self {
            half_size,
            walls,
            ..Self::STANDARD
        }
    }

    /// The arena: the same walls for the same spec on every run and every machine.
    ///
    /// # Errors
    /// [`ArenaError`]: a size or wall count out of range (a spec from the network is
    /// checked here before anything is built).
    pub fn build(&self) -> Result<Arena, ArenaError> {
        use rand::SeedableRng;
        if !(Self::MIN_HALF_SIZE..=Self::MAX_HALF_SIZE).contains(&self.half_size) {
            return Err(ArenaError::HalfSize(self.half_size));
        }
        if self.walls > Self::MAX_WALLS {
            return Err(ArenaError::Walls(self.walls));
        }
        Ok(Arena::new(
            self.half_size,
            usize::from(self.walls),
            &mut Pcg64Mcg::seed_from_u64(self.seed),
        ))
    }
}

impl Arena {
    /// The standard arena ([`ArenaSpec::STANDARD`]), the same on every run.
    #[must_use]
    pub fn standard() -> Self {
        Self::new(
            ArenaSpec::STANDARD.half_size,
            usize::from(ArenaSpec::STANDARD.walls),
            &mut rand::SeedableRng::seed_from_u64(ArenaSpec::STANDARD.seed),
        )
    }

    /// A square arena of `half_size` with `walls` walls 2.5 m tall, 4-8 m long, seeded.
    #[must_use]
    pub fn new(half_size: f32, walls: usize, rng: &mut Pcg64Mcg) -> Self {
        let walls = (0..walls)
            .map(|_| {
                let centre = Vec3::new(
                    rng.random_range(-half_size * 0.7..half_size * 0.7),
                    1.25,
                    rng.random_range(-half_size * 0.7..half_size * 0.7),
                );
                let length = rng.random_range(2.0..4.0);
                let shape = Shape::cuboid(Vec3::new(length, 1.25, 0.15));
                let pose = Pose::new(
                    centre,
                    Quat::from_rotation_y(rng.random_range(0.0..std::f32::consts::PI)),
                );
                (shape, pose)
            })
            .collect();
        Self { half_size, walls }
    }

    fn random_spot(&self, rng: &mut Pcg64Mcg) -> Vec3 {
        let h = self.half_size * 0.9;
        Vec3::new(rng.random_range(-h..h), 0.0, rng.random_range(-h..h))
    }

    fn contains(&self, p: Vec3) -> bool {
        p.x.abs() < self.half_size && p.z.abs() < self.half_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn look_along_points_the_eye_forward_there() {
        for d in [
            Vec3::X,
            Vec3::new(1.0, 0.3, -2.0),
            Vec3::NEG_Z,
            Vec3::new(-0.2, -0.5, 0.4),
        ] {
            let q = look_along(d);
            assert!((q * Vec3::NEG_Z - d.normalize()).length() < 1e-5, "{d}");
        }
    }

    #[test]
    fn an_arena_spec_builds_the_same_walls_every_time_and_scales_with_players() {
        // The standard spec is the standard arena, wall for wall.
        let standard = ArenaSpec::STANDARD.build().expect("valid");
        assert_eq!(format!("{standard:?}"), format!("{:?}", Arena::standard()));
        assert_eq!(ArenaSpec::for_players(8), ArenaSpec::STANDARD);
        // Fewer players never shrink it.
        assert_eq!(ArenaSpec::for_players(0), ArenaSpec::STANDARD);
        // 25 times the players: 25 times the floor (5 times the side) and the walls.
        let big = ArenaSpec::for_players(200);
        assert!((big.half_size - 115.0).abs() < 1e-3, "{big:?}");
        assert_eq!(big.walls, 125);
        let (a, b) = (big.build().expect("valid"), big.build().expect("valid"));
        assert_eq!(a.walls.len(), 125);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert!(
            a.walls
                .iter()
                .all(|(_, pose)| pose.translation.x.abs() < 115.0
                    && pose.translation.z.abs() < 115.0)
        );
        // Another seed, other walls.
        let other = ArenaSpec { seed: 7, ..big }.build().expect("valid");
        assert_ne!(format!("{a:?}"), format!("{other:?}"));
    }

    #[test]
    fn an_arena_spec_out_of_range_is_refused() {
        for half_size in [f32::NAN, f32::INFINITY, -1.0, 0.0, 4.9, 5000.5] {
            let spec = ArenaSpec {
                half_size,
                ..ArenaSpec::STANDARD
            };
            assert!(
                matches!(spec.build(), Err(ArenaError::HalfSize(_))),
                "{half_size}"
            );
        }
        let spec = ArenaSpec {
            walls: ArenaSpec::MAX_WALLS + 1,
            ..ArenaSpec::STANDARD
        };
        assert_eq!(
            spec.build().unwrap_err(),
            ArenaError::Walls(ArenaSpec::MAX_WALLS + 1)
        );
        // A huge player count is capped, never out of range.
        assert!(ArenaSpec::for_players(usize::MAX).build().is_ok());
    }

    #[test]
    fn bodies_stay_in_the_arena_and_crouching_lowers_the_head() {
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let arena = Arena::new(20.0, 3, &mut rng);
        let mut body = Body::spawn(&arena, &mut rng);
        let mut bones = vec![BoneTransform::IDENTITY; BONES];
        let mut heads = Vec::new();
        for tick in 0..64 * 30 {
            body.step(
                &arena,
                f64::from(tick) / 64.0,
                1.0 / 64.0,
                (0.05, 0.5),
                &mut rng,
            );
            assert!(arena.contains(body.position));
            body.pose(&mut bones);
            assert!(bones.iter().all(|b| b.validate().is_ok()));
            heads.push((body.crouch, bones[HEAD as usize].translation.y));
        }
        let standing = heads
            .iter()
            .filter(|(c, _)| *c < 0.05)
            .map(|h| h.1)
            .fold(0.0, f32::max);
        let crouched = heads
            .iter()
            .filter(|(c, _)| *c > 0.95)
            .map(|h| h.1)
            .fold(9.0, f32::min);
        assert!(crouched < standing - 0.3, "{crouched} vs {standing}");
    }
}
