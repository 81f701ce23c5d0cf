//! Where the evaluator reads message properties: the [`Properties`] trait, and
//! [`PropertiesStr`], a lookup straight over RocketMQ's stored properties text.
//!
//! Values are always strings (Apache's broker hands its evaluator the decoded properties map).
//! A lookup returns a borrowed `&str`, so that the broker can answer from the stored bytes of a
//! message without building a map per message.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

/// A message's properties, as the evaluator sees them: a name gives a string or nothing.
pub trait Properties {
    /// The value of property `name` (case-sensitive), or `None` when the message has none.
    fn get(&self, name: &str) -> Option<&str>;
}

impl<T: Properties + ?Sized> Properties for &T {
    fn get(&self, name: &str) -> Option<&str> {
        (**self).get(name)
    }
}

impl<S: BuildHasher> Properties for HashMap<String, String, S> {
    fn get(&self, name: &str) -> Option<&str> {
        HashMap::get(self, name).map(String::as_str)
    }
}

impl<S: BuildHasher> Properties for HashMap<&str, &str, S> {
    fn get(&self, name: &str) -> Option<&str> {
        HashMap::get(self, name).copied()
    }
}

impl Properties for BTreeMap<String, String> {
    fn get(&self, name: &str) -> Option<&str> {
        BTreeMap::get(self, name).map(String::as_str)
    }
}

impl Properties for BTreeMap<&str, &str> {
    fn get(&self, name: &str) -> Option<&str> {
        BTreeMap::get(self, name).copied()
    }
}

/// Pairs in order; when a name occurs twice the last one wins, as when Java fills its map.
impl Properties for [(&str, &str)] {
    fn get(&self, name: &str) -> Option<&str> {
        self.iter().rev().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }
}

impl<const N: usize> Properties for [(&str, &str); N] {
    fn get(&self, name: &str) -> Option<&str> {
        Properties::get(self.as_slice(), name)
    }
}

impl Properties for Vec<(&str, &str)> {
    fn get(&self, name: &str) -> Option<&str> {
        Properties::get(self.as_slice(), name)
    }
}

/// Separates a name from its value in the stored properties text.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Ends a name/value pair (optional after the last one).
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// The stored properties text, `name \u{1} value \u{2} ...`, read in place.
///
/// The reader rules are those of Apache's decoder: a pair without `\u{1}`, or with an empty
/// name or value, is skipped; the first `\u{1}` splits name from value; the last occurrence of
/// a name wins. A lookup scans the text and allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PropertiesStr<'a> {
    raw: &'a str,
}

impl<'a> PropertiesStr<'a> {
    /// Wraps properties text (for example a stored record's, already checked to be UTF-8).
    #[must_use]
    pub fn new(raw: &'a str) -> Self {
        Self { raw }
    }

    /// The value of `name`, borrowed from the text.
    #[must_use]
    pub fn lookup(&self, name: &str) -> Option<&'a str> {
        let mut found = None;
        for pair in self.raw.split(PROPERTY_SEPARATOR) {
            if let Some((key, value)) = pair.split_once(NAME_VALUE_SEPARATOR)
                && key == name
                && !key.is_empty()
                && !value.is_empty()
            {
                found = Some(value);
            }
        }
        found
    }
}

impl Properties for PropertiesStr<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.lookup(name)
    }
}
