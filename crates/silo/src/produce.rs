//! `silo produce`: send messages from arguments, stdin lines or a file's lines.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use silo_client::{Message, Producer, ProducerConfig, SendResult};

use crate::cli::{NamesrvArg, parse_property};

#[derive(Args, Debug)]
pub struct ProduceArgs {
    #[command(flatten)]
    namesrv: NamesrvArg,
    /// Topic to send to (created on first use when the broker allows it).
    #[arg(short = 't', long)]
    topic: String,
    /// Message bodies; without any (and without --file), one message per line of stdin.
    bodies: Vec<String>,
    /// Read one message per line from this file ("-" for stdin).
    #[arg(short = 'f', long)]
    file: Option<PathBuf>,
    /// Tag of every message.
    #[arg(long)]
    tags: Option<String>,
    /// Key of every message (may repeat); the broker indexes keys for `silo admin message key`.
    #[arg(short = 'k', long = "key")]
    keys: Vec<String>,
    /// User property NAME=VALUE (may repeat).
    #[arg(short = 'p', long = "property", value_parser = parse_property)]
    properties: Vec<(String, String)>,
    /// Send this many messages per request (SEND_BATCH_MESSAGE).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Delay level 1..=18 (1s 5s 10s 30s 1m 2m ... 2h).
    #[arg(long)]
    delay_level: Option<u8>,
    /// Producer group.
    #[arg(short = 'g', long, default_value = "silo-cli-producer")]
    group: String,
    /// Send without waiting for the broker's answer.
    #[arg(long)]
    oneway: bool,
    /// One JSON object per send on stdout.
    #[arg(long)]
    json: bool,
}

impl ProduceArgs {
    fn message(&self, body: String) -> Message {
        let mut m = Message::new(body);
        m.tags.clone_from(&self.tags);
        m.keys.clone_from(&self.keys);
        m.properties.clone_from(&self.properties);
        m.delay_level = self.delay_level;
        m
    }
}

pub fn run(args: ProduceArgs) -> anyhow::Result<()> {
    if args.batch == 0 {
        bail!("--batch must be at least 1");
    }
    if args.batch > 1 && (args.oneway || args.delay_level.is_some()) {
        bail!("--batch cannot be combined with --oneway or --delay-level");
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(produce(args))
}

async fn produce(args: ProduceArgs) -> anyhow::Result<()> {
    let producer =
        Producer::new(args.namesrv.client(), ProducerConfig { group: args.group.clone(), ..ProducerConfig::default() });
    let lines: Box<dyn Iterator<Item = std::io::Result<String>>> = match (&args.file, args.bodies.is_empty()) {
        (Some(path), _) if path.as_os_str() == "-" => Box::new(std::io::stdin().lock().lines()),
        (Some(path), _) => Box::new(
            std::io::BufReader::new(
                std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
            )
            .lines(),
        ),
        (None, false) => Box::new(args.bodies.clone().into_iter().map(Ok)),
        (None, true) => {
            if std::io::stdin().is_terminal() {
                eprintln!("reading messages from stdin, one per line (Ctrl-D to end)");
            }
            Box::new(std::io::stdin().lock().lines())
        }
    };
    let bar = (args.file.is_some() && std::io::stderr().is_terminal() && !args.json)
        .then(|| indicatif::ProgressBar::new_spinner().with_message("sending"));
    let mut pending: Vec<Message> = Vec::with_capacity(args.batch);
    let mut sent = 0u64;
    let mut stdout = std::io::stdout().lock();
    for line in lines {
        let line = line.context("cannot read input")?;
        pending.push(args.message(line));
        if pending.len() == args.batch {
            sent += send(&producer, &args, &mut pending, &mut stdout).await?;
            if let Some(bar) = &bar {
                bar.set_message(format!("{sent} messages sent"));
                bar.tick();
            }
        }
    }
    if !pending.is_empty() {
        sent += send(&producer, &args, &mut pending, &mut stdout).await?;
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if !args.json {
        eprintln!("{sent} message(s) sent to {}", args.topic);
    }
    Ok(())
}

async fn send(
    producer: &Producer,
    args: &ProduceArgs,
    pending: &mut Vec<Message>,
    out: &mut impl std::io::Write,
) -> anyhow::Result<u64> {
    let n = pending.len() as u64;
    let what = || format!("cannot send to topic {} (is the broker running? see `silo admin cluster`)", args.topic);
    let result: Option<SendResult> = match pending.as_slice() {
        [one] if args.oneway => {
            producer.send_oneway(&args.topic, one).await.with_context(what)?;
            None
        }
        [one] => Some(producer.send(&args.topic, one).await.with_context(what)?),
        many => Some(producer.send_batch(&args.topic, many).await.with_context(what)?),
    };
    pending.clear();
    if let Some(r) = result {
        if args.json {
            serde_json::to_writer(&mut *out, &r)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "{:?}  queue {}  offset {}  msgId {}  offsetMsgId {}",
                r.status, r.queue, r.queue_offset, r.msg_id, r.offset_msg_id
            )?;
        }
    }
    Ok(n)
}
