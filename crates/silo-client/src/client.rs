//! What producers, consumers and the admin share: the name servers, one connection per broker
//! address, and a cache of topic routes.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use silo_wire::body::{TopicRouteData, decode_json_body};
use silo_wire::codes::{request as rq, response as rs};
use silo_wire::custom::{CustomHeader, GetRouteInfoRequestHeader};
use silo_wire::{Frame, RemotingHeader, SerializeType};

use crate::connection::Connection;
use crate::error::ClientError;
use crate::message::MessageQueue;

/// The topic whose route a producer borrows for a topic that does not exist yet, so that the
/// broker creates it on the first send (`autoCreateTopicEnable`).
pub const AUTO_CREATE_TOPIC: &str = "TBW102";

/// How a client reaches the cluster.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Name server addresses (`HOST:PORT`), tried in turn.
    pub namesrv: Vec<String>,
    /// How long one request may wait for its answer.
    pub timeout: Duration,
    /// The header serialization of requests; servers answer in the same one.
    pub serialize: SerializeType,
    /// How long a topic route is used before it is fetched again.
    pub route_ttl: Duration,
    /// Sign every request with these (servers with `authenticationEnabled`).
    pub credentials: Option<Arc<crate::connection::Credentials>>,
    /// Connect over TLS (servers with `tls.server.mode` permissive or enforcing), to the name
    /// servers and the brokers alike, as the stock clients do with theirs on.
    pub tls: Option<crate::tls::Tls>,
}

impl ClientConfig {
    /// A configuration for the name servers in `namesrv` (`HOST:PORT`, several separated by `;`
    /// as RocketMQ's `namesrvAddr` is written).
    #[must_use]
    pub fn new(namesrv: &str) -> Self {
        Self {
            namesrv: namesrv.split(';').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect(),
            timeout: Duration::from_secs(3),
            serialize: SerializeType::Json,
            route_ttl: Duration::from_secs(30),
            credentials: None,
            tls: None,
        }
    }
}

/// A topic's route, resolved to queues and master addresses.
#[derive(Debug, Clone)]
pub struct TopicRoute {
    pub data: TopicRouteData,
    /// Queues a producer may send to, broker by broker.
    pub write_queues: Vec<MessageQueue>,
    /// Queues a consumer reads.
    pub read_queues: Vec<MessageQueue>,
    masters: HashMap<String, String>,
    fetched: Instant,
}

impl TopicRoute {
    fn new(topic: &str, data: TopicRouteData) -> Self {
        use silo_wire::codes::perm::{READ as PERM_READ, WRITE as PERM_WRITE};
        let masters: HashMap<String, String> = data
            .broker_datas
            .iter()
            .filter_map(|b| b.broker_addrs.get(&0).map(|a| (b.broker_name.clone(), a.clone())))
            .collect();
        let mut write_queues = Vec::new();
        let mut read_queues = Vec::new();
        let mut queue_datas = data.queue_datas.clone();
        queue_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
        for q in &queue_datas {
            if !masters.contains_key(&q.broker_name) {
                continue;
            }
            let mq = |queue_id| MessageQueue { topic: topic.to_owned(), broker_name: q.broker_name.clone(), queue_id };
            if q.perm & PERM_WRITE != 0 {
                write_queues.extend((0..q.write_queue_nums.max(0)).map(mq));
            }
            if q.perm & PERM_READ != 0 {
                read_queues.extend((0..q.read_queue_nums.max(0)).map(mq));
            }
        }
        Self { data, write_queues, read_queues, masters, fetched: Instant::now() }
    }

    /// The master address of broker `name`.
    #[must_use]
    pub fn master(&self, name: &str) -> Option<&str> {
        self.masters.get(name).map(String::as_str)
    }

    /// Every broker name with a master, sorted.
    #[must_use]
    pub fn brokers(&self) -> Vec<(&str, &str)> {
        let mut v: Vec<(&str, &str)> = self.masters.iter().map(|(n, a)| (n.as_str(), a.as_str())).collect();
        v.sort_unstable();
        v
    }
}

#[derive(Debug)]
struct Inner {
    config: ClientConfig,
    connections: Mutex<HashMap<String, Arc<Connection>>>,
    routes: RwLock<HashMap<String, Arc<TopicRoute>>>,
    next_namesrv: AtomicUsize,
}

/// A handle to the cluster; cheap to clone, shared by producers, consumers and the admin.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl Client {
    #[must_use]
    pub fn new(config: ClientConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                connections: Mutex::default(),
                routes: RwLock::default(),
                next_namesrv: AtomicUsize::new(0),
            }),
        }
    }

    #[must_use]
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The connection to `addr` (`HOST:PORT`), made on first use and again after it failed.
    pub async fn connection(&self, addr: &str) -> Result<Arc<Connection>, ClientError> {
        if let Some(c) = self.lock_connections().get(addr).filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let socket = resolve(addr).await?;
        let config = &self.inner.config;
        let conn = Connection::connect_with(socket, config.serialize, config.timeout, config.tls.as_ref()).await?;
        let conn = Arc::new(conn.signed_with(config.credentials.clone()));
        let mut map = self.lock_connections();
        // Another task may have connected meanwhile: keep one connection per address.
        let entry = map.entry(addr.to_owned()).or_insert_with(|| conn.clone());
        if entry.is_closed() {
            *entry = conn;
        }
        Ok(entry.clone())
    }

    fn lock_connections(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Connection>>> {
        self.inner.connections.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends a request to `addr` and returns the response whatever its code.
    pub async fn call(&self, addr: &str, header: RemotingHeader, body: Bytes) -> Result<Frame, ClientError> {
        let conn = self.connection(addr).await?;
        conn.request(header, body, self.inner.config.timeout).await
    }

    /// Sends a request to `addr`; a response code other than SUCCESS is an error.
    pub async fn call_ok(&self, addr: &str, header: RemotingHeader, body: Bytes) -> Result<Frame, ClientError> {
        let conn = self.connection(addr).await?;
        let code = header.code;
        let frame = conn.request(header, body, self.inner.config.timeout).await?;
        expect_success(addr, code, frame)
    }

    /// Sends a request to the name servers, one after the other until one answers.
    pub async fn call_namesrv(&self, header: RemotingHeader, body: Bytes) -> Result<Frame, ClientError> {
        let servers = &self.inner.config.namesrv;
        if servers.is_empty() {
            return Err(ClientError::InvalidArgument("no name server address given".into()));
        }
        let start = self.inner.next_namesrv.load(Ordering::Relaxed);
        let mut last = None;
        for i in 0..servers.len() {
            let idx = (start + i) % servers.len();
            let Some(addr) = servers.get(idx) else { continue };
            match self.call(addr, header.clone(), body.clone()).await {
                Ok(frame) => {
                    self.inner.next_namesrv.store(idx, Ordering::Relaxed);
                    return Ok(frame);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| ClientError::InvalidArgument("no name server address given".into())))
    }

    /// The route of `topic` from the name server, bypassing the cache; `None` when the name
    /// server knows no such topic.
    pub async fn fetch_route(&self, topic: &str) -> Result<Option<TopicRouteData>, ClientError> {
        let mut header = RemotingHeader::request(rq::GET_ROUTEINFO_BY_TOPIC, 0);
        GetRouteInfoRequestHeader { topic: topic.to_owned(), accept_standard_json_only: None }
            .write_ext_fields(&mut header.ext_fields);
        let frame = self.call_namesrv(header, Bytes::new()).await?;
        match frame.header.code {
            rs::SUCCESS => decode_json_body::<TopicRouteData>(&frame.body).map(Some).map_err(ClientError::from),
            rs::TOPIC_NOT_EXIST => Ok(None),
            code => Err(ClientError::NoRoute {
                topic: topic.to_owned(),
                reason: format!("name server answered code {code}: {}", frame.header.remark.unwrap_or_default()),
            }),
        }
    }

    /// The cached route of `topic`, fetched when missing or older than the route TTL.
    pub async fn route(&self, topic: &str) -> Result<Option<Arc<TopicRoute>>, ClientError> {
        if let Some(r) = self.read_routes().get(topic).filter(|r| r.fetched.elapsed() < self.inner.config.route_ttl) {
            return Ok(Some(r.clone()));
        }
        let Some(data) = self.fetch_route(topic).await? else {
            self.forget_route(topic);
            return Ok(None);
        };
        let route = Arc::new(TopicRoute::new(topic, data));
        self.inner
            .routes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(topic.to_owned(), route.clone());
        Ok(Some(route))
    }

    /// Drops the cached route of `topic`, so the next use fetches it again.
    pub fn forget_route(&self, topic: &str) {
        self.inner.routes.write().unwrap_or_else(std::sync::PoisonError::into_inner).remove(topic);
    }

    fn read_routes(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<TopicRoute>>> {
        self.inner.routes.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The route of `topic`, or an error that says it has none.
    pub async fn require_route(&self, topic: &str) -> Result<Arc<TopicRoute>, ClientError> {
        self.route(topic).await?.ok_or_else(|| ClientError::NoRoute {
            topic: topic.to_owned(),
            reason: "the name server knows no such topic (create it, or enable autoCreateTopicEnable)".into(),
        })
    }

    /// The master address of `broker_name` in the route of `topic`.
    pub async fn master_of(&self, mq: &MessageQueue) -> Result<String, ClientError> {
        let route = self.require_route(&mq.topic).await?;
        route.master(&mq.broker_name).map(str::to_owned).ok_or_else(|| ClientError::NoRoute {
            topic: mq.topic.clone(),
            reason: format!("broker {} has no master", mq.broker_name),
        })
    }
}

/// A response's frame if its code is SUCCESS, else the refusal as an error.
pub fn expect_success(addr: &str, request: i32, frame: Frame) -> Result<Frame, ClientError> {
    if frame.header.code == rs::SUCCESS {
        Ok(frame)
    } else {
        Err(ClientError::Refused {
            addr: addr.to_owned(),
            request,
            code: frame.header.code,
            remark: frame.header.remark.unwrap_or_default(),
        })
    }
}

/// Resolves `HOST:PORT`.
pub async fn resolve(addr: &str) -> Result<SocketAddr, ClientError> {
    if let Ok(a) = addr.parse::<SocketAddr>() {
        return Ok(a);
    }
    tokio::net::lookup_host(addr)
        .await
        .ok()
        .and_then(|mut it| it.next())
        .ok_or_else(|| ClientError::BadAddress(addr.to_owned()))
}
