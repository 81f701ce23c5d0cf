//! `silo-broker`: the broker and the embedded name server.
//!
//! The broker's policy is protocol-neutral, in [`core`]; [`cmd`] is the remoting adapter, one
//! module per request family, dispatched from one table ([`cmd::table`]). The broker keeps its messages in [`silo_store::Store`] and its
//! metadata in RocketMQ's JSON config files (`topics.json`, `consumerOffset.json`).

pub mod alloc_probe;
pub mod auth;
pub mod broker;
pub mod clients;
pub mod cmd;
pub mod config;
pub mod connection;
pub mod core;
pub mod groups;
pub mod ha;
pub mod metrics;
pub mod namesrv;
pub mod offsets;
pub mod pop_revive;
pub mod request_modes;
pub mod response;
pub mod schedule;
pub mod server;
pub mod timer;
pub mod tls;
pub mod topics;
pub mod transaction_check;

pub use broker::Broker;
pub use config::BrokerConfig;
