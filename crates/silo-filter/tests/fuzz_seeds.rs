//! Replays the fuzz seed corpus (and any crash reproducers committed next to it) through the
//! parser and evaluator on the stable toolchain, so that CI guards what the fuzzer found
//! without libFuzzer.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::path::Path;

use silo_filter::{PropertiesStr, Selector};

/// The property set of the fuzz target.
const PROPS: &str = "a\u{1}1\u{2}b\u{1}x\u{2}c\u{1}2.5\u{2}region\u{1}eu\u{2}TAGS\u{1}tagA\u{2}n\u{1}NaN\u{2}";

fn parse_and_evaluate(data: &[u8]) {
    let Ok(sql) = std::str::from_utf8(data) else { return };
    for parsed in [Selector::parse(sql), Selector::parse_strict(sql)] {
        match parsed {
            Ok(s) => {
                let _ = s.evaluate(&PropertiesStr::new(PROPS));
            }
            Err(e) => assert!(e.offset <= sql.len()),
        }
    }
}

#[test]
fn every_seed_parses_and_evaluates_without_panicking() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let mut files = 0;
    for target in std::fs::read_dir(&seeds).unwrap() {
        for file in std::fs::read_dir(target.unwrap().path()).unwrap() {
            let data = std::fs::read(file.unwrap().path()).unwrap();
            parse_and_evaluate(&data);
            // And every prefix of it.
            for cut in 0..data.len() {
                parse_and_evaluate(&data[..cut]);
            }
            files += 1;
        }
    }
    assert!(files >= 10, "expected the committed seed corpus, found {files} files");
}
