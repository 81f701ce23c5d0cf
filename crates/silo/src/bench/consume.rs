//! `silo bench consume`: catch-up over the backlog of a topic, every queue pulled at once.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::bail;
use silo_client::{Admin, MessageQueue, PullConsumer, PullStatus, Subscription};

use super::progress::progress;
use super::report::{Outcome, finish_report};
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
    let target = args.count.unwrap_or(u64::try_from(backlog).unwrap_or(0));
    if target == 0 {
        bail!("topic {} has no backlog to consume (produce some first)", args.common.topic);
    }
    let counters = Arc::new(Counters::default());
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let end_progress = progress(counters.clone(), "consume", Some(target), None);
    let allocs_start = own_allocs();
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    let sub = Arc::new(Subscription::parse("*"));
    for (mq, min, max) in plan {
        let (consumer, counters, sub) = (consumer.clone(), counters.clone(), sub.clone());
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
    let broker = sampler.finish(counters.msgs.load(Ordering::Relaxed)).await;
    let outcome = Outcome {
        counters: &counters,
        allocs_start,
        elapsed,
        latency: &latency,
        produce_latency: None,
        broker,
        rate: None,
    };
    finish_report("consume", &args, outcome, args.common.report.as_ref())
}
