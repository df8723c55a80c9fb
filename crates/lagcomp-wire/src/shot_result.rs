//! One shot's verdict as the wire carries it to its shooter: [`WireVerdict`] and its
//! [`WireOutcome`], with their encoding. The server's message that carries them is in
//! [`crate::server`]; their numbering and repetition in [`crate::verdicts`]. Both use this
//! module; it uses neither.

use lagcomp::{EntityId, HitboxId};
use lagcomp_validate::{Refusal, RejectReason, VerdictOutcome, WeaponVerdict};

use crate::codec::{Reader, Writer};
use crate::error::{DecodeError, EncodeError};

/// What the server decided about one shot, so a client (or a bot tallying agreement) can
/// compare it with what it saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireVerdict {
    /// The shot's sequence number (the claim's).
    pub seq: u32,
    /// The decision.
    pub outcome: WireOutcome,
}

/// A verdict's outcome as the shooter needs it: what was hit, or why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireOutcome {
    /// The shot hit this entity's hitbox.
    Confirmed {
        /// The entity hit.
        target: EntityId,
        /// The hitbox hit.
        hitbox: HitboxId,
    },
    /// The shot hit nothing within range.
    Miss,
    /// A wall was in the way.
    Blocked,
    /// The claim was refused, for this reason.
    Rejected(RejectReason),
    /// The shot hit this entity, which the game's rules denied damage (spawn protection,
    /// a registered dodge): a miss with a reason, not a cheat.
    Refused {
        /// The entity hit.
        target: EntityId,
        /// Why it took no damage.
        refusal: Refusal,
    },
}

impl From<&VerdictOutcome> for WireOutcome {
    fn from(outcome: &VerdictOutcome) -> Self {
        match *outcome {
            VerdictOutcome::Confirmed(hit) => Self::Confirmed {
                target: hit.target,
                hitbox: hit.hitbox,
            },
            VerdictOutcome::Miss => Self::Miss,
            VerdictOutcome::Blocked { .. } => Self::Blocked,
            VerdictOutcome::Rejected { reason } => Self::Rejected(reason),
            VerdictOutcome::Refused {
                target, refusal, ..
            } => Self::Refused { target, refusal },
        }
    }
}

impl WireVerdict {
    /// A verdict of any weapon kind as its shooter gets it: a hitscan, projectile or
    /// melee verdict as one result; a pellet or blast verdict as one per target struck
    /// (one miss when none was, one rejection for a refused claim), as
    /// [`WeaponVerdict::verdicts`] folds them, each with the claim's sequence number.
    /// Allocates nothing; push each into the client's [`crate::VerdictOutbox`].
    pub fn of_weapon_verdict(verdict: &WeaponVerdict) -> impl Iterator<Item = Self> + '_ {
        verdict.verdicts().map(|folded| Self {
            seq: folded.seq,
            outcome: WireOutcome::from(&folded.outcome),
        })
    }
}

impl WireOutcome {
    /// The stable label of [`VerdictOutcome::label`]: `confirmed`, `miss`, `blocked`, or the
    /// rejection reason's name.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Confirmed { .. } => "confirmed",
            Self::Miss => "miss",
            Self::Blocked => "blocked",
            Self::Rejected(reason) => reason.name(),
            Self::Refused { refusal, .. } => refusal.name(),
        }
    }
}

const OUTCOME_CONFIRMED: u8 = 0;
const OUTCOME_MISS: u8 = 1;
const OUTCOME_BLOCKED: u8 = 2;
const OUTCOME_REJECTED: u8 = 3;
const OUTCOME_REFUSED: u8 = 4;

impl WireVerdict {
    pub(crate) fn write(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        w.u32(self.seq);
        match self.outcome {
            WireOutcome::Confirmed { target, hitbox } => {
                w.u8(OUTCOME_CONFIRMED);
                w.u64(target.to_bits());
                w.u16(hitbox.0);
            }
            WireOutcome::Miss => w.u8(OUTCOME_MISS),
            WireOutcome::Blocked => w.u8(OUTCOME_BLOCKED),
            WireOutcome::Rejected(reason) => {
                let code = reason.code();
                // Only codes the receiver can name go out: a reason newer than
                // `RejectReason::ALL` would not decode.
                if reason_of(code).is_none() {
                    return Err(EncodeError::UnknownRejectReason { code });
                }
                w.u8(OUTCOME_REJECTED);
                w.u16(code);
            }
            WireOutcome::Refused { target, refusal } => {
                w.u8(OUTCOME_REFUSED);
                w.u64(target.to_bits());
                w.u16(refusal.code());
            }
        }
        Ok(())
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let seq = r.u32("shot_result.seq")?;
        let offset = r.offset();
        let outcome = match r.u8("shot_result.outcome")? {
            OUTCOME_CONFIRMED => WireOutcome::Confirmed {
                target: EntityId::from_bits(r.u64("shot_result.target")?),
                hitbox: HitboxId(r.u16("shot_result.hitbox")?),
            },
            OUTCOME_MISS => WireOutcome::Miss,
            OUTCOME_BLOCKED => WireOutcome::Blocked,
            OUTCOME_REJECTED => {
                let offset = r.offset();
                let code = r.u16("shot_result.reason")?;
                WireOutcome::Rejected(
                    reason_of(code).ok_or(DecodeError::UnknownRejectCode { offset, code })?,
                )
            }
            OUTCOME_REFUSED => {
                let target = EntityId::from_bits(r.u64("shot_result.target")?);
                let offset = r.offset();
                let code = r.u16("shot_result.refusal")?;
                WireOutcome::Refused {
                    target,
                    refusal: Refusal::ALL
                        .into_iter()
                        .find(|r| r.code() == code)
                        .ok_or(DecodeError::UnknownRejectCode { offset, code })?,
                }
            }
            tag => {
                return Err(DecodeError::UnknownTag {
                    offset,
                    field: "shot_result.outcome",
                    tag,
                });
            }
        };
        Ok(Self { seq, outcome })
    }
}

/// The reason with this stable code.
fn reason_of(code: u16) -> Option<RejectReason> {
    RejectReason::ALL.into_iter().find(|r| r.code() == code)
}
