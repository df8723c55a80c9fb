//! The client's decoder: whatever bytes a server (or anyone spoofing one) sends, decoding
//! returns (never panics), and a message that decodes encodes back to exactly the same
//! bytes and decodes again to itself.

#![no_main]

use lagcomp_wire::ServerMessage;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(message) = ServerMessage::decode(data) else {
        return;
    };
    let mut bytes = Vec::new();
    message
        .encode(&mut bytes)
        .expect("a decoded message encodes");
    assert_eq!(bytes, data, "re-encoding changed the bytes of {message:?}");
    assert_eq!(ServerMessage::decode(&bytes).as_ref(), Ok(&message));
});
