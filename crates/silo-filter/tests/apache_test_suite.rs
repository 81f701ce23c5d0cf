//! The expectations of Apache RocketMQ's own filter tests (`ExpressionTest`, `ParserTest` in
//! its filter module), restated as Rust cases. Apache's `eval` check counts a null result as "false";
//! so does [`Selector::matches`]. Apache's tests also feed typed values (an int, a boolean, an
//! object) into the context; the broker only ever has strings, so those cases are restated with
//! the value as its string, or left out where the typed value is the point (a non-string
//! operand of CONTAINS is covered by a numeric literal instead).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use silo_filter::Selector;

fn parse(sql: &str) -> Selector {
    Selector::parse(sql).unwrap_or_else(|e| panic!("{sql:?}: {e}"))
}

fn is(sql: &str, props: &[(&str, &str)], want: bool) {
    assert_eq!(parse(sql).matches(props), want, "{sql:?} with {props:?}");
}

const AND: &str = "a=3 and b<>4 And c>5 AND d<=4";
const OR: &str = "a=3 or b<>4 Or c>5 OR d<=4";

#[test]
fn contains_startswith_endswith_hold_on_a_matching_value_and_their_negations_do_not() {
    let v = [("value", "axb")];
    for (sql, want) in [
        ("value contains 'x'", true),
        ("value startswith 'ax'", true),
        ("value endswith 'xb'", true),
        ("value not contains 'x'", false),
        ("value not startswith 'ax'", false),
        ("value not endswith 'xb'", false),
        ("value contains ''", false),
        ("value startswith ''", false),
        ("value endswith ''", false),
        ("value not contains ''", false),
        ("value not startswith ''", false),
        ("value not endswith ''", false),
    ] {
        is(sql, &v, want);
    }
    let v = [("value", "abb")];
    for (sql, want) in [
        ("value contains 'x'", false),
        ("value startswith 'x'", false),
        ("value endswith 'x'", false),
        ("value not contains 'x'", true),
        ("value not startswith 'x'", true),
        ("value not endswith 'x'", true),
    ] {
        is(sql, &v, want);
    }
}

#[test]
fn contains_startswith_endswith_and_their_negations_are_false_on_a_missing_value() {
    for sql in [
        "value contains 'x'",
        "value startswith 'x'",
        "value endswith 'x'",
        "value not contains 'x'",
        "value not startswith 'x'",
        "value not endswith 'x'",
    ] {
        is(sql, &[], false);
        // A number in place of a string (Apache's test puts a double in the context).
        is(&sql.replace("value", "1.23"), &[], false);
    }
}

#[test]
fn contains_needs_a_string_literal_and_something_to_search() {
    for sql in [
        "value contains x",
        "value not contains x",
        "value contains 123",
        "value not contains 123",
        "'axb' contains ",
        "'axb' not contains ",
    ] {
        assert!(Selector::parse_strict(sql).is_err(), "{sql:?}");
    }
}

#[test]
fn contains_startswith_endswith_work_on_string_literals_too() {
    for (sql, want) in [
        ("'axb' contains 'x'", true),
        ("'axb' startswith 'ax'", true),
        ("'axb' endswith 'xb'", true),
        ("'axb' not contains 'x'", false),
        ("'axb' not startswith 'ax'", false),
        ("'axb' not endswith 'xb'", false),
        ("'axb' contains 'u'", false),
        ("'axb' not contains 'u'", true),
        ("'axb' not startswith 'u'", true),
        ("'axb' not endswith 'u'", true),
        ("'axb' contains ''", false),
        ("'axb' not endswith ''", false),
        ("' ' contains ' '", true),
        ("' ' startswith ' '", true),
        ("' ' endswith ' '", true),
        ("' ' not contains ' '", false),
        ("'axb' contains '.'", false),
        ("'axb' not contains '.'", true),
        ("'s' contains '\\'", false),
        ("'s' startswith '\\'", false),
        ("'s' endswith '\\'", false),
    ] {
        is(sql, &[("whatever", "whatever")], want);
    }
}

#[test]
fn the_all_in_one_selectors_match() {
    let props = [("a", "3"), ("b", "3"), ("c", "axbdc")];
    for op in ["contains", "startswith", "endswith"] {
        is(&format!("a not in ('4', '4', '5') and b between 3 and 10 and c not {op} 'axbc'"), &props, true);
    }
}

#[test]
fn a_doubled_quote_in_a_string_literal_is_one_quote() {
    is("TAGS is not null and TAGS='''''tag'''''", &[("TAGS", "''tag''")], true);
}

#[test]
fn between_with_string_bounds_fails_to_evaluate() {
    let s = parse("a between up and low");
    assert_eq!(s.evaluate(&[("a", "3.14")]).unwrap(), None);
    assert!(s.evaluate(&[("a", "3.14"), ("up", "up"), ("low", "low")]).is_err());
    assert!(parse("key is not null and key between 0 and 100").evaluate(&[("key", "con")]).is_err());
    assert!(parse("a between 0 and 100").evaluate(&[("a", "abc")]).is_err());
    is("a=b", &[("a", "3.14"), ("b", "3.14")], true);
    is("a<>b", &[("a", "3.14"), ("b", "3.14")], false);
    is("a<>b", &[("a", "3.14"), ("b", "3.141")], true);
}

#[test]
fn numbers_in_string_properties_compare_with_float_literals() {
    is("a > 3.1E10", &[("a", "3.1415E10")], true); // Java's Double.toString form
    is("a > 3.14", &[("a", "3.1415")], true);
    is("a > b", &[("a", "10"), ("b", "20")], false);
    is("a > b", &[("a", "20"), ("b", "10")], true);
}

#[test]
fn is_null_or_equal_matches_a_missing_or_equal_value() {
    let s = "a is null OR a='hello'";
    is(s, &[], true);
    is(s, &[("a", "hello")], true);
    is(s, &[("a", "abc")], false);
    is("a is not null and a='hello'", &[("a", "hello")], true);
    is("a is not null and a='hello'", &[], false);
}

#[test]
fn string_properties_compare_with_boolean_literals() {
    is("a=TRUE OR b=FALSE", &[("a", "true"), ("b", "false")], true);
    is("a=TRUE OR b=FALSE", &[("a", "false"), ("b", "true")], false);
}

#[test]
fn and_and_or_chains_decide_as_in_apache() {
    is(AND, &[("a", "3"), ("b", "5"), ("c", "6"), ("d", "1")], true);
    is(AND, &[("a", "4"), ("b", "5"), ("c", "6"), ("d", "1")], false);
    is(OR, &[("a", "3")], true);
    is(OR, &[("a", "4"), ("b", "5")], true);
    is(OR, &[("a", "4"), ("b", "4"), ("c", "6")], true);
    is(OR, &[("a", "4"), ("b", "4"), ("c", "3"), ("d", "2")], true);
    is(OR, &[("a", "4"), ("b", "4"), ("c", "3"), ("d", "10")], false);
}

#[test]
fn in_between_and_is_null_decide_as_in_apache() {
    for v in ["3", "4", "5"] {
        is("a in ('3', '4', '5')", &[("a", v)], true);
        is("a not in ('3', '4', '5')", &[("a", v)], false);
    }
    is("a in ('3', '4', '5')", &[("a", "8")], false);
    is("a not in ('3', '4', '5')", &[("a", "8")], true);
    for v in ["2", "10", "3"] {
        is("a between 2 and 10", &[("a", v)], true);
        is("a not between 2 and 10", &[("a", v)], false);
    }
    for v in ["1", "11"] {
        is("a between 2 and 10", &[("a", v)], false);
        is("a not between 2 and 10", &[("a", v)], true);
    }
    is("a is null", &[("abc", "2")], true);
    is("a is null", &[("a", "2")], false);
    is("a is not null", &[("a", "2")], true);
    is("a is not null", &[("abc", "2")], false);
}

#[test]
fn the_parser_accepts_apaches_valid_selectors_and_blanks_do_not_change_the_result() {
    for sql in [
        AND,
        OR,
        "a in ('3', '4', '5')",
        "(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))",
        "(a between 2 and 10) AND (b not between 6 and 9)",
        "a is null",
        "a is not null",
        "a <= now", // `now` is only a property name
        "a=3 and b contains 'xxx' and c not contains 'xxx'",
    ] {
        Selector::parse_strict(sql).unwrap_or_else(|e| panic!("{sql:?}: {e}"));
    }
    assert_eq!(parse(AND), parse("a=3  and    b<>4 And c>5 AND d<=4"));
    assert_ne!(parse(AND), parse(OR));
}

#[test]
fn the_parser_refuses_apaches_invalid_selectors() {
    let huge_float = format!("a > 1{}.{}", "1".repeat(400), "1".repeat(400));
    let mut over_limit = String::from("a > 1");
    for _ in 0..2048 {
        over_limit.push_str(&"1".repeat(51));
    }
    for sql in
        ["a and between 2 and 10", "a > 100000000000000000000000", &huge_float, &over_limit, " a between 10 and 0"]
    {
        assert!(Selector::parse(sql).is_err(), "{sql:.60?}");
    }
}
