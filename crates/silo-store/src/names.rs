//! Topic and LMQ names, which become directory names: only names that cannot escape the store
//! directory are accepted.

/// LMQ names start with this prefix (`MixAll.LMQ_PREFIX`).
pub const LMQ_PREFIX: &str = "%LMQ%";
pub const RETRY_PREFIX: &str = "%RETRY%";
pub const DLQ_PREFIX: &str = "%DLQ%";
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
pub const SYSTEM_TOPIC_PREFIX: &str = "rmq_sys_";
/// Longest topic the store accepts (Java: 127 for user topics, 255 for retry/DLQ topics).
pub const MAX_TOPIC_LEN: usize = 255;

/// RocketMQ's topic rule `^[%|a-zA-Z0-9_-]+$`, at most 255 bytes. Such a name has no `/`, `\`
/// or `.`, so it can never name a path outside its parent directory.
pub fn is_valid_topic(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOPIC_LEN
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
}

pub fn is_lmq(name: &str) -> bool {
    name.starts_with(LMQ_PREFIX)
}

/// Whether multi-dispatch applies to messages of `topic` (never for retry, system or schedule
/// topics: their records are copies of messages that were already dispatched; docs/protocol.md §5.5).
pub fn topic_allows_lmq(topic: &str) -> bool {
    !(topic.starts_with(RETRY_PREFIX)
        || topic.starts_with(DLQ_PREFIX)
        || topic.starts_with(SYSTEM_TOPIC_PREFIX)
        || topic == SCHEDULE_TOPIC
        || is_lmq(topic))
}

/// Delay levels `1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h` in milliseconds.
pub const DELAY_LEVELS_MS: [i64; 18] = [
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000, 480_000, 540_000,
    600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
];

/// Delivery delay of a level (clamped to 1..=18, as Java does).
pub fn delay_for_level(level: i64) -> i64 {
    let index = level.clamp(1, DELAY_LEVELS_MS.len() as i64) - 1;
    DELAY_LEVELS_MS.get(index as usize).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_escape_the_directory_are_invalid() {
        for bad in ["", "../x", "a/b", "a\\b", ".", "..", "x.y", "%LMQ%a/../../etc", "tab\t", "ü"] {
            assert!(!is_valid_topic(bad), "{bad:?}");
        }
        for good in ["TopicTest", "%RETRY%g", "%LMQ%room-1", "a|b", "x_y-z"] {
            assert!(is_valid_topic(good), "{good:?}");
        }
        assert!(!is_valid_topic(&"a".repeat(256)));
    }

    #[test]
    fn lmq_is_not_applied_to_copies() {
        assert!(topic_allows_lmq("Orders"));
        for t in ["%RETRY%g", "%DLQ%g", "rmq_sys_trace", SCHEDULE_TOPIC, "%LMQ%x"] {
            assert!(!topic_allows_lmq(t), "{t}");
        }
        assert_eq!(delay_for_level(3), 10_000);
        assert_eq!(delay_for_level(99), 7_200_000);
    }
}
