//! Admin calls for a gRPC consumer (`mqadmin consumerStatus`, `mqadmin queryMsgById -g -d`): the
//! broker passes them to the front end. What the client's settings say (consume type, order,
//! subscriptions, SDK version) is answered at once; a thread stack or a message to consume is
//! pushed down one of the client's Telemetry streams under a fresh nonce, as a
//! PrintThreadStackTraceCommand or a VerifyMessageCommand, and the client's ThreadStackTrace or
//! VerifyMessageResult, carrying the nonce back, answers the call. Statuses are read as Apache's
//! proxy reads them.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use silo_broker::core::BrokerError;
use silo_broker::core::client_call::{
    ClientAnswer, ClientCall, ConsumeOutcome, ConsumeType, FrontEndConsumer, RunningInfo, Subscription,
};
use silo_wire::LanguageCode;
use silo_wire::record::{Decoded, decode_record};
use tokio::sync::oneshot;

use crate::convert;
use crate::frontend::{Frontend, ok};
use crate::proto::telemetry_command::Command;
use crate::proto::{
    ClientType, Code, FilterType, PrintThreadStackTraceCommand, Status, TelemetryCommand, ThreadStackTrace,
    VerifyMessageCommand, VerifyMessageResult,
};

/// Calls waiting for a client's answer at once; past this, new calls are refused (an admin
/// loop must not grow the table without bound).
pub const MAX_PENDING_CALLS: usize = 1024;

/// The version ordinal a gRPC consumer is listed with: the broker's own, as the proxy lists
/// its clients with its version (their SDK versions are no remoting versions).
const LISTED_VERSION: i32 = 479;

/// A call waiting for its answer: where the answer goes, and (for a thread stack) the running
/// state the stack completes.
type Pending = (oneshot::Sender<ClientAnswer>, Option<RunningInfo>);

/// Calls sent to clients and not yet answered, by nonce.
#[derive(Debug, Default)]
pub struct PendingCalls {
    calls: std::sync::Mutex<HashMap<String, Pending>>,
    next: std::sync::atomic::AtomicU64,
}

impl PendingCalls {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A nonce for a new call and the receiver of its answer; `None` if too many are waiting.
    fn open(&self, info: Option<RunningInfo>) -> Option<(String, oneshot::Receiver<ClientAnswer>)> {
        let mut calls = self.lock();
        if calls.len() >= MAX_PENDING_CALLS {
            // Calls the broker stopped waiting for (their receivers are gone) go first.
            calls.retain(|_, (tx, _)| !tx.is_closed());
            if calls.len() >= MAX_PENDING_CALLS {
                return None;
            }
        }
        let nonce = format!("silo-{:x}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        calls.insert(nonce.clone(), (tx, info));
        Some((nonce, rx))
    }

    fn close(&self, nonce: &str) -> Option<Pending> {
        self.lock().remove(nonce)
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn code_of(status: Option<&Status>) -> Option<Code> {
    status.and_then(|s| Code::try_from(s.code).ok())
}

impl Frontend {
    /// The gRPC consumers of `group`, as admin reads list them.
    pub fn grpc_consumers(&self, group: &str) -> Vec<FrontEndConsumer> {
        self.clients
            .consumers_of(group)
            .into_iter()
            .map(|c| FrontEndConsumer {
                client_id: c.client_id,
                client_addr: c.remote.unwrap_or(self.local),
                language: LanguageCode::from_name(&c.language),
                version: LISTED_VERSION,
                consume_type: if c.client_type == ClientType::PushConsumer {
                    ConsumeType::Passively
                } else {
                    ConsumeType::Actively
                },
                subscriptions: c
                    .subscriptions
                    .iter()
                    .map(|e| {
                        let f = e.expression.as_ref();
                        Subscription {
                            topic: e.topic.as_ref().map(|t| t.name.clone()).unwrap_or_default(),
                            expression_type: if f.is_some_and(|f| f.r#type == FilterType::Sql as i32) {
                                "SQL92"
                            } else {
                                "TAG"
                            },
                            expression: f.map(|f| f.expression.clone()).unwrap_or_default(),
                        }
                    })
                    .collect(),
            })
            .collect()
    }

    /// What the settings of consumer `client_id` of `group` say of its running state (the
    /// properties Java's push consumer reports that apply).
    fn running_info(&self, group: &str, client_id: &str) -> Option<RunningInfo> {
        let c = self.grpc_consumers(group).into_iter().find(|c| c.client_id == client_id)?;
        let settings = self.clients.settings(client_id)?;
        let fifo = match &settings.pub_sub {
            Some(crate::proto::settings::PubSub::Subscription(s)) => s.fifo.unwrap_or(false),
            _ => false,
        };
        let mut properties = vec![
            ("PROP_CONSUME_TYPE".to_owned(), c.consume_type.java_name().to_owned()),
            ("PROP_CONSUMEORDERLY".to_owned(), fifo.to_string()),
        ];
        if let Some(ua) = &settings.user_agent {
            properties.push(("PROP_CLIENT_VERSION".to_owned(), ua.version.clone()));
        }
        Some(RunningInfo { properties, subscriptions: c.subscriptions, jstack: None })
    }

    /// Pushes `call` to consumer `client_id` of `group`; `None` if it has no open stream.
    pub fn call_grpc_client(
        &self,
        group: &str,
        client_id: &str,
        call: ClientCall,
    ) -> Option<oneshot::Receiver<ClientAnswer>> {
        let stream = self.clients.consumer_stream(group, client_id)?;
        let answered = |a: ClientAnswer| {
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(a);
            Some(rx)
        };
        let refused = |e: BrokerError| answered(ClientAnswer::Refused(e));
        let (info, jstack) = match &call {
            ClientCall::RunningInfo { jstack } => (self.running_info(group, client_id), *jstack),
            ClientCall::VerifyMessage { .. } => (None, false),
        };
        if let (Some(info), false) = (&info, jstack) {
            // All it is asked is known here.
            return answered(ClientAnswer::RunningInfo(info.clone()));
        }
        let Some((nonce, rx)) = self.calls.open(info) else {
            return refused(BrokerError::ClientCallFailed("too many calls wait for gRPC clients' answers".into()));
        };
        let command = match call {
            ClientCall::RunningInfo { .. } => {
                Command::PrintThreadStackTraceCommand(PrintThreadStackTraceCommand { nonce: nonce.clone() })
            }
            ClientCall::VerifyMessage { record } => {
                let Ok(Decoded::Record(rec)) = decode_record(&record, 0) else {
                    self.calls.close(&nonce);
                    return refused(BrokerError::StoredRecordCorrupt);
                };
                let max_inflated = self.broker.config.max_message_size as u64;
                let reconsumed = rec.meta.reconsume_times;
                let message =
                    convert::pushed_message(&rec, record.slice_ref(rec.body), rec.topic, reconsumed, max_inflated);
                Command::VerifyMessageCommand(Box::new(VerifyMessageCommand {
                    nonce: nonce.clone(),
                    message: Some(message),
                }))
            }
        };
        let cmd = TelemetryCommand { status: Some(ok()), command: Some(command) };
        if stream.try_send(Ok(cmd)).is_err() {
            self.calls.close(&nonce);
            return refused(BrokerError::ClientCallFailed(format!("the stream to gRPC client {client_id} is full")));
        }
        Some(rx)
    }

    /// A client's ThreadStackTrace: OK carries the stack; VERIFY_FIFO_MESSAGE_UNSUPPORTED and any
    /// other status refuse, in the proxy's words.
    pub(crate) fn thread_stack_answered(&self, status: Option<&Status>, t: ThreadStackTrace) {
        let Some((tx, info)) = self.calls.close(&t.nonce) else { return };
        let answer = match code_of(status) {
            Some(Code::Ok) => ClientAnswer::RunningInfo(RunningInfo {
                jstack: Some(t.thread_stack_trace.unwrap_or_default()),
                ..info.unwrap_or_default()
            }),
            Some(Code::VerifyFifoMessageUnsupported) => {
                ClientAnswer::Refused(BrokerError::ClientRefused("forbidden to verify message".into()))
            }
            _ => ClientAnswer::Refused(BrokerError::ClientCallFailed("verify message failed".into())),
        };
        let _ = tx.send(answer);
    }

    /// A client's VerifyMessageResult: its status says how its listener took the message.
    pub(crate) fn verify_answered(&self, status: Option<&Status>, v: &VerifyMessageResult) {
        let Some((tx, _)) = self.calls.close(&v.nonce) else { return };
        let outcome = match code_of(status) {
            Some(Code::Ok) => Some(ConsumeOutcome::Success),
            Some(Code::FailedToConsumeMessage) => Some(ConsumeOutcome::Later),
            Some(Code::MessageCorrupted) => Some(ConsumeOutcome::ReturnNull),
            _ => None,
        };
        let _ = tx.send(ClientAnswer::Verified { outcome, remark: "from gRPC client".into() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_waiting_at_once_are_bounded_and_the_abandoned_ones_make_room() {
        let pending = PendingCalls::default();
        let mut waiting: Vec<_> = (0..MAX_PENDING_CALLS).map(|_| pending.open(None).unwrap()).collect();
        assert!(pending.open(None).is_none(), "more calls than the bound were opened");
        // The broker stopped waiting for one (its receiver dropped, as after a timeout).
        let (abandoned, _) = waiting.pop().unwrap();
        assert!(pending.open(None).is_some());
        assert!(pending.close(&abandoned).is_none(), "an abandoned call was kept");
        // An answer reaches the call of its nonce, once.
        let (nonce, mut rx) = waiting.pop().unwrap();
        let (tx, _) = pending.close(&nonce).unwrap();
        tx.send(ClientAnswer::Verified { outcome: Some(ConsumeOutcome::Success), remark: String::new() }).unwrap();
        assert!(matches!(rx.try_recv(), Ok(ClientAnswer::Verified { outcome: Some(ConsumeOutcome::Success), .. })));
        assert!(pending.close(&nonce).is_none());
    }
}
