//! The `silo` command line.

mod decode;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "silo", version, about = "Silo: a message broker that speaks Apache RocketMQ's protocol")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode RocketMQ bytes (a commit-log segment, a pull body, a frame or a batch) into JSON lines.
    Decode {
        #[command(subcommand)]
        what: DecodeWhat,
    },
}

#[derive(Subcommand)]
enum DecodeWhat {
    /// Stored message records, e.g. a commit-log segment file or a saved pull body.
    Records {
        /// File to read.
        file: PathBuf,
        /// Print the body as text (lossy UTF-8) instead of its length only.
        #[arg(long)]
        bodies: bool,
    },
    /// Remoting frames (length-prefixed), from a file, or hex text with --hex.
    Frames {
        /// File with raw frame bytes, or hex text when --hex is given ("-" for stdin).
        input: String,
        #[arg(long)]
        hex: bool,
    },
    /// A SEND_BATCH_MESSAGE body.
    Batch {
        /// File with the batch bytes ("-" for stdin).
        input: String,
        #[arg(long)]
        hex: bool,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Decode { what } => match what {
            DecodeWhat::Records { file, bodies } => decode::records(&std::fs::read(&file)?, bodies, &mut out),
            DecodeWhat::Frames { input, hex } => decode::frames(&decode::read_input(&input, hex)?, &mut out),
            DecodeWhat::Batch { input, hex } => decode::batch(&decode::read_input(&input, hex)?, &mut out),
        },
    }
}
