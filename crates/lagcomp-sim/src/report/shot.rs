//! The shot picture (`#chart-shot`): one shot seen from above, with the target's present
//! hitboxes (`class="hitbox present"`), the hitboxes the server rebuilt at the shot's
//! render time (`class="hitbox rewound"`), the ray (`class="ray"`) and, when the server
//! confirmed it, the hit (`class="hit"`), each in its own colour.
//!
//! Both axes share one scale (metres look the same across and down), x to the right and
//! z down the page as in [`Outline`]. The view frames the target, not the whole ray: a
//! muzzle tens of metres away would shrink the hitboxes to dots, so the ray is clipped
//! to the view.

use super::palette;
use super::plot::{self, Axis, Frame, Key, LegendEntry, Scale};
use super::text::{coord, esc, number};
use crate::result::{Outline, ShotPicture};

/// A point in the world, seen from above: `(x, z)` in metres.
type Point = (f64, f64);

/// Smallest span the view shows, so a single point still gets a readable picture.
const MIN_SPAN_M: f64 = 0.5;

/// The picture as a `<figure>`, or a note when the run drew no shot.
pub(super) fn chart(picture: Option<&ShotPicture>) -> String {
    let Some(picture) = picture else {
        return "<p class=\"note\">No shot was drawn in this run.</p>\n".to_owned();
    };
    let present: Vec<&Outline> = picture.present.iter().filter(|o| drawable(o)).collect();
    let rewound: Vec<&Outline> = picture.rewound.iter().filter(|o| drawable(o)).collect();
    let ray_from = finite_point(picture.ray_from);
    let ray_to = finite_point(picture.ray_to);
    let hit = picture.hit.and_then(finite_point);

    let mut entries = vec![
        entry("present hitboxes", palette::PRESENT, Key::Swatch, "present"),
        entry(
            "rewound hitboxes (render time)",
            palette::REWOUND,
            Key::Dashed,
            "rewound",
        ),
        entry("ray", palette::RAY, Key::Line, "ray"),
    ];
    if hit.is_some() {
        entries.push(entry("confirmed hit", palette::HIT, Key::Cross, "hit"));
    }
    let (left, right, bottom) = (70.0, 24.0, 52.0);
    let legend_top = 12.0;
    let legend_height = plot::legend_height(&entries, plot::WIDTH - left - right);
    let top = legend_top + legend_height + 14.0;

    // What the view must show: the hitboxes and the hit; the ray only when there is
    // nothing else to frame.
    let mut corners: Vec<Point> = present
        .iter()
        .chain(&rewound)
        .flat_map(|o| bounds(o))
        .collect();
    corners.extend(hit);
    if corners.is_empty() {
        corners.extend(ray_from);
        corners.extend(ray_to);
    }
    let (mut x0, mut x1, mut z0, mut z1) = extent(&corners);
    let span = (x1 - x0).max(z1 - z0).max(MIN_SPAN_M);
    let pad = span * 0.2;
    (x0, x1, z0, z1) = (x0 - pad, x1 + pad, z0 - pad, z1 + pad);

    // One scale for both axes: the plot area takes the view's shape within limits, and
    // the view grows on the short side to fill it.
    let plot_width = plot::WIDTH - left - right;
    let plot_height = (plot_width * (z1 - z0) / (x1 - x0)).clamp(260.0, 520.0);
    let metres_to_px = (plot_width / (x1 - x0)).min(plot_height / (z1 - z0));
    let (cx, cz) = ((x0 + x1) / 2.0, (z0 + z1) / 2.0);
    let (half_x, half_z) = (
        plot_width / metres_to_px / 2.0,
        plot_height / metres_to_px / 2.0,
    );
    (x0, x1, z0, z1) = (cx - half_x, cx + half_x, cz - half_z, cz + half_z);

    let frame = Frame::new(
        plot::WIDTH,
        top + plot_height + bottom,
        left,
        right,
        top,
        bottom,
    );
    let x_axis = Axis::exact(x0, x1, 8);
    let z_axis = Axis::exact(z0, z1, 6);
    let view = View {
        x: x_axis.onto(frame.left, frame.right),
        z: z_axis.onto(frame.top, frame.bottom),
        metres_to_px,
    };

    let mut svg = String::new();
    plot::open(
        &mut svg,
        "chart-shot",
        &frame,
        "One shot from above",
        &describe(picture, hit),
    );
    plot::legend(
        &mut svg,
        &entries,
        left,
        legend_top,
        plot::WIDTH - left - right,
    );
    plot::x_axis(&mut svg, &frame, &x_axis, &view.x, "x (m)");
    plot::y_axis(&mut svg, &frame, &z_axis, &view.z, "z (m), down the page");
    put!(
        svg,
        "<rect class=\"plot-border\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{}\"/>\n",
        coord(frame.left),
        coord(frame.top),
        coord(frame.right - frame.left),
        coord(frame.bottom - frame.top),
        palette::AXIS
    );

    let present_style = format!(
        "fill=\"{c}\" fill-opacity=\"0.18\" stroke=\"{c}\" stroke-width=\"2.5\"",
        c = palette::PRESENT
    );
    let rewound_style = format!(
        "fill=\"{c}\" fill-opacity=\"0.18\" stroke=\"{c}\" stroke-width=\"2.5\" stroke-dasharray=\"6 4\"",
        c = palette::REWOUND
    );
    svg.push_str("<g class=\"hitboxes present\">\n");
    for outline in &present {
        svg.push_str(&view.outline(outline, "hitbox present", &present_style, "present hitbox"));
    }
    svg.push_str("</g>\n<g class=\"hitboxes rewound\">\n");
    for outline in &rewound {
        svg.push_str(&view.outline(outline, "hitbox rewound", &rewound_style, "rewound hitbox"));
    }
    svg.push_str("</g>\n");
    if let (Some(from), Some(to)) = (ray_from, ray_to) {
        svg.push_str(&view.ray(from, to, (x0, x1, z0, z1)));
    }
    if let Some(point) = hit {
        let (x, y) = view.px(point);
        put!(
            svg,
            "<path class=\"hit\" d=\"M{a} {b}L{c} {d}M{a} {d}L{c} {b}\" stroke=\"{}\" stroke-width=\"3\">\
             <title>confirmed hit at ({}, {}) m</title></path>\n",
            palette::HIT,
            number(point.0),
            number(point.1),
            a = coord(x - 7.0),
            b = coord(y - 7.0),
            c = coord(x + 7.0),
            d = coord(y + 7.0),
        );
    }
    plot::close(&mut svg);
    let caption = if picture.caption.is_empty() {
        "One shot seen from above."
    } else {
        &picture.caption
    };
    plot::figure(&svg, caption)
}

/// A legend entry for one part of the picture.
fn entry(label: &str, colour: &str, key: Key, class: &str) -> LegendEntry {
    LegendEntry {
        label: label.to_owned(),
        colour: colour.to_owned(),
        key,
        class: class.to_owned(),
    }
}

/// Where the world goes on the page.
struct View {
    x: Scale,
    z: Scale,
    metres_to_px: f64,
}

impl View {
    /// A world point in SVG pixels.
    fn px(&self, (x, z): Point) -> Point {
        (self.x.at(x), self.z.at(z))
    }

    /// One hitbox outline as an SVG shape.
    fn outline(&self, outline: &Outline, class: &str, style: &str, what: &str) -> String {
        let title = format!("<title>{}</title>", esc(what));
        match outline {
            Outline::Circle { center, radius } => {
                let (x, y) = self.px(point(*center));
                format!(
                    "<circle class=\"{class}\" cx=\"{}\" cy=\"{}\" r=\"{}\" {style}>{title}</circle>\n",
                    coord(x),
                    coord(y),
                    coord(f64::from(*radius) * self.metres_to_px)
                )
            }
            Outline::Polygon { points } => {
                let corners: Vec<String> = points
                    .iter()
                    .map(|&p| {
                        let (x, y) = self.px(point(p));
                        format!("{},{}", coord(x), coord(y))
                    })
                    .collect();
                format!(
                    "<polygon class=\"{class}\" points=\"{}\" {style}>{title}</polygon>\n",
                    corners.join(" ")
                )
            }
            Outline::Stadium { a, b, radius } => {
                let (ax, ay) = self.px(point(*a));
                let (bx, by) = self.px(point(*b));
                let r = f64::from(*radius) * self.metres_to_px;
                let length = (bx - ax).hypot(by - ay);
                if length < 1e-6 {
                    return format!(
                        "<circle class=\"{class}\" cx=\"{}\" cy=\"{}\" r=\"{}\" {style}>{title}</circle>\n",
                        coord(ax),
                        coord(ay),
                        coord(r)
                    );
                }
                // The sides are the segment pushed out by r along its normal; the two
                // ends are half circles bulging away from each other.
                let (nx, ny) = (-(by - ay) / length * r, (bx - ax) / length * r);
                let r = coord(r);
                format!(
                    "<path class=\"{class}\" d=\"M{} {}L{} {}A{r} {r} 0 0 0 {} {}L{} {}A{r} {r} 0 0 0 {} {}Z\" \
                     {style}>{title}</path>\n",
                    coord(ax + nx),
                    coord(ay + ny),
                    coord(bx + nx),
                    coord(by + ny),
                    coord(bx - nx),
                    coord(by - ny),
                    coord(ax - nx),
                    coord(ay - ny),
                    coord(ax + nx),
                    coord(ay + ny),
                )
            }
        }
    }

    /// The ray, clipped to the view, with an arrowhead on the end it travels towards and
    /// a dot at the muzzle when the muzzle is in view.
    fn ray(&self, from: Point, to: Point, view: (f64, f64, f64, f64)) -> String {
        let title = format!(
            "<title>ray from ({}, {}) m to ({}, {}) m</title>",
            number(from.0),
            number(from.1),
            number(to.0),
            number(to.1)
        );
        let Some((start, end)) = clip(from, to, view) else {
            // The ray misses the view: still an element, so the picture says it exists.
            return format!("<g class=\"ray\" stroke=\"{}\">{title}</g>\n", palette::RAY);
        };
        let (sx, sy) = self.px(start);
        let (ex, ey) = self.px(end);
        let mut out = format!(
            "<g class=\"ray\"><line class=\"ray\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" \
             stroke-width=\"3\" stroke-linecap=\"round\">{title}</line>\n",
            coord(sx),
            coord(sy),
            coord(ex),
            coord(ey),
            palette::RAY
        );
        let length = (ex - sx).hypot(ey - sy);
        if length > 1.0 {
            let (ux, uy) = ((ex - sx) / length, (ey - sy) / length);
            let (bx, by) = (ex - ux * 14.0, ey - uy * 14.0);
            put!(
                out,
                "<polygon class=\"ray-head\" points=\"{},{} {},{} {},{}\" fill=\"{}\"/>\n",
                coord(ex),
                coord(ey),
                coord(bx - uy * 6.0),
                coord(by + ux * 6.0),
                coord(bx + uy * 6.0),
                coord(by - ux * 6.0),
                palette::RAY
            );
        }
        if start == from {
            put!(
                out,
                "<circle class=\"muzzle\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"><title>muzzle</title></circle>\n",
                coord(sx),
                coord(sy),
                palette::RAY
            );
        }
        out.push_str("</g>\n");
        out
    }
}

/// The part of the segment `from`–`to` inside `(x0, x1, z0, z1)`, if any (Liang–Barsky).
fn clip(from: Point, to: Point, (x0, x1, z0, z1): (f64, f64, f64, f64)) -> Option<(Point, Point)> {
    let (dx, dz) = (to.0 - from.0, to.1 - from.1);
    let (mut enter, mut leave) = (0.0_f64, 1.0_f64);
    for (p, q) in [
        (-dx, from.0 - x0),
        (dx, x1 - from.0),
        (-dz, from.1 - z0),
        (dz, z1 - from.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                enter = enter.max(t);
            } else {
                leave = leave.min(t);
            }
        }
    }
    if enter > leave {
        return None;
    }
    let at = |t: f64| {
        if t == 0.0 {
            from
        } else if t == 1.0 {
            to
        } else {
            (from.0 + dx * t, from.1 + dz * t)
        }
    };
    Some((at(enter), at(leave)))
}

/// `[x, z]` as a world point.
fn point(p: [f32; 2]) -> Point {
    (f64::from(p[0]), f64::from(p[1]))
}

/// `[x, z]` as a world point, if both are finite.
fn finite_point(p: [f32; 2]) -> Option<Point> {
    p.iter().all(|v| v.is_finite()).then(|| point(p))
}

/// Whether an outline can be drawn: finite numbers, a radius that is not negative.
fn drawable(outline: &Outline) -> bool {
    let finite = |p: &[f32; 2]| p.iter().all(|v| v.is_finite());
    match outline {
        Outline::Circle { center, radius } => {
            finite(center) && radius.is_finite() && *radius >= 0.0
        }
        Outline::Polygon { points } => !points.is_empty() && points.iter().all(finite),
        Outline::Stadium { a, b, radius } => {
            finite(a) && finite(b) && radius.is_finite() && *radius >= 0.0
        }
    }
}

/// Corners of the box around an outline.
fn bounds(outline: &Outline) -> Vec<Point> {
    let around = |c: [f32; 2], r: f32| {
        let ((x, z), r) = (point(c), f64::from(r));
        [(x - r, z - r), (x + r, z + r)]
    };
    match outline {
        Outline::Circle { center, radius } => around(*center, *radius).to_vec(),
        Outline::Polygon { points } => points.iter().map(|&p| point(p)).collect(),
        Outline::Stadium { a, b, radius } => {
            let mut corners = around(*a, *radius).to_vec();
            corners.extend(around(*b, *radius));
            corners
        }
    }
}

/// `(x0, x1, z0, z1)` around the points; a unit box at the origin when there are none.
fn extent(points: &[Point]) -> (f64, f64, f64, f64) {
    if points.is_empty() {
        return (-0.5, 0.5, -0.5, 0.5);
    }
    points.iter().fold(
        (f64::MAX, f64::MIN, f64::MAX, f64::MIN),
        |(x0, x1, z0, z1), &(x, z)| (x0.min(x), x1.max(x), z0.min(z), z1.max(z)),
    )
}

/// The picture's description for screen readers.
fn describe(picture: &ShotPicture, hit: Option<Point>) -> String {
    let mut text = format!(
        "{} Present hitboxes: {}. Rewound hitboxes: {}. Ray from ({}, {}) m to ({}, {}) m.",
        if picture.caption.is_empty() {
            "One shot seen from above."
        } else {
            &picture.caption
        },
        picture.present.len(),
        picture.rewound.len(),
        number(f64::from(picture.ray_from[0])),
        number(f64::from(picture.ray_from[1])),
        number(f64::from(picture.ray_to[0])),
        number(f64::from(picture.ray_to[1])),
    );
    match hit {
        Some((x, z)) => put!(
            text,
            " The server confirmed a hit at ({}, {}) m.",
            number(x),
            number(z)
        ),
        None => text.push_str(" The server did not confirm a hit."),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_keeps_the_part_inside_the_view() {
        let view = (0.0, 10.0, 0.0, 10.0);
        assert_eq!(
            clip((-10.0, 5.0), (5.0, 5.0), view),
            Some(((0.0, 5.0), (5.0, 5.0)))
        );
        assert_eq!(
            clip((2.0, 2.0), (3.0, 3.0), view),
            Some(((2.0, 2.0), (3.0, 3.0)))
        );
        assert_eq!(clip((-10.0, -1.0), (20.0, -1.0), view), None);
        assert_eq!(clip((-10.0, 20.0), (20.0, 15.0), view), None);
    }
}
