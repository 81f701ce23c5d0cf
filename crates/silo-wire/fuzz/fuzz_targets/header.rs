//! Both header decoders and the typed custom headers over arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use silo_wire::custom::{CustomHeader, PullMessageRequestHeader, SendMessageRequestHeader};
use silo_wire::{RemotingHeader, SerializeType};

fuzz_target!(|data: &[u8]| {
    for serialize in [SerializeType::Json, SerializeType::RocketMq] {
        if let Ok(header) = RemotingHeader::decode(serialize, data) {
            let _ = SendMessageRequestHeader::read_for_code(header.code, &header.ext_fields);
            let _ = PullMessageRequestHeader::read_ext_fields(&header.ext_fields);
            // Whatever decodes re-encodes (if representable) to something that decodes equal.
            let mut out = Vec::new();
            if header.encode(serialize, &mut out).is_ok() {
                assert_eq!(header.encoded_len(serialize).ok(), Some(out.len()));
                let again = RemotingHeader::decode(serialize, &out).expect("re-encoded header fails");
                assert_eq!(again.code, header.code);
                assert_eq!(again.opaque, header.opaque);
                assert_eq!(again.ext_fields.iter().collect::<Vec<_>>(), header.ext_fields.iter().collect::<Vec<_>>());
            }
        }
    }
});
