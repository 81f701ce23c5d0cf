//! A store moves between Silo and Apache RocketMQ 5.3.3 with its unfinished work: transactions
//! left open and timers still pending when one broker stops are resolved by the other, started on
//! the same directory. The stock Java 5.3.3 producer sends, the first broker stops (SIGTERM), the
//! other starts on its store, and the producer's checker and a consumer finish against it:
//! exactly the committed messages are delivered, once, none rolled back, every timer once and
//! none early. This holds only because both keep the half and op queues, their progress in
//! `consumerOffset.json`, and the timer wheel, log and checkpoint in the same layout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{ApacheServers, SiloServer, java_scenario};

/// Short checks, so that the run takes seconds (both brokers know these keys).
const SILO_TRANSACTION_KEYS: [&str; 6] =
    ["--set", "transactionCheckInterval=2000", "--set", "transactionTimeOut=2000", "--set", "transactionCheckMax=60"];

const APACHE_TRANSACTION_KEYS: [&str; 4] = [
    "transactionCheckInterval=2000",
    "transactionTimeOut=2000",
    "transactionCheckMax=60",
    // Apache writes an answer's op record up to this long after it; a check in between would
    // commit the message again (its own duplicate, see interop/java-client/README.md).
    "transactionOpBatchInterval=100",
];

#[test]
fn apache_rocketmq_continues_silos_open_transactions_and_pending_timers() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (transactions, timers) = (dir.path().join("transactions.txt"), dir.path().join("timers.txt"));
    let (transactions, timers) = (transactions.to_str().unwrap(), timers.to_str().unwrap());

    let mut silo = SiloServer::start(&store, &SILO_TRANSACTION_KEYS);
    let ns = silo.namesrv.to_string();
    java_scenario(&ns, "transactions", &["--phase", "send", "--state", transactions]);
    java_scenario(&ns, "timers", &["--phase", "send", "--state", timers]);
    silo.stop();

    let apache = ApacheServers::start_with(&dir.path().join("java"), Some(&store), &APACHE_TRANSACTION_KEYS);
    let ns = format!("127.0.0.1:{}", apache.namesrv_port);
    java_scenario(&ns, "transactions", &["--phase", "check", "--state", transactions]);
    let consumed =
        std::panic::catch_unwind(|| java_scenario(&ns, "timers", &["--phase", "consume", "--state", timers]));
    if let Err(e) = consumed {
        let why = e.downcast_ref::<String>().cloned().unwrap_or_default();
        panic!("{why}\nApache's broker on its store:\n{}", apache.store_complaints());
    }
}

#[test]
fn silo_continues_apache_rocketmqs_open_transactions_and_pending_timers() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (transactions, timers) = (dir.path().join("transactions.txt"), dir.path().join("timers.txt"));
    let (transactions, timers) = (transactions.to_str().unwrap(), timers.to_str().unwrap());

    let apache = ApacheServers::start_with(&dir.path().join("java"), Some(&store), &APACHE_TRANSACTION_KEYS);
    let ns = format!("127.0.0.1:{}", apache.namesrv_port);
    java_scenario(&ns, "transactions", &["--phase", "send", "--state", transactions]);
    java_scenario(&ns, "timers", &["--phase", "send", "--state", timers]);
    drop(apache);

    let silo = SiloServer::start(&store, &SILO_TRANSACTION_KEYS);
    let ns = silo.namesrv.to_string();
    java_scenario(&ns, "transactions", &["--phase", "check", "--state", transactions, "--strict", "true"]);
    java_scenario(&ns, "timers", &["--phase", "consume", "--state", timers, "--strict", "true"]);
    assert!(silo.log_tail().lines().all(|l| !l.contains("ERROR")), "Silo logged errors:\n{}", silo.log_tail());
}
