//! Every rejection reason, each from a cheating claim next to its honest twin; the
//! outcomes that are not rejections (blocked, miss, leeway, the server's estimate, no
//! rewind, thick shots); fire rate under jitter; and the basis verdicts carry.
//!
//! Every cheat starts from an honest shot in the fixture's skirmish and changes the one
//! thing the cheat changes; its twin, unchanged, must be confirmed on the same hitbox.
//! Checks that keep state (sequence numbers, fire rate) judge the cheat and its twin on
//! clones of one validator, so both face the same history of shots.

use crate::fixture;
use std::collections::BTreeSet;

use crate::fixture::{
    ARM_L, CHEST, HEAD, HEAD_RADIUS, LAUNCHER, PELVIS, RIFLE, Role, Scene, Script, Shot, confirmed,
    rejected, rules, timing,
};
use lagcomp::{Blocker, EntityId, HitboxId, SampleKind, Tick, Vec3, Zone};
use lagcomp_validate::{
    ClientTiming, MeleeReason, Participant, RejectReason, RenderTime, ShotClaim, TimeMismatch,
    Validator, Verdict, VerdictOutcome, WeaponId,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg32;

/// The moment most honest shots were drawn at: between ticks 51 and 52, well inside the
/// server's window (0.5 to 1.0 s). Such a shot arrives at 0.95 s.
const RENDER: f64 = 0.8;

/// The rifle's damage multiplier for head hits.
const HEADSHOT: f32 = 4.0;

/// The honest rifle shot at alpha's head drawn at [`RENDER`].
fn honest(scene: &Scene) -> Shot {
    scene.shoot(Role::Alpha, HEAD, RENDER)
}

/// Asserts `verdict` is a rifle headshot on alpha.
#[track_caller]
fn alpha_headshot(scene: &Scene, verdict: &Verdict) {
    confirmed(verdict, scene.id(Role::Alpha), HEAD, Zone::Head, HEADSHOT);
}

/// Asserts every labelled verdict is a rejection for `reason`, and returns it.
#[track_caller]
fn all_rejected(
    reason: RejectReason,
    verdicts: impl IntoIterator<Item = (String, Verdict)>,
) -> RejectReason {
    let mut seen = 0;
    for (label, verdict) in verdicts {
        assert_eq!(rejected(&verdict), reason, "{label}: {verdict:#?}");
        seen += 1;
    }
    assert!(seen > 0, "no cheat was tried");
    reason
}

/// The same shot with another render time.
fn rendered(shot: Shot, render_time: RenderTime) -> Shot {
    Shot {
        claim: ShotClaim {
            render_time,
            ..shot.claim
        },
        ..shot
    }
}

/// The honest headshot on alpha, but passing `gap` metres to the right of its head, still
/// claiming the head at the point nearest the shot.
fn grazing(scene: &Scene, gap: f32) -> Shot {
    let shot = honest(scene);
    let side = shot.across();
    let mut shot = shot.through(shot.aim_point + side * (HEAD_RADIUS + gap));
    let hit = shot.claim.hit.as_mut().expect("honest shots claim a hit");
    hit.point = Some(shot.aim_point + side * HEAD_RADIUS);
    shot
}

/// One cheat per rejection reason, each with its honest twin. Each returns the reason the
/// cheat was rejected with, after checking it and the twin.
mod cases {
    use super::*;

    /// NaN, infinities and absurd values in every number a claim carries, and in its
    /// arrival time. None of them uses up a sequence number or a fire-rate slot: the
    /// honest shot that follows them on the same validator is confirmed.
    pub(super) fn non_finite() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        let shot = honest(&scene);
        let mut cheats: Vec<(String, Shot)> = Vec::new();
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e13, -1e13] {
            cheats.push((
                format!("render time {bad}"),
                rendered(shot, RenderTime::Time(bad)),
            ));
            cheats.push((format!("arrival {bad}"), shot.arriving_at(bad)));
        }
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.5, -0.25] {
            cheats.push((
                format!("tick fraction {bad}"),
                rendered(
                    shot,
                    RenderTime::Ticks {
                        from: Tick(51),
                        to: Tick(52),
                        fraction: bad,
                    },
                ),
            ));
        }
        cheats.push((
            "ticks backwards".into(),
            rendered(
                shot,
                RenderTime::Ticks {
                    from: Tick(52),
                    to: Tick(51),
                    fraction: 0.5,
                },
            ),
        ));
        for axis in 0..3 {
            for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                let mut s = shot;
                s.claim.direction[axis] = bad;
                cheats.push((format!("direction[{axis}] {bad}"), s));
            }
            // Beyond the world's range (1e6 m) is as bad as infinite for a position.
            for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 2e6, -2e6] {
                let mut s = shot;
                s.claim.origin[axis] = bad;
                cheats.push((format!("origin[{axis}] {bad}"), s));
                let mut s = shot;
                let hit = s.claim.hit.as_mut().expect("claimed");
                hit.point.as_mut().expect("claimed")[axis] = bad;
                cheats.push((format!("hit point[{axis}] {bad}"), s));
            }
        }
        let verdicts: Vec<_> = cheats
            .into_iter()
            .map(|(label, s)| (label, scene.judge(&mut v, &s)))
            .collect();
        let reason = all_rejected(RejectReason::NonFinite, verdicts);
        alpha_headshot(&scene, &scene.judge(&mut v, &shot));
        reason
    }

    /// A shot with no direction at all.
    pub(super) fn zero_direction() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        let shot = honest(&scene);
        let verdicts: Vec<_> = [Vec3::ZERO, Vec3::new(-0.0, 0.0, -0.0)]
            .into_iter()
            .map(|direction| {
                let mut s = shot;
                s.claim.direction = direction;
                (format!("{direction}"), scene.judge(&mut v, &s))
            })
            .collect();
        let reason = all_rejected(RejectReason::ZeroDirection, verdicts);
        alpha_headshot(&scene, &scene.judge(&mut v, &shot));
        reason
    }

    /// A weapon the rules do not have.
    pub(super) fn unknown_weapon() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        let shot = honest(&scene);
        let verdict = scene.judge(&mut v, &shot.with(WeaponId(99)));
        let reason = all_rejected(RejectReason::UnknownWeapon, [("weapon 99".into(), verdict)]);
        alpha_headshot(&scene, &scene.judge(&mut v, &shot));
        reason
    }

    /// A shooter the history never issued, one the validator was never told about, and
    /// one registered with an aim bone its rig does not have.
    pub(super) fn unknown_shooter() -> RejectReason {
        let scene = Scene::new();
        let shot = honest(&scene);
        let mut v = scene.validator();
        let mut never_issued = shot;
        never_issued.claim.shooter = EntityId::from_bits(9);
        let mut unregistered = Validator::new(rules());
        for role in [Role::Alpha, Role::Bravo, Role::Teammate] {
            unregistered.register(scene.id(role), fixture::participant(role));
        }
        unregistered
            .set_timing(scene.id(Role::Shooter), timing())
            .expect("a valid timing");
        let mut no_such_bone = scene.validator();
        no_such_bone.register(
            scene.id(Role::Shooter),
            Participant {
                aim_bone: 20,
                ..fixture::participant(Role::Shooter)
            },
        );
        let reason = all_rejected(
            RejectReason::UnknownShooter,
            [
                ("never issued".into(), scene.judge(&mut v, &never_issued)),
                (
                    "not registered".into(),
                    scene.judge(&mut unregistered, &shot),
                ),
                ("aim bone 20".into(), scene.judge(&mut no_such_bone, &shot)),
            ],
        );
        alpha_headshot(&scene, &scene.judge(&mut v, &shot));
        reason
    }

    /// The shooter was killed at tick 54; its client (or a cheat) still sends a shot drawn
    /// after that. The same player's shot from before its death counts.
    pub(super) fn shooter_not_alive() -> RejectReason {
        let scene = Scene::with(Script::default().dies(Role::Shooter, 54));
        let mut v = scene.validator();
        let before = scene.shoot(Role::Alpha, HEAD, scene.time_of(50));
        let after = scene.shoot(Role::Alpha, HEAD, 0.9).seq(2);
        alpha_headshot(&scene, &scene.judge(&mut v.clone(), &before));
        all_rejected(
            RejectReason::ShooterNotAlive,
            [("after death".into(), scene.judge(&mut v, &after))],
        )
    }

    /// After a first shot, the next one reuses its sequence number (and the first packet
    /// is sent again verbatim); with the next number it counts.
    pub(super) fn replayed() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        let first = scene.shoot(Role::Alpha, HEAD, 0.7).seq(1);
        alpha_headshot(&scene, &scene.judge(&mut v, &first));
        let next = honest(&scene).seq(2);
        alpha_headshot(&scene, &scene.judge(&mut v.clone(), &next));
        all_rejected(
            RejectReason::Replayed,
            [
                (
                    "reused number".into(),
                    scene.judge(&mut v.clone(), &next.seq(1)),
                ),
                (
                    "resent packet".into(),
                    scene.judge(&mut v, &first.arriving_at(next.received_at)),
                ),
            ],
        )
    }

    /// With shots up to number 1000 seen and a window of 256, number 744 (256 behind)
    /// arriving late is accepted; number 743 is too old, where 999 would still have
    /// counted.
    pub(super) fn sequence_too_old() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        assert_eq!(v.rules().policy.sequence_window, 256);
        let newest = scene.shoot(Role::Alpha, HEAD, 0.6).seq(1000);
        alpha_headshot(&scene, &scene.judge(&mut v, &newest));
        // Exactly the window behind the highest is still inside it.
        let late = scene.shoot(Role::Alpha, HEAD, 0.7).seq(1000 - 256);
        alpha_headshot(&scene, &scene.judge(&mut v, &late));
        let shot = honest(&scene);
        alpha_headshot(&scene, &scene.judge(&mut v.clone(), &shot.seq(999)));
        all_rejected(
            RejectReason::SequenceTooOld,
            [("743".into(), scene.judge(&mut v, &shot.seq(1000 - 257)))],
        )
    }

    /// A second shot 50 ms after the first, with the rifle's 100 ms interval; 100 ms
    /// after, it counts.
    pub(super) fn fire_rate() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        alpha_headshot(
            &scene,
            &scene.judge(&mut v, &scene.shoot(Role::Alpha, HEAD, 0.7)),
        );
        alpha_headshot(
            &scene,
            &scene.judge(&mut v.clone(), &scene.shoot(Role::Alpha, HEAD, 0.8).seq(2)),
        );
        let soon = scene.shoot(Role::Alpha, HEAD, 0.75).seq(2);
        all_rejected(
            RejectReason::FireRate,
            [("50 ms later".into(), scene.judge(&mut v, &soon))],
        )
    }

    /// The server has not measured the client yet (or only got nonsense from it).
    pub(super) fn no_timing() -> RejectReason {
        let scene = Scene::new();
        let shot = honest(&scene);
        let mut unmeasured = Validator::new(rules());
        for role in Role::ALL {
            unmeasured.register(scene.id(role), fixture::participant(role));
        }
        let mut nonsense = unmeasured.clone();
        let refused = nonsense.set_timing(
            scene.id(Role::Shooter),
            ClientTiming {
                srtt: f64::NAN,
                ..timing()
            },
        );
        assert!(refused.is_err());
        assert_eq!(nonsense.timing(scene.id(Role::Shooter)), None);
        let reason = all_rejected(
            RejectReason::NoTiming,
            [
                ("unmeasured".into(), scene.judge(&mut unmeasured, &shot)),
                ("NaN RTT".into(), scene.judge(&mut nonsense, &shot)),
            ],
        );
        alpha_headshot(&scene, &scene.judge(&mut scene.validator(), &shot));
        reason
    }

    /// A claim drawn 50 ms after it arrived (aimed where alpha was then: the cheat
    /// predicted it), and one naming ticks the server has not simulated yet.
    pub(super) fn time_in_future() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        let shot = honest(&scene);
        let ahead = scene
            .shoot(Role::Alpha, HEAD, shot.received_at + 0.05)
            .arriving_at(shot.received_at);
        let unsimulated = rendered(
            shot,
            RenderTime::Ticks {
                from: Tick(70),
                to: Tick(71),
                fraction: 0.5,
            },
        );
        let reason = all_rejected(
            RejectReason::TimeInFuture,
            [
                ("50 ms ahead".into(), scene.judge(&mut v.clone(), &ahead)),
                (
                    "ticks 70-71".into(),
                    scene.judge(&mut v.clone(), &unsimulated),
                ),
            ],
        );
        alpha_headshot(&scene, &scene.judge(&mut v, &shot));
        reason
    }

    /// A rifle claim 400 ms old (inside the server's window, beyond the rifle's 350 ms),
    /// one naming ticks long gone from the history, and a launcher claim (which may
    /// rewind as far as the history) from before the window.
    pub(super) fn time_too_old() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        let shot = honest(&scene);
        assert!(RENDER - 0.25 >= scene.oldest());
        let past_the_rifle = scene
            .shoot(Role::Alpha, HEAD, RENDER - 0.25)
            .arriving_at(shot.received_at);
        let gone = rendered(
            shot,
            RenderTime::Ticks {
                from: Tick(8),
                to: Tick(9),
                fraction: 0.5,
            },
        );
        let launcher = scene.shoot(Role::Alpha, HEAD, 0.75).with(LAUNCHER);
        let before_the_window = scene
            .shoot(Role::Alpha, HEAD, scene.oldest() - 0.05)
            .with(LAUNCHER)
            .arriving_at(launcher.received_at);
        assert!(launcher.received_at - (scene.oldest() - 0.05) < 0.5);
        let reason = all_rejected(
            RejectReason::TimeTooOld,
            [
                (
                    "rifle, 400 ms".into(),
                    scene.judge(&mut v.clone(), &past_the_rifle),
                ),
                ("ticks 8-9".into(), scene.judge(&mut v.clone(), &gone)),
                (
                    "launcher, before the window".into(),
                    scene.judge(&mut v.clone(), &before_the_window),
                ),
            ],
        );
        alpha_headshot(&scene, &scene.judge(&mut v.clone(), &shot));
        confirmed(
            &scene.judge(&mut v, &launcher),
            scene.id(Role::Alpha),
            HEAD,
            Zone::Head,
            2.0,
        );
        reason
    }

    /// Backtracking: arriving at the same moment as the honest shot, a claim that its
    /// client drew alpha 300 ms earlier (aimed where alpha was then). The rifle could
    /// rewind that far, but this client's measured rewind is 150 ms. A claim fresher than
    /// the client can have seen is as mismatched.
    pub(super) fn backtrack() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        let shot = honest(&scene);
        let older = scene
            .shoot(Role::Alpha, HEAD, shot.received_at - 0.3)
            .arriving_at(shot.received_at);
        let fresher = scene
            .shoot(Role::Alpha, HEAD, shot.received_at - 0.05)
            .arriving_at(shot.received_at);
        let reason = all_rejected(
            RejectReason::Backtrack,
            [
                ("300 ms back".into(), scene.judge(&mut v.clone(), &older)),
                ("50 ms back".into(), scene.judge(&mut v.clone(), &fresher)),
            ],
        );
        alpha_headshot(&scene, &scene.judge(&mut v, &shot));
        reason
    }

    /// The claimed muzzle 2 m ahead of the shooter's eye (peeking past cover it stands
    /// behind), still aimed at alpha's head.
    pub(super) fn origin_too_far() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        let shot = honest(&scene);
        let mut ahead = shot;
        ahead.claim.origin += shot.claim.direction.normalize() * 2.0;
        let ahead = ahead.through(shot.aim_point);
        let reason = all_rejected(
            RejectReason::OriginTooFar,
            [("2 m ahead".into(), scene.judge(&mut v.clone(), &ahead))],
        );
        alpha_headshot(&scene, &scene.judge(&mut v, &shot));
        reason
    }

    /// An aimbot snapping to bravo's head, 40 degrees off where the shooter was looking.
    pub(super) fn angle_too_far() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        let snap = scene.shoot(Role::Bravo, HEAD, RENDER);
        let view = honest(&scene).claim.direction.normalize();
        assert!(view.angle_between(snap.claim.direction).to_degrees() > 30.0);
        let reason = all_rejected(
            RejectReason::AngleTooFar,
            [("snap to bravo".into(), scene.judge(&mut v.clone(), &snap))],
        );
        alpha_headshot(&scene, &scene.judge(&mut v, &honest(&scene)));
        reason
    }

    /// Claims the server's trace cannot back: a point on alpha's head for a shot passing
    /// a metre to its right, a target that does not exist, and hitboxes that are not
    /// where the claimed point is (the chest, and one the rig does not have).
    pub(super) fn tampered_claim() -> RejectReason {
        let scene = Scene::new();
        let mut v = scene.validator();
        let shot = honest(&scene);
        let wide = shot.through(shot.aim_point + shot.across());
        let with_hit = |edit: &dyn Fn(&mut lagcomp_validate::ClaimedHit)| {
            let mut s = shot;
            edit(s.claim.hit.as_mut().expect("claimed"));
            s
        };
        let nobody = with_hit(&|h| h.target = EntityId::from_bits(0x7_0000_0042));
        let chest = with_hit(&|h| h.hitbox = Some(CHEST));
        let no_such_hitbox = with_hit(&|h| h.hitbox = Some(HitboxId(99)));
        let reason = all_rejected(
            RejectReason::TamperedClaim,
            [
                ("1 m wide".into(), scene.judge(&mut v.clone(), &wide)),
                (
                    "unknown target".into(),
                    scene.judge(&mut v.clone(), &nobody),
                ),
                (
                    "chest for a head point".into(),
                    scene.judge(&mut v.clone(), &chest),
                ),
                (
                    "hitbox 99".into(),
                    scene.judge(&mut v.clone(), &no_such_hitbox),
                ),
            ],
        );
        alpha_headshot(&scene, &scene.judge(&mut v, &shot));
        reason
    }

    /// Alpha was killed at tick 54 (by someone else); a claim drawn after that still
    /// names it. The same shot drawn before its death counts.
    pub(super) fn target_not_alive() -> RejectReason {
        let scene = Scene::with(Script::default().dies(Role::Alpha, 54));
        let mut v = scene.validator();
        alpha_headshot(
            &scene,
            &scene.judge(
                &mut v.clone(),
                &scene.shoot(Role::Alpha, HEAD, scene.time_of(50)),
            ),
        );
        all_rejected(
            RejectReason::TargetNotAlive,
            [(
                "corpse".into(),
                scene.judge(&mut v, &scene.shoot(Role::Alpha, HEAD, 0.9)),
            )],
        )
    }

    /// Alpha dodges (lag compensation off) over ticks 50 to 56; a claim on it drawn at
    /// tick 53 is refused whatever it aimed at, where one drawn at tick 46 counts.
    pub(super) fn target_not_compensated() -> RejectReason {
        let scene = Scene::with(Script::default().dodges(Role::Alpha, 50..=56));
        let mut v = scene.validator();
        alpha_headshot(
            &scene,
            &scene.judge(
                &mut v.clone(),
                &scene.shoot(Role::Alpha, HEAD, scene.time_of(46)),
            ),
        );
        all_rejected(
            RejectReason::TargetNotCompensated,
            [(
                "dodging".into(),
                scene.judge(&mut v, &scene.shoot(Role::Alpha, HEAD, scene.time_of(53))),
            )],
        )
    }

    /// The shooter turns on its teammate: refused with the rifle as played, confirmed
    /// when the rules allow friendly fire. Without a claimed hit the trace's hit is held
    /// to the same rule.
    pub(super) fn friendly_fire() -> RejectReason {
        let scene = Scene::with(Script::default().watching(Role::Shooter, Role::Teammate));
        let shot = scene.shoot(Role::Teammate, HEAD, RENDER);
        let mut v = scene.validator();
        let reason = all_rejected(
            RejectReason::FriendlyFire,
            [
                ("claimed".into(), scene.judge(&mut v.clone(), &shot)),
                ("traced".into(), scene.judge(&mut v, &shot.unclaimed())),
            ],
        );
        let mut allowed = rules();
        allowed
            .weapons
            .get_mut("rifle")
            .expect("the rules have a rifle")
            .friendly_fire = true;
        let mut v = scene.validator();
        v.set_rules(allowed);
        confirmed(
            &scene.judge(&mut v, &shot),
            scene.id(Role::Teammate),
            HEAD,
            Zone::Head,
            HEADSHOT,
        );
        reason
    }

    /// A claim naming a door (an entity spawned as a blocker) as its target, drawn while
    /// the door was open in front of the player behind it: refused, where the same shot
    /// claiming that player counts.
    pub(super) fn not_a_target() -> RejectReason {
        crate::doors::not_a_target_and_its_honest_twin()
    }

    // The kinds' reasons, each from its kind's cheat next to the honest claim (the
    // projectile, pellet, splash and wrong-kind cases in `kinds.rs`, melee's in
    // `melee.rs`, penetration's in `penetration.rs`).
    pub(super) use crate::kinds::{
        pellet_count_mismatch, pellet_off_target, pellet_seed_mismatch, projectile_off_path,
        projectile_too_early, splash_beyond_range, splash_out_of_radius, splash_through_wall,
        wrong_weapon_kind,
    };

    /// A knife claim for the rifle.
    pub(super) fn melee_not_melee() -> RejectReason {
        melee(MeleeReason::NotMelee)
    }

    /// A blade the size of a door, and a swing all the way round.
    pub(super) fn melee_swing_too_large() -> RejectReason {
        melee(MeleeReason::SwingTooLarge)
    }

    /// A blade teleported out of reach, and an honest slash with a shorter knife.
    pub(super) fn melee_out_of_reach() -> RejectReason {
        melee(MeleeReason::OutOfReach)
    }

    /// A slash behind the attacker's back.
    pub(super) fn melee_outside_arc() -> RejectReason {
        melee(MeleeReason::OutsideArc)
    }

    pub(super) use crate::penetration::{penetration_beyond_power, penetration_off_chain};

    fn melee(reason: MeleeReason) -> RejectReason {
        crate::melee::melee_cheat_next_to_its_honest_twin(reason)
    }

    /// A claim extrapolated past the policy's limit, next to its honest twin at the limit
    /// (in `extrapolated`, with the scene those need).
    pub(super) fn extrapolated_too_far() -> RejectReason {
        crate::extrapolated::extrapolated_too_far()
    }
}

/// A test per case, and the list of every case with the reason it must produce.
macro_rules! reason_cases {
    ($($case:ident => $reason:ident,)*) => {
        $(
            #[test]
            fn $case() {
                assert_eq!(cases::$case(), RejectReason::$reason);
            }
        )*

        /// Every case and the reason it must produce.
        const CASES: &[(RejectReason, fn() -> RejectReason)] =
            &[$((RejectReason::$reason, cases::$case)),*];
    };
}

reason_cases! {
    non_finite => NonFinite,
    zero_direction => ZeroDirection,
    unknown_weapon => UnknownWeapon,
    unknown_shooter => UnknownShooter,
    shooter_not_alive => ShooterNotAlive,
    replayed => Replayed,
    sequence_too_old => SequenceTooOld,
    fire_rate => FireRate,
    no_timing => NoTiming,
    time_in_future => TimeInFuture,
    time_too_old => TimeTooOld,
    backtrack => Backtrack,
    extrapolated_too_far => ExtrapolatedTooFar,
    origin_too_far => OriginTooFar,
    angle_too_far => AngleTooFar,
    tampered_claim => TamperedClaim,
    target_not_alive => TargetNotAlive,
    target_not_compensated => TargetNotCompensated,
    friendly_fire => FriendlyFire,
    not_a_target => NotATarget,
    wrong_weapon_kind => WrongWeaponKind,
    projectile_off_path => ProjectileOffPath,
    projectile_too_early => ProjectileTooEarly,
    pellet_count_mismatch => PelletCountMismatch,
    pellet_seed_mismatch => PelletSeedMismatch,
    pellet_off_target => PelletOffTarget,
    splash_through_wall => SplashThroughWall,
    splash_out_of_radius => SplashOutOfRadius,
    splash_beyond_range => SplashBeyondRange,
    melee_not_melee => MeleeNotMelee,
    melee_swing_too_large => MeleeSwingTooLarge,
    melee_out_of_reach => MeleeOutOfReach,
    melee_outside_arc => MeleeOutsideArc,
    penetration_beyond_power => PenetrationBeyondPower,
    penetration_off_chain => PenetrationOffChain,
}

#[test]
fn every_rejection_reason_has_a_cheat_and_an_honest_twin() {
    let produced: BTreeSet<RejectReason> = CASES
        .iter()
        .map(|(expected, case)| {
            let got = case();
            assert_eq!(got, *expected);
            got
        })
        .collect();
    let all: BTreeSet<RejectReason> = RejectReason::ALL.into_iter().collect();
    assert_eq!(
        produced,
        all,
        "reasons without a case: {:?}",
        all.difference(&produced).collect::<Vec<_>>()
    );
}

#[test]
fn honest_headshot_on_a_tick_has_its_whole_basis() {
    let scene = Scene::new();
    let render = scene.time_of(50);
    let shot = scene.shoot(Role::Alpha, HEAD, render);
    let verdict = scene.judge(&mut scene.validator(), &shot);
    let hit = confirmed(&verdict, scene.id(Role::Alpha), HEAD, Zone::Head, HEADSHOT);
    assert!(!hit.by_leeway);
    assert!(
        hit.point.distance(shot.claimed_point()) < 1e-3,
        "the server's entry point is the client's: {hit:?}"
    );
    let expected_distance = shot.claimed_point().distance(shot.claim.origin);
    assert!((hit.distance - expected_distance).abs() < 1e-3, "{hit:?}");
    assert_eq!(
        (verdict.shooter, verdict.seq, verdict.weapon),
        (scene.id(Role::Shooter), 1, RIFLE)
    );
    let basis = verdict.basis;
    assert_eq!(basis.received_at, shot.received_at);
    assert_eq!(basis.requested_time, Some(render));
    assert_eq!(basis.time_used, Some(render));
    assert_eq!(basis.oldest, Some(0.5));
    assert_eq!(basis.newest, Some(1.0));
    assert_eq!(basis.sample, Some(SampleKind::Exact { tick: Tick(50) }));
    assert!(basis.rewound);
    assert!(!basis.fallback);
    assert_eq!(basis.shooter_latency, Some(0.05));
    assert_eq!(basis.interp_delay, Some(0.1));
}

#[test]
fn honest_hits_on_chest_and_arm_get_their_zone_multipliers() {
    let scene = Scene::new();
    let mut v = scene.validator();
    let chest = scene.shoot(Role::Alpha, CHEST, 0.7);
    let arm = scene.shoot(Role::Alpha, ARM_L, RENDER).seq(2);
    let verdict = scene.judge(&mut v, &chest);
    confirmed(&verdict, scene.id(Role::Alpha), CHEST, Zone::Torso, 1.0);
    let verdict = scene.judge(&mut v, &arm);
    confirmed(&verdict, scene.id(Role::Alpha), ARM_L, Zone::Limb, 0.75);
    // Between ticks 51 and 52, a fifth of the way.
    let Some(SampleKind::Interpolated { from, to, alpha }) = verdict.basis.sample else {
        panic!("interpolated sample expected: {verdict:#?}");
    };
    assert_eq!((from, to), (Tick(51), Tick(52)));
    assert!((alpha - 0.2).abs() < 1e-4, "{alpha}");
    assert_eq!(verdict.basis.time_used, Some(RENDER));
}

#[test]
fn honest_claim_in_ticks_is_judged_on_the_blend_it_names() {
    let scene = Scene::new();
    let render = scene.ticks(RENDER);
    let RenderTime::Ticks { fraction, .. } = render else {
        unreachable!()
    };
    let shot = scene.shot(Role::Shooter, Role::Alpha, HEAD, render);
    let verdict = scene.judge(&mut scene.validator(), &shot);
    alpha_headshot(&scene, &verdict);
    assert_eq!(
        verdict.basis.sample,
        Some(SampleKind::Interpolated {
            from: Tick(51),
            to: Tick(52),
            alpha: fraction
        })
    );
    let requested = verdict.basis.requested_time.expect("resolved");
    assert!((requested - RENDER).abs() < 1e-6, "{requested}");
}

#[test]
fn honest_claim_across_a_server_hitch_blends_the_ticks_it_names() {
    // The server never simulated tick 52; the client blended 51 and 53.
    let scene = Scene::with(Script::default().skipping(52));
    let render = RenderTime::Ticks {
        from: Tick(51),
        to: Tick(53),
        fraction: 0.5,
    };
    let shot = scene.shot(Role::Shooter, Role::Alpha, HEAD, render);
    let verdict = scene.judge(&mut scene.validator(), &shot);
    alpha_headshot(&scene, &verdict);
    assert_eq!(
        verdict.basis.sample,
        Some(SampleKind::Interpolated {
            from: Tick(51),
            to: Tick(53),
            alpha: 0.5
        })
    );
    assert_eq!(verdict.basis.time_used, Some(scene.time_of(52)));
}

#[test]
fn without_a_claimed_hit_the_trace_decides() {
    let scene = Scene::new();
    let mut v = scene.validator();
    let shot = honest(&scene).unclaimed();
    let verdict = scene.judge(&mut v.clone(), &shot);
    alpha_headshot(&scene, &verdict);
    assert!(matches!(
        verdict.basis.sample,
        Some(SampleKind::Interpolated { .. })
    ));
    let wide = shot.through(shot.aim_point + shot.across());
    let verdict = scene.judge(&mut v, &wide);
    assert_eq!(verdict.outcome, VerdictOutcome::Miss);
    assert_eq!(verdict.basis.sample, None, "nothing was hit");
    assert_eq!(verdict.basis.time_used, Some(RENDER));
}

#[test]
fn a_shot_through_the_wall_is_blocked_and_one_over_it_hits() {
    let scene = Scene::new();
    let v = scene.validator();
    let pelvis = scene.shoot(Role::Alpha, PELVIS, RENDER);
    for shot in [pelvis, pelvis.unclaimed()] {
        let verdict = scene.judge(&mut v.clone(), &shot);
        let VerdictOutcome::Blocked {
            by: Blocker::Wall(wall),
            distance,
        } = verdict.outcome
        else {
            panic!("expected the wall to block: {verdict:#?}");
        };
        assert_eq!(wall, scene.wall);
        // The wall's face is 1.1 m in front of alpha's pelvis.
        let to_pelvis = shot.aim_point.distance(shot.claim.origin);
        assert!(
            distance > to_pelvis - 1.3 && distance < to_pelvis - 1.0,
            "{distance} vs {to_pelvis}"
        );
        assert_eq!(verdict.basis.time_used, Some(RENDER));
        assert!(verdict.basis.rewound);
    }
    alpha_headshot(&scene, &scene.judge(&mut v.clone(), &honest(&scene)));
    confirmed(
        &scene.judge(&mut v.clone(), &scene.shoot(Role::Alpha, CHEST, RENDER)),
        scene.id(Role::Alpha),
        CHEST,
        Zone::Torso,
        1.0,
    );
}

#[test]
fn a_claimed_head_just_past_the_trace_is_confirmed_by_leeway() {
    let scene = Scene::new();
    let v = scene.validator();
    // The rifle grows the head (12 cm) by max(25 %, 5 cm): a shot 3 cm past it still
    // counts as the client saw it, 6 cm past does not.
    let near = grazing(&scene, 0.03);
    let verdict = scene.judge(&mut v.clone(), &near);
    let hit = confirmed(&verdict, scene.id(Role::Alpha), HEAD, Zone::Head, HEADSHOT);
    assert!(hit.by_leeway);
    assert_eq!(hit.point, near.claimed_point());
    assert!((hit.distance - near.claimed_point().distance(near.claim.origin)).abs() < 1e-2);
    assert_eq!(verdict.basis.time_used, Some(RENDER));
    // The server's own trace missed: that is what the leeway is for.
    assert_eq!(
        scene.judge(&mut v.clone(), &near.unclaimed()).outcome,
        VerdictOutcome::Miss
    );
    assert_eq!(
        rejected(&scene.judge(&mut v.clone(), &grazing(&scene, 0.06))),
        RejectReason::TamperedClaim
    );
}

#[test]
fn rewind_within_jitter_and_late_resends_is_accepted_and_beyond_is_backtracking() {
    let scene = Scene::new();
    let v = scene.validator();
    // 150 ms expected; 30 ms plus four 5 ms variations either way; 50 ms more for a
    // resent packet.
    let expected = timing().expected_rewind();
    for (rewind, accepted) in [
        (expected - 0.045, true),
        (expected + 0.045, true),
        (expected + 0.095, true),
        (expected - 0.055, false),
        (expected + 0.105, false),
    ] {
        let shot = scene
            .shoot(Role::Alpha, HEAD, RENDER)
            .arriving_at(RENDER + rewind);
        let verdict = scene.judge(&mut v.clone(), &shot);
        if accepted {
            alpha_headshot(&scene, &verdict);
        } else {
            assert_eq!(rejected(&verdict), RejectReason::Backtrack, "{rewind}");
        }
    }
}

#[test]
fn server_estimate_policy_judges_a_mismatched_claim_at_the_estimate() {
    let scene = Scene::new();
    let mut v = scene.validator();
    let mut estimating = rules();
    estimating.policy.time_mismatch = TimeMismatch::UseServerEstimate;
    v.set_rules(estimating);
    let arrival = honest(&scene).received_at;
    let estimate = arrival - timing().expected_rewind();

    // The backtracking cheat: judged where alpha was 150 ms before arrival, not 300.
    let older = scene
        .shoot(Role::Alpha, HEAD, arrival - 0.3)
        .arriving_at(arrival);
    let verdict = scene.judge(&mut v.clone(), &older.unclaimed());
    assert_eq!(verdict.outcome, VerdictOutcome::Miss);
    let basis = verdict.basis;
    assert!(basis.fallback);
    assert!(basis.rewound);
    assert_eq!(basis.requested_time, Some(arrival - 0.3));
    let used = basis.time_used.expect("traced");
    assert!((used - estimate).abs() < 1e-9, "{used} vs {estimate}");
    let verdict = scene.judge(&mut v.clone(), &older);
    assert!(verdict.basis.fallback);
    assert_eq!(rejected(&verdict), RejectReason::TamperedClaim);

    // A client whose timestamps are off but whose aim matched what it saw then: the
    // estimate is right and the hit counts.
    let mislabelled = rendered(honest(&scene), RenderTime::Time(arrival - 0.3));
    let verdict = scene.judge(&mut v.clone(), &mislabelled);
    alpha_headshot(&scene, &verdict);
    assert!(verdict.basis.fallback);

    // A plausible claim is judged at its own time.
    let verdict = scene.judge(&mut v, &honest(&scene));
    alpha_headshot(&scene, &verdict);
    assert!(!verdict.basis.fallback);
    assert_eq!(verdict.basis.time_used, Some(RENDER));
}

/// A client above the rifle's 400 ms no-rewind threshold: 500 ms round trip and 100 ms
/// of interpolation, so it draws the world 350 ms late.
fn high_ping() -> ClientTiming {
    ClientTiming {
        srtt: 0.5,
        rttvar: 0.01,
        interp_delay: 0.1,
    }
}

#[test]
fn high_ping_shooter_hits_what_is_there_now_and_misses_what_was_there_then() {
    let scene = Scene::new();
    let mut v = scene.validator();
    v.set_timing(scene.id(Role::Shooter), high_ping())
        .expect("a valid timing");
    let now = scene.newest();
    let then = now - high_ping().expected_rewind();

    // It led its target: aimed where alpha is now.
    let led =
        rendered(scene.shoot(Role::Alpha, HEAD, now), RenderTime::Time(then)).arriving_at(now);
    let verdict = scene.judge(&mut v.clone(), &led);
    alpha_headshot(&scene, &verdict);
    let basis = verdict.basis;
    assert!(!basis.rewound);
    assert!(!basis.fallback);
    assert_eq!(basis.requested_time, Some(then));
    assert_eq!(basis.time_used, Some(now));
    assert_eq!(basis.shooter_latency, Some(0.25));
    assert_eq!(basis.sample, Some(SampleKind::Exact { tick: Tick(64) }));

    // It shot at what it saw, 350 ms ago: alpha has moved on by 1.75 m.
    let seen = scene
        .shoot(Role::Alpha, HEAD, then)
        .arriving_at(now)
        .unclaimed();
    let verdict = scene.judge(&mut v, &seen);
    assert_eq!(verdict.outcome, VerdictOutcome::Miss);
    assert!(!verdict.basis.rewound);
    assert_eq!(verdict.basis.time_used, Some(now));

    // The same shot from a client on a normal connection is rewound and hits.
    let mut normal = scene.validator();
    let verdict = scene.judge(
        &mut normal,
        &scene.shoot(Role::Alpha, HEAD, then).unclaimed(),
    );
    alpha_headshot(&scene, &verdict);
    assert!(verdict.basis.rewound);
}

#[test]
fn a_thick_shot_hits_a_near_miss_that_hitscan_misses() {
    let scene = Scene::new();
    // 8 cm past the head: the launcher's 15 cm ball touches it, the rifle's line does not.
    let shot = honest(&scene).unclaimed();
    let near_miss = shot.through(shot.aim_point + shot.across() * (HEAD_RADIUS + 0.08));
    assert_eq!(
        scene.judge(&mut scene.validator(), &near_miss).outcome,
        VerdictOutcome::Miss
    );
    let verdict = scene.judge(&mut scene.validator(), &near_miss.with(LAUNCHER));
    let hit = confirmed(&verdict, scene.id(Role::Alpha), HEAD, Zone::Head, 2.0);
    assert!(!hit.by_leeway);
    assert!(
        (hit.point.distance(shot.aim_point) - HEAD_RADIUS).abs() < 1e-3,
        "the contact is on the head: {hit:?}"
    );
}

#[test]
fn a_shot_at_a_corpse_without_a_claimed_hit_is_a_plain_miss() {
    // Dead players are not in the way: the trace passes through them.
    let scene = Scene::with(Script::default().dies(Role::Alpha, 54));
    let verdict = scene.judge(
        &mut scene.validator(),
        &scene.shoot(Role::Alpha, HEAD, 0.9).unclaimed(),
    );
    assert_eq!(verdict.outcome, VerdictOutcome::Miss);
}

#[test]
fn a_muzzle_a_little_off_the_eye_is_within_tolerance() {
    // A third-person muzzle 30 cm right of the eye, aimed at the same head.
    let scene = Scene::new();
    let shot = honest(&scene);
    let mut muzzle = shot;
    muzzle.claim.origin += shot.across() * 0.3;
    let muzzle = muzzle.through(shot.aim_point);
    alpha_headshot(&scene, &scene.judge(&mut scene.validator(), &muzzle));
}

/// The rifle's interval, seconds.
const INTERVAL: f64 = 0.1;

#[test]
fn honest_player_at_the_exact_interval_with_bunched_arrivals_is_never_rejected() {
    // Packets delayed by up to 40 ms or early by 20 ms, which the server measured as
    // 10 ms of RTT variation. Once in the worst order (late, then early: 40 ms apart),
    // then at random, over three seconds of fire.
    let jittery = ClientTiming {
        rttvar: 0.01,
        ..timing()
    };
    let mut rng = Pcg32::seed_from_u64(0x5eed);
    let mut scene = Scene::new();
    let mut v = scene.validator();
    v.set_timing(scene.id(Role::Shooter), jittery)
        .expect("a valid timing");
    let mut arrivals: Vec<f64> = Vec::new();
    for k in 0..30_u32 {
        let render = 0.6 + f64::from(k) * INTERVAL;
        let jitter = match k {
            0 => 0.04,
            1 => -0.02,
            _ => rng.random_range(-0.02..0.04),
        };
        let arrival = render + jittery.expected_rewind() + jitter;
        scene.advance_to(arrival);
        let shot = scene
            .shoot(Role::Alpha, HEAD, render)
            .seq(k + 1)
            .arriving_at(arrival);
        let verdict = scene.judge(&mut v, &shot);
        assert!(
            matches!(verdict.outcome, VerdictOutcome::Confirmed(_)),
            "shot {k}: {verdict:#?}"
        );
        arrivals.push(arrival);
    }
    let closest = arrivals
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold(f64::INFINITY, f64::min);
    assert!(closest < 0.045, "arrivals did bunch: {closest}");
}

/// Verdicts and arrival times of a cheat firing every `period` seconds. Each claim names
/// the earliest time the rifle's interval allows after its last accepted shot (a rejected
/// shot's time is claimed again by the next), and is aimed honestly at what it names.
fn spaced_claims(period: f64, shots: u32, timing: ClientTiming) -> Vec<(f64, Verdict)> {
    let mut scene = Scene::new();
    let mut v = scene.validator();
    v.set_timing(scene.id(Role::Shooter), timing)
        .expect("a valid timing");
    let no_rewind = timing.srtt > 0.4;
    let first_arrival = 0.75;
    // Without rewind the claimed time is not checked against the measured latency, so
    // the cheat claims times far enough back to stay out of the future.
    let mut render = if no_rewind {
        first_arrival - 5.0
    } else {
        first_arrival - timing.expected_rewind()
    };
    (0..shots)
        .map(|k| {
            let arrival = first_arrival + f64::from(k) * period;
            scene.advance_to(arrival);
            let aimed_at = if no_rewind { scene.newest() } else { render };
            let shot = rendered(
                scene.shoot(Role::Alpha, HEAD, aimed_at),
                RenderTime::Time(render),
            )
            .seq(k + 1)
            .arriving_at(arrival);
            let verdict = scene.judge(&mut v, &shot);
            if verdict.outcome.reason().is_none() {
                render += INTERVAL;
            }
            (arrival, verdict)
        })
        .collect()
}

/// How many shots a player may land over arrival times `first..=last` when each accepted
/// shot must also claim a time `spacing` after the previous within a band of `band`
/// seconds around its arrival.
fn most_shots(first: f64, last: f64, band: f64, spacing: f64) -> usize {
    ((last - first + band) / spacing).floor() as usize + 1
}

#[test]
fn a_cheat_firing_too_fast_with_well_spaced_claims_runs_into_the_time_checks() {
    let policy = rules().policy;
    let spacing = INTERVAL * (1.0 - policy.fire_rate_slack);
    // The claimed rewind may lie anywhere in [expected - tolerance, expected + tolerance
    // + late slack].
    let tolerance = policy.rewind_tolerance + policy.rewind_jitter_factor * timing().rttvar;
    let band = 2.0 * tolerance + policy.rewind_late_slack;
    for period in [0.03, 0.05, 0.08, 0.09] {
        let shots = 40;
        let verdicts = spaced_claims(period, shots, timing());
        let accepted: Vec<f64> = verdicts
            .iter()
            .filter(|(_, v)| v.outcome.reason().is_none())
            .map(|(at, _)| *at)
            .collect();
        for (at, verdict) in &verdicts {
            if let Some(reason) = verdict.outcome.reason() {
                assert!(
                    matches!(
                        reason,
                        RejectReason::FireRate
                            | RejectReason::Backtrack
                            | RejectReason::TimeInFuture
                            | RejectReason::TimeTooOld
                    ),
                    "period {period}, shot at {at}: {verdict:#?}"
                );
            }
        }
        let (first, last) = (accepted[0], accepted[accepted.len() - 1]);
        assert!(
            accepted.len() <= most_shots(first, last, band, spacing),
            "period {period}: {} accepted between {first} and {last}",
            accepted.len()
        );
        assert!(accepted.len() < shots as usize, "period {period}");
    }
}

#[test]
fn a_high_ping_cheat_whose_times_go_unchecked_is_held_to_the_rate_by_arrivals() {
    let policy = rules().policy;
    let spacing = INTERVAL * (1.0 - policy.fire_rate_slack);
    let tolerance = policy.arrival_slack + 4.0 * high_ping().rttvar;
    let verdicts = spaced_claims(0.03, 60, high_ping());
    let accepted: Vec<f64> = verdicts
        .iter()
        .filter(|(_, v)| v.outcome.reason().is_none())
        .map(|(at, _)| *at)
        .collect();
    for (at, verdict) in &verdicts {
        assert!(!verdict.basis.rewound);
        if let Some(reason) = verdict.outcome.reason() {
            assert_eq!(reason, RejectReason::FireRate, "shot at {at}: {verdict:#?}");
        } else {
            alpha_headshot(&Scene::new(), verdict);
        }
    }
    let (first, last) = (accepted[0], accepted[accepted.len() - 1]);
    assert!(
        accepted.len() <= most_shots(first, last, tolerance, spacing),
        "{} accepted between {first} and {last}",
        accepted.len()
    );
    assert!(accepted.len() < 30, "{} of 60 accepted", accepted.len());
}

#[test]
fn twice_the_rate_with_honest_timestamps_loses_every_other_shot() {
    let mut scene = Scene::new();
    let mut v = scene.validator();
    let mut reasons = Vec::new();
    for k in 0..20_u32 {
        let render = 0.55 + f64::from(k) * INTERVAL / 2.0;
        let shot = scene.shoot(Role::Alpha, HEAD, render).seq(k + 1);
        scene.advance_to(shot.received_at);
        reasons.push(scene.judge(&mut v, &shot).outcome.reason());
    }
    let expected: Vec<Option<RejectReason>> = (0..20)
        .map(|k| (k % 2 == 1).then_some(RejectReason::FireRate))
        .collect();
    assert_eq!(reasons, expected);
}

#[test]
fn first_shot_counts_on_a_clock_below_zero() {
    // Server time may start anywhere; the history accepts it, so must the fire-rate check.
    let scene = Scene::with(Script::default().starting_at(-100.0));
    let shot = scene.shoot(Role::Alpha, HEAD, scene.time_of(51));
    let verdict = scene.judge(&mut scene.validator(), &shot);
    alpha_headshot(&scene, &verdict);
    assert_eq!(verdict.basis.oldest, Some(scene.time_of(32)));
}

// Validator bugs this suite found (fixed since); each test states the behaviour the
// validator's documentation promises.

#[test]
fn bug_a_direction_of_any_finite_length_is_the_same_shot() {
    let scene = Scene::new();
    let shot = honest(&scene);
    let outcomes = [1e20_f32, 1e-25].map(|scale| {
        let mut scaled = shot;
        scaled.claim.direction *= scale;
        assert!(scaled.claim.direction.is_finite() && scaled.claim.direction != Vec3::ZERO);
        scene.judge(&mut scene.validator(), &scaled).outcome.label()
    });
    assert_eq!(outcomes, ["confirmed"; 2]);
}

#[test]
fn bug_a_skipped_tick_is_a_tick_the_server_never_had() {
    let scene = Scene::with(Script::default().skipping(52));
    let shot = rendered(
        honest(&scene),
        RenderTime::Ticks {
            from: Tick(52),
            to: Tick(53),
            fraction: 0.25,
        },
    );
    assert_eq!(
        rejected(&scene.judge(&mut scene.validator(), &shot)),
        RejectReason::TimeInFuture
    );
}

#[test]
fn bug_a_high_ping_claim_on_what_was_there_then_is_a_miss() {
    let scene = Scene::new();
    let mut v = scene.validator();
    v.set_timing(scene.id(Role::Shooter), high_ping())
        .expect("a valid timing");
    let now = scene.newest();
    let seen = scene
        .shoot(Role::Alpha, HEAD, now - high_ping().expected_rewind())
        .arriving_at(now);
    assert_eq!(scene.judge(&mut v, &seen).outcome, VerdictOutcome::Miss);
}

#[test]
fn bug_a_shooter_cannot_claim_to_hit_itself() {
    let scene = Scene::new();
    let mut ff = rules();
    ff.weapons
        .get_mut("rifle")
        .expect("the rules have a rifle")
        .friendly_fire = true;
    let mut v = scene.validator();
    v.set_rules(ff);
    let mut own_head = honest(&scene);
    let hit = own_head.claim.hit.as_mut().expect("claimed");
    hit.target = scene.id(Role::Shooter);
    hit.point = Some(own_head.claim.origin);
    assert_eq!(
        rejected(&scene.judge(&mut v, &own_head)),
        RejectReason::TamperedClaim
    );
}

#[test]
fn bug_a_participant_without_a_forward_does_not_skip_the_angle_check() {
    let scene = Scene::new();
    let mut v = scene.validator();
    v.register(
        scene.id(Role::Shooter),
        Participant {
            aim_forward: Vec3::ZERO,
            ..fixture::participant(Role::Shooter)
        },
    );
    let snap = scene.shoot(Role::Bravo, HEAD, RENDER);
    let verdict = scene.judge(&mut v, &snap);
    assert!(
        verdict.outcome.reason().is_some(),
        "a snap 40 degrees off the view was not rejected: {verdict:#?}"
    );
}
