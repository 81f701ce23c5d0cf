//! A client's session: Heartbeat, the Telemetry stream and NotifyClientTermination.
//!
//! Every 5.x SDK opens Telemetry first and sends its [`Settings`]; the broker answers with the
//! settings it imposes (for a consumer: whether the group is FIFO, the batch size, the long-poll
//! time and the retry policy, which the push consumer takes from here and nowhere else). The
//! stream then stays open: it is how the broker reaches the client (transaction checks).

use std::sync::Arc;
use std::time::Duration;

use silo_wire::body::SubscriptionGroupConfig;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Streaming};

use crate::clients::STREAM_QUEUE;
use crate::frontend::{Frontend, ok, status};
use crate::proto::settings::PubSub;
use crate::proto::telemetry_command::Command;
use crate::proto::{
    ClientType, Code, CustomizedBackoff, ExponentialBackoff, HeartbeatRequest, HeartbeatResponse,
    NotifyClientTerminationRequest, NotifyClientTerminationResponse, RetryPolicy, Settings, TelemetryCommand,
    retry_policy::Strategy,
};
use crate::validate;

/// What a consumer is told to ask for at most per receive (Apache's proxy's
/// `grpcClientConsumerLongPollingBatchSize`).
pub const RECEIVE_BATCH_SIZE: i32 = 32;
/// The longest long poll a consumer is told to make (the proxy's maximum).
pub const LONG_POLLING_MAX: Duration = Duration::from_secs(20);
/// Attempts a producer makes for one send.
pub const PRODUCER_MAX_ATTEMPTS: i32 = 3;

/// A group's default retry schedule (Apache's customized retry policy: RocketMQ's delay
/// levels, 1 s ... 2 h), as a customized back-off.
const RETRY_DELAYS_S: [u64; 18] =
    [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200];

/// A Rust variant name in the proto's spelling (`PushConsumer` as `PUSH_CONSUMER`).
fn code_style(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_ascii_lowercase();
        out.push(c.to_ascii_uppercase());
    }
    out
}

fn duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}

fn millis(v: &serde_json::Value, key: &str) -> Option<Duration> {
    v.get(key).and_then(serde_json::Value::as_u64).map(Duration::from_millis)
}

/// A group's retry policy (`groupRetryPolicy` of its subscription-group config) as the SDKs
/// take it: exponential when configured so, else the customized schedule.
fn retry_policy(group: Option<&SubscriptionGroupConfig>) -> RetryPolicy {
    let max_attempts = group.map_or(16, |g| g.retry_max_times).saturating_add(1);
    let policy = group.map(|g| &g.group_retry_policy);
    let kind = policy.and_then(|p| p.get("type")).and_then(serde_json::Value::as_str).unwrap_or("CUSTOMIZED");
    let strategy = if kind.eq_ignore_ascii_case("EXPONENTIAL") {
        let e = policy.and_then(|p| p.get("exponentialRetryPolicy"));
        let initial = e.and_then(|e| millis(e, "initial")).unwrap_or(Duration::from_secs(5));
        let max = e.and_then(|e| millis(e, "max")).unwrap_or(Duration::from_secs(7200));
        let multiplier = e.and_then(|e| e.get("multiplier")).and_then(serde_json::Value::as_f64).unwrap_or(2.0);
        Strategy::ExponentialBackoff(ExponentialBackoff {
            initial: Some(duration(initial)),
            max: Some(duration(max)),
            multiplier: multiplier as f32,
        })
    } else {
        let next: Vec<prost_types::Duration> = policy
            .and_then(|p| p.get("customizedRetryPolicy"))
            .and_then(|c| c.get("next"))
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter().filter_map(serde_json::Value::as_u64).map(|ms| duration(Duration::from_millis(ms))).collect()
            })
            .filter(|v: &Vec<_>| !v.is_empty())
            .unwrap_or_else(|| RETRY_DELAYS_S.iter().map(|&s| duration(Duration::from_secs(s))).collect());
        Strategy::CustomizedBackoff(CustomizedBackoff { next })
    };
    RetryPolicy { max_attempts, strategy: Some(strategy) }
}

impl Frontend {
    /// The settings the broker answers a client's with.
    pub fn server_settings(&self, client: &Settings) -> Settings {
        let mut out = client.clone();
        match &mut out.pub_sub {
            Some(PubSub::Publishing(p)) => {
                p.validate_message_type = true;
                p.max_body_size = i32::try_from(self.broker.config.max_message_size).unwrap_or(i32::MAX);
                out.backoff_policy = Some(RetryPolicy {
                    max_attempts: PRODUCER_MAX_ATTEMPTS,
                    strategy: Some(Strategy::ExponentialBackoff(ExponentialBackoff {
                        initial: Some(duration(Duration::from_millis(10))),
                        max: Some(duration(Duration::from_secs(1))),
                        multiplier: 2.0,
                    })),
                });
            }
            Some(PubSub::Subscription(s)) => {
                let name = s.group.as_ref().map(|g| g.name.as_str()).unwrap_or("");
                let group = self.broker.groups.find(name).ok().flatten();
                s.fifo = Some(group.as_ref().is_some_and(|g| g.consume_message_orderly));
                s.receive_batch_size = Some(RECEIVE_BATCH_SIZE);
                s.long_polling_timeout = Some(duration(LONG_POLLING_MAX));
                out.backoff_policy = Some(retry_policy(group.as_ref()));
            }
            None => {}
        }
        out.metric = Some(crate::proto::Metric { on: false, endpoints: None });
        out
    }

    /// Settings Apache's proxy refuses, with the gRPC status that ends the stream.
    fn check_settings(&self, s: &Settings) -> Result<(), tonic::Status> {
        let refuse = |m: &str| tonic::Status::invalid_argument(format!("process client telemetryCommand failed. {m}"));
        match &s.pub_sub {
            Some(PubSub::Publishing(p)) => {
                for t in &p.topics {
                    validate::topic(&t.name).map_err(|e| refuse(&e.message))?;
                }
            }
            Some(PubSub::Subscription(sub)) => {
                let kind = s.client_type.and_then(|t| ClientType::try_from(t).ok()).unwrap_or(ClientType::Unspecified);
                if !matches!(kind, ClientType::PushConsumer | ClientType::SimpleConsumer) {
                    return Err(tonic::Status::internal(format!(
                        "process client telemetryCommand failed. Client type is not consumer, type: {}",
                        code_style(&format!("{kind:?}"))
                    )));
                }
                validate::group(sub.group.as_ref().map_or("", |g| g.name.as_str())).map_err(|e| refuse(&e.message))?;
                for entry in &sub.subscriptions {
                    let Some(f) = &entry.expression else { continue };
                    let kind = if f.r#type() == crate::proto::FilterType::Sql { Some("SQL92") } else { Some("TAG") };
                    if self.broker.check_filter(&f.expression, kind).is_err() {
                        return Err(refuse("expression format is not correct"));
                    }
                }
            }
            None => {
                return Err(tonic::Status::invalid_argument("there is no publishing or subscription data in settings"));
            }
        }
        Ok(())
    }

    pub(crate) async fn heartbeat(
        self: &Arc<Self>,
        req: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, tonic::Status> {
        let caller = match self.caller(&req) {
            Ok(c) => c,
            Err(s) => return Ok(Response::new(HeartbeatResponse { status: Some(s) })),
        };
        let Some(settings) = self.clients.settings(&caller.client_id) else {
            let s = status(Code::UnrecognizedClientType, "cannot find client settings for this client");
            return Ok(Response::new(HeartbeatResponse { status: Some(s) }));
        };
        // The settings say what the client is; the request's own type is not read.
        let kind = settings.client_type.and_then(|t| ClientType::try_from(t).ok()).unwrap_or(ClientType::Unspecified);
        let s = match kind {
            ClientType::Producer => ok(),
            ClientType::PushConsumer | ClientType::SimpleConsumer => {
                let group = req.get_ref().group.as_ref().map_or("", |g| g.name.as_str());
                match validate::group(group) {
                    Ok(()) => {
                        // As a remoting consumer's heartbeat does: admin tools (mqadmin
                        // consumerConnection, consumerStatus) find the group's broker by it.
                        if let Err(e) = self.broker.ensure_retry_topic(group) {
                            tracing::warn!(group, error = %e, "cannot create the group's retry topic");
                        }
                        ok()
                    }
                    Err(s) => s,
                }
            }
            other => status(Code::UnrecognizedClientType, code_style(&format!("CLIENT_TYPE_{other:?}"))),
        };
        Ok(Response::new(HeartbeatResponse { status: Some(s) }))
    }

    pub(crate) async fn notify_client_termination(
        self: &Arc<Self>,
        req: Request<NotifyClientTerminationRequest>,
    ) -> Result<Response<NotifyClientTerminationResponse>, tonic::Status> {
        let caller = match self.caller(&req) {
            Ok(c) => c,
            Err(s) => return Ok(Response::new(NotifyClientTerminationResponse { status: Some(s) })),
        };
        if self.clients.settings(&caller.client_id).is_none() {
            let s = status(Code::UnrecognizedClientType, "cannot find client settings for this client");
            return Ok(Response::new(NotifyClientTerminationResponse { status: Some(s) }));
        }
        self.clients.remove(&caller.client_id);
        // What it still holds comes back soon, rather than when its invisible time runs out.
        let now = self.broker.config.clock.now_ms();
        if let Err(e) = self.with_conn(|conn| self.broker.release_owned_pops(conn, &caller.client_id, now)) {
            tracing::warn!(client = caller.client_id, error = %e, "releasing a terminated client's messages failed");
        }
        Ok(Response::new(NotifyClientTerminationResponse { status: Some(ok()) }))
    }

    pub(crate) async fn telemetry(
        self: &Arc<Self>,
        req: Request<Streaming<TelemetryCommand>>,
    ) -> Result<Response<ReceiverStream<Result<TelemetryCommand, tonic::Status>>>, tonic::Status> {
        let (tx, rx) = tokio::sync::mpsc::channel(STREAM_QUEUE);
        let caller = match self.caller(&req) {
            Ok(c) => c,
            Err(s) => {
                // One command with the status, then the stream ends (as the proxy answers).
                let _ = tx.try_send(Ok(TelemetryCommand { status: Some(s), command: None }));
                return Ok(Response::new(ReceiverStream::new(rx)));
            }
        };
        // The registry holds the stream's only sender: when it lets the stream go (the client
        // terminated, or opened too many), the answer stream ends. The reader below answers
        // through a weak one.
        let weak = tx.downgrade();
        let stream_id = self.clients.open_stream(&caller.client_id, tx, caller.remote, &caller.language);
        let mut inbound = req.into_inner();
        let fe = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                let next = inbound.next().await;
                let cmd = match next {
                    Some(Ok(cmd)) => cmd,
                    Some(Err(e)) => {
                        tracing::debug!(client = caller.client_id, error = %e, "telemetry stream broken");
                        break;
                    }
                    None => break,
                };
                fe.clients.seen(&caller.client_id);
                // Answers to the broker's own commands go to whoever waits for them; commands a
                // client has no business sending are ignored, as the proxy ignores them.
                let s = match cmd.command {
                    Some(Command::Settings(s)) => s,
                    Some(Command::ThreadStackTrace(t)) => {
                        fe.thread_stack_answered(cmd.status.as_ref(), t);
                        continue;
                    }
                    Some(Command::VerifyMessageResult(v)) => {
                        fe.verify_answered(cmd.status.as_ref(), &v);
                        continue;
                    }
                    _ => continue,
                };
                let Some(tx) = weak.upgrade() else { break };
                if let Err(refused) = fe.check_settings(&s) {
                    let _ = tx.send(Err(refused)).await;
                    break;
                }
                // Refused settings are not taken; the client hears why, as the proxy tells it.
                if let Err(refused) = fe.authorize(caller.user.as_deref(), &*s, caller.remote) {
                    let reply = TelemetryCommand { status: Some(refused), command: None };
                    if tx.send(Ok(reply)).await.is_err() {
                        break;
                    }
                    continue;
                }
                let answer = fe.server_settings(&s);
                // A consumer is listed as online from its settings on: its group's retry topic
                // must route from then on too, for admin tools find the group's broker by it (its
                // first heartbeat may come only after it has consumed).
                if let Some((group, _, _)) = crate::clients::consumer_group(&s)
                    && crate::validate::group(group).is_ok()
                    && let Err(e) = fe.broker.ensure_retry_topic(group)
                {
                    tracing::warn!(group, error = %e, "cannot create the group's retry topic");
                }
                fe.clients.set_settings(&caller.client_id, *s);
                let reply = TelemetryCommand { status: Some(ok()), command: Some(Command::Settings(Box::new(answer))) };
                if tx.send(Ok(reply)).await.is_err() {
                    break;
                }
            }
            fe.clients.close_stream(&caller.client_id, stream_id);
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}
