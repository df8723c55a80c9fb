//! What a match's shots came to, honest and cheating: the counts both the simulator and
//! `lagcomp bots` report (the simulator puts them in its results and report; the bots
//! print them). Plain data, serializable.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One mode's numbers in one network condition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModeResult {
    /// Shots honest clients fired.
    pub shots_sent: u64,
    /// Shots that reached the server.
    pub shots_arrived: u64,
    /// Arrived shots the client saw hit.
    pub client_hits: u64,
    /// Arrived shots the server confirmed.
    pub confirmed: u64,
    /// Of `client_hits`, how many the server confirmed (on the same target).
    pub agreed: u64,
    /// `agreed / client_hits`.
    pub agreement: f64,
    /// Shots the server confirmed although the client saw them miss.
    pub false_confirmations: u64,
    /// Honest shots rejected, by reason name.
    pub rejections: BTreeMap<String, u64>,
}

/// One cheat class, run on its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheatResult {
    /// The class (`"backtrack"`, `"rapid_fire"`, …).
    pub class: String,
    /// What the cheat does, one line.
    pub description: String,
    /// Cheating shots that reached the server.
    pub attempts: u64,
    /// Of those, confirmed as hits (the floor is 0).
    pub accepted: u64,
    /// How they were rejected, by reason name (plus `miss` / `blocked`).
    pub outcomes: BTreeMap<String, u64>,
    /// Honest shots (from the other bots in the same run) rejected.
    pub honest_rejected: u64,
}
