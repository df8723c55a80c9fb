//! The report's colours, in one place so a mode, a network condition or a part of the
//! shot picture has the same colour in every chart and legend.
//!
//! Modes and the shot picture use the Okabe–Ito colours, which stay apart for the common
//! kinds of colour blindness; network conditions use one blue ramp, light to dark as the
//! latency grows, because they are ordered.

use crate::result::Mode;

/// Axis lines and tick marks.
pub(super) const AXIS: &str = "#555555";
/// Grid lines behind the data.
pub(super) const GRID: &str = "#e3e3e3";
/// Labels and notes.
pub(super) const INK: &str = "#1b1b1b";
/// Secondary text.
pub(super) const MUTED: &str = "#666666";

/// The target's hitboxes as the server has them now.
pub(super) const PRESENT: &str = "#0072b2";
/// The hitboxes rebuilt at the shot's render time.
pub(super) const REWOUND: &str = "#e69f00";
/// The shot's ray.
pub(super) const RAY: &str = "#d55e00";
/// Where the server confirmed the hit.
pub(super) const HIT: &str = "#000000";

/// The colour of a way of deciding a shot.
#[must_use]
pub(super) const fn mode(mode: Mode) -> &'static str {
    match mode {
        Mode::None => "#cc79a7",
        Mode::ServerGuess => "#56b4e9",
        Mode::Full => "#009e73",
    }
}

/// The CSS class of a mode's data (`mode-full`), stable for tests and styling.
#[must_use]
pub(super) const fn mode_class(mode: Mode) -> &'static str {
    match mode {
        Mode::None => "mode-none",
        Mode::ServerGuess => "mode-server-guess",
        Mode::Full => "mode-full",
    }
}

/// The colour of network condition `index` of `count`: a ramp from a light to a dark
/// blue, so the order of the conditions (increasing latency) shows in the colour.
#[must_use]
pub(super) fn preset(index: usize, count: usize) -> String {
    const LIGHT: [f64; 3] = [120.0, 185.0, 225.0];
    const DARK: [f64; 3] = [8.0, 48.0, 107.0];
    let t = if count <= 1 {
        0.5
    } else {
        // usize → f64 is exact for any count a report can have.
        index.min(count - 1) as f64 / (count - 1) as f64
    };
    let channel = |i: usize| {
        (LIGHT[i] + (DARK[i] - LIGHT[i]) * t)
            .round()
            .clamp(0.0, 255.0) as u8
    };
    format!("#{:02x}{:02x}{:02x}", channel(0), channel(1), channel(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ramp_runs_from_light_to_dark() {
        assert_eq!(preset(0, 5), "#78b9e1");
        assert_eq!(preset(4, 5), "#08306b");
        assert_eq!(preset(0, 1), preset(3, 7));
        assert_eq!(preset(9, 0), preset(0, 1), "no panic on a bad index");
    }
}
