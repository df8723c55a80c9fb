//! The byte-level reader and writer every message is built from, and the header.
//!
//! Hand-written little-endian rather than serde + bincode: floats travel as their exact
//! bits (the client must draw the very poses the server recorded, and `-0.0` stays
//! `-0.0`), every count is checked against a hard cap and against the bytes left before
//! anything is allocated, and encoding appends to a buffer the caller keeps, so a server
//! in steady state allocates nothing here. With one encoding per message (strict flags,
//! no padding) a decoded message re-encodes to the same bytes, which the fuzz targets
//! check.

use glam::{Quat, Vec3};

use crate::error::{DecodeError, Direction, EncodeError};
use crate::{MAGIC, MAX_MESSAGE_BYTES, OLDEST_READ_VERSION, PROTOCOL_VERSION};

/// Bytes of the header every message starts with: magic, version, kind.
pub(crate) const HEADER_BYTES: usize = 5;

/// Message kinds. Client messages have the top bit clear, server messages set, so a
/// message sent the wrong way is named as such.
pub(crate) mod kind {
    pub(crate) const INPUT: u8 = 0x01;
    pub(crate) const WELCOME: u8 = 0x81;
    pub(crate) const SNAPSHOT: u8 = 0x82;
    pub(crate) const PONG: u8 = 0x83;
    pub(crate) const PROBE: u8 = 0x84;
    pub(crate) const SHOT_ACK: u8 = 0x85;
    pub(crate) const VERDICTS: u8 = 0x86;

    pub(crate) const CLIENT: [u8; 1] = [INPUT];
    pub(crate) const SERVER: [u8; 6] = [WELCOME, SNAPSHOT, PONG, PROBE, SHOT_ACK, VERDICTS];
}

/// Reads fields off a message front to back; every read checks the bytes left.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
    /// The message's protocol version, from its header (what fields it has).
    version: u16,
}

impl<'a> Reader<'a> {
    /// Checks the length cap and the header; returns the reader past the header and the
    /// message kind, which must belong to `direction`.
    pub(crate) fn open(bytes: &'a [u8], direction: Direction) -> Result<(Self, u8), DecodeError> {
        if bytes.len() > MAX_MESSAGE_BYTES {
            return Err(DecodeError::TooLong {
                len: bytes.len(),
                max: MAX_MESSAGE_BYTES,
            });
        }
        let mut reader = Self {
            bytes,
            offset: 0,
            version: PROTOCOL_VERSION,
        };
        let magic: [u8; 2] = reader.array("header.magic")?;
        if magic != MAGIC {
            return Err(DecodeError::BadMagic { found: magic });
        }
        let version = reader.u16("header.version")?;
        if !(OLDEST_READ_VERSION..=PROTOCOL_VERSION).contains(&version) {
            return Err(DecodeError::UnsupportedVersion {
                found: version,
                expected: PROTOCOL_VERSION,
            });
        }
        reader.version = version;
        let kind = reader.u8("header.kind")?;
        let (mine, theirs): (&[u8], &[u8]) = match direction {
            Direction::ToServer => (&kind::CLIENT, &kind::SERVER),
            Direction::ToClient => (&kind::SERVER, &kind::CLIENT),
        };
        if theirs.contains(&kind) {
            return Err(DecodeError::WrongDirection {
                kind,
                expected: direction,
            });
        }
        if !mine.contains(&kind) {
            return Err(DecodeError::UnknownKind { kind });
        }
        Ok((reader, kind))
    }

    /// The message's protocol version.
    pub(crate) fn version(&self) -> u16 {
        self.version
    }

    /// Where the next read starts.
    pub(crate) fn offset(&self) -> usize {
        self.offset
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.offset
    }

    /// The end of the message: anything left is an error.
    pub(crate) fn finish(self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            extra => Err(DecodeError::TrailingBytes {
                offset: self.offset,
                extra,
            }),
        }
    }

    pub(crate) fn array<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], DecodeError> {
        let available = self.remaining();
        let bytes = self
            .bytes
            .get(self.offset..)
            .and_then(|rest| rest.first_chunk::<N>())
            .ok_or(DecodeError::Truncated {
                offset: self.offset,
                field,
                needed: N,
                available,
            })?;
        self.offset += N;
        Ok(*bytes)
    }

    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        self.array::<1>(field).map(|[b]| b)
    }

    pub(crate) fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        self.array(field).map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        self.array(field).map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        self.array(field).map(u64::from_le_bytes)
    }

    /// A flags byte whose bits must all lie within `known`.
    pub(crate) fn flags(&mut self, field: &'static str, known: u8) -> Result<u8, DecodeError> {
        let offset = self.offset;
        let bits = self.u8(field)?;
        if bits & !known != 0 {
            return Err(DecodeError::BadFlags {
                offset,
                field,
                bits,
            });
        }
        Ok(bits)
    }

    pub(crate) fn f32(&mut self, field: &'static str) -> Result<f32, DecodeError> {
        let offset = self.offset;
        let value = f32::from_le_bytes(self.array(field)?);
        if value.is_finite() {
            Ok(value)
        } else {
            Err(DecodeError::NonFinite { offset, field })
        }
    }

    pub(crate) fn f64(&mut self, field: &'static str) -> Result<f64, DecodeError> {
        let offset = self.offset;
        let value = f64::from_le_bytes(self.array(field)?);
        if value.is_finite() {
            Ok(value)
        } else {
            Err(DecodeError::NonFinite { offset, field })
        }
    }

    pub(crate) fn vec3(&mut self, field: &'static str) -> Result<Vec3, DecodeError> {
        Ok(Vec3::new(
            self.f32(field)?,
            self.f32(field)?,
            self.f32(field)?,
        ))
    }

    pub(crate) fn quat(&mut self, field: &'static str) -> Result<Quat, DecodeError> {
        Ok(Quat::from_xyzw(
            self.f32(field)?,
            self.f32(field)?,
            self.f32(field)?,
            self.f32(field)?,
        ))
    }

    /// Reads a one-byte count (`count_field`) of items of at least `min_item_bytes` each
    /// and checks it under `field` ([`Self::check_count`]).
    pub(crate) fn count_u8(
        &mut self,
        count_field: &'static str,
        field: &'static str,
        cap: usize,
        min_item_bytes: usize,
    ) -> Result<usize, DecodeError> {
        let offset = self.offset();
        let count = usize::from(self.u8(count_field)?);
        self.check_count(offset, field, count, cap, min_item_bytes)
    }

    /// [`Self::count_u8`] for a two-byte count.
    pub(crate) fn count_u16(
        &mut self,
        count_field: &'static str,
        field: &'static str,
        cap: usize,
        min_item_bytes: usize,
    ) -> Result<usize, DecodeError> {
        let offset = self.offset();
        let count = usize::from(self.u16(count_field)?);
        self.check_count(offset, field, count, cap, min_item_bytes)
    }

    /// Checks a count already read at `offset` against its cap and against what the
    /// bytes left can hold at `min_item_bytes` each, so a lying count allocates nothing.
    fn check_count(
        &self,
        offset: usize,
        field: &'static str,
        count: usize,
        cap: usize,
        min_item_bytes: usize,
    ) -> Result<usize, DecodeError> {
        let fits = self.remaining() / min_item_bytes.max(1);
        let max = cap.min(fits);
        if count > max {
            return Err(DecodeError::TooMany {
                offset,
                field,
                count,
                max,
            });
        }
        Ok(count)
    }
}

/// Appends fields to a caller's buffer; refuses numbers the reader would refuse.
pub(crate) struct Writer<'a> {
    out: &'a mut Vec<u8>,
    /// Where this message starts in `out`.
    start: usize,
}

impl<'a> Writer<'a> {
    /// Writes the header of a message of `kind` after whatever `out` holds.
    pub(crate) fn append(out: &'a mut Vec<u8>, kind: u8) -> Self {
        let start = out.len();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        out.push(kind);
        Self { out, start }
    }

    /// Appends fields after whatever `out` holds, with no header (pieces of a message
    /// encoded ahead of it).
    pub(crate) fn continue_at(out: &'a mut Vec<u8>) -> Self {
        let start = out.len();
        Self { out, start }
    }

    /// Appends bytes already encoded.
    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// Checks the length cap.
    pub(crate) fn finish(&self) -> Result<(), EncodeError> {
        let len = self.out.len() - self.start;
        if len > MAX_MESSAGE_BYTES {
            return Err(EncodeError::TooLong {
                len,
                max: MAX_MESSAGE_BYTES,
            });
        }
        Ok(())
    }

    pub(crate) fn u8(&mut self, value: u8) {
        self.out.push(value);
    }

    pub(crate) fn u16(&mut self, value: u16) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn u32(&mut self, value: u32) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, value: u64) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn f32(&mut self, value: f32, field: &'static str) -> Result<(), EncodeError> {
        if !value.is_finite() {
            return Err(EncodeError::NonFinite { field });
        }
        self.out.extend_from_slice(&value.to_le_bytes());
        Ok(())
    }

    pub(crate) fn f64(&mut self, value: f64, field: &'static str) -> Result<(), EncodeError> {
        if !value.is_finite() {
            return Err(EncodeError::NonFinite { field });
        }
        self.out.extend_from_slice(&value.to_le_bytes());
        Ok(())
    }

    pub(crate) fn vec3(&mut self, value: Vec3, field: &'static str) -> Result<(), EncodeError> {
        for v in value.to_array() {
            self.f32(v, field)?;
        }
        Ok(())
    }

    pub(crate) fn quat(&mut self, value: Quat, field: &'static str) -> Result<(), EncodeError> {
        for v in value.to_array() {
            self.f32(v, field)?;
        }
        Ok(())
    }
}

/// Runs `write` on a cleared buffer; on error leaves the buffer empty, so a half-written
/// message is never sent by mistake.
pub(crate) fn encode_into(
    out: &mut Vec<u8>,
    kind: u8,
    write: impl FnOnce(&mut Writer<'_>) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    out.clear();
    let mut writer = Writer::append(out, kind);
    let result = write(&mut writer).and_then(|()| writer.finish());
    if result.is_err() {
        out.clear();
    }
    result
}
