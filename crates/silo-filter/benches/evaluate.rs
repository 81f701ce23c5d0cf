//! Evaluation cost per message: typical selectors against a stored properties string read in
//! place (`PropertiesStr`, what the broker's pull path does), against a `HashMap` for
//! comparison, and parsing once per subscription. A counting global allocator reports
//! allocations per evaluation next to Criterion's timings (it must say 0).
//!
//! Run: `cargo bench -p silo-filter --bench evaluate`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use silo_filter::{PropertiesStr, Selector};

#[global_allocator]
static GLOBAL: silo_alloc_count::Counting = silo_alloc_count::Counting;

/// Properties as a Java producer stores them: system keys first, user keys after.
const STORED: &str = "KEYS\u{1}order-48213\u{2}UNIQ_KEY\u{1}7F0000010B5C18B4AAC27A9D4E8F0000\u{2}\
WAIT\u{1}true\u{2}TAGS\u{1}TagA\u{2}region\u{1}eu\u{2}a\u{1}7\u{2}tenant\u{1}acme\u{2}";

const SELECTORS: [(&str, &str); 4] = [
    ("in_and_gt", "region IN ('eu','us') AND a > 5"),
    ("tags_or_range", "TAGS = 'TagB' OR (a BETWEEN 1 AND 10 AND tenant IS NOT NULL)"),
    ("double_and_text", "a > 5.5 AND KEYS STARTSWITH 'order-' AND NOT (region = 'cn')"),
    ("missing_property", "priority > 3"),
];

fn report_allocs(name: &str, s: &Selector, props: &PropertiesStr<'_>) {
    let before = silo_alloc_count::process();
    for _ in 0..10_000 {
        black_box(s.matches(black_box(props)));
    }
    let spent = silo_alloc_count::process().since(before);
    println!("alloc-report {name:<24} allocs/eval {:.2}", spent.allocs as f64 / 10_000.0);
}

fn bench(c: &mut Criterion) {
    let props = PropertiesStr::new(STORED);
    let map: HashMap<String, String> =
        props_pairs(STORED).into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
    for (name, sql) in SELECTORS {
        let s = Selector::parse(sql).unwrap();
        report_allocs(name, &s, &props);
        c.bench_function(&format!("evaluate/{name}/properties_str"), |b| b.iter(|| s.matches(black_box(&props))));
        c.bench_function(&format!("evaluate/{name}/hash_map"), |b| b.iter(|| s.matches(black_box(&map))));
    }
    let (_, sql) = SELECTORS[0];
    c.bench_function("parse/in_and_gt", |b| b.iter(|| Selector::parse(black_box(sql)).unwrap()));
}

fn props_pairs(raw: &str) -> Vec<(&str, &str)> {
    raw.split('\u{2}').filter_map(|p| p.split_once('\u{1}')).collect()
}

criterion_group!(benches, bench);
criterion_main!(benches);
