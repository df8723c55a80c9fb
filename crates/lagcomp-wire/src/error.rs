//! What can go wrong turning bytes into messages and messages into bytes.
//!
//! Decode errors say what was wrong and where: the byte offset into the message and the
//! field being read, named as a path (`input.shots.claim.origin`). Encode errors mean the
//! message would not decode on the other side (a NaN, too many shots, too big), so nothing
//! is sent.

/// Why bytes were not a message. Every variant is a malformed (or foreign) message: count
/// it with a [`crate::MalformedGuard`] and drop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The message is longer than any valid message ([`crate::MAX_MESSAGE_BYTES`]); it was
    /// not looked at.
    #[error("message of {len} bytes is over the {max}-byte limit")]
    TooLong {
        /// The message's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The message ends inside a field.
    #[error("truncated at byte {offset}: {field} needs {needed} bytes, {available} left")]
    Truncated {
        /// Where the field starts.
        offset: usize,
        /// The field.
        field: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left.
        available: usize,
    },
    /// The first two bytes are not [`crate::MAGIC`]: not a lagcomp message at all.
    #[error("bad magic {found:02x?}: not a lagcomp wire message")]
    BadMagic {
        /// The two bytes found.
        found: [u8; 2],
    },
    /// A lagcomp message of another protocol version.
    #[error("protocol version {found}, this build speaks version {expected}")]
    UnsupportedVersion {
        /// The version in the header.
        found: u16,
        /// [`crate::PROTOCOL_VERSION`].
        expected: u16,
    },
    /// A message kind no direction defines.
    #[error("unknown message kind {kind:#04x}")]
    UnknownKind {
        /// The kind byte.
        kind: u8,
    },
    /// A message that only flows the other way (a server message given to the server's
    /// decoder, or a client message to the client's).
    #[error("message kind {kind:#04x} is not a {expected} message")]
    WrongDirection {
        /// The kind byte.
        kind: u8,
        /// Which direction's decoder it was given to.
        expected: Direction,
    },
    /// A float is NaN or infinite.
    #[error("non-finite number at byte {offset} in {field}")]
    NonFinite {
        /// Where the number starts.
        offset: usize,
        /// The field.
        field: &'static str,
    },
    /// A flags byte has bits this version does not define, or a combination it forbids.
    #[error("flags {bits:#010b} at byte {offset} in {field} are not valid")]
    BadFlags {
        /// Where the byte is.
        offset: usize,
        /// The field.
        field: &'static str,
        /// The byte.
        bits: u8,
    },
    /// A tag (which variant follows) this version does not define.
    #[error("unknown tag {tag} at byte {offset} in {field}")]
    UnknownTag {
        /// Where the tag is.
        offset: usize,
        /// The field.
        field: &'static str,
        /// The tag.
        tag: u8,
    },
    /// A count over its cap, or more items than the bytes left could hold.
    #[error("{count} {field} at byte {offset}: at most {max} allowed here")]
    TooMany {
        /// Where the count is.
        offset: usize,
        /// What is counted.
        field: &'static str,
        /// The count read.
        count: usize,
        /// The most this message could hold (the cap, or what the bytes left fit).
        max: usize,
    },
    /// A snapshot part numbered outside its count (or a count of zero).
    #[error("snapshot part {part} of {parts} at byte {offset}")]
    BadPart {
        /// Where the part number is.
        offset: usize,
        /// The part's index.
        part: u8,
        /// The number of parts.
        parts: u8,
    },
    /// A shot result's rejection code that no [`lagcomp_validate::RejectReason`] has, or
    /// refusal code that no [`lagcomp_validate::Refusal`] has.
    #[error("unknown rejection code {code} at byte {offset}")]
    UnknownRejectCode {
        /// Where the code is.
        offset: usize,
        /// The code.
        code: u16,
    },
    /// A value the receiver's types refuse (a swept blade of no size, pellets named out
    /// of order or past the count fired).
    #[error("invalid {field} at byte {offset}: {reason}")]
    Invalid {
        /// Byte offset of the field.
        offset: usize,
        /// Which field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A value the encoder never writes this way (so every message has one encoding).
    #[error("non-canonical {field} at byte {offset}")]
    NonCanonical {
        /// Where the value is.
        offset: usize,
        /// The field.
        field: &'static str,
    },
    /// Bytes after the end of the message.
    #[error("{extra} trailing bytes after the message ends at byte {offset}")]
    TrailingBytes {
        /// Where the message ended.
        offset: usize,
        /// Bytes left over.
        extra: usize,
    },
}

impl DecodeError {
    /// The byte offset the error was found at, when it has one.
    #[must_use]
    pub fn offset(&self) -> Option<usize> {
        match *self {
            Self::TooLong { .. }
            | Self::BadMagic { .. }
            | Self::UnsupportedVersion { .. }
            | Self::UnknownKind { .. }
            | Self::WrongDirection { .. } => None,
            Self::Truncated { offset, .. }
            | Self::NonFinite { offset, .. }
            | Self::BadFlags { offset, .. }
            | Self::UnknownTag { offset, .. }
            | Self::TooMany { offset, .. }
            | Self::BadPart { offset, .. }
            | Self::UnknownRejectCode { offset, .. }
            | Self::Invalid { offset, .. }
            | Self::NonCanonical { offset, .. }
            | Self::TrailingBytes { offset, .. } => Some(offset),
        }
    }

    /// Whether the sender speaks another protocol (or none): every later message from it
    /// will fail the same way, so a server may disconnect it at once instead of counting.
    #[must_use]
    pub fn is_incompatible(&self) -> bool {
        matches!(
            self,
            Self::BadMagic { .. } | Self::UnsupportedVersion { .. }
        )
    }
}

/// Which way a message flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to server.
    ToServer,
    /// Server to client.
    ToClient,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ToServer => "client-to-server",
            Self::ToClient => "server-to-client",
        })
    }
}

/// Why a message was not encoded: it would not decode on the other side. The output
/// buffer is left empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A value the receiver would refuse (pellets past the most a shot fires).
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// Which field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A float is NaN or infinite.
    #[error("non-finite number in {field}")]
    NonFinite {
        /// The field.
        field: &'static str,
    },
    /// More items than the protocol allows.
    #[error("{count} {field}: at most {max} allowed")]
    TooMany {
        /// What is counted.
        field: &'static str,
        /// How many there were.
        count: usize,
        /// The cap.
        max: usize,
    },
    /// The encoded message would be over [`crate::MAX_MESSAGE_BYTES`].
    #[error("message of {len} bytes is over the {max}-byte limit")]
    TooLong {
        /// The message's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A snapshot part numbered outside its count (or a count of zero).
    #[error("snapshot part {part} of {parts}")]
    BadPart {
        /// The part's index.
        part: u8,
        /// The number of parts.
        parts: u8,
    },
    /// A rejection reason this protocol version has no code for (a reason added to
    /// `lagcomp-validate` after this version: add it to `RejectReason::ALL`).
    #[error(
        "rejection code {code} is unknown to protocol version {}",
        crate::PROTOCOL_VERSION
    )]
    UnknownRejectReason {
        /// The reason's code.
        code: u16,
    },
    /// A view names an entity the encoded snapshot does not hold.
    #[error("entity {index} of a snapshot of {len}")]
    UnknownEntity {
        /// The index asked for.
        index: usize,
        /// Entities encoded.
        len: usize,
    },
    /// A snapshot part budget outside what a part can be.
    #[error("snapshot part budget of {budget} bytes is outside {min}..={max}")]
    Budget {
        /// The budget asked for.
        budget: usize,
        /// The smallest budget (a part header and one empty entity).
        min: usize,
        /// [`crate::MAX_MESSAGE_BYTES`].
        max: usize,
    },
}
