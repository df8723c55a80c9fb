//! The HTML report without a browser: the page parses as XML, every chart is there with
//! the right number of data elements, labels and legends, names are escaped, the same
//! result gives the same bytes, odd results (empty, NaN, huge, no picture) do not panic,
//! and `write_report` writes the file.

use crate::fixture;

use std::collections::{BTreeMap, BTreeSet};

use lagcomp_sim::report::{render_html, write_report};
use lagcomp_sim::{
    CheatResult, DistanceStats, Mode, ModeResult, Outline, PresetRun, ShotPicture, SimResult,
};
use roxmltree::{Document, Node, ParsingOptions};

/// Parses the page; it is written to be well-formed XML as well as HTML.
fn parse(html: &str) -> Document<'_> {
    // The page starts with `<!DOCTYPE html>`, which roxmltree refuses unless told.
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    match Document::parse_with_options(html, options) {
        Ok(doc) => doc,
        Err(error) => panic!("the report is not well-formed: {error}\n{html}"),
    }
}

fn has_class(node: Node<'_, '_>, class: &str) -> bool {
    node.attribute("class")
        .is_some_and(|classes| classes.split_whitespace().any(|c| c == class))
}

/// The element with this `id`.
fn by_id<'a, 'input>(doc: &'a Document<'input>, id: &str) -> Node<'a, 'input> {
    doc.descendants()
        .find(|n| n.attribute("id") == Some(id))
        .unwrap_or_else(|| panic!("no element with id {id}"))
}

/// Elements under `node` (itself included) named `tag` with all of `classes`.
fn find<'a, 'input>(node: Node<'a, 'input>, tag: &str, classes: &[&str]) -> Vec<Node<'a, 'input>> {
    node.descendants()
        .filter(|n| n.is_element() && (tag == "*" || n.tag_name().name() == tag))
        .filter(|n| classes.iter().all(|c| has_class(*n, c)))
        .collect()
}

/// All text under `node`.
fn text_of(node: Node<'_, '_>) -> String {
    node.descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect()
}

const CHARTS: [&str; 4] = [
    "chart-agreement",
    "chart-reconstruction",
    "chart-rejections",
    "chart-shot",
];

#[test]
fn the_page_is_well_formed_and_has_every_chart_with_an_accessible_name() {
    let html = render_html(&fixture::realistic());
    let doc = parse(&html);
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    for id in CHARTS {
        let svg = by_id(&doc, id);
        assert_eq!(svg.tag_name().name(), "svg", "{id}");
        assert_eq!(
            svg.tag_name().namespace(),
            Some("http://www.w3.org/2000/svg"),
            "{id}"
        );
        assert_eq!(svg.attribute("role"), Some("img"), "{id}");
        let title = svg
            .first_element_child()
            .unwrap_or_else(|| panic!("{id} is empty"));
        assert_eq!(
            title.tag_name().name(),
            "title",
            "{id}: the title comes first"
        );
        assert!(!text_of(title).trim().is_empty(), "{id}: empty title");
        let desc = by_id(&doc, &format!("{id}-desc"));
        assert!(!text_of(desc).trim().is_empty(), "{id}: empty description");
        assert!(
            svg.ancestors().any(|n| n.tag_name().name() == "figure"),
            "{id} sits in a figure with a caption"
        );
        let legend = find(svg, "g", &["legend"]);
        assert_eq!(legend.len(), 1, "{id}: one legend");
        assert!(
            find(legend[0], "g", &["legend-entry"]).len() >= 3,
            "{id}: legend entries"
        );
    }
}

#[test]
fn the_page_is_self_contained() {
    let html = render_html(&fixture::realistic());
    for forbidden in ["<script", "src=", "href=", "url(", "<link", "@import"] {
        assert!(
            !html.contains(forbidden),
            "the report contains {forbidden:?}"
        );
    }
    let namespaces = html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(
        html.matches("http").count(),
        namespaces,
        "the only address is the SVG namespace"
    );
    assert!(html.contains("<style>"), "the style sheet is inline");
}

#[test]
fn the_header_names_the_run() {
    let result = fixture::realistic();
    let html = render_html(&result);
    let doc = parse(&html);
    let header = text_of(
        doc.descendants()
            .find(|n| n.tag_name().name() == "header")
            .expect("a header"),
    );
    for fact in [
        "skirmish",
        "Seed",
        "42",
        "60 s",
        "Bots",
        "8",
        "64 Hz",
        "32 Hz",
        "Rewind window",
        "1 s",
        "Scenery",
        "3 sliding doors, 1 tram",
    ] {
        assert!(header.contains(fact), "the header lacks {fact:?}: {header}");
    }
}

#[test]
fn the_agreement_chart_has_one_line_per_mode_with_a_point_per_condition() {
    let result = fixture::realistic();
    let html = render_html(&result);
    let doc = parse(&html);
    let chart = by_id(&doc, "chart-agreement");
    let mut colours = BTreeSet::new();
    for (mode, class) in [
        (Mode::None, "mode-none"),
        (Mode::ServerGuess, "mode-server-guess"),
        (Mode::Full, "mode-full"),
    ] {
        let lines = find(chart, "polyline", &["series", class]);
        assert_eq!(lines.len(), 1, "{mode:?}: one line");
        let points: Vec<(f64, f64)> = lines[0]
            .attribute("points")
            .expect("points")
            .split_whitespace()
            .map(|pair| {
                let (x, y) = pair.split_once(',').expect("x,y");
                (x.parse().expect("x"), y.parse().expect("y"))
            })
            .collect();
        assert_eq!(
            points.len(),
            result.runs.len(),
            "{mode:?}: a point per condition"
        );
        assert!(
            points.windows(2).all(|w| w[0].0 < w[1].0),
            "{mode:?}: latency grows to the right"
        );
        assert_eq!(
            find(chart, "circle", &["point", class]).len(),
            result.runs.len(),
            "{mode:?}: markers"
        );
        colours.insert(lines[0].attribute("stroke").expect("stroke").to_owned());
        let key = find(chart, "g", &["legend-entry", class]);
        assert_eq!(key.len(), 1, "{mode:?}: in the legend");
        assert!(text_of(key[0]).contains(mode.label()));
    }
    assert_eq!(colours.len(), 3, "each mode has its own colour");

    // Less agreement is lower on the page (SVG y grows downwards): without compensation
    // the line falls with latency.
    let none = find(chart, "polyline", &["mode-none"])[0]
        .attribute("points")
        .expect("points");
    let ys: Vec<f64> = none
        .split_whitespace()
        .map(|p| p.split_once(',').expect("x,y").1.parse().expect("y"))
        .collect();
    assert!(ys.windows(2).all(|w| w[0] < w[1]), "{ys:?}");

    let labels = text_of(chart);
    assert!(
        labels.contains("round-trip time (ms)") && labels.contains("agreement with the client (%)")
    );
    for tick in ["0", "50", "100", "200"] {
        assert!(
            find(chart, "text", &[]).iter().any(|t| text_of(*t) == tick),
            "tick {tick}"
        );
    }
}

#[test]
fn the_reconstruction_chart_has_a_bar_per_nonempty_bucket_and_condition() {
    let result = fixture::realistic();
    let html = render_html(&result);
    let doc = parse(&html);
    let chart = by_id(&doc, "chart-reconstruction");
    for (i, run) in result.runs.iter().enumerate() {
        let class = format!("preset-{i}");
        let nonempty = run
            .reconstruction
            .histogram
            .iter()
            .filter(|&&(_, n)| n > 0)
            .count();
        assert_eq!(
            find(chart, "rect", &["bar", &class]).len(),
            nonempty,
            "{}",
            run.preset
        );
        assert_eq!(
            find(chart, "g", &["legend-entry", &class]).len(),
            1,
            "{}: in the legend",
            run.preset
        );
    }
    let labels = text_of(chart);
    assert!(
        labels.contains("(mm)") && labels.contains("share of shots (%)"),
        "{labels}"
    );
    assert!(
        labels.contains("≤ 1") && labels.contains("> 20"),
        "bucket labels: {labels}"
    );
    // The stats table beside it.
    let table = text_of(by_id(&doc, "reconstruction-table"));
    assert!(
        table.contains("99th percentile (mm)") && table.contains("32.0"),
        "{table}"
    );
}

#[test]
fn refused_honest_hits_have_their_own_table_apart_from_rejections() {
    let result = fixture::realistic();
    let html = render_html(&result);
    let doc = parse(&html);
    let table = by_id(&doc, "refused-table");
    let rows: Vec<String> = table
        .descendants()
        .filter(|n| n.has_tag_name("tr"))
        .skip(1)
        .map(text_of)
        .collect();
    assert_eq!(rows.len(), result.runs.len());
    for (row, run) in rows.iter().zip(&result.runs) {
        // The condition, then spawn-protected, then dodged.
        let expected = format!(
            "{}{}{}",
            run.preset, run.refused["invulnerable"], run.refused["dodged"]
        );
        assert_eq!(
            row.replace(char::is_whitespace, ""),
            expected.replace(' ', "")
        );
    }
}

#[test]
fn the_rejections_chart_has_one_bar_per_reason() {
    let result = fixture::realistic();
    let html = render_html(&result);
    let doc = parse(&html);
    let chart = by_id(&doc, "chart-rejections");
    let bars = find(chart, "g", &["bar"]);
    assert_eq!(bars.len(), fixture::REJECTION_REASONS.len());
    let reasons: BTreeSet<&str> = bars
        .iter()
        .map(|b| b.attribute("data-reason").expect("data-reason"))
        .collect();
    assert_eq!(reasons, fixture::REJECTION_REASONS.into_iter().collect());

    // Each bar's total is the sum over conditions, and the most frequent reason is first.
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for run in &result.runs {
        for (reason, &n) in &run.modes[&Mode::Full].rejections {
            *totals.entry(reason.as_str()).or_default() += n;
        }
    }
    for bar in &bars {
        let reason = bar.attribute("data-reason").expect("data-reason");
        let total = find(*bar, "text", &["total"]);
        assert_eq!(text_of(total[0]), totals[reason].to_string(), "{reason}");
        assert!(
            !find(*bar, "rect", &["segment"]).is_empty(),
            "{reason}: drawn"
        );
    }
    let first = bars[0].attribute("data-reason").expect("data-reason");
    assert_eq!(totals[first], *totals.values().max().expect("reasons"));
    assert!(text_of(chart).contains("honest shots rejected (count)"));
}

#[test]
fn the_shot_picture_draws_present_rewound_and_ray_in_three_colours() {
    let html = render_html(&fixture::realistic());
    let doc = parse(&html);
    let chart = by_id(&doc, "chart-shot");
    let colours = |class: &str| -> BTreeSet<String> {
        find(chart, "*", &[class])
            .iter()
            .filter(|n| !has_class(**n, "legend-entry"))
            .filter_map(|n| n.attribute("stroke"))
            .map(str::to_owned)
            .collect()
    };
    let present = find(chart, "*", &["hitbox", "present"]);
    let rewound = find(chart, "*", &["hitbox", "rewound"]);
    assert_eq!(present.len(), 3);
    assert_eq!(rewound.len(), 3);
    for shapes in [&present, &rewound] {
        let kinds: BTreeSet<&str> = shapes.iter().map(|n| n.tag_name().name()).collect();
        assert_eq!(
            kinds,
            BTreeSet::from(["circle", "path", "polygon"]),
            "circle, stadium and polygon"
        );
    }
    assert_eq!(find(chart, "line", &["ray"]).len(), 1);
    assert_eq!(find(chart, "path", &["hit"]).len(), 1);

    let (present, rewound, ray) = (colours("present"), colours("rewound"), colours("ray"));
    assert_eq!(
        (present.len(), rewound.len(), ray.len()),
        (1, 1, 1),
        "{present:?} {rewound:?} {ray:?}"
    );
    let all: BTreeSet<_> = present.iter().chain(&rewound).chain(&ray).collect();
    assert_eq!(all.len(), 3, "three distinct colours: {all:?}");
    let labels = text_of(chart);
    assert!(
        labels.contains("x (m)") && labels.contains("z (m)"),
        "{labels}"
    );
}

#[test]
fn the_tables_show_every_mode_and_mark_accepted_cheats() {
    let result = fixture::realistic();
    let html = render_html(&result);
    let doc = parse(&html);
    let results = by_id(&doc, "results-table");
    let rows = find(results, "tr", &[]).len() - 1;
    assert_eq!(
        rows,
        result.runs.len() * Mode::ALL.len(),
        "a row per condition and mode"
    );
    let text = text_of(results);
    for heading in [
        "Shots sent",
        "Client hits",
        "Confirmed",
        "Agreement",
        "False confirmations",
        "Honest rejections",
    ] {
        assert!(text.contains(heading), "{heading}");
    }
    assert!(
        text.contains("71.0%") && text.contains("RTT 100 ms, jitter 25 ms, loss 2.0%"),
        "{text}"
    );

    let cheats = by_id(&doc, "cheat-table");
    let bad = find(cheats, "td", &["bad"]);
    assert_eq!(bad.len(), 1, "only the cheat with accepted shots is marked");
    assert_eq!(text_of(bad[0]), "3");
    assert_eq!(find(cheats, "tr", &["accepted"]).len(), 1);
    assert!(
        html.contains("td.bad { color: #ffffff; background: #c62828;"),
        "marked in red"
    );
    let text = text_of(cheats);
    assert!(
        text.contains("rewind_too_far: 790, miss: 22"),
        "outcomes, most frequent first: {text}"
    );
}

#[test]
fn names_are_escaped() {
    let mut result = fixture::realistic();
    result.scenario = "<script>alert('pwned')</script>".to_owned();
    result.runs[0].preset = "a & b \"quoted\" <i>".to_owned();
    result.runs[0]
        .modes
        .get_mut(&Mode::Full)
        .expect("full")
        .rejections
        .insert("<bad reason>".to_owned(), 5);
    result.cheats[0].class = "<img onerror=x>".to_owned();
    result.cheats[0].outcomes.insert("x\"y".to_owned(), 1);
    if let Some(picture) = result.picture.as_mut() {
        picture.caption = "</svg><script>".to_owned();
    }
    let html = render_html(&result);
    assert!(
        !html.contains("<script"),
        "a scenario name must not become markup"
    );
    assert!(!html.contains("<img") && !html.contains("<i>") && !html.contains("<bad"));
    assert!(html.contains("&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;"));
    let doc = parse(&html);
    assert_eq!(
        text_of(by_id(&doc, "scenario")),
        "<script>alert('pwned')</script>",
        "and reads back as text"
    );
    let reasons: Vec<_> = find(by_id(&doc, "chart-rejections"), "g", &["bar"])
        .iter()
        .filter_map(|b| b.attribute("data-reason"))
        .collect();
    assert!(reasons.contains(&"<bad reason>"));
}

#[test]
fn the_same_result_gives_the_same_bytes() {
    let result = fixture::realistic();
    let first = render_html(&result);
    assert_eq!(first, render_html(&result.clone()));
    assert_eq!(first, render_html(&fixture::realistic()));
}

/// A mode with no shots at all: agreement is 0/0.
fn no_shots() -> ModeResult {
    ModeResult {
        agreement: f64::NAN,
        ..ModeResult::default()
    }
}

fn run(name: &str, rtt_ms: f64, modes: BTreeMap<Mode, ModeResult>) -> PresetRun {
    PresetRun {
        preset: name.to_owned(),
        rtt_ms,
        modes,
        ..PresetRun::default()
    }
}

/// Renders, parses, and checks nothing meaningless leaked into the page.
fn renders_cleanly(result: &SimResult) -> String {
    let html = render_html(result);
    let doc = parse(&html);
    for node in doc.descendants() {
        for attribute in node.attributes() {
            let value = attribute.value();
            assert!(
                !value.contains("NaN") && !value.contains("inf"),
                "{}={value:?} on <{}>",
                attribute.name(),
                node.tag_name().name()
            );
        }
        if let Some(text) = node.text() {
            assert!(
                !text.contains("NaN") && !text.contains("inf"),
                "text {text:?}"
            );
        }
    }
    html
}

#[test]
fn an_empty_result_still_renders() {
    let html = renders_cleanly(&SimResult::default());
    let doc = parse(&html);
    for id in [
        "chart-agreement",
        "chart-reconstruction",
        "chart-rejections",
    ] {
        by_id(&doc, id);
    }
    assert!(html.contains("No network conditions were simulated."));
    assert!(html.contains("No shot was drawn in this run."));
    assert!(html.contains("No cheat classes were run."));
}

#[test]
fn zero_shots_show_as_not_available() {
    let modes = Mode::ALL
        .into_iter()
        .map(|mode| (mode, no_shots()))
        .collect();
    let result = SimResult {
        runs: vec![run("quiet", 80.0, modes)],
        ..SimResult::default()
    };
    let html = renders_cleanly(&result);
    let doc = parse(&html);
    let table = by_id(&doc, "results-table");
    let na = find(table, "td", &["na"]);
    assert_eq!(na.len(), 3, "agreement is n/a for every mode");
    assert!(na.iter().all(|td| text_of(*td) == "n/a"));
    assert!(
        find(by_id(&doc, "chart-agreement"), "polyline", &["series"]).is_empty(),
        "no line without data"
    );
    assert!(
        html.contains("left out of the lines"),
        "the caption says why"
    );
    assert!(html.contains("No honest shot was rejected."));
}

#[test]
fn a_single_condition_gets_a_chart() {
    let mut result = fixture::realistic();
    result.runs.truncate(1);
    result.runs[0].rtt_ms = 35.0;
    let html = renders_cleanly(&result);
    let doc = parse(&html);
    let line = find(by_id(&doc, "chart-agreement"), "polyline", &["mode-full"]);
    assert_eq!(
        line[0]
            .attribute("points")
            .expect("points")
            .split_whitespace()
            .count(),
        1
    );
}

#[test]
fn broken_numbers_do_not_break_the_page() {
    let huge = ModeResult {
        shots_sent: u64::MAX,
        shots_arrived: u64::MAX,
        client_hits: u64::MAX,
        confirmed: u64::MAX,
        agreed: u64::MAX,
        agreement: 1e300,
        false_confirmations: u64::MAX,
        rejections: BTreeMap::from([("a".to_owned(), u64::MAX), ("b".to_owned(), u64::MAX)]),
    };
    let odd = ModeResult {
        client_hits: 10,
        agreement: f64::INFINITY,
        ..ModeResult::default()
    };
    let tiny = ModeResult {
        client_hits: 10,
        agreement: 1e-300,
        ..ModeResult::default()
    };
    let mut runs = vec![
        run(
            "huge",
            1e300,
            BTreeMap::from([(Mode::Full, huge.clone()), (Mode::None, odd)]),
        ),
        run("nan", f64::NAN, BTreeMap::from([(Mode::Full, huge)])),
        run(
            "negative",
            -5.0,
            BTreeMap::from([(Mode::ServerGuess, tiny)]),
        ),
        run("no modes", 20.0, BTreeMap::new()),
    ];
    runs[0].jitter_ms = f64::INFINITY;
    runs[0].loss = f64::NAN;
    runs[0].reconstruction = DistanceStats {
        samples: u64::MAX,
        mean_mm: f64::NAN,
        p99_mm: f64::INFINITY,
        max_mm: 1e300,
        histogram: vec![
            (Some(f64::NAN), 3),
            (Some(1e-300), u64::MAX),
            (Some(1e300), u64::MAX),
            (None, 1),
        ],
    };
    runs[1].reconstruction.histogram = vec![(Some(0.5), 0), (None, 0)];
    let result = SimResult {
        scenario: "\u{0}\u{1b}control\u{7}".to_owned(),
        duration: f64::NAN,
        tick_rate: f64::INFINITY,
        send_rate: -0.0,
        runs,
        cheats: vec![CheatResult {
            accepted: u64::MAX,
            ..CheatResult::default()
        }],
        picture: Some(ShotPicture {
            caption: String::new(),
            present: vec![
                Outline::Circle {
                    center: [f32::NAN, 0.0],
                    radius: 1.0,
                },
                Outline::Circle {
                    center: [0.0, 0.0],
                    radius: -1.0,
                },
                Outline::Polygon { points: vec![] },
                Outline::Stadium {
                    a: [f32::MAX, f32::MIN],
                    b: [f32::MAX, f32::MAX],
                    radius: f32::MAX,
                },
            ],
            rewound: vec![Outline::Stadium {
                a: [1.0, 1.0],
                b: [1.0, 1.0],
                radius: 0.0,
            }],
            ray_from: [f32::INFINITY, 0.0],
            ray_to: [0.0, 0.0],
            hit: Some([f32::NAN, 1.0]),
        }),
        ..SimResult::default()
    };
    renders_cleanly(&result);
}

#[test]
fn pictures_without_hitboxes_or_hit_still_render() {
    for picture in [
        ShotPicture::default(),
        ShotPicture {
            ray_from: [0.0, 0.0],
            ray_to: [0.0, 0.0],
            ..ShotPicture::default()
        },
        ShotPicture {
            ray_from: [-30.0, 4.0],
            ray_to: [30.0, 4.0],
            ..fixture::picture()
        },
        ShotPicture {
            hit: None,
            present: vec![],
            ..fixture::picture()
        },
    ] {
        let result = SimResult {
            picture: Some(picture),
            ..SimResult::default()
        };
        let html = renders_cleanly(&result);
        let doc = parse(&html);
        assert!(!find(by_id(&doc, "chart-shot"), "*", &["ray"]).is_empty());
    }
}

#[test]
fn write_report_creates_the_file() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("report-test")
        .join("nested")
        .join("report");
    let _ = std::fs::remove_dir_all(&dir);
    let result = fixture::realistic();
    let path = write_report(&result, &dir).expect("write the report");
    assert_eq!(path, dir.join("index.html"));
    assert_eq!(
        std::fs::read_to_string(&path).expect("read it back"),
        render_html(&result)
    );
    // Writing again replaces the file.
    write_report(&SimResult::default(), &dir).expect("write again");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read it back"),
        render_html(&SimResult::default())
    );
}

#[test]
fn honest_shots_stopped_by_doors_are_counted_under_the_results() {
    let result = fixture::realistic();
    let html = renders_cleanly(&result);
    let doc = parse(&html);
    let note = text_of(by_id(&doc, "movers"));
    for run in &result.runs {
        assert!(
            note.contains(&format!("{}: 40 (0 seen as hits", run.preset)),
            "{note}"
        );
    }
    // Without the scenery nothing is stopped by a mover, and nothing is said.
    let mut bare = result;
    for run in &mut bare.runs {
        run.blocked_by_movers = 0;
    }
    assert!(!render_html(&bare).contains("id=\"movers\""));
}
