//! Byte-for-byte compatibility with Apache RocketMQ 5.3.3, checked against vectors that the
//! reference implementation itself wrote (`interop/java`, regenerated and compared in CI).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use silo_wire::batch::{OutgoingMessage, OutgoingProperties, decode_batch, encode_batch};
use silo_wire::body::{HeartbeatData, RegisterBrokerBody, TopicRouteData, decode_json_body, encode_json_body};
use silo_wire::checksum::{body_crc, tags_code};
use silo_wire::custom::*;
use silo_wire::frame::{DEFAULT_MAX_FRAME_LEN, decode_frame, encode_frame};
use silo_wire::msgid::{offset_msg_id, parse_offset_msg_id};
use silo_wire::record::{Decoded, MAGIC_V2, MessageVersion, RecordMeta, decode_record, encode_record};
use silo_wire::{ExtFields, LanguageCode, PropertiesView, RemotingHeader, SerializeType};

const VECTORS: &str = include_str!("vectors/java-5.3.3.txt");

struct Vector {
    kind: String,
    name: String,
    fields: BTreeMap<String, String>,
}

impl Vector {
    fn raw(&self, key: &str) -> &str {
        self.fields.get(key).unwrap_or_else(|| panic!("{} {}: no field {key}", self.kind, self.name))
    }
    fn bytes(&self, key: &str) -> Vec<u8> {
        let hex = self.raw(key);
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
    }
    fn text(&self, key: &str) -> String {
        String::from_utf8(self.bytes(key)).unwrap()
    }
    fn int(&self, key: &str) -> i64 {
        self.raw(key).parse().unwrap_or_else(|_| panic!("{} {}: {key} is not an integer", self.kind, self.name))
    }
    fn i32(&self, key: &str) -> i32 {
        i32::try_from(self.int(key)).unwrap()
    }
}

fn vectors(kind: &str) -> Vec<Vector> {
    let all: Vec<Vector> = VECTORS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let mut parts = line.split(' ');
            let kind = parts.next().unwrap().to_owned();
            let name = parts.next().unwrap().to_owned();
            let fields = parts
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap();
                    (k.to_owned(), v.to_owned())
                })
                .collect();
            Vector { kind, name, fields }
        })
        .filter(|v| v.kind == kind)
        .collect();
    assert!(!all.is_empty(), "no {kind} vectors");
    all
}

/// Java's property pairs in the order Java wrote them.
fn pairs(raw: &str) -> Vec<(&str, &str)> {
    PropertiesView::from_valid(raw).iter().collect()
}

#[test]
fn batch_encoding_matches_java_byte_for_byte() {
    for v in vectors("batch") {
        let count = usize::try_from(v.int("count")).unwrap();
        let bodies: Vec<Vec<u8>> = (0..count).map(|i| v.bytes(&format!("m{i}.body"))).collect();
        let props: Vec<String> = (0..count).map(|i| v.text(&format!("m{i}.props"))).collect();
        let prop_pairs: Vec<Vec<(&str, &str)>> = props.iter().map(|p| pairs(p)).collect();
        let messages: Vec<OutgoingMessage<'_>> = (0..count)
            .map(|i| OutgoingMessage {
                flag: v.i32(&format!("m{i}.flag")),
                body: &bodies[i],
                properties: OutgoingProperties::Pairs(&prop_pairs[i]),
            })
            .collect();
        for (i, msg) in messages.iter().enumerate() {
            let single = encode_batch(std::slice::from_ref(msg)).unwrap();
            assert_eq!(
                single[..],
                v.bytes(&format!("m{i}.single"))[..],
                "batch {} message {i} (encodeMessage)",
                v.name
            );
        }
        let out = v.bytes("out");
        assert_eq!(encode_batch(&messages).unwrap()[..], out[..], "batch {} (encodeMessages)", v.name);
        // Decoding Java's bytes gives back every message, borrowing from the input.
        let decoded: Vec<_> = decode_batch(&out).collect::<Result<_, _>>().unwrap();
        assert_eq!(decoded.len(), count, "batch {}", v.name);
        for (i, entry) in decoded.iter().enumerate() {
            assert_eq!(entry.flag, messages[i].flag);
            assert_eq!(entry.body, &bodies[i][..]);
            assert_eq!(entry.properties.as_str(), props[i]);
            assert!(out.as_ptr_range().contains(&entry.body.as_ptr()) || entry.body.is_empty());
        }
    }
}

fn ip(bytes: &[u8]) -> IpAddr {
    match bytes.len() {
        4 => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(bytes).unwrap())),
        16 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(bytes).unwrap())),
        n => panic!("address of {n} bytes"),
    }
}

#[test]
fn stored_records_match_java_byte_for_byte() {
    for v in vectors("record") {
        let meta = RecordMeta {
            body_crc: v.i32("body_crc"),
            queue_id: v.i32("queue_id"),
            flag: v.i32("flag"),
            queue_offset: v.int("queue_offset"),
            physical_offset: v.int("physical_offset"),
            sys_flag: v.i32("sys_flag"),
            born_timestamp: v.int("born_timestamp"),
            born_host: SocketAddr::new(ip(&v.bytes("born_host")), u16::try_from(v.int("born_port")).unwrap()),
            store_timestamp: v.int("store_timestamp"),
            store_host: SocketAddr::new(ip(&v.bytes("store_host")), u16::try_from(v.int("store_port")).unwrap()),
            reconsume_times: v.i32("reconsume_times"),
            prepared_tx_offset: v.int("prepared_tx_offset"),
        };
        let topic = v.text("topic");
        let body = v.bytes("body");
        let props = v.bytes("props");
        let out = v.bytes("out");
        assert_eq!(body_crc(&body), meta.body_crc, "record {}: CRC", v.name);

        let mut encoded = Vec::new();
        let n = encode_record(&meta, &topic, &body, OutgoingProperties::Raw(&props), &mut encoded).unwrap();
        assert_eq!(n, encoded.len());
        assert_eq!(encoded, out, "record {}: encode", v.name);

        let Decoded::Record(rec) = decode_record(&out, 0).unwrap() else { panic!("record {}: blank", v.name) };
        assert_eq!(rec.meta, meta, "record {}: decoded fields", v.name);
        assert_eq!(rec.topic, topic);
        assert_eq!(rec.body, &body[..]);
        assert_eq!(rec.properties.as_str().as_bytes(), &props[..]);
        assert_eq!(rec.total_size, out.len());
        assert!(rec.body_crc_matches());
        let expect_version = if topic.len() > 127 { MessageVersion::V2 } else { MessageVersion::V1 };
        assert_eq!(rec.version, expect_version, "record {}", v.name);
        if rec.version == MessageVersion::V2 {
            assert_eq!(&out[4..8], &MAGIC_V2.to_be_bytes());
        }
        assert_eq!(
            offset_msg_id(meta.store_host, meta.physical_offset).as_str(),
            v.text("msg_id"),
            "record {}",
            v.name
        );
    }
}

/// The vector lists Java's extFields as `key \u{1} value \u{2}` in wire order. Values (the
/// properties string) contain the same separators, so compare in that form rather than split it.
fn joined_ext(ext: &ExtFields) -> String {
    ext.iter().map(|(k, v)| format!("{k}\u{1}{v}\u{2}")).collect()
}

fn as_map(ext: &ExtFields) -> BTreeMap<String, String> {
    ext.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
}

/// A typed header read from Java's fields and written back gives exactly Java's fields.
fn typed_round_trip<H: CustomHeader>(ext: &ExtFields, name: &str) {
    let typed = H::read_ext_fields(ext).unwrap_or_else(|e| panic!("frame {name}: {e}"));
    assert_eq!(as_map(&typed.to_ext_fields()), as_map(ext), "frame {name}: typed header round trip");
}

fn json_value(bytes: &[u8]) -> serde_json::Value {
    decode_json_body(bytes).unwrap()
}

#[test]
fn frames_match_java_byte_for_byte() {
    for v in vectors("frame") {
        let serialize = match v.text("serialize").as_str() {
            "JSON" => SerializeType::Json,
            "ROCKETMQ" => SerializeType::RocketMq,
            other => panic!("serialize type {other}"),
        };
        let out = v.bytes("out");
        let frame = decode_frame(&out, DEFAULT_MAX_FRAME_LEN).unwrap().unwrap();
        assert_eq!(frame.total_len, out.len());
        assert_eq!(frame.serialize, serialize, "frame {}", v.name);
        let h = &frame.header;
        assert_eq!(h.code, v.i32("code"), "frame {}", v.name);
        assert_eq!(h.language, LanguageCode::from_name(&v.text("language")));
        assert_eq!(h.version, v.i32("version"));
        assert_eq!(h.opaque, v.i32("opaque"));
        assert_eq!(h.flag, v.i32("flag"));
        let remark = v.text("remark");
        assert_eq!(h.remark.as_deref(), (!remark.is_empty()).then_some(remark.as_str()), "frame {}", v.name);
        assert_eq!(joined_ext(&h.ext_fields), v.text("ext"), "frame {}: extFields in wire order", v.name);
        let body = v.bytes("body");
        assert_eq!(frame.body, &body[..]);

        // Re-encoding the decoded command reproduces Java's bytes. The one exception is a JSON
        // header whose extFields is an empty map rather than null: Java writes `"extFields":{}`,
        // Silo writes nothing for an empty map; both decode the same.
        let mut again = Vec::new();
        encode_frame(h, serialize, frame.body, &mut again).unwrap();
        if v.name == "heartbeat_json" {
            let reference = decode_frame(&again, DEFAULT_MAX_FRAME_LEN).unwrap().unwrap();
            assert_eq!(&reference.header, h);
            let java_text = String::from_utf8(out.clone()).unwrap();
            assert!(java_text.contains(r#""extFields":{}"#));
        } else {
            assert_eq!(again, out, "frame {}: re-encode", v.name);
        }

        let stem = v.name.trim_end_matches("_wire").trim_end_matches("_json").trim_end_matches("_rocketmq");
        let ext = &h.ext_fields;
        match stem {
            "send_v2" | "send_batch" => typed_round_trip::<SendMessageRequestHeaderV2>(ext, &v.name),
            "send_v1" => typed_round_trip::<SendMessageRequestHeader>(ext, &v.name),
            "pull" => typed_round_trip::<PullMessageRequestHeader>(ext, &v.name),
            "query_offset" => typed_round_trip::<QueryConsumerOffsetRequestHeader>(ext, &v.name),
            "update_offset" | "oneway" => typed_round_trip::<UpdateConsumerOffsetRequestHeader>(ext, &v.name),
            "get_max_offset" => typed_round_trip::<GetMaxOffsetRequestHeader>(ext, &v.name),
            "search_offset" => typed_round_trip::<SearchOffsetRequestHeader>(ext, &v.name),
            "get_route" => typed_round_trip::<GetRouteInfoRequestHeader>(ext, &v.name),
            "register_broker" => typed_round_trip::<RegisterBrokerRequestHeader>(ext, &v.name),
            "send_response" => typed_round_trip::<SendMessageResponseHeader>(ext, &v.name),
            "pull_response" => typed_round_trip::<PullMessageResponseHeader>(ext, &v.name),
            _ => {}
        }
        if stem == "send_batch" {
            assert_eq!(SendMessageRequestHeaderV2::read_ext_fields(ext).unwrap().batch, Some(true));
            assert_eq!(decode_batch(&body).count(), 3);
        }
        if stem == "oneway" {
            assert!(h.is_oneway());
        }
        if v.name.contains("response") {
            assert!(h.is_response(), "frame {}", v.name);
        }
        // Bodies: what Silo reads from Java's JSON and writes back is the same JSON value.
        match stem {
            "heartbeat" => {
                let hb: HeartbeatData = decode_json_body(&body).unwrap();
                assert!(!hb.consumer_data_set.is_empty() && !hb.producer_data_set.is_empty());
                assert_eq!(json_value(&encode_json_body(&hb)), json_value(&body), "frame {}: heartbeat body", v.name);
            }
            "route_response" | "route_response_std" => {
                let route: TopicRouteData = decode_json_body(&body).unwrap();
                assert!(!route.broker_datas[0].broker_addrs.is_empty());
                assert_eq!(json_value(&encode_json_body(&route)), json_value(&body), "frame {}: route body", v.name);
            }
            "register_broker" => {
                let reg: RegisterBrokerBody = decode_json_body(&body).unwrap();
                assert!(!reg.topic_config_serialize_wrapper.topic_config_table.is_empty());
                let crc = RegisterBrokerRequestHeader::read_ext_fields(ext).unwrap().body_crc32;
                assert_eq!(crc, Some(body_crc(&body)), "frame {}: bodyCrc32", v.name);
                assert_eq!(json_value(&encode_json_body(&reg)), json_value(&body), "frame {}: register body", v.name);
            }
            _ => {}
        }
        // Round-trip through the typed header API keeps Java's remark and flags.
        let rebuilt = RemotingHeader { ext_fields: h.ext_fields.clone(), ..h.clone() };
        assert_eq!(&rebuilt, h);
    }
}

#[test]
fn message_ids_match_java() {
    for v in vectors("msgid") {
        let host = SocketAddr::new(ip(&v.bytes("host")), u16::try_from(v.int("port")).unwrap());
        let offset = v.int("offset");
        let id = offset_msg_id(host, offset);
        assert_eq!(id.as_str(), v.text("out"), "msgid {}", v.name);
        assert_eq!(parse_offset_msg_id(id.as_str()).unwrap(), (host, offset), "msgid {}", v.name);
    }
}

#[test]
fn body_crcs_match_java() {
    for v in vectors("crc") {
        assert_eq!(body_crc(&v.bytes("data")), v.i32("out"), "crc {}", v.name);
    }
}

#[test]
fn tag_hash_codes_match_java() {
    for v in vectors("tag") {
        let tag = v.text("tag");
        assert_eq!(tags_code(Some(&tag)), v.int("out"), "tag {} ({tag:?})", v.name);
    }
}

#[test]
fn properties_are_read_like_java() {
    for v in vectors("props") {
        let input = v.bytes("in");
        let view = PropertiesView::parse(&input).unwrap();
        let mut last_wins = BTreeMap::new();
        for (k, val) in view.iter() {
            last_wins.insert(k, val);
        }
        for (k, val) in &last_wins {
            assert_eq!(view.get(k), Some(*val));
        }
        let mut expected = Vec::new();
        for (k, val) in &last_wins {
            expected.extend_from_slice(k.as_bytes());
            expected.push(1);
            expected.extend_from_slice(val.as_bytes());
            expected.push(2);
        }
        assert_eq!(String::from_utf8_lossy(&expected), String::from_utf8_lossy(&v.bytes("out")), "props {}", v.name);
    }
}
