//! The web console (`silo serve --console`): a few pages, embedded in the binary, that show
//! the cluster, topics and their queues, consumer groups and their lag, messages found by key
//! or id, and the produce and consume rates; and a JSON API under `/api/` that the pages read.
//!
//! It is off by default and listens on loopback unless told otherwise. What it lets a visitor
//! do follows the broker's access control:
//! - authentication off: anyone who reaches the port may look, no one may change anything;
//! - authentication on: every request needs HTTP Basic credentials of a broker user (the
//!   access key and secret key); with authorization on, a user sees a topic's queues, a group's
//!   progress and messages only if granted what the admin requests that read them need, and
//!   may create and delete topics if granted Create or Delete on the topic.
//!
//! A browser is an agent of every site it visits, so the console defends the user's session:
//! writes need a header no cross-site form can send ([`WRITE_HEADER`]), a request whose
//! `Host` is not the console's own is refused (a rebound DNS name), every page forbids
//! scripts and styles from anywhere but itself, and message bodies are put into pages as
//! text, never as markup.

mod rates;
mod views;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use base64::Engine;
use http::{HeaderValue, Method, StatusCode, header};
use hyper::body::Incoming;
use serde_json::{Value, json};
use silo_broker::auth::access::{Need, named};
use silo_broker::auth::model::{Action, ResourceKind};
use silo_broker::broker::Broker;
use tokio::sync::watch;

use crate::http_port::{Reply, reply};

/// The console's port when `--console` names none.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8082";

/// Writes must carry this header; a browser sends it only from the console's own scripts
/// (a cross-site page cannot add it without a preflight the console never grants).
pub const WRITE_HEADER: &str = "x-silo-console";

/// Queues a topic created at the console gets when the form names none.
const DEFAULT_QUEUES: i32 = 8;

const INDEX_HTML: &str = include_str!("assets/index.html");
const CONSOLE_JS: &str = include_str!("assets/console.js");
const CONSOLE_CSS: &str = include_str!("assets/console.css");

struct Console {
    broker: Arc<Broker>,
    rates: Arc<rates::Rates>,
    /// The `Host` values a request may carry: the address listened on, and `localhost` with its
    /// port when that address is loopback.
    hosts: Vec<String>,
}

/// Binds the console on `addr` and serves it until `shutdown`; the address it listens on and
/// its tasks.
pub async fn start(
    broker: Arc<Broker>,
    addr: SocketAddr,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<(SocketAddr, Vec<tokio::task::JoinHandle<()>>)> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("web console on {addr}"))?;
    let addr = listener.local_addr()?;
    let mut hosts = vec![addr.to_string()];
    if addr.ip().is_loopback() {
        hosts.push(format!("localhost:{}", addr.port()));
    }
    let (rates, sampler) = rates::Rates::sample(Arc::clone(&broker), shutdown.clone());
    let console = Console { broker, rates, hosts };
    tracing::info!(url = %format!("http://{addr}/"), "web console");
    let server = crate::http_port::serve("console", listener, shutdown, move |req, remote| {
        let mut r = console.answer(req, remote);
        secure(&mut r);
        r
    });
    Ok((addr, vec![sampler, server]))
}

/// Who is asking: no one in particular (authentication off), or a signed-in user.
enum Visitor {
    Anyone,
    User(String),
}

impl Console {
    fn answer(&self, req: &http::Request<Incoming>, remote: SocketAddr) -> Reply {
        let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        if !self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return error(StatusCode::MISDIRECTED_REQUEST, "this console answers only to its own address");
        }
        let visitor = match self.visitor(req) {
            Ok(v) => v,
            Err(refused) => return refused.reply(),
        };
        let query = Query::parse(req.uri().query().unwrap_or(""));
        let path = req.uri().path();
        match (req.method(), path) {
            (&Method::GET, "/" | "/index.html") => reply(StatusCode::OK, "text/html; charset=utf-8", INDEX_HTML),
            (&Method::GET, "/console.js") => reply(StatusCode::OK, "text/javascript; charset=utf-8", CONSOLE_JS),
            (&Method::GET, "/console.css") => reply(StatusCode::OK, "text/css; charset=utf-8", CONSOLE_CSS),
            (&Method::GET, "/api/overview") => {
                let mut v = views::overview(&self.broker);
                let (user, writable) = match &visitor {
                    Visitor::Anyone => (Value::Null, false),
                    Visitor::User(u) => (Value::String(u.clone()), true),
                };
                v["user"] = user;
                v["writable"] = Value::Bool(writable);
                ok(&v)
            }
            (&Method::GET, "/api/topics") => ok(&views::topics(&self.broker)),
            (&Method::GET, "/api/topic") => {
                let name = query.get("name").unwrap_or("");
                if let Err(refused) = self.may_read(&visitor, ResourceKind::Topic, name, &[Action::Get], remote) {
                    return refused.reply();
                }
                match views::topic(&self.broker, name) {
                    Some(v) => ok(&v),
                    None => error(StatusCode::NOT_FOUND, "no such topic on this broker"),
                }
            }
            (&Method::GET, "/api/groups") => ok(&views::group_list(&self.broker)),
            (&Method::GET, "/api/group") => {
                let name = query.get("name").unwrap_or("");
                if let Err(refused) = self.may_read(&visitor, ResourceKind::Group, name, &[Action::Get], remote) {
                    return refused.reply();
                }
                ok(&views::group(&self.broker, name))
            }
            (&Method::GET, "/api/messages") => {
                let found = match views::find(&self.broker, query.get("topic"), query.get("key"), query.get("id")) {
                    Ok(v) => v,
                    Err(e @ views::LookupError::NothingAsked) => return error(StatusCode::BAD_REQUEST, &e.to_string()),
                    Err(e) => return error(StatusCode::NOT_FOUND, &e.to_string()),
                };
                // As QUERY_MESSAGE: Sub or Get on the topic of every message shown.
                for m in found.as_array().into_iter().flatten() {
                    let topic = m["topic"].as_str().unwrap_or("");
                    let read = self.may_read(&visitor, ResourceKind::Topic, topic, &[Action::Sub, Action::Get], remote);
                    if let Err(refused) = read {
                        return refused.reply();
                    }
                }
                ok(&found)
            }
            (&Method::GET, "/api/rates") => ok(&self.rates.json()),
            (&Method::POST, "/api/topics") => self.write(req, &visitor, remote, |broker| {
                let name = query.get("name").unwrap_or("").trim();
                let queues = match query.get("queues").filter(|q| !q.is_empty()) {
                    None => DEFAULT_QUEUES,
                    Some(q) => {
                        q.parse().map_err(|_| Refused(StatusCode::BAD_REQUEST, "queues must be a number".into()))?
                    }
                };
                if broker.topics.get(name).is_some() {
                    return Err(Refused(StatusCode::CONFLICT, "the topic exists already".into()));
                }
                let tc = silo_wire::body::TopicConfig {
                    topic_name: name.to_owned(),
                    read_queue_nums: queues,
                    write_queue_nums: queues,
                    perm: 6,
                    topic_filter_type: "SINGLE_TAG".into(),
                    ..Default::default()
                };
                Ok((need(name, &[Action::Create]), move |b: &Broker| b.create_topic(tc)))
            }),
            (&Method::DELETE, "/api/topic") => self.write(req, &visitor, remote, |broker| {
                let name = query.get("name").unwrap_or("").to_owned();
                if broker.topics.get(&name).is_none() {
                    return Err(Refused(StatusCode::NOT_FOUND, "no such topic on this broker".into()));
                }
                Ok((need(&name, &[Action::Delete]), move |b: &Broker| b.delete_topic(&name)))
            }),
            (&Method::GET, _) => error(StatusCode::NOT_FOUND, "no such page"),
            _ => error(StatusCode::METHOD_NOT_ALLOWED, "not a method this console answers"),
        }
    }

    /// With authentication on, the user the request's Basic credentials name, once their
    /// password is right; otherwise a 401 that makes a browser ask for them.
    fn visitor(&self, req: &http::Request<Incoming>) -> Result<Visitor, Refused> {
        let auth = &self.broker.auth;
        if !auth.settings.enabled {
            return Ok(Visitor::Anyone);
        }
        let ask = |why: &str| Refused(StatusCode::UNAUTHORIZED, why.to_owned());
        let credentials = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Basic "))
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b.trim()).ok())
            .and_then(|raw| String::from_utf8(raw).ok());
        let Some(credentials) = credentials else { return Err(ask("sign in with a user of this broker")) };
        let Some((user, password)) = credentials.split_once(':') else {
            return Err(ask("sign in with a user of this broker"));
        };
        auth.check_password(user, password).map_err(|refusal| ask(&refusal.0))?;
        Ok(Visitor::User(user.to_owned()))
    }

    /// Whether the visitor may see `name`: what the admin request that reads the same needs
    /// (GET_TOPIC_STATS_INFO, GET_CONSUME_STATS, QUERY_MESSAGE). Lists of topics and groups, like
    /// GET_ALL_TOPIC_CONFIG, are open to every signed-in user.
    fn may_read(
        &self,
        visitor: &Visitor,
        kind: ResourceKind,
        name: &str,
        actions: &'static [Action],
        remote: SocketAddr,
    ) -> Result<(), Refused> {
        let user = match visitor {
            Visitor::Anyone => None,
            Visitor::User(u) => Some(u.as_str()),
        };
        let need = named(kind, name, actions);
        self.broker
            .auth
            .authorize(user, std::slice::from_ref(&need), remote.ip())
            .map_err(|refusal| Refused(StatusCode::FORBIDDEN, refusal.0))
    }

    /// A change: allowed to a signed-in user that authorization grants `need` to, from the
    /// console's own scripts. `plan` checks the request and says what it needs and does.
    fn write<F, D>(&self, req: &http::Request<Incoming>, visitor: &Visitor, remote: SocketAddr, plan: F) -> Reply
    where
        F: FnOnce(&Broker) -> Result<(Need<'static>, D), Refused>,
        D: FnOnce(&Broker) -> Result<(), silo_broker::core::BrokerError>,
    {
        let Visitor::User(user) = visitor else {
            return error(StatusCode::FORBIDDEN, "read-only: the broker's authentication is off");
        };
        if !req.headers().contains_key(WRITE_HEADER) {
            return error(StatusCode::FORBIDDEN, "a change must come from the console's own page");
        }
        let (need, apply) = match plan(&self.broker) {
            Ok(p) => p,
            Err(refused) => return refused.reply(),
        };
        if let Err(refusal) = self.broker.auth.authorize(Some(user), std::slice::from_ref(&need), remote.ip()) {
            return error(StatusCode::FORBIDDEN, &refusal.0);
        }
        match apply(&self.broker) {
            Ok(()) => {
                tracing::info!(user, resource = %need.target(), actions = ?need.actions, "changed at the console");
                ok(&json!({"ok": true}))
            }
            Err(e) => error(StatusCode::BAD_REQUEST, &e.to_string()),
        }
    }
}

/// A request refused: the status and why.
struct Refused(StatusCode, String);

impl Refused {
    /// The answer; a 401 asks the browser to sign in.
    fn reply(self) -> Reply {
        let mut r = error(self.0, &self.1);
        if self.0 == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"Silo console\", charset=\"UTF-8\""),
            );
        }
        r
    }
}

/// Headers every answer carries: no script, style or frame from anywhere but the console,
/// no content sniffing, no referrer, nothing cached.
fn secure(r: &mut Reply) {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'none'",
        ),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// What a change to `topic` needs of authorization.
fn need(topic: &str, actions: &'static [Action]) -> Need<'static> {
    let n = named(ResourceKind::Topic, topic, actions);
    Need { kind: n.kind, name: n.name.into_owned().into(), actions: n.actions }
}

fn ok(v: &Value) -> Reply {
    reply(StatusCode::OK, "application/json", v.to_string())
}

fn error(status: StatusCode, why: &str) -> Reply {
    reply(status, "application/json", json!({ "error": why }).to_string())
}

/// A request's query: `name=value` pairs, percent-decoded (`+` is a space).
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(raw: &str) -> Self {
        let decode =
            |s: &str| percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
        Self(
            raw.split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap_or((p, ""));
                    (decode(k), decode(v))
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Query;

    #[test]
    fn a_query_is_percent_decoded_and_plus_is_a_space() {
        let q = Query::parse("topic=Order%40Topic&key=a+b%2Bc&empty=&flag");
        assert_eq!(q.get("topic"), Some("Order@Topic"));
        assert_eq!(q.get("key"), Some("a b+c"));
        assert_eq!(q.get("empty"), Some(""));
        assert_eq!(q.get("flag"), Some(""));
        assert_eq!(q.get("missing"), None);
    }
}
