//! [`Recording`]: a whole recording read into memory, every line parsed and checked
//! before the caller sees any of it.

use std::io::{self, BufRead, Write};

use lagcomp::HistoryConfig;

use super::check::Checker;
use super::error::{RecordingError, RecordingErrorKind};
use super::limits::MAX_LINE_BYTES;
use super::record::RecordingEntry;
use super::write::RecordingWriter;
use crate::jsonl::{LineError, TornTail, read_line};
use crate::rules::RuleSet;

/// A whole recording, parsed and checked before anything is applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// The history configuration from the header.
    pub config: HistoryConfig,
    /// The rules record's rule set, if the recording has one.
    pub rules: Option<RuleSet>,
    /// Every line, header and rules included, with its 1-based line number, in file
    /// order.
    pub records: Vec<(usize, RecordingEntry)>,
    /// The incomplete last line the file ended in, if it did (see [`Recording::read`]);
    /// `None` for a file that ends with a complete record.
    pub torn: Option<TornTail>,
}

impl Recording {
    /// Reads a recording in its JSON Lines form, checking every line (see
    /// `docs/FORMAT.md`): the header first with the known format and version, each line a
    /// valid record, entities spawned before use and not used after their despawn, frames
    /// strictly increasing in tick and time with one valid transform per bone, verdicts
    /// right after their claims, and the [`super::limits`].
    ///
    /// A file that ends mid-record (a last line without its newline that is not a
    /// complete record: a server killed while writing it) is read up to its last complete
    /// line, and [`Recording::torn`] says so; a claim whose verdict line was lost then has
    /// no recorded verdict.
    ///
    /// ```
    /// use lagcomp_validate::recording::{Recording, revalidate};
    ///
    /// // A short match: two players at 10 ticks a second, a wall, a few shots.
    /// let text = include_str!("../../tests/data/example.jsonl");
    /// let recording = Recording::read(text.as_bytes())?;
    /// assert_eq!(recording.config.tick_rate, 10.0);
    /// assert!(recording.torn.is_none());
    /// // Judged again under the recorded rules, every claim gets its recorded verdict.
    /// let judged = revalidate(&recording, None, |_, _| {})?;
    /// assert!(!judged.is_empty());
    /// assert!(judged.iter().all(|shot| shot.recorded.is_some() && !shot.changed()));
    /// # Ok::<(), lagcomp_validate::recording::RecordingError>(())
    /// ```
    ///
    /// # Errors
    /// The first problem, with its line; [`RecordingErrorKind::Io`] if reading fails.
    pub fn read(mut input: impl BufRead) -> Result<Self, RecordingError> {
        let mut checker = Checker::default();
        let mut config = None;
        let mut rules = None;
        let mut records = Vec::new();
        let mut torn = None;
        let mut buf = Vec::new();
        let mut line = 0;
        loop {
            line += 1;
            let fail = |kind| RecordingError::new(line, kind);
            buf.clear();
            let ended = read_line(&mut input, &mut buf, MAX_LINE_BYTES).map_err(|e| {
                fail(match e {
                    LineError::TooLong => RecordingErrorKind::LineTooLong {
                        limit: MAX_LINE_BYTES,
                    },
                    LineError::Io(e) => RecordingErrorKind::Io(e),
                })
            })?;
            if buf.is_empty() && !ended {
                break;
            }
            // A last line cut short is not JSON (an object needs its closing brace), or
            // not even UTF-8 when the cut splits a character.
            let torn_here = TornTail {
                line,
                bytes: buf.len(),
            };
            let mut bytes = &buf[..];
            if let Some(without_cr) = bytes.strip_suffix(b"\r") {
                bytes = without_cr;
            }
            let text = match std::str::from_utf8(bytes) {
                Ok(text) => text,
                Err(_) if !ended => {
                    torn = Some(torn_here);
                    break;
                }
                Err(e) => {
                    return Err(fail(RecordingErrorKind::NotUtf8 {
                        offset: e.valid_up_to(),
                    }));
                }
            };
            let parsed = match super::wire::parse(text) {
                Ok(parsed) => parsed,
                Err(kind) if !ended && kind.is_syntax() => {
                    torn = Some(torn_here);
                    break;
                }
                Err(kind) => return Err(fail(kind)),
            };
            checker.accept(line, &parsed).map_err(fail)?;
            let record = RecordingEntry::from_line(parsed).map_err(fail)?;
            match &record {
                RecordingEntry::Header(c) => config = Some(*c),
                RecordingEntry::Rules(r) => rules = Some(r.clone()),
                _ => {}
            }
            records.push((line, record));
        }
        let config = config.ok_or_else(|| RecordingError::new(1, RecordingErrorKind::Empty))?;
        Ok(Self {
            config,
            rules,
            records,
            torn,
        })
    }

    /// How many claims it holds.
    #[must_use]
    pub fn claims(&self) -> usize {
        self.records
            .iter()
            .filter(|(_, r)| matches!(r, RecordingEntry::Claim { .. }))
            .count()
    }

    /// The number of claims of every weapon kind: `claim` and `weapon_claim` lines (what
    /// [`super::revalidate_any`] judges).
    #[must_use]
    pub fn claims_of_every_kind(&self) -> usize {
        self.records
            .iter()
            .filter(|(_, r)| {
                matches!(
                    r,
                    RecordingEntry::Claim { .. } | RecordingEntry::WeaponClaim { .. }
                )
            })
            .count()
    }

    /// Checks the records again, as [`Recording::read`] did, and that `config` and
    /// `rules` are the header's and the rules record's (the fields are public, so a
    /// recording may have been edited since it was read).
    ///
    /// # Errors
    /// The first problem, with its line.
    pub fn check(&self) -> Result<(), RecordingError> {
        let mut checker = Checker::default();
        let mut header = None;
        let mut rules = None;
        for (line, record) in &self.records {
            checker
                .accept(*line, &record.line())
                .map_err(|kind| RecordingError::new(*line, kind))?;
            match record {
                RecordingEntry::Header(c) => header = Some((*line, c)),
                RecordingEntry::Rules(r) => rules = Some(r),
                _ => {}
            }
        }
        let Some((line, config)) = header else {
            return Err(RecordingError::new(1, RecordingErrorKind::Empty));
        };
        if *config != self.config {
            return Err(RecordingError::new(
                line,
                RecordingErrorKind::Inconsistent("config"),
            ));
        }
        if rules != self.rules.as_ref() {
            return Err(RecordingError::new(
                0,
                RecordingErrorKind::Inconsistent("rules"),
            ));
        }
        Ok(())
    }

    /// Writes the recording in its JSON Lines form. A recording read from a file written
    /// by [`RecordingWriter`] comes out byte for byte the same.
    ///
    /// # Errors
    /// The writer's error, or [`io::ErrorKind::InvalidInput`] for records that fail their
    /// checks.
    pub fn write<W: Write>(&self, out: W) -> io::Result<W> {
        let mut writer = RecordingWriter::new(out, &self.config)?;
        let body = match self.records.first() {
            Some((_, RecordingEntry::Header(_))) => &self.records[1..],
            _ => &self.records[..],
        };
        for (_, record) in body {
            writer.record(record)?;
        }
        writer.finish()
    }
}
