//! What a request touches, for authorization: each row of the request table says which
//! resources its request names (topic, group, cluster) and which actions it performs on them,
//! the way Java's request headers declare them. A request that names none is open to every
//! authenticated user, as in Java.
//!
//! A topic's route (GET_ROUTEINFO_BY_TOPIC) is open too. Java's name server checks nothing;
//! Silo's checks the signature of every request but leaves what a route is used for to the
//! broker: refused at the name server, a send fails with "No route info of this topic", which
//! hides why, while the broker's refusal of the send itself names the user, the resource and
//! the reason. The name server authorizes what changes it (registrations, KV config, topic
//! deletion: Update on the cluster).

use std::borrow::Cow;

use serde::Deserialize;
use silo_wire::Frame;

use super::model::{Action, ResourceKind, Target, group_name, is_retry_topic};

/// A resource a request names and what it wants to do to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need<'a> {
    pub kind: ResourceKind,
    pub name: Cow<'a, str>,
    pub actions: &'static [Action],
}

impl Need<'_> {
    #[must_use]
    pub fn target(&self) -> Target<'_> {
        Target { kind: self.kind, name: &self.name }
    }
}

/// A header field that names a resource.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub kind: ResourceKind,
    pub name: &'static str,
    /// Several names in one field, separated by this.
    pub split: Option<char>,
}

/// How a request's resources are found.
#[derive(Debug, Clone, Copy)]
pub enum Access {
    /// None: any authenticated user may.
    Open,
    /// The broker's cluster.
    Cluster(&'static [Action]),
    /// The resources the fields name (absent or empty fields name none); a retry topic is
    /// checked as its group.
    Fields(&'static [Field], &'static [Action]),
    /// As `Fields`, and the broker's cluster if the fields name nothing.
    ClusterFields(&'static [Field], &'static [Action]),
    /// Worked out by a function of its own (sends, pulls, heartbeats, locks).
    Custom(fn(&Frame) -> Result<Vec<Need<'_>>, AccessError>),
}

/// The request could not be read far enough to know what it touches.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parse authorization context error.")]
pub struct AccessError;

pub const fn topic(name: &'static str) -> Field {
    Field { kind: ResourceKind::Topic, name, split: None }
}

pub const fn group(name: &'static str) -> Field {
    Field { kind: ResourceKind::Group, name, split: None }
}

pub const fn cluster(name: &'static str) -> Field {
    Field { kind: ResourceKind::Cluster, name, split: None }
}

pub const fn topics(name: &'static str, split: char) -> Field {
    Field { kind: ResourceKind::Topic, name, split: Some(split) }
}

use Action::{Create, Get, Pub, Sub, Update};

impl Access {
    /// What `frame` needs; `cluster` names the broker's cluster.
    pub fn needs<'a>(&self, frame: &'a Frame, cluster: &'a str) -> Result<Vec<Need<'a>>, AccessError> {
        let fields = |fields: &[Field], actions: &'static [Action]| {
            let mut out = Vec::new();
            for f in fields {
                let Some(value) = frame.header.ext_fields.get(f.name) else { continue };
                let mut add = |name: &'a str| {
                    if !name.is_empty() {
                        out.push(named(f.kind, name, actions));
                    }
                };
                match f.split {
                    Some(sep) => value.split(sep).for_each(&mut add),
                    None => add(value),
                }
            }
            out
        };
        Ok(match *self {
            Self::Open => Vec::new(),
            Self::Cluster(actions) => vec![Need { kind: ResourceKind::Cluster, name: cluster.into(), actions }],
            Self::Fields(f, actions) => fields(f, actions),
            Self::ClusterFields(f, actions) => {
                let mut out = fields(f, actions);
                if out.is_empty() {
                    out.push(Need { kind: ResourceKind::Cluster, name: cluster.into(), actions });
                }
                out
            }
            Self::Custom(f) => f(frame)?,
        })
    }
}

/// A named resource; a retry topic is its group. For front ends that build their own needs.
pub fn named<'a>(kind: ResourceKind, name: &'a str, actions: &'static [Action]) -> Need<'a> {
    match kind {
        ResourceKind::Topic if is_retry_topic(name) => {
            Need { kind: ResourceKind::Group, name: group_name(name).into(), actions }
        }
        ResourceKind::Group => Need { kind, name: group_name(name).into(), actions },
        _ => Need { kind, name: name.into(), actions },
    }
}

fn field<'a>(frame: &'a Frame, name: &str) -> Option<&'a str> {
    frame.header.ext_fields.get(name).filter(|v| !v.trim().is_empty())
}

fn send_with(frame: &Frame, topic_field: &str, group_field: &str) -> Vec<Need<'static>> {
    let topic = frame.header.ext_fields.get(topic_field).unwrap_or_default();
    if is_retry_topic(topic) {
        // A consumer sending a message back to its retry topic: a member of the group.
        let group = field(frame, group_field).unwrap_or(topic);
        vec![Need { kind: ResourceKind::Group, name: group_name(group).to_owned().into(), actions: &[Sub] }]
    } else {
        vec![Need { kind: ResourceKind::Topic, name: topic.to_owned().into(), actions: &[Pub] }]
    }
}

/// SEND_MESSAGE: Pub on the topic (Sub on the group for its retry topic).
pub fn send(frame: &Frame) -> Result<Vec<Need<'_>>, AccessError> {
    Ok(send_with(frame, "topic", "group"))
}

/// SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE, whose fields have one-letter names.
pub fn send_v2(frame: &Frame) -> Result<Vec<Need<'_>>, AccessError> {
    Ok(send_with(frame, "b", "a"))
}

fn topic_and_group<'a>(frame: &'a Frame, actions: &'static [Action]) -> Vec<Need<'a>> {
    let mut out = Vec::with_capacity(2);
    let topic = frame.header.ext_fields.get("topic").unwrap_or_default();
    if !is_retry_topic(topic) {
        out.push(Need { kind: ResourceKind::Topic, name: topic.into(), actions });
    }
    let group = frame.header.ext_fields.get("consumerGroup").unwrap_or_default();
    out.push(Need { kind: ResourceKind::Group, name: group_name(group).into(), actions });
    out
}

/// PULL_MESSAGE: Sub on the topic (not for a retry topic: the group covers it) and the group.
pub fn pull(frame: &Frame) -> Result<Vec<Need<'_>>, AccessError> {
    Ok(topic_and_group(frame, &[Sub]))
}

/// QUERY_CONSUMER_OFFSET: Sub or Get on the topic and the group.
pub fn query_offset(frame: &Frame) -> Result<Vec<Need<'_>>, AccessError> {
    Ok(topic_and_group(frame, &[Sub, Get]))
}

/// UPDATE_CONSUMER_OFFSET: Sub or Update on the topic and the group.
pub fn update_offset(frame: &Frame) -> Result<Vec<Need<'_>>, AccessError> {
    Ok(topic_and_group(frame, &[Sub, Update]))
}

/// Sub on `group` and on each of `topics` but retry topics (the group covers those).
fn sub_on_group_and_topics(out: &mut Vec<Need<'_>>, group: &str, topics: impl IntoIterator<Item = String>) {
    out.push(Need { kind: ResourceKind::Group, name: group_name(group).to_owned().into(), actions: &[Sub] });
    for topic in topics.into_iter().filter(|t| !is_retry_topic(t)) {
        out.push(Need { kind: ResourceKind::Topic, name: topic.into(), actions: &[Sub] });
    }
}

/// HEART_BEAT: a consumer's heartbeat needs Sub on its groups and the topics they subscribe;
/// a producer's needs nothing.
pub fn heartbeat(frame: &Frame) -> Result<Vec<Need<'_>>, AccessError> {
    let data: silo_wire::body::HeartbeatData =
        silo_wire::body::decode_json_body(&frame.body).map_err(|_| AccessError)?;
    let mut out = Vec::new();
    for consumer in data.consumer_data_set {
        let topics = consumer.subscription_data_set.into_iter().map(|s| s.topic);
        sub_on_group_and_topics(&mut out, &consumer.group_name, topics);
    }
    Ok(out)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct GroupBody {
    #[serde(deserialize_with = "silo_wire::lenient::string")]
    group_name: String,
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: Create or Update on the group its body names. (Java's
/// broker checks nothing for it; a normal user changing any group's settings is not what an
/// operator who turned authorization on expects.)
pub fn group_in_body(frame: &Frame) -> Result<Vec<Need<'_>>, AccessError> {
    let body: GroupBody = silo_wire::body::decode_json_body(&frame.body).map_err(|_| AccessError)?;
    Ok(vec![Need {
        kind: ResourceKind::Group,
        name: group_name(&body.group_name).to_owned().into(),
        actions: &[Create, Update],
    }])
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct LockBody {
    #[serde(deserialize_with = "silo_wire::lenient::string")]
    consumer_group: String,
    #[serde(deserialize_with = "silo_wire::lenient::or_empty")]
    mq_set: Vec<LockedQueue>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct LockedQueue {
    #[serde(deserialize_with = "silo_wire::lenient::string")]
    topic: String,
}

/// LOCK_BATCH_MQ and UNLOCK_BATCH_MQ: Sub on the group and the queues' topics.
pub fn lock(frame: &Frame) -> Result<Vec<Need<'_>>, AccessError> {
    let body: LockBody = silo_wire::body::decode_json_body(&frame.body).map_err(|_| AccessError)?;
    let mut out = Vec::new();
    sub_on_group_and_topics(&mut out, &body.consumer_group, body.mq_set.into_iter().map(|q| q.topic));
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use silo_wire::RemotingHeader;

    use super::*;

    fn frame(fields: &[(&'static str, &'static str)], body: &[u8]) -> Frame {
        let mut header = RemotingHeader::request(10, 1);
        for (k, v) in fields {
            header.ext_fields.insert(*k, *v);
        }
        Frame { serialize: silo_wire::SerializeType::Json, header, body: bytes::Bytes::copy_from_slice(body) }
    }

    fn names(needs: &[Need<'_>]) -> Vec<String> {
        needs.iter().map(|n| format!("{}:{} {:?}", n.kind, n.name, n.actions)).collect()
    }

    #[test]
    fn sends_pulls_and_routes_need_what_javas_broker_checks() {
        let f = frame(&[("b", "orders"), ("a", "pg")], b"");
        assert_eq!(names(&send_v2(&f).unwrap()), ["Topic:orders [Pub]"]);
        let f = frame(&[("b", "%RETRY%cg"), ("a", "cg")], b"");
        assert_eq!(names(&send_v2(&f).unwrap()), ["Group:cg [Sub]"]);
        let f = frame(&[("topic", "orders"), ("consumerGroup", "cg")], b"");
        assert_eq!(names(&pull(&f).unwrap()), ["Topic:orders [Sub]", "Group:cg [Sub]"]);
        let f = frame(&[("topic", "%RETRY%cg"), ("consumerGroup", "cg")], b"");
        assert_eq!(names(&pull(&f).unwrap()), ["Group:cg [Sub]"]);
    }

    #[test]
    fn fields_name_resources_and_the_cluster_is_the_fallback() {
        let f = frame(&[("topicList", "a;b;"), ("consumerGroup", "%RETRY%g")], b"");
        const STATS: Access = Access::Fields(&[group("consumerGroup"), topics("topicList", ';')], &[Get]);
        let access = STATS;
        assert_eq!(names(&access.needs(&f, "c").unwrap()), ["Group:g [Get]", "Topic:a [Get]", "Topic:b [Get]"]);
        const REGISTER: Access = Access::ClusterFields(&[cluster("clusterName")], &[Update]);
        let access = REGISTER;
        assert_eq!(names(&access.needs(&f, "DefaultCluster").unwrap()), ["Cluster:DefaultCluster [Update]"]);
        assert!(Access::Open.needs(&f, "c").unwrap().is_empty());
    }

    #[test]
    fn heartbeats_and_locks_name_groups_and_topics_from_their_bodies() {
        let body = br#"{"clientID":"c","consumerDataSet":[{"groupName":"cg","subscriptionDataSet":[{"topic":"orders"},{"topic":"%RETRY%cg"}]}],"producerDataSet":[{"groupName":"pg"}]}"#;
        assert_eq!(names(&heartbeat(&frame(&[], body)).unwrap()), ["Group:cg [Sub]", "Topic:orders [Sub]"]);
        let body =
            br#"{"consumerGroup":"cg","clientId":"c","mqSet":[{"topic":"orders","brokerName":"b","queueId":1}]}"#;
        assert_eq!(names(&lock(&frame(&[], body)).unwrap()), ["Group:cg [Sub]", "Topic:orders [Sub]"]);
        assert_eq!(heartbeat(&frame(&[], b"{not json")), Err(AccessError));
    }
}
