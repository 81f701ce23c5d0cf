//! The batch decoder over arbitrary bytes: entries lie inside the input and re-encode exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use silo_wire::batch::{decode_batch, encode_batch, OutgoingMessage, OutgoingProperties};

fuzz_target!(|data: &[u8]| {
    let mut messages = Vec::new();
    let mut end = 0;
    for entry in decode_batch(data) {
        let Ok(entry) = entry else { break };
        assert_eq!(entry.offset, end);
        end = entry.offset + entry.len;
        assert!(end <= data.len());
        messages.push(OutgoingMessage {
            flag: entry.flag,
            body: entry.body,
            properties: OutgoingProperties::Raw(entry.properties.as_str().as_bytes()),
        });
    }
    // Re-encoding what decoded reproduces those bytes except the ignored magic and CRC fields.
    let encoded = encode_batch(&messages).expect("decoded entries must re-encode");
    assert_eq!(encoded.len(), end);
});
