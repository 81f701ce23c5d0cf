//! The properties view over arbitrary bytes: lookups agree with iteration, and what iterates
//! re-encodes into a string that reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use silo_wire::properties::{properties_to_vec, PropertiesView};

fuzz_target!(|data: &[u8]| {
    let Ok(view) = PropertiesView::parse(data) else { return };
    let pairs: Vec<(&str, &str)> = view.iter().collect();
    for (k, _) in &pairs {
        let last = pairs.iter().rev().find(|(k2, _)| k2 == k).map(|(_, v)| *v);
        assert_eq!(view.get(k), last);
    }
    // Values may legally contain \u{1}; keys cannot. Re-encode the pairs that a writer accepts.
    if let Ok(bytes) = properties_to_vec(pairs.iter().copied()) {
        let again = PropertiesView::parse(&bytes).expect("written properties must parse");
        assert_eq!(again.iter().collect::<Vec<_>>(), pairs);
    }
});
