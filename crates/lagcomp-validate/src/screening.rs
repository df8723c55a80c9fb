//! The checks on a claim's own numbers and times, before anything is traced: are its
//! numbers sane (check 1), which server time and rewind target does its render time name,
//! whether the rewind it implies is plausible (check 4, [`ClaimedMoment`]), how a refused
//! query maps to a rejection, and how far outside a hitbox a claimed point may lie.

use lagcomp::math::MAX_COORDINATE;
use lagcomp::{
    History, PlacedShape, QueryError, Ray, RewindError, RewindTarget, Shape, Tick, Vec3,
    WindowPolicy, WindowSide,
};

use crate::claim::{ClientTiming, RenderTime, ShotClaim};
use crate::measurement::Measurement;
use crate::rules::{Policy, TimeMismatch, WeaponRules};
use crate::verdict::{Basis, RejectReason};

/// How far outside a hitbox a claimed point may lie: the hitbox's size times
/// `hit_leeway - 1`, at least `hit_leeway_min`.
pub(crate) fn leeway(weapon: &WeaponRules, placed: &PlacedShape) -> f32 {
    let size = match placed.shape {
        Shape::Sphere { radius } => radius,
        Shape::Box { half_extents } => half_extents.max_element(),
        Shape::Capsule {
            radius,
            half_height,
            ..
        } => radius + half_height,
    };
    (size * (weapon.hit_leeway - 1.0)).max(weapon.hit_leeway_min)
}

/// Check 1's numbers.
pub(crate) fn check_numbers(claim: &ShotClaim, received_at: f64) -> Result<(), RejectReason> {
    let sane = |v: Vec3| v.is_finite() && v.abs().max_element() <= MAX_COORDINATE;
    let time_ok = match claim.render_time {
        RenderTime::Time(t) => t.is_finite() && t.abs() < 1e12,
        RenderTime::Ticks { from, to, fraction } => {
            fraction.is_finite() && (0.0..=1.0).contains(&fraction) && from <= to
        }
        RenderTime::Extrapolated { by, .. } => by.is_finite() && (0.0..1e12).contains(&by),
    };
    if !(time_ok
        && received_at.is_finite()
        && received_at.abs() < 1e12
        && sane(claim.origin)
        && claim.direction.is_finite()
        && claim.hit.is_none_or(|h| h.point.is_none_or(sane)))
    {
        return Err(RejectReason::NonFinite);
    }
    // `Ray::new` normalizes robustly (any finite non-zero length, however large or
    // small); the trace uses its direction.
    match Ray::new(claim.origin, claim.direction, 1.0) {
        Ok(_) => Ok(()),
        Err(lagcomp::RayError::ZeroDirection) => Err(RejectReason::ZeroDirection),
        Err(_) => Err(RejectReason::NonFinite),
    }
}

/// The server time a render time names, and the rewind target that rebuilds exactly it
/// (for an extrapolated one, the frame it was extrapolated from: the picture itself is
/// rebuilt with [`History::entity_extrapolated`]).
pub(crate) fn claimed_time(
    history: &History,
    render_time: RenderTime,
) -> Result<(f64, RewindTarget), RejectReason> {
    match render_time {
        RenderTime::Time(t) => Ok((t, RewindTarget::Time(t))),
        RenderTime::Ticks { from, to, fraction } => {
            let (a, b) = (tick_time(history, from, to)?, tick_time(history, to, to)?);
            let t = a + (b - a) * f64::from(fraction);
            Ok((t, RewindTarget::between(from, to, fraction)))
        }
        RenderTime::Extrapolated { from, by } => {
            let a = tick_time(history, from, from)?;
            Ok((a + by, RewindTarget::between(from, from, 0.0)))
        }
    }
}

/// The server time of tick `tick`, one of a claim's ticks whose newest is `newest_claimed`;
/// a tick the history does not hold is either one the server never had (newer than its
/// newest, or one it skipped: no client can have drawn it) or one long gone.
fn tick_time(history: &History, tick: Tick, newest_claimed: Tick) -> Result<f64, RejectReason> {
    let newest = history.newest_tick().ok_or(RejectReason::TimeTooOld)?;
    history.time_of(tick).ok_or_else(|| {
        let oldest = history.span().map_or(newest, |((tick, _), _)| tick);
        if tick >= oldest || newest_claimed > newest {
            RejectReason::TimeInFuture
        } else {
            RejectReason::TimeTooOld
        }
    })
}

/// The extrapolation a claim names, within the policy's limit: `Ok(None)` for a claim that
/// is not extrapolated, `ExtrapolatedTooFar` (the limit in the basis) past the limit.
pub(crate) fn check_extrapolation(
    claim: &ShotClaim,
    policy: &Policy,
    basis: &mut Basis,
) -> Result<Option<(Tick, f64)>, RejectReason> {
    let RenderTime::Extrapolated { from, by } = claim.render_time else {
        return Ok(None);
    };
    if by > policy.max_extrapolation {
        basis.measured = Measurement::at_most(by, policy.max_extrapolation);
        return Err(RejectReason::ExtrapolatedTooFar);
    }
    Ok(Some((from, by)))
}

/// The reason for a query refused over its target time.
pub(crate) fn time_reason(e: &QueryError) -> RejectReason {
    match e {
        QueryError::Rewind(RewindError::OutOfWindow {
            side: WindowSide::TooNew,
            ..
        }) => RejectReason::TimeInFuture,
        QueryError::Rewind(_) => RejectReason::TimeTooOld,
        QueryError::Ray(_) | QueryError::Radius(_) | QueryError::Volume => RejectReason::NonFinite,
        QueryError::Entity(_) | QueryError::UnknownHitbox(_) => RejectReason::TamperedClaim,
    }
}

/// The moment a claim names, with what check 4 weighs it against.
pub(crate) struct ClaimedMoment {
    /// The claimed time, seconds.
    pub(crate) time: f64,
    /// The same as a rewind target.
    pub(crate) target: RewindTarget,
    /// When the claim reached the server, seconds.
    pub(crate) received_at: f64,
    /// The history's oldest frame, seconds.
    pub(crate) oldest: f64,
    /// The history's newest frame, seconds.
    pub(crate) newest: f64,
}

impl ClaimedMoment {
    /// Check 4's rewind: the moment to look at and how, or why the claimed time is
    /// refused. Findings (the measured values, a fallback) go into `basis`.
    pub(crate) fn rewind(
        &self,
        weapon: &WeaponRules,
        policy: &Policy,
        timing: &ClientTiming,
        basis: &mut Basis,
    ) -> Result<(RewindTarget, WindowPolicy), RejectReason> {
        let implied = self.received_at - self.time;
        if implied > weapon.max_rewind || self.time < self.oldest {
            // The history's oldest moment may be the nearer limit.
            let most = weapon.max_rewind.min(self.received_at - self.oldest);
            basis.measured = Measurement::at_most(implied, most);
            return Err(RejectReason::TimeTooOld);
        }
        let expected = timing.expected_rewind();
        let tolerance = policy.rewind_tolerance + policy.rewind_jitter_factor * timing.rttvar;
        let plausible = implied >= expected - tolerance
            && implied <= expected + tolerance + policy.rewind_late_slack;
        if plausible {
            // A claim just past the newest frame (a client extrapolating) is looked at in
            // the newest frame; the basis shows the clamp.
            Ok((self.target, WindowPolicy::Clamp))
        } else {
            match policy.time_mismatch {
                TimeMismatch::Reject => {
                    basis.measured = Measurement::between(
                        implied,
                        Some(expected - tolerance),
                        expected + tolerance + policy.rewind_late_slack,
                    );
                    Err(RejectReason::Backtrack)
                }
                TimeMismatch::UseServerEstimate => {
                    basis.fallback = true;
                    let estimate = (self.received_at - expected).clamp(self.oldest, self.newest);
                    if self.received_at - estimate > weapon.max_rewind {
                        basis.measured =
                            Measurement::at_most(self.received_at - estimate, weapon.max_rewind);
                        return Err(RejectReason::TimeTooOld);
                    }
                    Ok((RewindTarget::Time(estimate), WindowPolicy::Reject))
                }
            }
        }
    }
}
