//! `lagcomp validate`: offline re-validation of a match recording, the way a studio tunes
//! its rules and reviews suspected cheaters after the fact.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use lagcomp_validate::recording::{Recording, RecordingEntry, RevalidatedAny, revalidate_any};
use lagcomp_validate::{RuleSet, WeaponVerdict};

/// Arguments of `lagcomp validate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording (JSON Lines).
    recording: PathBuf,
    /// Weapon rules to validate with, TOML (default: the rules the recording holds).
    #[arg(long)]
    rules: Option<PathBuf>,
    /// List every claim whose verdict differs from the one recorded.
    #[arg(long)]
    diff: bool,
    /// Print one verdict per claim as JSON on stdout, in the recording's verdict-line
    /// shape (the summary goes to stderr).
    #[arg(long)]
    json: bool,
    /// Instead of the summary, draw the claim with this sequence number as a 3D scene
    /// (glTF binary, see --gltf): the target's present and rewound hitboxes, the shot,
    /// the walls it met, the verdict in the scene's extras (default: none, the summary).
    #[arg(long, value_name = "SEQ", requires = "gltf")]
    scene: Option<u32>,
    /// The shooter of --scene's claim, as the recording numbers entities (needed only
    /// when several shooters used that sequence number; default: the only one).
    #[arg(long, value_name = "ENTITY", requires = "scene")]
    shooter: Option<u64>,
    /// Where --scene writes its .glb file (no default: --scene needs it).
    #[arg(long, value_name = "FILE", requires = "scene")]
    gltf: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let rules = args
        .rules
        .as_ref()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            RuleSet::from_toml(&text).with_context(|| format!("in {}", path.display()))
        })
        .transpose()?;
    let file = File::open(&args.recording)
        .with_context(|| format!("opening {}", args.recording.display()))?;
    let recording = Recording::read(BufReader::new(file))
        .with_context(|| format!("in {}", args.recording.display()))?;
    if let Some(torn) = recording.torn {
        // A server killed mid-write: what it finished writing is still worth checking.
        eprintln!(
            "lagcomp validate: warning: {}: {torn}",
            args.recording.display()
        );
    }

    if let (Some(seq), Some(path)) = (args.scene, &args.gltf) {
        return write_scene(&recording, rules.as_ref(), seq, args.shooter, path);
    }

    let bar = ProgressBar::new(recording.claims_of_every_kind() as u64).with_style(
        ProgressStyle::with_template("{spinner} validating {pos}/{len} claims {wide_bar} {eta}")
            .expect("a valid template"),
    );
    let results = revalidate_any(&recording, rules.as_ref(), |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })
    .with_context(|| format!("in {}", args.recording.display()))?;
    bar.finish_and_clear();

    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        // The recording's verdict line (ids as numbers), so the output can be compared
        // with, or spliced into, a recording.
        for r in &results {
            let line = match r.verdict {
                WeaponVerdict::Hitscan(verdict) => RecordingEntry::Verdict(verdict),
                other => RecordingEntry::WeaponVerdict(Box::new(other)),
            };
            writeln!(out, "{}", line.to_json())?;
        }
        out.flush()?;
        let mut err = io::stderr().lock();
        print_summary(&mut err, &results, args.diff)?;
    } else {
        print_summary(&mut out, &results, args.diff)?;
        out.flush()?;
    }
    Ok(())
}

/// Counts per outcome label, per shooter.
#[derive(Debug, Default)]
struct Tally {
    by_label: BTreeMap<&'static str, u64>,
    total: u64,
}

impl Tally {
    fn add(&mut self, verdict: &WeaponVerdict) {
        *self.by_label.entry(label(verdict)).or_default() += 1;
        self.total += 1;
    }

    fn get(&self, label: &str) -> u64 {
        self.by_label.get(label).copied().unwrap_or(0)
    }

    fn rejected(&self) -> u64 {
        self.total - self.get("confirmed") - self.get("miss") - self.get("blocked")
    }
}

/// A claim's verdict as one label: `confirmed`, `miss`, `blocked`, or the reason's name (a
/// pellet or blast claim counts once, whatever its pellets or victims came to).
fn label(verdict: &WeaponVerdict) -> &'static str {
    verdict.label()
}

fn print_summary(out: &mut impl Write, results: &[RevalidatedAny], diff: bool) -> io::Result<()> {
    let mut all = Tally::default();
    let mut shooters: BTreeMap<u64, Tally> = BTreeMap::new();
    let mut kinds: BTreeMap<&'static str, Tally> = BTreeMap::new();
    let mut changed = Vec::new();
    for r in results {
        all.add(&r.verdict);
        shooters
            .entry(r.verdict.shooter().to_bits())
            .or_default()
            .add(&r.verdict);
        kinds.entry(r.verdict.kind()).or_default().add(&r.verdict);
        if r.recorded.as_ref().is_some_and(|old| *old != r.verdict) {
            changed.push(r);
        }
    }
    let compared = results.iter().filter(|r| r.recorded.is_some()).count();

    writeln!(out, "{} claims re-validated", all.total)?;
    writeln!(out)?;
    writeln!(out, "verdicts by reason")?;
    for (label, n) in &all.by_label {
        writeln!(
            out,
            "  {label:<24} {n:>8}  {:>5.1} %",
            100.0 * *n as f64 / all.total.max(1) as f64
        )?;
    }
    writeln!(out)?;
    // Hitscan-only recordings (format 4 and older) keep the summary they always had.
    if kinds.keys().any(|kind| *kind != "hitscan") {
        write_table(
            out,
            "per weapon kind",
            "kind",
            kinds.iter().map(|(kind, t)| ((*kind).to_owned(), t)),
        )?;
        writeln!(out)?;
    }
    write_table(
        out,
        "per shooter",
        "shooter",
        shooters
            .iter()
            .map(|(shooter, t)| (lagcomp::EntityId::from_bits(*shooter).to_string(), t)),
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{} of {compared} recorded verdicts differ under these rules",
        changed.len()
    )?;
    if diff {
        for r in changed {
            let old = r
                .recorded
                .as_ref()
                .expect("only claims with a recorded verdict");
            writeln!(
                out,
                "  line {:>7}  {} seq {:>6}  {} -> {}",
                r.line,
                r.verdict.shooter(),
                r.verdict.seq(),
                label(old),
                label(&r.verdict)
            )?;
        }
    }
    Ok(())
}

/// A table of tallies under `heading`, one row per `(name, tally)`, with each row's most
/// frequent rejection.
fn write_table<'a>(
    out: &mut impl Write,
    heading: &str,
    first_column: &str,
    rows: impl Iterator<Item = (String, &'a Tally)>,
) -> io::Result<()> {
    writeln!(out, "{heading}")?;
    writeln!(
        out,
        "  {:<20} {:>8} {:>10} {:>8} {:>8} {:>9}  top rejection",
        first_column, "claims", "confirmed", "miss", "blocked", "rejected"
    )?;
    for (name, t) in rows {
        let top = t
            .by_label
            .iter()
            .filter(|(l, _)| !matches!(**l, "confirmed" | "miss" | "blocked"))
            .max_by_key(|(_, n)| **n)
            .map_or(String::from("-"), |(l, n)| format!("{l} ({n})"));
        writeln!(
            out,
            "  {name:<20} {:>8} {:>10} {:>8} {:>8} {:>9}  {top}",
            t.total,
            t.get("confirmed"),
            t.get("miss"),
            t.get("blocked"),
            t.rejected(),
        )?;
    }
    Ok(())
}

/// `--scene SEQ --gltf FILE`: the claim's picture, re-validated up to it.
fn write_scene(
    recording: &Recording,
    rules: Option<&RuleSet>,
    seq: u32,
    shooter: Option<u64>,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    let shooter = shooter.map(lagcomp::EntityId::from_bits);
    let scene = lagcomp_gltf::scene_of_shot(recording, rules, seq, shooter)?;
    std::fs::write(path, scene.to_glb()?).with_context(|| format!("writing {}", path.display()))?;
    println!("{}: wrote {}", scene.name, path.display());
    Ok(())
}
