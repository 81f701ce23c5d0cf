//! `silo-broker`: the broker and the embedded name server.
//!
//! Both speak RocketMQ's remoting protocol over tokio; each request family is handled in its
//! own module under [`cmd`]. The broker keeps its messages in [`silo_store::Store`] and its
//! metadata in RocketMQ's JSON config files (`topics.json`, `consumerOffset.json`).

pub mod alloc_probe;
pub mod broker;
pub mod clients;
pub mod cmd;
pub mod config;
pub mod connection;
pub mod namesrv;
pub mod offsets;
pub mod response;
pub mod schedule;
pub mod server;
pub mod topics;

pub use broker::Broker;
pub use config::BrokerConfig;
