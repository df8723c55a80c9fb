//! The rejections chart (`#chart-rejections`): honest shots the full validator turned
//! down, one horizontal bar per reason (`<g class="bar">`), most frequent first, each
//! bar stacked by network condition in the conditions' colours.
//!
//! It draws [`Mode::Full`]'s rejections, the ones the validator makes; the results table
//! has every mode's total.

use std::collections::BTreeMap;

use super::palette;
use super::plot::{self, Axis, Frame, Key, LegendEntry};
use super::text::{coord, esc};
use crate::result::{Mode, SimResult};

/// Height of one reason's row, and of its bar.
const ROW: f64 = 28.0;
const BAR: f64 = 18.0;

/// The chart as a `<figure>`.
pub(super) fn chart(result: &SimResult) -> String {
    let runs = &result.runs;
    // reason → count per run, in run order.
    let mut by_reason: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (i, run) in runs.iter().enumerate() {
        let Some(full) = run.modes.get(&Mode::Full) else {
            continue;
        };
        for (reason, &count) in &full.rejections {
            let slot = &mut by_reason
                .entry(reason.as_str())
                .or_insert_with(|| vec![0; runs.len()])[i];
            *slot = slot.saturating_add(count);
        }
    }
    let mut reasons: Vec<(&str, Vec<u64>, u64)> = by_reason
        .into_iter()
        .map(|(reason, counts)| {
            let total = counts.iter().fold(0_u64, |sum, &c| sum.saturating_add(c));
            (reason, counts, total)
        })
        .collect();
    // Most frequent first; the name breaks ties so the order never depends on chance.
    reasons.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));

    let entries: Vec<LegendEntry> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| LegendEntry {
            label: run.preset.clone(),
            colour: palette::preset(i, runs.len()),
            key: Key::Swatch,
            class: format!("series-key preset-{i}"),
        })
        .collect();
    let widest_reason = reasons
        .iter()
        .map(|(reason, ..)| plot::text_width(reason, 12.0))
        .fold(0.0, f64::max);
    let left = (widest_reason + 20.0).clamp(90.0, 300.0);
    let right = 70.0;
    let legend_top = 12.0;
    let legend_height = plot::legend_height(&entries, plot::WIDTH - left - right);
    let top = legend_top + legend_height + 14.0;
    let rows = reasons.len().max(1) as f64;
    let frame = Frame::new(
        plot::WIDTH,
        top + rows * ROW + 8.0 + 52.0,
        left,
        right,
        top,
        52.0,
    );

    let highest = reasons
        .iter()
        .map(|&(_, _, total)| total as f64)
        .fold(0.0, f64::max);
    let x_axis = Axis::nice(0.0, highest, 6);

    let mut svg = String::new();
    plot::open(
        &mut svg,
        "chart-rejections",
        &frame,
        "Honest shots rejected by the full validator, by reason",
        &describe(&reasons),
    );
    plot::legend(
        &mut svg,
        &entries,
        left,
        legend_top,
        plot::WIDTH - left - right,
    );
    let x = x_axis.onto(frame.left, frame.right);
    plot::x_axis(
        &mut svg,
        &frame,
        &x_axis,
        &x,
        "honest shots rejected (count)",
    );
    if reasons.is_empty() {
        plot::empty_note(&mut svg, &frame, "No honest shot was rejected.");
    }

    for (row, (reason, counts, total)) in reasons.iter().enumerate() {
        let row_top = frame.top + 4.0 + row as f64 * ROW;
        let bar_top = coord(row_top + (ROW - BAR) / 2.0);
        let mid = coord(row_top + ROW / 2.0);
        put!(
            svg,
            "<g class=\"bar\" data-reason=\"{r}\"><title>{r}: {total}</title>\n\
             <text x=\"{}\" y=\"{mid}\" dy=\"0.32em\" text-anchor=\"end\">{r}</text>\n",
            coord(frame.left - 8.0),
            r = esc(reason),
        );
        let mut so_far = 0_u64;
        for (i, &count) in counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            // u64 → f64 rounds only past 2^53, where a pixel does not care.
            let start = x.at(so_far as f64);
            so_far = so_far.saturating_add(count);
            let end = x.at(so_far as f64);
            put!(
                svg,
                "<rect class=\"segment preset-{i}\" x=\"{}\" y=\"{bar_top}\" width=\"{}\" height=\"{BAR}\" \
                 fill=\"{}\"><title>{}</title></rect>\n",
                coord(start),
                coord(end - start),
                palette::preset(i, runs.len()),
                esc(&format!("{reason}, {}: {count}", runs[i].preset)),
            );
        }
        put!(
            svg,
            "<text class=\"total\" x=\"{}\" y=\"{mid}\" dy=\"0.32em\">{total}</text>\n</g>\n",
            coord(x.at(so_far as f64) + 6.0)
        );
    }
    plot::close(&mut svg);
    plot::figure(
        &svg,
        "Each bar: honest shots the full validator rejected for that reason, over all network \
         conditions; its parts show how many came from each condition.",
    )
}

/// The chart's description for screen readers: each reason and its count.
fn describe(reasons: &[(&str, Vec<u64>, u64)]) -> String {
    if reasons.is_empty() {
        return "No honest shot was rejected.".to_owned();
    }
    reasons
        .iter()
        .map(|(reason, _, total)| format!("{reason}: {total}"))
        .collect::<Vec<_>>()
        .join("; ")
}
