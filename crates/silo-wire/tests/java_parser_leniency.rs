//! JSON bodies are read as the Java broker's parser (fastjson 1.2 in Apache RocketMQ 5.3.3)
//! reads them: what it accepts from a non-Java client is accepted with the same meaning, and
//! what it refuses is refused. The cases are the ones a probe of the 5.3.3 jars gave.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use silo_wire::body::{ConsumerData, HeartbeatData, SubscriptionData, TopicConfig, decode_json_body};

/// What the C++ client (PyPI `rocketmq` 0.4.4) sends for a push consumer: enums as ordinals,
/// `subVersion` as a string, no `unitMode`, no producer set. Apache accepts it.
const CPP_HEARTBEAT: &str = r#"{"clientID":"23370-127.0.0.1@DEFAULT","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,"groupName":"cg","messageModel":1,"subscriptionDataSet":[{"subString":"*","subVersion":"1796120912204","topic":"%RETRY%cg"},{"subString":"TagA || TagC","subVersion":"1796120912204","tagsSet":["TagA","TagC"],"codeSet":[0,0],"topic":"T"}]}]}
"#;

#[test]
fn the_cpp_clients_heartbeat_reads_as_java_reads_it() {
    let hb: HeartbeatData = decode_json_body(CPP_HEARTBEAT.as_bytes()).unwrap();
    assert_eq!(hb.client_id, "23370-127.0.0.1@DEFAULT");
    let c = &hb.consumer_data_set[0];
    assert_eq!(c.consume_type, "CONSUME_PASSIVELY");
    assert_eq!(c.message_model, "CLUSTERING");
    assert_eq!(c.consume_from_where, "CONSUME_FROM_LAST_OFFSET");
    assert!(!c.unit_mode);
    assert_eq!(c.subscription_data_set[1].sub_version, 1_796_120_912_204);
    assert_eq!(c.subscription_data_set[1].tags_set, ["TagA", "TagC"]);
    assert!(hb.producer_data_set.is_empty());
}

fn consumer(field: &str, value: &str) -> Result<ConsumerData, String> {
    decode_json_body(format!(r#"{{"groupName":"g","{field}":{value}}}"#).as_bytes()).map_err(|e| e.to_string())
}

fn subscription(field: &str, value: &str) -> Result<SubscriptionData, String> {
    decode_json_body(format!(r#"{{"topic":"T","{field}":{value}}}"#).as_bytes()).map_err(|e| e.to_string())
}

#[test]
fn enums_are_read_by_ordinal_or_by_name_in_any_case() {
    for (json, name) in [
        ("0", "CONSUME_ACTIVELY"),
        ("1", "CONSUME_PASSIVELY"),
        ("2", "CONSUME_POP"),
        (r#""CONSUME_PASSIVELY""#, "CONSUME_PASSIVELY"),
        (r#""consume_passively""#, "CONSUME_PASSIVELY"),
        // Unknown names, digits in a string and null leave the field unset, silently.
        (r#""BOGUS""#, ""),
        (r#""1""#, ""),
        (r#""""#, ""),
        ("null", ""),
    ] {
        assert_eq!(consumer("consumeType", json).unwrap().consume_type, name, "consumeType {json}");
    }
    for json in ["3", "99", "-1", "1.5", "true", "{}", "[]"] {
        let e = consumer("consumeType", json).unwrap_err();
        assert!(e.contains("consumeType"), "the error names the field: {e}");
    }
    assert_eq!(consumer("consumeFromWhere", "4").unwrap().consume_from_where, "CONSUME_FROM_FIRST_OFFSET");
    assert_eq!(consumer("messageModel", "0").unwrap().message_model, "BROADCASTING");
}

#[test]
fn longs_take_numbers_and_decimal_strings_and_nothing_else() {
    for (json, v) in [
        ("12", 12),
        (r#""12""#, 12),
        (r#""+5""#, 5),
        (r#""012""#, 12),
        ("1.9", 1),
        ("-1.5", -1),
        ("1e3", 1000),
        ("true", 1),
    ] {
        assert_eq!(subscription("subVersion", json).unwrap().sub_version, v, "subVersion {json}");
    }
    assert_eq!(subscription("subVersion", "null").unwrap().sub_version, 0);
    for json in [r#"" 12""#, r#""12 ""#, r#""abc""#, r#""12.0""#, "9223372036854775808", "[]", "{}"] {
        assert!(subscription("subVersion", json).is_err(), "subVersion {json} must be refused");
    }
}

#[test]
fn ints_take_a_whole_number_string_with_a_zero_fraction() {
    let tc = |v: &str| -> Result<TopicConfig, _> { decode_json_body(format!(r#"{{"perm":{v}}}"#).as_bytes()) };
    assert_eq!(tc(r#""12.0""#).unwrap().perm, 12);
    assert_eq!(tc("false").unwrap().perm, 0);
    assert!(tc("2147483648").is_err());
    assert!(tc(r#""0x10""#).is_err());
}

#[test]
fn strings_take_any_value_as_its_json_text() {
    for (json, text) in
        [("0", "0"), ("1.5", "1.5"), ("true", "true"), (r#"{"a":1}"#, r#"{"a":1}"#), ("[1,2]", "[1,2]"), ("null", "")]
    {
        assert_eq!(subscription("subString", json).unwrap().sub_string, text, "subString {json}");
    }
    assert_eq!(subscription("tagsSet", r#"[1,true,"x"]"#).unwrap().tags_set, ["1", "true", "x"]);
    assert!(subscription("tagsSet", r#""a""#).is_err(), "a lone value is not a set");
    assert!(subscription("tagsSet", "null").unwrap().tags_set.is_empty());
}

#[test]
fn booleans_take_java_s_spellings() {
    for (json, b) in [
        ("true", true),
        ("1", true),
        ("1.5", true),
        ("0", false),
        ("2", false),
        (r#""TRUE""#, true),
        (r#""1""#, true),
        (r#""Y""#, true),
        (r#""t""#, true),
        (r#""false""#, false),
        (r#""N""#, false),
        (r#""""#, false),
        ("null", false),
    ] {
        assert_eq!(consumer("unitMode", json).unwrap().unit_mode, b, "unitMode {json}");
    }
    for json in [r#""yes""#, r#""2""#, "[]", "{}"] {
        assert!(consumer("unitMode", json).is_err(), "unitMode {json} must be refused");
    }
}

#[test]
fn collections_may_be_null_but_not_a_lone_value() {
    let hb: HeartbeatData =
        decode_json_body(br#"{"clientID":"c","consumerDataSet":null,"producerDataSet":null}"#).unwrap();
    assert!(hb.consumer_data_set.is_empty() && hb.producer_data_set.is_empty());
    assert!(decode_json_body::<HeartbeatData>(br#"{"clientID":"c","consumerDataSet":"x"}"#).is_err());
}

#[test]
fn text_after_the_object_is_refused() {
    assert!(decode_json_body::<HeartbeatData>(br#"{"clientID":"c"} {}"#).is_err());
    assert!(decode_json_body::<HeartbeatData>(br#"{"clientID":"c"}}"#).is_err());
    assert!(decode_json_body::<HeartbeatData>(b"[1]").is_err());
    // Whitespace and a newline after it are fine (the C++ client ends its bodies with one).
    assert!(decode_json_body::<HeartbeatData>(b"{\"clientID\":\"c\"}\n").is_ok());
}
