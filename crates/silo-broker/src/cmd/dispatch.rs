//! Dispatch: a request frame to its handler, through the one request table ([`super::table`]).
//! The only place that looks codes up; the handlers know nothing of it.

use std::net::IpAddr;
use std::sync::Arc;

use silo_wire::Frame;
use silo_wire::codes::response as rs;

use super::table::{self, Handler, Request};
use crate::auth::Auth;
use crate::broker::{Broker, ConnState};
use crate::connection::{Channel, Outgoing};
use crate::namesrv::RouteTable;
use crate::response;

/// Handles one request. `None` when nothing is to be sent now (one-way requests, parked
/// pulls that answer later).
pub fn broker_request(broker: &Arc<Broker>, conn: &mut ConnState, channel: &Channel, frame: Frame) -> Option<Outgoing> {
    let h = &frame.header;
    let (opaque, code, oneway) = (h.opaque, h.code, h.is_oneway());
    let Some(Request { handler: Handler::Broker(handler), reads_dispatched, access, .. }) = table::find(code) else {
        return (!oneway).then(|| response::not_supported(opaque, code));
    };
    if broker.config.ha.refuses(code) {
        return (!oneway).then(|| response::error(opaque, rs::SYSTEM_BUSY, crate::ha::SLAVE_REJECT_REMARK));
    }
    if let Err(refused) = broker.auth.admit(&frame, access, channel.remote.ip()) {
        return (!oneway).then(|| response::error(opaque, rs::NO_PERMISSION, refused.0));
    }
    if *reads_dispatched && broker.store.dispatch_behind() > 0 {
        // The answer must include every message acknowledged before this request: wait
        // (bounded) for dispatch to catch up with the log as it is now, then answer.
        let broker = Arc::clone(broker);
        let channel = channel.clone();
        let handler = *handler;
        tokio::spawn(async move {
            broker.store.caught_up(crate::core::pull::CATCH_UP).await;
            if let Some(out) = handler(&broker, &mut ConnState::default(), &channel, frame)
                && !oneway
            {
                channel.send(out);
            }
        });
        return None;
    }
    let started = std::time::Instant::now();
    let out = handler(broker, conn, channel, frame);
    // Answered now (an answer that waits, for a long poll say, is not timed).
    if let Some(out) = &out {
        broker.metrics.called(code, out.header.code, oneway, started.elapsed());
    }
    let out = out?;
    if out.header.code != rs::SUCCESS {
        tracing::debug!(request = code, response = out.header.code, remark = ?out.header.remark, "request refused");
    }
    (!oneway).then_some(out)
}

/// Handles one name-server request from `from`, checked by `auth` if the name server has
/// access control (an embedded one shares its broker's); `None` for one-way requests.
pub fn namesrv_request(routes: &RouteTable, auth: Option<&Auth>, frame: &Frame, from: IpAddr) -> Option<Outgoing> {
    let (opaque, code) = (frame.header.opaque, frame.header.code);
    let out = match table::find(code) {
        Some(Request { handler: Handler::NameServer(handler), access, .. }) => {
            match auth.map_or(Ok(()), |a| a.admit(frame, access, from)) {
                Ok(()) => handler(routes, frame),
                Err(refused) => response::error(opaque, rs::NO_PERMISSION, refused.0),
            }
        }
        _ => response::not_supported(opaque, code),
    };
    (!frame.header.is_oneway()).then_some(out)
}
