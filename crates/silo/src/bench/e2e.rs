//! `silo bench e2e`: produce and consume at once; the latency is born-to-consume, from a clock
//! stamp the producer writes into the first 8 bytes of each body (same process, monotonic).
//! With `--rate` the producers run open loop (see `rate`) and the stamp is the message's
//! intended send time, so the end-to-end latency counts from when the message was due.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use hdrhistogram::Histogram;
use silo_client::{Admin, ClientError, Message, MessageQueue, Producer, ProducerConfig, PullConsumer, Subscription};

use super::progress::progress;
use super::rate::{self, Plan};
use super::report::{Outcome, RateReport, finish_report};
use super::sampler::{BrokerSampler, own_allocs};
use super::{Counters, E2eArgs, Stop, client, ensure_topic, histogram};

pub(super) async fn e2e(args: E2eArgs) -> anyhow::Result<()> {
    if args.size < 8 {
        bail!("--size must be at least 8: the body carries the send time");
    }
    ensure_topic(&args.common, args.queues).await?;
    let consumer = PullConsumer::new(client(&args.common), &args.group);
    let mut tails: BTreeMap<MessageQueue, i64> = BTreeMap::new();
    for q in consumer.queues(&args.common.topic).await? {
        let end = consumer.max_offset(&q).await?;
        tails.insert(q, end);
    }
    let clock = Instant::now();
    // Messages stamped before this (µs on `clock`) belong to the warm-up: not recorded.
    let measure_from = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(Stop::new(None, Some(args.duration)));
    let sent = Arc::new(Counters::default());
    let received = Arc::new(Counters::default());
    let producing = Arc::new(AtomicBool::new(true));
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let end_progress = progress(received.clone(), "e2e", None, Some(args.duration));
    let allocs_start = own_allocs();
    // Consumers: one task per queue, long polling.
    let mut consumers = tokio::task::JoinSet::new();
    let sub = Arc::new(Subscription::parse("*"));
    for (mq, start) in tails {
        let (consumer, received, sent, producing, sub, measure_from) =
            (consumer.clone(), received.clone(), sent.clone(), producing.clone(), sub.clone(), measure_from.clone());
        consumers.spawn(async move {
            let mut h = histogram();
            let mut offset = start;
            let mut drain_deadline = None;
            loop {
                if !producing.load(Ordering::Relaxed) {
                    let deadline = *drain_deadline.get_or_insert_with(|| Instant::now() + Duration::from_secs(5));
                    let all_in = received.msgs.load(Ordering::Relaxed) >= sent.msgs.load(Ordering::Relaxed);
                    if all_in || Instant::now() >= deadline {
                        break;
                    }
                }
                match consumer.pull(&mq, offset, 32, &sub, Some(Duration::from_millis(200))).await {
                    Ok(r) => {
                        let now = clock.elapsed().as_micros() as u64;
                        for m in &r.messages {
                            let stamp =
                                m.raw_body().get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_be_bytes);
                            if stamp >= measure_from.load(Ordering::Relaxed) {
                                let _ = h.record(now.saturating_sub(stamp).max(1));
                            }
                            received.bytes.fetch_add(m.raw_body().len() as u64, Ordering::Relaxed);
                        }
                        received.msgs.fetch_add(r.messages.len() as u64, Ordering::Relaxed);
                        offset = r.next_begin_offset.max(offset);
                    }
                    Err(e) => {
                        received.error(1, &e);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            h
        });
    }
    let start = Instant::now();
    let (produce_latency, rate) = match args.rate {
        None => (closed_loop(&args, clock, &stop, &sent).await?, None),
        Some(offered) => {
            let plan = Plan {
                rate: offered,
                msgs_per_send: 1,
                bytes_per_send: args.size as u64,
                producers: args.producers,
                inflight: args.inflight,
                count: None,
                duration: Some(Duration::from_secs_f64(args.duration)),
                cancel: None,
                warmup: Duration::from_secs_f64(args.warmup.max(0.0)),
            };
            let warmup_us = u64::try_from(plan.warmup.as_micros()).unwrap_or(u64::MAX);
            measure_from.store((clock.elapsed().as_micros() as u64).saturating_add(warmup_us), Ordering::Relaxed);
            let producers: Vec<Arc<Producer>> = (0..args.producers)
                .map(|_| Arc::new(Producer::new(client(&args.common), ProducerConfig::default())))
                .collect();
            for producer in &producers {
                rate::warm_up(producer, &args.common.topic).await;
            }
            let (topic, size): (Arc<str>, usize) = (args.common.topic.as_str().into(), args.size);
            let run = rate::run(plan, sent.clone(), move |p, intended| {
                let (producer, topic) = (producers.get(p).cloned(), topic.clone());
                // The intended send time, not the actual one: a late send is charged end to end.
                let stamp = intended.saturating_duration_since(clock).as_micros() as u64;
                let mut body = vec![0u8; size];
                if let Some(head) = body.get_mut(..8) {
                    head.copy_from_slice(&stamp.to_be_bytes());
                }
                async move {
                    let producer = producer.ok_or_else(|| ClientError::InvalidArgument(format!("no producer {p}")))?;
                    producer.send(&topic, &Message::new(body)).await.map(drop)
                }
            })
            .await?;
            let report = RateReport::of(offered, sent.msgs.load(Ordering::Relaxed), &run);
            (run.latency, Some(report))
        }
    };
    producing.store(false, Ordering::Relaxed);
    let mut latency = histogram();
    while let Some(h) = consumers.join_next().await {
        latency.add(h?)?;
    }
    let elapsed = start.elapsed();
    end_progress();
    let broker = sampler.finish(received.msgs.load(Ordering::Relaxed)).await;
    let (s, r) = (sent.msgs.load(Ordering::Relaxed), received.msgs.load(Ordering::Relaxed));
    if r < s {
        received.error(s - r, &format!("{} of {s} sent messages were not received within 5 s", s - r));
    }
    received.errors.fetch_add(sent.errors.load(Ordering::Relaxed), Ordering::Relaxed);
    let outcome = Outcome {
        counters: &received,
        allocs_start,
        elapsed,
        latency: &latency,
        produce_latency: Some(&produce_latency),
        broker,
        rate,
        filter: None,
    };
    finish_report("e2e", &args, outcome, args.common.report.as_ref())
}

/// Each of `--inflight` senders of every producer sends again as soon as it has its answer,
/// stamping the body with the time it sends.
async fn closed_loop(
    args: &E2eArgs,
    clock: Instant,
    stop: &Arc<Stop>,
    sent: &Arc<Counters>,
) -> anyhow::Result<Histogram<u64>> {
    let mut producers = tokio::task::JoinSet::new();
    for _ in 0..args.producers {
        let producer = Arc::new(Producer::new(client(&args.common), ProducerConfig::default()));
        for _ in 0..args.inflight {
            let (producer, stop, sent) = (producer.clone(), stop.clone(), sent.clone());
            let (topic, size) = (args.common.topic.clone(), args.size);
            producers.spawn(async move {
                let mut h = histogram();
                let mut body = vec![0u8; size];
                while stop.take(1) {
                    let t = Instant::now();
                    let stamp = clock.elapsed().as_micros() as u64;
                    if let Some(head) = body.get_mut(..8) {
                        head.copy_from_slice(&stamp.to_be_bytes());
                    }
                    match producer.send(&topic, &Message::new(body.clone())).await {
                        Ok(_) => {
                            let _ = h.record(t.elapsed().as_micros().max(1) as u64);
                            sent.msgs.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => sent.error(1, &e),
                    }
                }
                h
            });
        }
    }
    let mut produce_latency = histogram();
    while let Some(h) = producers.join_next().await {
        produce_latency.add(h?)?;
    }
    Ok(produce_latency)
}
