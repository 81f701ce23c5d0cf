//! The fastjson-tolerant body reader over arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use silo_wire::body::{decode_json_body, quote_bare_keys, HeartbeatData, TopicRouteData};

fuzz_target!(|data: &[u8]| {
    let _ = quote_bare_keys(data);
    let _ = decode_json_body::<TopicRouteData>(data);
    let _ = decode_json_body::<HeartbeatData>(data);
});
