//! Stock Apache RocketMQ 5.3.3 Java clients against `silo serve`: producers (sync, async,
//! oneway, batch), push consumers (clustering with two consumers sharing the queues, tag
//! filters, retries through the retry topic, orderly, broadcasting), the lite pull consumer, the
//! dead-letter queue read back with the lite pull consumer, the admin tool, and a broker restart in the middle that must lose nothing acknowledged; the 4.9.8
//! Java client; the Go client; the C++ client; and the Rust client. The scenarios live in
//! `interop/java-client` and assert counts, bodies, properties, keys, tags and per-queue order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Below the ephemeral range: Silo is restarted on its ports, and a client connection must not
/// take one meanwhile.
fn free_port() -> u16 {
    common::free_server_port()
}

/// Each thread of process `pid`: its name, state and where in the kernel it waits.
fn threads(pid: u32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return "(gone)".into() };
    let mut out = String::new();
    for task in tasks.flatten() {
        let p = task.path();
        let read = |f: &str| std::fs::read_to_string(p.join(f)).unwrap_or_default();
        let stat = read("stat");
        let state = stat.rsplit(") ").next().and_then(|s| s.split_whitespace().next()).unwrap_or("?").to_owned();
        out.push_str(&format!("  {} {state} {}\n", read("comm").trim(), read("wchan").trim()));
        for line in read("stack").lines().take(6) {
            out.push_str(&format!("      {line}\n"));
        }
    }
    out
}

struct Silo {
    child: Child,
    data: PathBuf,
    namesrv: SocketAddr,
    broker_port: u16,
}

impl Silo {
    fn start(data: &Path, namesrv: SocketAddr, broker_port: u16) -> Self {
        let log = std::fs::File::create(data.with_extension("log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_silo"))
            .args(["serve", "--data-dir", data.to_str().unwrap()])
            .args(["--listen-port", &broker_port.to_string(), "--namesrv-listen", &namesrv.to_string()])
            .args(["--grpc-port", "0"])
            // Transaction checks every 2 s, after 2 s, up to 60 times (the stock 30 s / 6 s / 15
            // would make the scenarios minutes long, and a restart must not exhaust the checks);
            // the other scenarios send no transactional messages and notice nothing.
            .args(["--set", "transactionCheckInterval=2000", "--set", "transactionTimeOut=2000"])
            .args(["--set", "transactionCheckMax=60"])
            // The timers scenario recalls a message (off by default, as in Java).
            .args(["--set", "recallMessageEnable=true"])
            // The store's own steps too: a start that does not finish in time says where it was.
            .env("SILO_LOG", "info,silo_store=debug")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut silo = Self { child, data: data.to_owned(), namesrv, broker_port };
        let deadline = Instant::now() + Duration::from_secs(60);
        for addr in [namesrv, SocketAddr::from(([127, 0, 0, 1], broker_port))] {
            while TcpStream::connect(addr).is_err() {
                let log = || std::fs::read_to_string(data.with_extension("log")).unwrap_or_default();
                if let Some(status) = silo.child.try_wait().unwrap() {
                    panic!("silo exited ({status}) before listening on {addr}; its log:\n{}", log());
                }
                assert!(
                    Instant::now() < deadline,
                    "silo did not start listening on {addr}; its threads:\n{}\nits log:\n{}",
                    threads(silo.child.id()),
                    log()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        silo
    }

    fn kill(&mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }

    /// SIGTERM, as an operator restarts it: the broker flushes, persists consumer offsets and
    /// checkpoints before it exits; then start it again on the same directory.
    fn restart(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "silo did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
        *self = Self::start(&self.data.clone(), self.namesrv, self.broker_port);
    }
}

impl Drop for Silo {
    fn drop(&mut self) {
        self.kill();
    }
}

fn scenario(silo: &Silo, name: &str, extra: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(repo().join("interop/java-client/run.sh"))
        .arg(name)
        .args(["--namesrv", &silo.namesrv.to_string()])
        // Strict: no tolerance for the Apache 5.3.3 bugs the scenarios work around on the Java
        // broker (batch elements sharing one id, a lost first offset commit).
        .args(["--strict", "true"])
        .args(extra)
        .output()
        .expect("run interop/java-client/run.sh (needs Java and Maven)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let log = std::fs::read_to_string(silo.data.with_extension("log")).unwrap_or_default();
    assert!(
        out.status.success() && stdout.contains(&format!("PASS {name}")),
        "scenario {name} failed\nstdout:\n{stdout}\nstderr:\n{}\nbroker log (tail):\n{}",
        String::from_utf8_lossy(&out.stderr),
        log.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    );
    println!("{}", stdout.trim());
    stdout
}

fn with_silo(f: impl FnOnce(&mut Silo, &Path)) {
    let dir = tempfile::tempdir().unwrap();
    let namesrv = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut silo = Silo::start(&dir.path().join("store"), namesrv, free_port());
    f(&mut silo, dir.path());
}

#[test]
fn java_producers_and_consumers_work_unchanged() {
    with_silo(|silo, _| {
        for name in [
            "produce-consume",
            "async-oneway-batch",
            "tag-filter",
            "rebalance",
            "orderly",
            "broadcast",
            "lite-pull",
            "retry",
            "dlq-lite-pull",
            "transactions",
            "request-reply",
            "sql-filter",
            "timers",
            "pop-consume",
        ] {
            scenario(silo, name, &[]);
        }
    });
}

/// The 4.9.8 Java client, whose protocol variants differ (version 409, no 5.x header fields).
#[test]
fn the_java_4_9_client_works_unchanged() {
    with_silo(|silo, _| {
        for name in [
            "produce-consume",
            "async-oneway-batch",
            "tag-filter",
            "retry",
            "lite-pull",
            "transactions",
            "request-reply",
            "sql-filter",
            "timers",
        ] {
            scenario(silo, name, &["--client", "4"]);
        }
    });
}

#[test]
fn a_broker_restarted_in_the_middle_loses_nothing_acknowledged() {
    with_silo(|silo, dir| {
        let state = dir.join("sent.txt");
        scenario(silo, "restart-check", &["--phase", "send", "--state", state.to_str().unwrap()]);
        silo.restart();
        scenario(silo, "restart-check", &["--phase", "consume", "--state", state.to_str().unwrap()]);
    });
}

/// Transactions left open and timers still pending when the broker stops (SIGTERM) or dies
/// (SIGKILL) are resolved after it comes back: the committed messages are delivered once, the
/// rolled-back ones never, every timer once and none early.
#[test]
fn pending_transactions_and_timers_survive_a_restart_and_a_kill() {
    with_silo(|silo, dir| {
        for stop in ["restart", "kill"] {
            let transactions = dir.join(format!("transactions-{stop}.txt"));
            let timers = dir.join(format!("timers-{stop}.txt"));
            let (transactions, timers) = (transactions.to_str().unwrap(), timers.to_str().unwrap());
            scenario(silo, "transactions", &["--phase", "send", "--state", transactions]);
            scenario(silo, "timers", &["--phase", "send", "--state", timers]);
            match stop {
                "restart" => silo.restart(),
                _ => {
                    silo.kill();
                    *silo = Silo::start(&silo.data.clone(), silo.namesrv, silo.broker_port);
                }
            }
            scenario(silo, "transactions", &["--phase", "check", "--state", transactions]);
            scenario(silo, "timers", &["--phase", "consume", "--state", timers]);
        }
    });
}

#[test]
fn the_java_admin_tool_works() {
    with_silo(|silo, _| {
        scenario(silo, "admin", &[]);
    });
}

/// The Go client (`github.com/apache/rocketmq-client-go/v2`): producer (single and batch) and
/// push consumer, a tag filter, a transaction producer (commit, rollback, and "unknown" answered
/// when the broker checks back) and push consumers with SQL92 selectors.
#[test]
fn go_producers_and_consumers_work_unchanged() {
    with_silo(|silo, _| {
        let out = Command::new("bash")
            .arg(repo().join("interop/go/run.sh"))
            .arg("all")
            .args(["--namesrv", &silo.namesrv.to_string()])
            .output()
            .expect("run interop/go/run.sh (needs Go)");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success()
                && ["produce-consume", "tag-filter", "transaction", "sql-filter"]
                    .iter()
                    .all(|name| stdout.contains(&format!("PASS {name} "))),
            "Go scenarios failed\nstdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        println!("{}", stdout.trim());
    });
}

/// The C++ client (`librocketmq.so` from PyPI's `rocketmq` 0.4.4, through its Python binding):
/// producer, push consumers (concurrent and orderly) and pull consumer, with bodies, keys, tags,
/// properties and per-queue order checked. Its heartbeat writes enums as ordinals and
/// `subVersion` as a string, as Apache's broker accepts.
#[test]
fn cpp_producers_and_consumers_work_unchanged() {
    with_silo(|silo, _| {
        for name in ["produce", "push-concurrent", "push-orderly", "pull"] {
            let out = Command::new("bash")
                .arg(repo().join("interop/cpp/run.sh"))
                .arg(name)
                .args(["--namesrv", &silo.namesrv.to_string()])
                .output()
                .expect("run interop/cpp/run.sh (needs Python 3)");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success() && stdout.contains(&format!("PASS {name}")),
                "C++ client scenario {name} failed\nstdout:\n{stdout}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            println!("{}", stdout.trim());
        }
    });
}

/// The Rust client (`rocketmq-client-rust` 1.0 from crates.io): producer and push consumer.
/// It builds into a directory of its own under this build's target directory, so repeated runs
/// (and CI, which keeps its target directory) build it once.
#[test]
fn rust_producer_and_consumer_work_unchanged() {
    with_silo(|silo, _| {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../interop-rust");
        let out = Command::new("bash")
            .arg(repo().join("interop/rust/run.sh"))
            .arg("produce-consume")
            .args(["--namesrv", &silo.namesrv.to_string()])
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .expect("run interop/rust/run.sh");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success() && stdout.contains("PASS produce-consume"),
            "Rust client scenario failed\nstdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr).lines().rev().take(40).collect::<Vec<_>>().join("\n")
        );
        println!("{}", stdout.trim());
    });
}

/// One run of Apache RocketMQ's admin command line (`interop/java-client/mqadmin.sh`, i.e.
/// `mqadmin` from rocketmq-tools 5.3.3). mqadmin exits 0 even when a command fails (it prints the
/// stack trace to stderr), so callers check stdout; `Display` shows both for failure messages.
struct Mqadmin {
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Mqadmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr)
    }
}

fn mqadmin(args: &[&str]) -> Mqadmin {
    let out = Command::new("bash")
        .arg(repo().join("interop/java-client/mqadmin.sh"))
        .args(args)
        .output()
        .expect("run interop/java-client/mqadmin.sh (needs Java and Maven)");
    let run = Mqadmin {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(out.status.success(), "mqadmin {args:?} exited with {}\n{run}", out.status);
    run
}

/// Runs an mqadmin command until `done` accepts its output (bounded).
fn mqadmin_until(args: &[&str], what: &str, done: impl Fn(&str) -> bool) -> Mqadmin {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = mqadmin(args);
        if done(&run.stdout) {
            return run;
        }
        assert!(Instant::now() < deadline, "mqadmin {args:?}: {what} not seen within 60 s\n{run}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Table rows of mqadmin output: the whitespace-separated cells of every line after the header
/// line (the one starting with `header`), up to the first blank line.
fn rows(stdout: &str, header: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// `Label:   value` lines (queryMsgById, brokerStatus) as a map.
fn labelled(stdout: &str) -> std::collections::BTreeMap<String, String> {
    stdout.lines().filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())).collect()
}

/// fastjson writes integer map keys bare (`"brokerAddrs":{0:"host:port"}`); quote them so the
/// text parses as JSON.
fn quote_bare_keys(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let (mut out, mut in_string, mut escaped, mut key_may_follow) = (String::new(), false, false, false);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            (in_string, escaped) = (escaped || c != '"', !escaped && c == '\\');
        } else if key_may_follow && c.is_ascii_digit() {
            let end = (i..chars.len()).find(|&j| !chars[j].is_ascii_digit()).unwrap_or(chars.len());
            if chars.get(end) == Some(&':') {
                out.push('"');
                out.extend(&chars[i..end]);
                out.push('"');
                (i, key_may_follow) = (end, false);
                continue;
            }
        } else {
            in_string = c == '"';
            if c == '{' || c == ',' {
                key_may_follow = true;
            } else if !c.is_whitespace() {
                key_may_follow = false;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The commands an operator types against `silo serve`, with what they print checked: cluster,
/// topic create/list/route/status, consumer progress after a Java producer and consumer ran,
/// messages found by key and by id (both ids), broker status, and topic deletion.
#[test]
fn the_mqadmin_command_line_works() {
    with_silo(|silo, _| {
        let ns = silo.namesrv.to_string();
        let broker = format!("127.0.0.1:{}", silo.broker_port);
        let (topic, group, suffix, count) = ("mqadmin_t", "mqadmin_cg", "op", 8);

        // clusterList: the broker, once it has registered with the name server.
        let run = mqadmin_until(&["clusterList", "-n", &ns], "the broker", |out| out.contains(&broker));
        let cluster = rows(&run.stdout, "#Cluster Name");
        assert_eq!(cluster.len(), 1, "{run}");
        assert_eq!(cluster[0][..5], ["DefaultCluster", "broker-a", "0", broker.as_str(), "V5_3_3"], "{run}");
        assert_eq!(cluster[0].last().map(String::as_str), Some("true"), "#ACTIVATED\n{run}");

        let run = mqadmin(&["updateTopic", "-n", &ns, "-c", "DefaultCluster", "-t", topic, "-r", "4", "-w", "4"]);
        assert!(run.stdout.contains(&format!("create topic to {broker} success.")), "{run}");
        assert!(
            run.stdout
                .contains(&format!("TopicConfig [topicName={topic}, readQueueNums=4, writeQueueNums=4, perm=RW-")),
            "{run}"
        );

        let run = mqadmin(&["topicList", "-n", &ns]);
        assert!(run.stdout.lines().any(|l| l.trim() == topic), "{run}");

        let run = mqadmin(&["topicRoute", "-n", &ns, "-t", topic]);
        let route: serde_json::Value =
            serde_json::from_str(&quote_bare_keys(&run.stdout)).unwrap_or_else(|e| panic!("{e}\n{run}"));
        assert_eq!(route["brokerDatas"].as_array().map(Vec::len), Some(1), "{run}");
        assert_eq!(route["brokerDatas"][0]["brokerName"], "broker-a", "{run}");
        assert_eq!(route["brokerDatas"][0]["cluster"], "DefaultCluster", "{run}");
        assert_eq!(route["brokerDatas"][0]["brokerAddrs"]["0"], broker.as_str(), "{run}");
        let queues = &route["queueDatas"][0];
        assert_eq!(
            (&queues["readQueueNums"], &queues["writeQueueNums"], &queues["perm"]),
            (&4.into(), &4.into(), &6.into()),
            "{run}"
        );

        // A stock Java producer sends `count` messages (keys pc-op-<i>, bodies "produce-consume
        // pc op #<i>", tags TagA/TagB) and a push consumer in `group` consumes them all.
        let n = count.to_string();
        scenario(
            silo,
            "produce-consume",
            &["--topic", topic, "--group", group, "--suffix", suffix, "--count", &n, "--settle-ms", "100"],
        );

        let run = mqadmin(&["topicStatus", "-n", &ns, "-t", topic]);
        let status = rows(&run.stdout, "#Broker Name");
        assert_eq!(status.iter().map(|r| r[1].as_str()).collect::<Vec<_>>(), ["0", "1", "2", "3"], "{run}");
        assert!(status.iter().all(|r| r[0] == "broker-a" && r[2] == "0"), "min offsets 0\n{run}");
        let max: Vec<i64> = status.iter().map(|r| r[3].parse().unwrap()).collect();
        assert_eq!(max.iter().sum::<i64>(), count, "{run}");
        assert!(
            status.iter().all(|r| r[3] == "0" || r.len() > 4),
            "a last-updated time where there are messages\n{run}"
        );

        // The consumer commits its offsets as it shuts down (one-way), so wait for them.
        let run = mqadmin_until(&["consumerProgress", "-n", &ns, "-g", group], "diff 0", |out| {
            out.contains("Consume Diff Total: 0") && rows(out, "#Topic").iter().filter(|r| r[0] == topic).count() == 4
        });
        let progress: Vec<_> = rows(&run.stdout, "#Topic").into_iter().filter(|r| r[0] == topic).collect();
        for (q, row) in progress.iter().enumerate() {
            let expected = [topic.to_owned(), "broker-a".into(), q.to_string(), max[q].to_string(), max[q].to_string()];
            assert_eq!(row[..5], expected, "queue {q}: broker offset, consumer offset\n{run}");
            assert_eq!(row[5], "0", "queue {q}: diff\n{run}");
        }

        // Message 3 by key: one hit, with its msgId (the client's UNIQ_KEY), queue and offset.
        let key = format!("pc-{suffix}-3");
        let run = mqadmin(&["queryMsgByKey", "-n", &ns, "-t", topic, "-k", &key]);
        let found = rows(&run.stdout, "#Message ID");
        assert_eq!(found.len(), 1, "{run}");
        let (msg_id, queue_id, queue_offset) = (found[0][0].clone(), found[0][1].clone(), found[0][2].clone());
        assert!(queue_offset.parse::<i64>().unwrap() < max[queue_id.parse::<usize>().unwrap()], "{run}");

        // queryMsgById with that msgId (QUERY_MESSAGE by UNIQ_KEY), then with the offset msgId
        // it printed (VIEW_MESSAGE_BY_ID at the broker the id names): the same message.
        let show = |id: &str| {
            let run = mqadmin(&["queryMsgById", "-n", &ns, "-t", topic, "-i", id, "-f", "UTF-8"]);
            let m = labelled(&run.stdout);
            let get = |k: &str| m.get(k).map(String::as_str).unwrap_or_else(|| panic!("no {k}\n{run}"));
            assert_eq!(get("Topic"), topic, "{run}");
            assert_eq!(get("Keys"), format!("[{key}]"), "{run}");
            assert_eq!(get("Tags"), "[TagB]", "{run}");
            assert_eq!((get("Queue ID"), get("Queue Offset")), (queue_id.as_str(), queue_offset.as_str()), "{run}");
            assert_eq!(get("Reconsume Times"), "0", "{run}");
            assert_eq!(get("Store Host"), broker, "{run}");
            assert_eq!(get("Message Body"), format!("produce-consume pc {suffix} #3"), "{run}");
            let props = get("Properties");
            for p in [format!("UNIQ_KEY={msg_id}"), format!("KEYS={key}"), format!("silo-prop=v-{key}")] {
                assert!(props.contains(&p), "{p} in {props}\n{run}");
            }
            // Message tracking: the group has committed offsets on the topic and is gone.
            assert!(
                run.stdout.contains(&format!("MessageTrack [consumerGroup={group}, trackType=NOT_ONLINE")),
                "{run}"
            );
            get("OffsetID").to_owned()
        };
        let offset_msg_id = show(&msg_id);
        assert_ne!(offset_msg_id, msg_id);
        assert_eq!(show(&offset_msg_id), offset_msg_id);

        let run = mqadmin(&["brokerStatus", "-n", &ns, "-b", &broker]);
        let stats = labelled(&run.stdout);
        assert_eq!(stats.get("brokerVersionDesc").map(String::as_str), Some("V5_3_3"), "{run}");
        assert_eq!(stats.get("brokerActive").map(String::as_str), Some("true"), "{run}");
        let puts: i64 = stats.get("msgPutTotalTodayNow").and_then(|v| v.parse().ok()).unwrap_or(-1);
        assert!(puts >= count, "msgPutTotalTodayNow {puts}\n{run}");
        assert!(stats.get("commitLogMaxOffset").and_then(|v| v.parse::<i64>().ok()).is_some_and(|o| o > 0), "{run}");

        let run = mqadmin(&["deleteTopic", "-n", &ns, "-c", "DefaultCluster", "-t", topic]);
        assert!(
            run.stdout.contains(&format!("delete topic [{topic}] from cluster [DefaultCluster] success.")),
            "{run}"
        );
        assert!(run.stdout.contains(&format!("delete topic [{topic}] from NameServer success.")), "{run}");
        let run = mqadmin(&["topicList", "-n", &ns]);
        assert!(!run.stdout.lines().any(|l| l.trim() == topic), "{run}");
        assert!(run.stdout.lines().any(|l| l.trim() == "TBW102"), "{run}");
    });
}

/// `mqadmin updateTopic -a +message.type=FIFO` and `updateSubGroup` (what a 5.x proxy user runs
/// before sending FIFO messages) are kept: the topic's config carries the attribute, and
/// `getConsumerConfig` shows the group's retry limit and orderly setting.
#[test]
fn mqadmin_topic_attributes_and_group_settings_are_kept() {
    with_silo(|silo, _| {
        let ns = silo.namesrv.to_string();
        let broker = SocketAddr::from(([127, 0, 0, 1], silo.broker_port));
        let run = mqadmin(&[
            "updateTopic",
            "-n",
            &ns,
            "-c",
            "DefaultCluster",
            "-t",
            "mqadmin_fifo",
            "-a",
            "+message.type=FIFO",
        ]);
        assert!(run.stdout.contains("success"), "{run}");
        let config = common::call(broker, silo_wire::codes::request::GET_TOPIC_CONFIG, &[("topic", "mqadmin_fifo")]);
        let config: serde_json::Value = serde_json::from_slice(&config.body).unwrap();
        assert_eq!(config["attributes"], serde_json::json!({"message.type": "FIFO"}), "{config}");

        let run = mqadmin(&[
            "updateSubGroup",
            "-n",
            &ns,
            "-c",
            "DefaultCluster",
            "-g",
            "mqadmin_orderly",
            "-r",
            "3",
            "-o",
            "true",
        ]);
        assert!(run.stdout.contains("success"), "{run}");
        let run = mqadmin(&["getConsumerConfig", "-n", &ns, "-g", "mqadmin_orderly"]);
        let value = |name: &str| {
            run.stdout
                .lines()
                .find(|l| l.trim_start().starts_with(name))
                .and_then(|l| l.split('=').nth(1))
                .map(str::trim)
        };
        assert_eq!((value("retryMaxTimes"), value("consumeMessageOrderly")), (Some("3"), Some("true")), "{run}");

        // setConsumeMode: the group consumes the topic by POP, kept in messageRequestMode.json.
        let args = ["-c", "DefaultCluster", "-t", "mqadmin_fifo", "-g", "mqadmin_orderly", "-m", "POP", "-q", "2"];
        let run = mqadmin(&[&["setConsumeMode", "-n", &ns][..], &args[..]].concat());
        assert!(run.stdout.contains("success"), "{run}");
        let file = std::fs::read_to_string(silo.data.join("config/messageRequestMode.json")).unwrap();
        let modes: serde_json::Value = serde_json::from_str(&file).unwrap();
        let mode = &modes["messageRequestModeMap"]["mqadmin_fifo"]["mqadmin_orderly"];
        assert_eq!((mode["mode"].as_str(), mode["popShareQueueNum"].as_i64()), (Some("POP"), Some(2)), "{file}");
    });
}
