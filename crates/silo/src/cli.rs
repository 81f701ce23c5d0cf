//! What the client subcommands share: the name server flag, and tables for people.

use clap::Args;
use silo_client::{Client, ClientConfig};

#[derive(Args, Debug, Clone)]
pub struct NamesrvArg {
    /// Name server address(es), `host:port;host:port` (default: $NAMESRV_ADDR, else 127.0.0.1:9876).
    #[arg(short = 'n', long = "namesrv", env = "NAMESRV_ADDR", default_value = "127.0.0.1:9876")]
    pub namesrv: String,
}

impl NamesrvArg {
    pub fn client(&self) -> Client {
        Client::new(ClientConfig::new(&self.namesrv))
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
