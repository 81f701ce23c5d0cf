//! A Silo broker registers with Apache RocketMQ's own name server (5.3.3, started from the
//! Maven Central jars by `interop/java-client/rocketmq-server.sh`), so users can mix the two:
//! the Java name server lists it in the cluster and routes the default topic to it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{ApacheServers, Killed, apache_script, call, free_port};
use silo_wire::body::{TopicRouteData, decode_json_body};
use silo_wire::codes::{request as rq, response as rs};

#[test]
fn a_silo_broker_registers_with_the_java_name_server() {
    let dir = tempfile::tempdir().unwrap();
    let java = dir.path().join("java");
    let servers = ApacheServers::start(&java);
    let ns_port = servers.namesrv_port;
    // Keep only the Java name server.
    assert!(
        Command::new("bash")
            .arg(apache_script())
            .args(["stop", java.to_str().unwrap(), "--broker-only"])
            .status()
            .unwrap()
            .success()
    );

    let ns: SocketAddr = format!("127.0.0.1:{ns_port}").parse().unwrap();
    let port = free_port();
    let _silo = Killed(
        Command::new(env!("CARGO_BIN_EXE_silo"))
            .args(["broker", "--namesrv-addr", &ns.to_string(), "--broker-name", "silo-broker"])
            .args(["--listen-port", &port.to_string(), "--data-dir", dir.path().join("silo").to_str().unwrap()])
            .args(["--grpc-port", "0"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let f = call(ns, rq::GET_BROKER_CLUSTER_INFO, &[]);
        if String::from_utf8_lossy(&f.body).contains("silo-broker") {
            break;
        }
        assert!(Instant::now() < deadline, "the Java name server never listed the Silo broker");
        std::thread::sleep(Duration::from_millis(200));
    }
    let f = call(ns, rq::GET_ROUTEINFO_BY_TOPIC, &[("topic", "TBW102")]);
    assert_eq!(f.header.code, rs::SUCCESS);
    let route: TopicRouteData = decode_json_body(&f.body).unwrap();
    let silo = route.broker_datas.iter().find(|b| b.broker_name == "silo-broker").expect("silo-broker in the route");
    assert_eq!(silo.broker_addrs[&0], format!("127.0.0.1:{port}"));
}
