//! EndTransaction, and the broker's transaction checks sent down a producer's Telemetry
//! stream as recover-orphaned-transaction commands.
//!
//! The transaction id Silo hands out is the half message's offset message id (the store host
//! and the commit-log offset): everything END_TRANSACTION needs is read back from the half
//! message it names, so a transaction can be ended after a broker restart or by another client
//! (a check answered by whichever producer got it).

use std::sync::Arc;

use silo_broker::core::transaction::{Check, EndTransaction, Ended, HALF_TOPIC, Outcome};
use silo_wire::msgid::{offset_msg_id, parse_offset_msg_id};
use silo_wire::properties::keys;
use silo_wire::record::{Decoded, decode_record};
use tonic::{Request, Response};

use crate::convert;
use crate::frontend::{Frontend, error_status, ok, status};
use crate::proto::telemetry_command::Command;
use crate::proto::{
    Code, EndTransactionRequest, EndTransactionResponse, RecoverOrphanedTransactionCommand, Status, TelemetryCommand,
    TransactionResolution, TransactionSource,
};
use crate::validate;

impl Frontend {
    fn end(&self, r: &EndTransactionRequest) -> Result<Ended, Status> {
        let bad = |why: &str| status(Code::InternalServerError, why.to_owned());
        let (_, commit_log_offset) =
            parse_offset_msg_id(&r.transaction_id).map_err(|_| bad("cannot found transaction data"))?;
        let half = self.broker.store.read_at(commit_log_offset).map_err(|_| bad("no such transaction"))?;
        let Ok(Decoded::Record(rec)) = decode_record(&half, 0) else { return Err(bad("no such transaction")) };
        if rec.topic != HALF_TOPIC {
            return Err(bad("the transaction id names no half message"));
        }
        if rec.properties.get(keys::UNIQ_KEY).is_some_and(|id| id != r.message_id) {
            return Err(bad("the transaction id belongs to another message"));
        }
        let outcome = match r.resolution() {
            TransactionResolution::Commit => Outcome::Commit,
            TransactionResolution::Rollback => Outcome::Rollback,
            // Neither: left to the check, as END_TRANSACTION with "unknown" leaves it.
            TransactionResolution::Unspecified => Outcome::Unknown,
        };
        let group = rec.properties.get(keys::PGROUP).unwrap_or("").to_owned();
        let req = EndTransaction {
            producer_group: &group,
            half_offset: rec.meta.queue_offset,
            commit_log_offset,
            outcome,
            from_check: r.source() == TransactionSource::SourceServerCheck,
        };
        self.with_conn(|conn| self.broker.end_transaction(conn, &req)).map_err(|e| error_status(&e))
    }

    pub(crate) async fn end_transaction(
        self: &Arc<Self>,
        req: Request<EndTransactionRequest>,
    ) -> Result<Response<EndTransactionResponse>, tonic::Status> {
        if let Err(s) = self.caller(&req) {
            return Ok(Response::new(EndTransactionResponse { status: Some(s) }));
        }
        let r = req.into_inner();
        let topic = r.topic.as_ref().map_or("", |t| t.name.as_str());
        if let Err(s) = validate::topic(topic) {
            return Ok(Response::new(EndTransactionResponse { status: Some(s) }));
        }
        if r.transaction_id.trim().is_empty() {
            let s = status(Code::InvalidTransactionId, "transaction id cannot be empty");
            return Ok(Response::new(EndTransactionResponse { status: Some(s) }));
        }
        let s = match self.end(&r) {
            Ok(_) => ok(),
            Err(s) => s,
        };
        Ok(Response::new(EndTransactionResponse { status: Some(s) }))
    }

    /// Sends a transaction check to one producer of the check's topic; false if none is
    /// connected.
    pub fn send_check(&self, check: &Check, turn: usize) -> bool {
        let Some(tx) = self.clients.producer_stream(&check.real_topic, turn) else { return false };
        let Ok(Decoded::Record(rec)) = decode_record(&check.message, 0) else { return false };
        let body = bytes::Bytes::copy_from_slice(rec.body);
        let max_inflated = self.broker.config.max_message_size as u64;
        let message = convert::pushed_message(&rec, body, &check.real_topic, 0, max_inflated);
        let transaction_id = offset_msg_id(self.broker.config.broker_addr(), check.commit_log_offset).to_string();
        let cmd = TelemetryCommand {
            status: Some(ok()),
            command: Some(Command::RecoverOrphanedTransactionCommand(Box::new(RecoverOrphanedTransactionCommand {
                message: Some(message),
                transaction_id,
            }))),
        };
        tx.try_send(Ok(cmd)).is_ok()
    }
}
