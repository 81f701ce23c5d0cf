//! Produce and consume rates for the console's graph: once a second the broker's message
//! counters are read and the difference from the second before is kept, for the last
//! [`KEPT`] seconds. The counters are the ones every send and delivery already adds to, so
//! the graph costs the hot path nothing.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use silo_broker::broker::Broker;

/// Seconds of history kept.
pub const KEPT: usize = 300;

/// One second's rates.
#[derive(Debug, Clone, Copy)]
struct Point {
    /// Wall-clock time of the sample, in ms.
    at: i64,
    messages_in: u64,
    messages_out: u64,
}

/// The rates of the last [`KEPT`] seconds.
#[derive(Debug, Default)]
pub struct Rates {
    points: Mutex<VecDeque<Point>>,
}

impl Rates {
    /// Starts sampling `broker` every second until `shutdown`.
    pub fn sample(
        broker: Arc<Broker>,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> (Arc<Self>, tokio::task::JoinHandle<()>) {
        let rates = Arc::new(Self::default());
        let kept = Arc::clone(&rates);
        let task = tokio::spawn(async move {
            let counters = || {
                (broker.stats.put_messages.load(Ordering::Relaxed), broker.stats.get_messages.load(Ordering::Relaxed))
            };
            let mut last = counters();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = shutdown.changed() => return,
                }
                let now = counters();
                kept.push(Point {
                    at: broker.config.clock.now_ms(),
                    messages_in: now.0.saturating_sub(last.0),
                    messages_out: now.1.saturating_sub(last.1),
                });
                last = now;
            }
        });
        (rates, task)
    }

    fn push(&self, p: Point) {
        let mut points = self.points.lock().unwrap_or_else(|e| e.into_inner());
        if points.len() == KEPT {
            points.pop_front();
        }
        points.push_back(p);
    }

    /// `{"intervalMs":1000,"points":[{"at":..,"in":..,"out":..},..]}`, oldest first.
    pub fn json(&self) -> Value {
        let points = self.points.lock().unwrap_or_else(|e| e.into_inner());
        let list: Vec<Value> =
            points.iter().map(|p| json!({"at": p.at, "in": p.messages_in, "out": p.messages_out})).collect();
        json!({"intervalMs": 1000, "points": list})
    }
}
