//! The record walker over arbitrary bytes: stops cleanly, and records re-encode byte for byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use silo_wire::batch::OutgoingProperties;
use silo_wire::record::{encode_record, RecordWalker};

fuzz_target!(|data: &[u8]| {
    let mut walker = RecordWalker::new(data);
    let mut start = 0;
    for rec in walker.by_ref() {
        let _ = rec.body_crc_matches();
        let _ = rec.tags_code();
        let original = &data[start..start + rec.total_size];
        let mut out = Vec::with_capacity(rec.total_size);
        encode_record(&rec.meta, rec.topic, rec.body, OutgoingProperties::Raw(rec.properties.as_str().as_bytes()), &mut out)
            .expect("decoded record must re-encode");
        // The encoder derives the IPv6 bits and the version; everything else is identical.
        if out.len() == original.len() && out[4..8] == original[4..8] && out[36..40] == original[36..40] {
            assert_eq!(&out[..], original);
        }
        start += rec.total_size;
    }
    assert_eq!(walker.position(), start);
});
