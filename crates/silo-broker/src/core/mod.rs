//! The broker's protocol-neutral core: each request family's policy as functions over domain
//! types, returning domain results or a [`BrokerError`]. Nothing here knows frames or remoting
//! response codes; the remoting adapter (`cmd/`) decodes requests into these types and encodes
//! the answers, and a second front end (gRPC) is to do the same.
//!
//! Where the policy decides something (which queue, where a retry goes, whether a topic is
//! created), the decision is a value computed first ([`send::SendPlan`]) and executed after, so
//! it can be tested without sockets or a store.

pub mod admin;
pub mod assignment;
pub mod attributes;
pub mod client_call;
pub mod clients;
pub mod error;
pub mod filter;
pub mod offsets;
pub mod pop;
pub mod pull;
pub mod recall;
pub mod send;
pub mod transaction;

pub use error::BrokerError;
