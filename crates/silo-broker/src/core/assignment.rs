//! QUERY_ASSIGNMENT (docs/protocol.md §2.16): the broker, not the client, decides which queues
//! a consumer of a group takes (Java consumers with `setClientRebalance(false)`). A group the
//! operator switched to POP (`mqadmin setConsumeMode -m POP`) gets, on every client, one
//! "any queue" entry (queue id -1) per broker, as Java's broker answers by default; a PULL
//! group gets its share of the queues, averaged over the group's online clients.

use std::collections::BTreeSet;

use silo_wire::body::{MessageQueueAssignment, MessageQueueData};

use crate::broker::Broker;
use crate::topics::PERM_READ;

/// The allocation strategies Java's broker accepts.
const STRATEGIES: [&str; 2] = ["AVG", "AVG_BY_CIRCLE"];

/// A client's question.
#[derive(Debug, Clone, Copy)]
pub struct AssignmentQuery<'a> {
    pub topic: &'a str,
    pub group: &'a str,
    pub client_id: &'a str,
    pub strategy: &'a str,
    pub broadcasting: bool,
}

impl Broker {
    /// The readable queues of a topic across the cluster as this broker knows it (the
    /// embedded name server's routes, else its own queues).
    fn route_queues(&self, topic: &str) -> Vec<MessageQueueData> {
        let mut queues = Vec::new();
        let route = self.embedded_routes.as_ref().and_then(|r| r.route(topic));
        match route {
            Some(route) => {
                for qd in route.queue_datas.iter().filter(|q| q.perm & PERM_READ != 0) {
                    for queue_id in 0..qd.read_queue_nums.max(0) {
                        queues.push(MessageQueueData {
                            broker_name: qd.broker_name.clone(),
                            queue_id,
                            topic: topic.to_owned(),
                        });
                    }
                }
            }
            None => {
                if let Some(tc) = self.topics.queues(topic).filter(|q| q.perm & PERM_READ != 0) {
                    for queue_id in 0..tc.read_queue_nums.max(0) {
                        queues.push(MessageQueueData {
                            broker_name: self.config.broker_name.clone(),
                            queue_id,
                            topic: topic.to_owned(),
                        });
                    }
                }
            }
        }
        queues.sort();
        queues
    }

    /// The assignment, or `None` for "no answer" (Java's null: the client keeps what it has).
    pub fn query_assignment(&self, q: &AssignmentQuery<'_>) -> Option<Vec<MessageQueueAssignment>> {
        let retry = q.topic.starts_with(silo_store::names::RETRY_PREFIX);
        let set = self.request_modes.get(q.topic, q.group).filter(|_| !retry);
        let pop = set.as_ref().is_some_and(|m| m.mode.eq_ignore_ascii_case("POP"));
        let share = set.as_ref().map_or(-1, |m| m.pop_share_queue_num);
        let mode = if pop { "POP" } else { "PULL" };
        let all = self.route_queues(q.topic);
        let assign = |queues: Vec<MessageQueueData>| {
            queues
                .into_iter()
                .map(|message_queue| MessageQueueAssignment {
                    message_queue,
                    mode: mode.to_owned(),
                    attachments: Default::default(),
                })
                .collect::<Vec<_>>()
        };
        if q.broadcasting {
            return Some(assign(all));
        }
        let mut clients = self.clients.consumer_ids(q.group);
        clients.sort();
        let index = clients.iter().position(|c| c == q.client_id)?;
        if !STRATEGIES.contains(&q.strategy) {
            return None;
        }
        if pop && (share <= 0 || share >= clients.len() as i32 - 1) {
            // Every client pops from every broker's queues.
            let brokers: BTreeSet<String> = all.into_iter().map(|m| m.broker_name).collect();
            let queues = brokers
                .into_iter()
                .map(|broker_name| MessageQueueData { broker_name, queue_id: -1, topic: q.topic.to_owned() })
                .collect();
            return Some(assign(queues));
        }
        let mine = if pop {
            // Each client takes its own share and the shares of the next `share` clients.
            let mut picked = BTreeSet::new();
            for k in 0..=share as usize {
                let c = (index + k) % clients.len();
                picked.extend(average(&all, c, clients.len(), q.strategy));
            }
            picked.into_iter().collect()
        } else {
            average(&all, index, clients.len(), q.strategy)
        };
        Some(assign(mine))
    }
}

/// Java's two averaging strategies: contiguous blocks (AVG), or every n-th queue
/// (AVG_BY_CIRCLE).
fn average(all: &[MessageQueueData], index: usize, clients: usize, strategy: &str) -> Vec<MessageQueueData> {
    if all.is_empty() || clients == 0 {
        return Vec::new();
    }
    if strategy == "AVG_BY_CIRCLE" {
        return all.iter().skip(index).step_by(clients).cloned().collect();
    }
    let n = all.len();
    let rem = n % clients;
    let size = if n <= clients {
        1
    } else if rem > 0 && index < rem {
        n / clients + 1
    } else {
        n / clients
    };
    let start = if rem > 0 && index < rem { index * size } else { index * size + rem };
    let take = size.min(n.saturating_sub(start));
    all.iter().skip(start).take(take).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(n: i32) -> Vec<MessageQueueData> {
        (0..n).map(|q| MessageQueueData { broker_name: "b".into(), queue_id: q, topic: "T".into() }).collect()
    }

    fn ids(v: Vec<MessageQueueData>) -> Vec<i32> {
        v.into_iter().map(|m| m.queue_id).collect()
    }

    #[test]
    fn averaging_splits_as_javas_strategies_do() {
        assert_eq!(ids(average(&queues(8), 0, 3, "AVG")), vec![0, 1, 2]);
        assert_eq!(ids(average(&queues(8), 1, 3, "AVG")), vec![3, 4, 5]);
        assert_eq!(ids(average(&queues(8), 2, 3, "AVG")), vec![6, 7]);
        assert_eq!(ids(average(&queues(2), 2, 3, "AVG")), Vec::<i32>::new());
        assert_eq!(ids(average(&queues(8), 1, 3, "AVG_BY_CIRCLE")), vec![1, 4, 7]);
    }
}
