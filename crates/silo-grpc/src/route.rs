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
    QueryAssignmentRequest, QueryAssignmentResponse, QueryRouteRequest, QueryRouteResponse, Resource,
};

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
        let Some(tc) = self.broker.topics.get(&topic.name) else {
            let s = status(Code::TopicNotFound, format!("topic not found: {}", topic.name));
            return Ok(Response::new(QueryRouteResponse { status: Some(s), message_queues: vec![] }));
        };
        let endpoints = self.answer_endpoints(r.endpoints.as_ref());
        let broker = self.broker_proto(&endpoints);
        let types = accepted_types(&tc);
        // As Apache splits a queue-data entry: the queues both readable and writable first,
        // then those only one of the two.
        let (read, write) = (tc.read_queue_nums.max(0), tc.write_queue_nums.max(0));
        let both = read.min(write);
        let perm = permission(tc.perm);
        let mut queues = Vec::with_capacity(read.max(write) as usize);
        let mut push = |id: i32, p: Permission| {
            queues.push(MessageQueue {
                topic: Some(Resource {
                    resource_namespace: topic.resource_namespace.clone(),
                    name: topic.name.clone(),
                }),
                id,
                permission: p as i32,
                broker: Some(broker.clone()),
                accept_message_types: types.clone(),
            })
        };
        for id in 0..both {
            push(id, perm);
        }
        let only = if read > write { permission(tc.perm & PERM_READ) } else { permission(tc.perm & PERM_WRITE) };
        for id in both..read.max(write) {
            push(id, only);
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
        let Some(tc) = self.broker.topics.get(&topic.name) else {
            let s = status(Code::TopicNotFound, format!("topic not found: {}", topic.name));
            return Ok(Response::new(QueryAssignmentResponse { status: Some(s), assignments: vec![] }));
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
                accept_message_types: accepted_types(&tc),
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
