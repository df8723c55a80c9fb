//! Hits the game refuses without anyone cheating: on a spawn-protected target
//! ([`Refusal::Invulnerable`]) and on one whose dodge the server registered before the shot
//! arrived ([`Refusal::Dodged`], when the policy's [`DodgeRule`] lets the dodge win).
//!
//! A refusal is decided last, on a hit every other check confirmed: a claim that is wrong
//! in itself (tampered, backtracked, out of view) is still rejected for that, whatever
//! the target's state. A refused hit does no damage, so a client gains nothing by aiming
//! at protected or dodging targets; that is why a refusal is not a cheat rejection and
//! counts as a miss in statistics and the audit log's honest column.
//!
//! Which moments are read, and why:
//! - Protection is read at the rewound time (the shooter saw a protected target: the game
//!   shows protection, and no damage was ever due) and at the present, the newest frame
//!   recorded when the shot is judged (the server would not damage a protected body now,
//!   however the shooter saw it). Either refuses.
//! - A dodge is read at the same two moments. Set at the present: the server registered
//!   it before the shot arrived, which is Overwatch's rule for when a defensive ability
//!   beats favour-the-shooter. Set at the rewound time: registered earlier still (the
//!   shooter's picture already showed it).

use lagcomp::{EntityId, EntityState, History};
use serde::{Deserialize, Serialize};

use crate::validator::Validator;

/// Why a hit that every check confirmed does no damage: the game's rules about the target,
/// not a fault in the claim. Stable like [`crate::RejectReason`]: variants are only ever
/// added, each keeps its [`Refusal::code`] and [`Refusal::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Refusal {
    /// The target was invulnerable (spawn protection) at the rewound time or at the
    /// present.
    Invulnerable,
    /// The target was evasive (a registered dodge) at the rewound time or at the present,
    /// and the policy lets the dodge win ([`DodgeRule::DodgeWins`]).
    Dodged,
}

impl Refusal {
    /// Every refusal, in code order.
    pub const ALL: [Self; 2] = [Self::Invulnerable, Self::Dodged];

    /// A stable number, in a range of its own (1001 and up) so it is never mistaken for a
    /// rejection's code.
    #[must_use]
    pub const fn code(self) -> u16 {
        match self {
            Self::Invulnerable => 1001,
            Self::Dodged => 1002,
        }
    }

    /// The stable snake_case name: `invulnerable` or `dodged` (as in recordings, JSON and
    /// a verdict's label).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Invulnerable => "invulnerable",
            Self::Dodged => "dodged",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Who wins when a shot meets a dodge: the policy's `dodge` (`dodge = "shooter_wins"`
/// under `[policy]` in the rules TOML; default `dodge_wins`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DodgeRule {
    /// A hit on a target evasive at the rewound time or at the present is refused
    /// ([`Refusal::Dodged`]): the dodge was registered before the shot arrived.
    #[default]
    DodgeWins,
    /// Favour the shooter: the `evasive` flag is ignored and the rewound hit stands
    /// (confirmed, with its damage), as for any other target.
    ShooterWins,
}

impl Validator {
    /// The refusal due on a confirmed hit on `target`, whose state at the rewound time was
    /// `then`; `None` when the hit stands. The present is the target's newest recorded
    /// frame (a target no longer recorded has no present to protect it).
    pub(crate) fn refusal(
        &self,
        history: &History,
        target: EntityId,
        then: EntityState,
    ) -> Option<Refusal> {
        let now = history.present_state(target).ok();
        if then.invulnerable || now.is_some_and(|s| s.invulnerable) {
            return Some(Refusal::Invulnerable);
        }
        let dodged = then.evasive || now.is_some_and(|s| s.evasive);
        (dodged && self.rules().policy.dodge == DodgeRule::DodgeWins).then_some(Refusal::Dodged)
    }
}
