//! Broker configuration: the keys a RocketMQ operator knows from `broker.conf`, with the Java
//! broker's defaults, read from a `key=value` properties file.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use silo_store::{FlushMode, StoreConfig};

#[derive(Debug, Clone)]
pub struct BrokerConfig {
    pub broker_name: String,
    pub broker_cluster_name: String,
    pub broker_id: i64,
    /// `brokerIP1`: the address clients are told to connect to, and the listen address.
    pub broker_ip: IpAddr,
    pub listen_port: u16,
    /// Name servers to register with; empty with an embedded name server.
    pub namesrv_addr: Vec<SocketAddr>,
    pub store_path_root_dir: PathBuf,
    pub flush_disk_type_sync: bool,
    /// `syncFlushTimeout` (5 s): how long a SYNC_FLUSH send waits for its fsync before it is
    /// answered FLUSH_DISK_TIMEOUT (stored, not known to be on disk).
    pub sync_flush_timeout: Duration,
    pub mapped_file_size_commit_log: usize,
    pub file_reserved_time_hours: u64,
    /// `diskMaxUsedSpaceRatio`, `diskSpaceCleanForciblyRatio`, `cleanFileForciblyEnable`,
    /// `diskSpaceWarningLevelRatio` (docs/store-format.md §8).
    pub disk: silo_store::DiskPolicy,
    pub auto_create_topic_enable: bool,
    pub auto_create_subscription_group: bool,
    pub default_topic_queue_nums: i32,
    pub enable_lmq: bool,
    pub enable_multi_dispatch: bool,
    pub max_message_size: usize,
    pub long_polling_enable: bool,
    /// `enableMixedMessageType`: topics may take `+message.type=MIXED`.
    pub enable_mixed_message_type: bool,
    /// `enablePropertyFilter`: SQL92 subscriptions. Off by default in Java, on in Silo.
    pub enable_property_filter: bool,
    pub region_id: String,
    pub trace_topic_enable: bool,
    /// `traceOn`: reported to producers in every send response (Java's default: true).
    pub trace_on: bool,
    pub register_name_server_period: Duration,
    pub channel_idle: Duration,
    /// `serverSocketBacklog` (1,024): connections the kernel queues for the listeners before
    /// they are accepted; a burst beyond it waits for SYN retransmission (a second or more).
    pub server_socket_backlog: u32,
    /// `transactionTimeOut`, `transactionCheckInterval`, `transactionCheckMax`,
    /// `rejectTransactionMessage`.
    pub transaction: crate::core::transaction::TransactionConfig,
    /// `timerWheelEnable`, `timerPrecisionMs`, `timerMaxDelaySec`.
    pub timers: crate::core::send::TimerPolicy,
    /// `recallMessageEnable`: RECALL_MESSAGE may cancel timer messages. Off by default, as in
    /// Java (the send answers carry recall handles either way).
    pub recall_message_enable: bool,
    /// `mappedFileSizeTimerLog`: bytes per timer-log file (100 MiB).
    pub timer_log_file_size: usize,
    /// `timerRollWindowSlots`: timers further away than this many slots (two days of seconds)
    /// are rolled, re-enqueued on the way.
    pub timer_roll_window_slots: i64,
    /// `reviveQueueNum`, `popFromRetryProbability`, `popPollingSize`.
    pub pop: crate::core::pop::PopConfig,
    /// The gRPC endpoint (`grpcServerPort`, ...), served by the `silo-grpc` front end.
    pub grpc: GrpcSettings,
    /// `tls.server.*`: TLS on every port (remoting, the embedded name server, gRPC).
    pub tls: TlsSettings,
    /// `metricsExporterType`, `metricsPromExporterHost`, `metricsPromExporterPort`.
    pub metrics: MetricsSettings,
    /// `authenticationEnabled`, `initAuthenticationUser`: who may call (the gRPC endpoint checks
    /// every request's signature when enabled).
    pub auth: AuthSettings,
    /// The group role and replication keys (`brokerRole`, `haListenPort`, `haMasterAddress`, ...).
    pub ha: crate::ha::HaSettings,
    /// Where the broker's and the store's timestamps come from (a [`silo_store::ManualClock`]
    /// in tests that move time by hand).
    pub clock: std::sync::Arc<dyn silo_store::Clock>,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
        Self {
            broker_name: "broker-a".into(),
            broker_cluster_name: "DefaultCluster".into(),
            broker_id: 0,
            broker_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            listen_port: 10911,
            namesrv_addr: Vec::new(),
            store_path_root_dir: home.join("store"),
            flush_disk_type_sync: false,
            sync_flush_timeout: Duration::from_secs(5),
            mapped_file_size_commit_log: 1 << 30,
            file_reserved_time_hours: 72,
            disk: silo_store::DiskPolicy::default(),
            auto_create_topic_enable: true,
            auto_create_subscription_group: true,
            default_topic_queue_nums: 8,
            enable_lmq: false,
            enable_multi_dispatch: false,
            max_message_size: 4 * 1024 * 1024,
            long_polling_enable: true,
            enable_property_filter: true,
            enable_mixed_message_type: false,
            region_id: "DefaultRegion".into(),
            trace_topic_enable: false,
            trace_on: true,
            register_name_server_period: Duration::from_secs(30),
            channel_idle: Duration::from_secs(120),
            server_socket_backlog: 1024,
            transaction: crate::core::transaction::TransactionConfig::default(),
            timers: crate::core::send::TimerPolicy::default(),
            recall_message_enable: false,
            timer_log_file_size: silo_store::timer::DEFAULT_TIMER_LOG_FILE_SIZE,
            timer_roll_window_slots: silo_store::timer::DEFAULT_ROLL_WINDOW_SLOTS,
            pop: crate::core::pop::PopConfig::default(),
            grpc: GrpcSettings::default(),
            tls: TlsSettings::default(),
            metrics: MetricsSettings::default(),
            auth: AuthSettings::default(),
            ha: crate::ha::HaSettings::default(),
            clock: silo_store::clock::system(),
        }
    }
}

pub use crate::tls::{TlsMode, TlsSettings};

/// Where the broker's metrics go, with Apache RocketMQ 5.x's keys: off by default, as there.
#[derive(Debug, Clone)]
pub struct MetricsSettings {
    /// `metricsExporterType=PROM`: a Prometheus endpoint (`DISABLE`, the default: none).
    pub prometheus: bool,
    /// `metricsPromExporterHost`: the endpoint's address (default `brokerIP1`, which is
    /// loopback unless configured).
    pub host: Option<std::net::IpAddr>,
    /// `metricsPromExporterPort` (5557; 0 takes a free port).
    pub port: u16,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self { prometheus: false, host: None, port: 5557 }
    }
}

/// The gRPC endpoint's keys. Apache's proxy takes the same names in its own config file; here
/// they are broker.conf keys, since the broker serves the endpoint itself.
#[derive(Debug, Clone)]
pub struct GrpcSettings {
    /// `grpcServerPort` (8081; 0 takes a free port). `None` (`grpcServerPort=-1`, or
    /// `--no-grpc`): no gRPC endpoint.
    pub port: Option<u16>,
    /// `grpcMaxInboundMessageSize`: the largest request message accepted (130 MiB).
    pub max_inbound_message_size: usize,
    /// `defaultInvisibleTimeMills`: the invisible time of a push consumer's messages
    /// (`auto_renew`), renewed by the broker while the consumer is connected (60 s).
    pub auto_renew_invisible_ms: i64,
    /// `grpcClientGraceMillis` (Silo's own): how long a client with no open Telemetry stream
    /// still counts as connected after its last request, so that one reconnecting keeps its
    /// messages renewed while one that crashed does not for long (10 s).
    pub client_grace_ms: u64,
}

impl Default for GrpcSettings {
    fn default() -> Self {
        Self {
            port: Some(8081),
            max_inbound_message_size: 130 * 1024 * 1024,
            auto_renew_invisible_ms: 60_000,
            client_grace_ms: 10_000,
        }
    }
}

/// Access control, with Apache RocketMQ 5.3's keys: off by default, as in Java.
#[derive(Debug, Clone, Default)]
pub struct AuthSettings {
    /// `authenticationEnabled`: every request must be signed by a known, enabled user.
    pub enabled: bool,
    /// `authorizationEnabled`: what a request touches must be granted to its signer.
    pub authorization_enabled: bool,
    /// The users a broker starts with, added if missing (super users both):
    /// `initAuthenticationUser` (`{"username":..,"password":..}`) and the identity of
    /// `innerClientAuthenticationCredentials`.
    pub users: Vec<crate::auth::model::User>,
    /// `innerClientAuthenticationCredentials` (`{"accessKey":..,"secretKey":..}`): what this
    /// broker signs its own requests with (registration with name servers, a slave's requests
    /// to its master).
    pub inner_credentials: Option<Credentials>,
    /// `authenticationWhitelist`, `authorizationWhitelist`: request codes exempt from the check.
    pub authentication_whitelist: Vec<String>,
    pub authorization_whitelist: Vec<String>,
}

pub use silo_wire::signature::Credentials;

/// `initAuthenticationUser`'s JSON.
#[derive(serde::Deserialize)]
struct InitUser {
    username: String,
    password: String,
}

impl AuthSettings {
    fn add_super_user(&mut self, username: String, password: String) -> Result<(), String> {
        if username.trim().is_empty() || password.trim().is_empty() {
            return Err("the user name and the password must not be blank".into());
        }
        self.users.retain(|u| u.username != username);
        self.users.push(crate::auth::model::User {
            username,
            password,
            user_type: crate::auth::model::UserType::Super,
            user_status: crate::auth::model::UserStatus::Enable,
        });
        Ok(())
    }
}

fn code_list(v: &str) -> Vec<String> {
    v.split(',').map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned).collect()
}

/// A problem with a configuration file or value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{file}:{line}: {key} = {value:?}: {reason}")]
    Invalid { file: String, line: usize, key: String, value: String, reason: String },
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

/// A disk ratio as Java's keys take it: a fraction (`0.85`) or, for `diskMaxUsedSpaceRatio`,
/// a whole percentage (`75`). Either way within 0..=100 %.
fn parse_ratio(v: &str) -> Result<f64, String> {
    let x: f64 = v.trim().parse().map_err(|e: std::num::ParseFloatError| e.to_string())?;
    let ratio = if x > 1.0 { x / 100.0 } else { x };
    if !(0.0..=1.0).contains(&ratio) {
        return Err("expected a ratio (0.85) or a percentage (85)".into());
    }
    Ok(ratio)
}

impl BrokerConfig {
    /// Sets one `broker.conf` key. Returns `Ok(false)` for a key Silo does not know (reported,
    /// not fatal, like the Java broker's unknown keys).
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let v = value.trim();
        let num = |v: &str| v.parse::<u64>().map_err(|e| e.to_string());
        match key {
            "brokerName" => self.broker_name = v.into(),
            "brokerClusterName" => self.broker_cluster_name = v.into(),
            "brokerId" => self.broker_id = v.parse().map_err(|e: std::num::ParseIntError| e.to_string())?,
            "brokerIP1" => self.broker_ip = v.parse().map_err(|e: std::net::AddrParseError| e.to_string())?,
            "listenPort" => self.listen_port = v.parse().map_err(|e: std::num::ParseIntError| e.to_string())?,
            "namesrvAddr" => {
                self.namesrv_addr = v
                    .split(';')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| s.trim().parse::<SocketAddr>().map_err(|e| format!("{s}: {e}")))
                    .collect::<Result<_, _>>()?;
            }
            "storePathRootDir" => self.store_path_root_dir = PathBuf::from(v),
            "flushDiskType" => {
                self.flush_disk_type_sync = match v {
                    "SYNC_FLUSH" => true,
                    "ASYNC_FLUSH" => false,
                    _ => return Err("expected SYNC_FLUSH or ASYNC_FLUSH".into()),
                }
            }
            "syncFlushTimeout" => self.sync_flush_timeout = Duration::from_millis(num(v)?.max(1)),
            "mappedFileSizeCommitLog" => self.mapped_file_size_commit_log = num(v)? as usize,
            "fileReservedTime" => self.file_reserved_time_hours = num(v)?,
            "diskMaxUsedSpaceRatio" => self.disk.max_used_ratio = parse_ratio(v)?,
            "diskSpaceCleanForciblyRatio" => self.disk.clean_forcibly_ratio = parse_ratio(v)?,
            "diskSpaceWarningLevelRatio" => self.disk.warning_ratio = parse_ratio(v)?,
            "cleanFileForciblyEnable" => self.disk.clean_forcibly = parse_bool(v)?,
            "autoCreateTopicEnable" => self.auto_create_topic_enable = parse_bool(v)?,
            "autoCreateSubscriptionGroup" => self.auto_create_subscription_group = parse_bool(v)?,
            "defaultTopicQueueNums" => self.default_topic_queue_nums = num(v)? as i32,
            "enableLmq" => self.enable_lmq = parse_bool(v)?,
            "enableMultiDispatch" => self.enable_multi_dispatch = parse_bool(v)?,
            "maxMessageSize" => self.max_message_size = num(v)? as usize,
            "longPollingEnable" => self.long_polling_enable = parse_bool(v)?,
            "enablePropertyFilter" => self.enable_property_filter = parse_bool(v)?,
            "enableMixedMessageType" => self.enable_mixed_message_type = parse_bool(v)?,
            "regionId" => self.region_id = v.into(),
            "traceTopicEnable" => self.trace_topic_enable = parse_bool(v)?,
            "traceOn" => self.trace_on = parse_bool(v)?,
            "recallMessageEnable" => self.recall_message_enable = parse_bool(v)?,
            "registerNameServerPeriod" => self.register_name_server_period = Duration::from_millis(num(v)?),
            "serverSocketBacklog" => {
                self.server_socket_backlog = u32::try_from(num(v)?).map_err(|e| e.to_string())?.max(1)
            }
            "transactionTimeOut" => self.transaction.timeout = Duration::from_millis(num(v)?),
            "transactionCheckInterval" => self.transaction.check_interval = Duration::from_millis(num(v)?.max(1)),
            "transactionCheckMax" => {
                self.transaction.check_max = i32::try_from(num(v)?).map_err(|e| e.to_string())?;
            }
            "rejectTransactionMessage" => self.transaction.reject = parse_bool(v)?,
            "mappedFileSizeTimerLog" => self.timer_log_file_size = num(v)? as usize,
            "timerRollWindowSlots" => {
                self.timer_roll_window_slots = i64::try_from(num(v)?).map_err(|e| e.to_string())?
            }
            "reviveQueueNum" => {
                self.pop.revive_queue_num = i32::try_from(num(v)?.clamp(1, 64)).map_err(|e| e.to_string())?;
            }
            "popFromRetryProbability" => {
                self.pop.retry_probability = u32::try_from(num(v)?.min(100)).map_err(|e| e.to_string())?;
            }
            "popPollingSize" => self.pop.polling_size = num(v)? as usize,
            "renewAheadTimeMillis" => self.pop.renew_ahead_ms = i64::try_from(num(v)?).map_err(|e| e.to_string())?,
            "renewMaxTimeMillis" => self.pop.renew_max_ms = i64::try_from(num(v)?).map_err(|e| e.to_string())?,
            "invisibleTimeMillisWhenClear" => {
                self.pop.release_ms = i64::try_from(num(v)?).map_err(|e| e.to_string())?;
            }
            "grpcClientGraceMillis" => self.grpc.client_grace_ms = num(v)?,
            "defaultInvisibleTimeMills" => {
                self.grpc.auto_renew_invisible_ms = i64::try_from(num(v)?.max(1000)).map_err(|e| e.to_string())?;
                self.pop.renew_step_ms = self.grpc.auto_renew_invisible_ms;
            }
            "timerWheelEnable" => self.timers.enabled = parse_bool(v)?,
            "timerPrecisionMs" => {
                let ms = i64::try_from(num(v)?).map_err(|e| e.to_string())?;
                self.timers.precision_ms = silo_store::timer::TimerConfig::snap_precision(ms);
            }
            "timerMaxDelaySec" => {
                self.timers.max_delay_ms = i64::try_from(num(v)?).map_err(|e| e.to_string())?.saturating_mul(1000);
            }
            "authenticationEnabled" => self.auth.enabled = parse_bool(v)?,
            "authorizationEnabled" => self.auth.authorization_enabled = parse_bool(v)?,
            "initAuthenticationUser" => {
                let user: InitUser = serde_json::from_str(v)
                    .map_err(|e| format!("expected {{\"username\":..,\"password\":..}}: {e}"))?;
                self.auth.add_super_user(user.username, user.password)?;
            }
            "innerClientAuthenticationCredentials" => {
                let c: Credentials = serde_json::from_str(v)
                    .map_err(|e| format!("expected {{\"accessKey\":..,\"secretKey\":..}}: {e}"))?;
                self.auth.add_super_user(c.access_key.clone(), c.secret_key.clone())?;
                self.auth.inner_credentials = Some(c);
            }
            "authenticationWhitelist" => self.auth.authentication_whitelist = code_list(v),
            "authorizationWhitelist" => self.auth.authorization_whitelist = code_list(v),
            // Java names its implementation classes; Silo has one of each.
            "authenticationProvider"
            | "authenticationMetadataProvider"
            | "authorizationProvider"
            | "authorizationMetadataProvider"
            | "authenticationStrategy"
            | "authorizationStrategy" => {}
            "grpcServerPort" => {
                let port: i32 = v.parse().map_err(|e: std::num::ParseIntError| e.to_string())?;
                self.grpc.port = if port < 0 { None } else { Some(u16::try_from(port).map_err(|e| e.to_string())?) };
            }
            "metricsExporterType" => {
                self.metrics.prometheus = match v.to_ascii_uppercase().as_str() {
                    "PROM" => true,
                    "DISABLE" | "" => false,
                    other => return Err(format!("{other}: Silo exports PROM (Prometheus) or DISABLE")),
                }
            }
            "metricsPromExporterHost" => {
                self.metrics.host = if v.is_empty() {
                    None
                } else {
                    Some(v.parse().map_err(|e: std::net::AddrParseError| e.to_string())?)
                }
            }
            "metricsPromExporterPort" => {
                self.metrics.port = v.parse().map_err(|e: std::num::ParseIntError| e.to_string())?
            }
            // Apache's other metrics switches: every group of metrics is on.
            "metricsLabel"
            | "metricsInDelta"
            | "metricsExportBatchSize"
            | "metricsGrpcExporterTarget"
            | "metricsGrpcExporterHeader"
            | "metricGrpcExporterTimeOutInMills"
            | "metricGrpcExporterIntervalInMills"
            | "metricLoggingExporterIntervalInMills"
            | "enableRemotingMetrics"
            | "enableMessageStoreMetrics"
            | "enablePopMetrics"
            | "enableConnectionMetrics"
            | "enableTransactionMetrics"
            | "enableStatsMetrics"
            | "enableRequestMetrics"
            | "enableLagAndDlqMetrics" => {}
            "tls.server.mode" => self.tls.mode = v.parse()?,
            "tls.server.certPath" => self.tls.cert_path = (!v.is_empty()).then(|| PathBuf::from(v)),
            "tls.server.keyPath" => self.tls.key_path = (!v.is_empty()).then(|| PathBuf::from(v)),
            "tls.test.mode.enable" => self.tls.require_configured_identity = !parse_bool(v)?,
            // Client certificates and encrypted keys are not served: refused rather than
            // silently not checked.
            "tls.server.need.client.auth" if v.eq_ignore_ascii_case("none") || v.is_empty() => {}
            "tls.server.authClient" if !parse_bool(v)? => {}
            "tls.server.keyPassword" | "tls.server.trustCertPath" if v.is_empty() => {}
            "tls.server.need.client.auth" | "tls.server.authClient" | "tls.server.keyPassword" => {
                return Err("client certificates and encrypted keys are not supported".into());
            }
            "tls.server.trustCertPath" => return Err("client certificates are not supported".into()),
            // The client side's keys (the broker's own outgoing connections are plaintext).
            "tls.enable" | "tls.client.authServer" | "tls.client.trustCertPath" => {}
            "tls.config.file" => self.load_tls_file(Path::new(v))?,
            "grpcMaxInboundMessageSize" => self.grpc.max_inbound_message_size = num(v)?.max(1024) as usize,
            "brokerRole" => self.ha.role = v.parse()?,
            "haListenPort" => {
                self.ha.listen_port = Some(v.parse().map_err(|e: std::num::ParseIntError| e.to_string())?)
            }
            "haMasterAddress" => {
                self.ha.master_address = if v.is_empty() {
                    None
                } else {
                    Some(v.parse().map_err(|e: std::net::AddrParseError| format!("{v}: {e}"))?)
                }
            }
            "haSendHeartbeatInterval" => self.ha.heartbeat_interval = Duration::from_millis(num(v)?.max(100)),
            "haHousekeepingInterval" => self.ha.housekeeping_interval = Duration::from_millis(num(v)?.max(1000)),
            "haTransferBatchSize" => self.ha.transfer_batch_size = (num(v)? as usize).clamp(1024, 4 << 20),
            "haMaxGapNotInSync" => self.ha.max_gap_not_in_sync = i64::try_from(num(v)?).map_err(|e| e.to_string())?,
            "slaveReadEnable" => self.ha.slave_read_enable = parse_bool(v)?,
            "slaveTimeout" => self.ha.slave_timeout = Duration::from_millis(num(v)?.max(1)),
            "haMetadataSyncInterval" => {
                self.ha.metadata_sync_interval = Duration::from_millis(num(v)?.max(100));
                self.ha.metadata_sync_delay = self.ha.metadata_sync_delay.min(self.ha.metadata_sync_interval);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Settles the id with the role, as Java's broker start-up does: a master is brokerId 0
    /// whatever the file says; a slave must have an id above 0.
    pub fn settle_role(&mut self) -> Result<(), String> {
        if self.ha.role.is_master() {
            if self.broker_id != 0 {
                tracing::warn!(broker_id = self.broker_id, role = self.ha.role.java_name(), "a master is brokerId 0");
            }
            self.broker_id = 0;
        } else if self.broker_id <= 0 {
            return Err("a SLAVE's brokerId must be above 0".into());
        }
        Ok(())
    }

    /// Reads the `tls.*` keys of a Java `tls.properties` file.
    fn load_tls_file(&mut self, path: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let (key, value) = line.split_once(['=', ':']).unwrap_or((line, ""));
            let (key, value) = (key.trim(), value.trim());
            if !key.starts_with("tls.") || key == "tls.config.file" {
                continue;
            }
            let at = || format!("{} line {}: {key}={value}", path.display(), i + 1);
            match self.set(key, value) {
                Ok(true) => {}
                Ok(false) => tracing::warn!(key, file = %path.display(), "unknown TLS key ignored"),
                Err(reason) => return Err(format!("{}: {reason}", at())),
            }
        }
        Ok(())
    }

    /// Reads a `broker.conf` (Java properties: `key=value`, `#`/`!` comments). Returns the keys
    /// Silo does not know, for the caller to report.
    pub fn load_file(&mut self, path: &Path) -> Result<Vec<String>, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.to_owned(), source })?;
        let mut unknown = Vec::new();
        let mut seen = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let (key, value) = line.split_once(['=', ':']).unwrap_or((line, ""));
            let key = key.trim();
            seen.insert(key.to_owned(), i + 1);
            match self.set(key, value) {
                Ok(true) => {}
                Ok(false) => unknown.push(key.to_owned()),
                Err(reason) => {
                    return Err(ConfigError::Invalid {
                        file: path.display().to_string(),
                        line: i + 1,
                        key: key.into(),
                        value: value.trim().into(),
                        reason,
                    });
                }
            }
        }
        Ok(unknown)
    }

    /// `brokerIP1:listenPort`, what clients and the name server see.
    pub fn broker_addr(&self) -> SocketAddr {
        SocketAddr::new(self.broker_ip, self.listen_port)
    }

    pub fn store_config(&self) -> StoreConfig {
        let mut c = StoreConfig::new(&self.store_path_root_dir);
        c.commit_log_segment_size = self.mapped_file_size_commit_log;
        c.flush = if self.flush_disk_type_sync {
            FlushMode::Sync { timeout: self.sync_flush_timeout }
        } else {
            FlushMode::default_async()
        };
        c.store_host = self.broker_addr();
        c.max_message_size = self.max_message_size;
        c.enable_lmq = self.enable_lmq;
        c.enable_multi_dispatch = self.enable_multi_dispatch;
        c.file_reserved_time = Duration::from_secs(self.file_reserved_time_hours * 3600);
        c.disk = self.disk;
        c.clock = self.clock.clone();
        c.sync_replication = self.ha.sync_replication();
        c
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn broker_conf_keys_are_read_and_unknown_ones_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broker.conf");
        std::fs::write(
            &path,
            "# comment\nbrokerClusterName = C1\nbrokerName=b1\nlistenPort=20911\nflushDiskType=SYNC_FLUSH\nnamesrvAddr=127.0.0.1:9876;127.0.0.1:9877\nwhatIsThis=1\n",
        )
        .unwrap();
        let mut c = BrokerConfig::default();
        let unknown = c.load_file(&path).unwrap();
        assert_eq!(unknown, vec!["whatIsThis"]);
        assert_eq!((c.broker_cluster_name.as_str(), c.broker_name.as_str(), c.listen_port), ("C1", "b1", 20911));
        assert!(c.flush_disk_type_sync);
        assert_eq!(c.namesrv_addr.len(), 2);
        std::fs::write(&path, "listenPort=lots\n").unwrap();
        let err = c.load_file(&path).unwrap_err().to_string();
        assert!(err.contains(":1: listenPort"), "{err}");
    }

    #[test]
    fn tls_keys_are_read_from_broker_conf_and_from_a_tls_properties_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = BrokerConfig::default();
        assert_eq!(c.tls.mode, TlsMode::Permissive, "Java's default");
        assert!(c.set("tls.server.mode", "Enforcing").unwrap());
        assert_eq!(c.tls.mode, TlsMode::Enforcing);
        assert!(c.set("tls.server.mode", "sometimes").is_err());
        // Client certificates and encrypted keys are refused, not silently left unchecked.
        assert!(c.set("tls.server.need.client.auth", "none").unwrap());
        assert!(c.set("tls.server.need.client.auth", "require").is_err());
        assert!(c.set("tls.server.keyPassword", "secret").is_err());
        let tls = dir.path().join("tls.properties");
        std::fs::write(
            &tls,
            "tls.server.mode=disabled\ntls.test.mode.enable=false\ntls.server.certPath=/etc/c.pem\ntls.client.authServer=true\nother=1\n",
        )
        .unwrap();
        assert!(c.set("tls.config.file", tls.to_str().unwrap()).unwrap());
        assert_eq!(c.tls.mode, TlsMode::Disabled);
        assert!(c.tls.require_configured_identity);
        assert_eq!(c.tls.cert_path.as_deref(), Some(Path::new("/etc/c.pem")));
        // Half an identity, or none without test mode, does not start.
        let err = crate::tls::Identity::load(&c.tls).unwrap_err().to_string();
        assert!(err.contains("go together"), "{err}");
        c.tls.cert_path = None;
        let err = crate::tls::Identity::load(&c.tls).unwrap_err().to_string();
        assert!(err.contains("tls.test.mode.enable=false"), "{err}");
        std::fs::write(&tls, "tls.server.need.client.auth=require\n").unwrap();
        let err = c.set("tls.config.file", tls.to_str().unwrap()).unwrap_err();
        assert!(err.contains("line 1"), "{err}");
    }
}
