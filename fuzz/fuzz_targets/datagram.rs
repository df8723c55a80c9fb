//! The client's reading of a datagram of records (`lagcomp_wire::datagram`), as a client
//! of `lagcomp serve` takes apart what arrives: never panics; records that decode are
//! written back to exactly the input bytes; each message record goes through the
//! server-message decoder, which must not panic either.

#![no_main]

use lagcomp_wire::ServerMessage;
use lagcomp_wire::datagram::{DatagramWriter, DatagramRecord, records};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut writer = DatagramWriter::new(usize::MAX);
    let mut whole = true;
    for record in records(data) {
        match record {
            Ok(record) => {
                assert!(writer.push(record), "a decoded record is written back");
                if let DatagramRecord::Message(bytes) = record {
                    let _ = ServerMessage::decode(bytes);
                }
            }
            Err(_) => whole = false,
        }
    }
    if whole {
        assert_eq!(writer.as_bytes(), data, "re-encoding changed the datagram");
    }
});
