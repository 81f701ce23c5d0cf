//! TLS for the broker's ports: the server's identity, and telling a TLS client from a
//! plaintext one by its first byte, as Java's remoting server and Apache's proxy do.
//!
//! The identity is the configured certificate chain and key, or a self-signed certificate
//! made at start (Java's test mode, on by default). The stock clients do not verify the
//! server's certificate unless told to (Java's `tls.client.authServer`, the Go client always
//! skips it), so a generated one lets them connect without setup.
//!
//! Both the remoting ports and the gRPC port use [`accept`]: a TLS record starts with its
//! content type, 0x16 for a handshake, while a remoting frame starts with the high byte of its
//! length (0 below 16 MiB) and an HTTP/2 client with its preface ("PRI * HTTP/2.0"), so one
//! byte decides.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

pub use tokio_rustls::server::TlsStream;

/// The first byte of a TLS handshake record.
pub const TLS_HANDSHAKE: u8 = 0x16;

/// Which connections a TLS-capable port takes (`tls.server.mode`, as Java names the modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// Plaintext only.
    Disabled,
    /// TLS and plaintext on the same port, told apart by the first byte (Java's default).
    #[default]
    Permissive,
    /// TLS only: a plaintext connection is closed.
    Enforcing,
}

impl std::str::FromStr for TlsMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "disabled" => Ok(Self::Disabled),
            "permissive" => Ok(Self::Permissive),
            "enforcing" => Ok(Self::Enforcing),
            other => Err(format!("{other:?}: expected disabled, permissive or enforcing")),
        }
    }
}

/// The `tls.server.*` keys of Java's `tls.properties`, read from broker.conf (or the file
/// `tls.config.file` names). One setting for every port of the process: remoting, the
/// embedded name server and gRPC.
#[derive(Debug, Clone, Default)]
pub struct TlsSettings {
    /// `tls.server.mode`: permissive by default, as Java's broker and proxy.
    pub mode: TlsMode,
    /// `tls.server.certPath` / `tls.server.keyPath`: PEM files; without them a self-signed
    /// certificate is made at start.
    pub cert_path: Option<PathBuf>,
    pub key_path: Option<PathBuf>,
    /// `tls.test.mode.enable=false`: a certificate and key must be configured (Java then
    /// refuses to start without them as well).
    pub require_configured_identity: bool,
}

/// Why the TLS identity could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading the certificate chain {path}: {reason}")]
    Certificate { path: String, reason: String },
    #[error("reading the private key {path}: {reason}")]
    Key { path: String, reason: String },
    #[error("tls.server.certPath and tls.server.keyPath go together (only {0} is set)")]
    HalfIdentity(&'static str),
    #[error("tls.test.mode.enable=false needs tls.server.certPath and tls.server.keyPath")]
    NoIdentity,
    #[error("generating a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("the certificate and key do not make a TLS server: {0}")]
    Config(#[from] rustls::Error),
}

/// A certificate chain and its key, read once and shared by every port's server config.
#[derive(Debug)]
pub struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl Identity {
    /// The configured identity, or one generated for `localhost` and the loopback addresses.
    pub fn load(settings: &TlsSettings) -> Result<Self, TlsError> {
        let (chain, key) = match (&settings.cert_path, &settings.key_path) {
            (Some(cert), Some(key)) => (read_chain(cert)?, read_key(key)?),
            (Some(_), None) => return Err(TlsError::HalfIdentity("tls.server.certPath")),
            (None, Some(_)) => return Err(TlsError::HalfIdentity("tls.server.keyPath")),
            (None, None) if settings.require_configured_identity => return Err(TlsError::NoIdentity),
            (None, None) => self_signed()?,
        };
        Ok(Self { chain, key })
    }

    /// A server config offering `alpn` (gRPC needs `h2`; remoting offers none, as Java's).
    pub fn server_config(&self, alpn: &[&[u8]]) -> Result<Arc<ServerConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(self.chain.clone(), self.key.clone_key())?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(Arc::new(config))
    }
}

/// A port's TLS policy: its mode, and the acceptor when the mode lets TLS in.
#[derive(Clone)]
pub struct Transport {
    mode: TlsMode,
    acceptor: Option<TlsAcceptor>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport").field("mode", &self.mode).finish_non_exhaustive()
    }
}

impl Transport {
    /// Plaintext only, nothing looked at: a bare name server, or tests.
    pub fn plaintext() -> Self {
        Self { mode: TlsMode::Disabled, acceptor: None }
    }

    /// `mode` with `identity`'s certificate (ignored when disabled).
    pub fn new(mode: TlsMode, identity: Option<&Identity>, alpn: &[&[u8]]) -> Result<Self, TlsError> {
        let acceptor = match (mode, identity) {
            (TlsMode::Disabled, _) | (_, None) => None,
            (_, Some(identity)) => Some(TlsAcceptor::from(identity.server_config(alpn)?)),
        };
        Ok(Self { mode, acceptor })
    }

    pub fn mode(&self) -> TlsMode {
        self.mode
    }

    /// Whether [`accept`](Self::accept) needs to look at a connection at all: a disabled port
    /// reads plaintext straight away (a ClientHello there reads as a frame far larger than any
    /// allowed, and the connection is closed as undecodable, as Java closes it).
    pub fn inspects(&self) -> bool {
        self.mode != TlsMode::Disabled
    }

    /// Waits for `socket`'s first byte (without taking it) and, if it opens a TLS handshake,
    /// does the handshake. The caller bounds the wait.
    pub async fn accept(&self, socket: TcpStream) -> io::Result<Accepted> {
        let mut first = [0u8; 1];
        if socket.peek(&mut first).await? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed before its first byte"));
        }
        let tls = first == [TLS_HANDSHAKE];
        match (tls, self.mode, &self.acceptor) {
            (true, TlsMode::Permissive | TlsMode::Enforcing, Some(acceptor)) => {
                Ok(Accepted::Tls(Box::new(acceptor.accept(socket).await?)))
            }
            (false, TlsMode::Disabled | TlsMode::Permissive, _) => Ok(Accepted::Plain(socket)),
            (true, _, _) => Err(io::Error::new(io::ErrorKind::InvalidData, "TLS is disabled on this port")),
            (false, _, _) => Err(io::Error::new(io::ErrorKind::InvalidData, "plaintext refused: TLS is enforced")),
        }
    }
}

/// A connection after [`Transport::accept`].
#[derive(Debug)]
pub enum Accepted {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let err = |reason: String| TlsError::Certificate { path: path.display().to_string(), reason };
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(|e| err(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(e.to_string()))?;
    if chain.is_empty() {
        return Err(err("no certificate in the file".into()));
    }
    Ok(chain)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| TlsError::Key { path: path.display().to_string(), reason: e.to_string() })
}

fn self_signed() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let names = ["localhost", "127.0.0.1", "::1"].map(str::to_owned).to_vec();
    let made = rcgen::generate_simple_self_signed(names)?;
    let key = PrivateKeyDer::try_from(made.signing_key.serialize_der())
        .map_err(|e| TlsError::Key { path: "(generated)".into(), reason: e.to_string() })?;
    Ok((vec![made.cert.der().clone()], key))
}
