//! Errors of the selector parser and of the evaluator.
//!
//! A selector arrives from a consumer's heartbeat or pull request, so a bad one is an answer to
//! send back (`SUBSCRIPTION_PARSE_FAILED`) and a line to log: every parse error names the byte
//! offset (and line and column) where the problem was found, what was found there and what the
//! grammar would have accepted. Evaluation errors are the cases where Apache's evaluator throws
//! (a property that does not parse as the number it is compared with, say); the broker treats
//! them as "no match", and they carry the offset of the operator that failed so that a log line
//! can point into the selector. They are `Copy` and hold no strings: evaluating never allocates,
//! not even to fail.

use std::fmt;

/// Why a selector was refused, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// Byte offset into the selector text.
    pub offset: usize,
    /// 1-based line of `offset` (LF, CR LF and a lone CR each end a line).
    pub line: usize,
    /// 1-based column of `offset`, counted in characters.
    pub column: usize,
    /// What was wrong.
    pub kind: ParseErrorKind,
}

impl ParseError {
    pub(crate) fn new(src: &str, offset: usize, kind: ParseErrorKind) -> Self {
        let offset = offset.min(src.len());
        let (line, column) = line_and_column(src, offset);
        Self { offset, line, column, kind }
    }
}

fn line_and_column(src: &str, offset: usize) -> (usize, usize) {
    let before = src.get(..offset).unwrap_or(src);
    let mut line = 1usize;
    let mut column = 1usize;
    let mut prev_cr = false;
    for c in before.chars() {
        match c {
            '\n' if prev_cr => {}
            '\n' | '\r' => {
                line = line.saturating_add(1);
                column = 1;
            }
            _ => column = column.saturating_add(1),
        }
        prev_cr = c == '\r';
    }
    (line, column)
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = format_args!("at offset {} (line {}, column {})", self.offset, self.line, self.column);
        match &self.kind {
            ParseErrorKind::Unexpected { found, expected } => write!(f, "unexpected {found} {at}: expected {expected}"),
            ParseErrorKind::UnexpectedChar(c) => write!(f, "unexpected character {c:?} {at}"),
            kind => write!(f, "{kind} {at}"),
        }
    }
}

/// The kinds of selector the parser refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// The selector is longer than [`MAX_SELECTOR_LEN`](crate::MAX_SELECTOR_LEN) bytes.
    TooLong { len: usize, max: usize },
    /// A character that starts no token (`!`, `#`, `.` not followed by a digit, non-ASCII
    /// outside a string or comment, ...).
    UnexpectedChar(char),
    /// A `'` without its closing quote.
    UnterminatedString,
    /// A `/*` without its `*/`.
    UnterminatedComment,
    /// A token (or the end of the input) where the grammar needs something else. `found` is
    /// the token as written, in backquotes, or "end of input".
    Unexpected { found: String, expected: &'static str },
    /// A decimal literal beyond the 64-bit signed range.
    IntegerOutOfRange { literal: String },
    /// A floating-point literal that Apache refuses: infinite, or not above zero. Apache
    /// rejects every float literal below the smallest positive double, so `0.0` (and anything
    /// that rounds to zero) is refused; write `0` instead.
    FloatOutOfRange { literal: String },
    /// An operand of AND, OR or NOT, or the whole selector, that cannot give a boolean (a
    /// number or string literal, a negation). A bare property is accepted (and is false
    /// whenever the property is set).
    NotBoolean { what: String },
    /// `NULL` as an operand of `=` or `<>` (use `IS NULL`).
    NullComparison,
    /// `TRUE` or `FALSE` on the left of `=` or `<>` with a non-boolean literal on the right.
    BooleanLiteralComparison { what: String },
    /// An operand of `>`, `>=`, `<`, `<=` or BETWEEN that cannot be ordered: a string, boolean
    /// or NULL literal, or a boolean expression.
    NotOrderable { what: String },
    /// IN or NOT IN whose left side is not a property name.
    InNeedsProperty,
    /// More than [`MAX_IN_LIST_LEN`](crate::MAX_IN_LIST_LEN) strings in one IN list.
    InListTooLong { max: usize },
    /// BETWEEN with a NULL literal as a bound.
    BetweenNull,
    /// BETWEEN with literal bounds whose low bound is above its high bound, or that cannot be
    /// compared with each other.
    BetweenBounds { low: String, high: String },
    /// Parentheses, unary operators or operator chains nested deeper than
    /// [`MAX_DEPTH`](crate::MAX_DEPTH).
    TooDeep { max: usize },
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong { len, max } => write!(f, "selector of {len} bytes exceeds the limit of {max}"),
            Self::UnexpectedChar(c) => write!(f, "unexpected character {c:?}"),
            Self::UnterminatedString => f.write_str("string literal without its closing quote"),
            Self::UnterminatedComment => f.write_str("comment without its closing `*/`"),
            Self::Unexpected { found, expected } => write!(f, "unexpected {found}: expected {expected}"),
            Self::IntegerOutOfRange { literal } => {
                write!(f, "integer literal `{literal}` does not fit in a 64-bit signed integer")
            }
            Self::FloatOutOfRange { literal } => write!(
                f,
                "floating-point literal `{literal}` is out of range: it must be finite and above zero \
                 (as in Apache, `0.0` is refused; write `0`)"
            ),
            Self::NotBoolean { what } => write!(f, "{what} does not give a boolean"),
            Self::NullComparison => f.write_str("NULL cannot be compared with `=` or `<>` (use IS NULL)"),
            Self::BooleanLiteralComparison { what } => {
                write!(f, "a boolean literal cannot be compared with {what}")
            }
            Self::NotOrderable { what } => write!(f, "{what} cannot be compared with `>`, `>=`, `<`, `<=` or BETWEEN"),
            Self::InNeedsProperty => f.write_str("IN needs a property name on its left"),
            Self::InListTooLong { max } => write!(f, "IN list longer than {max} strings"),
            Self::BetweenNull => f.write_str("BETWEEN bounds cannot be NULL"),
            Self::BetweenBounds { low, high } => {
                write!(f, "BETWEEN low bound {low} must be less than or equal to the high bound {high}")
            }
            Self::TooDeep { max } => write!(f, "selector nested deeper than {max} levels"),
        }
    }
}

/// Why evaluating a selector against one message failed (Apache throws, logs and skips the
/// message; [`Selector::matches`](crate::Selector::matches) answers `false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{kind} (the operator at offset {offset})")]
pub struct EvalError {
    /// Byte offset, in the selector, of the operator whose evaluation failed.
    pub offset: usize,
    /// What failed.
    pub kind: EvalErrorKind,
}

/// The number types a string operand is converted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberKind {
    /// 32-bit signed integer (a decimal literal that fits, as `Integer.valueOf` parses it).
    Int,
    /// 64-bit signed integer (a decimal literal beyond the 32-bit range).
    Long,
    /// Double (a floating-point literal, as `Double.valueOf` parses it).
    Double,
}

impl fmt::Display for NumberKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Int => "32-bit integer",
            Self::Long => "64-bit integer",
            Self::Double => "double",
        })
    }
}

/// The ways one evaluation can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalErrorKind {
    /// A string compared with a number does not parse as that number's type.
    NotANumber(NumberKind),
    /// `>`, `>=`, `<` or `<=` between two strings, one of which is not a double.
    StringsNotOrderable,
    /// A boolean on the left of `=` compared with a string on the right (Apache fails with a
    /// cast error here, while a string on the left is read as a boolean).
    BooleanWithString,
    /// An operand of AND, OR or NOT that did not give a boolean; the parser rules this out, so
    /// it is never seen, but the evaluator reports it rather than panic.
    NotBoolean,
}

impl fmt::Display for EvalErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotANumber(kind) => write!(f, "a string does not parse as the {kind} it is compared with"),
            Self::StringsNotOrderable => {
                f.write_str("two strings compared by `>`, `>=`, `<` or `<=` are not both doubles")
            }
            Self::BooleanWithString => f.write_str("a boolean cannot be compared with a string on its right"),
            Self::NotBoolean => f.write_str("an operand of AND, OR or NOT is not a boolean"),
        }
    }
}
