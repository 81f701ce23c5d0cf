//! HEART_BEAT (34), UNREGISTER_CLIENT (35), CHECK_CLIENT_CONFIG (46),
//! GET_CONSUMER_LIST_BY_GROUP (38), LOCK_BATCH_MQ (41), UNLOCK_BATCH_MQ (42); docs/protocol.md §2.5–§2.8.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use silo_wire::Frame;
use silo_wire::body::{ConsumerListBody, HeartbeatData, SubscriptionData, encode_json_body};
use silo_wire::codes::response as rs;
use silo_wire::custom::{ConsumerGroupRequestHeader, UnregisterClientRequestHeader};
use silo_wire::lenient;

use crate::broker::Broker;
use crate::connection::{Channel, Outgoing};
use crate::response;
use crate::try_reply;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct MessageQueue {
    #[serde(deserialize_with = "lenient::string")]
    broker_name: String,
    #[serde(deserialize_with = "lenient::int")]
    queue_id: i32,
    #[serde(deserialize_with = "lenient::string")]
    topic: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct LockBatchRequest {
    #[serde(deserialize_with = "lenient::string")]
    client_id: String,
    #[serde(deserialize_with = "lenient::string")]
    consumer_group: String,
    #[serde(deserialize_with = "lenient::or_empty")]
    mq_set: Vec<MessageQueue>,
}

#[derive(Debug, Default, Serialize)]
struct LockBatchResponse {
    #[serde(rename = "lockOKMQSet")]
    lock_ok_mq_set: Vec<MessageQueue>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct CheckClientConfig {
    subscription_data: Option<SubscriptionData>,
}

impl Broker {
    pub(crate) fn heartbeat(self: &Arc<Self>, channel: &Channel, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let hb: HeartbeatData = try_reply!(super::body(frame));
        let mut changed = Vec::new();
        for consumer in &hb.consumer_data_set {
            // Every group gets its retry topic, so consumers find a route for it.
            let retry = format!("{}{}", silo_store::names::RETRY_PREFIX, consumer.group_name);
            if self.topics.get(&retry).is_none() {
                if let Err(e) = self.topics.ensure_system(&retry, 1) {
                    return response::error(opaque, rs::SYSTEM_ERROR, e.to_string());
                }
                self.register_routes_if_changed();
            }
            let sender = (frame.header.language, frame.header.version);
            changed.extend(self.clients.register_consumer(&hb.client_id, consumer, channel, sender));
        }
        self.notify(changed);
        let mut out = response::success(opaque);
        out.header.version = silo_wire::header::SILO_VERSION;
        out
    }

    pub(crate) fn unregister_client(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let h: UnregisterClientRequestHeader = try_reply!(super::header(frame));
        if let Some(group) = &h.consumer_group {
            let changed = self.clients.unregister_consumer(&h.client_id, group);
            self.notify(changed.into_iter().collect());
        }
        response::success(frame.header.opaque)
    }

    pub(crate) fn check_client_config(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let req: CheckClientConfig = try_reply!(super::body(frame));
        match req.subscription_data.and_then(|s| s.expression_type) {
            Some(t) if t != "TAG" => {
                response::error(opaque, rs::SYSTEM_ERROR, format!("the broker does not support {t} filtering"))
            }
            _ => response::success(opaque),
        }
    }

    pub(crate) fn consumer_list(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let h: ConsumerGroupRequestHeader = try_reply!(super::header(frame));
        let ids = self.clients.consumer_ids(&h.consumer_group);
        if ids.is_empty() {
            return response::error(
                opaque,
                rs::SYSTEM_ERROR,
                format!("no consumer for this group, {}", h.consumer_group),
            );
        }
        response::with_body(opaque, encode_json_body(&ConsumerListBody { consumer_id_list: ids }))
    }

    pub(crate) fn lock_batch(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let req: LockBatchRequest = try_reply!(super::body(frame));
        let wanted: Vec<(String, String, i32)> =
            req.mq_set.iter().map(|q| (q.topic.clone(), q.broker_name.clone(), q.queue_id)).collect();
        let granted = self.clients.lock_queues(&req.consumer_group, &req.client_id, &wanted);
        let body = LockBatchResponse {
            lock_ok_mq_set: granted
                .into_iter()
                .map(|(topic, broker_name, queue_id)| MessageQueue { broker_name, queue_id, topic })
                .collect(),
        };
        response::with_body(opaque, encode_json_body(&body))
    }

    pub(crate) fn unlock_batch(&self, frame: &Frame) -> Outgoing {
        let req: LockBatchRequest = try_reply!(super::body(frame));
        let queues: Vec<(String, String, i32)> =
            req.mq_set.iter().map(|q| (q.topic.clone(), q.broker_name.clone(), q.queue_id)).collect();
        self.clients.unlock_queues(&req.consumer_group, &req.client_id, &queues);
        response::success(frame.header.opaque)
    }
}
