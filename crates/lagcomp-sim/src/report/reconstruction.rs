//! The reconstruction error chart (`#chart-reconstruction`): the distribution of the
//! distance between the pose a client drew and the pose the server rebuilt, as grouped
//! bars, one group per histogram bucket and one bar per network condition.
//!
//! Bars show the share of that condition's samples, not the count, so conditions with
//! more shots do not look worse. Conditions may bring different buckets; the chart uses
//! the union of their bounds.

use super::palette;
use super::plot::{self, Axis, Frame, Key, LegendEntry};
use super::text::{coord, esc, fixed, number};
use crate::result::{PresetRun, SimResult};

/// A histogram bucket: its upper bound in mm, `None` for the open last bucket.
type Bound = Option<f64>;

/// The chart as a `<figure>`.
pub(super) fn chart(result: &SimResult) -> String {
    let runs = &result.runs;
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

    let buckets = buckets(runs);
    let shares: Vec<Vec<(u64, f64)>> = runs.iter().map(|run| shares(run, &buckets)).collect();
    let highest = shares
        .iter()
        .flatten()
        .map(|&(_, share)| share)
        .fold(0.0_f64, f64::max);
    let y_axis = Axis::nice(0.0, highest, 5);

    let mut svg = String::new();
    plot::open(
        &mut svg,
        "chart-reconstruction",
        &frame,
        "Reconstruction error distribution, per network condition",
        &describe(runs),
    );
    plot::legend(
        &mut svg,
        &entries,
        left,
        legend_top,
        plot::WIDTH - left - right,
    );
    let y = y_axis.onto(frame.bottom, frame.top);
    plot::y_axis(&mut svg, &frame, &y_axis, &y, "share of shots (%)");
    plot::baseline(&mut svg, &frame);
    plot::x_title(
        &mut svg,
        &frame,
        "largest bone distance, bucket upper bound (mm)",
    );

    if buckets.is_empty() {
        plot::empty_note(&mut svg, &frame, "No reconstruction samples.");
        plot::close(&mut svg);
        return plot::figure(&svg, "No shot had a reconstruction error to measure.");
    }

    let band = (frame.right - frame.left) / buckets.len() as f64;
    let bar = band * 0.8 / runs.len().max(1) as f64;
    let labels: Vec<String> = buckets
        .iter()
        .map(|&bound| bucket_label(bound, &buckets))
        .collect();
    let widest = labels
        .iter()
        .map(|label| plot::text_width(label, 12.0))
        .fold(0.0, f64::max);
    // Show every n-th label so neighbours do not overlap.
    let label_every = ((widest + 6.0) / band).ceil().max(1.0) as usize;

    svg.push_str("<g class=\"axis x-axis\">\n");
    for (b, label) in labels.iter().enumerate() {
        if b % label_every != 0 {
            continue;
        }
        let x = coord(frame.left + band * (b as f64 + 0.5));
        put!(
            svg,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"{}\"/><text x=\"{x}\" y=\"{}\" \
             text-anchor=\"middle\">{}</text>\n",
            coord(frame.bottom),
            coord(frame.bottom + 5.0),
            palette::AXIS,
            coord(frame.bottom + 18.0),
            esc(label)
        );
    }
    svg.push_str("</g>\n");

    for (i, (run, run_shares)) in runs.iter().zip(&shares).enumerate() {
        let colour = palette::preset(i, runs.len());
        put!(svg, "<g class=\"series preset-{i}\" fill=\"{colour}\">\n");
        for (b, &(count, share)) in run_shares.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let x = frame.left + band * b as f64 + band * 0.1 + bar * i as f64;
            let top = y.at(share);
            put!(
                svg,
                "<rect class=\"bar preset-{i}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\">\
                 <title>{}</title></rect>\n",
                coord(x),
                coord(top),
                coord(bar),
                coord(frame.bottom - top),
                esc(&format!(
                    "{}: {} % of shots ({count}) in bucket {} mm",
                    run.preset,
                    fixed(share, 1),
                    labels[b]
                )),
            );
        }
        svg.push_str("</g>\n");
    }
    plot::close(&mut svg);
    plot::figure(
        &svg,
        "Each bar: the share of a network condition's measured shots whose largest bone distance \
         falls in that bucket (upper bound in mm; the last bucket is open).",
    )
}

/// The union of all runs' bucket bounds, increasing, the open bucket last.
fn buckets(runs: &[PresetRun]) -> Vec<Bound> {
    let mut finite: Vec<f64> = runs
        .iter()
        .flat_map(|run| run.reconstruction.histogram.iter())
        .filter_map(|&(bound, _)| bound.filter(|b| b.is_finite()))
        .collect();
    finite.sort_by(f64::total_cmp);
    finite.dedup();
    let open = runs
        .iter()
        .flat_map(|run| run.reconstruction.histogram.iter())
        .any(|&(bound, _)| !bound.is_some_and(f64::is_finite));
    let mut buckets: Vec<Bound> = finite.into_iter().map(Some).collect();
    if open {
        buckets.push(None);
    }
    buckets
}

/// One run's `(count, share %)` for each of `buckets`.
fn shares(run: &PresetRun, buckets: &[Bound]) -> Vec<(u64, f64)> {
    let mut counts = vec![0_u64; buckets.len()];
    for &(bound, count) in &run.reconstruction.histogram {
        let bound = bound.filter(|b| b.is_finite());
        if let Some(slot) = buckets.iter().position(|&b| b == bound) {
            counts[slot] = counts[slot].saturating_add(count);
        }
    }
    let total: u64 = counts.iter().fold(0, |sum, &c| sum.saturating_add(c));
    counts
        .into_iter()
        // u64 → f64 rounds past 2^53 shots, far beyond what a share needs.
        .map(|count| {
            (
                count,
                if total == 0 {
                    0.0
                } else {
                    count as f64 / total as f64 * 100.0
                },
            )
        })
        .collect()
}

/// "≤ 5" for a bounded bucket, "> 50" for the open one after 50.
fn bucket_label(bound: Bound, buckets: &[Bound]) -> String {
    match bound {
        Some(b) => format!("≤ {}", number(b)),
        None => match buckets.iter().rev().find_map(|&b| b) {
            Some(last) => format!("> {}", number(last)),
            None => "all".to_owned(),
        },
    }
}

/// The chart's description for screen readers: each condition's summary figures.
fn describe(runs: &[PresetRun]) -> String {
    if runs.is_empty() {
        return "No network conditions were simulated.".to_owned();
    }
    runs.iter()
        .map(|run| {
            let stats = &run.reconstruction;
            format!(
                "{}: {} samples, mean {} mm, 99th percentile {} mm, max {} mm",
                run.preset,
                stats.samples,
                number(stats.mean_mm),
                number(stats.p99_mm),
                number(stats.max_mm)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
