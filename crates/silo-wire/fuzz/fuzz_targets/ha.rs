//! The replication stream's decoders over arbitrary bytes, read as a slave or a master reads
//! them: transfers lie inside the input and re-encode exactly; an offset report is the last
//! complete 8-byte word.
#![no_main]

use libfuzzer_sys::fuzz_target;
use silo_wire::ha::{decode_transfer, last_offset_report, TRANSFER_HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    while let Ok(Some(t)) = decode_transfer(&data[at..], 64 * 1024) {
        assert!(t.len >= TRANSFER_HEADER_LEN && at + t.len <= data.len());
        assert_eq!(t.body.len(), t.header.body_size as usize);
        let mut again = Vec::new();
        t.header.encode(&mut again);
        assert_eq!(&again[..], &data[at..at + TRANSFER_HEADER_LEN]);
        at += t.len;
    }
    if let Ok(Some((offset, consumed))) = last_offset_report(data) {
        assert!(offset >= 0 && consumed <= data.len() && consumed % 8 == 0);
        assert_eq!(&data[consumed - 8..consumed], &offset.to_be_bytes());
    }
});
