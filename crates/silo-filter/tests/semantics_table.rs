//! The language as a table: grammar, precedence and semantics, one small case per row, with
//! the quirks of Apache's implementation spelled out (each also checked against Apache itself
//! in `java_golden_vectors.rs`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use silo_filter::{EvalErrorKind, NumberKind, Selector};

#[derive(Debug, PartialEq)]
enum Out {
    T,
    F,
    Null,
    Fails,
    Refused,
}
use Out::*;

fn outcome(selector: &str, props: &[(&str, &str)]) -> Out {
    match Selector::parse(selector) {
        Err(_) => Refused,
        Ok(s) => match s.evaluate(props) {
            Ok(Some(true)) => T,
            Ok(Some(false)) => F,
            Ok(None) => Null,
            Err(_) => Fails,
        },
    }
}

/// A selector, the message's properties, and the outcome.
type Row<'a> = (&'a str, &'a [(&'a str, &'a str)], Out);

fn table(rows: &[Row<'_>]) {
    let bad: Vec<String> = rows
        .iter()
        .filter_map(|(sel, props, want)| {
            let got = outcome(sel, props);
            (got != *want).then(|| format!("{sel:?} with {props:?}: want {want:?}, got {got:?}"))
        })
        .collect();
    assert!(bad.is_empty(), "\n{}", bad.join("\n"));
}

#[test]
fn the_float_literal_zero_is_refused_as_in_apache_but_the_integer_zero_is_fine() {
    table(&[
        ("a = 0.0", &[("a", "0")], Refused),
        ("a = .0", &[], Refused),
        ("a = 0e7", &[], Refused),
        ("a = 1e-400", &[], Refused), // rounds to zero
        ("a = 1e309", &[], Refused),  // infinite
        ("a = 0", &[("a", "0")], T),
        ("a > 4.9e-324", &[("a", "1")], T),
        ("a = -0", &[("a", "0")], T),
    ]);
}

#[test]
fn integer_literals_are_ints_when_they_fit_and_strings_are_read_as_that_type() {
    table(&[
        ("a = 1", &[("a", "1")], T),
        ("a = 1", &[("a", "+1")], T),
        ("a = 1", &[("a", "1.0")], Fails), // read as a 32-bit int
        ("a = 1.0", &[("a", "1")], T),     // read as a double
        ("a = 1", &[("a", "3000000000")], Fails),
        ("a = 1L", &[("a", "3000000000")], Fails), // the suffix does not make it a long
        ("a = 3000000000", &[("a", "3000000000")], T),
        ("a > 5", &[("a", "5.5")], Fails),
        ("a > 5.0", &[("a", "5.5")], T),
        ("a = 1", &[("a", " 1")], Fails),  // no trimming for integers
        ("a = 1.0", &[("a", " 1.0 ")], T), // but Double.valueOf trims
        ("a = 1.0", &[("a", "1.0f")], T),  // and takes a type suffix
        ("a > 1.0", &[("a", "Infinity")], T),
        ("a > 1.0", &[("a", "inf")], Fails),
        ("a = 9223372036854775808", &[], Refused),
        ("1 = 1.0", &[], T),
        ("3000000000 = 3000000000.0", &[], T),
    ]);
}

#[test]
fn ordering_two_strings_compares_them_as_doubles_or_fails() {
    table(&[
        ("a > b", &[("a", "10"), ("b", "9")], T), // not "10" < "9" as text
        ("a > b", &[("a", "1e1"), ("b", "9.99")], T),
        ("a > b", &[("a", "x"), ("b", "1")], Fails),
        ("a > b", &[("a", "NaN"), ("b", "Infinity")], T), // Double.compareTo: NaN on top
        ("a < b", &[("a", "-0.0"), ("b", "0.0")], T),
        ("a > b", &[("a", "10")], Null),
        ("a > 'x'", &[], Refused),
        ("'x' > 1", &[], Refused),
        ("a > TRUE", &[], Refused),
        ("(a = 1) > 1", &[], Refused),
    ]);
}

#[test]
fn equality_with_nulls_is_null_only_when_the_left_side_alone_is_null() {
    table(&[
        ("a = '1'", &[], Null),
        ("'1' = a", &[], F),
        ("a = b", &[], T), // both missing: equal
        ("a = b", &[("a", "1")], F),
        ("a = b", &[("b", "1")], Null),
        ("a <> '1'", &[], Null),
        ("a = NULL", &[], Refused),
        ("NULL = a", &[], Refused),
        ("a IS NULL", &[], T),
        ("a IS NOT NULL", &[("a", "x")], T),
        ("NULL IS NULL", &[], T),
        ("5 IS NULL", &[], F),
    ]);
}

#[test]
fn booleans_compare_with_strings_only_from_the_right() {
    table(&[
        ("a = TRUE", &[("a", "TRUE")], T),
        ("a = TRUE", &[("a", "yes")], F),
        ("FALSE = a", &[("a", "false")], Fails), // a cast error in Apache
        ("TRUE = 'true'", &[], Refused),
        ("'true' = TRUE", &[], T),
        ("1 = TRUE", &[], F),
        ("TRUE = 1", &[], Refused),
        ("(a = '1') = (b = '2')", &[("a", "1"), ("b", "3")], F),
    ]);
}

#[test]
fn a_bare_property_is_a_boolean_that_is_false_when_set_and_null_when_missing() {
    table(&[
        ("a", &[("a", "true")], F),
        ("a", &[], Null),
        ("NOT a", &[("a", "x")], T),
        ("NOT a", &[], Null),
        ("TRUE", &[], T),
        ("NULL", &[], Null),
        ("5", &[], Refused),
        ("'x'", &[], Refused),
        ("-a", &[("a", "1")], Refused),
        ("NOT 5", &[], Refused),
        ("5 AND TRUE", &[], Refused),
    ]);
}

#[test]
fn and_or_not_are_three_valued_and_stop_at_the_first_decisive_operand() {
    table(&[
        ("NULL AND FALSE", &[], F),
        ("NULL AND TRUE", &[], Null),
        ("NULL OR TRUE", &[], T),
        ("NULL OR FALSE", &[], Null),
        ("NOT NULL", &[], Null),
        ("NOT (a IN ('x'))", &[], Null),
        ("FALSE AND (a = 1)", &[("a", "x")], F), // the failing operand is never evaluated
        ("TRUE OR (a = 1)", &[("a", "x")], T),
        ("TRUE AND (a = 1)", &[("a", "x")], Fails),
        ("b = '1' OR a > 1", &[("a", "x")], Fails), // null left does not spare the right
    ]);
}

#[test]
fn not_binds_tighter_than_comparisons() {
    table(&[
        ("NOT a = '1'", &[("a", "2")], Fails), // (NOT a) = '1': a boolean against a string
        ("NOT a = TRUE", &[("a", "2")], T),    // (NOT a) is true: `a` is set
        ("NOT (a = '1')", &[("a", "2")], T),
        ("NOT a IS NULL", &[], T), // (NOT a) IS NULL
        ("NOT a BETWEEN 1 AND 2", &[], Refused),
        ("NOT TRUE = FALSE", &[], T),
        ("a = '1' OR b = '1' AND c = '1'", &[("a", "1")], T),
        ("(a = '1' OR b = '1') AND c = '1'", &[("a", "1")], Null),
    ]);
}

#[test]
fn between_checks_literal_bounds_but_not_negated_or_not_between_ones() {
    table(&[
        ("a BETWEEN 2 AND 10", &[("a", "2")], T),
        ("a BETWEEN 2 AND 10", &[("a", "11")], F),
        ("a BETWEEN 2 AND 10", &[], Null),
        ("a BETWEEN 2 AND 10", &[("a", "x")], Fails),
        ("a BETWEEN 2 AND 10", &[("a", "5.5")], Fails),
        ("a BETWEEN 1.0 AND 10.0", &[("a", "5.5")], T),
        ("a BETWEEN 10 AND 2", &[], Refused),
        ("a NOT BETWEEN 10 AND 2", &[("a", "5")], T),
        ("a BETWEEN 5 AND -1", &[("a", "0")], F),
        ("a BETWEEN NULL AND 5", &[], Refused),
        ("a BETWEEN 'a' AND 'b'", &[], Refused),
        ("a BETWEEN b AND c", &[("a", "5"), ("b", "1"), ("c", "9")], T),
        ("a BETWEEN 5 AND b", &[("a", "1"), ("b", "x")], F), // decided before `b` is read
        ("a BETWEEN 1 AND b", &[("a", "5"), ("b", "x")], Fails),
    ]);
}

#[test]
fn in_takes_string_literals_with_a_property_on_its_left() {
    table(&[
        ("a IN ('3', '4', '5')", &[("a", "4")], T),
        ("a IN ('3', '4', '5')", &[("a", "8")], F),
        ("a IN ('3', '4', '5')", &[], Null),
        ("a NOT IN ('3', '4', '5')", &[], Null),
        ("a NOT IN ('3', '4', '5')", &[("a", "8")], T),
        ("a IN ('A')", &[("a", "a")], F),
        ("a IN (3)", &[], Refused),
        ("a IN ()", &[], Refused),
        ("'3' IN ('3')", &[], Refused),
        ("-a IN ('3')", &[], Refused),
        ("+a IN ('3')", &[("a", "3")], T),
    ]);
}

#[test]
fn contains_and_friends_are_false_rather_than_null_on_a_missing_property() {
    table(&[
        ("a CONTAINS 'x'", &[("a", "axb")], T),
        ("a STARTSWITH 'ax'", &[("a", "axb")], T),
        ("a ENDSWITH 'xb'", &[("a", "axb")], T),
        ("a NOT CONTAINS 'x'", &[("a", "abb")], T),
        ("a CONTAINS 'x'", &[], F),
        ("a NOT CONTAINS 'x'", &[], F),
        ("a CONTAINS ''", &[("a", "axb")], F),
        ("a NOT CONTAINS ''", &[("a", "axb")], F),
        ("5 CONTAINS '5'", &[], F),
        ("a CONTAINS x", &[], Refused),
        ("a ENDSWITH '😀'", &[("a", "x😀")], T),
    ]);
}

#[test]
fn keywords_ignore_case_but_property_names_do_not() {
    table(&[
        ("a Is Not NuLl", &[("a", "1")], T),
        ("A = '1'", &[("a", "1")], Null),
        ("A = '1'", &[("A", "1")], T),
        ("_x$ = '1'", &[("_x$", "1")], T),
        ("ANDY = '1'", &[("ANDY", "1")], T),
        ("and = '1'", &[], Refused),
        ("a.b = '1'", &[("a.b", "1")], Refused),
        ("é = '1'", &[], Refused),
    ]);
}

#[test]
fn comments_and_blanks_are_skipped_and_a_dash_comment_needs_its_line_end() {
    table(&[
        ("a\t=\r\n'1'\u{c}", &[("a", "1")], T),
        ("-- note\na = '1'", &[("a", "1")], T),
        ("a = /* note */ '1'", &[("a", "1")], T),
        ("a = /* open", &[], Refused),
        ("-- note", &[], Refused), // two minus signs and a property
        ("a\u{a0}= '1'", &[], Refused),
    ]);
}

#[test]
fn text_after_a_complete_expression_is_ignored_unless_it_continues_the_grammar() {
    table(&[
        ("a = '1' b = '2'", &[("a", "1")], T),
        ("a LIKE 'x'", &[("a", "x")], F),
        ("a = '1' )", &[("a", "1")], T),
        ("a = 007", &[("a", "0")], T), // `0`, then ignored `07`
        ("a = '1' NOT", &[], Refused),
        ("a = '1' AND", &[], Refused),
        ("a = '1' #", &[], Refused), // the next token must still lex
        ("a = '1' b #", &[("a", "1")], T),
    ]);
    let s = Selector::parse("a = '1' b = '2'").unwrap();
    assert_eq!(s.ignored_tail(), Some(8));
    assert_eq!(Selector::parse("a = '1'").unwrap().ignored_tail(), None);
    assert!(Selector::parse_strict("a = '1' b = '2'").is_err());
    // Without a line end, `--` is two minus signs, which strict parsing refuses.
    assert!(Selector::parse_strict("a = '1' -- done").is_err());
    assert!(Selector::parse_strict("a = '1' -- done\n").is_ok());
}

#[test]
fn evaluation_errors_name_the_conversion_and_the_operator() {
    let s = Selector::parse("b = '1' OR a = 1").unwrap();
    let err = s.evaluate(&[("a", "1.0")]).unwrap_err();
    assert_eq!(err.kind, EvalErrorKind::NotANumber(NumberKind::Int));
    assert_eq!(err.offset, 13);
    assert!(!s.matches(&[("a", "1.0")]));
    let err = Selector::parse("a > b").unwrap().evaluate(&[("a", "x"), ("b", "1")]).unwrap_err();
    assert_eq!((err.kind, err.offset), (EvalErrorKind::StringsNotOrderable, 2));
    let err = Selector::parse("(c = 'x') = a").unwrap().evaluate(&[("a", "true"), ("c", "x")]).unwrap_err();
    assert_eq!(err.kind, EvalErrorKind::BooleanWithString);
    assert_eq!(err.to_string(), "a boolean cannot be compared with a string on its right (the operator at offset 10)");
}
