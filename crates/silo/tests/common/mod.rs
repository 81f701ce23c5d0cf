//! Helpers shared by the `silo` binary's integration tests: free loopback ports, child processes
//! that are killed when the test ends, and one raw request to a name server or broker.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use bytes::BytesMut;
use silo_wire::frame::{FrameDecoder, encode_frame};
use silo_wire::{Frame, RemotingHeader, SerializeType};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub struct Killed(pub Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn call(addr: SocketAddr, code: i32, ext: &[(&str, &str)]) -> Frame {
    call_within(addr, code, ext, Duration::from_secs(10))
}

/// [`call`], waiting up to `timeout` for the answer.
pub fn call_within(addr: SocketAddr, code: i32, ext: &[(&str, &str)], timeout: Duration) -> Frame {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    let mut h = RemotingHeader::request(code, 1);
    for (k, v) in ext {
        h.ext_fields.insert(*k, *v);
    }
    let mut out = Vec::new();
    encode_frame(&h, SerializeType::Json, &[], &mut out).unwrap();
    s.write_all(&out).unwrap();
    let mut buf = BytesMut::new();
    let mut chunk = [0u8; 65536];
    loop {
        if let Some(f) = FrameDecoder::default().decode(&mut buf).unwrap() {
            return f;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "connection closed");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// `interop/java-client/rocketmq-server.sh`: Apache RocketMQ 5.3.3's own name server and broker.
pub fn apache_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/java-client/rocketmq-server.sh")
}

/// Apache RocketMQ's name server and broker, running from a directory; stopped however the test
/// ends.
pub struct ApacheServers {
    pub dir: PathBuf,
    pub namesrv_port: u16,
    pub broker_port: u16,
}

impl ApacheServers {
    /// Starts both on free loopback ports, with every file they write under `dir`, and waits
    /// until the broker is registered and answering.
    pub fn start(dir: &Path) -> Self {
        let (namesrv_port, broker_port) = (free_port(), free_port());
        let status = Command::new("bash")
            .arg(apache_script())
            .args(["start", dir.to_str().unwrap(), "--namesrv-port", &namesrv_port.to_string()])
            .args(["--broker-port", &broker_port.to_string()])
            .status()
            .expect("start Apache RocketMQ (needs Java and Maven)");
        let servers = Self { dir: dir.to_owned(), namesrv_port, broker_port };
        assert!(status.success(), "Apache RocketMQ did not start");
        servers
    }
}

impl Drop for ApacheServers {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(apache_script()).arg("stop").arg(&self.dir).status();
    }
}
