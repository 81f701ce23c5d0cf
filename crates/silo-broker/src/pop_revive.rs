//! The revive service (docs/protocol.md §2.16): popped messages whose invisible time ran out
//! unacknowledged are stored again in their group's retry topic ([`crate::core::pop`]). Before
//! that, pops the broker renews for a connected client (gRPC `auto_renew`) are renewed.

use std::sync::Arc;
use std::time::Duration;

use crate::broker::{Broker, ConnState};

/// How often the service looks for due checkpoints.
const TICK: Duration = Duration::from_millis(200);

/// Runs until the broker shuts down.
pub async fn run(broker: Arc<Broker>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    // The journal is read back only once dispatch has replayed what the log holds.
    broker.store.caught_up(Duration::from_secs(30)).await;
    let mut conn = Some(ConnState::default());
    loop {
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = shutdown.changed() => return,
        }
        let now = broker.config.clock.now_ms();
        let revive_due = broker.pop.next_due().is_some_and(|at| at <= now);
        let renew_due = broker.front_end().is_some()
            && broker
                .pop
                .next_owned_due(now)
                .is_some_and(|at| at <= now.saturating_add(broker.config.pop.renew_ahead_ms));
        if !revive_due && !renew_due {
            continue;
        }
        let b = Arc::clone(&broker);
        let mut c = conn.take().unwrap_or_default();
        let round = tokio::task::spawn_blocking(move || {
            if let Some(front_end) = b.front_end().cloned() {
                let alive = |client: &str| front_end.client_alive(client);
                match b.renew_owned_pops(&mut c, now, &alive) {
                    Ok(n) if n > 0 => tracing::debug!(renewed = n, "pops renewed for their clients"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "renewing pops failed; trying again next round"),
                }
            }
            let r = b.revive_round(&mut c, now);
            (r, c)
        })
        .await;
        match round {
            Ok((Ok(r), c)) => {
                conn = Some(c);
                if r.revived + r.dead_lettered + r.dropped > 0 {
                    tracing::debug!(
                        revived = r.revived,
                        dead_lettered = r.dead_lettered,
                        dropped = r.dropped,
                        "revive round"
                    );
                }
            }
            Ok((Err(e), c)) => {
                conn = Some(c);
                tracing::warn!(error = %e, "revive round failed; trying again next round");
            }
            Err(e) => tracing::error!(error = %e, "revive round panicked"),
        }
    }
}
