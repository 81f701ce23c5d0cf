//! Arbitrary bytes as a selector: parsing never panics, errors point inside the input, strict
//! parsing accepts only what compatible parsing accepts with nothing ignored, and whatever
//! parses evaluates against a fixed property set without panicking, the same way twice.
#![no_main]

use libfuzzer_sys::fuzz_target;
use silo_filter::{PropertiesStr, Selector};

const PROPS: &str = "a\u{1}1\u{2}b\u{1}x\u{2}c\u{1}2.5\u{2}region\u{1}eu\u{2}TAGS\u{1}tagA\u{2}n\u{1}NaN\u{2}";

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else { return };
    let props = PropertiesStr::new(PROPS);
    match Selector::parse(sql) {
        Ok(selector) => {
            let first = selector.evaluate(&props);
            assert_eq!(first, selector.evaluate(&props));
            match Selector::parse_strict(sql) {
                Ok(strict) => assert!(selector.ignored_tail().is_none() && strict == selector),
                Err(_) => assert!(selector.ignored_tail().is_some()),
            }
        }
        Err(e) => {
            assert!(e.offset <= sql.len());
            assert!(Selector::parse_strict(sql).is_err());
        }
    }
});
