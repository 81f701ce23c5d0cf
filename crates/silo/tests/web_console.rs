//! The web console (`silo serve --console`), driven by headless Chromium (Debian's package,
//! `interop/chromium/chromium.sh`) after a produce and consume run: its pages must show the
//! messages stored, each queue's offsets, the group's lag and a message found by key and by id,
//! with a body full of markup shown as text. With access control on, only a user the broker's
//! ACL lets create and delete topics may do so; slow and silent clients on the console's and
//! the metrics' ports are closed while both go on serving.
//!
//! Screenshots of the pages are saved under the target directory's `web-console/`.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::Engine;
use common::SiloServer;

const ADMIN: &str = "console-admin";
const ADMIN_SECRET: &str = "console-admin-secret";
const VIEWER: &str = "console-viewer";
const VIEWER_SECRET: &str = "console-viewer-secret";

/// A body a careless page would turn into markup and script.
const HOSTILE_BODY: &str = "<img src=x onerror=alert(1)><script>alert(2)</script> & \u{e9}t\u{e9}";

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// An HTTP/1.1 request: the status code, the head and the body.
fn http(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (code, head.to_ascii_lowercase(), body.to_owned())
}

fn basic(user: &str, secret: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{secret}")))
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

fn silo(namesrv: SocketAddr, args: &[&str], stdin: &str) -> String {
    common::silo_cli(&namesrv.to_string(), args, stdin)
}

/// The command line that starts Chromium (`env LD_LIBRARY_PATH=... chromium`), made once.
fn chromium() -> &'static [String] {
    static LINE: OnceLock<Vec<String>> = OnceLock::new();
    LINE.get_or_init(|| {
        let out = Command::new("bash").arg(repo().join("interop/chromium/chromium.sh")).output().unwrap();
        assert!(out.status.success(), "no Chromium: {}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        stdout.lines().last().unwrap_or("").split_whitespace().map(str::to_owned).collect()
    })
}

/// Runs headless Chromium on `url` with `action` (`--dump-dom`, `--screenshot=...`), giving
/// the page's scripts two seconds of virtual time; its stdout.
fn browse(url: &str, action: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let line = chromium();
    let mut child = Command::new(&line[0])
        .args(&line[1..])
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--virtual-time-budget=2000", "--window-size=1280,900", action, url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("Chromium did not finish with {url} in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

/// The page at `url` as the browser built it, once its scripts have drawn it.
fn page(url: &str) -> String {
    let mut dom = String::new();
    for _ in 0..3 {
        dom = browse(url, "--dump-dom");
        if dom.contains("data-ready=\"1\"") {
            return dom;
        }
    }
    panic!("the console's page {url} never finished drawing:\n{dom}");
}

/// The value of attribute `attr` of the element whose attributes include `marker`.
fn attribute(dom: &str, marker: &str, attr: &str) -> Option<String> {
    let at = dom.find(marker)?;
    let start = dom[..at].rfind('<')?;
    let end = at + dom[at..].find('>')?;
    let tag = &dom[start..end];
    let from = tag.find(&format!("{attr}=\""))? + attr.len() + 2;
    Some(tag[from..].split('"').next()?.to_owned())
}

/// The text of the element with `id`.
fn text_of(dom: &str, id: &str) -> Option<String> {
    let at = dom.find(&format!("id=\"{id}\""))?;
    let from = at + dom[at..].find('>')? + 1;
    Some(dom[from..].split('<').next()?.trim().to_owned())
}

fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-console");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn screenshot(url: &str, name: &str) {
    let path = screenshots().join(name);
    let _ = std::fs::remove_file(&path);
    browse(url, &format!("--screenshot={}", path.display()));
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "screenshot {} of {url} is {size} bytes", path.display());
}

#[test]
fn the_console_shows_what_a_produce_and_consume_run_left_and_bodies_only_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let console = common::free_addr();
    let server = SiloServer::start(&dir.path().join("store"), &["--console", &console.to_string()]);
    let namesrv = server.namesrv;

    let lines: String = (0..300).map(|i| format!("order {i}\n")).collect();
    silo(namesrv, &["produce", "-t", "ConsoleOrders", "-k", "bulk"], &lines);
    let sent = silo(namesrv, &["produce", "-t", "ConsoleOrders", "-k", "hostile", "--json", HOSTILE_BODY], "");
    let sent = json(sent.lines().next().unwrap());
    let msg_id = sent["offset_msg_id"].as_str().unwrap().to_owned();
    let printed = silo(
        namesrv,
        &["consume", "-t", "ConsoleOrders", "-g", "console-readers", "--from", "first", "--count", "200"],
        "",
    );
    assert_eq!(printed.lines().count(), 200, "the consumer printed {printed}");

    // What `silo admin` (the admin requests mqadmin sends) says, to compare the pages with.
    let admin = json(&silo(namesrv, &["admin", "--json", "group", "console-readers"], ""));
    assert_eq!(admin["lag"], 101, "301 stored, 200 consumed: {admin}");
    let (code, _, body) = http(console, "GET", "/api/group?name=console-readers", &[]);
    assert_eq!(code, 200, "{body}");
    let group = json(&body);
    let per_queue: i64 = group["queues"].as_array().unwrap().iter().map(|q| q["lag"].as_i64().unwrap()).sum();
    let consumed: i64 = group["queues"].as_array().unwrap().iter().map(|q| q["consumerOffset"].as_i64().unwrap()).sum();
    assert_eq!(consumed, 200, "the group's committed offsets: {group}");
    assert_eq!(per_queue, 101, "the console's lag per queue: {group}");
    for (ours, theirs) in group["queues"].as_array().unwrap().iter().zip(admin["queues"].as_array().unwrap()) {
        for field in ["topic", "queueId", "brokerOffset", "consumerOffset", "lag"] {
            assert_eq!(ours[field], theirs[field], "{field}: console {ours}, admin {theirs}");
        }
    }

    let base = format!("http://{console}/");
    let overview = page(&format!("{base}#/"));
    assert_eq!(text_of(&overview, "messages-in").as_deref(), Some("301"), "{overview}");
    let out: i64 = text_of(&overview, "messages-out").unwrap().parse().unwrap();
    assert!(out >= 200, "messages out {out}");
    assert!(overview.contains("id=\"rates-in\""), "no rates graph:\n{overview}");
    assert!(overview.contains("data-broker=\"broker-a\""), "the broker is listed:\n{overview}");

    let topics = page(&format!("{base}#/topics"));
    assert_eq!(
        attribute(&topics, "data-topic=\"ConsoleOrders\"", "data-topic").as_deref(),
        Some("ConsoleOrders"),
        "{topics}"
    );
    let row = &topics[topics.find("data-topic=\"ConsoleOrders\"").unwrap()..];
    assert_eq!(attribute(row, "data-messages=", "data-messages").as_deref(), Some("301"), "{topics}");

    let topic = page(&format!("{base}#/topic/ConsoleOrders"));
    let queues = topic.matches("data-queue=").count();
    assert_eq!(queues, 4, "the topic's queues:\n{topic}");
    assert!(topic.contains("data-group=\"console-readers\""), "{topic}");

    let group_page = page(&format!("{base}#/group/console-readers"));
    let total = &group_page[group_page.find("id=\"total-lag\"").expect("total lag shown")..];
    assert_eq!(attribute(total, "data-lag=", "data-lag").as_deref(), Some("101"), "{group_page}");
    assert_eq!(group_page.matches("data-topic=\"ConsoleOrders\"").count(), 4, "{group_page}");

    for url in [format!("{base}#/messages?topic=ConsoleOrders&key=hostile"), format!("{base}#/messages?id={msg_id}")] {
        let found = page(&url);
        assert_eq!(attribute(&found, "id=\"found-count\"", "data-count").as_deref(), Some("1"), "{url}:\n{found}");
        assert!(found.contains(&format!("data-msgid=\"{msg_id}\"")), "{found}");
        // The body is in the page as text: escaped when serialized, no element made of it.
        assert!(
            found.contains(
                "&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(2)&lt;/script&gt; &amp; \u{e9}t\u{e9}"
            ),
            "{found}"
        );
        assert!(!found.contains("<img") && !found.contains("<script>alert"), "{found}");
    }

    screenshot(&format!("{base}#/"), "overview.png");
    screenshot(&format!("{base}#/topic/ConsoleOrders"), "topic.png");
    screenshot(&format!("{base}#/group/console-readers"), "group.png");
    screenshot(&format!("{base}#/messages?topic=ConsoleOrders&key=hostile"), "message.png");

    // Every answer forbids foreign scripts and sniffing; a foreign Host is refused (a rebound
    // DNS name); with authentication off nothing may change.
    let (code, head, _) = http(console, "GET", "/", &[]);
    assert_eq!(code, 200);
    assert!(head.contains("content-security-policy: default-src 'self'"), "{head}");
    assert!(head.contains("x-content-type-options: nosniff"), "{head}");
    let (code, _, _) = http(console, "GET", "/api/topics", &[("Host", "attacker.example:80")]);
    assert_eq!(code, 421);
    let (code, _, body) = http(console, "POST", "/api/topics?name=Sneaky", &[("x-silo-console", "1")]);
    assert_eq!(code, 403, "{body}");
    let (code, _, body) = http(console, "DELETE", "/api/topic?name=ConsoleOrders", &[("x-silo-console", "1")]);
    assert_eq!(code, 403, "{body}");
    let (_, _, body) = http(console, "GET", "/api/topics", &[]);
    assert!(!body.contains("Sneaky") && body.contains("ConsoleOrders"), "{body}");
}

/// A broker with both checks on, its super user, and a user the ACL lets only read topics.
fn secured(data: &Path, console: SocketAddr) -> SiloServer {
    let mut args = vec!["--console".to_owned(), console.to_string()];
    args.extend(common::access_control_on((ADMIN, ADMIN_SECRET)));
    let server = SiloServer::start(data, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let admin = (ADMIN, ADMIN_SECRET);
    let user = format!(r#"{{"username":"{VIEWER}","password":"{VIEWER_SECRET}","userType":"Normal"}}"#);
    let created = common::call_signed_with_body(server.broker, 3001, &[("username", VIEWER)], user.as_bytes(), admin);
    assert_eq!(created.header.code, 0, "{:?}", created.header.remark);
    let subject = format!("User:{VIEWER}");
    let acl = format!(
        r#"{{"subject":"{subject}","policies":[{{"policyType":"Custom","entries":[{{"resource":"Topic:*","actions":["Sub","Get"],"decision":"Allow"}}]}}]}}"#
    );
    let granted = common::call_signed_with_body(server.broker, 3006, &[("subject", &subject)], acl.as_bytes(), admin);
    assert_eq!(granted.header.code, 0, "{:?}", granted.header.remark);
    server
}

#[test]
fn with_access_control_on_only_a_user_granted_create_and_delete_changes_topics() {
    let dir = tempfile::tempdir().unwrap();
    let console = common::free_addr();
    let _server = secured(&dir.path().join("store"), console);
    let write = ("x-silo-console", "1");

    // No credentials, or a wrong password: asked to sign in.
    let (code, head, _) = http(console, "GET", "/api/overview", &[]);
    assert_eq!(code, 401);
    assert!(head.contains("www-authenticate: basic realm=\"silo console\""), "{head}");
    let (code, _, _) = http(console, "GET", "/api/overview", &[("Authorization", &basic(ADMIN, "wrong"))]);
    assert_eq!(code, 401);
    let (code, _, _) = http(console, "GET", "/api/overview", &[("Authorization", &basic("nobody", "x"))]);
    assert_eq!(code, 401);

    // A user the ACL lets read may look but not create.
    let viewer = basic(VIEWER, VIEWER_SECRET);
    let (code, _, body) = http(console, "GET", "/api/overview", &[("Authorization", &viewer)]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(json(&body)["user"], VIEWER);
    // It may see a topic and its messages (Sub and Get on topics) but no group's progress.
    let (code, _, body) = http(console, "GET", "/api/topic?name=TBW102", &[("Authorization", &viewer)]);
    assert_eq!(code, 200, "{body}");
    let (code, _, body) = http(console, "GET", "/api/group?name=any-group", &[("Authorization", &viewer)]);
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("Group:any-group"), "{body}");
    let (code, _, body) =
        http(console, "GET", "/api/group?name=any-group", &[("Authorization", &basic(ADMIN, ADMIN_SECRET))]);
    assert_eq!(code, 200, "{body}");
    let (code, _, body) = http(console, "POST", "/api/topics?name=ByViewer", &[("Authorization", &viewer), write]);
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("has no permission"), "{body}");

    // The super user may, but only from the console's own page (the header a form cannot set).
    let admin = basic(ADMIN, ADMIN_SECRET);
    let (code, _, body) = http(console, "POST", "/api/topics?name=ByAdmin&queues=3", &[("Authorization", &admin)]);
    assert_eq!(code, 403, "{body}");
    let (code, _, body) =
        http(console, "POST", "/api/topics?name=ByAdmin&queues=3", &[("Authorization", &admin), write]);
    assert_eq!(code, 200, "{body}");
    let (code, _, body) = http(console, "POST", "/api/topics?name=ByAdmin", &[("Authorization", &admin), write]);
    assert_eq!(code, 409, "a second create of the same topic: {body}");
    let (_, _, body) = http(console, "GET", "/api/topic?name=ByAdmin", &[("Authorization", &viewer)]);
    let topic = json(&body);
    assert_eq!((topic["readQueues"].as_i64(), topic["writeQueues"].as_i64()), (Some(3), Some(3)), "{body}");
    let (code, _, _) = http(console, "DELETE", "/api/topic?name=ByAdmin", &[("Authorization", &viewer), write]);
    assert_eq!(code, 403);
    let (code, _, body) = http(console, "DELETE", "/api/topic?name=ByAdmin", &[("Authorization", &admin), write]);
    assert_eq!(code, 200, "{body}");
    let (code, _, _) = http(console, "GET", "/api/topic?name=ByAdmin", &[("Authorization", &admin)]);
    assert_eq!(code, 404, "the deleted topic is gone");

    // In the browser, signed in as the super user, the topics page offers the create form.
    let dom = page(&format!("http://{ADMIN}:{ADMIN_SECRET}@{console}/#/topics"));
    assert!(dom.contains("id=\"create-topic\""), "{dom}");
    assert_eq!(text_of(&dom, "who").as_deref(), Some(ADMIN), "{dom}");
}

#[test]
fn slow_and_silent_clients_are_closed_while_the_console_and_metrics_go_on_serving() {
    let dir = tempfile::tempdir().unwrap();
    let console = common::free_addr();
    let metrics = common::free_addr();
    let server = SiloServer::start(
        &dir.path().join("store"),
        &[
            "--console",
            &console.to_string(),
            "--set",
            "metricsExporterType=PROM",
            "--set",
            &format!("metricsPromExporterPort={}", metrics.port()),
        ],
    );
    // More clients than either port serves at once (64): half never send a byte, half stop
    // in the middle of a request head.
    let mut clients = Vec::new();
    for port in [console, metrics] {
        for i in 0..80 {
            let mut s = TcpStream::connect(port).unwrap();
            if i % 2 == 1 {
                s.write_all(b"GET /api/overview HTTP/1.1\r\nHost: ").unwrap();
            }
            s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
            clients.push(s);
        }
    }
    let opened = Instant::now();
    // The broker serves meanwhile.
    let sent = silo(server.namesrv, &["produce", "-t", "PatientTopic", "meanwhile"], "");
    assert!(sent.starts_with("SendOk"), "{sent}");
    // Each is closed once the header or idle time (10 s) is up: those queued behind the first
    // 64 wait for a slot, then for their own time.
    let readers: Vec<_> = clients
        .into_iter()
        .map(|mut s| {
            std::thread::spawn(move || {
                let mut buf = [0u8; 256];
                let closed = matches!(s.read(&mut buf), Ok(0) | Err(_));
                (closed, opened.elapsed())
            })
        })
        .collect();
    for r in readers {
        let (closed, after) = r.join().unwrap();
        assert!(closed, "a stalled client got an answer");
        assert!(after < Duration::from_secs(35), "a stalled client was held {after:?}");
    }
    let (code, _, body) = http(console, "GET", "/api/overview", &[]);
    assert_eq!(code, 200, "{body}");
    let (code, _, body) = http(metrics, "GET", "/metrics", &[]);
    assert_eq!(code, 200);
    assert!(body.contains("rocketmq_messages_in_total"), "{body}");
}
