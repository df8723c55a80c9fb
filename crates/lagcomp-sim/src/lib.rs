//! A deterministic match simulator for lagcomp.
//!
//! - [`result`]: what a run measured (table, JSON, report).
//! - [`report`]: the HTML report with SVG charts.

pub mod body;
pub mod cheat;
pub mod report;
pub mod result;
pub mod scenario;
pub mod skirmish;

pub use result::{
    CheatResult, ErrorStats, Mode, ModeResult, Outline, PresetRun, ShotPicture, SimResult,
};
