//! The incremental frame decoder over arbitrary bytes, fed in two chunks: it must never panic,
//! must agree with the slice decoder, and an encoded frame must decode back to itself.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use silo_wire::frame::{decode_frame, encode_frame, FrameDecoder};

const MAX: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(0, |b| usize::from(*b)).min(data.len());
    let decoder = FrameDecoder::new(MAX);
    let mut buf = BytesMut::from(&data[..split]);
    let mut frames = Vec::new();
    let mut fed_rest = false;
    loop {
        match decoder.decode(&mut buf) {
            Ok(Some(frame)) => frames.push(frame),
            Ok(None) if !fed_rest => {
                buf.extend_from_slice(&data[split..]);
                fed_rest = true;
            }
            Ok(None) | Err(_) => break,
        }
    }
    // The slice decoder sees the same first frame.
    if let Some(first) = frames.first() {
        let by_slice = decode_frame(data, MAX).expect("slice decoder disagrees").expect("complete");
        assert_eq!(by_slice.header, first.header);
        assert_eq!(by_slice.body, &first.body[..]);
        // Re-encoding a decoded frame gives a frame that decodes to the same header and body.
        let mut out = Vec::new();
        if encode_frame(&first.header, first.serialize, &first.body, &mut out).is_ok() {
            let again = decode_frame(&out, MAX).expect("re-encoded frame fails").expect("complete");
            assert_eq!(again.header, first.header);
            assert_eq!(again.body, &first.body[..]);
        }
    }
});
