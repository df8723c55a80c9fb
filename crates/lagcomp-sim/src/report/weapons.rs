//! The report's per-weapon table (`#weapons-table`): each weapon's honest claims through
//! the full validator, per network condition. A weapon whose honest claims were rejected
//! is marked `class="bad"`.

use super::shown_agreement;
use super::text::{esc, percent};
use crate::result::SimResult;

/// Honest claims per network condition and weapon (nothing when no run counted any).
pub(super) fn table(result: &SimResult) -> String {
    if result.runs.iter().all(|run| run.weapons.is_empty()) {
        return String::new();
    }
    let mut out = String::from(
        "<table id=\"weapons-table\">\n<caption>Honest claims, per network condition and weapon \
         (full validation; a rocket that strikes makes two claims, its flight's and its blast's)</caption>\n\
         <thead><tr><th scope=\"col\">Network condition</th><th scope=\"col\">Weapon</th>\
         <th scope=\"col\">Kind</th><th scope=\"col\">Claims</th><th scope=\"col\">Client hits</th>\
         <th scope=\"col\">Confirmed</th><th scope=\"col\">Agreement</th>\
         <th scope=\"col\">False confirmations</th><th scope=\"col\">Honest rejections</th></tr></thead>\n<tbody>\n",
    );
    for run in result.runs.iter().filter(|run| !run.weapons.is_empty()) {
        for (row, (arm, numbers)) in run.weapons.iter().enumerate() {
            let first = if row == 0 {
                format!(
                    "<th scope=\"rowgroup\" rowspan=\"{}\">{}</th>",
                    run.weapons.len(),
                    esc(&run.preset)
                )
            } else {
                String::new()
            };
            let agreement = match shown_agreement(numbers) {
                Some(fraction) => format!("<td class=\"num\">{}</td>", percent(fraction)),
                None => "<td class=\"num na\" title=\"no client hits\">n/a</td>".to_owned(),
            };
            let rejected = numbers
                .rejections
                .values()
                .fold(0_u64, |sum, &count| sum.saturating_add(count));
            let bad = if rejected > 0 || numbers.false_confirmations > 0 {
                " class=\"bad\""
            } else {
                ""
            };
            put!(
                out,
                "<tr{bad}>{first}<td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td>{agreement}<td class=\"num\">{}</td><td class=\"num\">{rejected}</td></tr>\n",
                esc(arm.name()),
                esc(arm.kind()),
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
