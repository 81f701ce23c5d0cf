//! `silo bench visibility`: how soon a consumer can read a message the broker acknowledged.
//!
//! A sample sends one message, and from the moment the send is acknowledged pulls that queue
//! at that offset (plain pulls, not suspended at the broker) again and again until a pull
//! returns the message, or the bound (`--max-wait-ms`) passes: the visibility is the time from
//! the acknowledgement until that pull's answer, so it is never less than one pull's round trip.
//! Three cases, each with its own histogram:
//!
//! - `new-topic`: every sample sends to a topic that did not exist, created by that send; the
//!   pulls also need the name server to route the new topic (a pull that finds no route counts
//!   as not yet visible).
//! - `after-idle`: an existing topic, after a pause (`--idle-ms`, 300) in which the broker had
//!   nothing to do, so that its dispatcher has gone to sleep.
//! - `under-load`: while background producers send to another topic at a fixed rate
//!   (`--load-rate`, 20,000 msgs/s, open loop as in `produce --rate`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hdrhistogram::Histogram;
use serde::Serialize;
use silo_client::{Admin, Client, ClientError, Message, Producer, ProducerConfig, PullConsumer, Subscription};

use super::rate::{self, Plan};
use super::report::{LATENCY_HEADER, Latency, Machine, RateReport, latency_cells, print_table};
use super::sampler::{BrokerCost, BrokerSampler};
use super::{Case, Counters, VisibilityArgs, body_of, client, client_config, ensure_named_topic, histogram};

/// The background load runs this long before the under-load samples begin.
const LOAD_WARM_UP: Duration = Duration::from_secs(1);
/// How long deleting one of the new-topic case's topics may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause after a failed pull (other than a missing route) before the next.
const ERROR_PAUSE: Duration = Duration::from_millis(1);

/// One case's figures.
#[derive(Debug, Serialize)]
struct CaseReport {
    /// Samples attempted.
    samples: usize,
    /// Samples whose message a pull returned within the bound.
    found: u64,
    /// Acknowledged, but no pull returned the message within `--max-wait-ms`.
    missed: u64,
    /// Sends that failed (no acknowledgement, so no sample).
    errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_error: Option<String>,
    /// From the acknowledgement to the answer of the pull that returned the message, µs.
    visibility_us: Latency,
    /// The sends themselves (for new-topic: including the topic's creation), µs.
    send_us: Latency,
    /// Samples found by their first pull.
    first_pull_found: u64,
    pulls_per_sample_mean: f64,
    pulls_per_sample_max: u64,
    /// Pulls that failed because the name server did not route the topic yet.
    no_route_pulls: u64,
    /// Pause before each sample, ms.
    pause_ms: u64,
}

#[derive(Debug, Serialize)]
struct LoadReport {
    topic: String,
    #[serde(flatten)]
    rate: RateReport,
    errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_error: Option<String>,
}

#[derive(Debug, Serialize)]
struct VisibilityReport<'a> {
    workload: &'static str,
    params: &'a VisibilityArgs,
    machine: Machine,
    max_wait_ms: u64,
    cases: BTreeMap<&'static str, CaseReport>,
    /// The under-load case's background producers.
    #[serde(skip_serializing_if = "Option::is_none")]
    load: Option<LoadReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new_topics: Option<NewTopics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    broker: Option<BrokerCost>,
}

#[derive(Debug, Serialize)]
struct NewTopics {
    created: usize,
    deleted: usize,
}

/// What one sample saw.
enum Sample {
    Found { send: Duration, visible: Duration, pulls: u64, no_route: u64 },
    Missed { send: Duration, pulls: u64, no_route: u64 },
    SendFailed(ClientError),
}

/// Accumulates one case's samples.
struct Tally {
    visible: Histogram<u64>,
    send: Histogram<u64>,
    samples: usize,
    missed: u64,
    errors: u64,
    first_error: Option<String>,
    first_pull_found: u64,
    pulls: u64,
    pulls_max: u64,
    no_route: u64,
}

impl Tally {
    fn new() -> Self {
        Self {
            visible: histogram(),
            send: histogram(),
            samples: 0,
            missed: 0,
            errors: 0,
            first_error: None,
            first_pull_found: 0,
            pulls: 0,
            pulls_max: 0,
            no_route: 0,
        }
    }

    fn add(&mut self, s: Sample) {
        self.samples += 1;
        let micros = |d: Duration| d.as_micros().max(1) as u64;
        match s {
            Sample::Found { send, visible, pulls, no_route } => {
                let _ = self.send.record(micros(send));
                let _ = self.visible.record(micros(visible));
                self.first_pull_found += u64::from(pulls == 1);
                self.count_pulls(pulls, no_route);
            }
            Sample::Missed { send, pulls, no_route } => {
                let _ = self.send.record(micros(send));
                self.missed += 1;
                self.count_pulls(pulls, no_route);
            }
            Sample::SendFailed(e) => {
                self.errors += 1;
                self.first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }

    fn count_pulls(&mut self, pulls: u64, no_route: u64) {
        self.pulls += pulls;
        self.pulls_max = self.pulls_max.max(pulls);
        self.no_route += no_route;
    }

    fn report(self, pause: Duration) -> CaseReport {
        let acknowledged = self.visible.len() + self.missed;
        CaseReport {
            samples: self.samples,
            found: self.visible.len(),
            missed: self.missed,
            errors: self.errors,
            first_error: self.first_error,
            visibility_us: Latency::of(&self.visible),
            send_us: Latency::of(&self.send),
            first_pull_found: self.first_pull_found,
            pulls_per_sample_mean: if acknowledged == 0 { 0.0 } else { self.pulls as f64 / acknowledged as f64 },
            pulls_per_sample_max: self.pulls_max,
            no_route_pulls: self.no_route,
            pause_ms: pause.as_millis() as u64,
        }
    }
}

/// Sends and pulls the samples.
struct Sampler {
    producer: Producer,
    consumer: PullConsumer,
    subscription: Subscription,
    message: Message,
    max_wait: Duration,
}

impl Sampler {
    /// One sample on `topic`: send, then pull at the acknowledged offset until found.
    async fn sample(&self, topic: &str) -> Sample {
        let sent = Instant::now();
        let result = match self.producer.send(topic, &self.message).await {
            Ok(r) => r,
            Err(e) => return Sample::SendFailed(e),
        };
        let acked = Instant::now();
        let send = acked - sent;
        let deadline = acked + self.max_wait;
        let (mut pulls, mut no_route) = (0u64, 0u64);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Sample::Missed { send, pulls, no_route };
            }
            pulls += 1;
            let pull = self.consumer.pull(&result.queue, result.queue_offset, 1, &self.subscription, None);
            match tokio::time::timeout(left, pull).await {
                Err(_) => return Sample::Missed { send, pulls, no_route },
                Ok(Ok(p)) => {
                    if p.messages.iter().any(|m| m.queue_offset() == result.queue_offset) {
                        return Sample::Found { send, visible: acked.elapsed(), pulls, no_route };
                    }
                }
                Ok(Err(ClientError::NoRoute { .. })) => no_route += 1,
                Ok(Err(_)) => tokio::time::sleep(ERROR_PAUSE.min(left)).await,
            }
        }
    }

    /// The queues of `topic` pulled once each, so that the samples find the route cached and
    /// the connections open.
    async fn warm_up(&self, topic: &str) -> anyhow::Result<()> {
        rate::warm_up(&self.producer, topic).await;
        let queues = self.consumer.queues(topic).await?;
        for q in queues.iter().take(1) {
            let _ = self.consumer.pull(q, 0, 1, &self.subscription, None).await;
        }
        Ok(())
    }
}

pub(super) async fn visibility(args: VisibilityArgs) -> anyhow::Result<()> {
    if args.samples == 0 || args.size == 0 || args.load_producers == 0 || args.load_inflight == 0 {
        bail!("--samples, --size, --load-producers and --load-inflight must be at least 1");
    }
    let mut cases = args.cases.clone();
    cases.dedup();
    if cases.is_empty() {
        bail!("no case to run (--cases)");
    }
    let common = &args.common;
    let topic = common.topic.as_str();
    let load_topic = format!("{topic}-load");
    ensure_named_topic(common, topic, args.queues).await?;
    if cases.contains(&Case::UnderLoad) {
        ensure_named_topic(common, &load_topic, args.queues).await?;
    }
    // A long route lifetime: a sample must not pay for fetching a route again halfway through.
    let mut config = client_config(common);
    config.route_ttl = Duration::from_secs(3600);
    let sampler = Sampler {
        producer: Producer::new(client(common), ProducerConfig::default()),
        consumer: PullConsumer::new(Client::new(config), &args.group),
        subscription: Subscription::parse("*"),
        message: Message::new(body_of(args.size)),
        max_wait: Duration::from_millis(args.max_wait_ms),
    };
    sampler.warm_up(topic).await.with_context(|| format!("cannot read topic {topic}"))?;
    let costs = BrokerSampler::start(&common.broker_pids, Admin::new(client(common))).await;
    let mut reports = BTreeMap::new();
    let mut load = None;
    let mut new_topics = Vec::new();
    let gap = Duration::from_millis(args.gap_ms);
    let mut sent = 0u64;
    for case in &cases {
        let mut tally = Tally::new();
        let pause = match case {
            Case::NewTopic => {
                let since_epoch =
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                let run = format!("{:x}", since_epoch.as_millis());
                let samples = args.new_topic_samples.unwrap_or(args.samples);
                for i in 0..samples {
                    tokio::time::sleep(gap).await;
                    let name = format!("{topic}-new-{run}-{i}");
                    if sampler.consumer.client().fetch_route(&name).await?.is_some() {
                        bail!("topic {name} exists already; the new-topic case needs topics that do not");
                    }
                    new_topics.push(name.clone());
                    tally.add(sampler.sample(&name).await);
                }
                gap
            }
            Case::AfterIdle => {
                let idle = Duration::from_millis(args.idle_ms);
                for _ in 0..args.samples {
                    tokio::time::sleep(idle).await;
                    tally.add(sampler.sample(topic).await);
                }
                idle
            }
            Case::UnderLoad => {
                let report = under_load(&args, &load_topic, async {
                    for _ in 0..args.samples {
                        tokio::time::sleep(gap).await;
                        tally.add(sampler.sample(topic).await);
                    }
                })
                .await?;
                sent += report.rate.acknowledged_msgs;
                load = Some(report);
                gap
            }
        };
        sent += tally.visible.len() + tally.missed;
        eprintln!(
            "visibility: {}: {} samples, {} found, {} missed, {} failed sends",
            case.name(),
            tally.samples,
            tally.visible.len(),
            tally.missed,
            tally.errors
        );
        reports.insert(case.name(), tally.report(pause));
    }
    let broker = costs.finish(sent).await;
    let created = new_topics.len();
    let deleted = if args.keep_topics { 0 } else { delete_topics(&args, &new_topics).await };
    let r = VisibilityReport {
        workload: "visibility",
        params: &args,
        machine: Machine::read(),
        max_wait_ms: args.max_wait_ms,
        cases: reports,
        load,
        new_topics: (created > 0).then_some(NewTopics { created, deleted }),
        broker,
    };
    print_visibility(&r, &cases);
    if let Some(path) = &common.report {
        std::fs::write(path, serde_json::to_vec_pretty(&r)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Runs `samples` while background producers send to `load_topic` at `--load-rate`, from
/// `LOAD_WARM_UP` after they began until `samples` is done.
async fn under_load<F: Future<Output = ()>>(
    args: &VisibilityArgs,
    load_topic: &str,
    samples: F,
) -> anyhow::Result<LoadReport> {
    let counters = Arc::new(Counters::default());
    let cancel = Arc::new(AtomicBool::new(false));
    let plan = Plan {
        rate: args.load_rate,
        msgs_per_send: 1,
        bytes_per_send: args.size as u64,
        producers: args.load_producers,
        inflight: args.load_inflight,
        count: None,
        duration: None,
        cancel: Some(cancel.clone()),
        warmup: Duration::ZERO,
    };
    let producers: Vec<Arc<Producer>> = (0..args.load_producers)
        .map(|_| Arc::new(Producer::new(client(&args.common), ProducerConfig::default())))
        .collect();
    for producer in &producers {
        rate::warm_up(producer, load_topic).await;
    }
    let message = Message::new(body_of(args.size));
    let topic: Arc<str> = load_topic.into();
    let background = tokio::spawn(rate::run(plan, counters.clone(), move |p, _intended| {
        let (producer, topic, message) = (producers.get(p).cloned(), topic.clone(), message.clone());
        async move {
            let producer = producer.ok_or_else(|| ClientError::InvalidArgument(format!("no producer {p}")))?;
            producer.send(&topic, &message).await.map(drop)
        }
    }));
    tokio::time::sleep(LOAD_WARM_UP).await;
    samples.await;
    cancel.store(true, Ordering::Relaxed);
    let run = background.await.context("the background load stopped")??;
    let acknowledged = counters.msgs.load(Ordering::Relaxed);
    Ok(LoadReport {
        topic: load_topic.to_owned(),
        rate: RateReport::of(args.load_rate, acknowledged, &run),
        errors: counters.errors.load(Ordering::Relaxed),
        first_error: counters.first_error.lock().ok().and_then(|e| e.clone()),
    })
}

/// Deletes the new-topic case's topics, each within `DELETE_TIMEOUT`; returns how many went.
async fn delete_topics(args: &VisibilityArgs, topics: &[String]) -> usize {
    let admin = Admin::new(client(&args.common));
    let mut deleted = 0;
    for t in topics {
        if let Ok(Ok(_)) = tokio::time::timeout(DELETE_TIMEOUT, admin.delete_topic(None, t)).await {
            deleted += 1;
        }
    }
    if deleted < topics.len() {
        eprintln!("visibility: {} of {} new topics could not be deleted", topics.len() - deleted, topics.len());
    }
    deleted
}

fn print_visibility(r: &VisibilityReport<'_>, cases: &[Case]) {
    println!("visibility: from a send's acknowledgement until a pull returns the message (µs)");
    let mut header = vec!["case", "samples", "missed", "errors"];
    header.extend(LATENCY_HEADER.iter().skip(1));
    header.extend(["first pull", "pulls max"]);
    let rows: Vec<Vec<String>> = cases
        .iter()
        .filter_map(|c| r.cases.get(c.name()).map(|rep| (c, rep)))
        .map(|(c, rep)| {
            let mut row =
                vec![c.name().to_owned(), rep.samples.to_string(), rep.missed.to_string(), rep.errors.to_string()];
            row.extend(latency_cells(&rep.visibility_us).into_iter().skip(1));
            row.push(format!("{} of {}", rep.first_pull_found, rep.found + rep.missed));
            row.push(rep.pulls_per_sample_max.to_string());
            row
        })
        .collect();
    print_table(&header, &rows);
    println!();
    println!("the sends themselves (µs):");
    let mut header = vec!["case"];
    header.extend(LATENCY_HEADER);
    let rows: Vec<Vec<String>> = cases
        .iter()
        .filter_map(|c| r.cases.get(c.name()).map(|rep| (c, rep)))
        .map(|(c, rep)| [vec![c.name().to_owned()], latency_cells(&rep.send_us)].concat())
        .collect();
    print_table(&header, &rows);
    if let Some(load) = &r.load {
        println!("under-load background ({}): {}", load.topic, load.rate.summary());
        if load.errors > 0 {
            println!("background errors: {} ({})", load.errors, load.first_error.as_deref().unwrap_or(""));
        }
    }
    for (name, rep) in &r.cases {
        if let Some(e) = &rep.first_error {
            println!("{name}: first error: {e}");
        }
    }
    if let Some(n) = &r.new_topics
        && n.deleted < n.created
    {
        println!("new topics: {} created, {} deleted", n.created, n.deleted);
    }
}
