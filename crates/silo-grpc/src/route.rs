//! QueryRoute and QueryAssignment: which queues a topic has and which a consumer reads. The
//! queues are this broker's, and every one names this endpoint: the client talks to the broker
//! that serves it, with no proxy in between.

use std::net::SocketAddr;
use std::sync::Arc;

use silo_broker::core::attributes::MESSAGE_TYPE;
use silo_wire::body::TopicConfig;
use tonic::{Request, Response};

use crate::frontend::{Frontend, ok, status};
use crate::proto::{
    Address, AddressScheme, Assignment, Broker as BrokerProto, Code, Endpoints, MessageQueue, MessageType, Permission,
    QueryAssignmentRequest, QueryAssignmentResponse, QueryRouteRequest, QueryRouteResponse,
};
use crate::validate;

const PERM_READ: i32 = 4;
const PERM_WRITE: i32 = 2;

/// The message types a topic's `message.type` attribute lets producers send.
pub fn accepted_types(tc: &TopicConfig) -> Vec<i32> {
    let t = tc.attributes.get(&format!("+{MESSAGE_TYPE}")).or_else(|| tc.attributes.get(MESSAGE_TYPE));
    let one = |m: MessageType| vec![m as i32];
    match t.map(String::as_str) {
        Some("FIFO") => one(MessageType::Fifo),
        Some("DELAY") => one(MessageType::Delay),
        Some("TRANSACTION") => one(MessageType::Transaction),
        Some("MIXED") => [MessageType::Normal, MessageType::Fifo, MessageType::Delay, MessageType::Transaction]
            .map(|m| m as i32)
            .to_vec(),
        _ => one(MessageType::Normal),
    }
}

/// `addr` as the SDKs take an endpoint.
pub fn endpoints_of(addr: SocketAddr) -> Endpoints {
    Endpoints {
        scheme: if addr.is_ipv4() { AddressScheme::IPv4 } else { AddressScheme::IPv6 } as i32,
        addresses: vec![Address { host: addr.ip().to_string(), port: i32::from(addr.port()) }],
    }
}

/// The answer for a topic the broker does not have (the name server's words, as the proxy
/// passes them on).
pub fn no_route(topic: &str) -> crate::proto::Status {
    status(Code::TopicNotFound, format!("CODE: 17  DESC: No topic route info in name server for the topic: {topic}"))
}

/// How a topic's queues are announced, as Apache's proxy splits them: with read and write
/// permission, the queues only readable first, then those only writable, then those both;
/// ids run across the three.
fn queue_split(read: i32, write: i32, perm: i32) -> [(i32, Permission); 4] {
    match (perm & PERM_READ != 0, perm & PERM_WRITE != 0) {
        (true, true) => {
            let both = read.min(write);
            [
                (read - both, Permission::Read),
                (write - both, Permission::Write),
                (both, Permission::ReadWrite),
                (0, Permission::None),
            ]
        }
        (false, true) => {
            [(0, Permission::Read), (write, Permission::Write), (0, Permission::ReadWrite), (0, Permission::None)]
        }
        (true, false) => {
            [(read, Permission::Read), (0, Permission::Write), (0, Permission::ReadWrite), (0, Permission::None)]
        }
        (false, false) => [
            (0, Permission::Read),
            (0, Permission::Write),
            (0, Permission::ReadWrite),
            (read.max(write).max(1), Permission::None),
        ],
    }
}

fn permission(perm: i32) -> Permission {
    match (perm & PERM_READ != 0, perm & PERM_WRITE != 0) {
        (true, true) => Permission::ReadWrite,
        (true, false) => Permission::Read,
        (false, true) => Permission::Write,
        (false, false) => Permission::None,
    }
}

impl Frontend {
    /// The endpoint clients are to use: the one they reached us by, when they say it.
    fn answer_endpoints(&self, asked: Option<&Endpoints>) -> Endpoints {
        match asked {
            Some(e) if !e.addresses.is_empty() => e.clone(),
            _ => endpoints_of(self.local),
        }
    }

    fn broker_proto(&self, endpoints: &Endpoints) -> BrokerProto {
        BrokerProto { name: self.broker.config.broker_name.clone(), id: 0, endpoints: Some(endpoints.clone()) }
    }

    pub(crate) async fn query_route(
        self: &Arc<Self>,
        req: Request<QueryRouteRequest>,
    ) -> Result<Response<QueryRouteResponse>, tonic::Status> {
        if let Err(s) = self.caller(&req) {
            return Ok(Response::new(QueryRouteResponse { status: Some(s), message_queues: vec![] }));
        }
        let r = req.into_inner();
        let topic = r.topic.unwrap_or_default();
        if let Err(s) = validate::topic(&topic.name) {
            return Ok(Response::new(QueryRouteResponse { status: Some(s), message_queues: vec![] }));
        }
        let Some(tc) = self.broker.topics.get(&topic.name) else {
            return Ok(Response::new(QueryRouteResponse {
                status: Some(no_route(&topic.name)),
                message_queues: vec![],
            }));
        };
        let endpoints = self.answer_endpoints(r.endpoints.as_ref());
        let broker = self.broker_proto(&endpoints);
        let types = accepted_types(&tc);
        let mut queues = Vec::new();
        let mut id = 0;
        for (n, p) in queue_split(tc.read_queue_nums.max(0), tc.write_queue_nums.max(0), tc.perm) {
            for _ in 0..n {
                queues.push(MessageQueue {
                    topic: Some(topic.clone()),
                    id,
                    permission: p as i32,
                    broker: Some(broker.clone()),
                    accept_message_types: types.clone(),
                });
                id += 1;
            }
        }
        Ok(Response::new(QueryRouteResponse { status: Some(ok()), message_queues: queues }))
    }

    pub(crate) async fn query_assignment(
        self: &Arc<Self>,
        req: Request<QueryAssignmentRequest>,
    ) -> Result<Response<QueryAssignmentResponse>, tonic::Status> {
        if let Err(s) = self.caller(&req) {
            return Ok(Response::new(QueryAssignmentResponse { status: Some(s), assignments: vec![] }));
        }
        let r = req.into_inner();
        let topic = r.topic.unwrap_or_default();
        let group = r.group.unwrap_or_default();
        if let Err(s) = validate::topic(&topic.name).and_then(|()| validate::group(&group.name)) {
            return Ok(Response::new(QueryAssignmentResponse { status: Some(s), assignments: vec![] }));
        }
        let Some(tc) = self.broker.topics.get(&topic.name) else {
            return Ok(Response::new(QueryAssignmentResponse {
                status: Some(no_route(&topic.name)),
                assignments: vec![],
            }));
        };
        if tc.perm & PERM_READ == 0 {
            let s = status(Code::Forbidden, "no readable queue");
            return Ok(Response::new(QueryAssignmentResponse { status: Some(s), assignments: vec![] }));
        }
        let orderly = self.broker.groups.get(&group.name).is_some_and(|g| g.consume_message_orderly);
        let endpoints = self.answer_endpoints(r.endpoints.as_ref());
        let broker = self.broker_proto(&endpoints);
        let queue = |id: i32| Assignment {
            message_queue: Some(MessageQueue {
                topic: Some(topic.clone()),
                id,
                permission: permission(tc.perm) as i32,
                broker: Some(broker.clone()),
                accept_message_types: Vec::new(),
            }),
        };
        // A POP consumer reads queue -1 ("any queue") of each broker, an orderly one every
        // queue, so that each queue is held by one consumer at a time (Apache's proxy's rule).
        let assignments: Vec<Assignment> =
            if orderly { (0..tc.read_queue_nums.max(0)).map(queue).collect() } else { vec![queue(-1)] };
        if assignments.is_empty() {
            let s = status(Code::Forbidden, "no readable queue");
            return Ok(Response::new(QueryAssignmentResponse { status: Some(s), assignments }));
        }
        Ok(Response::new(QueryAssignmentResponse { status: Some(ok()), assignments }))
    }
}
