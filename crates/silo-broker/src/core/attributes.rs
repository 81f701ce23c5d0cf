//! Topic attributes (docs/protocol.md §2.9): what `mqadmin updateTopic -a +message.type=FIFO`
//! sets, kept in the topic's config (`attributes` in `topics.json`) and answered in its config.
//! The 5.x proxy refuses FIFO, delay and transaction sends to a topic whose `message.type` does
//! not allow them, so these must be kept exactly as Apache keeps them.
//!
//! A modification is text: `+key=value` adds or changes, `-key` removes, comma-separated. A new
//! topic takes only additions. Only the attributes Apache 5.3.3 knows are accepted, with its
//! values, and the unchangeable ones only when the topic is created.

use std::collections::BTreeMap;

use super::BrokerError;

/// What a known attribute may hold.
#[derive(Debug, Clone, Copy)]
enum Values {
    OneOf(&'static [&'static str]),
    /// A whole number in this range.
    Range(i64, i64),
}

/// One attribute Apache 5.3.3 knows: its name, whether it may change after creation, and its
/// values.
#[derive(Debug, Clone, Copy)]
struct Known {
    name: &'static str,
    changeable: bool,
    values: Values,
}

const KNOWN: [Known; 4] = [
    Known { name: "queue.type", changeable: false, values: Values::OneOf(&["BatchCQ", "SimpleCQ"]) },
    Known { name: "cleanup.policy", changeable: false, values: Values::OneOf(&["DELETE", "COMPACTION"]) },
    Known {
        name: MESSAGE_TYPE,
        changeable: true,
        values: Values::OneOf(&["UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"]),
    },
    Known { name: "reserve.time", changeable: true, values: Values::Range(-1, i64::MAX) },
];

/// The attribute the proxy checks sends against.
pub const MESSAGE_TYPE: &str = "message.type";

fn bad(why: String) -> BrokerError {
    BrokerError::BadAttributes(why)
}

/// Parses a modification (`+a=1,-b`) into its entries, keys with their sign.
pub fn parse_modification(text: &str) -> Result<BTreeMap<String, String>, BrokerError> {
    let mut out = BTreeMap::new();
    if text.is_empty() {
        return Ok(out);
    }
    for kv in text.split(',') {
        let (key, value) = match kv.split_once('=') {
            Some((k, v)) => {
                if !k.contains('+') {
                    return Err(bad(format!("add/alter attribute format is wrong: {k}")));
                }
                // As Java splits it: what follows a second `=` is dropped.
                (k, v.split('=').next().unwrap_or(""))
            }
            None => {
                if !kv.contains('-') {
                    return Err(bad(format!("delete attribute format is wrong: {kv}")));
                }
                (kv, "")
            }
        };
        if out.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(bad(format!("key duplication: {key}")));
        }
    }
    Ok(out)
}

/// Applies a parsed modification to a topic's current attributes (`create`: the topic does not
/// exist yet), as Apache 5.3.3's `AttributeUtil.alterCurrentAttributes` does.
pub fn alter(
    create: bool,
    current: &BTreeMap<String, String>,
    modification: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, BrokerError> {
    let mut out = current.clone();
    let mut removed = Vec::new();
    for (key, value) in modification {
        let (sign, name) = key.split_at(key.chars().next().map_or(0, char::len_utf8));
        if name.is_empty() || name.contains('+') || name.contains('-') {
            return Err(bad("kv string format wrong.".into()));
        }
        let adding = match (sign, create) {
            ("+", _) => true,
            (_, true) => return Err(bad(format!("only add attribute is supported while creating topic. key: {name}"))),
            ("-", false) => {
                if !current.contains_key(name) {
                    return Err(bad(format!("attempt to delete a nonexistent key: {name}")));
                }
                false
            }
            _ => return Err(bad(format!("wrong format key: {name}"))),
        };
        let known = KNOWN.iter().find(|k| k.name == name).ok_or_else(|| bad(format!("unsupported key: {name}")))?;
        if !create && !known.changeable {
            return Err(bad(format!("attempt to update an unchangeable attribute. key: {name}")));
        }
        if adding {
            match known.values {
                Values::OneOf(set) if !set.contains(&value.as_str()) => {
                    return Err(bad(format!("value is not in set: [{}]", set.join(", "))));
                }
                Values::Range(min, max) => {
                    let n = value.parse::<i64>().map_err(|_| bad(format!("For input string: \"{value}\"")))?;
                    if n < min || n > max {
                        return Err(bad(format!("value is not in range({min}, {max})")));
                    }
                }
                Values::OneOf(_) => {}
            }
            out.insert(name.to_owned(), value.clone());
        } else {
            removed.push(name.to_owned());
        }
    }
    for name in removed {
        out.remove(&name);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(create: bool, current: &[(&str, &str)], text: &str) -> Result<Vec<(String, String)>, String> {
        let current = current.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let m = parse_modification(text).map_err(|e| e.to_string())?;
        alter(create, &current, &m).map(|a| a.into_iter().collect()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_new_topic_takes_additions_of_known_attributes_with_known_values() {
        assert_eq!(
            apply(true, &[], "+message.type=FIFO,+queue.type=SimpleCQ").unwrap(),
            vec![("message.type".into(), "FIFO".into()), ("queue.type".into(), "SimpleCQ".into())]
        );
        assert!(apply(true, &[], "-message.type").unwrap_err().contains("only add attribute"));
        assert!(apply(true, &[], "+message.type=LIFO").unwrap_err().contains("value is not in set"));
        assert!(apply(true, &[], "+color=red").unwrap_err().contains("unsupported key: color"));
        assert!(apply(true, &[], "+reserve.time=-2").unwrap_err().contains("range"));
        assert!(apply(true, &[], "").unwrap().is_empty());
    }

    #[test]
    fn an_existing_topic_changes_only_changeable_attributes() {
        let current = [("message.type", "NORMAL"), ("queue.type", "SimpleCQ")];
        assert_eq!(
            apply(false, &current, "+message.type=DELAY").unwrap(),
            vec![("message.type".into(), "DELAY".into()), ("queue.type".into(), "SimpleCQ".into())]
        );
        assert_eq!(apply(false, &current, "-message.type").unwrap(), vec![("queue.type".into(), "SimpleCQ".into())]);
        assert!(apply(false, &current, "+queue.type=BatchCQ").unwrap_err().contains("unchangeable"));
        assert!(apply(false, &current, "-reserve.time").unwrap_err().contains("nonexistent"));
        // No modification keeps what the topic has.
        assert_eq!(apply(false, &current, "").unwrap().len(), 2);
    }

    #[test]
    fn malformed_modifications_are_refused_with_javas_reasons() {
        assert!(apply(true, &[], "message.type=FIFO").unwrap_err().contains("add/alter attribute format is wrong"));
        assert!(apply(true, &[], "message.type").unwrap_err().contains("delete attribute format is wrong"));
        assert!(apply(true, &[], "+a=1,+a=2").unwrap_err().contains("key duplication"));
        assert!(apply(true, &[], "+=1").unwrap_err().contains("kv string format wrong"));
    }
}
