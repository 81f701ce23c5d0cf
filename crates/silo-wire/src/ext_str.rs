//! [`ExtStr`]: the string type of header fields. Short texts are kept inline, long texts
//! decoded from a frame share the frame's buffer, and names known at compile time are
//! borrowed, so that decoding a request header and building a response header allocate
//! nothing per field.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use bytes::Bytes;

/// Longest text kept inline: what fits beside the variant tag and the length in the space a
/// `Bytes` takes anyway. Numbers, IPv4 message ids and most names fit.
pub const INLINE_CAP: usize = 38;

/// An immutable UTF-8 string that is cheap to make and to clone.
#[derive(Clone)]
pub struct ExtStr(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    Inline {
        len: u8,
        buf: [u8; INLINE_CAP],
    },
    /// Valid UTF-8 (checked when made), usually a slice of a received frame.
    Shared(Bytes),
    Owned(String),
}

impl ExtStr {
    /// A text known at compile time, borrowed.
    #[must_use]
    pub const fn from_static(s: &'static str) -> Self {
        Self(Repr::Static(s))
    }

    /// Copies `s` inline when it is short, else into a new `String`.
    fn copied(s: &str) -> Self {
        Self::inline(s).unwrap_or_else(|| Self(Repr::Owned(s.to_owned())))
    }

    fn inline(s: &str) -> Option<Self> {
        let mut buf = [0u8; INLINE_CAP];
        buf.get_mut(..s.len())?.copy_from_slice(s.as_bytes());
        Some(Self(Repr::Inline { len: u8::try_from(s.len()).ok()?, buf }))
    }

    /// `text`, which lies inside `base`: kept inline when short, else as a slice sharing
    /// `base`'s memory. A `text` outside `base` is copied.
    #[must_use]
    pub fn sliced(base: &Bytes, text: &str) -> Self {
        if let Some(inline) = Self::inline(text) {
            return inline;
        }
        let start = (text.as_ptr() as usize).checked_sub(base.as_ptr() as usize);
        match start.and_then(|s| Some((s, s.checked_add(text.len())?))) {
            Some((start, end)) if end <= base.len() => Self(Repr::Shared(base.slice(start..end))),
            _ => Self::copied(text),
        }
    }

    /// A UTF-8 buffer, shared without copying; `None` if `bytes` is not UTF-8.
    #[must_use]
    pub fn from_utf8(bytes: Bytes) -> Option<Self> {
        std::str::from_utf8(&bytes).ok()?;
        Some(Self(Repr::Shared(bytes)))
    }

    /// Formats `args`, inline when the text is short.
    #[must_use]
    pub fn format(args: fmt::Arguments<'_>) -> Self {
        if let Some(s) = args.as_str() {
            return Self::copied(s);
        }
        let mut w = InlineWriter { buf: [0u8; INLINE_CAP], len: 0 };
        if fmt::Write::write_fmt(&mut w, args).is_ok()
            && let Ok(len) = u8::try_from(w.len)
        {
            return Self(Repr::Inline { len, buf: w.buf });
        }
        Self(Repr::Owned(fmt::format(args)))
    }

    /// Builds a text of at most `max_len` bytes with `f`: inline when `max_len` allows, else in
    /// one allocation. `None` if `f` fails.
    pub(crate) fn build(max_len: usize, f: impl FnOnce(&mut dyn fmt::Write) -> fmt::Result) -> Option<Self> {
        if max_len <= INLINE_CAP {
            let mut w = InlineWriter { buf: [0u8; INLINE_CAP], len: 0 };
            f(&mut w).ok()?;
            return Some(Self(Repr::Inline { len: u8::try_from(w.len).ok()?, buf: w.buf }));
        }
        let mut s = String::with_capacity(max_len);
        f(&mut s).ok()?;
        Some(Self(Repr::Owned(s)))
    }

    /// A copy that does not keep a received frame's buffer alive (for values held beyond the
    /// request, such as those of a parked pull).
    #[must_use]
    pub fn detached(&self) -> Self {
        match &self.0 {
            Repr::Shared(_) => Self::copied(self.as_str()),
            _ => self.clone(),
        }
    }

    /// The text's bytes, without the UTF-8 check [`ExtStr::as_str`] makes: what comparisons
    /// use, since a header's fields are looked up by comparing names many times per request.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Static(s) => s.as_bytes(),
            Repr::Inline { len, buf } => buf.get(..usize::from(*len)).unwrap_or_default(),
            Repr::Shared(bytes) => bytes,
            Repr::Owned(s) => s.as_bytes(),
        }
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(s) => s,
            Repr::Inline { len, buf } => {
                std::str::from_utf8(buf.get(..usize::from(*len)).unwrap_or_default()).unwrap_or_default()
            }
            Repr::Shared(bytes) => std::str::from_utf8(bytes).unwrap_or_default(),
            Repr::Owned(s) => s,
        }
    }

    #[must_use]
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Owned(s) => s,
            _ => self.as_str().to_owned(),
        }
    }
}

/// Writes into an inline buffer; fails when the text does not fit.
struct InlineWriter {
    buf: [u8; INLINE_CAP],
    len: usize,
}

impl fmt::Write for InlineWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        self.buf.get_mut(self.len..end).ok_or(fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl Default for ExtStr {
    fn default() -> Self {
        Self::from_static("")
    }
}

impl Deref for ExtStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for ExtStr {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for ExtStr {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for ExtStr {
    fn from(s: &str) -> Self {
        Self::copied(s)
    }
}

impl From<&String> for ExtStr {
    fn from(s: &String) -> Self {
        Self::copied(s)
    }
}

impl From<String> for ExtStr {
    fn from(s: String) -> Self {
        Self(Repr::Owned(s))
    }
}

impl From<ExtStr> for String {
    fn from(s: ExtStr) -> Self {
        s.into_string()
    }
}

impl PartialEq for ExtStr {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for ExtStr {}

impl PartialEq<str> for ExtStr {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for ExtStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<String> for ExtStr {
    fn eq(&self, other: &String) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<ExtStr> for str {
    fn eq(&self, other: &ExtStr) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<ExtStr> for &str {
    fn eq(&self, other: &ExtStr) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<ExtStr> for String {
    fn eq(&self, other: &ExtStr) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialOrd for ExtStr {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ExtStr {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for ExtStr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for ExtStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for ExtStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_no_more_room_than_bytes_and_a_tag() {
        assert_eq!(std::mem::size_of::<ExtStr>(), 40);
    }

    #[test]
    fn short_texts_are_inline_long_ones_share_the_base() {
        let base = Bytes::from(format!("{{\"a\":\"{}\",\"b\":\"x\"}}", "y".repeat(60)));
        let long = std::str::from_utf8(&base[6..66]).unwrap();
        let shared = ExtStr::sliced(&base, long);
        assert!(matches!(shared.0, Repr::Shared(_)));
        assert_eq!(shared.as_ptr(), long.as_ptr());
        assert_eq!(shared, "y".repeat(60));
        let short = ExtStr::sliced(&base, std::str::from_utf8(&base[73..74]).unwrap());
        assert!(matches!(short.0, Repr::Inline { .. }));
        assert_eq!(short, "x");
        let outside = "z".repeat(50);
        assert_eq!(ExtStr::sliced(&base, &outside), outside);
        assert!(matches!(shared.detached().0, Repr::Owned(_)));
    }

    #[test]
    fn format_is_inline_until_it_overflows() {
        assert_eq!(ExtStr::format(format_args!("{}", i64::MIN)), i64::MIN.to_string());
        assert!(matches!(ExtStr::format(format_args!("{}", i64::MIN)).0, Repr::Inline { .. }));
        let long = ExtStr::format(format_args!("{}{}", "a".repeat(30), "b".repeat(30)));
        assert_eq!(long, format!("{}{}", "a".repeat(30), "b".repeat(30)));
        assert_eq!(ExtStr::format(format_args!("static")), "static");
    }
}
