//! `PropertiesStr` reads the stored properties text exactly as the broker's own reader does:
//! its lookups agree with `silo_wire::PropertiesView` on any text, including duplicates, empty
//! names or values, pairs without a separator and a missing final separator.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use proptest::prelude::*;
use silo_filter::{Properties, PropertiesStr, Selector};
use silo_wire::PropertiesView;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn lookups_agree_with_the_wire_reader(raw in "[ab\u{1}\u{2}=x]{0,24}", name in "[ab]{0,2}") {
        let ours = PropertiesStr::new(&raw);
        let wire = PropertiesView::from_valid(&raw);
        prop_assert_eq!(ours.get(&name), wire.get(&name));
        for (key, _) in wire.iter() {
            prop_assert_eq!(ours.get(key), wire.get(key));
        }
    }
}

#[test]
fn the_last_duplicate_wins_and_empty_values_are_missing() {
    let p = PropertiesStr::new("a\u{1}1\u{2}b\u{1}\u{2}a\u{1}2\u{2}\u{1}x\u{2}c\u{1}v\u{1}w");
    assert_eq!(p.get("a"), Some("2"));
    assert_eq!(p.get("b"), None);
    assert_eq!(p.get(""), None);
    assert_eq!(p.get("c"), Some("v\u{1}w"));
    assert!(Selector::parse("b IS NULL AND a = 2").unwrap().matches(&p));
}
