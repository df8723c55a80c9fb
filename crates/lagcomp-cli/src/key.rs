//! `lagcomp key`: a fresh netcode private key, and reading one back for `serve --key-file`
//! and `bots --key-file` (secure connect tokens, see `lagcomp_udp::channel`).

use std::io::{self, Write};
use std::path::Path;

use anyhow::Context;
use lagcomp_udp::channel::{NetcodeKey, key_to_hex, new_key, parse_key};

/// Prints a fresh key as 64 hexadecimal digits and a newline.
pub(crate) fn run() -> anyhow::Result<()> {
    writeln!(io::stdout().lock(), "{}", key_to_hex(&new_key()))?;
    Ok(())
}

/// Reads the key in `path` (as `lagcomp key` writes it), if a `--key-file` was given.
pub(crate) fn read_key_file(path: Option<&Path>) -> anyhow::Result<Option<NetcodeKey>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_key(&text)
        .map(Some)
        .with_context(|| format!("the key in {}", path.display()))
}
