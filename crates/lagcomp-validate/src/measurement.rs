//! [`Measurement`]: what a failed check measured against what it allows, recorded in a
//! verdict's basis and shown by its `Display` ([`crate::explain`]).

use serde::{Deserialize, Serialize};

/// What a failed check measured, and what it allows, in the check's unit: seconds for the
/// time checks, metres for the origin, degrees for the angle, sequence numbers for the
/// replay window. Finite numbers only.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// What the check measured: how far behind its arrival the claimed time lies
    /// (`time_too_old`, `backtrack`), how far after it (`time_in_future`), the muzzle's
    /// distance from the aim bone (`origin_too_far`), the angle between the shot and the
    /// recorded view (`angle_too_far`), how far behind the highest sequence number seen
    /// (`sequence_too_old`), how far past its snapshot the client extrapolated
    /// (`extrapolated_too_far`).
    pub value: f64,
    /// The least the check allows, when it has a lower bound (`backtrack`: the expected
    /// rewind minus the tolerance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub least: Option<f64>,
    /// The most the check allows.
    pub most: f64,
}

impl Measurement {
    /// A measurement with an upper bound only; `None` unless both numbers are finite.
    pub(crate) fn at_most(value: f64, most: f64) -> Option<Self> {
        Self::between(value, None, most)
    }

    /// A measurement with both bounds (or only the upper one); `None` unless every number
    /// is finite.
    pub(crate) fn between(value: f64, least: Option<f64>, most: f64) -> Option<Self> {
        let finite = value.is_finite() && most.is_finite() && least.is_none_or(f64::is_finite);
        finite.then_some(Self { value, least, most })
    }
}
