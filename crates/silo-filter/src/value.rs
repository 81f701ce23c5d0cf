//! Runtime values and the comparison rules between them, as Apache's evaluator applies them.
//!
//! A value is null, a boolean, a 32-bit int, a 64-bit long, a double or a borrowed string (a
//! literal of the selector or a property of the message): `Copy`, on the stack, never
//! allocated. Mixed comparisons convert the way Apache's `ComparisonExpression` does with
//! string conversion switched on (which its parser always does):
//!
//! * int with long compares as long; int or long with double compares as double;
//! * a string with a number is parsed as that number's type (`Integer.valueOf`,
//!   `Long.valueOf`, `Double.valueOf`), and a string that does not parse is an error;
//! * a string with a boolean reads the string as a boolean (`"true"`, any case, is true);
//!   a boolean on the left with a string on the right is an error (a cast bug in Apache);
//! * a boolean with a number is "less" (so never equal), with no error;
//! * doubles order as `Double.compareTo`: NaN above everything and equal to itself, -0.0
//!   below 0.0.
//!
//! The parsers take `&str` and never allocate: ASCII digits for the integers (Java would
//! also accept other Unicode decimal digits), and for doubles Java's syntax minus its
//! hexadecimal form (`0x1p3`): surrounding characters up to U+0020 trimmed, an optional
//! sign, `NaN`, `Infinity`, or a decimal with an optional exponent and `f`/`F`/`d`/`D` suffix.

use std::cmp::Ordering;

use crate::error::{EvalErrorKind, NumberKind};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Val<'a> {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(&'a str),
}

/// `Integer.valueOf(String)` for ASCII digits: optional sign, at least one digit, in range.
pub(crate) fn parse_int(s: &str) -> Option<i32> {
    s.parse().ok()
}

/// `Long.valueOf(String)` for ASCII digits.
pub(crate) fn parse_long(s: &str) -> Option<i64> {
    s.parse().ok()
}

/// `Double.valueOf(String)` without the hexadecimal form.
pub(crate) fn parse_double(s: &str) -> Option<f64> {
    let s = s.trim_matches(|c: char| c <= ' ');
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..)?),
        Some(b'+') => (false, s.get(1..)?),
        _ => (false, s),
    };
    let magnitude = match body {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            // Rust's parser also takes `inf` and `nan` in any case, which Java does not:
            // insist on a digit or a point first.
            if !matches!(body.as_bytes().first(), Some(b'0'..=b'9' | b'.')) {
                return None;
            }
            let digits = match body.as_bytes().last() {
                Some(b'f' | b'F' | b'd' | b'D') => body.get(..body.len().saturating_sub(1))?,
                _ => body,
            };
            digits.parse::<f64>().ok()?
        }
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// `Double.compare`: NaN (any NaN) is above every other value and equal to itself; -0.0 is
/// below 0.0.
pub(crate) fn compare_doubles(a: f64, b: f64) -> Ordering {
    if a < b {
        return Ordering::Less;
    }
    if a > b {
        return Ordering::Greater;
    }
    let bits = |d: f64| if d.is_nan() { 0x7ff8_0000_0000_0000_i64 } else { d.to_bits().cast_signed() };
    bits(a).cmp(&bits(b))
}

fn string_as(kind: NumberKind, s: &str) -> Result<Val<'_>, EvalErrorKind> {
    let parsed = match kind {
        NumberKind::Int => parse_int(s).map(Val::Int),
        NumberKind::Long => parse_long(s).map(Val::Long),
        NumberKind::Double => parse_double(s).map(Val::Double),
    };
    parsed.ok_or(EvalErrorKind::NotANumber(kind))
}

fn number_kind(v: Val<'_>) -> Option<NumberKind> {
    match v {
        Val::Int(_) => Some(NumberKind::Int),
        Val::Long(_) => Some(NumberKind::Long),
        Val::Double(_) => Some(NumberKind::Double),
        _ => None,
    }
}

fn as_double(v: Val<'_>) -> f64 {
    match v {
        Val::Int(i) => f64::from(i),
        #[allow(clippy::cast_precision_loss)] // as Java's `longValue` to `doubleValue`
        Val::Long(l) => l as f64,
        Val::Double(d) => d,
        _ => f64::NAN,
    }
}

/// Apache's `__compare` with string conversion on. Pairs it cannot relate (a boolean with a
/// number, anything with null) are "less", as there.
pub(crate) fn compare(l: Val<'_>, r: Val<'_>) -> Result<Ordering, EvalErrorKind> {
    Ok(match (l, r) {
        (Val::Int(a), Val::Int(b)) => a.cmp(&b),
        (Val::Long(a), Val::Long(b)) => a.cmp(&b),
        (Val::Int(a), Val::Long(b)) => i64::from(a).cmp(&b),
        (Val::Long(a), Val::Int(b)) => a.cmp(&i64::from(b)),
        (Val::Double(_), Val::Int(_) | Val::Long(_) | Val::Double(_))
        | (Val::Int(_) | Val::Long(_), Val::Double(_)) => compare_doubles(as_double(l), as_double(r)),
        (Val::Bool(a), Val::Bool(b)) => a.cmp(&b),
        (Val::Str(a), Val::Str(b)) => a.cmp(b),
        (Val::Bool(_), Val::Str(_)) => return Err(EvalErrorKind::BooleanWithString),
        (Val::Str(s), Val::Bool(b)) => s.eq_ignore_ascii_case("true").cmp(&b),
        (Val::Str(s), n) => match number_kind(n) {
            Some(kind) => return compare(string_as(kind, s)?, n),
            None => Ordering::Less,
        },
        (n, Val::Str(s)) => match number_kind(n) {
            Some(kind) => return compare(n, string_as(kind, s)?),
            None => Ordering::Less,
        },
        _ => Ordering::Less,
    })
}

/// `=` as Apache evaluates it: null only when the left side alone is null; both null is true.
pub(crate) fn equal<'a>(l: Val<'a>, r: Val<'a>) -> Result<Val<'a>, EvalErrorKind> {
    Ok(match (l, r) {
        (Val::Null, Val::Null) => Val::Bool(true),
        (Val::Null, _) => Val::Null,
        (_, Val::Null) => Val::Bool(false),
        _ => Val::Bool(compare(l, r)? == Ordering::Equal),
    })
}

/// The four orderings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    Gt,
    Ge,
    Lt,
    Le,
}

/// `>` and friends: null if either side is null; two strings compare as doubles.
pub(crate) fn order<'a>(op: Order, l: Val<'a>, r: Val<'a>) -> Result<Val<'a>, EvalErrorKind> {
    if matches!(l, Val::Null) || matches!(r, Val::Null) {
        return Ok(Val::Null);
    }
    let ord = match (l, r) {
        (Val::Str(a), Val::Str(b)) => match (parse_double(a), parse_double(b)) {
            (Some(a), Some(b)) => compare_doubles(a, b),
            _ => return Err(EvalErrorKind::StringsNotOrderable),
        },
        _ => compare(l, r)?,
    };
    Ok(Val::Bool(match op {
        Order::Gt => ord == Ordering::Greater,
        Order::Ge => ord != Ordering::Less,
        Order::Lt => ord == Ordering::Less,
        Order::Le => ord != Ordering::Greater,
    }))
}
