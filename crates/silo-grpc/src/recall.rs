//! RecallMessage: cancels a delay message before it is due, by the handle its send answered
//! with (the core's recall, `silo_broker::core::recall`). Checked as Apache's proxy checks it:
//! the topic's name, then that the topic takes delay messages; the broker's refusals come back
//! as INTERNAL_SERVER_ERROR with its remark, as the proxy passes them on.

use std::sync::Arc;

use silo_broker::core::recall::{RecallRequest, Recalled, decode_handle};
use tonic::{Request, Response};

use crate::frontend::{Frontend, error_status, ok, status};
use crate::proto::{Code, MessageType, RecallMessageRequest, RecallMessageResponse, Status};
use crate::route::accepted_types;
use crate::send::{topic_type_name, type_name};
use crate::validate;

impl Frontend {
    fn recall(&self, r: &RecallMessageRequest, remote: std::net::SocketAddr) -> Result<Recalled, Status> {
        let topic = r.topic.as_ref().map_or("", |t| t.name.as_str());
        validate::topic(topic)?;
        let accepted = self.broker.topics.get(topic).as_ref().map(accepted_types).unwrap_or_default();
        if !accepted.contains(&(MessageType::Delay as i32)) {
            return Err(status(
                Code::MessagePropertyConflictWithType,
                format!(
                    "TopicMessageType validate failed, the expected type is {}, but actual type is {}",
                    topic_type_name(&accepted),
                    type_name(MessageType::Delay)
                ),
            ));
        }
        // The proxy reads the handle itself before it asks the broker.
        decode_handle(&r.recall_handle).map_err(|e| status(Code::InternalServerError, e.to_string()))?;
        let req = RecallRequest { topic, handle: &r.recall_handle, producer_group: None, born_host: remote };
        self.with_conn(|conn| self.broker.recall(conn, &req)).map_err(|e| error_status(&e))
    }

    pub(crate) async fn recall_message(
        self: &Arc<Self>,
        req: Request<RecallMessageRequest>,
    ) -> Result<Response<RecallMessageResponse>, tonic::Status> {
        let caller = match self.caller(&req) {
            Ok(c) => c,
            Err(s) => return Ok(Response::new(RecallMessageResponse { status: Some(s), message_id: String::new() })),
        };
        let answer = match self.recall(req.get_ref(), caller.remote) {
            Ok(recalled) => {
                if let Some(end) = recalled.durable_end
                    && let Err(e) = self.broker.store.durable(end).await
                {
                    // Java's broker answers a recall whose flush timed out as a success: the
                    // marker is stored, and a restart finds it.
                    tracing::warn!(error = %e, "recall stored but not known to be durable");
                }
                RecallMessageResponse { status: Some(ok()), message_id: recalled.message_id }
            }
            Err(s) => RecallMessageResponse { status: Some(s), message_id: String::new() },
        };
        Ok(Response::new(answer))
    }
}
