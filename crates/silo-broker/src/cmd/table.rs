//! The request table: every request code the broker and the name server answer, with its
//! handler. Dispatch is a lookup here (sorted by code, binary search); nothing else in the crate
//! matches on request codes. Codes themselves live in `silo_wire::codes`.

use std::sync::Arc;

use silo_wire::Frame;
use silo_wire::body::encode_json_body;
use silo_wire::codes::request as rq;

use crate::auth::access::{self as a, Access};
use crate::auth::model::Action::{Create, Delete, Get, Pub, Sub, Update};
use crate::broker::{Broker, ConnState};
use crate::connection::{Channel, Outgoing};
use crate::namesrv::RouteTable;
use crate::response;

/// A broker request handler: `None` when nothing is to be sent now (the answer comes later,
/// from a task, such as a parked pull or a send waiting for its flush).
pub type BrokerHandler = fn(&Arc<Broker>, &mut ConnState, &Channel, Frame) -> Option<Outgoing>;

/// A name-server request handler.
pub type NameServerHandler = fn(&RouteTable, &Frame) -> Outgoing;

/// Who answers a request code, and how.
#[derive(Debug, Clone, Copy)]
pub enum Handler {
    Broker(BrokerHandler),
    NameServer(NameServerHandler),
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub code: i32,
    pub name: &'static str,
    pub handler: Handler,
    /// What the request touches, for authorization (Java's header annotations; none: open to
    /// every authenticated user, as in Java).
    pub access: Access,
    /// Answered from consume queues or the index, which dispatch fills just after an append is
    /// acknowledged: the answer waits until dispatch has caught up with the log as it was when
    /// the request arrived. (Pulls do this themselves, only when they would come back empty.)
    pub reads_dispatched: bool,
}

const fn broker(code: i32, name: &'static str, handler: BrokerHandler) -> Request {
    Request { code, name, handler: Handler::Broker(handler), reads_dispatched: false, access: Access::Open }
}

const fn broker_after_dispatch(code: i32, name: &'static str, handler: BrokerHandler) -> Request {
    Request { code, name, handler: Handler::Broker(handler), reads_dispatched: true, access: Access::Open }
}

const fn namesrv(code: i32, name: &'static str, handler: NameServerHandler) -> Request {
    Request { code, name, handler: Handler::NameServer(handler), reads_dispatched: false, access: Access::Open }
}

impl Request {
    /// The row with `access` for authorization.
    const fn access(self, access: Access) -> Self {
        Self { access, ..self }
    }
}

/// Every request Silo answers, sorted by code.
pub static REQUESTS: &[Request] = &[
    broker(rq::SEND_MESSAGE, "SEND_MESSAGE", |b, c, ch, f| b.send_message(c, ch, f)).access(Access::Custom(a::send)),
    broker(rq::PULL_MESSAGE, "PULL_MESSAGE", |b, _, ch, f| b.pull_message(ch, f)).access(Access::Custom(a::pull)),
    broker_after_dispatch(rq::QUERY_MESSAGE, "QUERY_MESSAGE", |b, _, _, f| Some(b.query_message(&f)))
        .access(Access::Fields(&[a::topic("topic")], &[Sub, Get])),
    broker(rq::QUERY_CONSUMER_OFFSET, "QUERY_CONSUMER_OFFSET", |b, _, _, f| Some(b.query_consumer_offset(&f)))
        .access(Access::Custom(a::query_offset)),
    broker(rq::UPDATE_CONSUMER_OFFSET, "UPDATE_CONSUMER_OFFSET", |b, _, _, f| Some(b.update_consumer_offset(&f)))
        .access(Access::Custom(a::update_offset)),
    broker(rq::UPDATE_AND_CREATE_TOPIC, "UPDATE_AND_CREATE_TOPIC", |b, _, _, f| Some(b.create_topic_frame(&f)))
        .access(Access::Fields(&[a::topic("topic")], &[Create])),
    broker(rq::GET_ALL_TOPIC_CONFIG, "GET_ALL_TOPIC_CONFIG", |b, _, _, f| Some(b.all_topic_config(&f))),
    broker(rq::GET_BROKER_RUNTIME_INFO, "GET_BROKER_RUNTIME_INFO", |b, _, _, f| Some(b.runtime_info_frame(&f))),
    broker_after_dispatch(rq::SEARCH_OFFSET_BY_TIMESTAMP, "SEARCH_OFFSET_BY_TIMESTAMP", |b, _, _, f| {
        Some(b.search_offset_by_timestamp(&f))
    })
    .access(Access::Fields(&[a::topic("topic")], &[Get])),
    broker_after_dispatch(rq::GET_MAX_OFFSET, "GET_MAX_OFFSET", |b, _, _, f| Some(b.get_max_offset(&f)))
        .access(Access::Fields(&[a::topic("topic")], &[Get])),
    broker(rq::GET_MIN_OFFSET, "GET_MIN_OFFSET", |b, _, _, f| Some(b.get_min_offset(&f)))
        .access(Access::Fields(&[a::topic("topic")], &[Get])),
    broker(rq::GET_EARLIEST_MSG_STORETIME, "GET_EARLIEST_MSG_STORETIME", |b, _, _, f| {
        Some(b.earliest_msg_store_time(&f))
    })
    .access(Access::Fields(&[a::topic("topic")], &[Get])),
    broker(rq::VIEW_MESSAGE_BY_ID, "VIEW_MESSAGE_BY_ID", |b, _, _, f| Some(b.view_message(&f)))
        .access(Access::Fields(&[a::topic("topic")], &[Get])),
    broker(rq::HEART_BEAT, "HEART_BEAT", |b, _, ch, f| Some(b.heartbeat_frame(ch, &f)))
        .access(Access::Custom(a::heartbeat)),
    broker(rq::UNREGISTER_CLIENT, "UNREGISTER_CLIENT", |b, _, _, f| Some(b.unregister_client(&f)))
        .access(Access::Fields(&[a::group("consumerGroup")], &[Sub])),
    broker(rq::CONSUMER_SEND_MSG_BACK, "CONSUMER_SEND_MSG_BACK", |b, c, _, f| Some(b.send_back_frame(c, &f)))
        .access(Access::Fields(&[a::group("group")], &[Sub])),
    broker(rq::END_TRANSACTION, "END_TRANSACTION", |b, c, _, f| b.end_transaction_frame(c, &f))
        .access(Access::Fields(&[a::topic("topic")], &[Pub])),
    broker(rq::GET_CONSUMER_LIST_BY_GROUP, "GET_CONSUMER_LIST_BY_GROUP", |b, _, _, f| Some(b.consumer_list(&f)))
        .access(Access::Fields(&[a::group("consumerGroup")], &[Sub, Get])),
    broker(rq::LOCK_BATCH_MQ, "LOCK_BATCH_MQ", |b, _, _, f| Some(b.lock_batch(&f))).access(Access::Custom(a::lock)),
    broker(rq::UNLOCK_BATCH_MQ, "UNLOCK_BATCH_MQ", |b, _, _, f| Some(b.unlock_batch(&f)))
        .access(Access::Custom(a::lock)),
    broker(rq::GET_ALL_CONSUMER_OFFSET, "GET_ALL_CONSUMER_OFFSET", |b, _, _, f| Some(b.all_consumer_offsets_frame(&f))),
    broker(rq::GET_ALL_DELAY_OFFSET, "GET_ALL_DELAY_OFFSET", |b, _, _, f| Some(b.all_delay_offsets_frame(&f))),
    broker(rq::CHECK_CLIENT_CONFIG, "CHECK_CLIENT_CONFIG", |b, _, _, f| Some(b.check_client_config(&f))),
    broker(rq::GET_TIMER_CHECK_POINT, "GET_TIMER_CHECK_POINT", |b, _, _, f| Some(b.timer_checkpoint_frame(&f))),
    broker(rq::GET_TIMER_METRICS, "GET_TIMER_METRICS", |b, _, _, f| Some(b.timer_metrics_frame(&f))),
    namesrv(rq::PUT_KV_CONFIG, "PUT_KV_CONFIG", super::namesrv::kv).access(Access::Cluster(&[Update])),
    namesrv(rq::GET_KV_CONFIG, "GET_KV_CONFIG", super::namesrv::kv).access(Access::Cluster(&[Get])),
    namesrv(rq::DELETE_KV_CONFIG, "DELETE_KV_CONFIG", super::namesrv::kv).access(Access::Cluster(&[Update])),
    namesrv(rq::REGISTER_BROKER, "REGISTER_BROKER", super::namesrv::register)
        .access(Access::ClusterFields(&[a::cluster("clusterName")], &[Update])),
    namesrv(rq::UNREGISTER_BROKER, "UNREGISTER_BROKER", super::namesrv::unregister)
        .access(Access::ClusterFields(&[a::cluster("clusterName")], &[Update])),
    namesrv(rq::GET_ROUTEINFO_BY_TOPIC, "GET_ROUTEINFO_BY_TOPIC", super::namesrv::route),
    namesrv(rq::GET_BROKER_CLUSTER_INFO, "GET_BROKER_CLUSTER_INFO", |t, f| {
        response::with_body(f.header.opaque, encode_json_body(&t.cluster_info()))
    }),
    broker(rq::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", |b, _, _, f| {
        Some(b.update_group_frame(&f))
    })
    .access(Access::Custom(a::group_in_body)),
    broker(rq::GET_ALL_SUBSCRIPTIONGROUP_CONFIG, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", |b, _, _, f| {
        Some(b.all_group_config_frame(&f))
    }),
    broker_after_dispatch(rq::GET_TOPIC_STATS_INFO, "GET_TOPIC_STATS_INFO", |b, _, _, f| Some(b.topic_stats_frame(&f)))
        .access(Access::Fields(&[a::topic("topic")], &[Get])),
    broker(rq::GET_CONSUMER_CONNECTION_LIST, "GET_CONSUMER_CONNECTION_LIST", |b, _, _, f| {
        Some(b.consumer_connections(&f))
    })
    .access(Access::Fields(&[a::group("consumerGroup")], &[Get])),
    namesrv(rq::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", |t, f| {
        response::with_body(f.header.opaque, encode_json_body(&t.topic_list()))
    }),
    broker(rq::DELETE_SUBSCRIPTIONGROUP, "DELETE_SUBSCRIPTIONGROUP", |b, _, _, f| Some(b.delete_group_frame(&f)))
        .access(Access::Fields(&[a::group("groupName")], &[Delete])),
    broker_after_dispatch(rq::GET_CONSUME_STATS, "GET_CONSUME_STATS", |b, _, _, f| Some(b.consume_stats_frame(&f)))
        .access(Access::Fields(&[a::group("consumerGroup"), a::topic("topic"), a::topics("topicList", ';')], &[Get])),
    broker(rq::DELETE_TOPIC_IN_BROKER, "DELETE_TOPIC_IN_BROKER", |b, _, _, f| Some(b.delete_topic_frame(&f)))
        .access(Access::Fields(&[a::topic("topic")], &[Delete])),
    namesrv(rq::DELETE_TOPIC_IN_NAMESRV, "DELETE_TOPIC_IN_NAMESRV", super::namesrv::delete_topic)
        .access(Access::ClusterFields(&[a::cluster("clusterName")], &[Update])),
    broker(rq::QUERY_TOPIC_CONSUME_BY_WHO, "QUERY_TOPIC_CONSUME_BY_WHO", |b, _, _, f| Some(b.topic_consumed_by(&f)))
        .access(Access::Fields(&[a::topic("topic")], &[Get])),
    broker(rq::GET_CONSUMER_RUNNING_INFO, "GET_CONSUMER_RUNNING_INFO", |b, _, ch, f| b.consumer_running_info(ch, f))
        .access(Access::Fields(&[a::group("consumerGroup")], &[Get])),
    broker(rq::CONSUME_MESSAGE_DIRECTLY, "CONSUME_MESSAGE_DIRECTLY", |b, _, ch, f| b.consume_message_directly(ch, f))
        .access(Access::Fields(&[a::group("consumerGroup"), a::topic("topic")], &[Sub])),
    broker(rq::SEND_MESSAGE_V2, "SEND_MESSAGE_V2", |b, c, ch, f| b.send_message(c, ch, f))
        .access(Access::Custom(a::send_v2)),
    broker(rq::SEND_BATCH_MESSAGE, "SEND_BATCH_MESSAGE", |b, c, ch, f| b.send_message(c, ch, f))
        .access(Access::Custom(a::send_v2)),
    broker(rq::SEND_REPLY_MESSAGE, "SEND_REPLY_MESSAGE", |b, c, ch, f| b.send_reply(c, ch, f)),
    broker(rq::SEND_REPLY_MESSAGE_V2, "SEND_REPLY_MESSAGE_V2", |b, c, ch, f| b.send_reply(c, ch, f)),
    broker(rq::GET_TOPIC_CONFIG, "GET_TOPIC_CONFIG", |b, _, _, f| Some(b.topic_config(&f)))
        .access(Access::Fields(&[a::topic("topic")], &[Get])),
    broker(rq::GET_SUBSCRIPTIONGROUP_CONFIG, "GET_SUBSCRIPTIONGROUP_CONFIG", |b, _, _, f| {
        Some(b.group_config_frame(&f))
    })
    .access(Access::Fields(&[a::group("group")], &[Get])),
    broker(rq::LITE_PULL_MESSAGE, "LITE_PULL_MESSAGE", |b, _, ch, f| b.pull_message(ch, f))
        .access(Access::Custom(a::pull)),
    broker(rq::RECALL_MESSAGE, "RECALL_MESSAGE", |b, c, ch, f| b.recall_frame(c, ch, &f))
        .access(Access::Fields(&[a::topic("topic")], &[Pub])),
    broker(rq::QUERY_ASSIGNMENT, "QUERY_ASSIGNMENT", |b, _, _, f| Some(b.query_assignment_frame(&f))),
    broker(rq::SET_MESSAGE_REQUEST_MODE, "SET_MESSAGE_REQUEST_MODE", |b, _, _, f| Some(b.set_request_mode_frame(&f))),
    broker(rq::GET_ALL_MESSAGE_REQUEST_MODE, "GET_ALL_MESSAGE_REQUEST_MODE", |b, _, _, f| {
        Some(b.all_request_modes_frame(&f))
    }),
    broker(rq::GET_BROKER_HA_STATUS, "GET_BROKER_HA_STATUS", |b, _, _, f| Some(b.ha_status_frame(&f))),
    broker(rq::AUTH_CREATE_USER, "AUTH_CREATE_USER", |b, _, _, f| Some(b.create_user_frame(&f)))
        .access(Access::Cluster(&[Update])),
    broker(rq::AUTH_UPDATE_USER, "AUTH_UPDATE_USER", |b, _, _, f| Some(b.update_user_frame(&f)))
        .access(Access::Cluster(&[Update])),
    broker(rq::AUTH_DELETE_USER, "AUTH_DELETE_USER", |b, _, _, f| Some(b.delete_user_frame(&f)))
        .access(Access::Cluster(&[Update])),
    broker(rq::AUTH_GET_USER, "AUTH_GET_USER", |b, _, _, f| Some(b.get_user_frame(&f))).access(Access::Cluster(&[Get])),
    broker(rq::AUTH_LIST_USER, "AUTH_LIST_USER", |b, _, _, f| Some(b.list_users_frame(&f)))
        .access(Access::Cluster(&[Get])),
    broker(rq::AUTH_CREATE_ACL, "AUTH_CREATE_ACL", |b, _, _, f| Some(b.put_acl_frame(&f)))
        .access(Access::Cluster(&[Update])),
    broker(rq::AUTH_UPDATE_ACL, "AUTH_UPDATE_ACL", |b, _, _, f| Some(b.put_acl_frame(&f)))
        .access(Access::Cluster(&[Update])),
    broker(rq::AUTH_DELETE_ACL, "AUTH_DELETE_ACL", |b, _, _, f| Some(b.delete_acl_frame(&f)))
        .access(Access::Cluster(&[Update])),
    broker(rq::AUTH_GET_ACL, "AUTH_GET_ACL", |b, _, _, f| Some(b.get_acl_frame(&f))).access(Access::Cluster(&[Get])),
    broker(rq::AUTH_LIST_ACL, "AUTH_LIST_ACL", |b, _, _, f| Some(b.list_acls_frame(&f)))
        .access(Access::Cluster(&[Get])),
    broker(rq::POP_MESSAGE, "POP_MESSAGE", |b, c, ch, f| b.pop_message(c, ch, f))
        .access(Access::Fields(&[a::group("consumerGroup"), a::topic("topic")], &[Sub])),
    broker(rq::ACK_MESSAGE, "ACK_MESSAGE", |b, c, ch, f| b.ack_message(c, ch, &f))
        .access(Access::Fields(&[a::group("consumerGroup"), a::topic("topic")], &[Sub])),
    broker(rq::PEEK_MESSAGE, "PEEK_MESSAGE", |b, _, _, f| Some(b.peek_message(&f)))
        .access(Access::Fields(&[a::topic("topic"), a::group("consumerGroup")], &[Sub])),
    broker(rq::CHANGE_MESSAGE_INVISIBLETIME, "CHANGE_MESSAGE_INVISIBLETIME", |b, c, ch, f| {
        b.change_invisible_frame(c, ch, &f)
    })
    .access(Access::Fields(&[a::group("consumerGroup"), a::topic("topic")], &[Sub])),
    broker(rq::NOTIFICATION, "NOTIFICATION", |b, _, ch, f| b.notification(ch, &f))
        .access(Access::Fields(&[a::group("consumerGroup"), a::topic("topic")], &[Sub])),
    broker(rq::POLLING_INFO, "POLLING_INFO", |b, _, _, f| Some(b.polling_info(&f)))
        .access(Access::Fields(&[a::group("consumerGroup"), a::topic("topic")], &[Get])),
    broker(rq::BATCH_ACK_MESSAGE, "BATCH_ACK_MESSAGE", |b, c, ch, f| b.batch_ack_message(c, ch, &f)),
];

/// The row for `code`, if Silo answers it.
pub fn find(code: i32) -> Option<&'static Request> {
    REQUESTS.binary_search_by_key(&code, |r| r.code).ok().and_then(|i| REQUESTS.get(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_sorted_and_none_appears_twice() {
        for pair in REQUESTS.windows(2) {
            if let [a, b] = pair {
                assert!(a.code < b.code, "{} ({}) must come before {} ({})", a.name, a.code, b.name, b.code);
            }
        }
    }

    #[test]
    fn every_row_is_found_by_its_code() {
        for r in REQUESTS {
            assert_eq!(find(r.code).map(|f| f.name), Some(r.name));
        }
    }

    #[test]
    fn every_code_silo_answers_has_a_row() {
        // The codes the stock clients and admin tools send that Silo serves (protocol §2.1, §2.9,
        // §2.10); a new handler must be added here and to the table.
        let answered = [
            rq::SEND_MESSAGE,
            rq::SEND_MESSAGE_V2,
            rq::SEND_BATCH_MESSAGE,
            rq::PULL_MESSAGE,
            rq::LITE_PULL_MESSAGE,
            rq::QUERY_MESSAGE,
            rq::QUERY_CONSUMER_OFFSET,
            rq::UPDATE_CONSUMER_OFFSET,
            rq::UPDATE_AND_CREATE_TOPIC,
            rq::GET_ALL_TOPIC_CONFIG,
            rq::GET_ALL_CONSUMER_OFFSET,
            rq::GET_ALL_DELAY_OFFSET,
            rq::GET_TIMER_CHECK_POINT,
            rq::GET_TIMER_METRICS,
            rq::GET_BROKER_RUNTIME_INFO,
            rq::SEARCH_OFFSET_BY_TIMESTAMP,
            rq::GET_MAX_OFFSET,
            rq::GET_MIN_OFFSET,
            rq::GET_EARLIEST_MSG_STORETIME,
            rq::VIEW_MESSAGE_BY_ID,
            rq::HEART_BEAT,
            rq::UNREGISTER_CLIENT,
            rq::CONSUMER_SEND_MSG_BACK,
            rq::END_TRANSACTION,
            rq::GET_CONSUMER_LIST_BY_GROUP,
            rq::LOCK_BATCH_MQ,
            rq::UNLOCK_BATCH_MQ,
            rq::CHECK_CLIENT_CONFIG,
            rq::GET_TOPIC_STATS_INFO,
            rq::GET_CONSUMER_CONNECTION_LIST,
            rq::GET_CONSUME_STATS,
            rq::DELETE_TOPIC_IN_BROKER,
            rq::QUERY_TOPIC_CONSUME_BY_WHO,
            rq::GET_CONSUMER_RUNNING_INFO,
            rq::CONSUME_MESSAGE_DIRECTLY,
            rq::GET_TOPIC_CONFIG,
            rq::SEND_REPLY_MESSAGE,
            rq::SEND_REPLY_MESSAGE_V2,
            rq::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
            rq::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
            rq::DELETE_SUBSCRIPTIONGROUP,
            rq::GET_SUBSCRIPTIONGROUP_CONFIG,
            rq::SET_MESSAGE_REQUEST_MODE,
            rq::GET_ALL_MESSAGE_REQUEST_MODE,
            rq::GET_BROKER_HA_STATUS,
            rq::RECALL_MESSAGE,
            rq::QUERY_ASSIGNMENT,
            rq::POP_MESSAGE,
            rq::ACK_MESSAGE,
            rq::PEEK_MESSAGE,
            rq::CHANGE_MESSAGE_INVISIBLETIME,
            rq::NOTIFICATION,
            rq::POLLING_INFO,
            rq::BATCH_ACK_MESSAGE,
            rq::AUTH_CREATE_USER,
            rq::AUTH_UPDATE_USER,
            rq::AUTH_DELETE_USER,
            rq::AUTH_GET_USER,
            rq::AUTH_LIST_USER,
            rq::AUTH_CREATE_ACL,
            rq::AUTH_UPDATE_ACL,
            rq::AUTH_DELETE_ACL,
            rq::AUTH_GET_ACL,
            rq::AUTH_LIST_ACL,
        ];
        for code in answered {
            assert!(matches!(find(code).map(|r| r.handler), Some(Handler::Broker(_))), "broker code {code}");
        }
        let namesrv = [
            rq::PUT_KV_CONFIG,
            rq::GET_KV_CONFIG,
            rq::DELETE_KV_CONFIG,
            rq::REGISTER_BROKER,
            rq::UNREGISTER_BROKER,
            rq::GET_ROUTEINFO_BY_TOPIC,
            rq::GET_BROKER_CLUSTER_INFO,
            rq::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
            rq::DELETE_TOPIC_IN_NAMESRV,
        ];
        for code in namesrv {
            assert!(matches!(find(code).map(|r| r.handler), Some(Handler::NameServer(_))), "name server code {code}");
        }
        assert_eq!(REQUESTS.len(), answered.len() + namesrv.len(), "a row without a listed code");
    }
}
