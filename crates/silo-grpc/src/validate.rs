//! The names and values every RPC checks first, with the codes and messages Apache's proxy
//! answers them with.

use crate::frontend::status;
use crate::proto::{Code, Status};

/// Longest topic name (the proxy's limit, stricter than the broker's 255).
pub const MAX_TOPIC_LEN: usize = 127;
/// Longest consumer group name.
pub const MAX_GROUP_LEN: usize = 255;

/// Topics a client may not name.
const SYSTEM_TOPICS: [&str; 10] = [
    "TBW102",
    "SCHEDULE_TOPIC_XXXX",
    "BenchmarkTest",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "CHECKPOINT_TOPIC",
];

fn legal_chars(name: &str) -> bool {
    name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
}

pub fn topic(name: &str) -> Result<(), Status> {
    let bad = |m: String| Err(status(Code::IllegalTopic, m));
    if name.trim().is_empty() {
        return bad("The specified topic is blank".into());
    }
    if name.len() > MAX_TOPIC_LEN {
        return bad(format!("The specified topic is longer than topic max length {MAX_TOPIC_LEN}."));
    }
    if !legal_chars(name) {
        return bad(format!(
            "The specified topic[{name}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    if SYSTEM_TOPICS.contains(&name) || name.starts_with("rmq_sys_") {
        return bad("cannot access system topic".into());
    }
    Ok(())
}

pub fn group(name: &str) -> Result<(), Status> {
    let bad = |m: String| Err(status(Code::IllegalConsumerGroup, m));
    if name.trim().is_empty() {
        return bad("the specified group is blank".into());
    }
    if name.len() > MAX_GROUP_LEN {
        return bad(format!("the specified group is longer than group max length {MAX_GROUP_LEN}."));
    }
    if !legal_chars(name) {
        return bad(format!(
            "the specified group[{name}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    if name.starts_with("CID_RMQ_SYS_") {
        return bad("cannot use system consumer group".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_as_the_proxy_checks_them() {
        assert!(topic("Orders-1_%x|y").is_ok());
        for bad in ["", " ", "a b", "TBW102", "rmq_sys_x", &"t".repeat(128)] {
            assert_eq!(topic(bad).map_err(|s| s.code), Err(Code::IllegalTopic as i32), "{bad:?}");
        }
        assert!(group("g-1").is_ok());
        for bad in ["", "g/1", "CID_RMQ_SYS_X", &"g".repeat(256)] {
            assert_eq!(group(bad).map_err(|s| s.code), Err(Code::IllegalConsumerGroup as i32), "{bad:?}");
        }
    }
}
