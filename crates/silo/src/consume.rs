//! `silo consume`: read a topic's messages, every queue at once, from the first or last offset,
//! a point in time, or where the consumer group left off, up to the end of each queue as of the
//! start; follow new ones with `--follow`.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use silo_client::{MessageQueue, PullConsumer, PullStatus, ReceivedMessage, Subscription};

use crate::cli::NamesrvArg;

#[derive(Args, Debug)]
pub struct ConsumeArgs {
    #[command(flatten)]
    namesrv: NamesrvArg,
    #[arg(short = 't', long)]
    topic: String,
    /// Consumer group; its offsets are read at the start (with `--from group`) and committed
    /// as messages are printed.
    #[arg(short = 'g', long, default_value = "silo-cli-consumer")]
    group: String,
    /// Tag expression: `*`, or tags separated by `||`.
    #[arg(long, default_value = "*")]
    tags: String,
    /// Where to start: `group` (the group's committed offsets, else the first), `first`,
    /// `last`, or a time in milliseconds since the epoch.
    #[arg(long, default_value = "group")]
    from: String,
    /// Keep waiting for new messages (Ctrl-C to stop).
    #[arg(short = 'f', long)]
    follow: bool,
    /// Stop after this many messages.
    #[arg(long)]
    count: Option<u64>,
    /// Do not commit the group's offsets.
    #[arg(long)]
    no_commit: bool,
    /// One JSON object per message.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonMessage<'a> {
    topic: &'a str,
    broker_name: &'a str,
    queue_id: i32,
    queue_offset: i64,
    msg_id: String,
    offset_msg_id: String,
    tags: Option<&'a str>,
    keys: Vec<&'a str>,
    born_timestamp: i64,
    store_timestamp: i64,
    reconsume_times: i32,
    properties: BTreeMap<&'a str, &'a str>,
    /// The body as UTF-8 (invalid sequences replaced).
    body: String,
    body_len: usize,
}

pub fn run(args: ConsumeArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(consume(args))
}

async fn start_offset(consumer: &PullConsumer, mq: &MessageQueue, from: &str) -> anyhow::Result<i64> {
    Ok(match from {
        "first" => consumer.min_offset(mq).await?,
        "last" => consumer.max_offset(mq).await?,
        "group" => match consumer.committed_offset(mq).await? {
            Some(o) => o,
            None => consumer.min_offset(mq).await?,
        },
        ts => {
            let ms: i64 = ts.parse().with_context(|| {
                format!("--from {ts:?}: expected group, first, last or milliseconds since the epoch")
            })?;
            consumer.offset_for_timestamp(mq, ms).await?
        }
    })
}

async fn consume(args: ConsumeArgs) -> anyhow::Result<()> {
    let consumer = PullConsumer::new(args.namesrv.client(), &args.group);
    let queues = consumer
        .queues(&args.topic)
        .await
        .with_context(|| format!("cannot read topic {} (does it exist? `silo admin topic list`)", args.topic))?;
    if queues.is_empty() {
        bail!("topic {} has no readable queue", args.topic);
    }
    let sub = Subscription::parse(&args.tags);
    let mut next: BTreeMap<MessageQueue, i64> = BTreeMap::new();
    // Without --follow, each queue is read up to its end as of now: the broker answers the
    // end only once it covers every message acknowledged before the question.
    let mut end: BTreeMap<MessageQueue, i64> = BTreeMap::new();
    for q in queues {
        let o = start_offset(&consumer, &q, &args.from).await?;
        if !args.follow {
            end.insert(q.clone(), consumer.max_offset(&q).await?);
        }
        next.insert(q, o);
    }
    let mut committed: BTreeMap<MessageQueue, i64> = BTreeMap::new();
    let mut printed = 0u64;
    let mut out = std::io::stdout().lock();
    let limit = args.count.unwrap_or(u64::MAX);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    'outer: loop {
        let mut idle = true;
        for (mq, offset) in &mut next {
            if end.get(mq).is_some_and(|e| *offset >= *e) {
                continue;
            }
            let hold = args.follow.then(|| Duration::from_millis(500));
            let pull = consumer.pull(mq, *offset, 32, &sub, hold);
            let r = tokio::select! {
                r = pull => r.with_context(|| format!("cannot pull {mq}"))?,
                _ = &mut ctrl_c => break 'outer,
            };
            if r.status == PullStatus::Found || r.next_begin_offset != *offset {
                idle = false;
            }
            for m in &r.messages {
                if printed >= limit || end.get(mq).is_some_and(|e| m.queue_offset() >= *e) {
                    break;
                }
                print(&mut out, mq, m, args.json)?;
                printed += 1;
                *offset = m.queue_offset() + 1;
            }
            if printed >= limit {
                break 'outer;
            }
            *offset = r.next_begin_offset.max(*offset);
            if let Some(e) = end.get(mq) {
                *offset = (*offset).min(*e);
            }
        }
        out.flush()?;
        if !args.no_commit {
            commit(&consumer, &next, &mut committed).await?;
        }
        let all_read = !end.is_empty() && next.iter().all(|(mq, o)| end.get(mq).is_some_and(|e| o >= e));
        if !args.follow && (idle || all_read) {
            break;
        }
    }
    out.flush()?;
    if !args.no_commit {
        commit(&consumer, &next, &mut committed).await?;
    }
    if !args.json {
        eprintln!("{printed} message(s) from {}", args.topic);
    }
    Ok(())
}

async fn commit(
    consumer: &PullConsumer,
    next: &BTreeMap<MessageQueue, i64>,
    committed: &mut BTreeMap<MessageQueue, i64>,
) -> anyhow::Result<()> {
    for (mq, offset) in next {
        if committed.get(mq) != Some(offset) {
            consumer.commit_offset(mq, *offset).await.with_context(|| format!("cannot commit the offset of {mq}"))?;
            committed.insert(mq.clone(), *offset);
        }
    }
    Ok(())
}

fn print(out: &mut impl Write, mq: &MessageQueue, m: &ReceivedMessage, json: bool) -> anyhow::Result<()> {
    let body = m.body()?;
    let text = String::from_utf8_lossy(&body);
    if json {
        let props = m.properties();
        let j = JsonMessage {
            topic: m.topic(),
            broker_name: &mq.broker_name,
            queue_id: m.queue_id(),
            queue_offset: m.queue_offset(),
            msg_id: m.msg_id(),
            offset_msg_id: m.offset_msg_id(),
            tags: m.tags(),
            keys: m.keys().collect(),
            born_timestamp: m.born_timestamp(),
            store_timestamp: m.store_timestamp(),
            reconsume_times: m.reconsume_times(),
            properties: props.iter().collect(),
            body: text.into_owned(),
            body_len: body.len(),
        };
        serde_json::to_writer(&mut *out, &j)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{}#{} offset {}  tags {}  keys {}  {}",
            mq.broker_name,
            m.queue_id(),
            m.queue_offset(),
            m.tags().unwrap_or("-"),
            m.keys().collect::<Vec<_>>().join(","),
            text
        )?;
    }
    Ok(())
}
