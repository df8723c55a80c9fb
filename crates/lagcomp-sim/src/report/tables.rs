//! The report's tables: results per network condition and mode (`#results-table`),
//! reconstruction error figures (`#reconstruction-table`) and cheats (`#cheat-table`,
//! where any accepted cheating shot is marked `class="bad"` and shown in red).

use super::text::{esc, fixed, number, percent};
use super::{palette, shown_agreement};
use crate::result::{Mode, SimResult};

/// Honest shots per network condition and mode.
pub(super) fn results(result: &SimResult) -> String {
    if result.runs.is_empty() {
        return "<p class=\"note\">No network conditions were simulated.</p>\n".to_owned();
    }
    let mut out = String::from(
        "<table id=\"results-table\">\n<caption>Honest shots, per network condition and mode</caption>\n\
         <thead><tr><th scope=\"col\">Network condition</th><th scope=\"col\">Mode</th>\
         <th scope=\"col\">Shots sent</th><th scope=\"col\">Arrived</th><th scope=\"col\">Client hits</th>\
         <th scope=\"col\">Confirmed</th><th scope=\"col\">Agreement</th>\
         <th scope=\"col\">False confirmations</th><th scope=\"col\">Honest rejections</th></tr></thead>\n<tbody>\n",
    );
    for run in &result.runs {
        let modes: Vec<_> = Mode::ALL
            .iter()
            .filter_map(|mode| Some((*mode, run.modes.get(mode)?)))
            .collect();
        let condition = format!(
            "<th scope=\"rowgroup\" rowspan=\"{}\">{}<br/><small>RTT {} ms, jitter {} ms, loss {}</small></th>",
            modes.len().max(1),
            esc(&run.preset),
            number(run.rtt_ms),
            number(run.jitter_ms),
            percent(run.loss),
        );
        if modes.is_empty() {
            put!(
                out,
                "<tr class=\"preset-start\">{condition}<td colspan=\"8\" class=\"na\">no modes measured</td></tr>\n"
            );
            continue;
        }
        for (row, (mode, numbers)) in modes.into_iter().enumerate() {
            let (row_class, first_cell) = if row == 0 {
                (" class=\"preset-start\"", condition.as_str())
            } else {
                ("", "")
            };
            let agreement = match shown_agreement(numbers) {
                Some(fraction) => format!("<td class=\"num\">{}</td>", percent(fraction)),
                None => "<td class=\"num na\" title=\"no client hits\">n/a</td>".to_owned(),
            };
            let rejections = numbers
                .rejections
                .values()
                .fold(0_u64, |sum, &count| sum.saturating_add(count));
            put!(
                out,
                "<tr{row_class}>{first_cell}<td class=\"mode\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td>{agreement}<td class=\"num\">{}</td><td class=\"num\">{rejections}</td></tr>\n",
                palette::mode(mode),
                esc(mode.label()),
                numbers.shots_sent,
                numbers.shots_arrived,
                numbers.client_hits,
                numbers.confirmed,
                numbers.false_confirmations,
            );
        }
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// Honest shots a door or the tram stopped, per network condition (nothing when none
/// did: no scenery).
pub(super) fn movers(result: &SimResult) -> String {
    let stopped: Vec<String> = result
        .runs
        .iter()
        .filter(|run| run.blocked_by_movers > 0)
        .map(|run| {
            format!(
                "{}: {} ({} seen as hits by their client)",
                esc(&run.preset),
                run.blocked_by_movers,
                run.blocked_by_movers_disputed
            )
        })
        .collect();
    if stopped.is_empty() {
        return String::new();
    }
    format!(
        "<p id=\"movers\" class=\"note\">Honest shots a door or the tram stopped, judged \
         blocked (no damage, never a rejection): {}.</p>\n",
        stopped.join("; ")
    )
}

/// Honest hits the full validator refused per network condition (`#refused-table`): the
/// server's trace agreed, the game's rules denied damage. Counted as agreed above, and
/// never as rejections.
pub(super) fn refused(result: &SimResult) -> String {
    if result.runs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<table id=\"refused-table\">\n<caption>Honest hits refused, full compensation (agreed, no damage)</caption>\n\
         <thead><tr><th scope=\"col\">Network condition</th>\
         <th scope=\"col\">Spawn-protected</th><th scope=\"col\">Dodged</th></tr></thead>\n<tbody>\n",
    );
    for run in &result.runs {
        let count = |name: &str| run.refused.get(name).copied().unwrap_or(0);
        put!(
            out,
            "<tr><th scope=\"row\">{}</th><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            esc(&run.preset),
            count("invulnerable"),
            count("dodged"),
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// Reconstruction error figures per network condition.
pub(super) fn reconstruction(result: &SimResult) -> String {
    if result.runs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<table id=\"reconstruction-table\">\n<caption>Reconstruction error, full compensation</caption>\n\
         <thead><tr><th scope=\"col\">Network condition</th><th scope=\"col\">Samples</th>\
         <th scope=\"col\">Mean (mm)</th><th scope=\"col\">99th percentile (mm)</th>\
         <th scope=\"col\">Max (mm)</th></tr></thead>\n<tbody>\n",
    );
    for (i, run) in result.runs.iter().enumerate() {
        let stats = &run.reconstruction;
        let mm = |value: f64| {
            if stats.samples == 0 {
                "n/a".to_owned()
            } else {
                fixed(value, 1)
            }
        };
        put!(
            out,
            "<tr><th scope=\"row\"><span class=\"swatch\" style=\"background:{}\"></span>{}</th>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            palette::preset(i, result.runs.len()),
            esc(&run.preset),
            stats.samples,
            mm(stats.mean_mm),
            mm(stats.p99_mm),
            mm(stats.max_mm),
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// The cheat classes: what got through and how the rest was turned down.
pub(super) fn cheats(result: &SimResult) -> String {
    if result.cheats.is_empty() {
        return "<p class=\"note\">No cheat classes were run.</p>\n".to_owned();
    }
    let mut out = String::from(
        "<table id=\"cheat-table\">\n<caption>Cheating shots, per cheat class</caption>\n\
         <thead><tr><th scope=\"col\">Class</th><th scope=\"col\">What it does</th>\
         <th scope=\"col\">Attempts</th><th scope=\"col\">Accepted</th><th scope=\"col\">Outcomes</th>\
         <th scope=\"col\">Honest shots rejected</th></tr></thead>\n<tbody>\n",
    );
    for cheat in &result.cheats {
        let mut outcomes: Vec<(&String, &u64)> = cheat.outcomes.iter().collect();
        // Most frequent first; the name breaks ties.
        outcomes.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let outcomes = if outcomes.is_empty() {
            "none".to_owned()
        } else {
            outcomes
                .iter()
                .map(|(reason, count)| format!("{}: {count}", esc(reason)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (row_class, accepted_class) = if cheat.accepted > 0 {
            ("cheat accepted", "num bad")
        } else {
            ("cheat", "num")
        };
        put!(
            out,
            "<tr class=\"{row_class}\"><th scope=\"row\">{}</th><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"{accepted_class}\">{}</td><td>{outcomes}</td><td class=\"num\">{}</td></tr>\n",
            esc(&cheat.class),
            esc(&cheat.description),
            cheat.attempts,
            cheat.accepted,
            cheat.honest_rejected,
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out
}
