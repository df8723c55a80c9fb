//! 3D pictures of a few chosen shots: while a match is played, the first shot of each
//! [`ChosenShot`] kind is drawn as a glTF scene ([`lagcomp_gltf::scene_of_verdict`]);
//! [`super::write_report`] writes each as a `.glb` file next to the page, and the page
//! links them in its "Chosen shots in 3D" section.
//!
//! Choosing happens in the match (`skirmish.rs` offers each judged shot, and only the
//! first of a kind is drawn, so the match's hot path pays a comparison); merging the
//! matches' choices happens in `scenario.rs`; the page and the files are written here.

use std::fmt;
use std::path::Path;

use lagcomp::{EntityId, History};
use lagcomp_gltf::{VerdictScene, scene_of_verdict};
use lagcomp_validate::{RuleSet, ShotClaim, Verdict};

use super::text::esc;

/// Why a shot was chosen for a 3D picture; a report has at most one of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChosenShot {
    /// An honest shot the server confirmed on a target that has moved since the shooter
    /// drew it (the shot the page also draws from above).
    Confirmed,
    /// An honest shot the server found blocked by a wall, the level or a door.
    Blocked,
    /// An honest shot the server rejected.
    HonestRejected,
    /// A cheating shot the server rejected.
    CheatCaught,
}

impl ChosenShot {
    /// Every kind, in the order the page lists them.
    pub const ALL: [Self; 4] = [
        Self::Confirmed,
        Self::Blocked,
        Self::HonestRejected,
        Self::CheatCaught,
    ];

    /// The `.glb` file's name, next to the page.
    #[must_use]
    pub const fn file_name(self) -> &'static str {
        match self {
            Self::Confirmed => "shot-confirmed.glb",
            Self::Blocked => "shot-blocked.glb",
            Self::HonestRejected => "shot-honest-rejected.glb",
            Self::CheatCaught => "shot-cheat-caught.glb",
        }
    }

    /// What the kind is, in a few words.
    #[must_use]
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Confirmed => "an honest hit confirmed on a target that had moved on",
            Self::Blocked => "an honest shot the server found blocked",
            Self::HonestRejected => "an honest shot the server rejected",
            Self::CheatCaught => "a cheating shot the server rejected",
        }
    }
}

impl fmt::Display for ChosenShot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// One chosen shot's picture.
#[derive(Debug, Clone, PartialEq)]
pub struct ShotScene {
    /// Why it was chosen.
    pub chosen: ChosenShot,
    /// The match it was played in (a network condition or a cheat class), once merged
    /// into a run's result; empty in a single match's choices.
    pub played_in: String,
    /// The verdict's label (`confirmed`, `blocked`, a rejection reason).
    pub outcome: &'static str,
    /// The scene.
    pub scene: VerdictScene,
}

/// The chosen shots of a match or a run: at most one of each [`ChosenShot`], in kind
/// order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShotScenes {
    chosen: Vec<ShotScene>,
}

impl ShotScenes {
    /// Whether no shot of `kind` was chosen yet.
    #[must_use]
    pub fn wants(&self, kind: ChosenShot) -> bool {
        self.chosen.iter().all(|s| s.chosen != kind)
    }

    /// Draws the shot `claim` judged as `verdict` against `history` (right after it was
    /// judged) as the `kind` chosen, unless one of that kind was chosen already.
    /// `players` are the entities a shot that named nobody is drawn against. A shot that
    /// cannot be drawn is passed over: the next of its kind is offered.
    pub fn offer(
        &mut self,
        kind: ChosenShot,
        history: &History,
        rules: &RuleSet,
        (claim, verdict): (&ShotClaim, &Verdict),
        players: &[EntityId],
    ) {
        if !self.wants(kind) {
            return;
        }
        if let Ok(scene) = scene_of_verdict(history, rules, claim, verdict, players) {
            self.insert(ShotScene {
                chosen: kind,
                played_in: String::new(),
                outcome: verdict.outcome.label(),
                scene,
            });
        }
    }

    /// Takes `other`'s choices of kinds not chosen yet, noting they were played in
    /// `played_in`.
    pub fn merge(&mut self, other: Self, played_in: &str) {
        for mut shot in other.chosen {
            if self.wants(shot.chosen) {
                shot.played_in = played_in.to_owned();
                self.insert(shot);
            }
        }
    }

    /// The chosen shots, in kind order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &ShotScene> {
        self.chosen.iter()
    }

    /// How many shots were chosen.
    #[must_use]
    pub fn len(&self) -> usize {
        self.chosen.len()
    }

    /// Whether no shot was chosen.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.chosen.is_empty()
    }

    fn insert(&mut self, shot: ShotScene) {
        self.chosen.push(shot);
        self.chosen.sort_by_key(|s| s.chosen);
    }
}

/// The page's section linking the chosen shots' files.
pub(super) fn section(scenes: &ShotScenes) -> String {
    let mut out = String::new();
    if scenes.is_empty() {
        out.push_str("<p class=\"note\">No shot was chosen in this run.</p>\n");
        return out;
    }
    out.push_str("<ul class=\"scenes\">\n");
    for shot in scenes.iter() {
        let file = shot.chosen.file_name();
        put!(
            out,
            "<li><a href=\"{file}\">{file}</a>: {} ({}",
            esc(shot.chosen.describe()),
            esc(shot.outcome),
        );
        if !shot.played_in.is_empty() {
            put!(out, ", played in {}", esc(&shot.played_in));
        }
        out.push_str(")</li>\n");
    }
    out.push_str("</ul>\n");
    out
}

/// Writes each chosen shot's `.glb` into `dir`, and removes the files of kinds not
/// chosen (left by an earlier report in the same directory), so every link on the page
/// opens the picture of this run and no stale picture stays beside it.
///
/// # Errors
/// Any I/O error; a scene that cannot be written as glTF (it was checked when drawn, so
/// this does not happen) as [`std::io::ErrorKind::InvalidData`].
pub(super) fn write(scenes: &ShotScenes, dir: &Path) -> std::io::Result<()> {
    for kind in ChosenShot::ALL {
        let path = dir.join(kind.file_name());
        match scenes.iter().find(|s| s.chosen == kind) {
            Some(shot) => {
                let glb = shot
                    .scene
                    .to_glb()
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
                std::fs::write(&path, glb)?;
            }
            None => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            },
        }
    }
    Ok(())
}
