//! TLS to a broker or name server, as the stock clients connect with theirs switched on
//! (Java's `tls.enable` / `setUseTLS`, Go's `WithTls`).
//!
//! Two ways to trust the server: [`Tls::trusting`] checks its certificate against the given
//! authorities and the address connected to, as a client should on a network it does not
//! control; [`Tls::unverified`] encrypts without checking who answers, which is what Java's
//! client does unless `tls.client.authServer` is set and what Go's always does. The handshake's
//! signature is checked either way, so the server proves it holds the certificate's key.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use tokio_rustls::rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{self, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::error::ClientError;

/// How a connection does TLS.
#[derive(Clone)]
pub struct Tls {
    connector: TlsConnector,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Tls {
    /// Trusts servers whose certificate chains to one in `ca_pem` (a PEM file) and names the
    /// address connected to.
    pub fn trusting(ca_pem: &Path) -> Result<Self, ClientError> {
        let bad = |reason: String| ClientError::Tls(format!("{}: {reason}", ca_pem.display()));
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(ca_pem).map_err(|e| bad(e.to_string()))? {
            roots.add(cert.map_err(|e| bad(e.to_string()))?).map_err(|e| bad(e.to_string()))?;
        }
        if roots.is_empty() {
            return Err(bad("no certificate in the file".into()));
        }
        let config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientError::Tls(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self { connector: TlsConnector::from(Arc::new(config)) })
    }

    /// Encrypts without checking the server's certificate (the stock clients' default).
    pub fn unverified() -> Result<Self, ClientError> {
        let provider = provider();
        let config = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientError::Tls(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth();
        Ok(Self { connector: TlsConnector::from(Arc::new(config)) })
    }

    pub(crate) async fn handshake(&self, addr: SocketAddr, stream: TcpStream) -> std::io::Result<TlsStream<TcpStream>> {
        self.connector.connect(ServerName::IpAddress(addr.ip().into()), stream).await
    }
}

/// Accepts any certificate, but still checks that the handshake was signed by its key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
