//! gRPC request bodies from arbitrary bytes: the first byte picks the method, the rest is
//! decoded as its frames and messages, and everything the front end parses out of them is
//! parsed. Nothing may panic; a receipt handle that parses writes back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    silo_grpc::fuzzing::decode_request(data);
});
