//! The report's chosen shots in 3D: a run draws the first shot of each kind it meets,
//! `write_report` writes each as a `.glb` beside the page, the page links exactly those
//! files, and a later report in the same directory leaves no stale picture behind.

use std::path::{Path, PathBuf};

use lagcomp_game::cheat::Cheat;
use lagcomp_sim::SimResult;
use lagcomp_sim::report::{ChosenShot, write_report};
use lagcomp_sim::scenario::{Scenario, parse_preset};
use roxmltree::{Document, ParsingOptions};
use serde_json::Value;

/// A short run on LAN with one cheat class: honest confirmed and blocked shots, and
/// cheating shots the server rejects.
fn short_run() -> SimResult {
    let mut s = Scenario::named("default").expect("a built-in scenario");
    s.duration = 3.0;
    s.presets = vec![parse_preset("LAN").expect("a known preset")];
    s.cheats = vec![Cheat::TooOld];
    // Rifles only: the chosen shots are hitscan ones, and 3 s of mixed weapons fire too
    // few of them to confirm one on a target that had moved on.
    s.arsenal = false;
    s.run(|_, _, _| {})
}

/// A fresh directory under the tests' temporary directory.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The `href`s of the page's "Chosen shots in 3D" section, with each link's text.
fn links(html: &str) -> Vec<(String, String)> {
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(html, options).expect("well-formed");
    let section = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("scenes"))
        .expect("the scenes section");
    section
        .descendants()
        .filter(|n| n.has_tag_name("a"))
        .map(|a| {
            let item = a.parent().expect("in a list item");
            let text = item
                .descendants()
                .filter_map(|n| n.text())
                .collect::<String>();
            (a.attribute("href").expect("a link").to_owned(), text)
        })
        .collect()
}

/// The glTF JSON chunk of a `.glb` file, after checking its header.
fn gltf_json(glb: &[u8]) -> Value {
    let word = |at: usize| u32::from_le_bytes(glb[at..at + 4].try_into().unwrap()) as usize;
    assert_eq!(&glb[..4], b"glTF");
    assert_eq!(word(4), 2, "glTF version");
    assert_eq!(word(8), glb.len(), "total length");
    assert_eq!(&glb[16..20], b"JSON");
    serde_json::from_slice(&glb[20..20 + word(12)]).expect("the JSON chunk")
}

#[test]
fn a_run_writes_and_links_its_chosen_shots() {
    let result = short_run();
    let chosen: Vec<ChosenShot> = result.scenes.iter().map(|s| s.chosen).collect();
    assert!(chosen.contains(&ChosenShot::Confirmed), "{chosen:?}");
    assert!(chosen.contains(&ChosenShot::CheatCaught), "{chosen:?}");
    let confirmed = result
        .scenes
        .iter()
        .find(|s| s.chosen == ChosenShot::Confirmed)
        .expect("chosen");
    // Both hitbox sets are drawn, apart: the target had moved on.
    assert!(!confirmed.scene.present.is_empty() && !confirmed.scene.rewound.is_empty());
    assert_eq!(confirmed.outcome, "confirmed");
    assert_eq!(confirmed.played_in, "LAN");

    let dir = fresh_dir("report-scenes");
    let page = write_report(&result, &dir).expect("write the report");
    let html = std::fs::read_to_string(&page).expect("the page");
    let linked = links(&html);
    assert_eq!(linked.len(), result.scenes.len(), "{linked:?}");
    for ((href, text), shot) in linked.iter().zip(result.scenes.iter()) {
        assert_eq!(href, shot.chosen.file_name());
        assert!(!href.contains('/') && href.ends_with(".glb"), "{href}");
        assert!(text.contains(shot.outcome), "{text}");
        let glb = std::fs::read(dir.join(href)).expect("the linked file was written");
        let json = gltf_json(&glb);
        let extras = &json["scenes"][0]["extras"];
        assert_eq!(extras["outcome"], shot.outcome, "{href}");
        assert_eq!(glb, shot.scene.to_glb().expect("bytes"));
    }
    // Nothing else is linked, and the page points nowhere else.
    assert_eq!(html.matches("href=").count(), linked.len());
}

#[test]
fn a_later_report_leaves_no_stale_picture() {
    let dir = fresh_dir("report-scenes-stale");
    write_report(&short_run(), &dir).expect("write the report");
    assert!(dir.join(ChosenShot::Confirmed.file_name()).is_file());
    let page = write_report(&SimResult::default(), &dir).expect("write again");
    for kind in ChosenShot::ALL {
        assert!(!dir.join(kind.file_name()).exists(), "{kind:?}");
    }
    let html = std::fs::read_to_string(page).expect("the page");
    assert!(links(&html).is_empty());
    assert!(html.contains("No shot was chosen in this run."));
}
