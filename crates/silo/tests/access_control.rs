//! Access control (RocketMQ 5.3's ACL 2.0) with the stock tools: who may publish and subscribe
//! is decided by users and ACLs that Apache's `mqadmin` manages, they survive a crash, the
//! stock Java client and `silo` work as a signed-in user, and forged, replayed, cut or
//! oversized credentials are refused while the broker goes on serving.
//!
//! The Java scenario `acl` ran against Apache RocketMQ 5.3.3 (broker with the same keys) before
//! it ran here; `interop/java-client/README.md` shows how.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{SiloServer, java_scenario, read_frame};
use silo_wire::codes::{request as rq, response as rs};
use silo_wire::frame::encode_frame;
use silo_wire::{Frame, RemotingHeader, SerializeType};

const ADMIN: &str = "rocketmq";
const ADMIN_SECRET: &str = "12345678";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A broker with both checks on, its initial super user, and the inner credentials it signs
/// its own requests with.
fn secured(data: &Path) -> SiloServer {
    let mut args = common::access_control_on((ADMIN, ADMIN_SECRET));
    args.extend([
        "--set".to_owned(),
        r#"innerClientAuthenticationCredentials={"accessKey":"silo-inner","secretKey":"inner-secret"}"#.to_owned(),
    ]);
    SiloServer::start(data, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// `mqadmin` (rocketmq-tools 5.3.3) signed as `user`; its stdout (it exits 0 even when a command
/// fails, so callers check what it printed).
fn mqadmin(user: (&str, &str), args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(repo().join("interop/java-client/mqadmin.sh"))
        .args(args)
        .env("MQADMIN_ACCESS_KEY", user.0)
        .env("MQADMIN_SECRET_KEY", user.1)
        .output()
        .expect("run interop/java-client/mqadmin.sh (needs Java and Maven)");
    assert!(out.status.success(), "mqadmin {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `silo ARGS...`: (exit success, stdout, stderr).
fn run_silo(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_silo")).args(args).envs(env.iter().copied()).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn users_and_acls_from_mqadmin_decide_who_may_publish_and_subscribe_and_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut silo = secured(&dir.path().join("silo"));
    let namesrv = silo.namesrv.to_string();

    // The stock Java client and DefaultMQAdminExt: users, ACLs, and each refusal's words.
    java_scenario(&namesrv, "acl", &["--admin-user", ADMIN, "--admin-password", ADMIN_SECRET]);

    // mqadmin as an operator runs it.
    let admin = (ADMIN, ADMIN_SECRET);
    let n = ["-n", namesrv.as_str(), "-c", "DefaultCluster"];
    let created = mqadmin(admin, &[&["createUser"][..], &n, &["-u", "bob", "-p", "bob-secret"]].concat());
    assert!(created.contains("create user to") && created.contains("success"), "{created}");
    // `silo consume` reads each queue's first and last offsets, which takes Get.
    let acl = ["-s", "User:bob", "-r", "Topic:bob_orders,Group:bob_readers", "-a", "Pub,Sub,Get", "-d", "Allow"];
    let created = mqadmin(admin, &[&["createAcl"][..], &n, &acl].concat());
    assert!(created.contains("create acl to") && created.contains("success"), "{created}");
    silo.kill_and_start();

    // What mqadmin stored survived SIGKILL.
    let users = mqadmin(admin, &[&["listUser"][..], &n].concat());
    assert!(
        users.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["bob", "bob-secret", "Normal", "enable"]),
        "{users}"
    );
    let acls = mqadmin(admin, &[&["listAcl"][..], &n, &["-s", "User:bob"]].concat());
    for resource in ["Topic:bob_orders", "Group:bob_readers"] {
        assert!(acls.lines().any(|l| l.contains("User:bob") && l.contains(resource) && l.contains("Allow")), "{acls}");
    }
    // A normal user may not create users (Update on the cluster).
    let refused = mqadmin(("bob", "bob-secret"), &[&["createUser"][..], &n, &["-u", "eve", "-p", "x"]].concat());
    assert!(!refused.contains("success"), "{refused}");
    let users = mqadmin(admin, &[&["listUser"][..], &n].concat());
    assert!(!users.contains("eve"), "{users}");

    // `silo produce` and `silo consume` take credentials by flag or environment.
    let topic_create = run_silo(
        &[
            "admin",
            "-n",
            &namesrv,
            "--access-key",
            ADMIN,
            "--secret-key",
            ADMIN_SECRET,
            "topic",
            "create",
            "bob_orders",
        ],
        &[],
    );
    assert!(topic_create.0, "{topic_create:?}");
    let bob = [("SILO_ACCESS_KEY", "bob"), ("SILO_SECRET_KEY", "bob-secret")];
    let sent = run_silo(&["produce", "-n", &namesrv, "-t", "bob_orders", "one", "two", "three"], &bob);
    assert!(sent.0, "{sent:?}");
    let unsigned = run_silo(&["produce", "-n", &namesrv, "-t", "bob_orders", "four"], &[]);
    assert!(!unsigned.0 && unsigned.2.contains("username cannot be null."), "{unsigned:?}");
    let wrong = run_silo(
        &["produce", "-n", &namesrv, "--access-key", "bob", "--secret-key", "guess", "-t", "bob_orders", "x"],
        &[],
    );
    assert!(!wrong.0 && wrong.2.contains("check signature failed."), "{wrong:?}");
    let elsewhere = run_silo(&["produce", "-n", &namesrv, "-t", "someone_elses", "x"], &bob);
    assert!(!elsewhere.0 && elsewhere.2.contains("has no permission"), "{elsewhere:?}");
    let read = run_silo(
        &[
            "consume",
            "-n",
            &namesrv,
            "-t",
            "bob_orders",
            "-g",
            "bob_readers",
            "--from",
            "first",
            "--count",
            "3",
            "--json",
        ],
        &bob,
    );
    assert!(read.0, "{read:?}");
    for body in ["one", "two", "three"] {
        assert!(read.1.contains(body), "{read:?}");
    }
}

/// One request on `stream`, answered.
fn ask(stream: &mut TcpStream, header: &RemotingHeader, body: &[u8]) -> Frame {
    let mut out = Vec::new();
    encode_frame(header, SerializeType::Json, body, &mut out).unwrap();
    stream.write_all(&out).unwrap();
    read_frame(stream)
}

fn get_max_offset(topic: &str) -> RemotingHeader {
    let mut h = RemotingHeader::request(rq::GET_MAX_OFFSET, 1);
    h.ext_fields.insert("topic", topic.to_owned());
    h.ext_fields.insert("queueId", "0");
    h
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

#[test]
fn forged_replayed_cut_and_oversized_credentials_are_refused_and_the_broker_goes_on_serving() {
    let dir = tempfile::tempdir().unwrap();
    let silo = secured(&dir.path().join("silo"));
    let mut broker = connect(silo.broker);
    let sign = |h: &mut RemotingHeader, body: &[u8], user: &str, secret: &str| {
        let c = silo_wire::signature::Credentials { access_key: user.into(), secret_key: secret.into() };
        silo_wire::signature::sign(&mut h.ext_fields, body, &c, None);
    };
    let refused = |f: &Frame, words: &str| {
        assert_eq!(f.header.code, rs::NO_PERMISSION, "{:?}", f.header);
        assert!(f.header.remark.as_deref().unwrap_or_default().contains(words), "{:?}", f.header.remark);
    };

    // A send the super user signed is stored; the same bytes with another body are refused.
    let mut send = RemotingHeader::request(rq::SEND_MESSAGE_V2, 2);
    for (k, v) in [
        ("a", "pg"),
        ("b", "guarded"),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", "0"),
        ("f", "0"),
        ("g", "0"),
        ("h", "0"),
        ("i", ""),
        ("j", "0"),
        ("k", "false"),
        ("m", "false"),
    ] {
        send.ext_fields.insert(k, v);
    }
    sign(&mut send, b"kept", ADMIN, ADMIN_SECRET);
    assert_eq!(ask(&mut broker, &send, b"kept").header.code, rs::SUCCESS);
    refused(&ask(&mut broker, &send, b"swapped"), "check signature failed.");
    refused(&ask(&mut broker, &send, b"kep"), "check signature failed.");
    let mut tampered = send.clone();
    tampered.ext_fields.insert("b", "elsewhere");
    refused(&ask(&mut broker, &tampered, b"kept"), "check signature failed.");

    // Forged and oversized signatures, unknown and huge access keys, no signature at all.
    let mut forged = get_max_offset("guarded");
    forged.ext_fields.insert("AccessKey", ADMIN);
    forged.ext_fields.insert("Signature", "AAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    refused(&ask(&mut broker, &forged, b""), "check signature failed.");
    forged.ext_fields.insert("Signature", "A".repeat(40_000));
    refused(&ask(&mut broker, &forged, b""), "check signature failed.");
    let mut huge = get_max_offset("guarded");
    sign(&mut huge, b"", &"k".repeat(50_000), "x");
    let answer = ask(&mut broker, &huge, b"");
    refused(&answer, "is not found.");
    assert!(answer.header.remark.unwrap().len() < 300, "a huge access key is not echoed whole");
    refused(&ask(&mut broker, &get_max_offset("guarded"), b""), "username cannot be null.");

    // The name server checks signatures too, and what changes it.
    let mut namesrv = connect(silo.namesrv);
    let mut route = RemotingHeader::request(rq::GET_ROUTEINFO_BY_TOPIC, 3);
    route.ext_fields.insert("topic", "guarded");
    refused(&ask(&mut namesrv, &route, b""), "username cannot be null.");
    let mut signed_route = route.clone();
    sign(&mut signed_route, b"", ADMIN, ADMIN_SECRET);
    assert_eq!(ask(&mut namesrv, &signed_route, b"").header.code, rs::SUCCESS);

    // Still serving, on the same connection: what was acknowledged is there.
    let mut total = 0;
    for queue in 0..4 {
        let mut max = get_max_offset("guarded");
        max.ext_fields.insert("queueId", queue.to_string());
        sign(&mut max, b"", ADMIN, ADMIN_SECRET);
        let answer = ask(&mut broker, &max, b"");
        assert_eq!(answer.header.code, rs::SUCCESS, "{:?}", answer.header);
        total += answer.header.ext_fields.get("offset").unwrap().parse::<i64>().unwrap();
    }
    assert_eq!(total, 1, "the one acknowledged send, and nothing refused, is stored");
}
