//! A full disk, for real: `silo serve` with its store on a 300 MB tmpfs that a ballast file has
//! mostly filled, the stock Apache RocketMQ 5.3.3 Java producer sending 16 KiB messages until it
//! is refused (code 14, "the disk is full"), every acknowledged message read back on the full
//! disk, then the ballast deleted and sends accepted again without a restart, and every
//! acknowledged message of both phases read back exactly once. The scenario
//! (`interop/java-client`, `disk-full`) was validated against Apache RocketMQ 5.3.3 on the same
//! kind of tmpfs (`interop/java-client/disk-full-apache.sh`).
//!
//! The tmpfs is mounted in a mount namespace of the broker's own (`unshare`), so it disappears
//! with the broker; the test reaches the ballast through `/proc/PID/root`. Needs the right to
//! create a mount namespace (root, or unprivileged user namespaces).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::SiloServer;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `unshare` arguments that give the broker a mount namespace where it may mount a tmpfs.
fn namespace_args() -> Vec<&'static str> {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if root {
        vec!["unshare", "--mount", "--propagation", "private"]
    } else {
        vec!["unshare", "--user", "--map-root-user", "--mount"]
    }
}

fn scenario(silo: &SiloServer, phase: &str, state: &Path) -> String {
    let out = Command::new("bash")
        .arg(repo().join("interop/java-client/run.sh"))
        .args(["disk-full", "--namesrv", &silo.namesrv.to_string(), "--phase", phase])
        .args(["--state", state.to_str().unwrap(), "--timeout", "120"])
        .output()
        .expect("run interop/java-client/run.sh (needs Java and Maven)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("PASS disk-full"),
        "disk-full phase {phase} failed\nstdout:\n{stdout}\nstderr (tail):\n{}\nbroker log (tail):\n{}",
        String::from_utf8_lossy(&out.stderr).lines().rev().take(30).collect::<Vec<_>>().join("\n"),
        silo.log_tail()
    );
    println!("{}", stdout.trim());
    stdout
}

fn runtime_info(silo: &SiloServer) -> serde_json::Value {
    let info = common::call(silo.broker, silo_wire::codes::request::GET_BROKER_RUNTIME_INFO, &[]);
    assert_eq!(info.header.code, 0);
    serde_json::from_slice(&info.body).unwrap()
}

#[test]
fn a_full_disk_refuses_sends_serves_reads_and_takes_sends_again_once_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("fs");
    std::fs::create_dir(&mount).unwrap();
    let state = dir.path().join("disk-full.state");
    // In the namespace: a 300 MB tmpfs over `mount`, 180 MB of it taken by a ballast file, and
    // the store on the rest.
    let script = r#"mount -t tmpfs -o size=300m silo-test "$0" && head -c 180M /dev/zero > "$0/ballast" && exec "$@""#;
    let mut wrapper = namespace_args();
    wrapper.extend(["sh", "-c", script, mount.to_str().unwrap()]);
    let silo = SiloServer::start_wrapped(
        &mount.join("store"),
        &["--set", "mappedFileSizeCommitLog=16777216", "--set", "cleanFileForciblyEnable=false"],
        &wrapper,
    );

    scenario(&silo, "fill", &state);
    let full = runtime_info(&silo);
    let ratio: f64 = full["table"]["commitLogDiskRatio"].as_str().unwrap().parse().unwrap();
    assert!(ratio > 0.85, "commitLogDiskRatio {ratio} on the full disk");

    // Free the space: the broker takes sends again by itself.
    let ballast =
        PathBuf::from(format!("/proc/{}/root", silo.child.id())).join(mount.strip_prefix("/").unwrap()).join("ballast");
    std::fs::remove_file(&ballast).unwrap_or_else(|e| panic!("cannot delete {}: {e}", ballast.display()));
    scenario(&silo, "resume", &state);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ratio: f64 = runtime_info(&silo)["table"]["commitLogDiskRatio"].as_str().unwrap().parse().unwrap();
        if ratio < 0.85 {
            break;
        }
        assert!(Instant::now() < deadline, "commitLogDiskRatio stays at {ratio} after the ballast was deleted");
        std::thread::sleep(Duration::from_millis(100));
    }

    // The refusal and the recovery are logged once each, not per refused message.
    let log = std::fs::read_to_string(mount.join("store").with_extension("log")).unwrap();
    let refusals = log.matches("refusing new messages").count();
    assert!((1..=2).contains(&refusals), "the refusal was logged {refusals} times:\n{}", silo.log_tail());
    assert!(log.contains("accepting new messages again"), "{}", silo.log_tail());
}
