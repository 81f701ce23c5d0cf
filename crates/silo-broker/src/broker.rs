//! The broker's shared state and request routing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use silo_store::{Appender, Store};
use silo_wire::codes::request as rq;

use crate::clients::{Changed, ClientRegistry};
use crate::config::BrokerConfig;
use crate::namesrv::{BROKER_EXPIRY, Registration, RouteTable};
use crate::offsets::OffsetManager;
use crate::topics::TopicManager;

/// Per-connection state the handlers reuse (so that the send path allocates nothing per
/// message for encoding).
#[derive(Debug, Default)]
pub struct ConnState {
    pub appender: Appender,
    pub props: String,
    /// A reused buffer for bodies the broker writes itself (pop journal records).
    pub scratch: Vec<u8>,
}

/// What a front end other than remoting (gRPC) offers the broker's own services: the way to
/// reach its clients.
pub trait FrontEnd: Send + Sync + std::fmt::Debug {
    /// Sends a transaction check to one producer of the check's topic; false if none of that
    /// front end's clients can take it.
    fn check_transaction(&self, check: &crate::core::transaction::Check, turn: usize) -> bool;
    /// Whether a client of that front end is still connected (its auto-renewed pops are
    /// renewed while it is).
    fn client_alive(&self, client_id: &str) -> bool;
    /// Adds the front end's figures to GET_BROKER_RUNTIME_INFO.
    fn runtime_info(&self, table: &mut std::collections::BTreeMap<String, String>);
    /// That front end's online consumers of `group`, for admin reads (GET_CONSUMER_CONNECTION_LIST).
    fn consumers(&self, group: &str) -> Vec<crate::core::client_call::FrontEndConsumer> {
        let _ = group;
        Vec::new()
    }
    /// Passes an admin's call on to `client_id` of consumer `group`; `None` if that front end
    /// has no such consumer online. The answer comes through the receiver (which the broker
    /// drops once it stops waiting).
    fn call_client(
        &self,
        group: &str,
        client_id: &str,
        call: crate::core::client_call::ClientCall,
    ) -> Option<tokio::sync::oneshot::Receiver<crate::core::client_call::ClientAnswer>> {
        let _ = (group, client_id, call);
        None
    }
}

#[derive(Debug)]
pub struct Broker {
    pub config: BrokerConfig,
    pub store: Arc<Store>,
    pub topics: TopicManager,
    pub offsets: OffsetManager,
    /// Consumer groups' settings (`subscriptionGroup.json`).
    pub groups: crate::groups::SubscriptionGroups,
    /// How groups consume topics, PULL or POP (`messageRequestMode.json`).
    pub request_modes: crate::request_modes::RequestModes,
    pub clients: ClientRegistry,
    /// Pending and recently resolved transactions (rebuilt from the store at start).
    pub transactions: std::sync::Mutex<crate::core::transaction::TxBook>,
    /// Compiled SQL92 subscriptions.
    pub selectors: crate::core::filter::SelectorCache,
    /// Unacknowledged pops and orderly holds (rebuilt from the pop journal at start).
    pub pop: Arc<crate::core::pop::PopState>,
    /// The name server this broker registers with in-process (embedded mode).
    pub embedded_routes: Option<Arc<RouteTable>>,
    pub started: Instant,
    pub stats: Stats,
    next_queue: AtomicU64,
    /// Topic-config version last registered with the embedded name server.
    registered_version: std::sync::atomic::AtomicI64,
    /// The replication links of this broker (as master: its slaves; as slave: its master).
    pub ha_links: crate::ha::HaLinks,
    /// The gRPC front end, once it serves.
    front_end: std::sync::OnceLock<Arc<dyn FrontEnd>>,
    /// Who may call, and what they may do (`config/auth.json`).
    pub auth: Arc<crate::auth::Auth>,
    /// Counters for Prometheus (`metricsExporterType=PROM`), kept whether or not exported.
    pub metrics: crate::metrics::Metrics,
    /// The certificate every TLS port serves, loaded (or generated) by the first port that
    /// needs it.
    tls_identity: std::sync::Mutex<Option<Arc<crate::tls::Identity>>>,
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
        // A slave's log is its master's: nothing of its own is written, from the start.
        store.set_following(!config.ha.role.is_master());
        let config_dir = config.store_path_root_dir.join("config");
        let fs = Arc::clone(&store.config().fs);
        let topics = TopicManager::load(Arc::clone(&fs), config_dir.join("topics.json"), &config)?;
        let offsets = OffsetManager::load(Arc::clone(&fs), config_dir.join("consumerOffset.json"))?;
        let request_modes =
            crate::request_modes::RequestModes::load(Arc::clone(&fs), config_dir.join("messageRequestMode.json"))?;
        let groups = crate::groups::SubscriptionGroups::load(
            fs,
            config_dir.join("subscriptionGroup.json"),
            config.auto_create_subscription_group,
        )?;
        let pop = Arc::new(crate::core::pop::PopState::new(&config.broker_cluster_name));
        let auth_path = config_dir.join("auth.json");
        let auth = crate::auth::Auth::open(
            config.auth.clone(),
            Some((Arc::clone(&store.config().fs), auth_path.clone())),
            &config.broker_cluster_name,
        )
        .map_err(|e| silo_store::StoreError::Config { path: auth_path, reason: e.to_string() })?;
        let broker = Arc::new(Self {
            config,
            store,
            topics,
            offsets,
            groups,
            request_modes,
            clients: ClientRegistry::new(),
            transactions: std::sync::Mutex::default(),
            selectors: crate::core::filter::SelectorCache::default(),
            pop,
            embedded_routes,
            started: Instant::now(),
            stats: Stats::default(),
            next_queue: AtomicU64::new(0),
            registered_version: std::sync::atomic::AtomicI64::new(-1),
            front_end: std::sync::OnceLock::new(),
            ha_links: crate::ha::HaLinks::default(),
            auth: Arc::new(auth),
            tls_identity: std::sync::Mutex::new(None),
            metrics: crate::metrics::Metrics::default(),
        });
        broker.load_transactions();
        broker.load_pops();
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
            let ha_server_addr = self.ha_links.ha_server_addr(&self.config);
            let master = routes.register(&Registration {
                cluster: &self.config.broker_cluster_name,
                broker_name: &self.config.broker_name,
                broker_addr: &addr,
                broker_id: self.config.broker_id,
                ha_server_addr: &ha_server_addr,
                timeout: BROKER_EXPIRY,
                topics: &table,
            });
            if !self.config.ha.role.is_master() {
                self.ha_links.learn_master(
                    master.ha_server_addr.as_deref().unwrap_or(""),
                    master.master_addr.as_deref().unwrap_or(""),
                );
            }
        }
    }

    /// Attaches the second front end (once; later calls are ignored).
    /// The TLS certificate and key of `tls.server.*`, shared by the remoting, name-server and
    /// gRPC ports: one generated certificate per process, not one per port.
    pub fn tls_identity(&self) -> Result<Arc<crate::tls::Identity>, crate::tls::TlsError> {
        let mut slot = self.tls_identity.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(identity) = slot.as_ref() {
            return Ok(Arc::clone(identity));
        }
        let identity = Arc::new(crate::tls::Identity::load(&self.config.tls)?);
        *slot = Some(Arc::clone(&identity));
        Ok(identity)
    }

    pub fn set_front_end(&self, front_end: Arc<dyn FrontEnd>) {
        let _ = self.front_end.set(front_end);
    }

    pub fn front_end(&self) -> Option<&Arc<dyn FrontEnd>> {
        self.front_end.get()
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
}
