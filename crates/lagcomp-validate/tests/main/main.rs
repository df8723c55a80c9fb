//! lagcomp-validate's integration tests, in one binary so the crate's dependencies are
//! linked once: a module per concern, and the shared skirmish (`fixture`) and recording
//! helpers (`recording_support`).

mod allocations;
mod audit;
mod doors;
mod evasion;
mod examine;
mod extrapolated;
mod fixture;
mod kinds;
mod level_geometry;
mod melee;
mod penetration;
mod players;
mod properties;
mod readable;
mod reasons;
mod recording;
mod recording_evasion;
mod recording_kinds;
mod recording_level;
mod recording_roles;
mod recording_support;
mod splash_victims;
mod walls;
mod weapon_layers;
