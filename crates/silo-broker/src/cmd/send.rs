//! The remoting adapter for sending: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310),
//! SEND_BATCH_MESSAGE (320) and CONSUMER_SEND_MSG_BACK (36); docs/protocol.md §2.2, §2.7. The
//! policy is in [`crate::core::send`]; this decodes the request, calls it, and encodes the
//! answer (after the durability wait when the plan says so).

use std::fmt::Write as _;
use std::sync::Arc;

use silo_store::MessageToStore;
use silo_wire::codes::response as rs;
use silo_wire::custom::{
    ConsumerSendMsgBackRequestHeader, RecallMessageRequestHeader, RecallMessageResponseHeader,
    SendMessageRequestHeader, SendMessageResponseHeader,
};
use silo_wire::msgid::offset_msg_id;
use silo_wire::{ExtStr, Frame};

use super::error_response;
use crate::broker::{Broker, ConnState};
use crate::connection::{Channel, Outgoing};
use crate::core::BrokerError;
use crate::core::recall::RecallRequest;
use crate::core::send::{Destination, Messages, Payload, SendBack, SendRequest};
use crate::response;
use crate::try_reply;

/// The core's send request for a decoded send header (also a reply's, which has the same header).
pub(super) fn send_request<'a>(
    h: &'a SendMessageRequestHeader,
    channel: &Channel,
    messages: Messages<'a>,
) -> SendRequest<'a> {
    let properties = h.properties.as_deref().unwrap_or("");
    SendRequest {
        topic: &h.topic,
        default_topic: &h.default_topic,
        default_topic_queue_nums: h.default_topic_queue_nums,
        queue_id: h.queue_id,
        sys_flag: h.sys_flag,
        born_timestamp: h.born_timestamp,
        born_host: channel.remote,
        reconsume_times: h.reconsume_times.unwrap_or(0),
        max_reconsume_times: h.max_reconsume_times,
        properties,
        messages,
    }
}

impl Broker {
    pub(crate) fn send_message(
        self: &Arc<Self>,
        conn: &mut ConnState,
        channel: &Channel,
        frame: Frame,
    ) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let oneway = frame.header.is_oneway();
        let (reply, durable_end) = match self.send_frame(conn, channel, frame) {
            Ok(answer) => answer,
            Err(e) => return (!oneway).then(|| error_response(opaque, &e)),
        };
        let Some(end) = durable_end else { return (!oneway).then_some(reply) };
        self.reply_when_durable(channel, (!oneway).then_some(reply), end);
        None
    }

    /// The answer, and the end offset its acknowledgement must wait for, if any.
    fn send_frame(
        self: &Arc<Self>,
        conn: &mut ConnState,
        channel: &Channel,
        frame: Frame,
    ) -> Result<(Outgoing, Option<i64>), BrokerError> {
        let opaque = frame.header.opaque;
        // The header's texts are moved out of the request, and its field vector is reused for
        // the response.
        let mut ext = frame.header.ext_fields;
        let h = SendMessageRequestHeader::take_for_code(frame.header.code, &mut ext)
            .map_err(|e| BrokerError::BadHeader(e.to_string()))?;
        let properties = h.properties.as_deref().unwrap_or("");
        let batch = h.batch.unwrap_or(false);
        let messages = if batch {
            let mut msgs = Vec::new();
            for entry in silo_wire::decode_batch(&frame.body) {
                let entry = entry.map_err(BrokerError::BadBatch)?;
                msgs.push(MessageToStore {
                    topic: &h.topic,
                    queue_id: h.queue_id,
                    flag: entry.flag,
                    sys_flag: h.sys_flag,
                    born_timestamp: h.born_timestamp,
                    born_host: channel.remote,
                    reconsume_times: h.reconsume_times.unwrap_or(0),
                    prepared_tx_offset: 0,
                    body: entry.body,
                    properties: entry.properties.as_str(),
                });
            }
            Messages::Batch(msgs)
        } else {
            Messages::One(Payload { flag: h.flag, body: &frame.body, properties })
        };
        let mut req = send_request(&h, channel, messages);
        let plan = self.plan_send(&req)?;
        let sent = self.send(conn, &mut req, &plan)?;
        let store_host = self.config.broker_addr();
        let msg_id = if batch {
            let records = conn.appender.batch_records();
            let mut ids = String::with_capacity(records.len() * 33);
            for (i, (phys, _)) in records.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(ids, "{sep}{}", offset_msg_id(store_host, *phys));
            }
            ExtStr::from(ids)
        } else {
            ExtStr::from(offset_msg_id(store_host, sent.append.physical_offset).as_str())
        };
        // A half message's answer names its transaction (the unique key), which clients put in
        // their END_TRANSACTION (Java answers it for every send; only transactions use it).
        let transaction_id = (plan.destination == Destination::Half)
            .then(|| {
                silo_wire::properties::PropertiesView::from_valid(properties).get(silo_wire::properties::keys::UNIQ_KEY)
            })
            .flatten()
            .map(ExtStr::from);
        // Only single sends (Java attaches none to SEND_BATCH_MESSAGE).
        let recall_handle = self.recall_handle(&req, &plan, &sent).map(ExtStr::from);
        let header = SendMessageResponseHeader {
            msg_id,
            queue_id: plan.queue_id,
            queue_offset: sent.append.queue_offset,
            transaction_id,
            batch_uniq_id: None,
            recall_handle,
            msg_region: ExtStr::from(self.config.region_id.as_str()),
            trace_on: ExtStr::from_static(if self.config.trace_on { "true" } else { "false" }),
        };
        let reply = response::with_header_in(opaque, rs::SUCCESS, &header, ext);
        Ok((reply, plan.wait_durable.then_some(sent.append.end_offset)))
    }

    /// RECALL_MESSAGE: cancels a timer message ([`crate::core::recall`]).
    pub(crate) fn recall_frame(
        self: &Arc<Self>,
        conn: &mut ConnState,
        channel: &Channel,
        frame: &Frame,
    ) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let oneway = frame.header.is_oneway();
        let h: RecallMessageRequestHeader = match super::header(frame) {
            Ok(h) => h,
            Err(out) => return (!oneway).then_some(out),
        };
        let req = RecallRequest {
            topic: &h.topic,
            handle: &h.recall_handle,
            producer_group: h.producer_group.as_deref(),
            born_host: channel.remote,
        };
        let recalled = match self.recall(conn, &req) {
            Ok(r) => r,
            Err(e) => return (!oneway).then(|| error_response(opaque, &e)),
        };
        let reply =
            response::with_header(opaque, rs::SUCCESS, &RecallMessageResponseHeader { msg_id: recalled.message_id });
        let Some(end) = recalled.durable_end else { return (!oneway).then_some(reply) };
        self.reply_when_durable(channel, (!oneway).then_some(reply), end);
        None
    }

    /// CONSUMER_SEND_MSG_BACK: a consumer failed a message.
    pub(crate) fn send_back_frame(self: &Arc<Self>, conn: &mut ConnState, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let h: ConsumerSendMsgBackRequestHeader = try_reply!(super::header(frame));
        let req = SendBack {
            offset: h.offset,
            group: &h.group,
            delay_level: h.delay_level,
            max_reconsume_times: h.max_reconsume_times,
        };
        match self.send_back(conn, &req) {
            Ok(()) => response::success(opaque),
            Err(e) => error_response(opaque, &e),
        }
    }
}
