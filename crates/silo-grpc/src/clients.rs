//! The gRPC clients the front end knows, by client id: the settings each sent on its Telemetry
//! stream, the streams open to it (the way the broker reaches a client: recover-orphaned-
//! transaction commands go down one), and when it was last heard from.
//!
//! A client is alive while one of its Telemetry streams is open, or for a grace time
//! (`grpcClientGraceMillis`) after it was last heard from: the SDKs reopen a broken stream at
//! once, so a client that reconnects keeps its held messages renewed, while one that crashed
//! stops being renewed and its messages come back once their invisible time runs out.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use std::net::SocketAddr;

use crate::proto::{ClientType, Settings, SubscriptionEntry, TelemetryCommand, settings::PubSub};

/// The most Telemetry streams one client id may hold open at once; a client that opens more
/// (a leak, or another process reusing the id) has its oldest closed.
pub const MAX_STREAMS_PER_CLIENT: usize = 8;

/// Commands queued for a Telemetry stream before the broker stops pushing to it.
pub const STREAM_QUEUE: usize = 64;

pub type TelemetrySender = mpsc::Sender<Result<TelemetryCommand, tonic::Status>>;

#[derive(Debug)]
struct Client {
    settings: Option<Settings>,
    streams: Vec<(u64, TelemetrySender)>,
    last_seen: Instant,
    /// Where its last Telemetry stream came from, and the language it named (for admin reads).
    remote: Option<SocketAddr>,
    language: String,
}

/// A consumer as admin reads list it.
#[derive(Debug, Clone)]
pub struct ConsumerView {
    pub client_id: String,
    pub remote: Option<SocketAddr>,
    pub language: String,
    pub client_type: ClientType,
    pub subscriptions: Vec<SubscriptionEntry>,
}

/// The consumer group a client's settings name, and its type, if it is a consumer.
pub(crate) fn consumer_group(s: &Settings) -> Option<(&str, ClientType, &[SubscriptionEntry])> {
    let t = s.client_type.and_then(|t| ClientType::try_from(t).ok())?;
    if !matches!(t, ClientType::PushConsumer | ClientType::SimpleConsumer) {
        return None;
    }
    match &s.pub_sub {
        Some(PubSub::Subscription(sub)) => {
            Some((sub.group.as_ref().map_or("", |g| g.name.as_str()), t, sub.subscriptions.as_slice()))
        }
        _ => None,
    }
}

#[derive(Debug)]
pub struct Clients {
    inner: Mutex<HashMap<String, Client>>,
    next_stream: AtomicU64,
    /// How long a client without an open Telemetry stream counts as alive after its last
    /// request.
    grace: Duration,
}

impl Client {
    fn new() -> Self {
        Self { settings: None, streams: Vec::new(), last_seen: Instant::now(), remote: None, language: String::new() }
    }
}

impl Clients {
    pub fn new(grace: Duration) -> Self {
        Self { inner: Mutex::default(), next_stream: AtomicU64::new(0), grace }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Client>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes a request from `client_id`.
    pub fn seen(&self, client_id: &str) {
        let mut map = self.lock();
        match map.get_mut(client_id) {
            Some(c) => c.last_seen = Instant::now(),
            None => {
                map.insert(client_id.to_owned(), Client::new());
            }
        }
    }

    /// Registers a new Telemetry stream of `client_id` (from `remote`, in `language`); returns
    /// its id.
    pub fn open_stream(&self, client_id: &str, tx: TelemetrySender, remote: SocketAddr, language: &str) -> u64 {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let mut map = self.lock();
        let c = map.entry(client_id.to_owned()).or_insert_with(Client::new);
        c.last_seen = Instant::now();
        c.remote = Some(remote);
        if c.language != language {
            language.clone_into(&mut c.language);
        }
        if c.streams.len() >= MAX_STREAMS_PER_CLIENT {
            // Dropping the sender ends that stream's responses.
            c.streams.remove(0);
        }
        c.streams.push((id, tx));
        id
    }

    pub fn close_stream(&self, client_id: &str, stream: u64) {
        let mut map = self.lock();
        if let Some(c) = map.get_mut(client_id) {
            c.streams.retain(|(id, _)| *id != stream);
            c.last_seen = Instant::now();
        }
    }

    pub fn set_settings(&self, client_id: &str, settings: Settings) {
        let mut map = self.lock();
        let c = map.entry(client_id.to_owned()).or_insert_with(Client::new);
        c.settings = Some(settings);
        c.last_seen = Instant::now();
    }

    /// The settings `client_id` last sent, if any.
    pub fn settings(&self, client_id: &str) -> Option<Settings> {
        self.lock().get(client_id).and_then(|c| c.settings.clone())
    }

    /// The client's type, from its settings.
    pub fn client_type(&self, client_id: &str) -> Option<ClientType> {
        self.lock()
            .get(client_id)
            .and_then(|c| c.settings.as_ref())
            .and_then(|s| s.client_type)
            .and_then(|t| ClientType::try_from(t).ok())
    }

    /// Forgets a client that said it is terminating; its streams end.
    pub fn remove(&self, client_id: &str) {
        self.lock().remove(client_id);
    }

    /// Whether `client_id` is connected, or was heard from within the grace time.
    pub fn is_alive(&self, client_id: &str) -> bool {
        let grace = self.grace;
        self.lock()
            .get(client_id)
            .is_some_and(|c| c.streams.iter().any(|(_, tx)| !tx.is_closed()) || c.last_seen.elapsed() < grace)
    }

    /// One open stream of each producer that publishes `topic`, rotating from `turn`: where a
    /// transaction check for that topic goes.
    pub fn producer_stream(&self, topic: &str, turn: usize) -> Option<TelemetrySender> {
        let map = self.lock();
        let mut found: Vec<&TelemetrySender> = map
            .values()
            .filter(|c| {
                c.settings.as_ref().is_some_and(|s| match &s.pub_sub {
                    Some(PubSub::Publishing(p)) => p.topics.iter().any(|t| t.name == topic),
                    _ => false,
                })
            })
            .filter_map(|c| c.streams.iter().rev().map(|(_, tx)| tx).find(|tx| !tx.is_closed()))
            .collect();
        if found.is_empty() {
            return None;
        }
        let i = turn % found.len();
        Some(found.swap_remove(i).clone())
    }

    /// The consumers of `group` with a Telemetry stream open.
    pub fn consumers_of(&self, group: &str) -> Vec<ConsumerView> {
        let map = self.lock();
        map.iter()
            .filter(|(_, c)| c.streams.iter().any(|(_, tx)| !tx.is_closed()))
            .filter_map(|(id, c)| {
                let (g, client_type, subs) = consumer_group(c.settings.as_ref()?)?;
                (g == group).then(|| ConsumerView {
                    client_id: id.clone(),
                    remote: c.remote,
                    language: c.language.clone(),
                    client_type,
                    subscriptions: subs.to_vec(),
                })
            })
            .collect()
    }

    /// An open Telemetry stream of `client_id`, if it is a consumer of `group`.
    pub fn consumer_stream(&self, group: &str, client_id: &str) -> Option<TelemetrySender> {
        let map = self.lock();
        let c = map.get(client_id)?;
        let (g, _, _) = consumer_group(c.settings.as_ref()?)?;
        if g != group {
            return None;
        }
        c.streams.iter().rev().map(|(_, tx)| tx).find(|tx| !tx.is_closed()).cloned()
    }

    /// Clients known.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets clients neither connected nor heard from for a long time.
    pub fn expire(&self, idle: Duration) {
        self.lock().retain(|_, c| c.streams.iter().any(|(_, tx)| !tx.is_closed()) || c.last_seen.elapsed() < idle);
    }
}
