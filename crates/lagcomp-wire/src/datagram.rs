//! Several messages in one transport payload: the framing `lagcomp serve` sends a client's
//! whole tick in, beside renet rather than through it.
//!
//! Renet packs each of its channels into packets of its own, and every packet becomes a
//! datagram: a snapshot part, a client's verdicts and renet's acknowledgement of its
//! inputs went as up to three. A server with 200 clients spends most of a tick per
//! datagram (encryption, the kernel's send path), and renet's packing of a message that
//! goes unreliably every tick and is never resent buys nothing. So the server writes the
//! tick's messages for a client, and any packet renet has for it, as records of one
//! datagram, and the client hands each record to its decoder or to renet.
//!
//! Layout (little-endian): a tag byte, [`DATAGRAM_TAG`], which no renet packet starts with
//! (renet 2's packet types are 0 to 4; `lagcomp-udp` tests that renet refuses the tag),
//! then one or more records, each:
//!
//! | field | type | notes |
//! | --- | --- | --- |
//! | kind | `u8` | 0: a wire message (`ServerMessage`), 1: a renet packet |
//! | length | `u16` | at least 1 |
//! | bytes | `length` bytes | |
//!
//! A record's length is checked against the bytes left, unknown kinds and empty records
//! are refused, and a datagram without records is refused, so every datagram has one
//! encoding. Decoding borrows: it allocates nothing.

use crate::error::DecodeError;

/// The first byte of a datagram of records. Renet 2's packets start with their type, 0 to
/// 4; a transport that sees this byte knows the payload is not renet's.
pub const DATAGRAM_TAG: u8 = 0xA5;

/// Bytes before each record's own: kind and length.
pub const RECORD_HEADER_BYTES: usize = 3;

const KIND_MESSAGE: u8 = 0;
const KIND_TRANSPORT: u8 = 1;

/// One record of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatagramRecord<'a> {
    /// A wire message, for [`crate::ServerMessage::decode`].
    Message(&'a [u8]),
    /// A packet of the transport's own (renet's), for it to process.
    Transport(&'a [u8]),
}

impl<'a> DatagramRecord<'a> {
    fn bytes(self) -> &'a [u8] {
        match self {
            Self::Message(bytes) | Self::Transport(bytes) => bytes,
        }
    }

    fn kind(self) -> u8 {
        match self {
            Self::Message(_) => KIND_MESSAGE,
            Self::Transport(_) => KIND_TRANSPORT,
        }
    }
}

/// Whether a transport payload is a datagram of records (rather than a renet packet).
#[must_use]
pub fn is_datagram(payload: &[u8]) -> bool {
    payload.first() == Some(&DATAGRAM_TAG)
}

/// The records of a datagram, in order. The iterator ends after the first error (what
/// came before it is still good).
#[must_use]
pub fn records(payload: &[u8]) -> Records<'_> {
    Records {
        bytes: payload,
        offset: 0,
        done: false,
    }
}

/// Iterator over a datagram's records (see [`records`]).
#[derive(Debug, Clone)]
pub struct Records<'a> {
    bytes: &'a [u8],
    offset: usize,
    done: bool,
}

impl<'a> Records<'a> {
    fn next_record(&mut self) -> Result<Option<DatagramRecord<'a>>, DecodeError> {
        if self.offset == 0 {
            match self.bytes.first() {
                Some(&DATAGRAM_TAG) => self.offset = 1,
                Some(&tag) => {
                    return Err(DecodeError::UnknownTag {
                        offset: 0,
                        field: "datagram.tag",
                        tag,
                    });
                }
                None => {
                    return Err(DecodeError::Truncated {
                        offset: 0,
                        field: "datagram.tag",
                        needed: 1,
                        available: 0,
                    });
                }
            }
            if self.bytes.len() == 1 {
                return Err(DecodeError::NonCanonical {
                    offset: 1,
                    field: "datagram.records",
                });
            }
        }
        let rest = &self.bytes[self.offset..];
        if rest.is_empty() {
            return Ok(None);
        }
        let Some(&[kind, lo, hi]) = rest.first_chunk::<RECORD_HEADER_BYTES>() else {
            return Err(DecodeError::Truncated {
                offset: self.offset,
                field: "datagram.record.header",
                needed: RECORD_HEADER_BYTES,
                available: rest.len(),
            });
        };
        let len = usize::from(u16::from_le_bytes([lo, hi]));
        let body = &rest[RECORD_HEADER_BYTES..];
        if len == 0 {
            return Err(DecodeError::NonCanonical {
                offset: self.offset + 1,
                field: "datagram.record.length",
            });
        }
        let Some(bytes) = body.get(..len) else {
            return Err(DecodeError::Truncated {
                offset: self.offset + RECORD_HEADER_BYTES,
                field: "datagram.record.bytes",
                needed: len,
                available: body.len(),
            });
        };
        let record = match kind {
            KIND_MESSAGE => DatagramRecord::Message(bytes),
            KIND_TRANSPORT => DatagramRecord::Transport(bytes),
            tag => {
                return Err(DecodeError::UnknownTag {
                    offset: self.offset,
                    field: "datagram.record.kind",
                    tag,
                });
            }
        };
        self.offset += RECORD_HEADER_BYTES + len;
        Ok(Some(record))
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<DatagramRecord<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_record().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

/// Builds one datagram of records up to a size limit, in a buffer it keeps (so a server
/// in steady state allocates nothing for it).
#[derive(Debug, Clone)]
pub struct DatagramWriter {
    bytes: Vec<u8>,
    limit: usize,
}

impl DatagramWriter {
    /// A writer of datagrams of at most `limit` bytes (the transport's largest payload).
    #[must_use]
    pub fn new(limit: usize) -> Self {
        Self {
            bytes: vec![DATAGRAM_TAG],
            limit,
        }
    }

    /// Starts the next datagram.
    pub fn clear(&mut self) {
        self.bytes.truncate(1);
    }

    /// Whether no record was added since the last [`Self::clear`].
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bytes.len() == 1
    }

    /// Adds a record; `false` (and nothing added) if it is empty, longer than a record can
    /// be, or would take the datagram past its limit.
    pub fn push(&mut self, record: DatagramRecord<'_>) -> bool {
        let bytes = record.bytes();
        let Ok(len) = u16::try_from(bytes.len()) else {
            return false;
        };
        if len == 0 || self.bytes.len() + RECORD_HEADER_BYTES + bytes.len() > self.limit {
            return false;
        }
        self.bytes.push(record.kind());
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(bytes);
        true
    }

    /// The datagram so far (the tag alone while empty: not a datagram to send).
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(payload: &[u8]) -> Result<Vec<DatagramRecord<'_>>, DecodeError> {
        records(payload).collect()
    }

    fn sample() -> Vec<u8> {
        let mut writer = DatagramWriter::new(1300);
        assert!(writer.push(DatagramRecord::Message(b"LW\x04\x00\x85\x01\x00\x00\x00")));
        assert!(writer.push(DatagramRecord::Transport(&[4, 1, 2, 3])));
        assert!(writer.push(DatagramRecord::Message(&[7; 300])));
        writer.as_bytes().to_vec()
    }

    #[test]
    fn records_come_back_as_written() {
        let bytes = sample();
        assert!(is_datagram(&bytes));
        let records = decoded(&bytes).expect("valid");
        assert_eq!(
            records,
            [
                DatagramRecord::Message(b"LW\x04\x00\x85\x01\x00\x00\x00"),
                DatagramRecord::Transport(&[4, 1, 2, 3]),
                DatagramRecord::Message(&[7; 300]),
            ]
        );
        assert_eq!(bytes.len(), 1 + 3 * RECORD_HEADER_BYTES + 9 + 4 + 300);
    }

    #[test]
    fn the_writer_keeps_to_its_limit() {
        let mut writer = DatagramWriter::new(20);
        assert!(writer.is_empty());
        assert!(
            !writer.push(DatagramRecord::Message(&[])),
            "an empty record"
        );
        assert!(
            !writer.push(DatagramRecord::Message(&[1; 17])),
            "1 + 3 + 17 > 20"
        );
        assert!(writer.push(DatagramRecord::Message(&[1; 16])));
        assert_eq!(writer.as_bytes().len(), 20);
        assert!(!writer.push(DatagramRecord::Transport(&[1])));
        writer.clear();
        assert!(writer.is_empty());
        assert_eq!(writer.as_bytes(), [DATAGRAM_TAG]);
        let mut big = DatagramWriter::new(usize::MAX);
        assert!(
            !big.push(DatagramRecord::Message(&vec![0; 65_536])),
            "over u16"
        );
        assert!(big.push(DatagramRecord::Message(&vec![0; 65_535])));
    }

    #[test]
    fn malformed_datagrams_are_refused_where_they_go_wrong() {
        assert!(matches!(
            decoded(&[]),
            Err(DecodeError::Truncated { offset: 0, .. })
        ));
        assert!(matches!(
            decoded(&[4, 0, 0]),
            Err(DecodeError::UnknownTag {
                offset: 0,
                tag: 4,
                ..
            })
        ));
        assert!(matches!(
            decoded(&[DATAGRAM_TAG]),
            Err(DecodeError::NonCanonical { offset: 1, .. })
        ));
        assert!(matches!(
            decoded(&[DATAGRAM_TAG, 0, 1]),
            Err(DecodeError::Truncated {
                offset: 1,
                needed: 3,
                available: 2,
                ..
            })
        ));
        assert!(matches!(
            decoded(&[DATAGRAM_TAG, 0, 0, 0]),
            Err(DecodeError::NonCanonical { offset: 2, .. })
        ));
        assert!(matches!(
            decoded(&[DATAGRAM_TAG, 2, 1, 0, 9]),
            Err(DecodeError::UnknownTag {
                offset: 1,
                tag: 2,
                ..
            })
        ));
        assert!(matches!(
            decoded(&[DATAGRAM_TAG, 0, 5, 0, 1, 2]),
            Err(DecodeError::Truncated {
                offset: 4,
                needed: 5,
                available: 2,
                ..
            })
        ));
        // The records before a bad one are still handed out, then the error, then nothing.
        let mut bytes = sample();
        bytes.push(9);
        let mut iter = records(&bytes);
        assert_eq!(iter.by_ref().take(3).filter(Result::is_ok).count(), 3);
        assert!(matches!(iter.next(), Some(Err(_))));
        assert_eq!(iter.next(), None);
    }

    /// Every single-byte change and every cut of a valid datagram either decodes to
    /// records that re-encode to exactly those bytes, or is an error; none panics.
    #[test]
    fn every_mutation_decodes_to_itself_or_fails() {
        let original = sample();
        let check = |bytes: &[u8]| {
            if let Ok(records) = decoded(bytes) {
                let mut writer = DatagramWriter::new(usize::MAX);
                for record in &records {
                    assert!(writer.push(*record));
                }
                assert_eq!(writer.as_bytes(), bytes);
            }
        };
        let records = decoded(&original).expect("valid");
        // The tag, and each record's kind and length: a change there is never read as
        // the same records.
        let framing = [0, 1, 2, 3, 13, 14, 15, 20, 21, 22];
        for at in 0..original.len() {
            for value in [0, 1, 2, 4, 0x7f, 0x80, DATAGRAM_TAG, 0xff] {
                let mut bytes = original.clone();
                bytes[at] = value;
                check(&bytes);
                if framing.contains(&at) && value != original[at] {
                    assert_ne!(decoded(&bytes).ok(), Some(records.clone()), "byte {at}");
                }
            }
            // A cut is an error but at a record's end (13 and 20).
            check(&original[..at]);
            assert_eq!(
                decoded(&original[..at]).is_ok(),
                at == 13 || at == 20,
                "cut {at}"
            );
        }
    }
}
