//! `silo-client`: an async Rust client for Apache RocketMQ's remoting protocol, built on
//! `silo-wire`. It works against Silo and against Apache RocketMQ alike, and is what the `silo`
//! command line (`produce`, `consume`, `admin`, `bench`) uses.
//!
//! - [`Client`]: the name servers, one multiplexed connection per broker, cached topic routes.
//! - [`Producer`]: sync, one-way and batch sends; pipelining is many sends in flight at once.
//! - [`PullConsumer`]: pull with long polling (tag or SQL92 [`Subscription`]s), and the group's offsets.
//! - [`PopConsumer`]: pop, acknowledge and renew messages; the broker keeps the offsets.
//! - [`Admin`]: topics, the cluster, consumer progress, message lookup, broker runtime info.
//!
//! ```no_run
//! # async fn demo() -> Result<(), silo_client::ClientError> {
//! use silo_client::{Client, ClientConfig, Message, Producer, ProducerConfig};
//! let client = Client::new(ClientConfig::new("127.0.0.1:9876"));
//! let producer = Producer::new(client, ProducerConfig::default());
//! let sent = producer.send("TopicTest", &Message::new("hello").with_tags("TagA")).await?;
//! println!("{} stored at {} offset {}", sent.msg_id, sent.queue, sent.queue_offset);
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

pub mod admin;
pub mod client;
pub mod connection;
pub mod consumer;
pub mod error;
pub mod message;
pub mod pop;
pub mod producer;
pub mod tls;

pub use admin::{Admin, FoundMessage, TopicSpec};
pub use client::{Client, ClientConfig, TopicRoute};
pub use connection::Credentials;
pub use consumer::{ExpressionType, PullConsumer, PullResult, PullStatus, Subscription};
pub use error::ClientError;
pub use message::{Message, MessageQueue, ReceivedMessage};
pub use pop::{PopConsumer, PopResult, PoppedMessage};
pub use producer::{Producer, ProducerConfig, SendResult, SendStatus, WritableQueues};
pub use tls::Tls;
