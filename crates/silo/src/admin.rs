//! `silo admin`: topics, the cluster, consumer group progress, message lookup and broker status,
//! as tables for people or JSON (`--json`) for scripts.

use std::io::Write;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::json;
use silo_client::{Admin, FoundMessage, TopicSpec};

use crate::cli::{NamesrvArg, print_table};

#[derive(Args, Debug)]
pub struct AdminArgs {
    #[command(flatten)]
    namesrv: NamesrvArg,
    /// JSON on stdout instead of tables.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(Subcommand, Debug)]
enum AdminCommand {
    /// Create, list, route and delete topics.
    Topic {
        #[command(subcommand)]
        command: TopicCommand,
    },
    /// The clusters and brokers registered with the name server.
    Cluster,
    /// A consumer group's progress and lag per queue.
    Group {
        group: String,
        /// Only this topic.
        #[arg(short = 't', long)]
        topic: Option<String>,
    },
    /// Find a message by id or by key.
    Message {
        #[command(subcommand)]
        command: MessageCommand,
    },
    /// A broker's runtime figures (every master when no address is given).
    Broker { addr: Option<String> },
    /// Replication: a master's slaves (how far each confirmed, how far behind) or a slave's
    /// master, like mqadmin's haStatus (every master when no address is given).
    Ha { addr: Option<String> },
}

#[derive(Subcommand, Debug)]
enum TopicCommand {
    /// Create (or update) a topic on every master of a cluster.
    Create {
        topic: String,
        /// Read and write queues per broker.
        #[arg(short = 'q', long, default_value_t = 8)]
        queues: i32,
        /// Cluster to create it in (default: every cluster).
        #[arg(short = 'c', long)]
        cluster: Option<String>,
        /// Only on the broker at this address.
        #[arg(short = 'b', long)]
        broker: Option<String>,
        /// Permission: 6 read-write, 4 read-only, 2 write-only.
        #[arg(long, default_value_t = 6)]
        perm: i32,
        /// An ordered topic.
        #[arg(long)]
        order: bool,
    },
    /// Every topic the name server knows.
    List,
    /// The brokers and queues of a topic.
    Route { topic: String },
    /// Delete a topic from the brokers of a cluster and from the name server.
    Delete {
        topic: String,
        #[arg(short = 'c', long)]
        cluster: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum MessageCommand {
    /// By the broker's offset id (offsetMsgId), or by the producer's id (msgId) with --topic.
    Id {
        id: String,
        #[arg(short = 't', long)]
        topic: Option<String>,
    },
    /// By key, from the brokers' key index.
    Key {
        #[arg(short = 't', long)]
        topic: String,
        key: String,
        /// At most this many per broker.
        #[arg(long, default_value_t = 32)]
        max: u32,
    },
}

pub fn run(args: AdminArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(admin(args))
}

async fn admin(args: AdminArgs) -> anyhow::Result<()> {
    let admin = Admin::new(args.namesrv.client());
    let mut out = std::io::stdout().lock();
    let json = args.json;
    let hint = || {
        let tls = if args.namesrv.credentials.tls.is_some() || args.namesrv.credentials.tls_ca.is_some() {
            ""
        } else {
            "; if it takes TLS only, add --tls"
        };
        format!("cannot reach the name server at {} (is it running?{tls})", args.namesrv.namesrv)
    };
    match args.command {
        AdminCommand::Topic { command } => match command {
            TopicCommand::Create { topic, queues, cluster, broker, perm, order } => {
                if !(1..=1024).contains(&queues) {
                    bail!("--queues must be within 1..=1024");
                }
                let spec =
                    TopicSpec { topic: topic.clone(), read_queue_nums: queues, write_queue_nums: queues, perm, order };
                let on = match broker {
                    Some(addr) => {
                        admin.create_topic_on(&addr, &spec).await.with_context(|| format!("cannot create {topic}"))?;
                        vec![addr]
                    }
                    None => admin
                        .create_topic(cluster.as_deref(), &spec)
                        .await
                        .with_context(|| format!("cannot create {topic}"))?,
                };
                emit(&mut out, json, &json!({"topic": topic, "queues": queues, "brokers": on}), || {
                    format!("created {topic} with {queues} queues on {}", on.join(", "))
                })?;
            }
            TopicCommand::List => {
                let list = admin.topic_list().await.with_context(hint)?;
                if json {
                    writeln!(out, "{}", serde_json::to_string(&list.topic_list)?)?;
                } else {
                    for t in &list.topic_list {
                        writeln!(out, "{t}")?;
                    }
                }
            }
            TopicCommand::Route { topic } => {
                let Some(route) = admin.route(&topic).await.with_context(hint)? else {
                    bail!("no route for topic {topic}: no broker has it (`silo admin topic list`)");
                };
                if json {
                    writeln!(out, "{}", serde_json::to_string(&route)?)?;
                } else {
                    let rows: Vec<Vec<String>> = route
                        .queue_datas
                        .iter()
                        .map(|q| {
                            let addr = route
                                .broker_datas
                                .iter()
                                .find(|b| b.broker_name == q.broker_name)
                                .and_then(|b| b.broker_addrs.get(&0))
                                .cloned()
                                .unwrap_or_else(|| "-".into());
                            vec![
                                q.broker_name.clone(),
                                addr,
                                q.read_queue_nums.to_string(),
                                q.write_queue_nums.to_string(),
                                perm_name(q.perm),
                            ]
                        })
                        .collect();
                    print_table(&mut out, &["BROKER", "ADDRESS", "READ QUEUES", "WRITE QUEUES", "PERM"], &rows)?;
                }
            }
            TopicCommand::Delete { topic, cluster } => {
                let on = admin
                    .delete_topic(cluster.as_deref(), &topic)
                    .await
                    .with_context(|| format!("cannot delete {topic}"))?;
                emit(&mut out, json, &json!({"topic": topic, "deleted_from": on}), || {
                    format!("deleted {topic} from {}", on.join(", "))
                })?;
            }
        },
        AdminCommand::Cluster => {
            let info = admin.cluster_info().await.with_context(hint)?;
            if json {
                writeln!(out, "{}", serde_json::to_string(&info)?)?;
            } else {
                let mut rows = Vec::new();
                for (cluster, names) in &info.cluster_addr_table {
                    for name in names {
                        let Some(b) = info.broker_addr_table.get(name) else { continue };
                        for (id, addr) in &b.broker_addrs {
                            let role = if *id == 0 { "master".to_owned() } else { format!("slave {id}") };
                            rows.push(vec![cluster.clone(), name.clone(), role, addr.clone()]);
                        }
                    }
                }
                print_table(&mut out, &["CLUSTER", "BROKER", "ROLE", "ADDRESS"], &rows)?;
            }
        }
        AdminCommand::Group { group, topic } => {
            let stats = admin.consume_stats(&group, topic.as_deref()).await.with_context(hint)?;
            if stats.is_empty() {
                bail!("no broker has progress for consumer group {group}");
            }
            let lag: i64 = stats.iter().map(|(_, o)| (o.broker_offset - o.consumer_offset).max(0)).sum();
            if json {
                let queues: Vec<_> = stats
                    .iter()
                    .map(|(q, o)| {
                        json!({"topic": q.topic, "brokerName": q.broker_name, "queueId": q.queue_id,
                               "brokerOffset": o.broker_offset, "consumerOffset": o.consumer_offset,
                               "lag": (o.broker_offset - o.consumer_offset).max(0), "lastTimestamp": o.last_timestamp})
                    })
                    .collect();
                writeln!(out, "{}", json!({"group": group, "lag": lag, "queues": queues}))?;
            } else {
                let rows: Vec<Vec<String>> = stats
                    .iter()
                    .map(|(q, o)| {
                        vec![
                            q.topic.clone(),
                            q.broker_name.clone(),
                            q.queue_id.to_string(),
                            o.broker_offset.to_string(),
                            o.consumer_offset.to_string(),
                            (o.broker_offset - o.consumer_offset).max(0).to_string(),
                        ]
                    })
                    .collect();
                print_table(&mut out, &["TOPIC", "BROKER", "QUEUE", "BROKER OFFSET", "CONSUMER OFFSET", "LAG"], &rows)?;
                writeln!(out, "total lag: {lag}")?;
            }
        }
        AdminCommand::Message { command } => {
            let found = match command {
                MessageCommand::Id { id, topic } => match silo_wire::msgid::parse_offset_msg_id(&id) {
                    Ok(_) => vec![admin.view_message(&id).await.with_context(|| format!("cannot view message {id}"))?],
                    Err(_) => {
                        let Some(topic) = topic else {
                            bail!("{id} is not a broker offset id; to find it by the producer's id, give --topic");
                        };
                        admin.query_by_uniq_id(&topic, &id).await.with_context(hint)?
                    }
                },
                MessageCommand::Key { topic, key, max } => {
                    admin.query_by_key(&topic, &key, max).await.with_context(hint)?
                }
            };
            if found.is_empty() {
                bail!("no message found");
            }
            for f in &found {
                print_found(&mut out, f, json)?;
            }
        }
        AdminCommand::Broker { addr } => {
            let addrs = match addr {
                Some(a) => vec![(a.clone(), a)],
                None => admin.masters(None).await.with_context(hint)?,
            };
            for (name, addr) in addrs {
                let info = admin.runtime_info(&addr).await.with_context(|| format!("cannot ask {addr}"))?;
                if json {
                    writeln!(out, "{}", json!({"broker": name, "addr": addr, "table": info.table}))?;
                } else {
                    writeln!(out, "{name} ({addr})")?;
                    let rows: Vec<Vec<String>> = info.table.iter().map(|(k, v)| vec![k.clone(), v.clone()]).collect();
                    print_table(&mut out, &["KEY", "VALUE"], &rows)?;
                }
            }
        }
        AdminCommand::Ha { addr } => {
            let addrs = match addr {
                Some(a) => vec![(a.clone(), a)],
                None => admin.masters(None).await.with_context(hint)?,
            };
            for (name, addr) in addrs {
                let ha = admin.ha_status(&addr).await.with_context(|| format!("cannot ask {addr}"))?;
                if json {
                    writeln!(out, "{}", json!({"broker": name, "addr": addr, "ha": ha}))?;
                } else if ha.master {
                    writeln!(
                        out,
                        "{name} ({addr}): master at offset {}, {} slave(s) in sync",
                        ha.master_commit_log_max_offset, ha.in_sync_slave_nums
                    )?;
                    let rows: Vec<Vec<String>> = ha
                        .ha_connection_info
                        .iter()
                        .map(|c| {
                            vec![
                                c.addr.clone(),
                                c.slave_ack_offset.to_string(),
                                c.diff.to_string(),
                                c.in_sync.to_string(),
                                c.transferred_byte_in_second.to_string(),
                                c.transfer_from_where.to_string(),
                            ]
                        })
                        .collect();
                    print_table(
                        &mut out,
                        &["SLAVE", "CONFIRMED", "BEHIND_BYTES", "IN_SYNC", "BYTES/S", "NEXT_TRANSFER"],
                        &rows,
                    )?;
                } else {
                    let c = &ha.ha_client_runtime_info;
                    writeln!(
                        out,
                        "{name} ({addr}): slave of {}, {}, holds up to offset {}, {} bytes/s",
                        c.master_addr.as_deref().unwrap_or("(no master known)"),
                        if c.activated { "connected" } else { "not connected" },
                        c.max_offset,
                        c.transferred_byte_in_second
                    )?;
                }
            }
        }
    }
    Ok(())
}

fn emit(
    out: &mut impl Write,
    json: bool,
    value: &serde_json::Value,
    text: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    if json {
        writeln!(out, "{value}")?;
    } else {
        writeln!(out, "{}", text())?;
    }
    Ok(())
}

fn perm_name(perm: i32) -> String {
    match perm & 0x6 {
        6 => "read-write".into(),
        4 => "read".into(),
        2 => "write".into(),
        _ => "none".into(),
    }
}

fn print_found(out: &mut impl Write, f: &FoundMessage, json: bool) -> anyhow::Result<()> {
    let m = &f.message;
    let body = m.body()?;
    let props = m.properties();
    if json {
        let props: std::collections::BTreeMap<&str, &str> = props.iter().collect();
        writeln!(
            out,
            "{}",
            json!({"broker": f.broker_addr, "topic": m.topic(), "queueId": m.queue_id(), "queueOffset": m.queue_offset(),
                   "msgId": m.msg_id(), "offsetMsgId": m.offset_msg_id(), "tags": m.tags(), "keys": m.keys().collect::<Vec<_>>(),
                   "bornTimestamp": m.born_timestamp(), "storeTimestamp": m.store_timestamp(),
                   "reconsumeTimes": m.reconsume_times(), "properties": props,
                   "body": String::from_utf8_lossy(&body), "bodyLen": body.len()})
        )?;
    } else {
        let rows = vec![
            vec!["topic".into(), m.topic().to_owned()],
            vec!["queue".into(), format!("{}#{} offset {}", f.broker_addr, m.queue_id(), m.queue_offset())],
            vec!["msgId".into(), m.msg_id()],
            vec!["offsetMsgId".into(), m.offset_msg_id()],
            vec!["tags".into(), m.tags().unwrap_or("-").to_owned()],
            vec!["keys".into(), m.keys().collect::<Vec<_>>().join(" ")],
            vec!["born".into(), m.born_timestamp().to_string()],
            vec!["stored".into(), m.store_timestamp().to_string()],
            vec!["reconsumeTimes".into(), m.reconsume_times().to_string()],
            vec!["properties".into(), props.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")],
            vec!["body".into(), format!("{} ({} bytes)", String::from_utf8_lossy(&body), body.len())],
        ];
        print_table(out, &["FIELD", "VALUE"], &rows)?;
        writeln!(out)?;
    }
    Ok(())
}
