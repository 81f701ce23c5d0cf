//! `silo bench consume`: catch-up over the backlog of a topic, every queue pulled at once;
//! with `--sql` or `--tag` through a filtering subscription, over the whole backlog.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use silo_client::{Admin, MessageQueue, PullConsumer, PullStatus, Subscription};

use super::progress::progress;
use super::report::{Filtered, Outcome, finish_report};
use super::sampler::{BrokerSampler, own_allocs};
use super::{ConsumeArgs, Counters, client, histogram};

pub(super) async fn consume(args: ConsumeArgs) -> anyhow::Result<()> {
    let consumer = PullConsumer::new(client(&args.common), &args.group);
    let queues = consumer.queues(&args.common.topic).await?;
    let mut plan: Vec<(MessageQueue, i64, i64)> = Vec::new();
    for q in queues {
        let (min, max) = (consumer.min_offset(&q).await?, consumer.max_offset(&q).await?);
        plan.push((q, min, max));
    }
    let backlog: i64 = plan.iter().map(|(_, min, max)| max - min).sum();
    let sub = match (&args.sql, &args.tag) {
        (Some(sql), _) => Subscription::sql92(sql),
        (None, Some(tags)) => Subscription::parse(tags),
        (None, None) => Subscription::parse("*"),
    };
    let filtered = args.sql.is_some() || args.tag.is_some();
    let backlog = u64::try_from(backlog).unwrap_or(0);
    if backlog == 0 {
        bail!("topic {} has no backlog to consume (produce some first)", args.common.topic);
    }
    // A filtered run cannot know how many messages match: it reads the whole backlog.
    let target = args.count.unwrap_or(if filtered { u64::MAX } else { backlog });
    let scanned = Arc::new(AtomicU64::new(0));
    let counters = Arc::new(Counters::default());
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let end_progress = progress(counters.clone(), "consume", (!filtered).then_some(target), None);
    let allocs_start = own_allocs();
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    let sub = Arc::new(sub);
    for (mq, min, max) in plan {
        let (consumer, counters, sub, scanned) = (consumer.clone(), counters.clone(), sub.clone(), scanned.clone());
        let pull_batch = args.pull_batch;
        workers.spawn(async move {
            let mut h = histogram();
            let mut offset = min;
            while offset < max && counters.msgs.load(Ordering::Relaxed) < target {
                let t = Instant::now();
                match consumer.pull(&mq, offset, pull_batch, &sub, None).await {
                    Ok(r) => {
                        let _ = h.record(t.elapsed().as_micros().max(1) as u64);
                        let bytes: u64 = r.messages.iter().map(|m| m.raw_body().len() as u64).sum();
                        counters.msgs.fetch_add(r.messages.len() as u64, Ordering::Relaxed);
                        counters.bytes.fetch_add(bytes, Ordering::Relaxed);
                        if r.status != PullStatus::Found && r.next_begin_offset <= offset {
                            break; // nothing more where the backlog was said to be
                        }
                        let next = r.next_begin_offset.min(max);
                        scanned.fetch_add(u64::try_from(next - offset).unwrap_or(0), Ordering::Relaxed);
                        offset = r.next_begin_offset;
                    }
                    Err(e) => {
                        counters.error(1, &e);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            h
        });
    }
    let mut latency = histogram();
    while let Some(h) = workers.join_next().await {
        latency.add(h?)?;
    }
    let elapsed = start.elapsed();
    end_progress();
    let scanned = scanned.load(Ordering::Relaxed);
    // With a filter the broker's work is the backlog it scanned, not the few messages it sent.
    let broker = sampler.finish(if filtered { scanned } else { counters.msgs.load(Ordering::Relaxed) }).await;
    let filter = filtered.then(|| Filtered::of(&sub, backlog, scanned, counters.msgs.load(Ordering::Relaxed), elapsed));
    let outcome = Outcome {
        counters: &counters,
        allocs_start,
        elapsed,
        latency: &latency,
        produce_latency: None,
        broker,
        rate: None,
        filter,
    };
    finish_report("consume", &args, outcome, args.common.report.as_ref())
}
