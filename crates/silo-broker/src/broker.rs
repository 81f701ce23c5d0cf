//! The broker's shared state and request routing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use silo_store::{Appender, Store};
use silo_wire::Frame;
use silo_wire::codes::{request as rq, response as rs};

use crate::clients::{Changed, ClientRegistry};
use crate::config::BrokerConfig;
use crate::connection::{Channel, Outgoing};
use crate::namesrv::{BROKER_EXPIRY, Registration, RouteTable};
use crate::offsets::OffsetManager;
use crate::response;
use crate::topics::TopicManager;

/// Per-connection state the handlers reuse (so that the send path allocates nothing per
/// message for encoding).
#[derive(Debug, Default)]
pub struct ConnState {
    pub appender: Appender,
    pub props: String,
}

#[derive(Debug)]
pub struct Broker {
    pub config: BrokerConfig,
    pub store: Arc<Store>,
    pub topics: TopicManager,
    pub offsets: OffsetManager,
    pub clients: ClientRegistry,
    /// The name server this broker registers with in-process (embedded mode).
    pub embedded_routes: Option<Arc<RouteTable>>,
    pub started: Instant,
    pub stats: Stats,
    next_queue: AtomicU64,
    /// Topic-config version last registered with the embedded name server.
    registered_version: std::sync::atomic::AtomicI64,
}

#[derive(Debug, Default)]
pub struct Stats {
    pub put_messages: AtomicU64,
    pub get_messages: AtomicU64,
}

impl Broker {
    /// Opens the store and the config files under `storePathRootDir`.
    pub fn open(
        config: BrokerConfig,
        embedded_routes: Option<Arc<RouteTable>>,
    ) -> Result<Arc<Self>, silo_store::StoreError> {
        let store = Arc::new(Store::open(config.store_config())?);
        let config_dir = config.store_path_root_dir.join("config");
        let topics = TopicManager::load(config_dir.join("topics.json"), &config)?;
        let offsets = OffsetManager::load(config_dir.join("consumerOffset.json"))?;
        let broker = Arc::new(Self {
            config,
            store,
            topics,
            offsets,
            clients: ClientRegistry::new(),
            embedded_routes,
            started: Instant::now(),
            stats: Stats::default(),
            next_queue: AtomicU64::new(0),
            registered_version: std::sync::atomic::AtomicI64::new(-1),
        });
        broker.register_routes();
        Ok(broker)
    }

    /// Registers with the embedded name server if the topics changed since the last time: the
    /// request handlers call this after anything that may create a topic, so it must cost no
    /// more than a version check when nothing changed (every send passes here).
    pub fn register_routes_if_changed(&self) {
        let version = self.topics.version();
        if self.registered_version.swap(version, Ordering::AcqRel) != version {
            self.register_routes();
        }
    }

    /// Registers this broker's topics with the embedded name server (the external ones are
    /// handled by the registration task in `server`).
    pub fn register_routes(&self) {
        if let Some(routes) = &self.embedded_routes {
            let table = self.topics.table();
            let addr = self.config.broker_addr().to_string();
            routes.register(&Registration {
                cluster: &self.config.broker_cluster_name,
                broker_name: &self.config.broker_name,
                broker_addr: &addr,
                broker_id: self.config.broker_id,
                timeout: BROKER_EXPIRY,
                topics: &table,
            });
        }
    }

    /// Picks a queue for a send that let the broker choose (queueId < 0).
    pub fn pick_queue(&self, write_queues: i32) -> i32 {
        let n = self.next_queue.fetch_add(1, Ordering::Relaxed);
        (n % write_queues.max(1) as u64) as i32
    }

    /// Sends NOTIFY_CONSUMER_IDS_CHANGED to every member of each changed group.
    pub fn notify(&self, changed: Vec<Changed>) {
        for c in changed {
            for ch in &c.channels {
                let mut ext = silo_wire::ExtFields::new();
                ext.insert("consumerGroup", c.group.as_str());
                ch.send_oneway_request(rq::NOTIFY_CONSUMER_IDS_CHANGED, ext);
            }
        }
    }

    /// Handles one request. `None` when nothing is to be sent now (one-way requests, parked
    /// pulls that answer later).
    pub fn handle(self: &Arc<Self>, conn: &mut ConnState, channel: &Channel, frame: Frame) -> Option<Outgoing> {
        let h = &frame.header;
        if reads_dispatched_state(h.code) && self.store.dispatch_behind() > 0 {
            // The answer must include every message acknowledged before this request: wait
            // (bounded) for dispatch to catch up with the log as it is now, then answer.
            let broker = Arc::clone(self);
            let channel = channel.clone();
            tokio::spawn(async move {
                broker.store.caught_up(crate::cmd::pull::CATCH_UP).await;
                let mut conn = ConnState::default();
                if let Some(out) = broker.handle_now(&mut conn, &channel, frame) {
                    channel.send(out);
                }
            });
            return None;
        }
        self.handle_now(conn, channel, frame)
    }

    fn handle_now(self: &Arc<Self>, conn: &mut ConnState, channel: &Channel, frame: Frame) -> Option<Outgoing> {
        let h = &frame.header;
        let opaque = h.opaque;
        let oneway = h.is_oneway();
        let out = match h.code {
            rq::SEND_MESSAGE | rq::SEND_MESSAGE_V2 | rq::SEND_BATCH_MESSAGE => {
                return self.send_message(conn, channel, frame);
            }
            rq::PULL_MESSAGE | rq::LITE_PULL_MESSAGE => return self.pull_message(channel, frame, true),
            rq::QUERY_CONSUMER_OFFSET => self.query_consumer_offset(&frame),
            rq::UPDATE_CONSUMER_OFFSET => self.update_consumer_offset(&frame),
            rq::GET_MAX_OFFSET => self.get_max_offset(&frame),
            rq::GET_MIN_OFFSET => self.get_min_offset(&frame),
            rq::SEARCH_OFFSET_BY_TIMESTAMP => self.search_offset_by_timestamp(&frame),
            rq::GET_EARLIEST_MSG_STORETIME => self.earliest_msg_store_time(&frame),
            rq::HEART_BEAT => self.heartbeat(channel, &frame),
            rq::UNREGISTER_CLIENT => self.unregister_client(&frame),
            rq::CHECK_CLIENT_CONFIG => self.check_client_config(&frame),
            rq::GET_CONSUMER_LIST_BY_GROUP => self.consumer_list(&frame),
            rq::LOCK_BATCH_MQ => self.lock_batch(&frame),
            rq::UNLOCK_BATCH_MQ => self.unlock_batch(&frame),
            rq::CONSUMER_SEND_MSG_BACK => self.send_back(conn, &frame),
            rq::UPDATE_AND_CREATE_TOPIC => self.create_topic(&frame),
            crate::cmd::admin::DELETE_TOPIC_IN_BROKER => self.delete_topic(&frame),
            crate::cmd::admin::GET_CONSUME_STATS => self.consume_stats(&frame),
            crate::cmd::admin::GET_TOPIC_STATS_INFO => self.topic_stats(&frame),
            crate::cmd::admin::QUERY_TOPIC_CONSUME_BY_WHO => self.topic_consumed_by(&frame),
            crate::cmd::admin::GET_CONSUMER_CONNECTION_LIST => self.consumer_connections(&frame),
            crate::cmd::admin::GET_TOPIC_CONFIG => self.topic_config(&frame),
            rq::GET_ALL_TOPIC_CONFIG => self.all_topic_config(&frame),
            rq::GET_BROKER_RUNTIME_INFO => self.runtime_info(&frame),
            rq::VIEW_MESSAGE_BY_ID => self.view_message(&frame),
            rq::QUERY_MESSAGE => self.query_message(&frame),
            code => {
                response::error(opaque, rs::REQUEST_CODE_NOT_SUPPORTED, format!(" request type {code} not supported"))
            }
        };
        if out.header.code != rs::SUCCESS {
            tracing::debug!(request = h.code, response = out.header.code, remark = ?out.header.remark, "request refused");
        }
        (!oneway).then_some(out)
    }
}

/// Requests answered from consume queues or the index, which dispatch fills just after an
/// append is acknowledged (pulls handle this themselves, only when they would come back empty).
fn reads_dispatched_state(code: i32) -> bool {
    matches!(
        code,
        rq::GET_MAX_OFFSET
            | rq::SEARCH_OFFSET_BY_TIMESTAMP
            | rq::QUERY_MESSAGE
            | crate::cmd::admin::GET_CONSUME_STATS
            | crate::cmd::admin::GET_TOPIC_STATS_INFO
    )
}
