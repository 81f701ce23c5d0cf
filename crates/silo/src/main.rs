//! The `silo` command line.

mod admin;
#[cfg(feature = "count-allocs")]
mod alloc_count;
mod bench;
mod cli;
mod console;
mod consume;
mod decode;
mod http_port;
mod metrics_endpoint;
mod produce;
mod serve;

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
    /// Run a broker with an embedded name server (name server on 127.0.0.1:9876, broker on
    /// 127.0.0.1:10911 unless configured otherwise).
    Serve(serve::ServeArgs),
    /// Run a broker that registers with the name servers given by --namesrv-addr (or the
    /// `namesrvAddr` key of its broker.conf): Silo's or Apache RocketMQ's.
    Broker(serve::ServeArgs),
    /// Run a name server only.
    Namesrv(serve::NamesrvArgs),
    /// Send messages: from arguments, from stdin lines, or from a file's lines.
    Produce(produce::ProduceArgs),
    /// Read messages of a topic, from the first or last offset, a time, or where a group left off.
    Consume(consume::ConsumeArgs),
    /// Topics, the cluster, consumer group progress, message lookup, broker status.
    Admin(admin::AdminArgs),
    /// Measure a broker (Silo or any RocketMQ): produce, consume catch-up, end to end, visibility.
    Bench(bench::BenchArgs),
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
    #[cfg(feature = "count-allocs")]
    silo_broker::alloc_probe::install(alloc_count::counts);
    match cli.command {
        Command::Serve(args) => return serve::run(args, serve::Mode::Embedded),
        Command::Broker(args) => return serve::run(args, serve::Mode::Broker),
        Command::Namesrv(args) => return serve::run_namesrv(args),
        Command::Produce(args) => return produce::run(args),
        Command::Consume(args) => return consume::run(args),
        Command::Admin(args) => return admin::run(args),
        Command::Bench(args) => return bench::run(args),
        Command::Decode { .. } => {}
    }
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Serve(_)
        | Command::Broker(_)
        | Command::Namesrv(_)
        | Command::Produce(_)
        | Command::Consume(_)
        | Command::Admin(_)
        | Command::Bench(_) => Ok(()),
        Command::Decode { what } => match what {
            DecodeWhat::Records { file, bodies } => decode::records(&std::fs::read(&file)?, bodies, &mut out),
            DecodeWhat::Frames { input, hex } => decode::frames(&decode::read_input(&input, hex)?, &mut out),
            DecodeWhat::Batch { input, hex } => decode::batch(&decode::read_input(&input, hex)?, &mut out),
        },
    }
}
