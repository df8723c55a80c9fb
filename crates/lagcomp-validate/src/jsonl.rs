//! JSON Lines input, shared by the recording reader and the audit log reader: one line
//! at a time under a length limit, and [`TornTail`], what a writer killed in the middle
//! of a line leaves at the end of its file.
//!
//! What is not here: what a line means (each reader parses its own records).

use std::fmt;
use std::io::{self, BufRead};

/// The last line of a file that ends in the middle of a record: no newline after it, and
/// not a complete record (a server killed while writing it). Readers use every complete
/// line before it and report it with this; a line cut short anywhere else is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornTail {
    /// The torn line's 1-based number.
    pub line: usize,
    /// How many bytes of it the file holds (ignored).
    pub bytes: usize,
}

impl fmt::Display for TornTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: the file ends mid-record ({} bytes of an incomplete last line ignored; \
             the {} complete lines before it are used)",
            self.line,
            self.bytes,
            self.line - 1
        )
    }
}

/// Why a line could not be read.
#[derive(Debug)]
pub(crate) enum LineError {
    /// The line is longer than the limit; nothing past the limit was read.
    TooLong,
    /// Reading failed.
    Io(io::Error),
}

/// Reads one line into `buf` (without its newline), refusing to buffer more than `limit`
/// bytes. Returns whether the line ended with a newline; `buf` empty and `false` is the
/// end of the input.
pub(crate) fn read_line(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    limit: usize,
) -> Result<bool, LineError> {
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(LineError::Io(e)),
        };
        if available.is_empty() {
            return Ok(false);
        }
        let (take, ended) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at, true),
            None => (available.len(), false),
        };
        if buf.len() + take > limit {
            return Err(LineError::TooLong);
        }
        buf.extend_from_slice(&available[..take]);
        input.consume(take + usize::from(ended));
        if ended {
            return Ok(true);
        }
    }
}
