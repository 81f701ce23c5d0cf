//! What each RPC touches, for authorization (`authorizationEnabled`): the resources and
//! actions Apache's proxy checks for the same request, read from the request itself.
//!
//! - publishing (SendMessage, RecallMessage, EndTransaction, a producer's settings): Pub on
//!   the topic;
//! - consuming (ReceiveMessage, AckMessage, ForwardMessageToDeadLetterQueue, QueryAssignment, a
//!   consumer's settings): Sub on the group and on the topic; ChangeInvisibleDuration, a
//!   consumer's Heartbeat and a NotifyClientTermination that names a group: Sub on the group;
//! - QueryRoute: Pub or Sub on the topic.
//!
//! A refusal answers UNAUTHORIZED, as the proxy answers both failed checks, with the words of
//! the broker's refusal (user, resource, address, reason).

use std::borrow::Cow;

use silo_broker::auth::access::Need;
use silo_broker::auth::model::{Action, ResourceKind};

use crate::proto::{self, ClientType};

/// What a request would need to be granted; `Err` says what it lacks to tell (the proxy's
/// words).
pub trait Touches {
    fn touches(&self) -> Result<Vec<Need<'_>>, &'static str>;
}

fn name(r: Option<&proto::Resource>) -> &str {
    r.map_or("", |r| r.name.as_str())
}

fn need<'a>(kind: ResourceKind, name: &'a str, actions: &'static [Action]) -> Need<'a> {
    Need { kind, name: Cow::Borrowed(name), actions }
}

fn publish(topic: Option<&proto::Resource>) -> Result<Vec<Need<'_>>, &'static str> {
    let topic = name(topic);
    if topic.trim().is_empty() {
        return Err("topic is null.");
    }
    Ok(vec![need(ResourceKind::Topic, topic, &[Action::Pub])])
}

fn group_sub(group: Option<&proto::Resource>) -> Result<Need<'_>, &'static str> {
    let group = name(group);
    if group.trim().is_empty() {
        return Err("group is null.");
    }
    Ok(need(ResourceKind::Group, group, &[Action::Sub]))
}

fn topic_sub(topic: Option<&proto::Resource>) -> Result<Need<'_>, &'static str> {
    let topic = name(topic);
    if topic.trim().is_empty() {
        return Err("topic is null.");
    }
    Ok(need(ResourceKind::Topic, topic, &[Action::Sub]))
}

fn subscribe<'a>(
    group: Option<&'a proto::Resource>,
    topic: Option<&'a proto::Resource>,
) -> Result<Vec<Need<'a>>, &'static str> {
    Ok(vec![group_sub(group)?, topic_sub(topic)?])
}

/// Requests that name the topic they publish to.
macro_rules! publishes {
    ($($request:ident),*) => {$(
        impl Touches for proto::$request {
            fn touches(&self) -> Result<Vec<Need<'_>>, &'static str> {
                publish(self.topic.as_ref())
            }
        }
    )*};
}
publishes!(RecallMessageRequest, EndTransactionRequest);

/// Requests that name the group and the topic they consume.
macro_rules! consumes {
    ($($request:ident),*) => {$(
        impl Touches for proto::$request {
            fn touches(&self) -> Result<Vec<Need<'_>>, &'static str> {
                subscribe(self.group.as_ref(), self.topic.as_ref())
            }
        }
    )*};
}
consumes!(AckMessageRequest, ForwardMessageToDeadLetterQueueRequest, QueryAssignmentRequest);

impl Touches for proto::SendMessageRequest {
    fn touches(&self) -> Result<Vec<Need<'_>>, &'static str> {
        let first = self.messages.first().ok_or("message is null.")?;
        publish(first.topic.as_ref())
    }
}

impl Touches for proto::HeartbeatRequest {
    fn touches(&self) -> Result<Vec<Need<'_>>, &'static str> {
        let consumer = matches!(
            ClientType::try_from(self.client_type),
            Ok(ClientType::PushConsumer | ClientType::SimpleConsumer | ClientType::PullConsumer)
        );
        if !consumer {
            return Ok(Vec::new());
        }
        Ok(vec![group_sub(self.group.as_ref())?])
    }
}

impl Touches for proto::ReceiveMessageRequest {
    fn touches(&self) -> Result<Vec<Need<'_>>, &'static str> {
        let queue = self.message_queue.as_ref().ok_or("messageQueue is null.")?;
        subscribe(self.group.as_ref(), queue.topic.as_ref())
    }
}

impl Touches for proto::NotifyClientTerminationRequest {
    fn touches(&self) -> Result<Vec<Need<'_>>, &'static str> {
        if name(self.group.as_ref()).trim().is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![group_sub(self.group.as_ref())?])
    }
}

impl Touches for proto::ChangeInvisibleDurationRequest {
    fn touches(&self) -> Result<Vec<Need<'_>>, &'static str> {
        Ok(vec![group_sub(self.group.as_ref())?])
    }
}

impl Touches for proto::QueryRouteRequest {
    fn touches(&self) -> Result<Vec<Need<'_>>, &'static str> {
        let topic = name(self.topic.as_ref());
        if topic.trim().is_empty() {
            return Err("topic is null.");
        }
        Ok(vec![need(ResourceKind::Topic, topic, &[Action::Pub, Action::Sub])])
    }
}

impl Touches for proto::Settings {
    fn touches(&self) -> Result<Vec<Need<'_>>, &'static str> {
        use proto::settings::PubSub;
        match &self.pub_sub {
            Some(PubSub::Publishing(p)) => {
                let mut out = Vec::new();
                for topic in &p.topics {
                    out.extend(publish(Some(topic))?);
                }
                Ok(out)
            }
            Some(PubSub::Subscription(s)) => {
                let mut out = vec![group_sub(s.group.as_ref())?];
                for entry in &s.subscriptions {
                    out.push(topic_sub(entry.topic.as_ref())?);
                }
                Ok(out)
            }
            None => Err("settings command doesn't have publishing or subscription."),
        }
    }
}

/// A Telemetry stream is checked command by command (its settings), not when it opens.
impl<T> Touches for tonic::Streaming<T> {
    fn touches(&self) -> Result<Vec<Need<'_>>, &'static str> {
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn resource(name: &str) -> Option<proto::Resource> {
        Some(proto::Resource { name: name.into(), ..Default::default() })
    }

    #[test]
    fn each_rpc_needs_what_apaches_proxy_checks() {
        let send = proto::SendMessageRequest {
            messages: vec![proto::Message { topic: resource("Orders"), ..Default::default() }],
        };
        let needs = send.touches().unwrap();
        assert_eq!(
            (needs[0].kind, &*needs[0].name, needs[0].actions),
            (ResourceKind::Topic, "Orders", &[Action::Pub][..])
        );
        assert_eq!(proto::SendMessageRequest::default().touches(), Err("message is null."));

        let ack = proto::AckMessageRequest { group: resource("G"), topic: resource("Orders"), ..Default::default() };
        let needs = ack.touches().unwrap();
        assert_eq!(
            needs.iter().map(|n| (n.kind, &*n.name)).collect::<Vec<_>>(),
            [(ResourceKind::Group, "G"), (ResourceKind::Topic, "Orders")]
        );
        assert!(needs.iter().all(|n| n.actions == [Action::Sub]));
        assert_eq!(proto::ReceiveMessageRequest::default().touches(), Err("messageQueue is null."));

        let route = proto::QueryRouteRequest { topic: resource("Orders"), ..Default::default() };
        assert_eq!(route.touches().unwrap()[0].actions, [Action::Pub, Action::Sub]);
        let producer = proto::HeartbeatRequest { client_type: ClientType::Producer as i32, ..Default::default() };
        assert!(producer.touches().unwrap().is_empty());
        let consumer = proto::HeartbeatRequest { client_type: ClientType::SimpleConsumer as i32, group: resource("G") };
        assert_eq!(consumer.touches().unwrap()[0].kind, ResourceKind::Group);
    }
}
