//! Verdicts a person can read: the `Display` of a [`Rejection`] and of a [`Verdict`],
//! which show how far off a rejected claim was against the tolerance it broke (the
//! [`Measurement`] in [`crate::Basis::measured`]).
//!
//! What lives elsewhere: the reasons themselves and their stable names
//! ([`crate::verdict`]), and the checks that measure ([`crate::validator`]).

use std::fmt;

use lagcomp::Blocker;

use crate::evasion::Refusal;
use crate::measurement::Measurement;
use crate::verdict::{RejectReason, Verdict, VerdictOutcome};

/// A rejection as a person reads it: the reason and, when its check measured something,
/// how far off the claim was. Its `Display` is the reason's stable name followed by the
/// numbers, for example `origin_too_far: 0.84 m from the aim bone, allowed 0.50 m`.
///
/// ```
/// use lagcomp_validate::{Measurement, RejectReason, Rejection};
///
/// let rejection = Rejection {
///     reason: RejectReason::Backtrack,
///     measured: Some(Measurement { value: 0.412, least: Some(0.1), most: 0.25 }),
/// };
/// assert_eq!(
///     rejection.to_string(),
///     "backtrack: claimed 0.412 s behind its arrival, allowed 0.100 s to 0.250 s"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rejection {
    /// Why the claim was refused.
    pub reason: RejectReason,
    /// How far off it was, if the check measured it.
    pub measured: Option<Measurement>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason.name())?;
        let Some(Measurement { value, least, most }) = self.measured else {
            // The two rejections a server set up wrong gives every shot: say what to do.
            return match self.reason {
                RejectReason::UnknownShooter => f.write_str(
                    ": the shooter is not known (spawn it in the History, then \
                     Validator::add_player it, or Validator::register it)",
                ),
                RejectReason::NoTiming => f.write_str(
                    ": no timing for the shooter yet (Validator::add_player or \
                     Validator::set_timing, e.g. from a latency::LatencyTracker)",
                ),
                _ => Ok(()),
            };
        };
        let allowed = |f: &mut fmt::Formatter<'_>, unit: &str, places: usize| match least {
            Some(least) => write!(
                f,
                ", allowed {least:.places$} {unit} to {most:.places$} {unit}"
            ),
            None => write!(f, ", allowed {most:.places$} {unit}"),
        };
        match self.reason {
            RejectReason::TimeTooOld | RejectReason::Backtrack => {
                write!(f, ": claimed {value:.3} s behind its arrival")?;
                allowed(f, "s", 3)
            }
            RejectReason::TimeInFuture => {
                write!(f, ": claimed {value:.3} s after its arrival")?;
                allowed(f, "s", 3)
            }
            RejectReason::OriginTooFar => {
                write!(f, ": {value:.2} m from the aim bone")?;
                allowed(f, "m", 2)
            }
            RejectReason::AngleTooFar => {
                write!(f, ": {value:.1} degrees from the view")?;
                allowed(f, "degrees", 1)
            }
            RejectReason::SequenceTooOld => {
                write!(f, ": {value} behind the highest sequence number seen")?;
                allowed(f, "behind", 0)
            }
            // No other check records a measurement; should one, its numbers still show.
            _ => {
                write!(f, ": measured {value}")?;
                allowed(f, "", 3)
            }
        }
    }
}

impl Verdict {
    /// The rejection, with how far off the claim was, if the claim was rejected.
    #[must_use]
    pub fn rejection(&self) -> Option<Rejection> {
        self.outcome.reason().map(|reason| Rejection {
            reason,
            measured: self.basis.measured,
        })
    }
}

/// One line for a person: the shot, then what it came to (for a rejection, the
/// [`Rejection`]'s text with its numbers).
impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shot {} of {}: ", self.seq, self.shooter)?;
        match self.outcome {
            VerdictOutcome::Confirmed(hit) => write!(
                f,
                "confirmed: hitbox {} of {}, {:.2} m away, damage x{}{}",
                hit.hitbox.0,
                hit.target,
                hit.distance,
                hit.damage_multiplier,
                if hit.by_leeway {
                    ", within the leeway"
                } else {
                    ""
                },
            ),
            VerdictOutcome::Miss => f.write_str("miss"),
            VerdictOutcome::Blocked {
                by: Blocker::Wall(wall),
                distance,
            } => write!(f, "blocked by wall {} {distance:.2} m out", wall.0),
            VerdictOutcome::Blocked {
                by: Blocker::Entity(entity),
                distance,
            } => write!(f, "blocked by {entity} {distance:.2} m out"),
            VerdictOutcome::Rejected { reason } => Rejection {
                reason,
                measured: self.basis.measured,
            }
            .fmt(f),
            VerdictOutcome::Refused {
                target,
                refusal: Refusal::Invulnerable,
                distance,
            } => write!(
                f,
                "refused (invulnerable): {target} {distance:.2} m away was spawn-protected"
            ),
            VerdictOutcome::Refused {
                target,
                refusal: Refusal::Dodged,
                distance,
            } => write!(
                f,
                "refused (dodged): {target} {distance:.2} m away dodged before the shot arrived"
            ),
        }
    }
}
