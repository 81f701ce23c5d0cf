//! Name-server requests (docs/protocol.md §2.10): 100–106, 206 and DELETE_TOPIC_IN_NAMESRV (216).

use std::time::Duration;

use silo_wire::Frame;
use silo_wire::body::{RegisterBrokerBody, decode_json_body, encode_json_body};
use silo_wire::codes::{request as rq, response as rs};
use silo_wire::custom::{
    GetRouteInfoRequestHeader, RegisterBrokerRequestHeader, RegisterBrokerResponseHeader, UnregisterBrokerRequestHeader,
};

use crate::connection::Outgoing;
use crate::namesrv::{BROKER_EXPIRY, Registration, RouteTable};
use crate::response;
use crate::try_reply;

pub(super) fn unregister(table: &RouteTable, frame: &Frame) -> Outgoing {
    let h: UnregisterBrokerRequestHeader = try_reply!(super::header(frame));
    table.unregister(&h.broker_addr);
    response::success(frame.header.opaque)
}

pub(super) fn delete_topic(table: &RouteTable, frame: &Frame) -> Outgoing {
    let ext = &frame.header.ext_fields;
    let Some(topic) = ext.get("topic") else {
        return response::error(frame.header.opaque, rs::INVALID_PARAMETER, "topic is required");
    };
    table.delete_topic(topic, ext.get("clusterName").filter(|c| !c.is_empty()));
    response::success(frame.header.opaque)
}

pub(super) fn route(table: &RouteTable, frame: &Frame) -> Outgoing {
    let opaque = frame.header.opaque;
    let h: GetRouteInfoRequestHeader = try_reply!(super::header(frame));
    match table.route(&h.topic) {
        Some(route) => response::with_body(opaque, encode_json_body(&route)),
        None => response::error(
            opaque,
            rs::TOPIC_NOT_EXIST,
            format!("No topic route info in name server for the topic: {}", h.topic),
        ),
    }
}

pub(super) fn register(table: &RouteTable, frame: &Frame) -> Outgoing {
    let opaque = frame.header.opaque;
    let h: RegisterBrokerRequestHeader = try_reply!(super::header(frame));
    if h.compressed == Some(true) {
        return response::error(opaque, rs::SYSTEM_ERROR, "compressed registration bodies are not supported");
    }
    if let Some(crc) = h.body_crc32.filter(|c| *c != 0)
        && crc != silo_wire::checksum::body_crc(&frame.body)
    {
        return response::error(opaque, rs::SYSTEM_ERROR, "crc32 not match");
    }
    let body: RegisterBrokerBody = match decode_json_body(&frame.body) {
        Ok(b) => b,
        Err(e) => return response::error(opaque, rs::SYSTEM_ERROR, format!("bad registration body: {e}")),
    };
    let timeout =
        h.heartbeat_timeout_millis.and_then(|t| u64::try_from(t).ok()).map_or(BROKER_EXPIRY, Duration::from_millis);
    let master = table.register(&Registration {
        cluster: &h.cluster_name,
        broker_name: &h.broker_name,
        broker_addr: &h.broker_addr,
        broker_id: h.broker_id,
        ha_server_addr: &h.ha_server_addr,
        timeout,
        topics: &body.topic_config_serialize_wrapper.topic_config_table,
    });
    let answer =
        RegisterBrokerResponseHeader { master_addr: master.master_addr, ha_server_addr: master.ha_server_addr };
    response::with_header(opaque, rs::SUCCESS, &answer)
}

pub(super) fn kv(table: &RouteTable, frame: &Frame) -> Outgoing {
    let opaque = frame.header.opaque;
    let ext = &frame.header.ext_fields;
    let (Some(ns), Some(key)) = (ext.get("namespace"), ext.get("key")) else {
        return response::error(opaque, rs::INVALID_PARAMETER, "namespace and key are required");
    };
    match frame.header.code {
        rq::PUT_KV_CONFIG => {
            table.put_kv(ns, key, ext.get("value").unwrap_or(""));
            response::success(opaque)
        }
        rq::GET_KV_CONFIG => match table.get_kv(ns, key) {
            Some(v) => {
                let mut out = response::success(opaque);
                out.header.ext_fields.insert("value", v);
                out
            }
            None => response::error(opaque, rs::QUERY_NOT_FOUND, format!("No config item, Namespace: {ns} Key: {key}")),
        },
        _ => {
            table.delete_kv(ns, key);
            response::success(opaque)
        }
    }
}
