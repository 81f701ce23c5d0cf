//! The transaction check-back service (docs/protocol.md §2.13): every
//! `transactionCheckInterval`, half messages left unresolved past the transaction timeout are
//! checked with their producer group ([`crate::core::transaction`]).

use std::sync::Arc;
use std::time::Duration;

use crate::broker::{Broker, ConnState};

/// Runs until the broker shuts down.
pub async fn run(broker: Arc<Broker>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    // Before the first round, dispatch replays what the log holds past its queues (after a
    // restart), so that the scan and the index see every half message, op and commit.
    broker.store.caught_up(Duration::from_secs(30)).await;
    let mut turn = 0usize;
    loop {
        let interval = broker.config.transaction.check_interval;
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => return,
        }
        let b = Arc::clone(&broker);
        let round = tokio::task::spawn_blocking(move || {
            let mut conn = ConnState::default();
            let now = b.config.clock.now_ms();
            b.transaction_check_round(&mut conn, now)
        })
        .await;
        match round {
            Ok(Ok(round)) => {
                for check in &round.checks {
                    // A remoting producer of the group, else a gRPC one of the topic.
                    if !broker.send_check(check, turn)
                        && let Some(front_end) = broker.front_end()
                    {
                        front_end.check_transaction(check, turn);
                    }
                    turn = turn.wrapping_add(1);
                }
                if !round.checks.is_empty() || round.given_up > 0 {
                    tracing::debug!(checks = round.checks.len(), given_up = round.given_up, "transaction check round");
                }
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "transaction check round failed; trying again next round"),
            Err(e) => tracing::error!(error = %e, "transaction check round panicked"),
        }
    }
}
