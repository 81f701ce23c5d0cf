//! The remoting adapter for transactions: END_TRANSACTION (37) from producers, and
//! CHECK_TRANSACTION_STATE (39) to them; docs/protocol.md §2.13. The policy is in
//! [`crate::core::transaction`].

use std::sync::Arc;

use silo_wire::custom::{CheckTransactionStateRequestHeader, CustomHeader, EndTransactionRequestHeader};
use silo_wire::msgid::offset_msg_id;
use silo_wire::{ExtFields, Frame};

use super::error_response;
use crate::broker::{Broker, ConnState};
use crate::connection::{Body, Outgoing};
use crate::core::BrokerError;
use crate::core::transaction::{Check, EndTransaction, Ended, Outcome};
use crate::response;

impl Broker {
    /// END_TRANSACTION. Producers send it one-way, so a refusal is mostly logged: a header
    /// that does not name a half message of this producer group never commits anything.
    pub(crate) fn end_transaction_frame(self: &Arc<Self>, conn: &mut ConnState, frame: &Frame) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let oneway = frame.header.is_oneway();
        if !self.config.ha.role.is_master() {
            // As Java's slave: a transaction ends on its master, whose log the slave copies.
            return (!oneway).then(|| {
                response::error(opaque, silo_wire::codes::response::SLAVE_NOT_AVAILABLE, "the broker is a slave")
            });
        }
        let result = EndTransactionRequestHeader::read_ext_fields(&frame.header.ext_fields)
            .map_err(|e| BrokerError::BadHeader(e.to_string()))
            .and_then(|h| {
                let outcome = Outcome::from_code(h.commit_or_rollback)
                    .ok_or(BrokerError::BadTransactionOutcome(h.commit_or_rollback))?;
                let req = EndTransaction {
                    producer_group: &h.producer_group,
                    half_offset: h.tran_state_table_offset,
                    commit_log_offset: h.commit_log_offset,
                    outcome,
                    from_check: h.from_transaction_check.unwrap_or(false),
                };
                let ended = self.end_transaction(conn, &req);
                if let Ok(how) = &ended {
                    tracing::debug!(
                        group = h.producer_group,
                        half = h.tran_state_table_offset,
                        ?how,
                        from_check = req.from_check,
                        "END_TRANSACTION"
                    );
                }
                ended.inspect_err(|e| {
                    tracing::warn!(
                        group = h.producer_group,
                        offset = h.commit_log_offset,
                        half = h.tran_state_table_offset,
                        error = %e,
                        "END_TRANSACTION refused"
                    );
                })
            });
        self.register_routes_if_changed();
        if oneway {
            return None;
        }
        Some(match result {
            Ok(Ended::Committed | Ended::RolledBack | Ended::Left | Ended::AlreadyResolved) => {
                response::success(opaque)
            }
            Err(e) => error_response(opaque, &e),
        })
    }

    /// Sends a check-back to one live producer of its group; false if none is connected (the
    /// next round checks again, up to `transactionCheckMax` times in all).
    pub fn send_check(&self, check: &Check, turn: usize) -> bool {
        let Some(channel) = self.clients.producer_channel(&check.group, turn) else {
            tracing::debug!(group = check.group, tx = check.tx_id, "no producer of the group online to check");
            return false;
        };
        let header = CheckTransactionStateRequestHeader {
            // As Java sends it: the half topic (the body carries the real one).
            topic: Some(crate::core::transaction::HALF_TOPIC.to_owned()),
            tran_state_table_offset: check.half_offset,
            commit_log_offset: check.commit_log_offset,
            msg_id: Some(check.tx_id.clone()),
            transaction_id: Some(check.tx_id.clone()),
            offset_msg_id: Some(offset_msg_id(self.config.broker_addr(), check.commit_log_offset).to_string()),
            broker_name: Some(self.config.broker_name.clone()),
        };
        let mut ext = ExtFields::new();
        header.write_ext_fields(&mut ext);
        let body = Body::Bytes(bytes::Bytes::from(check.message.clone()));
        channel.send_oneway_request_with_body(silo_wire::codes::request::CHECK_TRANSACTION_STATE, ext, body)
    }
}
