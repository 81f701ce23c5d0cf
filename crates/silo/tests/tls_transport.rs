//! TLS on the remoting ports, as Java's broker serves it (`tls.server.mode`): the stock Java
//! and Go clients with TLS switched on produce and consume through the name server and the
//! broker; `enforcing` closes plaintext connections, `permissive` takes both on one port,
//! `disabled` takes plaintext only; a configured certificate is the one served; a handshake of
//! garbage, or one that stalls, is closed while the broker goes on serving.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::SiloServer;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Runs `silo ARGS -n NAMESRV`: (succeeded, stdout, stderr).
fn silo(namesrv: SocketAddr, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_silo"))
        .args(args)
        .args(["-n", &namesrv.to_string()])
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Sends `bodies` to `topic` with `tls` (`--tls`, `--tls-ca FILE`, or nothing).
fn produce(namesrv: SocketAddr, tls: &[&str], topic: &str, bodies: &[&str]) -> Result<(), String> {
    let (ok, out, err) = silo(namesrv, &[&["produce", "-t", topic][..], tls, bodies].concat());
    if ok { Ok(()) } else { Err(format!("produce failed:\n{out}\n{err}")) }
}

/// Reads `count` messages of `topic` from the first offset as consumer group `group`: their
/// bodies, sorted.
fn consume(namesrv: SocketAddr, tls: &[&str], topic: &str, group: &str, count: usize) -> Result<Vec<String>, String> {
    let count = count.to_string();
    let args = [&["consume", "-t", topic, "-g", group, "--count", &count, "--from", "first"][..], tls].concat();
    let (ok, out, err) = silo(namesrv, &args);
    if !ok {
        return Err(format!("consume failed:\n{out}\n{err}"));
    }
    let mut bodies: Vec<String> = out
        .lines()
        .filter(|l| l.contains(" offset "))
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .collect();
    bodies.sort();
    Ok(bodies)
}

/// [`produce`] then [`consume`] with a group of its own: the bodies read back, sorted.
fn round_trip(namesrv: SocketAddr, tls: &[&str], topic: &str, bodies: &[&str]) -> Result<Vec<String>, String> {
    produce(namesrv, tls, topic, bodies)?;
    consume(namesrv, tls, topic, &format!("{topic}-reader"), bodies.len())
}

fn sorted(bodies: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = bodies.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// Whether the server closes `stream` (end of stream or reset) within `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

/// A plaintext request frame (GET_BROKER_CLUSTER_INFO).
fn plaintext_request() -> Vec<u8> {
    let header = silo_wire::RemotingHeader::request(silo_wire::codes::request::GET_BROKER_CLUSTER_INFO, 1);
    let mut out = Vec::new();
    silo_wire::frame::encode_frame(&header, silo_wire::SerializeType::Json, &[], &mut out).unwrap();
    out
}

#[test]
fn stock_clients_connect_over_tls_and_plaintext_is_closed_when_tls_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let silo_server = SiloServer::start(&dir.path().join("store"), &["--tls-mode", "enforcing"]);
    let namesrv = silo_server.namesrv;

    let java = common::java_scenario(&namesrv.to_string(), "produce-consume", &["--tls", "true", "--count", "50"]);
    assert!(java.contains("sent=50") && java.contains("delivered=50"), "{java}");

    let go = Command::new("bash")
        .arg(repo().join("interop/go/run.sh"))
        .args(["produce-consume", "--namesrv", &namesrv.to_string(), "--tls", "--count", "50"])
        .output()
        .expect("run interop/go/run.sh (needs Go)");
    let go_out = String::from_utf8_lossy(&go.stdout);
    assert!(
        go.status.success() && go_out.starts_with("PASS produce-consume") && go_out.contains("received=55"),
        "Go over TLS:\n{go_out}\n{}",
        String::from_utf8_lossy(&go.stderr)
    );

    let bodies = ["one", "two", "three"];
    assert_eq!(round_trip(namesrv, &["--tls"], "TlsEnforced", &bodies).unwrap(), sorted(&bodies));
    let plaintext = round_trip(namesrv, &[], "TlsEnforcedPlain", &bodies).unwrap_err();
    assert!(plaintext.contains("add --tls") || plaintext.contains("closed"), "{plaintext}");

    // A plaintext frame on either port: closed, unanswered.
    for addr in [namesrv, silo_server.broker] {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&plaintext_request()).unwrap();
        assert!(closed_within(&mut s, Duration::from_secs(5)), "plaintext to {addr} was not closed");
    }
    // A handshake record of garbage: closed.
    let mut garbage = TcpStream::connect(silo_server.broker).unwrap();
    let mut record = vec![0x16, 0x03, 0x01, 0x00, 0x40];
    record.extend((0..64u8).map(|i| i.wrapping_mul(37)));
    garbage.write_all(&record).unwrap();
    assert!(closed_within(&mut garbage, Duration::from_secs(5)), "a garbage handshake was not closed");
    // A handshake that starts and stalls: closed once the handshake's time is up (10 s).
    let mut stalled = TcpStream::connect(silo_server.broker).unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01]).unwrap();
    let started = Instant::now();
    assert!(closed_within(&mut stalled, Duration::from_secs(20)), "a stalled handshake was kept open");
    assert!(started.elapsed() >= Duration::from_secs(5), "closed before the handshake's time was up");

    // Everything acknowledged before is still there, and the broker still serves.
    produce(namesrv, &["--tls"], "TlsEnforced", &["four"]).unwrap();
    let all = consume(namesrv, &["--tls"], "TlsEnforced", "TlsEnforced-after", 4).unwrap();
    assert_eq!(all, sorted(&["one", "two", "three", "four"]));
}

/// A certificate and key for 127.0.0.1, written to `dir` as `NAME.pem` and `NAME.key`.
fn certificate(dir: &Path, name: &str) -> (String, String) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let cert = dir.join(format!("{name}.pem"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert.to_str().unwrap().to_owned(), key.to_str().unwrap().to_owned())
}

#[test]
fn permissive_takes_tls_and_plaintext_on_one_port_with_the_configured_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path(), "server");
    let (other, _) = certificate(dir.path(), "other");
    let cert_key = format!("tls.server.certPath={cert}");
    let key_key = format!("tls.server.keyPath={key}");
    let silo_server = SiloServer::start(
        &dir.path().join("store"),
        &["--set", "tls.server.mode=permissive", "--set", &cert_key, "--set", &key_key],
    );
    let namesrv = silo_server.namesrv;
    // Verified against the configured certificate, unverified, and plaintext: one port.
    assert_eq!(round_trip(namesrv, &["--tls-ca", &cert], "Permissive", &["a", "b"]).unwrap(), sorted(&["a", "b"]));
    produce(namesrv, &["--tls"], "Permissive", &["c"]).unwrap();
    produce(namesrv, &[], "Permissive", &["d"]).unwrap();
    assert_eq!(consume(namesrv, &[], "Permissive", "plain-reader", 4).unwrap(), sorted(&["a", "b", "c", "d"]));
    // A client that trusts another certificate refuses this server.
    let refused = produce(namesrv, &["--tls-ca", &other], "Permissive", &["e"]).unwrap_err();
    assert!(refused.to_lowercase().contains("certificate"), "{refused}");
}

#[test]
fn disabled_takes_plaintext_only() {
    let dir = tempfile::tempdir().unwrap();
    let silo_server = SiloServer::start(&dir.path().join("store"), &["--tls-mode", "disabled"]);
    let namesrv = silo_server.namesrv;
    assert_eq!(round_trip(namesrv, &[], "Disabled", &["x"]).unwrap(), sorted(&["x"]));
    assert!(produce(namesrv, &["--tls"], "Disabled", &["y"]).is_err());
    // The ClientHello was read as a frame and refused; the broker goes on.
    assert_eq!(consume(namesrv, &[], "Disabled", "after", 1).unwrap(), sorted(&["x"]));
}
