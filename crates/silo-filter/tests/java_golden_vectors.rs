//! Agreement with Apache RocketMQ 5.3.3, case by case: `vectors/java-5.3.3.txt` holds the
//! outcome that Apache's own parser and evaluator gave for every selector case of
//! `vectors/selector-cases.txt` (recorded by `oracle/gen-vectors.sh` from the unmodified
//! rocketmq-filter jar), and each must come out the same here.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::collections::HashMap;

use silo_filter::Selector;

const VECTORS: &str = include_str!("vectors/java-5.3.3.txt");
const CASES: &str = include_str!("vectors/selector-cases.txt");

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('\\') => out.push('\\'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                out.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
            }
            other => panic!("bad escape {other:?} in {s}"),
        }
    }
    out
}

fn cases(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
}

/// Where this crate differs on purpose (see the crate docs): Java's number parsers also take
/// hexadecimal floating point and non-ASCII decimal digits. Apache's outcome, then ours.
const KNOWN_DIFFERENCES: [(&str, &str, &str, &str); 2] =
    [("a = 1.0", "0x1p0", "true", "eval-error"), ("a = 1", "\u{661}", "true", "eval-error")];

fn ours(selector: &str, properties: &HashMap<String, String>) -> &'static str {
    match Selector::parse(selector) {
        Err(_) => "parse-error",
        Ok(s) => match s.evaluate(properties) {
            Err(_) => "eval-error",
            Ok(None) => "null",
            Ok(Some(true)) => "true",
            Ok(Some(false)) => "false",
        },
    }
}

#[test]
fn every_case_has_the_outcome_apache_recorded() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for line in cases(VECTORS) {
        let mut fields = line.split('\t');
        let expected = fields.next().unwrap();
        let selector = unescape(fields.next().unwrap());
        let properties: HashMap<String, String> = fields
            .map(|f| {
                let (k, v) = f.split_once('=').unwrap();
                (unescape(k), unescape(v))
            })
            .collect();
        let got = ours(&selector, &properties);
        let known = KNOWN_DIFFERENCES
            .iter()
            .find(|(sel, a, _, _)| *sel == selector && properties.get("a").map(String::as_str) == Some(*a));
        if let Some((_, _, apache, here)) = known {
            assert_eq!((expected, got), (*apache, *here), "{selector:?}: a known difference changed");
        } else if got != expected {
            failures.push(format!("{selector:?} with {properties:?}: Apache {expected}, here {got}"));
        }
        checked += 1;
    }
    assert!(checked > 300, "expected the recorded table, found {checked} cases");
    assert!(failures.is_empty(), "{} of {checked} cases differ:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_recorded_outcomes_cover_every_case_in_the_table() {
    let recorded: Vec<&str> = cases(VECTORS).map(|l| l.split_once('\t').unwrap().1).collect();
    let missing: Vec<&str> = cases(CASES).filter(|c| !recorded.contains(c)).collect();
    assert!(missing.is_empty(), "re-run oracle/gen-vectors.sh; cases without an outcome:\n{}", missing.join("\n"));
}

#[test]
fn apache_refuses_exactly_the_selectors_that_parse_refuses_and_strict_parsing_refuses_more() {
    for line in cases(VECTORS) {
        let mut fields = line.split('\t');
        let refused = fields.next().unwrap() == "parse-error";
        let selector = unescape(fields.next().unwrap());
        assert_eq!(Selector::parse(&selector).is_err(), refused, "{selector:?}");
        if refused {
            assert!(Selector::parse_strict(&selector).is_err(), "{selector:?}");
        }
    }
}
