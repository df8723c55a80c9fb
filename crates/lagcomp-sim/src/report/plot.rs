//! The frame every chart shares: the `<svg>` element with its accessible title, the plot
//! area, value axes with "nice" ticks (1, 2 or 5 times a power of ten), grid lines, axis
//! titles with units, and the legend. The charts themselves (what data goes where) live
//! in their own files.

use super::palette;
use super::text::{coord, esc, tick};

/// Width of every chart, in SVG pixels (CSS pixels at 100% zoom).
pub(super) const WIDTH: f64 = 760.0;
/// Font size of labels.
const FONT: f64 = 12.0;
/// Height of one legend row.
const LEGEND_ROW: f64 = 18.0;

/// Where a chart draws: the whole SVG and the plot area inside its margins.
#[derive(Debug, Clone, Copy)]
pub(super) struct Frame {
    /// Width of the SVG.
    pub(super) width: f64,
    /// Height of the SVG.
    pub(super) height: f64,
    /// Plot area, left edge.
    pub(super) left: f64,
    /// Plot area, right edge.
    pub(super) right: f64,
    /// Plot area, top edge.
    pub(super) top: f64,
    /// Plot area, bottom edge.
    pub(super) bottom: f64,
}

impl Frame {
    /// A frame of `width` × `height` with the plot area inset by the margins.
    pub(super) fn new(
        width: f64,
        height: f64,
        left: f64,
        right: f64,
        top: f64,
        bottom: f64,
    ) -> Self {
        Self {
            width,
            height,
            left,
            right: width - right,
            top,
            bottom: height - bottom,
        }
    }

    /// Middle of the plot area, horizontally.
    pub(super) fn mid_x(&self) -> f64 {
        (self.left + self.right) / 2.0
    }

    /// Middle of the plot area, vertically.
    pub(super) fn mid_y(&self) -> f64 {
        (self.top + self.bottom) / 2.0
    }
}

/// A value axis: its range (widened to whole steps) and the step between ticks.
#[derive(Debug, Clone, Copy)]
pub(super) struct Axis {
    /// Lowest value shown.
    pub(super) lo: f64,
    /// Highest value shown.
    pub(super) hi: f64,
    /// Distance between ticks.
    step: f64,
    /// Decimals a tick label needs to show the step.
    decimals: usize,
}

/// Largest magnitude an axis spans; data past it is drawn at the edge. Far beyond any
/// count or latency a simulation produces, and small enough that steps stay finite.
const AXIS_LIMIT: f64 = 1e15;

impl Axis {
    /// An axis covering `lo..=hi` with about `target_ticks` ticks at round values.
    ///
    /// Any input works: non-finite bounds fall back to 0..1, an empty range is widened,
    /// and huge values are clamped to ±10^15.
    pub(super) fn nice(lo: f64, hi: f64, target_ticks: usize) -> Self {
        let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() {
            (lo, hi)
        } else {
            (0.0, 1.0)
        };
        lo = lo.clamp(-AXIS_LIMIT, AXIS_LIMIT);
        hi = hi.clamp(-AXIS_LIMIT, AXIS_LIMIT);
        if hi < lo {
            std::mem::swap(&mut lo, &mut hi);
        }
        let magnitude = lo.abs().max(hi.abs());
        if hi - lo <= magnitude * 1e-9 {
            if magnitude == 0.0 {
                hi = 1.0;
            } else {
                lo -= magnitude * 0.1;
                hi += magnitude * 0.1;
            }
        }
        let raw = (hi - lo) / target_ticks.max(1) as f64;
        let (step, exponent) = round_step(raw);
        let lo = (lo / step).floor() * step;
        let hi = (hi / step).ceil() * step;
        let decimals = usize::try_from(-exponent).unwrap_or(0);
        Self {
            lo,
            hi,
            step,
            decimals,
        }
    }

    /// The same ticks over exactly `lo..=hi`, without widening to whole steps: for the
    /// shot picture, whose ranges are set by the equal scale of both axes.
    pub(super) fn exact(lo: f64, hi: f64, target_ticks: usize) -> Self {
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Self::nice(lo, hi, target_ticks);
        }
        let (step, exponent) = round_step((hi - lo) / target_ticks.max(1) as f64);
        let decimals = usize::try_from(-exponent).unwrap_or(0);
        Self {
            lo,
            hi,
            step,
            decimals,
        }
    }

    /// The tick values: the multiples of the step from `lo` to `hi`, inclusive.
    pub(super) fn ticks(&self) -> Vec<f64> {
        let first = (self.lo / self.step - 1e-9).ceil();
        let last = (self.hi / self.step + 1e-9).floor();
        let count = last - first;
        // `nice` keeps the count near its target; the cap only guards against a bug.
        let count = if count.is_finite() && count >= 0.0 {
            count.min(100.0) as usize
        } else {
            return Vec::new();
        };
        (0..=count)
            .map(|i| (first + i as f64) * self.step)
            .collect()
    }

    /// The label of a tick value.
    pub(super) fn label(&self, value: f64) -> String {
        tick(value, self.decimals)
    }

    /// Maps this axis onto pixels `from..to` (`to` may be smaller, for a y axis).
    pub(super) fn onto(&self, from: f64, to: f64) -> Scale {
        Scale {
            lo: self.lo,
            hi: self.hi,
            from,
            to,
        }
    }
}

/// The round step (1, 2 or 5 × 10^exponent) at or above `raw`, and its exponent.
///
/// Found by stepping through powers of ten rather than with `log10`, so the step is the
/// same on every platform.
fn round_step(raw: f64) -> (f64, i32) {
    if !(raw.is_finite() && raw > 0.0) {
        return (1.0, 0);
    }
    let mut exponent = 0_i32;
    let mut power = 1.0_f64;
    while power > raw && exponent > -300 {
        power /= 10.0;
        exponent -= 1;
    }
    while power * 10.0 <= raw && exponent < 300 {
        power *= 10.0;
        exponent += 1;
    }
    // Now power <= raw < 10 × power.
    for multiple in [1.0, 2.0, 5.0] {
        if raw <= multiple * power {
            return (multiple * power, exponent);
        }
    }
    (10.0 * power, exponent + 1)
}

/// A linear map from values to pixels.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scale {
    lo: f64,
    hi: f64,
    from: f64,
    to: f64,
}

impl Scale {
    /// The pixel of `value`; values outside the axis are pinned to its ends, so bad data
    /// stays inside the chart.
    pub(super) fn at(&self, value: f64) -> f64 {
        let span = self.hi - self.lo;
        let t = if span > 0.0 && value.is_finite() {
            ((value - self.lo) / span).clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.from + (self.to - self.from) * t
    }
}

/// Rough width of a label in pixels: the SVG is not measured, so legends and margins
/// plan with an average glyph width.
pub(super) fn text_width(label: &str, font_size: f64) -> f64 {
    label.chars().count() as f64 * font_size * 0.6
}

/// Opens a chart: the `<svg>` with its id, size and accessible name and description.
pub(super) fn open(out: &mut String, id: &str, frame: &Frame, title: &str, description: &str) {
    put!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{id}\" class=\"chart\" role=\"img\" \
         width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         aria-labelledby=\"{id}-title {id}-desc\" font-family=\"system-ui, sans-serif\" \
         font-size=\"{FONT}\" fill=\"{ink}\">\n\
         <title id=\"{id}-title\">{}</title>\n<desc id=\"{id}-desc\">{}</desc>\n\
         <rect class=\"background\" x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n",
        esc(title),
        esc(description),
        w = coord(frame.width),
        h = coord(frame.height),
        ink = palette::INK,
    );
}

/// Closes a chart opened with [`open`].
pub(super) fn close(out: &mut String) {
    out.push_str("</svg>\n");
}

/// Wraps a finished chart in a `<figure>` with a caption.
pub(super) fn figure(svg: &str, caption: &str) -> String {
    format!(
        "<figure>\n{svg}<figcaption>{}</figcaption>\n</figure>\n",
        esc(caption)
    )
}

/// A horizontal value axis under the plot area: grid lines, ticks, labels and title.
///
/// `scale` maps the axis's values onto the plot area's width.
pub(super) fn x_axis(out: &mut String, frame: &Frame, axis: &Axis, scale: &Scale, title: &str) {
    out.push_str("<g class=\"axis x-axis\">\n");
    for value in axis.ticks() {
        let x = coord(scale.at(value));
        put!(
            out,
            "<line class=\"grid\" x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\" stroke=\"{grid}\"/>\
             <line x1=\"{x}\" y1=\"{bottom}\" x2=\"{x}\" y2=\"{tick_end}\" stroke=\"{axis}\"/>\
             <text x=\"{x}\" y=\"{label_y}\" text-anchor=\"middle\">{}</text>\n",
            esc(&axis.label(value)),
            top = coord(frame.top),
            bottom = coord(frame.bottom),
            tick_end = coord(frame.bottom + 5.0),
            label_y = coord(frame.bottom + 18.0),
            grid = palette::GRID,
            axis = palette::AXIS,
        );
    }
    baseline(out, frame);
    x_title(out, frame, title);
    out.push_str("</g>\n");
}

/// A vertical value axis left of the plot area: grid lines, ticks, labels and title.
///
/// `scale` maps the axis's values onto the plot area's height, upwards for a chart,
/// downwards for the shot picture (z grows down the page).
pub(super) fn y_axis(out: &mut String, frame: &Frame, axis: &Axis, scale: &Scale, title: &str) {
    out.push_str("<g class=\"axis y-axis\">\n");
    for value in axis.ticks() {
        let y = coord(scale.at(value));
        put!(
            out,
            "<line class=\"grid\" x1=\"{left}\" y1=\"{y}\" x2=\"{right}\" y2=\"{y}\" stroke=\"{grid}\"/>\
             <line x1=\"{tick_start}\" y1=\"{y}\" x2=\"{left}\" y2=\"{y}\" stroke=\"{axis}\"/>\
             <text x=\"{label_x}\" y=\"{y}\" dy=\"0.32em\" text-anchor=\"end\">{}</text>\n",
            esc(&axis.label(value)),
            left = coord(frame.left),
            right = coord(frame.right),
            tick_start = coord(frame.left - 5.0),
            label_x = coord(frame.left - 8.0),
            grid = palette::GRID,
            axis = palette::AXIS,
        );
    }
    put!(
        out,
        "<line x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\" stroke=\"{axis}\"/>\n",
        x = coord(frame.left),
        top = coord(frame.top),
        bottom = coord(frame.bottom),
        axis = palette::AXIS,
    );
    y_title(out, frame, title);
    out.push_str("</g>\n");
}

/// The line along the bottom of the plot area.
pub(super) fn baseline(out: &mut String, frame: &Frame) {
    put!(
        out,
        "<line x1=\"{left}\" y1=\"{y}\" x2=\"{right}\" y2=\"{y}\" stroke=\"{axis}\"/>\n",
        left = coord(frame.left),
        right = coord(frame.right),
        y = coord(frame.bottom),
        axis = palette::AXIS,
    );
}

/// The title under a horizontal axis (what it measures, with its unit).
pub(super) fn x_title(out: &mut String, frame: &Frame, title: &str) {
    put!(
        out,
        "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"600\">{}</text>\n",
        coord(frame.mid_x()),
        coord(frame.bottom + 38.0),
        esc(title)
    );
}

/// The title beside a vertical axis, turned to read bottom to top.
pub(super) fn y_title(out: &mut String, frame: &Frame, title: &str) {
    let x = coord(frame.left - 50.0);
    let y = coord(frame.mid_y());
    put!(
        out,
        "<text class=\"axis-title\" x=\"{x}\" y=\"{y}\" transform=\"rotate(-90 {x} {y})\" \
         text-anchor=\"middle\" font-weight=\"600\">{}</text>\n",
        esc(title)
    );
}

/// A short message in the middle of the plot area, for charts with nothing to draw.
pub(super) fn empty_note(out: &mut String, frame: &Frame, message: &str) {
    put!(
        out,
        "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
        coord(frame.mid_x()),
        coord(frame.mid_y()),
        palette::MUTED,
        esc(message)
    );
}

/// How a legend entry shows its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    /// A line with a dot, for a line series.
    Line,
    /// A dashed line, for dashed outlines.
    Dashed,
    /// A filled square, for bars and filled shapes.
    Swatch,
    /// A cross, for a marked point.
    Cross,
}

/// One entry of a legend.
#[derive(Debug, Clone)]
pub(super) struct LegendEntry {
    /// What the entry names.
    pub(super) label: String,
    /// Its colour.
    pub(super) colour: String,
    /// How it is drawn.
    pub(super) key: Key,
    /// The class the series' elements carry, repeated on the entry.
    pub(super) class: String,
}

/// Width of a legend entry's key, and the gaps around its label.
const KEY_WIDTH: f64 = 22.0;
const KEY_GAP: f64 = 6.0;
const ENTRY_GAP: f64 = 18.0;

/// Where each entry goes: `(x offset, row)`, filling rows up to `max_width`.
fn legend_layout(entries: &[LegendEntry], max_width: f64) -> Vec<(f64, usize)> {
    let mut placed = Vec::with_capacity(entries.len());
    let (mut x, mut row) = (0.0, 0);
    for entry in entries {
        let width = KEY_WIDTH + KEY_GAP + text_width(&entry.label, FONT);
        if x > 0.0 && x + width > max_width {
            x = 0.0;
            row += 1;
        }
        placed.push((x, row));
        x += width + ENTRY_GAP;
    }
    placed
}

/// Height the legend takes when its rows are at most `max_width` wide.
pub(super) fn legend_height(entries: &[LegendEntry], max_width: f64) -> f64 {
    legend_layout(entries, max_width)
        .last()
        .map_or(0.0, |&(_, row)| (row + 1) as f64 * LEGEND_ROW)
}

/// Draws the legend with its top-left corner at `(left, top)`.
pub(super) fn legend(
    out: &mut String,
    entries: &[LegendEntry],
    left: f64,
    top: f64,
    max_width: f64,
) {
    out.push_str("<g class=\"legend\">\n");
    for (entry, (dx, row)) in entries.iter().zip(legend_layout(entries, max_width)) {
        let x = left + dx;
        let mid = top + row as f64 * LEGEND_ROW + LEGEND_ROW / 2.0;
        let colour = esc(&entry.colour);
        put!(out, "<g class=\"legend-entry {}\">", esc(&entry.class));
        match entry.key {
            Key::Line | Key::Dashed => {
                let dash = if entry.key == Key::Dashed {
                    " stroke-dasharray=\"5 3\""
                } else {
                    ""
                };
                put!(
                    out,
                    "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{colour}\" stroke-width=\"3\"{dash}/>",
                    coord(x),
                    coord(x + KEY_WIDTH),
                    y = coord(mid),
                );
                if entry.key == Key::Line {
                    put!(
                        out,
                        "<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{colour}\"/>",
                        coord(x + KEY_WIDTH / 2.0),
                        coord(mid)
                    );
                }
            }
            Key::Swatch => put!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{colour}\"/>",
                coord(x + (KEY_WIDTH - 12.0) / 2.0),
                coord(mid - 6.0)
            ),
            Key::Cross => put!(
                out,
                "<path d=\"M{a} {b}L{c} {d}M{a} {d}L{c} {b}\" stroke=\"{colour}\" stroke-width=\"2.5\"/>",
                a = coord(x + KEY_WIDTH / 2.0 - 5.0),
                b = coord(mid - 5.0),
                c = coord(x + KEY_WIDTH / 2.0 + 5.0),
                d = coord(mid + 5.0),
            ),
        }
        put!(
            out,
            "<text x=\"{}\" y=\"{}\" dy=\"0.32em\">{}</text></g>\n",
            coord(x + KEY_WIDTH + KEY_GAP),
            coord(mid),
            esc(&entry.label)
        );
    }
    out.push_str("</g>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_land_on_round_values() {
        let axis = Axis::nice(0.0, 287.0, 6);
        assert_eq!((axis.lo, axis.hi), (0.0, 300.0));
        assert_eq!(axis.ticks().len(), 7);
        assert_eq!(axis.label(50.0), "50");

        let small = Axis::nice(0.0, 0.37, 5);
        assert_eq!(small.label(0.1), "0.1");
    }

    #[test]
    fn degenerate_ranges_still_make_an_axis() {
        for (lo, hi) in [
            (0.0, 0.0),
            (5.0, 5.0),
            (f64::NAN, 3.0),
            (0.0, f64::INFINITY),
            (-1e300, 1e300),
            (1e-300, 2e-300),
            (10.0, -10.0),
        ] {
            let axis = Axis::nice(lo, hi, 5);
            assert!(
                axis.lo.is_finite() && axis.hi.is_finite() && axis.lo < axis.hi,
                "{lo} {hi}: {axis:?}"
            );
            let ticks = axis.ticks();
            assert!(
                (2..=30).contains(&ticks.len()),
                "{lo} {hi}: {} ticks",
                ticks.len()
            );
        }
    }

    #[test]
    fn scales_pin_values_outside_the_axis() {
        let scale = Axis::nice(0.0, 100.0, 5).onto(10.0, 110.0);
        assert_eq!(scale.at(50.0), 60.0);
        assert_eq!(scale.at(1e9), 110.0);
        assert_eq!(scale.at(f64::NAN), 10.0);
    }
}
