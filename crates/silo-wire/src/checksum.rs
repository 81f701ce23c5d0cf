//! Body CRC (docs/protocol.md §3.8) and tag hash code (docs/protocol.md §3.9).

/// `java.util.zip.CRC32` of `data`, masked to a non-negative `i32` as RocketMQ stores it.
#[must_use]
pub fn body_crc(data: &[u8]) -> i32 {
    // The mask clears the sign bit, so the value always fits an i32.
    i32::try_from(crc32fast::hash(data) & 0x7FFF_FFFF).unwrap_or(0)
}

/// Java `String.hashCode()` of `s`: `h = 31*h + c` over UTF-16 code units with wrap-around.
#[must_use]
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(i32::from(unit)))
}

/// The tags code stored in a consume-queue unit: the Java hash of the tag string sign-extended to
/// 64 bits; 0 when the message has no tag.
#[must_use]
pub fn tags_code(tags: Option<&str>) -> i64 {
    match tags {
        Some(t) if !t.is_empty() => i64::from(java_string_hash(t)),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_from_the_spec() {
        assert_eq!(body_crc(b"hello"), 907_060_870);
        assert_eq!(tags_code(Some("TagA")), 2_598_919);
        assert_eq!(tags_code(None), 0);
        // A surrogate pair hashes as two UTF-16 units, like Java.
        assert_eq!(java_string_hash("\u{1F680}"), 0xD83D * 31 + 0xDE80);
    }
}
