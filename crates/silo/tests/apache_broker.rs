//! Silo's client and command line work against Apache RocketMQ itself (5.3.3 name server and
//! broker from the Maven Central jars, started by `interop/java-client/rocketmq-server.sh`):
//! `silo admin` creates and routes a topic and shows the cluster, `silo produce` sends, `silo
//! consume` reads back everything with its keys and tags, the group's progress shows no lag,
//! messages are found by id and key, and a short `silo bench` runs. This is what lets `silo
//! bench` measure Apache RocketMQ with the same load generator as Silo.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::ApacheServers;
use serde_json::Value;

/// Runs `silo ARGS` against the name server; (success, stdout, stderr).
fn silo(namesrv: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_silo")).args(args).env("NAMESRV_ADDR", namesrv).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(namesrv: &str, args: &[&str]) -> String {
    let (success, stdout, stderr) = silo(namesrv, args);
    assert!(success, "silo {args:?} failed against Apache RocketMQ\nstdout:\n{stdout}\nstderr:\n{stderr}");
    stdout
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// Retries `args` until `done` holds for its output (Apache routes a new topic only after the
/// broker's next registration, and dispatches after it answers a send), bounded.
fn until(namesrv: &str, args: &[&str], what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (success, stdout, stderr) = silo(namesrv, args);
        if success && done(&stdout) {
            return stdout;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}\nstdout:\n{stdout}\nstderr:\n{stderr}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn silo_client_commands_work_against_apache_rocketmq() {
    let dir = tempfile::tempdir().unwrap();
    let servers = ApacheServers::start(&dir.path().join("java"));
    let ns = format!("127.0.0.1:{}", servers.namesrv_port);
    let broker = format!("127.0.0.1:{}", servers.broker_port);

    let cluster = ok(&ns, &["admin", "cluster"]);
    assert!(cluster.contains("master") && cluster.contains(&broker), "{cluster}");
    let created = json_lines(&ok(&ns, &["admin", "--json", "topic", "create", "SiloOnApache", "-q", "4"]));
    assert_eq!(created[0]["queues"], 4);
    until(&ns, &["admin", "--json", "topic", "route", "SiloOnApache"], "the route of the new topic", |out| {
        serde_json::from_str::<Value>(out).is_ok_and(|r| r["queueDatas"][0]["writeQueueNums"] == 4)
    });

    let sent = json_lines(&ok(
        &ns,
        &["produce", "-t", "SiloOnApache", "--tags", "TagA", "-k", "apache-key", "-p", "p=1", "--json", "a", "b", "c"],
    ));
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(|r| r["status"] == "SEND_OK"), "{sent:?}");
    let batched =
        json_lines(&ok(&ns, &["produce", "-t", "SiloOnApache", "--batch", "4", "--json", "d", "e", "f", "g"]));
    assert_eq!(batched[0]["msg_id"].as_str().unwrap().split(',').count(), 4);

    let got = json_lines(&until(
        &ns,
        &["consume", "-t", "SiloOnApache", "-g", "silo-g", "--json", "--no-commit"],
        "7 messages",
        |out| out.lines().count() >= 7,
    ));
    let mut bodies: Vec<&str> = got.iter().map(|m| m["body"].as_str().unwrap()).collect();
    bodies.sort_unstable();
    assert_eq!(bodies, ["a", "b", "c", "d", "e", "f", "g"]);
    let a = got.iter().find(|m| m["body"] == "a").unwrap();
    assert_eq!((a["tags"].as_str(), a["properties"]["p"].as_str()), (Some("TagA"), Some("1")));
    assert_eq!(a["msgId"], sent[0]["msg_id"]);

    // Commit as a group, then Apache reports no lag for it.
    assert_eq!(json_lines(&ok(&ns, &["consume", "-t", "SiloOnApache", "-g", "silo-g", "--json"])).len(), 7);
    let progress: Value = serde_json::from_str(&until(
        &ns,
        &["admin", "--json", "group", "silo-g", "-t", "SiloOnApache"],
        "the group's progress",
        |out| serde_json::from_str::<Value>(out).is_ok_and(|p| p["lag"] == 0),
    ))
    .unwrap();
    assert_eq!(progress["queues"].as_array().unwrap().len(), 4);

    let offset_id = sent[1]["offset_msg_id"].as_str().unwrap();
    let by_id = json_lines(&ok(&ns, &["admin", "--json", "message", "id", offset_id]));
    assert_eq!(by_id[0]["body"], "b");
    let by_key = json_lines(&until(
        &ns,
        &["admin", "--json", "message", "key", "-t", "SiloOnApache", "apache-key"],
        "the key index",
        |out| out.lines().count() >= 3,
    ));
    assert_eq!(by_key.len(), 3);

    let report = dir.path().join("bench.json");
    ok(
        &ns,
        &[
            "bench",
            "produce",
            "-t",
            "SiloBenchOnApache",
            "--queues",
            "4",
            "--count",
            "2000",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!((r["msgs"].as_u64(), r["errors"].as_u64()), (Some(2000), Some(0)), "{r}");
    ok(&ns, &["bench", "consume", "-t", "SiloBenchOnApache", "--report", report.to_str().unwrap()]);
    let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!((r["msgs"].as_u64(), r["errors"].as_u64()), (Some(2000), Some(0)), "{r}");
}
