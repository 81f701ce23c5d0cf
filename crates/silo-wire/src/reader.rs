//! A bounds-checked big-endian cursor over untrusted bytes. All decoders read through it so
//! that a short or lying input turns into a `Truncated` error with the offset, never a panic.

use crate::error::{DecodeError, DecodeErrorKind};

#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Added to every reported offset, so errors point into the caller's whole buffer.
    base: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0, base: 0 }
    }

    pub(crate) fn with_base(buf: &'a [u8], base: usize) -> Self {
        Self { buf, pos: 0, base }
    }

    /// Absolute offset of the next byte (including the base).
    pub(crate) fn offset(&self) -> usize {
        self.base.saturating_add(self.pos)
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub(crate) fn error(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(self.offset(), kind)
    }

    pub(crate) fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n);
        match end.and_then(|end| self.buf.get(self.pos..end)) {
            Some(slice) => {
                self.pos = self.pos.saturating_add(n);
                Ok(slice)
            }
            None => Err(self.error(DecodeErrorKind::Truncated { field, needed: n, available: self.remaining() })),
        }
    }

    pub(crate) fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let slice = self.bytes(N, field)?;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        Ok(u8::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.array(field)?))
    }

    /// Reads a length field and checks it is not negative, returning it as `usize`.
    pub(crate) fn len_i32(&mut self, field: &'static str) -> Result<usize, DecodeError> {
        let at = self.offset();
        let value = self.i32(field)?;
        usize::try_from(value)
            .map_err(|_| DecodeError::new(at, DecodeErrorKind::BadLength { field, value: i64::from(value) }))
    }

    pub(crate) fn len_i16(&mut self, field: &'static str) -> Result<usize, DecodeError> {
        let at = self.offset();
        let value = self.i16(field)?;
        usize::try_from(value)
            .map_err(|_| DecodeError::new(at, DecodeErrorKind::BadLength { field, value: i64::from(value) }))
    }

    pub(crate) fn str(&mut self, n: usize, field: &'static str) -> Result<&'a str, DecodeError> {
        let at = self.offset();
        let bytes = self.bytes(n, field)?;
        std::str::from_utf8(bytes).map_err(|_| DecodeError::new(at, DecodeErrorKind::InvalidUtf8 { field }))
    }
}
