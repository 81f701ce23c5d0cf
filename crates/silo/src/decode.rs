//! `silo decode`: turns RocketMQ bytes into JSON lines a person or `jq` can read. Stops at the
//! first invalid record or frame and says where and why on stderr, with a non-zero exit.

use std::io::{Read, Write};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use silo_wire::record::{RecordWalker, WalkStop};
use silo_wire::{StoredRecord, decode_batch, decode_frame};

/// Reads a file or stdin ("-"), optionally as hex text (whitespace ignored).
pub fn read_input(input: &str, hex: bool) -> anyhow::Result<Vec<u8>> {
    let raw = if input == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf)?;
        buf
    } else {
        std::fs::read(input).with_context(|| format!("reading {input}"))?
    };
    if !hex {
        return Ok(raw);
    }
    let digits: Vec<u8> = raw.into_iter().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        bail!("hex input has an odd number of digits");
    }
    digits
        .chunks_exact(2)
        .enumerate()
        .map(|(i, pair)| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok())
                .with_context(|| format!("bad hex digit at position {}", i * 2))
        })
        .collect()
}

fn properties(view: silo_wire::PropertiesView<'_>) -> Value {
    let mut map = serde_json::Map::new();
    for (k, v) in view.iter() {
        map.insert(k.to_owned(), Value::String(v.to_owned()));
    }
    Value::Object(map)
}

fn record_json(rec: &StoredRecord<'_>, bodies: bool) -> Value {
    let m = &rec.meta;
    let mut v = json!({
        "physicalOffset": m.physical_offset,
        "size": rec.total_size,
        "version": format!("{:?}", rec.version),
        "topic": rec.topic,
        "queueId": m.queue_id,
        "queueOffset": m.queue_offset,
        "flag": m.flag,
        "sysFlag": m.sys_flag,
        "bodyCrc": m.body_crc,
        "bodyCrcOk": rec.body_crc_matches(),
        "bornTimestamp": m.born_timestamp,
        "bornHost": m.born_host.to_string(),
        "storeTimestamp": m.store_timestamp,
        "storeHost": m.store_host.to_string(),
        "msgId": silo_wire::msgid::offset_msg_id(m.store_host, m.physical_offset).to_string(),
        "reconsumeTimes": m.reconsume_times,
        "preparedTransactionOffset": m.prepared_tx_offset,
        "bodyLength": rec.body.len(),
        "properties": properties(rec.properties),
    });
    if bodies {
        v["body"] = Value::String(String::from_utf8_lossy(rec.body).into_owned());
    }
    v
}

pub fn records(bytes: &[u8], bodies: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let mut walker = RecordWalker::new(bytes);
    for rec in walker.by_ref() {
        writeln!(out, "{}", record_json(&rec, bodies))?;
    }
    match walker.stop() {
        None => Ok(()),
        Some(WalkStop::Blank { offset }) => {
            eprintln!("end of segment data (blank marker) at byte {offset}");
            Ok(())
        }
        Some(WalkStop::Invalid(e)) => {
            // A zero-filled tail is how a pre-allocated segment ends; not an error.
            let tail = bytes.get(e.offset..).unwrap_or_default();
            if tail.iter().all(|b| *b == 0) {
                eprintln!("end of data at byte {} (zero-filled tail)", e.offset);
                Ok(())
            } else {
                bail!("stopped: {e}")
            }
        }
    }
}

pub fn frames(mut bytes: &[u8], out: &mut impl Write) -> anyhow::Result<()> {
    let mut offset = 0usize;
    while !bytes.is_empty() {
        let frame = decode_frame(bytes, silo_wire::frame::DEFAULT_MAX_FRAME_LEN)
            .map_err(|e| e.rebased(offset))
            .context("decoding frame")?;
        let Some(frame) = frame else { bail!("truncated frame at byte {offset}") };
        let h = &frame.header;
        let ext: serde_json::Map<String, Value> =
            h.ext_fields.iter().map(|(k, v)| (k.to_owned(), Value::String(v.to_owned()))).collect();
        let v = json!({
            "offset": offset,
            "serializeType": format!("{:?}", frame.serialize),
            "code": h.code,
            "response": h.is_response(),
            "oneway": h.is_oneway(),
            "language": h.language.name(),
            "version": h.version,
            "opaque": h.opaque,
            "flag": h.flag,
            "remark": h.remark,
            "extFields": ext,
            "bodyLength": frame.body.len(),
            "bodyText": std::str::from_utf8(frame.body).ok(),
        });
        writeln!(out, "{v}")?;
        offset += frame.total_len;
        bytes = bytes.get(frame.total_len..).unwrap_or_default();
    }
    Ok(())
}

pub fn batch(bytes: &[u8], out: &mut impl Write) -> anyhow::Result<()> {
    for entry in decode_batch(bytes) {
        let entry = entry.context("decoding batch")?;
        let v = json!({
            "offset": entry.offset,
            "size": entry.len,
            "flag": entry.flag,
            "bodyLength": entry.body.len(),
            "body": String::from_utf8_lossy(entry.body),
            "properties": properties(entry.properties),
        });
        writeln!(out, "{v}")?;
    }
    Ok(())
}
