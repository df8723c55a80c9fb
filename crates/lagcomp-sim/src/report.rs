//! The HTML report of a simulation run: one self-contained page (inline CSS and SVG, no
//! scripts, nothing fetched) that `lagcomp simulate` writes as `report/index.html`.
//!
//! What lives where:
//! - this file: the page itself (header, section order, style sheet) and the two entry
//!   points, [`render_html`] and [`write_report`];
//! - `report/text.rs`: escaping and deterministic number formatting, shared by all parts;
//! - `report/palette.rs`: the colours, so a mode or a preset looks the same everywhere;
//! - `report/plot.rs`: the chart frame every chart shares (axes, ticks, legend);
//! - `report/agreement.rs`, `reconstruction.rs`, `rejections.rs`, `shot.rs`: one chart
//!   each;
//! - `report/tables.rs`: the results, reconstruction and cheat tables;
//! - `report/scenes.rs`: the chosen shots' 3D pictures, linked `.glb` files beside the page;
//! - `report/weapons.rs`: the per-weapon table.
//!
//! The page is also well-formed XML (every element closed, only the XML entities), so
//! tests can parse it with an XML parser, and the same [`SimResult`] always gives the same
//! bytes: nothing here reads a clock or iterates a hash map.
//!
//! The numbers come from [`crate::result`]; nothing here measures anything.

use std::path::{Path, PathBuf};

use lagcomp_game::scorecard::ModeResult;

use crate::result::SimResult;

/// Appends formatted text to a `String`.
///
/// Writing to a `String` cannot fail, so the `fmt::Result` is dropped here once instead
/// of at every call.
macro_rules! put {
    ($out:expr, $($arg:tt)*) => {{
        use ::std::fmt::Write as _;
        let _ = ::std::write!($out, $($arg)*);
    }};
}

mod agreement;
mod palette;
mod plot;
mod reconstruction;
mod rejections;
mod scenes;
mod shot;
mod tables;
mod text;
mod weapons;

pub use scenes::{ChosenShot, ShotScene, ShotScenes};
use text::esc;

/// The file name [`write_report`] writes inside its directory.
const FILE_NAME: &str = "index.html";

/// Writes `dir/index.html` (inline SVG and CSS, no scripts, nothing from the network) and
/// beside it the chosen shots' `.glb` files the page links ([`ChosenShot::file_name`]),
/// and returns the page's path.
///
/// Creates `dir` (and its parents) when missing.
///
/// # Errors
///
/// Any I/O error from creating the directory or writing the file.
pub fn write_report(result: &SimResult, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(FILE_NAME);
    std::fs::write(&path, render_html(result))?;
    scenes::write(&result.scenes, dir)?;
    Ok(path)
}

/// The HTML as a string (what [`write_report`] writes).
///
/// Never panics, whatever the numbers: empty runs, zero shots, NaN or infinite values
/// and missing pictures are drawn as "n/a" or as a short note.
#[must_use]
pub fn render_html(result: &SimResult) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let title = format!("lagcomp simulation: {}", result.scenario);
    put!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        esc(&title)
    );
    header(&mut out, result);

    section(
        &mut out,
        "agreement",
        "Do the server and honest clients agree?",
        "Of the shots an honest client saw hit, the share the server confirmed on the same \
         target, for each way of deciding a shot.",
    );
    out.push_str(&agreement::chart(result));
    out.push_str(&tables::results(result));
    out.push_str(&tables::movers(result));
    out.push_str(&tables::refused(result));
    out.push_str(&weapons::table(result));
    out.push_str("</section>\n");

    section(
        &mut out,
        "reconstruction",
        "How well the server rebuilds what the client drew",
        "Largest bone distance between the target pose a client drew and the pose the \
         server rebuilt for full compensation, per shot (teleport frames left out).",
    );
    out.push_str(&reconstruction::chart(result));
    out.push_str(&tables::reconstruction(result));
    out.push_str("</section>\n");

    section(
        &mut out,
        "rejections",
        "Why honest shots were rejected",
        "Honest shots the full validator turned down, by reason, stacked by network \
         condition.",
    );
    out.push_str(&rejections::chart(result));
    out.push_str("</section>\n");

    section(
        &mut out,
        "cheats",
        "Cheats",
        "Each cheat class run on its own; a cheating shot the server accepted is \
         marked in red.",
    );
    out.push_str(&tables::cheats(result));
    out.push_str("</section>\n");

    section(
        &mut out,
        "shot",
        "One shot from above",
        "The target's hitboxes now, the hitboxes the server rebuilt at the shot's \
         render time, and the ray.",
    );
    out.push_str(&shot::chart(result.picture.as_ref()));
    out.push_str("</section>\n");

    section(
        &mut out,
        "scenes",
        "Chosen shots in 3D",
        "glTF 2.0 files beside this page, for any glTF viewer, Blender, Unity or Unreal: \
         the target's hitboxes now (blue) and where the server rebuilt them (orange), the \
         shot (yellow), the walls it met (grey), the server's hit (green) and the client's \
         claimed point (magenta); the verdict is in the scene's extras.",
    );
    out.push_str(&scenes::section(&result.scenes));
    out.push_str("</section>\n");

    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// The page title and the facts of the run.
fn header(out: &mut String, result: &SimResult) {
    put!(
        out,
        "<header>\n<h1>lagcomp simulation report</h1>\n<dl class=\"facts\">\n\
         <dt>Scenario</dt><dd id=\"scenario\">{}</dd>\n\
         <dt>Seed</dt><dd>{}</dd>\n\
         <dt>Duration</dt><dd>{} s per network condition</dd>\n\
         <dt>Bots</dt><dd>{}</dd>\n\
         <dt>Tick rate</dt><dd>{} Hz</dd>\n\
         <dt>Send rate</dt><dd>{} Hz</dd>\n\
         <dt>Rewind window</dt><dd>{} s{}</dd>\n\
         <dt>Scenery</dt><dd id=\"scenery\">{}</dd>\n\
         <dt>Network conditions</dt><dd>{}</dd>\n\
         <dt>Cheat classes</dt><dd>{}</dd>\n\
         </dl>\n</header>\n",
        esc(&result.scenario),
        result.seed,
        text::number(result.duration),
        result.bots,
        text::number(result.tick_rate),
        text::number(result.send_rate),
        text::number(result.max_rewind),
        result
            .no_rewind_above_rtt
            .map(|rtt| format!(", none above {} ms round trip", text::number(rtt * 1000.0)))
            .unwrap_or_default(),
        esc(result
            .scenery
            .as_deref()
            .unwrap_or("none: the arena's walls only")),
        result.runs.len(),
        result.cheats.len(),
    );
}

/// The agreement to show for a mode, or `None` ("n/a") when there were no client hits
/// to agree with or the figure is not a number.
fn shown_agreement(mode: &ModeResult) -> Option<f64> {
    (mode.client_hits > 0 && mode.agreement.is_finite()).then_some(mode.agreement)
}

/// Opens a `<section>` with its heading and a one-line explanation.
fn section(out: &mut String, id: &str, heading: &str, explanation: &str) {
    put!(
        out,
        "<section id=\"{id}\">\n<h2>{}</h2>\n<p class=\"explain\">{}</p>\n",
        esc(heading),
        esc(explanation)
    );
}

/// The page's style sheet. No `<` or `&` in it, so the page stays well-formed XML.
const STYLE: &str = "
body { font: 15px/1.45 system-ui, -apple-system, 'Segoe UI', sans-serif; color: #1b1b1b;
  background: #ffffff; margin: 0; }
main { max-width: 1080px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 26px; margin: 8px 0 12px; }
h2 { font-size: 20px; margin: 36px 0 4px; border-bottom: 1px solid #d0d0d0; }
p.explain, p.note { color: #444444; margin: 4px 0 12px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
figure { margin: 12px 0 20px; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { color: #444444; font-size: 13px; margin-top: 4px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 14px; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; vertical-align: top; }
th { background: #f2f2f2; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.na { color: #777777; }
td.mode { white-space: nowrap; }
th small { font-weight: 400; }
td.bad { color: #ffffff; background: #c62828; font-weight: 700; }
tr.preset-start td { border-top: 2px solid #9a9a9a; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px;
  border-radius: 2px; }
";
