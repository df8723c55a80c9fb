//! Text for the report: escaping for HTML and SVG, and number formatting that gives the
//! same characters for the same value on every run ("n/a" for what is not a number,
//! never "-0").

/// Escapes text for an HTML/XML text node or a quoted attribute value.
///
/// Characters XML 1.0 does not allow (most control characters) become U+FFFD, so a
/// name with a stray byte cannot make the page unparsable.
#[must_use]
pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push('\u{fffd}');
            }
            c => out.push(c),
        }
    }
    out
}

/// `x` with exactly `decimals` decimals, or "n/a" when it is not finite.
#[must_use]
pub(super) fn fixed(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    no_negative_zero(format!("{x:.decimals$}"))
}

/// A value read by people (durations, rates): up to three decimals, trailing zeros
/// dropped, scientific notation past a million; "n/a" when not finite.
#[must_use]
pub(super) fn number(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    if x != 0.0 && (x.abs() >= 1e6 || x.abs() < 1e-3) {
        return format!("{x:.3e}");
    }
    trim_zeros(no_negative_zero(format!("{x:.3}")))
}

/// A fraction as a percentage with one decimal (`0.9731` → `97.3%`), or "n/a".
#[must_use]
pub(super) fn percent(fraction: f64) -> String {
    let value = fraction * 100.0;
    if !value.is_finite() {
        return "n/a".to_owned();
    }
    if value.abs() >= 1e6 {
        return format!("{value:.3e}%");
    }
    format!("{}%", fixed(value, 1))
}

/// An SVG coordinate or length: at most two decimals, trailing zeros dropped; 0 when
/// not finite (callers keep non-finite data out of the picture; this is the last guard).
#[must_use]
pub(super) fn coord(x: f64) -> String {
    if !x.is_finite() {
        return "0".to_owned();
    }
    trim_zeros(no_negative_zero(format!("{x:.2}")))
}

/// A tick label for a value on an axis whose ticks are `decimals` decimals apart.
#[must_use]
pub(super) fn tick(value: f64, decimals: usize) -> String {
    if value != 0.0 && value.abs() >= 1e6 {
        return trim_exponent(format!("{value:.2e}"));
    }
    if decimals > 4 {
        return trim_exponent(format!("{value:.2e}"));
    }
    fixed(value, decimals)
}

/// "-0.00" → "0.00": a rounded value that shows as zero carries no sign.
fn no_negative_zero(s: String) -> String {
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_owned(),
        _ => s,
    }
}

/// "12.50" → "12.5", "3.00" → "3"; leaves numbers without a decimal point alone.
fn trim_zeros(s: String) -> String {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// "1.50e6" → "1.5e6", "2.00e-7" → "2e-7".
fn trim_exponent(s: String) -> String {
    match s.split_once('e') {
        Some((mantissa, exponent)) => format!("{}e{exponent}", trim_zeros(mantissa.to_owned())),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_forbidden_characters() {
        assert_eq!(
            esc("<script>alert('x') & \"y\"</script>\u{0}"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;\u{fffd}"
        );
    }

    #[test]
    fn numbers_never_show_a_negative_zero_or_nan() {
        assert_eq!(fixed(-0.0001, 2), "0.00");
        assert_eq!(fixed(f64::NAN, 1), "n/a");
        assert_eq!(coord(-0.001), "0");
        assert_eq!(coord(12.5), "12.5");
        assert_eq!(coord(f64::INFINITY), "0");
        assert_eq!(percent(0.9731), "97.3%");
        assert_eq!(percent(f64::NAN), "n/a");
        assert_eq!(number(60.0), "60");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(2.5e9), "2.500e9");
    }

    #[test]
    fn ticks_follow_the_step() {
        assert_eq!(tick(20.0, 0), "20");
        assert_eq!(tick(0.5, 1), "0.5");
        assert_eq!(tick(1.5e6, 0), "1.5e6");
        assert_eq!(tick(2e-7, 7), "2e-7");
    }
}
