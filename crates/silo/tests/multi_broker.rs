//! Outgrowing one machine: `silo namesrv` and two `silo broker`s with different names; both
//! register, the cluster lists both, and the default topic is routed to both.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Killed, call, free_port};
use silo_wire::body::{TopicRouteData, decode_json_body};
use silo_wire::codes::{request as rq, response as rs};

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn two_brokers_register_with_one_name_server() {
    let dir = tempfile::tempdir().unwrap();
    let ns: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let _namesrv = Killed(
        Command::new(env!("CARGO_BIN_EXE_silo"))
            .args(["namesrv", "--listen", &ns.to_string()])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the name server", || TcpStream::connect(ns).is_ok());
    let mut brokers = Vec::new();
    let mut ports = Vec::new();
    for name in ["broker-a", "broker-b"] {
        let port = free_port();
        ports.push(port);
        brokers.push(Killed(
            Command::new(env!("CARGO_BIN_EXE_silo"))
                .args(["broker", "--namesrv-addr", &ns.to_string(), "--broker-name", name])
                .args(["--listen-port", &port.to_string(), "--data-dir", dir.path().join(name).to_str().unwrap()])
                .args(["--grpc-port", "0"])
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        ));
    }
    // Both register (at start, then every 30 s) and the cluster lists both.
    wait_until("both brokers in the cluster", || {
        let f = call(ns, rq::GET_BROKER_CLUSTER_INFO, &[]);
        let body = String::from_utf8_lossy(&f.body).into_owned();
        body.contains("broker-a") && body.contains("broker-b")
    });
    // The default topic is routed to both brokers, so producers spread over them.
    let f = call(ns, rq::GET_ROUTEINFO_BY_TOPIC, &[("topic", "TBW102")]);
    assert_eq!(f.header.code, rs::SUCCESS);
    let route: TopicRouteData = decode_json_body(&f.body).unwrap();
    let mut names: Vec<_> = route.broker_datas.iter().map(|b| b.broker_name.clone()).collect();
    names.sort();
    assert_eq!(names, ["broker-a", "broker-b"]);
    for (b, port) in route.broker_datas.iter().zip(&ports) {
        assert!(b.broker_addrs[&0].starts_with("127.0.0.1:"), "{:?} {port}", b.broker_addrs);
    }
}
