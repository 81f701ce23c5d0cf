//! The server's TLS identity: the configured certificate chain and key, or a self-signed
//! certificate made at start (what Apache's proxy does in its default test mode). The SDKs that
//! default to TLS (Java, Go) do not verify the server's certificate, so a generated one lets
//! them connect without setup.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

/// Why the TLS identity could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading the certificate chain {path}: {reason}")]
    Certificate { path: String, reason: String },
    #[error("reading the private key {path}: {reason}")]
    Key { path: String, reason: String },
    #[error("generating a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("the certificate and key do not make a TLS server: {0}")]
    Config(#[from] rustls::Error),
}

/// A TLS server config that offers HTTP/2 (gRPC needs it) from `cert` and `key` (PEM files),
/// or from a certificate generated for `localhost` and the loopback addresses when neither is
/// given.
pub fn server_config(cert: Option<&Path>, key: Option<&Path>) -> Result<Arc<ServerConfig>, TlsError> {
    let (chain, key) = match (cert, key) {
        (Some(cert), Some(key)) => (read_chain(cert)?, read_key(key)?),
        _ => self_signed()?,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
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
