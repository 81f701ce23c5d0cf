//! The live progress line of a run.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::Counters;

/// A progress line: a bar on a terminal, a plain line every 5 s otherwise.
pub(super) fn progress(
    counters: Arc<Counters>,
    label: &'static str,
    total: Option<u64>,
    seconds: Option<f64>,
) -> impl FnOnce() {
    let done = Arc::new(AtomicBool::new(false));
    let tty = std::io::stderr().is_terminal();
    let bar = if tty {
        let bar = match (total, seconds) {
            (Some(n), _) => indicatif::ProgressBar::new(n),
            (None, Some(s)) => indicatif::ProgressBar::new((s * 1000.0) as u64),
            _ => indicatif::ProgressBar::new_spinner(),
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {prefix} [{elapsed_precise}] {wide_bar} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_prefix(label);
        Some(bar)
    } else {
        None
    };
    let flag = done.clone();
    let handle = std::thread::spawn(move || {
        let start = Instant::now();
        let mut last = (Instant::now(), 0u64);
        let mut last_print = Instant::now();
        while !flag.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            let msgs = counters.msgs.load(Ordering::Relaxed);
            let now = Instant::now();
            let dt = now.duration_since(last.0).as_secs_f64();
            if dt < 1.0 {
                continue;
            }
            let rate = (msgs - last.1) as f64 / dt;
            last = (now, msgs);
            let errors = counters.errors.load(Ordering::Relaxed);
            let line = format!("{msgs} msgs, {rate:.0} msgs/s, {errors} errors");
            match &bar {
                Some(bar) => {
                    bar.set_position(if total.is_some() { msgs } else { start.elapsed().as_millis() as u64 });
                    bar.set_message(line);
                }
                None if last_print.elapsed() >= Duration::from_secs(5) => {
                    eprintln!("{label}: {:.0} s: {line}", start.elapsed().as_secs_f64());
                    last_print = Instant::now();
                }
                None => {}
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    });
    move || {
        done.store(true, Ordering::Relaxed);
        let _ = handle.join();
    }
}
