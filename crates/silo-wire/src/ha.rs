//! The classic master/slave replication stream (docs/protocol.md §7), a TCP connection from the
//! slave to the master's `haListenPort`. It has two kinds of unit, one per direction, and no
//! handshake:
//!
//! * slave to master, an *offset report*: 8 bytes, the big-endian commit-log offset up to which
//!   the slave holds the master's log. It is sent on connect, after each append and as a
//!   heartbeat. The master acts only on the last complete report it has read: reports are
//!   cumulative, so the newest supersedes the rest.
//! * master to slave, a *transfer*: a 12-byte header (`phyOffset:i64`, `bodySize:i32`, big-endian)
//!   and `bodySize` bytes of commit log that start at `phyOffset`. A transfer with no body is the
//!   master's heartbeat.
//!
//! Both decoders work on what has arrived so far: `Ok(None)` asks for more bytes, an error names
//! the offset of the unit that cannot be right, and nothing is allocated (a body is a range of the
//! input).

use std::ops::Range;

use bytes::BufMut;

use crate::error::{DecodeError, DecodeErrorKind};

/// Bytes of one offset report.
pub const OFFSET_REPORT_LEN: usize = 8;

/// Bytes of a transfer header.
pub const TRANSFER_HEADER_LEN: usize = 12;

/// Writes an offset report.
pub fn encode_offset_report(offset: i64, out: &mut impl BufMut) {
    out.put_i64(offset);
}

/// The last complete offset report in `buf` and how many bytes it and the reports before it
/// take (a trailing partial report is left for the next read); `Ok(None)` if `buf` holds no
/// complete report. A negative offset is no offset a slave can hold.
pub fn last_offset_report(buf: &[u8]) -> Result<Option<(i64, usize)>, DecodeError> {
    let consumed = buf.len().saturating_sub(buf.len() % OFFSET_REPORT_LEN);
    let Some(start) = consumed.checked_sub(OFFSET_REPORT_LEN) else { return Ok(None) };
    let word: [u8; OFFSET_REPORT_LEN] = buf
        .get(start..consumed)
        .and_then(|w| w.try_into().ok())
        .ok_or_else(|| truncated(start, "offset report", OFFSET_REPORT_LEN, buf.len().saturating_sub(start)))?;
    let offset = i64::from_be_bytes(word);
    if offset < 0 {
        return Err(DecodeError::new(start, DecodeErrorKind::BadLength { field: "offset report", value: offset }));
    }
    Ok(Some((offset, consumed)))
}

/// The header of a transfer from master to slave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferHeader {
    /// Commit-log offset of the body's first byte.
    pub phy_offset: i64,
    /// Bytes of commit log that follow; 0 for a heartbeat.
    pub body_size: i32,
}

impl TransferHeader {
    /// Writes the header (the body follows it on the wire, written by the caller).
    pub fn encode(&self, out: &mut impl BufMut) {
        out.put_i64(self.phy_offset);
        out.put_i32(self.body_size);
    }
}

/// One transfer found at the start of `buf`: its header, where its body lies in `buf`, and the
/// bytes it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub header: TransferHeader,
    pub body: Range<usize>,
    pub len: usize,
}

/// Decodes the transfer at the start of `buf`, if all of it has arrived. A negative offset or
/// size, or a body larger than `max_body` (the receiver's limit, which no honest master exceeds:
/// its batches are bounded by `haTransferBatchSize` and by a commit-log file), is an error.
pub fn decode_transfer(buf: &[u8], max_body: usize) -> Result<Option<Transfer>, DecodeError> {
    let Some(head) = buf.get(..TRANSFER_HEADER_LEN) else { return Ok(None) };
    let (offset, size) = head.split_at(8);
    let phy_offset = i64::from_be_bytes(offset.try_into().map_err(|_| truncated(0, "phyOffset", 8, offset.len()))?);
    let body_size = i32::from_be_bytes(size.try_into().map_err(|_| truncated(8, "bodySize", 4, size.len()))?);
    if phy_offset < 0 {
        return Err(DecodeError::new(0, DecodeErrorKind::BadLength { field: "phyOffset", value: phy_offset }));
    }
    let body_len = usize::try_from(body_size).ok().filter(|n| *n <= max_body).ok_or_else(|| {
        DecodeError::new(8, DecodeErrorKind::BadLength { field: "bodySize", value: body_size.into() })
    })?;
    let len = TRANSFER_HEADER_LEN.saturating_add(body_len);
    if buf.len() < len {
        return Ok(None);
    }
    Ok(Some(Transfer { header: TransferHeader { phy_offset, body_size }, body: TRANSFER_HEADER_LEN..len, len }))
}

fn truncated(offset: usize, field: &'static str, needed: usize, available: usize) -> DecodeError {
    DecodeError::new(offset, DecodeErrorKind::Truncated { field, needed, available })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn the_master_acts_on_the_last_complete_report() {
        let mut buf = Vec::new();
        for offset in [0, 4096, 1 << 30] {
            encode_offset_report(offset, &mut buf);
        }
        buf.extend_from_slice(&[0, 0, 0]);
        assert_eq!(last_offset_report(&buf).unwrap(), Some((1 << 30, 24)));
        assert_eq!(last_offset_report(&buf[..7]).unwrap(), None);
        assert_eq!(last_offset_report(&buf[..8]).unwrap(), Some((0, 8)));
        let e = last_offset_report(&(-1i64).to_be_bytes()).unwrap_err();
        assert_eq!((e.offset, e.to_string().contains("offset report")), (0, true));
    }

    #[test]
    fn a_transfer_is_its_header_and_a_range_of_body() {
        let mut buf = Vec::new();
        TransferHeader { phy_offset: 1 << 30, body_size: 5 }.encode(&mut buf);
        buf.extend_from_slice(b"hello");
        TransferHeader { phy_offset: (1 << 30) + 5, body_size: 0 }.encode(&mut buf);
        let t = decode_transfer(&buf, 32 * 1024).unwrap().unwrap();
        assert_eq!(t.header, TransferHeader { phy_offset: 1 << 30, body_size: 5 });
        assert_eq!((&buf[t.body.clone()], t.len), (&b"hello"[..], 17));
        let heartbeat = decode_transfer(&buf[t.len..], 32 * 1024).unwrap().unwrap();
        assert_eq!((heartbeat.header.body_size, heartbeat.len), (0, TRANSFER_HEADER_LEN));
        // Not all there yet.
        for cut in 0..t.len {
            assert_eq!(decode_transfer(&buf[..cut], 32 * 1024).unwrap(), None, "{cut}");
        }
    }

    #[test]
    fn impossible_transfers_are_refused_where_they_start() {
        let mut neg = Vec::new();
        TransferHeader { phy_offset: -8, body_size: 0 }.encode(&mut neg);
        assert_eq!(decode_transfer(&neg, 1024).unwrap_err().offset, 0);
        let mut big = Vec::new();
        TransferHeader { phy_offset: 0, body_size: 1025 }.encode(&mut big);
        assert_eq!(decode_transfer(&big, 1024).unwrap_err().offset, 8);
        let mut negative_size = Vec::new();
        TransferHeader { phy_offset: 0, body_size: -1 }.encode(&mut negative_size);
        assert!(decode_transfer(&negative_size, 1024).is_err());
    }
}
