//! What the client subcommands share: the name server flag, and tables for people.

use clap::Args;
use silo_client::{Client, ClientConfig, Credentials};

#[derive(Args, Debug, Clone)]
pub struct NamesrvArg {
    /// Name server address(es), `host:port;host:port` (default: $NAMESRV_ADDR, else 127.0.0.1:9876).
    #[arg(short = 'n', long = "namesrv", env = "NAMESRV_ADDR", default_value = "127.0.0.1:9876")]
    pub namesrv: String,
    #[command(flatten)]
    pub credentials: CredentialArgs,
}

impl NamesrvArg {
    pub fn client(&self) -> Client {
        let mut config = ClientConfig::new(&self.namesrv);
        self.credentials.apply(&mut config);
        Client::new(config)
    }
}

/// Who the requests are signed by, for a broker with authentication on, and whether they go
/// over TLS.
#[derive(Args, Clone, Default)]
pub struct CredentialArgs {
    /// Access key (user name) to sign requests with.
    #[arg(long, env = "SILO_ACCESS_KEY", requires = "secret_key")]
    pub access_key: Option<String>,
    /// Secret key (password) of the access key.
    #[arg(long, env = "SILO_SECRET_KEY", hide_env_values = true, requires = "access_key")]
    pub secret_key: Option<String>,
    /// Connect over TLS, without checking the server's certificate (as the stock clients do by
    /// default).
    #[arg(long, num_args = 0, default_missing_value = "", value_parser = parse_tls)]
    pub tls: Option<silo_client::Tls>,
    /// Connect over TLS to servers whose certificate chains to one in this PEM file and names
    /// the address connected to.
    #[arg(long, value_name = "PEM_FILE", conflicts_with = "tls", value_parser = parse_tls)]
    pub tls_ca: Option<silo_client::Tls>,
}

/// `--tls` (no value: unverified) and `--tls-ca FILE` (verified).
fn parse_tls(ca: &str) -> Result<silo_client::Tls, String> {
    let tls = if ca.is_empty() { silo_client::Tls::unverified() } else { silo_client::Tls::trusting(ca.as_ref()) };
    tls.map_err(|e| e.to_string())
}

impl std::fmt::Debug for CredentialArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialArgs")
            .field("access_key", &self.access_key)
            .field("tls", &(self.tls.is_some() || self.tls_ca.is_some()))
            .finish_non_exhaustive()
    }
}

impl CredentialArgs {
    /// Sets `config`'s credentials and TLS from these.
    pub fn apply(&self, config: &mut ClientConfig) {
        config.credentials = self.credentials();
        config.tls = self.tls_ca.clone().or_else(|| self.tls.clone());
    }

    /// The credentials, if both keys were given.
    pub fn credentials(&self) -> Option<std::sync::Arc<Credentials>> {
        match (&self.access_key, &self.secret_key) {
            (Some(access_key), Some(secret_key)) => {
                std::sync::Arc::new(Credentials { access_key: access_key.clone(), secret_key: secret_key.clone() })
                    .into()
            }
            _ => None,
        }
    }
}

/// Parses `NAME=VALUE`.
pub fn parse_property(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("expected NAME=VALUE, got {s:?}")),
    }
}

/// Prints rows as aligned columns under a header line.
pub fn print_table(out: &mut impl std::io::Write, header: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s
    };
    writeln!(out, "{}", line(header.to_vec()))?;
    for row in rows {
        writeln!(out, "{}", line(row.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}
