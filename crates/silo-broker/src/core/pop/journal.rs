//! The pop journal (docs/store-format.md §11): what a pop takes and what is acknowledged,
//! written to the commit log as messages of the revive topic `rmq_sys_REVIVE_LOG_<cluster>`
//! before the client hears of it, so that it survives a restart or a kill. The bodies are
//! the JSON objects Apache's broker writes there (its short keys), tagged `ck`, `ack` and
//! `bAck`; unlike Apache's, Silo's records are stored at once rather than as timer messages
//! due when the messages become visible again: Silo keeps the deadlines in memory and
//! rebuilds them from these records when it opens.

use serde::{Deserialize, Serialize};
use silo_store::MessageToStore;
use silo_wire::record::StoredRecord;

use super::super::BrokerError;

/// The revive topic of a cluster.
pub fn revive_topic(cluster: &str) -> String {
    format!("rmq_sys_REVIVE_LOG_{cluster}")
}

/// The group under which the revive topic's progress is kept in `consumerOffset.json`.
pub const REVIVE_GROUP: &str = "CID_RMQ_SYS_REVIVE_GROUP";

pub const CK_TAG: &str = "ck";
pub const ACK_TAG: &str = "ack";
pub const BATCH_ACK_TAG: &str = "bAck";

/// A checkpoint: one pop of one queue (Apache's `PopCheckPoint`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// The first queue offset the pop read.
    #[serde(rename = "so")]
    pub start_offset: i64,
    #[serde(rename = "pt")]
    pub pop_time: i64,
    #[serde(rename = "it")]
    pub invisible_time: i64,
    /// Acknowledged messages, bit `i` for `d[i]` (always 0 when written).
    #[serde(rename = "bm", default)]
    pub bit_map: i32,
    #[serde(rename = "n")]
    pub num: u8,
    #[serde(rename = "q")]
    pub queue_id: i32,
    /// The topic popped from (the retry topic for retried messages).
    #[serde(rename = "t")]
    pub topic: String,
    #[serde(rename = "c")]
    pub group: String,
    /// Where this record is in the revive queue (filled in when read back).
    #[serde(rename = "ro", default)]
    pub revive_offset: i64,
    /// The messages' queue offsets, as differences from `so`.
    #[serde(rename = "d", default)]
    pub queue_offset_diff: Vec<i32>,
    #[serde(rename = "bn", default, skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
    #[serde(rename = "rp", default)]
    pub re_put_times: i32,
    /// Silo's own: the client whose pop the broker renews while it is connected (a gRPC push
    /// consumer's `auto_renew`); absent otherwise.
    #[serde(rename = "siloOwner", default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Silo's own: how often the broker renewed this pop. A later record of the same pop
    /// replaces the earlier one's invisible time and adds to its acknowledged bits.
    #[serde(rename = "siloRenewals", default, skip_serializing_if = "is_zero")]
    pub renewals: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// An acknowledgement of one message of a checkpoint (Apache's `AckMsg`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckRecord {
    #[serde(rename = "ao")]
    pub ack_offset: i64,
    #[serde(rename = "so")]
    pub start_offset: i64,
    #[serde(rename = "c")]
    pub group: String,
    #[serde(rename = "t")]
    pub topic: String,
    #[serde(rename = "q")]
    pub queue_id: i32,
    #[serde(rename = "pt")]
    pub pop_time: i64,
    #[serde(rename = "bn", default, skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
}

/// An acknowledgement of several messages of a checkpoint (Apache's `BatchAckMsg`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchAckRecord {
    #[serde(rename = "aol")]
    pub ack_offsets: Vec<i64>,
    #[serde(rename = "so")]
    pub start_offset: i64,
    #[serde(rename = "c")]
    pub group: String,
    #[serde(rename = "t")]
    pub topic: String,
    #[serde(rename = "q")]
    pub queue_id: i32,
    #[serde(rename = "pt")]
    pub pop_time: i64,
    #[serde(rename = "bn", default, skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
}

/// An [`AckRecord`] as written, borrowing its texts (an acknowledgement allocates nothing).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct AckOut<'a> {
    #[serde(rename = "ao")]
    pub ack_offset: i64,
    #[serde(rename = "so")]
    pub start_offset: i64,
    #[serde(rename = "c")]
    pub group: &'a str,
    #[serde(rename = "t")]
    pub topic: &'a str,
    #[serde(rename = "q")]
    pub queue_id: i32,
    #[serde(rename = "pt")]
    pub pop_time: i64,
    #[serde(rename = "bn")]
    pub broker_name: &'a str,
}

/// A [`BatchAckRecord`] as written, borrowing its texts and offsets.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BatchAckOut<'a> {
    #[serde(rename = "aol")]
    pub ack_offsets: &'a [i64],
    #[serde(rename = "so")]
    pub start_offset: i64,
    #[serde(rename = "c")]
    pub group: &'a str,
    #[serde(rename = "t")]
    pub topic: &'a str,
    #[serde(rename = "q")]
    pub queue_id: i32,
    #[serde(rename = "pt")]
    pub pop_time: i64,
    #[serde(rename = "bn")]
    pub broker_name: &'a str,
}

/// A [`CheckpointRecord`] as written, borrowing its texts and offsets.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CheckpointOut<'a> {
    #[serde(rename = "so")]
    pub start_offset: i64,
    #[serde(rename = "pt")]
    pub pop_time: i64,
    #[serde(rename = "it")]
    pub invisible_time: i64,
    #[serde(rename = "bm")]
    pub bit_map: i32,
    #[serde(rename = "n")]
    pub num: u8,
    #[serde(rename = "q")]
    pub queue_id: i32,
    #[serde(rename = "t")]
    pub topic: &'a str,
    #[serde(rename = "c")]
    pub group: &'a str,
    #[serde(rename = "ro")]
    pub revive_offset: i64,
    #[serde(rename = "d", serialize_with = "diffs")]
    pub offsets: (i64, &'a [i64]),
    #[serde(rename = "bn")]
    pub broker_name: &'a str,
    #[serde(rename = "rp")]
    pub re_put_times: i32,
    #[serde(rename = "siloOwner", skip_serializing_if = "Option::is_none")]
    pub owner: Option<&'a str>,
    #[serde(rename = "siloRenewals", skip_serializing_if = "is_zero")]
    pub renewals: u32,
}

/// Writes queue offsets as differences from the start offset.
fn diffs<S: serde::Serializer>(v: &(i64, &[i64]), s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(v.1.len()))?;
    for o in v.1 {
        seq.serialize_element(&i32::try_from(o.saturating_sub(v.0)).unwrap_or(i32::MAX))?;
    }
    seq.end()
}

/// One record of the journal, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalRecord {
    Checkpoint(CheckpointRecord),
    Ack(AckRecord),
    BatchAck(BatchAckRecord),
}

/// Longest journal body read back (a checkpoint of 32 messages is about 400 bytes).
const MAX_BODY: usize = 64 * 1024;

impl JournalRecord {
    /// Reads a revive-topic record; `None` for one that is not a journal record (skipped, as
    /// Apache's broker skips what it cannot parse).
    pub fn read(rec: &StoredRecord<'_>) -> Option<Self> {
        if rec.body.len() > MAX_BODY {
            return None;
        }
        match rec.properties.get(silo_wire::properties::keys::TAGS)? {
            CK_TAG => {
                let mut ck: CheckpointRecord = serde_json::from_slice(rec.body).ok()?;
                ck.revive_offset = rec.meta.queue_offset;
                // A pop takes at most 32 messages; the book tracks up to 64 per checkpoint.
                (usize::from(ck.num) == ck.queue_offset_diff.len() && ck.num <= 64).then_some(Self::Checkpoint(ck))
            }
            ACK_TAG => serde_json::from_slice(rec.body).ok().map(Self::Ack),
            BATCH_ACK_TAG => serde_json::from_slice(rec.body).ok().map(Self::BatchAck),
            _ => None,
        }
    }
}

/// Writes a journal record's body into `body` and its properties into `props`, and returns
/// the message to append to revive queue `at` (topic, queue).
pub fn message<'a>(
    at: (&'a str, i32),
    tag: &str,
    record: &impl Serialize,
    now_ms: i64,
    born_host: std::net::SocketAddr,
    body: &'a mut Vec<u8>,
    props: &'a mut String,
) -> Result<MessageToStore<'a>, BrokerError> {
    body.clear();
    serde_json::to_writer(&mut *body, record).map_err(|e| BrokerError::BadBody(e.to_string()))?;
    props.clear();
    props.push_str(silo_wire::properties::keys::TAGS);
    props.push('\u{1}');
    props.push_str(tag);
    props.push('\u{2}');
    props.push_str(silo_wire::properties::keys::WAIT);
    props.push_str("\u{1}false\u{2}");
    Ok(MessageToStore {
        topic: at.0,
        queue_id: at.1,
        flag: 0,
        sys_flag: 0,
        born_timestamp: now_ms,
        born_host,
        reconsume_times: 0,
        prepared_tx_offset: 0,
        body: body.as_slice(),
        properties: props.as_str(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn checkpoints_are_written_with_apaches_keys() {
        let ck = CheckpointRecord {
            start_offset: 40,
            pop_time: 1_700_000_000_000,
            invisible_time: 30_000,
            bit_map: 0,
            num: 2,
            queue_id: 1,
            topic: "Orders".into(),
            group: "g".into(),
            revive_offset: 0,
            queue_offset_diff: vec![0, 3],
            broker_name: Some("broker-a".into()),
            re_put_times: 0,
            owner: None,
            renewals: 0,
        };
        let json = serde_json::to_string(&ck).unwrap();
        assert_eq!(
            json,
            r#"{"so":40,"pt":1700000000000,"it":30000,"bm":0,"n":2,"q":1,"t":"Orders","c":"g","ro":0,"d":[0,3],"bn":"broker-a","rp":0}"#
        );
        let back: CheckpointRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ck);
        let out = CheckpointOut {
            start_offset: 40,
            pop_time: 1_700_000_000_000,
            invisible_time: 30_000,
            bit_map: 0,
            num: 2,
            queue_id: 1,
            topic: "Orders",
            group: "g",
            revive_offset: 0,
            offsets: (40, &[40, 43]),
            broker_name: "broker-a",
            re_put_times: 0,
            owner: None,
            renewals: 0,
        };
        assert_eq!(serde_json::to_string(&out).unwrap(), json, "written as read");
        let ack: AckRecord =
            serde_json::from_str(r#"{"ao":43,"so":40,"c":"g","t":"Orders","q":1,"pt":1700000000000,"bn":"broker-a"}"#)
                .unwrap();
        assert_eq!((ack.ack_offset, ack.start_offset), (43, 40));
    }
}
