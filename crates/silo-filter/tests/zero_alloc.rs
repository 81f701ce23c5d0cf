//! Evaluation allocates nothing per message, whatever the selector: numeric conversions of
//! string properties, IN lists, text searches, failures. Checked with a counting allocator
//! over every kind of expression and both outcomes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use silo_filter::{PropertiesStr, Selector};

#[global_allocator]
static GLOBAL: silo_alloc_count::Counting = silo_alloc_count::Counting;

const SELECTORS: &[&str] = &[
    "region IN ('eu', 'us') AND a > 5",
    "a = 7 OR b = 'x'",
    "a > 5.5 AND c <= 3000000000",
    "a BETWEEN 1 AND 10 AND NOT (b IS NULL)",
    "a NOT BETWEEN 1.5 AND 2.5",
    "b CONTAINS 'y' OR b STARTSWITH 'x' OR b ENDSWITH 'z'",
    "b NOT IN ('1','2','3','4','5','6','7','8','9','10')",
    "a > c",   // two strings as doubles
    "b > c",   // fails: not a double
    "a = 1.0", // fails: `a` as an int is fine, as a double too
    "b = 1",   // fails: not an int
    "(a = 7) = TRUE AND 'true' = (a = 7)",
    "(a = 7) = b", // fails: boolean against a string
    "missing = 1 OR missing IS NULL OR NOT missing",
    "a = b OR -a > 1 OR a = -7",
    "d = 'NaN' OR d > 1.0 OR e = 1.0",
    "TAGS = 'tagA' AND KEYS IS NOT NULL",
];

#[test]
fn evaluating_any_selector_allocates_nothing() {
    let raw = "region\u{1}eu\u{2}a\u{1}7\u{2}b\u{1}xyz\u{2}c\u{1}3000000000\u{2}d\u{1}NaN\u{2}e\u{1} 1.0d \u{2}TAGS\u{1}tagA\u{2}";
    let props = PropertiesStr::new(raw);
    let pairs = [("region", "us"), ("a", "11"), ("b", "5"), ("c", "-1")];
    let parsed: Vec<Selector> = SELECTORS.iter().map(|s| Selector::parse(s).unwrap()).collect();
    let mut results = 0usize;
    let before = silo_alloc_count::this_thread();
    for _ in 0..100 {
        for s in &parsed {
            results += usize::from(s.matches(&props));
            results += usize::from(s.matches(&pairs));
            results += usize::from(s.evaluate(&props).is_err());
        }
    }
    let spent = silo_alloc_count::this_thread().since(before);
    assert_eq!(spent.allocs, 0, "{spent:?}");
    assert!(results > 0);
}

#[test]
fn parsing_does_allocate_which_shows_that_the_counter_counts() {
    let before = silo_alloc_count::this_thread();
    let s = Selector::parse("a IN ('x', 'y')").unwrap();
    assert!(silo_alloc_count::this_thread().since(before).allocs > 0);
    drop(s);
}
