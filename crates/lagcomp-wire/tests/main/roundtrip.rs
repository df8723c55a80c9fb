//! Property tests: every valid message comes back bit for bit, and every cut or padded
//! copy of one is an error.

use crate::common;
use lagcomp_wire::{ClientMessage, DecodeError, ServerMessage};
use proptest::prelude::*;

/// Decodes `bytes` with `decode`, checks the result equals `message` and encodes back to
/// the very same bytes (so every float's bits survived), then checks every strict prefix
/// and a padded copy fail.
fn check_round_trip<M: PartialEq + std::fmt::Debug>(
    message: &M,
    bytes: &[u8],
    decode: impl Fn(&[u8]) -> Result<M, DecodeError>,
    encode: impl Fn(&M, &mut Vec<u8>),
) -> Result<(), TestCaseError> {
    let decoded = decode(bytes).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    prop_assert_eq!(&decoded, message);
    let mut again = Vec::new();
    encode(&decoded, &mut again);
    prop_assert_eq!(again.as_slice(), bytes, "re-encoding changed bits");
    for len in 0..bytes.len() {
        prop_assert!(
            decode(&bytes[..len]).is_err(),
            "a {len}-byte prefix of {} decoded",
            bytes.len()
        );
    }
    let mut padded = bytes.to_vec();
    padded.push(0);
    prop_assert_eq!(
        decode(&padded),
        Err(DecodeError::TrailingBytes {
            offset: bytes.len(),
            extra: 1
        })
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn client_messages_round_trip_bit_for_bit(message in common::client_message()) {
        let mut bytes = Vec::new();
        message.encode(&mut bytes).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        check_round_trip(&message, &bytes, ClientMessage::decode, |m, out| {
            m.encode(out).expect("a decoded message encodes");
        })?;
        // A client message is not a server message.
        prop_assert!(
            matches!(
                ServerMessage::decode(&bytes),
                Err(DecodeError::WrongDirection { .. })
            ),
            "a client message decoded as a server message"
        );
    }

    #[test]
    fn server_messages_round_trip_bit_for_bit(message in common::server_message()) {
        let mut bytes = Vec::new();
        message.encode(&mut bytes).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        check_round_trip(&message, &bytes, ServerMessage::decode, |m, out| {
            m.encode(out).expect("a decoded message encodes");
        })?;
        prop_assert!(
            matches!(
                ClientMessage::decode(&bytes),
                Err(DecodeError::WrongDirection { .. })
            ),
            "a server message decoded as a client message"
        );
    }

    #[test]
    fn a_reused_buffer_holds_only_the_latest_message(
        first in common::server_message(),
        second in common::server_message(),
    ) {
        let mut fresh = Vec::new();
        second.encode(&mut fresh).expect("valid");
        let mut reused = Vec::new();
        first.encode(&mut reused).expect("valid");
        second.encode(&mut reused).expect("valid");
        prop_assert_eq!(reused, fresh);
    }
}
