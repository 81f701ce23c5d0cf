//! Parse errors say where (byte offset, line and column) and what: the token found and what
//! the grammar would have taken there.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use silo_filter::{ParseErrorKind, Selector};

fn message(sql: &str) -> String {
    Selector::parse_strict(sql).unwrap_err().to_string()
}

#[test]
fn like_is_refused_by_strict_parsing_at_its_offset_and_ignored_by_compatible_parsing() {
    assert_eq!(
        message("a LIKE 'x%'"),
        "unexpected `LIKE` at offset 2 (line 1, column 3): expected an operator or the end of the selector"
    );
    assert_eq!(Selector::parse("a LIKE 'x%'").unwrap().ignored_tail(), Some(2));
}

#[test]
fn syntax_errors_name_the_token_and_what_was_expected() {
    for (sql, want) in [
        (
            "a = ",
            "unexpected end of input at offset 4 (line 1, column 5): expected a literal, a property name, `(`, `+`, `-` or NOT",
        ),
        ("a IN (1)", "unexpected `1` at offset 6 (line 1, column 7): expected a string literal"),
        ("a IN ('1' '2')", "unexpected `'2'` at offset 10 (line 1, column 11): expected `,` or `)` in the IN list"),
        ("a IS 5", "unexpected `5` at offset 5 (line 1, column 6): expected NULL or NOT NULL"),
        (
            "a NOT LIKE 'x'",
            "unexpected `LIKE` at offset 6 (line 1, column 7): expected CONTAINS, STARTSWITH, ENDSWITH, BETWEEN or IN after NOT",
        ),
        (
            "a BETWEEN 1 OR 2",
            "unexpected `OR` at offset 12 (line 1, column 13): expected AND between the BETWEEN bounds",
        ),
        ("(a = '1'", "unexpected end of input at offset 8 (line 1, column 9): expected `)`"),
        ("a != 1", "unexpected character '!' at offset 2 (line 1, column 3)"),
    ] {
        assert_eq!(message(sql), want, "{sql:?}");
    }
}

#[test]
fn positions_count_lines_and_characters() {
    let err = Selector::parse("a = 'é'\r\nAND\n  b ~ 1").unwrap_err();
    assert_eq!((err.offset, err.line, err.column), (18, 3, 5));
    assert_eq!(err.kind, ParseErrorKind::UnexpectedChar('~'));
    let err = Selector::parse("'é' = é").unwrap_err();
    assert_eq!((err.offset, err.line, err.column), (7, 1, 7));
}

#[test]
fn semantic_errors_point_at_the_operator_or_the_literal() {
    for (sql, want) in [
        (
            "a = 0.0",
            "floating-point literal `0.0` is out of range: it must be finite and above zero (as in Apache, `0.0` is refused; write `0`) at offset 4 (line 1, column 5)",
        ),
        (
            "a = 99999999999999999999",
            "integer literal `99999999999999999999` does not fit in a 64-bit signed integer at offset 4 (line 1, column 5)",
        ),
        ("a = NULL", "NULL cannot be compared with `=` or `<>` (use IS NULL) at offset 2 (line 1, column 3)"),
        (
            "a > 'x'",
            "the string 'x' cannot be compared with `>`, `>=`, `<`, `<=` or BETWEEN at offset 2 (line 1, column 3)",
        ),
        ("TRUE = 1", "a boolean literal cannot be compared with the number 1 at offset 5 (line 1, column 6)"),
        ("x = 1 AND 5", "the number 5 does not give a boolean at offset 10 (line 1, column 11)"),
        ("'3' IN ('3')", "IN needs a property name on its left at offset 4 (line 1, column 5)"),
        (
            "a BETWEEN 10 AND 2",
            "BETWEEN low bound the number 10 must be less than or equal to the high bound the number 2 at offset 2 (line 1, column 3)",
        ),
        ("a BETWEEN NULL AND 2", "BETWEEN bounds cannot be NULL at offset 2 (line 1, column 3)"),
        ("a = 'open", "string literal without its closing quote at offset 4 (line 1, column 5)"),
        ("a = /* open", "comment without its closing `*/` at offset 4 (line 1, column 5)"),
    ] {
        assert_eq!(message(sql), want, "{sql:?}");
    }
}

#[test]
fn a_long_token_is_shortened_in_the_message() {
    let sql = format!("a = '1' {}", "x".repeat(500));
    let m = message(&sql);
    assert!(m.starts_with(&format!("unexpected `{}...` at offset 8", "x".repeat(40))), "{m}");
}
