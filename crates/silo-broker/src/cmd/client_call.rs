//! The remoting adapter for admin calls passed on to a consumer: GET_CONSUMER_RUNNING_INFO
//! (307) and CONSUME_MESSAGE_DIRECTLY (309), see [`crate::core::client_call`].
//!
//! A remoting consumer's answer is sent back to the admin as it came. A front end's consumer
//! answers with a [`ClientAnswer`], encoded here: a `ConsumerRunningInfo` with what the front
//! end knows of it (Apache's proxy gives only the thread stack, and leaves a call without
//! jstack unanswered, so that `mqadmin queryMsgById -d`, which first asks whether the client
//! is a push consumer, cannot reach its gRPC clients), and a `ConsumeMessageDirectlyResult`
//! remarked "from gRPC client", as the proxy's.

use std::sync::Arc;

use silo_wire::codes::response as rs;
use silo_wire::custom::{ConsumeMessageDirectlyRequestHeader, GetConsumerRunningInfoRequestHeader};
use silo_wire::{ExtStr, Frame};

use super::error_response;
use crate::broker::Broker;
use crate::connection::{Body, Channel, Outgoing};
use crate::core::BrokerError;
use crate::core::client_call::{CLIENT_CALL_TIMEOUT, ClientAnswer, ClientCall, RunningInfo};
use crate::response;
use crate::try_reply;

/// Where an admin's call goes.
enum Target {
    Remoting(Channel),
    FrontEnd(tokio::sync::oneshot::Receiver<ClientAnswer>),
}

/// `ConsumerRunningInfo` of a front end's consumer: its properties and subscriptions, and the
/// thread stack when asked for (the proxy gives the stack alone, and nothing without it).
fn running_info_json(info: &RunningInfo) -> Vec<u8> {
    let properties: serde_json::Map<String, serde_json::Value> =
        info.properties.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect();
    let subscriptions: Vec<_> = info.subscriptions.iter().map(crate::core::admin::subscription_data).collect();
    let mut body = serde_json::json!({
        "mqPopTable": {},
        "mqTable": {},
        "properties": properties,
        "statusTable": {},
        "subscriptionSet": subscriptions,
        "userConsumerInfo": {},
    });
    if let (Some(jstack), Some(map)) = (&info.jstack, body.as_object_mut()) {
        map.insert("jstack".into(), jstack.clone().into());
    }
    serde_json::to_vec(&body).unwrap_or_default()
}

/// `ConsumeMessageDirectlyResult` as the proxy builds it for a gRPC client.
fn directly_result_json(outcome: Option<&str>, remark: &str) -> Vec<u8> {
    let mut body = serde_json::json!({
        "autoCommit": true,
        "order": false,
        "remark": remark,
        "spentTimeMills": 0,
    });
    if let (Some(outcome), Some(map)) = (outcome, body.as_object_mut()) {
        map.insert("consumeResult".into(), outcome.into());
    }
    serde_json::to_vec(&body).unwrap_or_default()
}

impl Broker {
    /// The consumer `client_id` of `group`: its remoting channel, or the front end that has it
    /// (given the call); a refusal if neither does.
    fn client_target(&self, group: &str, client_id: &str, call: ClientCall) -> Result<Target, BrokerError> {
        if let Some(channel) = self.clients.consumer_channel(group, client_id) {
            return Ok(Target::Remoting(channel));
        }
        self.front_end()
            .and_then(|fe| fe.call_client(group, client_id, call))
            .map(Target::FrontEnd)
            .ok_or_else(|| BrokerError::ClientNotOnline { group: group.to_owned(), client_id: client_id.to_owned() })
    }

    /// Sends the answer of `target` to `admin` once it comes: a remoting consumer's own answer
    /// (under the admin's opaque), or a front end's, encoded by `encode`.
    fn relay(
        admin: Channel,
        opaque: i32,
        target: Target,
        forward: (i32, silo_wire::ExtFields, bytes::Bytes),
        who: (String, String),
        encode: fn(i32, ClientAnswer) -> Outgoing,
    ) {
        let (group, client_id) = who;
        tokio::spawn(async move {
            let timeout = || {
                let millis = CLIENT_CALL_TIMEOUT.as_millis();
                error_response(opaque, &BrokerError::ClientCallTimeout { group, client_id, millis })
            };
            let out = match target {
                Target::Remoting(channel) => {
                    let (code, ext, body) = forward;
                    match channel.request(code, ext, Body::Bytes(body), CLIENT_CALL_TIMEOUT).await {
                        Some(answer) => {
                            let mut header = answer.header;
                            header.opaque = opaque;
                            Outgoing { header, body: Body::Bytes(answer.body) }
                        }
                        None => timeout(),
                    }
                }
                Target::FrontEnd(rx) => match tokio::time::timeout(CLIENT_CALL_TIMEOUT, rx).await {
                    Ok(Ok(answer)) => encode(opaque, answer),
                    _ => timeout(),
                },
            };
            admin.send(out);
        });
    }

    /// GET_CONSUMER_RUNNING_INFO (307): an admin asks a consumer for its state and stack.
    pub(crate) fn consumer_running_info(self: &Arc<Self>, channel: &Channel, frame: Frame) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let h: GetConsumerRunningInfoRequestHeader = try_reply!(super::header(&frame).map_err(Some));
        let call = ClientCall::RunningInfo { jstack: h.jstack_enable.unwrap_or(false) };
        let target = match self.client_target(&h.consumer_group, &h.client_id, call) {
            Ok(t) => t,
            Err(e) => return Some(error_response(opaque, &e)),
        };
        let forward = (frame.header.code, frame.header.ext_fields, frame.body);
        Self::relay(channel.clone(), opaque, target, forward, (h.consumer_group, h.client_id), |opaque, answer| {
            match answer {
                ClientAnswer::RunningInfo(info) => response::with_body(opaque, running_info_json(&info)),
                ClientAnswer::Refused(e) => error_response(opaque, &e),
                ClientAnswer::Verified { .. } => response::error(opaque, rs::SYSTEM_ERROR, "unexpected answer"),
            }
        });
        None
    }

    /// CONSUME_MESSAGE_DIRECTLY (309): an admin has a consumer consume the stored message its
    /// offset message id names.
    pub(crate) fn consume_message_directly(self: &Arc<Self>, channel: &Channel, frame: Frame) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let h: ConsumeMessageDirectlyRequestHeader = try_reply!(super::header(&frame).map_err(Some));
        let client_id = h.client_id.clone().unwrap_or_default();
        let record = match silo_wire::msgid::parse_offset_msg_id(&h.msg_id)
            .ok()
            .and_then(|(_, offset)| self.store.read_at(offset).ok())
        {
            // The record as the store maps it: passed on without a copy.
            Some(r) => bytes::Bytes::from_owner(r),
            None => {
                return Some(response::error(
                    opaque,
                    rs::SYSTEM_ERROR,
                    format!("no stored message has the id {}", h.msg_id),
                ));
            }
        };
        let target = match self.client_target(
            &h.consumer_group,
            &client_id,
            ClientCall::VerifyMessage { record: record.clone() },
        ) {
            Ok(t) => t,
            Err(e) => return Some(error_response(opaque, &e)),
        };
        // As Java's broker passes it on: with its name and the topic's and group's system flags.
        let mut ext = frame.header.ext_fields;
        ext.insert(ExtStr::from_static("brokerName"), ExtStr::from(self.config.broker_name.as_str()));
        if let Some(topic) = h.topic.as_deref().filter(|t| self.topics.queues(t).is_some()) {
            let flag = self.topics.get(topic).map_or(0, |tc| tc.topic_sys_flag);
            ext.insert(ExtStr::from_static("topicSysFlag"), ExtStr::from(flag.to_string()));
        }
        if let Some(g) = self.groups.get(&h.consumer_group) {
            ext.insert(ExtStr::from_static("groupSysFlag"), ExtStr::from(g.group_sys_flag.to_string()));
        }
        let forward = (frame.header.code, ext, record);
        Self::relay(channel.clone(), opaque, target, forward, (h.consumer_group, client_id), |opaque, answer| {
            match answer {
                ClientAnswer::Verified { outcome, remark } => {
                    response::with_body(opaque, directly_result_json(outcome.map(|o| o.java_name()), &remark))
                }
                ClientAnswer::Refused(e) => error_response(opaque, &e),
                ClientAnswer::RunningInfo(_) => response::error(opaque, rs::SYSTEM_ERROR, "unexpected answer"),
            }
        });
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_clients_answers_are_encoded_as_the_proxy_encodes_them() {
        let info = RunningInfo {
            properties: vec![("PROP_CONSUME_TYPE".into(), "CONSUME_PASSIVELY".into())],
            subscriptions: vec![crate::core::client_call::Subscription {
                topic: "T".into(),
                expression_type: "TAG",
                expression: "a || b".into(),
            }],
            jstack: Some("\"main\" #1".into()),
        };
        let json: serde_json::Value = serde_json::from_slice(&running_info_json(&info)).unwrap();
        assert_eq!(json["jstack"], "\"main\" #1");
        assert_eq!(json["properties"]["PROP_CONSUME_TYPE"], "CONSUME_PASSIVELY");
        assert_eq!(json["subscriptionSet"][0]["tagsSet"], serde_json::json!(["a", "b"]));
        let without: serde_json::Value =
            serde_json::from_slice(&running_info_json(&RunningInfo { jstack: None, ..info })).unwrap();
        assert!(without.get("jstack").is_none());
        let r: serde_json::Value = serde_json::from_slice(&directly_result_json(Some("CR_SUCCESS"), "x")).unwrap();
        assert_eq!((r["consumeResult"].as_str(), r["remark"].as_str()), (Some("CR_SUCCESS"), Some("x")));
        let r: serde_json::Value = serde_json::from_slice(&directly_result_json(None, "x")).unwrap();
        assert!(r.get("consumeResult").is_none());
    }
}
