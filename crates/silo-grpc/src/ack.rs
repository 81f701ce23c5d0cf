//! AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue: what a consumer
//! does with a received message, named by its receipt handle.

use std::sync::Arc;

use silo_broker::core::BrokerError;
use silo_broker::core::pop::HandleRequest;
use silo_broker::core::send::SendBack;
use silo_wire::pop::ReceiptHandle;
use tonic::{Request, Response};

use crate::frontend::{Frontend, error_status, ok, overall, status};
use crate::proto::{
    AckMessageRequest, AckMessageResponse, AckMessageResultEntry, ChangeInvisibleDurationRequest,
    ChangeInvisibleDurationResponse, Code, ForwardMessageToDeadLetterQueueRequest,
    ForwardMessageToDeadLetterQueueResponse, Status,
};
use crate::validate;

/// What a handle names, as the core takes it: the queue it was popped from (the retry topic
/// for a retried message) and the message's offset.
struct Target {
    topic: String,
    queue_id: i32,
    offset: i64,
    commit_log_offset: Option<i64>,
    order: bool,
    start_offset: i64,
}

impl Target {
    /// The core's request for this handle.
    fn request<'a>(&'a self, group: &'a str, handle: &'a str) -> HandleRequest<'a> {
        HandleRequest { group, topic: &self.topic, queue_id: self.queue_id, offset: self.offset, handle }
    }
}

fn target(handle: &str, group: &str, topic: &str) -> Result<Target, Status> {
    let h = ReceiptHandle::parse(handle).map_err(|e| status(Code::InvalidReceiptHandle, e.to_string()))?;
    let Some(offset) = h.queue_offset else {
        return Err(status(Code::InvalidReceiptHandle, "the receipt handle has no queue offset"));
    };
    Ok(Target {
        topic: h.mark.real_topic(topic, group),
        queue_id: h.queue_id,
        offset,
        commit_log_offset: h.commit_log_offset,
        order: h.is_order(),
        start_offset: h.start_offset,
    })
}

impl Frontend {
    /// Whether the record at commit-log `offset` is the message the handle names.
    fn handle_names_record(&self, offset: i64, t: &Target) -> bool {
        let Ok(stored) = self.broker.store.read_at(offset) else { return false };
        let Ok(silo_wire::record::Decoded::Record(rec)) = silo_wire::record::decode_record(&stored, 0) else {
            return false;
        };
        rec.topic == t.topic && rec.meta.queue_id == t.queue_id && rec.meta.queue_offset == t.offset
    }

    fn ack_one(&self, group: &str, topic: &str, handle: &str) -> Result<i64, Status> {
        let t = target(handle, group, topic)?;
        let req = t.request(group, handle);
        self.with_conn(|conn| self.broker.ack(conn, &req)).map_err(|e| error_status(&e))
    }

    pub(crate) async fn ack_message(
        self: &Arc<Self>,
        req: Request<AckMessageRequest>,
    ) -> Result<Response<AckMessageResponse>, tonic::Status> {
        if let Err(s) = self.caller(&req) {
            return Ok(Response::new(AckMessageResponse { status: Some(s), entries: vec![] }));
        }
        let r = req.into_inner();
        let group = r.group.unwrap_or_default().name;
        let topic = r.topic.unwrap_or_default().name;
        if let Err(s) = validate::topic(&topic).and_then(|()| validate::group(&group)) {
            return Ok(Response::new(AckMessageResponse { status: Some(s), entries: vec![] }));
        }
        let mut entries = Vec::with_capacity(r.entries.len());
        let mut end = 0;
        for e in r.entries {
            let s = match self.ack_one(&group, &topic, &e.receipt_handle) {
                Ok(at) => {
                    end = end.max(at);
                    ok()
                }
                Err(s) => s,
            };
            entries.push(AckMessageResultEntry {
                message_id: e.message_id,
                receipt_handle: e.receipt_handle,
                status: Some(s),
            });
        }
        if end > 0
            && self.broker.store.flush_mode().is_sync()
            && let Err(e) = self.broker.store.durable(end).await
        {
            tracing::warn!(error = %e, "acknowledgement not known to be durable");
            for entry in &mut entries {
                entry.status = Some(status(Code::MasterPersistenceTimeout, "flush disk timeout"));
            }
        }
        let overall = overall(entries.iter().filter_map(|e| e.status.as_ref()), "ack message result is empty");
        Ok(Response::new(AckMessageResponse { status: Some(overall), entries }))
    }

    pub(crate) async fn change_invisible_duration(
        self: &Arc<Self>,
        req: Request<ChangeInvisibleDurationRequest>,
    ) -> Result<Response<ChangeInvisibleDurationResponse>, tonic::Status> {
        let answer = |s: Status, handle: String| {
            Ok(Response::new(ChangeInvisibleDurationResponse { status: Some(s), receipt_handle: handle }))
        };
        if let Err(s) = self.caller(&req) {
            return answer(s, String::new());
        }
        let r = req.into_inner();
        let group = r.group.unwrap_or_default().name;
        let topic = r.topic.unwrap_or_default().name;
        if let Err(s) = validate::topic(&topic).and_then(|()| validate::group(&group)) {
            return answer(s, String::new());
        }
        // An absent duration is zero: visible again at once.
        let d = r.invisible_duration.unwrap_or_default();
        let invisible_ms = d.seconds.saturating_mul(1000).saturating_add(i64::from(d.nanos / 1_000_000));
        let max = i64::try_from(crate::receive::INVISIBLE_MAX.as_millis()).unwrap_or(i64::MAX);
        if invisible_ms < 0 {
            return answer(
                status(Code::IllegalInvisibleTime, "the invisibleTime is too small. min is 0"),
                String::new(),
            );
        }
        if invisible_ms > max {
            let s = status(Code::IllegalInvisibleTime, format!("the invisibleTime is too large. max is {max}"));
            return answer(s, String::new());
        }
        let t = match target(&r.receipt_handle, &group, &topic) {
            Ok(t) => t,
            Err(s) => return answer(s, String::new()),
        };
        let hreq = t.request(&group, &r.receipt_handle);
        let renewed = match self.with_conn(|conn| self.broker.change_invisible(conn, &hreq, invisible_ms)) {
            Ok(x) => x,
            Err(e) => return answer(error_status(&e), String::new()),
        };
        if renewed.journal_end > 0
            && self.broker.store.flush_mode().is_sync()
            && let Err(e) = self.broker.store.durable(renewed.journal_end).await
        {
            tracing::warn!(error = %e, "change of invisible time not known to be durable");
            return answer(status(Code::MasterPersistenceTimeout, "flush disk timeout"), String::new());
        }
        let Ok(old) = ReceiptHandle::parse(&r.receipt_handle) else {
            return answer(status(Code::InvalidReceiptHandle, "malformed receipt handle"), String::new());
        };
        let mut handle = String::with_capacity(r.receipt_handle.len() + 8);
        ReceiptHandle {
            start_offset: if t.order { t.start_offset } else { t.offset },
            pop_time: renewed.pop_time,
            invisible_time: renewed.invisible_time,
            revive_qid: renewed.revive_qid,
            ..old
        }
        .write(&mut handle);
        answer(ok(), handle)
    }

    pub(crate) async fn forward_to_dead_letter_queue(
        self: &Arc<Self>,
        req: Request<ForwardMessageToDeadLetterQueueRequest>,
    ) -> Result<Response<ForwardMessageToDeadLetterQueueResponse>, tonic::Status> {
        let answer = |s: Status| Ok(Response::new(ForwardMessageToDeadLetterQueueResponse { status: Some(s) }));
        if let Err(s) = self.caller(&req) {
            return answer(s);
        }
        let r = req.into_inner();
        let group = r.group.unwrap_or_default().name;
        let topic = r.topic.unwrap_or_default().name;
        if let Err(s) = validate::topic(&topic).and_then(|()| validate::group(&group)) {
            return answer(s);
        }
        let t = match target(&r.receipt_handle, &group, &topic) {
            Ok(t) => t,
            Err(s) => return answer(s),
        };
        let Some(offset) = t.commit_log_offset else {
            return answer(status(Code::InvalidReceiptHandle, "commit log offset is empty"));
        };
        let hreq = t.request(&group, &r.receipt_handle);
        // Only a message this group holds, and only the record the handle names: a forged or
        // stale handle copies nothing.
        if !self.broker.pop_pending(&hreq) || !self.handle_names_record(offset, &t) {
            return answer(status(Code::InvalidReceiptHandle, "receipt handle is expired"));
        }
        // Straight to the group's dead-letter queue, then the popped message is acknowledged.
        let back = SendBack { offset, group: &group, delay_level: -1, max_reconsume_times: Some(0) };
        let stored = self.with_conn(|conn| {
            self.broker.send_back(conn, &back)?;
            self.broker.ack(conn, &hreq)
        });
        match stored {
            Ok(end) => {
                if end > 0
                    && self.broker.store.flush_mode().is_sync()
                    && let Err(e) = self.broker.store.durable(end).await
                {
                    tracing::warn!(error = %e, "dead-letter forward not known to be durable");
                    return answer(status(Code::MasterPersistenceTimeout, "flush disk timeout"));
                }
                self.broker.register_routes_if_changed();
                answer(ok())
            }
            Err(e @ BrokerError::NoMessageAt(_)) => answer(status(Code::MessageNotFound, e.to_string())),
            Err(e) => answer(error_status(&e)),
        }
    }
}
