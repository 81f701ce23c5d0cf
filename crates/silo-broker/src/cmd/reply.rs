//! Request-reply (docs/protocol.md §2.14): SEND_REPLY_MESSAGE (324) / _V2 (325) from a
//! responder, pushed to the requesting client with PUSH_REPLY_MESSAGE_TO_CLIENT (326).
//!
//! A requester (`producer.request`) sends an ordinary message carrying `CORRELATION_ID`,
//! `REPLY_TO_CLIENT` (its client id) and `TTL`, and waits on its own registry of reply futures.
//! The responder builds the reply (`MessageUtil.createReplyMessage`: the same three properties,
//! `MSG_TYPE=reply`, topic `<cluster>_REPLY_TOPIC`) and sends it with 325. The broker looks the
//! requester up among the clients whose heartbeats it has, pushes the reply to that connection
//! and answers the responder after the requester has answered the push. As Java does
//! (`storeReplyMessageEnable`), the reply is also stored in its topic.

use std::sync::Arc;

use silo_wire::codes::request as rq;
use silo_wire::codes::response as rs;
use silo_wire::custom::{CustomHeader, ReplyMessageRequestHeader, SendMessageRequestHeader, SendMessageResponseHeader};
use silo_wire::msgid::offset_msg_id;
use silo_wire::properties::{PropertiesView, keys};
use silo_wire::{ExtFields, ExtStr, Frame};

use super::error_response;
use crate::broker::{Broker, ConnState};
use crate::connection::{Body, Channel, Outgoing};
use crate::core::BrokerError;
use crate::core::send::{Messages, Payload};
use crate::response;

/// How long the requester may take to answer a push (Java's `callClient`).
const PUSH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl Broker {
    pub(crate) fn send_reply(
        self: &Arc<Self>,
        conn: &mut ConnState,
        channel: &Channel,
        frame: Frame,
    ) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let oneway = frame.header.is_oneway();
        let mut ext = frame.header.ext_fields;
        let h = match SendMessageRequestHeader::take_for_code(frame.header.code, &mut ext) {
            Ok(h) => h,
            Err(e) => return (!oneway).then(|| error_response(opaque, &BrokerError::BadHeader(e.to_string()))),
        };
        let properties = h.properties.as_deref().unwrap_or("");
        let mut req = super::send::send_request(
            &h,
            channel,
            Messages::One(Payload { flag: h.flag, body: &frame.body, properties }),
        );
        // Stored first, so that the answer can name where; a reply that cannot be stored is
        // still pushed (Java logs the failure and answers by the push).
        let stored = self.plan_send(&req).and_then(|plan| self.send(conn, &mut req, &plan).map(|s| (plan, s)));
        let mut header = SendMessageResponseHeader {
            msg_id: ExtStr::from_static("0"),
            queue_id: h.queue_id.max(0),
            queue_offset: 0,
            transaction_id: None,
            batch_uniq_id: None,
            recall_handle: None,
            msg_region: ExtStr::from(self.config.region_id.as_str()),
            trace_on: ExtStr::from_static(if self.config.trace_on { "true" } else { "false" }),
        };
        match &stored {
            Ok((plan, sent)) => {
                header.msg_id =
                    ExtStr::from(offset_msg_id(self.config.broker_addr(), sent.append.physical_offset).as_str());
                header.queue_id = plan.queue_id;
                header.queue_offset = sent.append.queue_offset;
            }
            Err(e) => tracing::warn!(topic = %h.topic, error = %e, "a reply could not be stored; pushing it anyway"),
        }
        let view = PropertiesView::from_valid(properties);
        let Some(requester) = view.get(keys::REPLY_TO_CLIENT).map(str::to_owned) else {
            let remark = format!("reply message properties[{}] is null", keys::REPLY_TO_CLIENT);
            return (!oneway).then(|| response::error(opaque, rs::SYSTEM_ERROR, remark));
        };
        let Some(target) = self.clients.client_channel(&requester) else {
            tracing::debug!(requester, "a reply's requester is not connected");
            let remark = format!("push reply message fail, channel of <{requester}> not found.");
            return (!oneway).then(|| response::error(opaque, rs::SYSTEM_ERROR, remark));
        };
        let mut pushed_props = String::with_capacity(properties.len() + 32);
        view.push_without(&mut pushed_props, &[keys::PUSH_REPLY_TIME]);
        let now = self.config.clock.now_ms();
        pushed_props.push_str(&format!("{}\u{1}{now}\u{2}", keys::PUSH_REPLY_TIME));
        let push = ReplyMessageRequestHeader {
            producer_group: h.producer_group.to_string(),
            topic: h.topic.to_string(),
            default_topic: h.default_topic.to_string(),
            default_topic_queue_nums: h.default_topic_queue_nums,
            queue_id: h.queue_id,
            sys_flag: h.sys_flag,
            born_timestamp: h.born_timestamp,
            flag: h.flag,
            properties: Some(pushed_props),
            reconsume_times: h.reconsume_times,
            unit_mode: h.unit_mode,
            born_host: format!("/{}", channel.remote),
            store_host: format!("/{}", self.config.broker_addr()),
            store_timestamp: now,
        };
        let mut push_ext = ExtFields::new();
        push.write_ext_fields(&mut push_ext);
        let body = frame.body.clone();
        let answer_to = channel.clone();
        let region_ext = ext;
        tokio::spawn(async move {
            let answer =
                target.request(rq::PUSH_REPLY_MESSAGE_TO_CLIENT, push_ext, Body::Bytes(body), PUSH_TIMEOUT).await;
            if oneway {
                return;
            }
            let out = match answer {
                Some(a) if a.header.code == rs::SUCCESS => {
                    response::with_header_in(opaque, rs::SUCCESS, &header, region_ext)
                }
                _ => {
                    tracing::debug!(requester, "the requester did not take the reply");
                    response::error(opaque, rs::SYSTEM_ERROR, format!("push reply message to {requester}fail."))
                }
            };
            answer_to.send(out);
        });
        None
    }
}
