//! The remoting adapter for HEART_BEAT (34), UNREGISTER_CLIENT (35), CHECK_CLIENT_CONFIG (46),
//! GET_CONSUMER_LIST_BY_GROUP (38), LOCK_BATCH_MQ (41), UNLOCK_BATCH_MQ (42); docs/protocol.md §2.5–§2.8.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use silo_wire::Frame;
use silo_wire::body::{ConsumerListBody, HeartbeatData, SubscriptionData, encode_json_body};
use silo_wire::custom::{ConsumerGroupRequestHeader, UnregisterClientRequestHeader};
use silo_wire::lenient;

use super::error_response;
use crate::broker::Broker;
use crate::connection::{Channel, Outgoing};
use crate::core::clients::QueueName;
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

fn queue_names(set: &[MessageQueue]) -> Vec<QueueName> {
    set.iter().map(|q| (q.topic.clone(), q.broker_name.clone(), q.queue_id)).collect()
}

impl Broker {
    pub(crate) fn heartbeat_frame(self: &Arc<Self>, channel: &Channel, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let hb: HeartbeatData = try_reply!(super::body(frame));
        let sender = (frame.header.language, frame.header.version);
        if let Err(e) = self.heartbeat(&hb.client_id, &hb.producer_data_set, &hb.consumer_data_set, channel, sender) {
            return error_response(opaque, &e);
        }
        let mut out = response::success(opaque);
        out.header.version = silo_wire::header::SILO_VERSION;
        out
    }

    pub(crate) fn unregister_client(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let h: UnregisterClientRequestHeader = try_reply!(super::header(frame));
        if let Some(group) = &h.consumer_group {
            self.leave_group(&h.client_id, group);
        }
        if let Some(group) = &h.producer_group {
            self.leave_producer_group(&h.client_id, group);
        }
        response::success(frame.header.opaque)
    }

    pub(crate) fn check_client_config(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let req: CheckClientConfig = try_reply!(super::body(frame));
        let sub = req.subscription_data.unwrap_or_default();
        match self.check_filter(&sub.sub_string, sub.expression_type.as_deref()) {
            Ok(()) => response::success(opaque),
            Err(e) => error_response(opaque, &e),
        }
    }

    pub(crate) fn consumer_list(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let h: ConsumerGroupRequestHeader = try_reply!(super::header(frame));
        match self.group_members(&h.consumer_group) {
            Ok(ids) => response::with_body(opaque, encode_json_body(&ConsumerListBody { consumer_id_list: ids })),
            Err(e) => error_response(opaque, &e),
        }
    }

    pub(crate) fn lock_batch(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let req: LockBatchRequest = try_reply!(super::body(frame));
        let granted = self.lock_queues(&req.consumer_group, &req.client_id, &queue_names(&req.mq_set));
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
        self.unlock_queues(&req.consumer_group, &req.client_id, &queue_names(&req.mq_set));
        response::success(frame.header.opaque)
    }
}

impl Broker {
    /// QUERY_ASSIGNMENT (400): always SUCCESS; no assignment (absent) when the client is not
    /// a known member or the strategy is not one Java's broker knows.
    pub(crate) fn query_assignment_frame(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let req: silo_wire::body::QueryAssignmentRequestBody = try_reply!(super::body(frame));
        let query = crate::core::assignment::AssignmentQuery {
            topic: &req.topic,
            group: &req.consumer_group,
            client_id: &req.client_id,
            strategy: &req.strategy_name,
            broadcasting: req.message_model.eq_ignore_ascii_case("BROADCASTING"),
        };
        let body =
            silo_wire::body::QueryAssignmentResponseBody { message_queue_assignments: self.query_assignment(&query) };
        response::with_body(opaque, encode_json_body(&body))
    }
}
