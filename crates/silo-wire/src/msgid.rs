//! Message ids (docs/protocol.md §3.7).
//!
//! The *offset* message id is what the broker returns as `msgId`: the uppercase hex of the store
//! host's address, its port and the commit-log offset. It is how `VIEW_MESSAGE_BY_ID` finds a
//! record. The *unique* id (`UNIQ_KEY`) is made by producers; the broker only indexes it, but
//! generates one for messages that arrive without it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::BufMut;

use crate::error::{DecodeError, DecodeErrorKind};

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// An id rendered into a fixed buffer, so that making one allocates nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MsgIdBuf {
    buf: [u8; 56],
    len: u8,
}

impl MsgIdBuf {
    fn from_raw(raw: &[u8]) -> Self {
        let mut buf = [0u8; 56];
        let mut len = 0u8;
        for (byte, pair) in raw.iter().zip(buf.chunks_exact_mut(2)) {
            if let [hi, lo] = pair {
                *hi = HEX_UPPER.get(usize::from(byte >> 4)).copied().unwrap_or(b'0');
                *lo = HEX_UPPER.get(usize::from(byte & 0xF)).copied().unwrap_or(b'0');
                len = len.saturating_add(2);
            }
        }
        Self { buf, len }
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        let bytes = self.buf.get(..usize::from(self.len)).unwrap_or_default();
        // Only ASCII hex digits are ever written.
        std::str::from_utf8(bytes).unwrap_or_default()
    }
}

impl std::fmt::Debug for MsgIdBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for MsgIdBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The offset message id of the record at `commit_log_offset` stored by `store_host`.
#[must_use]
pub fn offset_msg_id(store_host: SocketAddr, commit_log_offset: i64) -> MsgIdBuf {
    let mut raw = [0u8; 28];
    let len = {
        let mut out: &mut [u8] = &mut raw[..];
        match store_host.ip() {
            IpAddr::V4(ip) => out.put_slice(&ip.octets()),
            IpAddr::V6(ip) => out.put_slice(&ip.octets()),
        }
        out.put_i32(i32::from(store_host.port()));
        out.put_i64(commit_log_offset);
        28usize.saturating_sub(out.len())
    };
    MsgIdBuf::from_raw(raw.get(..len).unwrap_or_default())
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c.wrapping_sub(b'0')),
        b'a'..=b'f' => Some(c.wrapping_sub(b'a').wrapping_add(10)),
        b'A'..=b'F' => Some(c.wrapping_sub(b'A').wrapping_add(10)),
        _ => None,
    }
}

/// Splits an offset message id into the store host and the commit-log offset. 32 hex digits
/// mean IPv4, 56 mean IPv6, as in the Java client.
pub fn parse_offset_msg_id(id: &str) -> Result<(SocketAddr, i64), DecodeError> {
    let text = id.as_bytes();
    let mut raw = [0u8; 28];
    let n = match text.len() {
        32 => 16,
        56 => 28,
        _ => return Err(DecodeError::new(0, DecodeErrorKind::BadHex)),
    };
    for (i, (slot, pair)) in raw.iter_mut().zip(text.chunks_exact(2)).enumerate() {
        let digits = match pair {
            [hi, lo] => hex_digit(*hi).zip(hex_digit(*lo)),
            _ => None,
        };
        let (hi, lo) = digits.ok_or(DecodeError::new(i.saturating_mul(2), DecodeErrorKind::BadHex))?;
        *slot = (hi << 4) | lo;
    }
    let bad = || DecodeError::new(0, DecodeErrorKind::BadHex);
    let (ip, rest): (IpAddr, &[u8]) = if n == 16 {
        let (ip, rest) = raw.split_first_chunk::<4>().ok_or_else(bad)?;
        (IpAddr::V4(Ipv4Addr::from(*ip)), rest)
    } else {
        let (ip, rest) = raw.split_first_chunk::<16>().ok_or_else(bad)?;
        (IpAddr::V6(Ipv6Addr::from(*ip)), rest)
    };
    let (port, rest) = rest.split_first_chunk::<4>().ok_or_else(bad)?;
    let (offset, _) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
    let port = u16::try_from(i32::from_be_bytes(*port)).map_err(|_| bad())?;
    Ok((SocketAddr::new(ip, port), i64::from_be_bytes(*offset)))
}

/// Parts of a client unique id (`UNIQ_KEY`), docs/protocol.md §3.7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniqIdParts {
    /// The producer's IPv4 address (IPv6 clients use 16 bytes; Silo's own client uses IPv4).
    pub ip: [u8; 4],
    /// Low 16 bits of the process id.
    pub pid: u16,
    /// Java's class-loader hash; any per-process random value serves.
    pub instance_hash: i32,
    /// Milliseconds since the start of the current month.
    pub ms_since_month_start: i32,
    /// Per-message counter.
    pub counter: u16,
}

/// Renders a 32-hex-digit unique id.
#[must_use]
pub fn uniq_id(parts: UniqIdParts) -> MsgIdBuf {
    let mut raw = [0u8; 16];
    {
        let mut out: &mut [u8] = &mut raw[..];
        out.put_slice(&parts.ip);
        out.put_u16(parts.pid);
        out.put_i32(parts.instance_hash);
        out.put_i32(parts.ms_since_month_start);
        out.put_u16(parts.counter);
    }
    MsgIdBuf::from_raw(&raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_id_round_trips_for_v4_and_v6() {
        for host in ["10.0.0.7:10911", "[2001:db8::1]:10911"] {
            let host: SocketAddr = host.parse().unwrap();
            let id = offset_msg_id(host, 123_456_789);
            assert_eq!(parse_offset_msg_id(id.as_str()).unwrap(), (host, 123_456_789));
        }
        let id = offset_msg_id("10.0.0.7:10911".parse().unwrap(), 0);
        assert_eq!(id.as_str(), "0A00000700002A9F0000000000000000");
    }

    #[test]
    fn rejects_bad_ids() {
        assert!(parse_offset_msg_id("").is_err());
        assert!(parse_offset_msg_id("0A00000700002A9F000000000000000G").is_err());
        assert!(parse_offset_msg_id("0A00000700FFFFFF0000000000000000").is_err());
    }
}
