//! Clients (docs/protocol.md §2.5–§2.8): heartbeats register a client's consumer groups and
//! their subscriptions, group membership changes are announced to the members, and orderly
//! consumers lock the queues they consume.

use silo_wire::LanguageCode;
use silo_wire::body::{ConsumerData, ProducerData};

use super::BrokerError;
use crate::broker::Broker;
use crate::connection::Channel;

/// A queue, as lock requests name it: (topic, broker name, queue id).
pub type QueueName = (String, String, i32);

impl Broker {
    /// A heartbeat from `client_id` over `channel`: every producer group it reports is
    /// registered (check-backs and replies reach it through this channel); every consumer
    /// group gets its retry topic (so its consumers find a route for it) and is registered with
    /// its subscriptions; members of groups that changed are told so.
    pub fn heartbeat(
        &self,
        client_id: &str,
        producers: &[ProducerData],
        consumers: &[ConsumerData],
        channel: &Channel,
        sender: (LanguageCode, i32),
    ) -> Result<(), BrokerError> {
        for producer in producers {
            self.clients.register_producer(client_id, &producer.group_name, channel, sender);
        }
        let mut changed = Vec::new();
        for consumer in consumers {
            self.ensure_retry_topic(&consumer.group_name)?;
            changed.extend(self.clients.register_consumer(client_id, consumer, channel, sender));
        }
        self.notify(changed);
        Ok(())
    }

    /// Creates a consumer group's retry topic (`%RETRY%group`) if it is missing: its consumers
    /// find a route for their retries, and admin tools find the group's broker through it.
    pub fn ensure_retry_topic(&self, group: &str) -> Result<(), BrokerError> {
        let retry = format!("{}{group}", silo_store::names::RETRY_PREFIX);
        if self.topics.queues(&retry).is_none() {
            self.topics.ensure_system(&retry, 1)?;
            self.register_routes_if_changed();
        }
        Ok(())
    }

    /// A client leaves a producer group.
    pub fn leave_producer_group(&self, client_id: &str, group: &str) {
        self.clients.unregister_producer(client_id, group);
    }

    /// A client leaves a consumer group.
    pub fn leave_group(&self, client_id: &str, group: &str) {
        let changed = self.clients.unregister_consumer(client_id, group);
        self.notify(changed.into_iter().collect());
    }

    /// The client ids of a group's online members.
    pub fn group_members(&self, group: &str) -> Result<Vec<String>, BrokerError> {
        let ids = self.clients.consumer_ids(group);
        if ids.is_empty() {
            return Err(BrokerError::NoConsumer(group.to_owned()));
        }
        Ok(ids)
    }

    /// CHECK_CLIENT_CONFIG: whether the broker can filter by this subscription (a TAG
    /// expression, or an SQL92 one that compiles while `enablePropertyFilter` is on).
    pub fn check_filter(&self, expression: &str, expression_type: Option<&str>) -> Result<(), BrokerError> {
        super::filter::filter_for(&self.selectors, expression, expression_type, self.config.enable_property_filter)
            .map(drop)
    }

    /// Locks `queues` for `client_id` of `group` (orderly consumption); returns those granted.
    pub fn lock_queues(&self, group: &str, client_id: &str, queues: &[QueueName]) -> Vec<QueueName> {
        self.clients.lock_queues(group, client_id, queues)
    }

    pub fn unlock_queues(&self, group: &str, client_id: &str, queues: &[QueueName]) {
        self.clients.unlock_queues(group, client_id, queues);
    }
}
