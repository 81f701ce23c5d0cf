//! Receipt handles and batch-ack bodies from arbitrary bytes: a handle that parses writes back
//! to a string that parses to the same handle; a batch ack's offsets stay within its bit set.
#![no_main]

use libfuzzer_sys::fuzz_target;
use silo_wire::body::{decode_json_body, BatchAckMessageRequestBody};
use silo_wire::pop::ReceiptHandle;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(handle) = ReceiptHandle::parse(text) {
            let again = handle.to_string();
            assert_eq!(ReceiptHandle::parse(&again).as_ref(), Ok(&handle));
        }
    }
    if let Ok(body) = decode_json_body::<BatchAckMessageRequestBody>(data) {
        for ack in &body.acks {
            let bits = ack.bit_set.len().saturating_mul(8);
            assert!(ack.offsets().count() <= bits);
        }
    }
});
