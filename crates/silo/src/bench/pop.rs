//! `silo bench pop`: POP consumption of a topic's backlog, every popped message acknowledged
//! (POP_MESSAGE then one ACK_MESSAGE per message, the acks of a pop in flight at once), by
//! `--consumers` consumers of one group popping from every queue of every broker. Latency is
//! one cycle: from the pop request until every message it returned is acknowledged.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::bail;
use silo_client::{Admin, PopConsumer, PullConsumer, Subscription};

use super::progress::progress;
use super::report::{Outcome, finish_report};
use super::sampler::{BrokerSampler, own_allocs};
use super::{Counters, PopArgs, client, histogram};

pub(super) async fn pop(args: PopArgs) -> anyhow::Result<()> {
    let c = client(&args.common);
    let route = c.require_route(&args.common.topic).await?;
    let brokers: Vec<(String, String)> =
        route.brokers().into_iter().map(|(n, a)| (n.to_owned(), a.to_owned())).collect();
    // The backlog the group has not consumed: from its committed offsets (or the start).
    let pull = PullConsumer::new(c.clone(), &args.group);
    let mut backlog = 0i64;
    for q in pull.queues(&args.common.topic).await? {
        let from = pull.committed_offset(&q).await?.unwrap_or(pull.min_offset(&q).await?);
        backlog += (pull.max_offset(&q).await? - from).max(0);
    }
    let backlog = u64::try_from(backlog).unwrap_or(0);
    if backlog == 0 {
        bail!("topic {} has no backlog for group {} (produce some first)", args.common.topic, args.group);
    }
    let target = args.count.unwrap_or(backlog).min(backlog);
    let counters = Arc::new(Counters::default());
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let end_progress = progress(counters.clone(), "pop+ack", Some(target), None);
    let allocs_start = own_allocs();
    let start = Instant::now();
    let invisible = Duration::from_millis(args.invisible_ms);
    let sub = Arc::new(Subscription::parse("*"));
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..args.consumers.max(1) {
        let consumer = PopConsumer::new(client(&args.common), &args.group);
        let (counters, sub, brokers) = (counters.clone(), sub.clone(), brokers.clone());
        let (topic, batch) = (args.common.topic.clone(), args.batch);
        workers.spawn(async move {
            let mut h = histogram();
            let mut empty_rounds = 0;
            let mut turn = w;
            while counters.msgs.load(Ordering::Relaxed) < target && empty_rounds < 3 {
                let Some((name, addr)) = brokers.get(turn % brokers.len().max(1)) else { break };
                turn += 1;
                let t = Instant::now();
                let popped = match consumer.pop(name, addr, &topic, batch, invisible, None, &sub).await {
                    Ok(r) => r,
                    Err(e) => {
                        counters.error(1, &e);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                if popped.messages.is_empty() {
                    empty_rounds += 1;
                    continue;
                }
                empty_rounds = 0;
                let mut acks = tokio::task::JoinSet::new();
                for m in popped.messages {
                    let consumer = consumer.clone();
                    acks.spawn(async move {
                        let bytes = m.message.raw_body().len() as u64;
                        consumer.ack(&m).await.map(|()| bytes)
                    });
                }
                while let Some(r) = acks.join_next().await {
                    match r {
                        Ok(Ok(bytes)) => {
                            counters.msgs.fetch_add(1, Ordering::Relaxed);
                            counters.bytes.fetch_add(bytes, Ordering::Relaxed);
                        }
                        Ok(Err(e)) => counters.error(1, &e),
                        Err(e) => counters.error(1, &e),
                    }
                }
                let _ = h.record(t.elapsed().as_micros().max(1) as u64);
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
        filter: None,
    };
    finish_report("pop", &args, outcome, args.common.report.as_ref())
}
