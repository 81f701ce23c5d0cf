//! Selectors from the network: random bytes and random token soup never panic, huge inputs are
//! refused up front or parsed in linear time, and nesting is capped before it can exhaust a
//! stack, in the parser or in the evaluator.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::time::{Duration, Instant};

use proptest::prelude::*;
use silo_filter::{MAX_DEPTH, MAX_IN_LIST_LEN, MAX_SELECTOR_LEN, ParseErrorKind, Selector};

/// The stack of a Tokio worker thread (2 MiB, its default). Parsing at the depth limit needs
/// about 1.3 MiB in a debug build and far less optimised.
const WORKER_STACK: usize = 2 * 1024 * 1024;

const PROPS: [(&str, &str); 5] = [("a", "1"), ("b", "x"), ("c", "2.5"), ("TAGS", "tag"), ("n", "NaN")];

fn exercise(sql: &str) {
    for parsed in [Selector::parse(sql), Selector::parse_strict(sql)] {
        match parsed {
            Ok(s) => {
                let _ = s.evaluate(&PROPS);
                let _ = s.evaluate(&[] as &[(&str, &str)]);
            }
            Err(e) => {
                assert!(e.offset <= sql.len(), "{sql:?}: {e}");
                let _ = e.to_string();
            }
        }
    }
}

const WORDS: &[&str] = &[
    "a",
    "b",
    "c",
    "TAGS",
    "n",
    "NOT",
    "AND",
    "OR",
    "BETWEEN",
    "IN",
    "IS",
    "NULL",
    "TRUE",
    "FALSE",
    "CONTAINS",
    "STARTSWITH",
    "ENDSWITH",
    "=",
    "<>",
    ">",
    ">=",
    "<",
    "<=",
    "(",
    ")",
    ",",
    "+",
    "-",
    "'1'",
    "'x'",
    "''",
    "0",
    "1",
    "3000000000",
    "0.0",
    "2.5",
    "1e3",
    "--",
    "/*",
    "*/",
    "\n",
    "'",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_text_never_panics(sql in "\\PC{0,64}") {
        exercise(&sql);
    }

    #[test]
    fn random_bytes_read_as_text_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        exercise(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn random_token_soup_never_panics(words in proptest::collection::vec(proptest::sample::select(WORDS), 0..40)) {
        exercise(&words.join(" "));
    }
}

#[test]
fn a_selector_over_the_length_limit_is_refused_before_it_is_read() {
    let sql = format!("a IN ({})", vec!["'x'"; 30_000].join(","));
    assert!(sql.len() > MAX_SELECTOR_LEN);
    let err = Selector::parse(&sql).unwrap_err();
    assert_eq!(err.kind, ParseErrorKind::TooLong { len: sql.len(), max: MAX_SELECTOR_LEN });
    assert_eq!(err.offset, 0);
    assert!(err.to_string().starts_with(&format!("selector of {} bytes exceeds the limit of 65536", sql.len())));
}

#[test]
fn a_selector_just_under_the_limit_parses_quickly() {
    // A long AND chain, a long IN list, long string literals and comments.
    let mut sql = String::from("a IS NULL");
    while sql.len() < MAX_SELECTOR_LEN - 100 {
        sql.push_str(" AND b <> 'some value' /* note */");
    }
    let started = Instant::now();
    let s = Selector::parse_strict(&sql).unwrap();
    assert!(s.matches(&[("b", "other")]));
    // The longest IN list, of distinct short strings (base 93 over the printable ASCII
    // characters but the quote), fits in the length limit.
    let alphabet: Vec<char> = ('!'..='~').filter(|c| *c != '\'').collect();
    let short = |mut i: usize| {
        let mut s = String::new();
        for _ in 0..(if i < 93 * 93 { 2 } else { 3 }) {
            s.push(alphabet[i % 93]);
            i /= 93;
        }
        s
    };
    let items: Vec<String> = (0..MAX_IN_LIST_LEN).map(|i| format!("'{}'", short(i))).collect();
    let sql = format!("a IN ({})", items.join(","));
    assert!(sql.len() < MAX_SELECTOR_LEN, "{}", sql.len());
    let s = Selector::parse_strict(&sql).unwrap();
    assert!(s.matches(&[("a", short(MAX_IN_LIST_LEN - 1).as_str())]));
    assert!(!s.matches(&[("a", short(MAX_IN_LIST_LEN).as_str())]));
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

#[test]
fn an_in_list_over_its_limit_is_refused_at_the_first_string_too_many() {
    let items: Vec<&str> = vec!["''"; MAX_IN_LIST_LEN + 1];
    let sql = format!("a IN ({})", items.join(","));
    let err = Selector::parse(&sql).unwrap_err();
    assert_eq!(err.kind, ParseErrorKind::InListTooLong { max: MAX_IN_LIST_LEN });
    assert_eq!(err.offset, "a IN (".len() + 3 * MAX_IN_LIST_LEN - 1);
}

#[test]
fn nesting_up_to_the_limit_parses_and_one_more_level_is_refused() {
    for (open, close) in [("(", ")"), ("NOT ", ""), ("- ", ""), ("+", "")] {
        let inner = if open == "- " { "a > " } else { "" };
        let nested = |n: usize| format!("{inner}{}TRUE{}", open.repeat(n), close.repeat(n));
        let ok = if open == "- " { format!("a > {}1", open.repeat(MAX_DEPTH - 2)) } else { nested(MAX_DEPTH - 1) };
        Selector::parse(&ok).unwrap_or_else(|e| panic!("{ok:.40}: {e}"));
        let deep = if open == "- " { format!("a > {}1", open.repeat(MAX_DEPTH + 1)) } else { nested(MAX_DEPTH + 1) };
        let err = Selector::parse(&deep).unwrap_err();
        assert_eq!(err.kind, ParseErrorKind::TooDeep { max: MAX_DEPTH }, "{deep:.40}");
    }
}

#[test]
fn a_hundred_thousand_open_parentheses_are_refused_without_exhausting_the_stack() {
    let sql = "(".repeat(100_000);
    let err = std::thread::Builder::new()
        .stack_size(WORKER_STACK)
        .spawn(move || Selector::parse(&sql[..MAX_SELECTOR_LEN]).unwrap_err())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(err.kind, ParseErrorKind::TooDeep { max: MAX_DEPTH });
    assert_eq!(err.offset, MAX_DEPTH);
}

#[test]
fn parsing_and_evaluating_at_the_depth_limit_fit_in_a_worker_thread_stack() {
    let sql = format!("{}a = '1'{}", "(".repeat(MAX_DEPTH - 1), ")".repeat(MAX_DEPTH - 1));
    let chain = format!("a = '1'{}", " = TRUE".repeat(MAX_DEPTH - 3));
    std::thread::Builder::new()
        .stack_size(WORKER_STACK)
        .spawn(move || {
            assert!(Selector::parse(&sql).unwrap().matches(&[("a", "1")]));
            assert!(Selector::parse(&chain).unwrap().matches(&[("a", "1")]));
        })
        .unwrap()
        .join()
        .unwrap();
}

#[cfg(not(debug_assertions))]
#[test]
fn optimised_parsing_and_evaluating_at_the_depth_limit_fit_in_256_kib() {
    let sql = format!("{}a = '1'{}", "(".repeat(MAX_DEPTH - 1), ")".repeat(MAX_DEPTH - 1));
    let open = "(".repeat(100_000);
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            assert!(Selector::parse(&sql).unwrap().matches(&[("a", "1")]));
            assert!(Selector::parse(&open[..MAX_SELECTOR_LEN]).is_err());
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn long_and_or_chains_are_flat_and_other_chains_are_capped() {
    let sql = vec!["a = '1'"; 5000].join(" AND ");
    assert!(Selector::parse(&sql).unwrap().matches(&[("a", "1")]));
    let sql = vec!["a = '2'"; 5000].join(" OR ") + " OR a = '1'";
    assert!(Selector::parse(&sql).unwrap().matches(&[("a", "1")]));
    let sql = format!("a = '1'{}", " = TRUE".repeat(MAX_DEPTH + 1));
    assert_eq!(Selector::parse(&sql).unwrap_err().kind, ParseErrorKind::TooDeep { max: MAX_DEPTH });
    let sql = format!("a IS NULL{}", " IS NULL".repeat(MAX_DEPTH + 1));
    assert_eq!(Selector::parse(&sql).unwrap_err().kind, ParseErrorKind::TooDeep { max: MAX_DEPTH });
}

#[test]
fn huge_numbers_and_strings_are_errors_or_values_not_panics() {
    for sql in [
        format!("a = {}", "9".repeat(60_000)),
        format!("a = {}.5", "9".repeat(60_000)),
        format!("a = 0.{}1", "0".repeat(60_000)),
        format!("a = '{}'", "''".repeat(30_000)),
        format!("a = '{}", "x".repeat(60_000)),
        format!("a = /*{}", "*".repeat(60_000)),
        format!("a = 1 --{}", "-".repeat(60_000)),
    ] {
        exercise(&sql);
    }
    let long = "x".repeat(60_000);
    let s = Selector::parse(&format!("a = '{long}'")).unwrap();
    assert!(s.matches(&[("a", long.as_str())]));
}
