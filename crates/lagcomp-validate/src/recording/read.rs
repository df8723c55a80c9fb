//! [`Recording`]: a whole recording read into memory, every line parsed and checked
//! before the caller sees any of it.

use std::io::{self, BufRead, Write};

use lagcomp::HistoryConfig;

use super::check::Checker;
use super::error::{RecordingError, RecordingErrorKind};
use super::limits::MAX_LINE_BYTES;
use super::record::Record;
use super::write::RecordingWriter;
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
    pub records: Vec<(usize, Record)>,
}

impl Recording {
    /// Reads a recording in its JSON Lines form, checking every line (see
    /// `docs/FORMAT.md`): the header first with the known format and version, each line a
    /// valid record, entities spawned before use and not used after their despawn, frames
    /// strictly increasing in tick and time with one valid transform per bone, verdicts
    /// right after their claims, and the [`super::limits`].
    ///
    /// # Errors
    /// The first problem, with its line: [`RecordingErrorKind::Truncated`] for a last line
    /// cut short, [`RecordingErrorKind::Io`] if reading fails.
    pub fn read(mut input: impl BufRead) -> Result<Self, RecordingError> {
        let mut checker = Checker::default();
        let mut config = None;
        let mut rules = None;
        let mut records = Vec::new();
        let mut buf = Vec::new();
        let mut line = 0;
        loop {
            line += 1;
            let fail = |kind| RecordingError::new(line, kind);
            buf.clear();
            let ended = read_line(&mut input, &mut buf).map_err(fail)?;
            if buf.is_empty() && !ended {
                break;
            }
            let mut bytes = &buf[..];
            if let Some(without_cr) = bytes.strip_suffix(b"\r") {
                bytes = without_cr;
            }
            let text = std::str::from_utf8(bytes).map_err(|e| {
                fail(RecordingErrorKind::NotUtf8 {
                    offset: e.valid_up_to(),
                })
            })?;
            let parsed = super::wire::parse(text).map_err(|kind| {
                if !ended && kind.is_syntax() {
                    fail(RecordingErrorKind::Truncated {
                        detail: kind.to_string(),
                    })
                } else {
                    fail(kind)
                }
            })?;
            checker.accept(line, &parsed).map_err(fail)?;
            let record = Record::from_line(parsed).map_err(fail)?;
            match &record {
                Record::Header(c) => config = Some(*c),
                Record::Rules(r) => rules = Some(r.clone()),
                _ => {}
            }
            records.push((line, record));
        }
        let config = config.ok_or_else(|| RecordingError::new(1, RecordingErrorKind::Empty))?;
        Ok(Self {
            config,
            rules,
            records,
        })
    }

    /// How many claims it holds.
    #[must_use]
    pub fn claims(&self) -> usize {
        self.records
            .iter()
            .filter(|(_, r)| matches!(r, Record::Claim { .. }))
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
                Record::Header(c) => header = Some((*line, c)),
                Record::Rules(r) => rules = Some(r),
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
            Some((_, Record::Header(_))) => &self.records[1..],
            _ => &self.records[..],
        };
        for (_, record) in body {
            writer.record(record)?;
        }
        writer.finish()
    }
}

/// Reads one line into `buf` (without its newline), refusing to buffer more than
/// [`MAX_LINE_BYTES`]. Returns whether the line ended with a newline.
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> Result<bool, RecordingErrorKind> {
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if available.is_empty() {
            return Ok(false);
        }
        let (take, ended) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at, true),
            None => (available.len(), false),
        };
        if buf.len() + take > MAX_LINE_BYTES {
            return Err(RecordingErrorKind::LineTooLong {
                limit: MAX_LINE_BYTES,
            });
        }
        buf.extend_from_slice(&available[..take]);
        input.consume(take + usize::from(ended));
        if ended {
            return Ok(true);
        }
    }
}
