//! `silo bench produce`: K producers sending single messages or batches, one or many sends in
//! flight each, for a count or a duration: as fast as the broker answers (closed loop), or at
//! a fixed offered rate with `--rate` (open loop, see `rate`). With `--classes K` message i
//! carries the tag `T{i % K}` and the user property `a` = `i % K`, for filtered consumption.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use hdrhistogram::Histogram;
use silo_client::{Admin, ClientError, Message, Producer, ProducerConfig};

use super::progress::progress;
use super::rate::{self, Plan};
use super::report::{Outcome, RateReport, finish_report};
use super::sampler::{BrokerSampler, own_allocs};
use super::{Counters, Mode, ProduceArgs, Stop, body_of, client, ensure_topic, histogram};

pub(super) async fn produce(args: ProduceArgs) -> anyhow::Result<()> {
    if args.size == 0 || args.batch == 0 || args.producers == 0 || args.inflight == 0 {
        bail!("--size, --batch, --producers and --inflight must be at least 1");
    }
    ensure_topic(&args.common, args.queues).await?;
    let duration = args.duration.or(if args.count.is_none() { Some(10.0) } else { None });
    let stop = Arc::new(Stop::new(args.count, duration));
    let counters = Arc::new(Counters::default());
    let body = body_of(args.size);
    let batch = Arc::new(Messages::new(Message::new(body), args.batch, args.classes));
    let per_producer = if args.mode == Mode::Sync { 1 } else { args.inflight };
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let end_progress = progress(counters.clone(), "produce", args.count, duration);
    let allocs_start = own_allocs();
    let (latency, elapsed, rate) = match args.rate {
        None => {
            let start = Instant::now();
            let latency = closed_loop(&args, per_producer, &stop, &counters, &batch).await?;
            (latency, start.elapsed(), None)
        }
        Some(offered) => {
            let n = args.batch as u64;
            let plan = Plan {
                rate: offered,
                msgs_per_send: n,
                bytes_per_send: n * args.size as u64,
                producers: args.producers,
                inflight: per_producer,
                count: args.count,
                duration: duration.map(Duration::from_secs_f64),
                cancel: None,
                warmup: Duration::from_secs_f64(args.warmup.max(0.0)),
            };
            let producers: Vec<Arc<Producer>> = (0..args.producers)
                .map(|_| Arc::new(Producer::new(client(&args.common), ProducerConfig::default())))
                .collect();
            for producer in &producers {
                rate::warm_up(producer, &args.common.topic).await;
            }
            let topic: Arc<str> = args.common.topic.as_str().into();
            let run = rate::run(plan, counters.clone(), move |p, _intended| {
                let (producer, batch, topic) = (producers.get(p).cloned(), batch.next_send(), topic.clone());
                async move {
                    let producer = producer.ok_or_else(|| ClientError::InvalidArgument(format!("no producer {p}")))?;
                    match batch.as_slice() {
                        [one] => producer.send(&topic, one).await.map(drop),
                        many => producer.send_batch(&topic, many).await.map(drop),
                    }
                }
            })
            .await?;
            let acknowledged = counters.msgs.load(Ordering::Relaxed);
            let report = RateReport::of(offered, acknowledged, &run);
            (run.latency, run.elapsed, Some(report))
        }
    };
    end_progress();
    let msgs = counters.msgs.load(Ordering::Relaxed);
    let broker = sampler.finish(msgs).await;
    let outcome = Outcome {
        counters: &counters,
        allocs_start,
        elapsed,
        latency: &latency,
        produce_latency: None,
        broker,
        rate,
        filter: None,
    };
    finish_report("produce", &args, outcome, args.common.report.as_ref())
}

/// Each of `per_producer` senders of every producer sends again as soon as it has its answer.
async fn closed_loop(
    args: &ProduceArgs,
    per_producer: usize,
    stop: &Arc<Stop>,
    counters: &Arc<Counters>,
    batch: &Arc<Messages>,
) -> anyhow::Result<Histogram<u64>> {
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..args.producers {
        let producer = Arc::new(Producer::new(client(&args.common), ProducerConfig::default()));
        for _ in 0..per_producer {
            let (producer, stop, counters, batch) = (producer.clone(), stop.clone(), counters.clone(), batch.clone());
            let (topic, args_batch) = (args.common.topic.clone(), args.batch);
            workers.spawn(async move {
                let mut h = histogram();
                let n = args_batch as u64;
                let bytes = n * batch.body_len();
                while stop.take(n) {
                    let send = batch.next_send();
                    let t = Instant::now();
                    let r = match send.as_slice() {
                        [one] => producer.send(&topic, one).await,
                        many => producer.send_batch(&topic, many).await,
                    };
                    match r {
                        Ok(_) => {
                            let _ = h.record(t.elapsed().as_micros().max(1) as u64);
                            counters.msgs.fetch_add(n, Ordering::Relaxed);
                            counters.bytes.fetch_add(bytes, Ordering::Relaxed);
                        }
                        Err(e) => counters.error(n, &e),
                    }
                }
                h
            });
        }
    }
    let mut latency = histogram();
    while let Some(h) = workers.join_next().await {
        latency.add(h?)?;
    }
    Ok(latency)
}

/// What each send carries: the same message (or batch) every time, or with `--classes`,
/// messages numbered over all senders and sorted into classes by tag and property.
struct Messages {
    fixed: Arc<Vec<Message>>,
    classes: u64,
    next: AtomicU64,
}

impl Messages {
    fn new(message: Message, batch: usize, classes: u64) -> Self {
        Self { fixed: Arc::new(vec![message; batch]), classes, next: AtomicU64::new(0) }
    }

    fn body_len(&self) -> u64 {
        self.fixed.first().map_or(0, |m| m.body.len() as u64)
    }

    /// The messages of the next send.
    fn next_send(&self) -> Arc<Vec<Message>> {
        if self.classes == 0 {
            return self.fixed.clone();
        }
        let first = self.next.fetch_add(self.fixed.len() as u64, Ordering::Relaxed);
        let classed = self.fixed.iter().zip(first..).map(|(m, i)| {
            let class = i % self.classes;
            m.clone().with_tags(format!("T{class}")).with_property("a", class.to_string())
        });
        Arc::new(classed.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_number_messages_across_sends() {
        let m = Messages::new(Message::new("x"), 3, 10);
        let first = m.next_send();
        let second = m.next_send();
        let classes: Vec<_> = first.iter().chain(second.iter()).map(|m| m.tags.clone().unwrap_or_default()).collect();
        assert_eq!(classes, ["T0", "T1", "T2", "T3", "T4", "T5"]);
        assert_eq!(second.get(2).map(|m| m.properties.clone()), Some(vec![("a".to_owned(), "5".to_owned())]));
        let plain = Messages::new(Message::new("x"), 1, 0).next_send();
        assert!(plain.iter().all(|m| m.tags.is_none() && m.properties.is_empty()));
    }
}
