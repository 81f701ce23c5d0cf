//! `silo-filter`: Apache RocketMQ's SQL92 message selectors (a subset of JMS selectors), for
//! consumers that subscribe with expression type `SQL92`.
//!
//! A selector is parsed once per subscription ([`Selector::parse`]) and then evaluated against
//! the properties of every message the consumer might receive ([`Selector::matches`]). Parsing
//! treats its input as untrusted (typed errors with offsets, bounded length, depth and lists,
//! no panics); evaluation allocates nothing, reading properties through the [`Properties`]
//! trait, for example straight from the stored properties text with [`PropertiesStr`].
//!
//! ```
//! use silo_filter::{PropertiesStr, Selector};
//!
//! let selector = Selector::parse("region IN ('eu', 'us') AND a > 5").unwrap();
//! assert!(selector.matches(&PropertiesStr::new("region\u{1}eu\u{2}a\u{1}7\u{2}")));
//! assert!(!selector.matches(&[("region", "eu")])); // `a` missing: the AND is null
//! ```
//!
//! # The language
//!
//! What Apache RocketMQ 5.3.3's broker accepts, and what it means there.
//!
//! **Tokens.** Blanks are space, tab, CR, LF and form feed. `-- text` up to a line end and
//! `/* text */` are comments (a `--` with no line end after it is two minus signs). Keywords
//! are `NOT AND OR BETWEEN IN TRUE FALSE NULL IS CONTAINS STARTSWITH ENDSWITH`, in any case.
//! A property name is `[A-Za-z_$][A-Za-z0-9_$]*` and is looked up exactly as written (case
//! matters; names with `.` or `-` cannot be written). Literals:
//!
//! * integers `0` or `[1-9][0-9]*`, optionally suffixed `l`/`L`: a 32-bit int when the value
//!   fits, otherwise a 64-bit long (so `5L` is an int too); beyond 64 bits is a parse error;
//! * floats `1.5`, `1.`, `.5`, `1e5`, `1.5E-3`: doubles, which must be finite and **above
//!   zero** — Apache refuses any float literal below the smallest positive double, so `0.0`
//!   is a parse error (write `0`);
//! * strings `'it''s'` (two quotes for one);
//! * `TRUE`, `FALSE`, `NULL`.
//!
//! There are no negative literals: `-5` is unary minus applied to `5`.
//!
//! **Grammar**, loosest first: `OR`; `AND`; equality `=`, `<>`, `IS [NOT] NULL`; comparison
//! `> >= < <=`, `[NOT] BETWEEN x AND y`, `[NOT] IN ('s', ...)`, `[NOT] CONTAINS 's'`,
//! `[NOT] STARTSWITH 's'`, `[NOT] ENDSWITH 's'`; unary `+ - NOT`; and operands (literal,
//! property, parenthesised expression). Binary operators group to the left. There is no
//! `LIKE`, no arithmetic and no function. Because NOT is a unary operator, it binds tighter
//! than comparisons: `NOT a = 1` means `(NOT a) = 1`; write `NOT (a = 1)`.
//!
//! **Checks at parse time** (each a [`ParseError`]): the selector and the operands of AND, OR
//! and NOT must be boolean (a comparison, TRUE/FALSE/NULL, or a bare property); `NULL` cannot
//! be an operand of `=` or `<>`; `TRUE = 1` (a boolean literal left of a non-boolean literal)
//! is refused; string, boolean and NULL literals and boolean expressions cannot be ordered with
//! `> >= < <=` or BETWEEN; IN needs a property on its left and only string literals in its
//! list; BETWEEN with two literal bounds needs low <= high (NOT BETWEEN and negated bounds
//! such as `-5` are not checked, as in Apache).
//!
//! **Values.** Properties are strings; a missing one is null.
//!
//! * A bare property used as a boolean is null when missing and **false** when present,
//!   whatever its value (so `a` never matches, and `NOT a` matches when `a` is set).
//! * Comparing a string with a number parses the string as that number's type: `a = 1`
//!   reads `a` as a 32-bit int, so `'1.0'` or `'3000000000'` is an evaluation error; `a = 1.0`
//!   reads it as a double. `> >= < <=` between two strings compare them as doubles, and an
//!   error if either does not parse. A string compared with TRUE/FALSE reads `'true'` (any case)
//!   as true and anything else as false; a boolean expression on the left of `=` with a string
//!   on the right is an evaluation error. Int with long compares as long, with double as
//!   double; a boolean is never equal to a number.
//! * Null: `=` is null when its left side alone is null, false when its right side alone is,
//!   and **true when both are** (`a = b` with both missing holds); `IS NULL` is true exactly when
//!   the operand is null; `> >= < <=`, BETWEEN, IN and unary minus give null on a null operand;
//!   `CONTAINS`, `STARTSWITH`, `ENDSWITH` and their NOT forms give **false** (not null) on a
//!   missing or non-string operand or an empty search string.
//! * AND, OR and NOT are three-valued: AND is false if an operand is false, else null if one is
//!   null, else true; OR the same with true; NOT null is null. Operands are evaluated left to
//!   right and stop at the first decisive one.
//! * A message matches only when the result is true: false, null and evaluation errors (which
//!   Apache logs) are all "no match". [`Selector::evaluate`] tells them apart.
//!
//! **Trailing text.** Apache's parser stops at the first token that cannot continue the
//! expression and ignores the rest: `a = 1 b = 2` is accepted as `a = 1`, and so is
//! `a LIKE 'x'` (as the bare property `a`, which never matches). [`Selector::parse`] does the
//! same, for compatibility, and reports where the ignored text starts in
//! [`Selector::ignored_tail`]; [`Selector::parse_strict`] refuses it. A token that can
//! continue (an operator such as `NOT`, `IS`, `AND`) must be followed correctly, and the first
//! ignored token must still be a valid token.
//!
//! # Differences from Apache
//!
//! * Limits Apache does not have: [`MAX_SELECTOR_LEN`] bytes of text, [`MAX_DEPTH`] levels of
//!   nesting (parentheses, unary operators, and the depth of the tree, which only chains such
//!   as `a = 1 = TRUE = ...` reach; AND and OR chains of any length are fine), and
//!   [`MAX_IN_LIST_LEN`] strings per IN list.
//! * Strings parsed as numbers accept ASCII digits only (Java also takes other Unicode decimal
//!   digits) and no hexadecimal floating-point form (`0x1p3`); both are evaluation errors
//!   here where Java would compare a number.
//!
//! Nothing else is known to differ; `tests/java_golden_vectors.rs` checks a table of cases
//! against outcomes recorded from Apache's own parser and evaluator.

#![forbid(unsafe_code)]

mod ast;
pub mod error;
mod eval;
mod lexer;
mod parser;
pub mod properties;
mod value;

pub use error::{EvalError, EvalErrorKind, NumberKind, ParseError, ParseErrorKind};
pub use properties::{Properties, PropertiesStr};

/// Longest selector accepted, in bytes (64 KiB). Apache has no limit of its own; this one keeps
/// a subscription's memory and parse time small and leaves room for long IN lists.
pub const MAX_SELECTOR_LEN: usize = 64 * 1024;

/// Deepest nesting accepted: parentheses and unary operators open at once, and the depth of
/// the parsed tree. Keeps parsing and evaluation far from the end of a thread's stack.
pub const MAX_DEPTH: usize = 64;

/// Most strings in one IN list.
pub const MAX_IN_LIST_LEN: usize = 10_000;

/// A parsed selector, ready to be evaluated against any number of messages.
///
/// Two selectors are equal when they parse to the same expression, whatever their blanks,
/// comments, keyword case or ignored tail.
#[derive(Debug, Clone)]
pub struct Selector {
    root: ast::Expr,
    tail: Option<usize>,
}

impl PartialEq for Selector {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl Selector {
    /// Parses a selector as Apache's broker does, ignoring text after a complete expression
    /// (see [`ignored_tail`](Self::ignored_tail)).
    pub fn parse(sql: &str) -> Result<Self, ParseError> {
        Self::parse_with(sql, false)
    }

    /// Parses a selector that must consist of one expression and nothing else.
    pub fn parse_strict(sql: &str) -> Result<Self, ParseError> {
        Self::parse_with(sql, true)
    }

    fn parse_with(sql: &str, strict: bool) -> Result<Self, ParseError> {
        if sql.len() > MAX_SELECTOR_LEN {
            return Err(ParseError::new(sql, 0, ParseErrorKind::TooLong { len: sql.len(), max: MAX_SELECTOR_LEN }));
        }
        let parsed = parser::Parser::new(sql).selector(strict)?;
        Ok(Self { root: parsed.root, tail: parsed.tail })
    }

    /// Byte offset of the first token that [`parse`](Self::parse) ignored, if it ignored any:
    /// worth a warning in the broker's log, since the consumer probably meant something else.
    #[must_use]
    pub fn ignored_tail(&self) -> Option<usize> {
        self.tail
    }

    /// The selector's value for one message: `Some(true)` or `Some(false)`, `None` for null,
    /// or the error Apache would have thrown.
    pub fn evaluate<P: Properties + ?Sized>(&self, properties: &P) -> Result<Option<bool>, EvalError> {
        match self.root.eval(properties)? {
            value::Val::Bool(b) => Ok(Some(b)),
            value::Val::Null => Ok(None),
            _ => Err(EvalError { offset: 0, kind: EvalErrorKind::NotBoolean }),
        }
    }

    /// Whether a message with these properties is delivered: only a true result matches.
    pub fn matches<P: Properties + ?Sized>(&self, properties: &P) -> bool {
        matches!(self.evaluate(properties), Ok(Some(true)))
    }
}
