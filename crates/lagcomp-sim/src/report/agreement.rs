//! The agreement chart (`#chart-agreement`): for each way of deciding a shot, one line of
//! how often the server confirmed what honest clients saw hit, against the round-trip
//! time of each network condition.
//!
//! A condition where a mode had no client hits has no agreement to show ("n/a"); its
//! point is left out of that mode's line and a note under the chart says so.

use super::plot::{self, Axis, Frame, Key, LegendEntry};
use super::text::{coord, esc, number, percent};
use super::{palette, shown_agreement};
use crate::result::{Mode, SimResult};

/// The chart as a `<figure>`.
pub(super) fn chart(result: &SimResult) -> String {
    let entries: Vec<LegendEntry> = Mode::ALL
        .iter()
        .map(|&mode| LegendEntry {
            label: mode.label().to_owned(),
            colour: palette::mode(mode).to_owned(),
            key: Key::Line,
            class: format!("series-key {}", palette::mode_class(mode)),
        })
        .collect();
    let (left, right) = (78.0, 24.0);
    let legend_top = 12.0;
    let legend_height = plot::legend_height(&entries, plot::WIDTH - left - right);
    let frame = Frame::new(
        plot::WIDTH,
        330.0 + legend_height,
        left,
        right,
        legend_top + legend_height + 14.0,
        52.0,
    );

    let latencies = result
        .runs
        .iter()
        .map(|run| run.rtt_ms)
        .filter(|rtt| rtt.is_finite());
    let x_max = latencies.clone().fold(0.0_f64, f64::max);
    let x_min = latencies.fold(0.0_f64, f64::min);
    let x_axis = Axis::nice(x_min, x_max, 6);
    let agreements = result
        .runs
        .iter()
        .flat_map(|run| run.modes.values())
        .filter_map(shown_agreement)
        .map(|fraction| fraction * 100.0);
    // Agreement is a share, so the axis is 0–100 %; it only grows if the data is out of
    // range, so nothing is drawn off the chart.
    let y_axis = Axis::nice(
        agreements.clone().fold(0.0_f64, f64::min),
        agreements.fold(100.0_f64, f64::max),
        5,
    );

    let mut svg = String::new();
    plot::open(
        &mut svg,
        "chart-agreement",
        &frame,
        "Agreement against latency, per mode",
        &describe(result),
    );
    plot::legend(
        &mut svg,
        &entries,
        left,
        legend_top,
        plot::WIDTH - left - right,
    );
    let x = x_axis.onto(frame.left, frame.right);
    let y = y_axis.onto(frame.bottom, frame.top);
    plot::y_axis(
        &mut svg,
        &frame,
        &y_axis,
        &y,
        "agreement with the client (%)",
    );
    plot::x_axis(&mut svg, &frame, &x_axis, &x, "round-trip time (ms)");
    let mut left_out = 0;
    for mode in Mode::ALL {
        let class = palette::mode_class(mode);
        let colour = palette::mode(mode);
        let mut points = Vec::new();
        for run in &result.runs {
            let Some(mode_result) = run.modes.get(&mode) else {
                continue;
            };
            match shown_agreement(mode_result) {
                Some(fraction) if run.rtt_ms.is_finite() => {
                    points.push((run, mode_result, fraction))
                }
                _ => left_out += 1,
            }
        }
        if points.is_empty() {
            continue;
        }
        let coordinates: Vec<String> = points
            .iter()
            .map(|(run, _, fraction)| {
                format!(
                    "{},{}",
                    coord(x.at(run.rtt_ms)),
                    coord(y.at(fraction * 100.0))
                )
            })
            .collect();
        put!(
            svg,
            "<g class=\"mode {class}\">\n<polyline class=\"series {class}\" points=\"{}\" fill=\"none\" \
             stroke=\"{colour}\" stroke-width=\"2.5\" stroke-linejoin=\"round\"><title>{}</title></polyline>\n",
            coordinates.join(" "),
            esc(mode.label()),
        );
        for (run, mode_result, fraction) in &points {
            put!(
                svg,
                "<circle class=\"point {class}\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{colour}\" stroke=\"#ffffff\" \
                 stroke-width=\"1\"><title>{}</title></circle>\n",
                coord(x.at(run.rtt_ms)),
                coord(y.at(fraction * 100.0)),
                esc(&format!(
                    "{}, {}: {} ({} of {} client hits confirmed), RTT {} ms",
                    run.preset,
                    mode.label(),
                    percent(*fraction),
                    mode_result.agreed,
                    mode_result.client_hits,
                    number(run.rtt_ms),
                )),
            );
        }
        svg.push_str("</g>\n");
    }
    if result.runs.is_empty() {
        plot::empty_note(&mut svg, &frame, "No network conditions were simulated.");
    }
    plot::close(&mut svg);

    let mut caption =
        "Agreement: of the arrived shots an honest client saw hit, the share the server \
                       confirmed on the same target. Each point is one network condition."
            .to_owned();
    if left_out > 0 {
        put!(
            caption,
            " {left_out} point(s) without client hits (n/a) are left out of the lines."
        );
    }
    plot::figure(&svg, &caption)
}

/// The chart's description for screen readers: every value, in words.
fn describe(result: &SimResult) -> String {
    if result.runs.is_empty() {
        return "No network conditions were simulated.".to_owned();
    }
    let mut parts = Vec::new();
    for run in &result.runs {
        let by_mode: Vec<String> = Mode::ALL
            .iter()
            .filter_map(|mode| {
                let mode_result = run.modes.get(mode)?;
                let shown = shown_agreement(mode_result).map_or_else(|| "n/a".to_owned(), percent);
                Some(format!("{} {shown}", mode.label()))
            })
            .collect();
        parts.push(format!(
            "{} (RTT {} ms): {}",
            run.preset,
            number(run.rtt_ms),
            by_mode.join(", ")
        ));
    }
    parts.join("; ")
}
