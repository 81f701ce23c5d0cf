//! Subscription filters (docs/protocol.md §2.15): a TAG expression (`TagA || TagB`, matched by
//! the tags code in the consume queue) or an SQL92 selector (matched against each stored
//! record's properties, read from the mapped log). Selectors are compiled once per expression
//! and kept in a small cache, as Java keeps its 100 most recent; evaluating one allocates
//! nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use silo_filter::{PropertiesStr, Selector};
use silo_store::TagFilter;
use silo_wire::properties::PropertiesView;

use super::BrokerError;
use super::pull::parse_tags;

/// Compiled selectors kept at most (the cache starts over when it is full).
const CACHED_SELECTORS: usize = 256;

/// What a pull keeps.
#[derive(Debug, Clone)]
pub enum PullFilter {
    All,
    /// Tags codes of a TAG expression.
    Tags(Vec<i64>),
    Sql(Arc<Selector>),
}

impl PullFilter {
    /// Runs `read` with the store's form of this filter.
    pub fn with_store_filter<R>(&self, read: impl FnOnce(TagFilter<'_>) -> R) -> R {
        match self {
            Self::All => read(TagFilter::All),
            Self::Tags(codes) => read(TagFilter::Codes(codes)),
            Self::Sql(selector) => {
                let test = |p: PropertiesView<'_>| selector.matches(&PropertiesStr::new(p.as_str()));
                read(TagFilter::Properties(&test))
            }
        }
    }
}

/// Whether an expression type names SQL92 (case as clients write it).
pub fn is_sql(expression_type: Option<&str>) -> bool {
    expression_type.is_some_and(|t| t.eq_ignore_ascii_case("SQL92"))
}

/// Compiled SQL92 selectors by expression text.
#[derive(Debug, Default)]
pub struct SelectorCache {
    compiled: Mutex<HashMap<String, Arc<Selector>>>,
}

impl SelectorCache {
    /// The selector for `sql`, compiled on first use.
    pub fn compile(&self, sql: &str) -> Result<Arc<Selector>, BrokerError> {
        if let Some(s) = self.compiled.lock().unwrap_or_else(|e| e.into_inner()).get(sql) {
            return Ok(Arc::clone(s));
        }
        let selector = Arc::new(Selector::parse(sql).map_err(|e| {
            BrokerError::SubscriptionParseFailed(format!("invalid SQL92 expression {:?}: {e}", excerpt(sql)))
        })?);
        if let Some(at) = selector.ignored_tail() {
            // As Apache's parser does: what follows a complete expression is not read.
            tracing::warn!(
                sql,
                ignored_from = at,
                "an SQL92 subscription has text after its expression; it is ignored"
            );
        }
        let mut cache = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHED_SELECTORS {
            cache.clear();
        }
        cache.insert(sql.to_owned(), Arc::clone(&selector));
        Ok(selector)
    }
}

/// At most the first 80 characters of an expression, for a remark (a client may send 64 KiB).
fn excerpt(sql: &str) -> String {
    match sql.char_indices().nth(80) {
        Some((at, _)) => format!("{}...", sql.get(..at).unwrap_or_default()),
        None => sql.to_owned(),
    }
}

/// The filter of a subscription, given its expression and type. `sql_enabled` is
/// `enablePropertyFilter`; without it an SQL92 subscription is refused as Java refuses it.
pub fn filter_for(
    cache: &SelectorCache,
    expression: &str,
    expression_type: Option<&str>,
    sql_enabled: bool,
) -> Result<PullFilter, BrokerError> {
    match expression_type {
        None => Ok(tags(expression)),
        Some(t) if t.eq_ignore_ascii_case("TAG") => Ok(tags(expression)),
        Some(t) if t.eq_ignore_ascii_case("SQL92") => {
            if !sql_enabled {
                return Err(BrokerError::FilterUnsupported);
            }
            Ok(PullFilter::Sql(cache.compile(expression)?))
        }
        Some(other) => Err(BrokerError::FilterTypeUnsupported(other.to_owned())),
    }
}

fn tags(expression: &str) -> PullFilter {
    parse_tags(expression).map_or(PullFilter::All, PullFilter::Tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_type_picks_the_filter() {
        let cache = SelectorCache::default();
        assert!(matches!(filter_for(&cache, "*", None, true), Ok(PullFilter::All)));
        assert!(matches!(filter_for(&cache, "A || B", Some("TAG"), true), Ok(PullFilter::Tags(c)) if c.len() == 2));
        assert!(matches!(filter_for(&cache, "a > 1", Some("SQL92"), true), Ok(PullFilter::Sql(_))));
        assert!(matches!(filter_for(&cache, "a > 1", Some("SQL92"), false), Err(BrokerError::FilterUnsupported)));
        assert!(matches!(filter_for(&cache, "a >", Some("SQL92"), true), Err(BrokerError::SubscriptionParseFailed(_))));
        assert!(matches!(filter_for(&cache, "x", Some("XPATH"), true), Err(BrokerError::FilterTypeUnsupported(_))));
    }

    #[test]
    fn a_compiled_selector_is_reused() {
        let cache = SelectorCache::default();
        let a = cache.compile("a = 'x'").unwrap();
        let b = cache.compile("a = 'x'").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
    }
}
