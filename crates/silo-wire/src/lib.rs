//! `silo-wire`: a sans-I/O codec for Apache RocketMQ's remoting protocol and message formats.
//!
//! Bytes in (`&[u8]`, `Bytes`), `BufMut` out; no sockets, no files, no async. The broker, the
//! store, the client and the fuzz targets all share it. Every decoder treats its input as
//! untrusted: errors are typed and carry the byte offset, nothing panics, and nothing is
//! allocated in proportion to a length field that the input has not backed with bytes.
//!
//! | module | format |
//! |---|---|
//! | [`frame`] | remoting frames: length prefix, header word, header, body |
//! | [`header`] | the command header, JSON and ROCKETMQ binary |
//! | [`custom`] | typed custom headers carried in `extFields` |
//! | [`ext_str`] | the string type of header fields, shared with the frame |
//! | [`body`] | JSON bodies (heartbeat, route data, broker registration) |
//! | [`lenient`] | JSON field readers that accept what the Java broker's parser accepts |
//! | [`batch`] | the client batch encoding of `SEND_BATCH_MESSAGE` |
//! | [`record`] | the stored message record of the commit log and pull bodies |
//! | [`properties`] | the message properties string |
//! | [`msgid`], [`checksum`] | message ids, body CRC, tag hash |
//! | [`ha`] | the master/slave replication stream |
//! | [`signature`] | request signatures (access key, HMAC-SHA1) |

#![forbid(unsafe_code)]

pub mod batch;
pub mod body;
pub mod checksum;
pub mod codes;
pub mod custom;
pub mod error;
pub mod ext_str;
pub mod frame;
pub mod ha;
pub mod header;
pub mod lenient;
pub mod msgid;
pub mod pop;
pub mod properties;
mod reader;
pub mod record;
pub mod signature;

pub use batch::{OutgoingMessage, OutgoingProperties, decode_batch, encode_batch, encode_batch_into};
pub use error::{DecodeError, DecodeErrorKind, EncodeError};
pub use ext_str::ExtStr;
pub use frame::{Frame, FrameDecoder, decode_frame, encode_frame, encode_frame_head};
pub use header::{ExtFields, LanguageCode, RemotingHeader, SerializeType};
pub use properties::PropertiesView;
pub use record::{RecordMeta, RecordWalker, StoredRecord, decode_record, encode_record};
