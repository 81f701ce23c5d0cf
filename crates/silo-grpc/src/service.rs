//! The HTTP/2 routing of `apache.rocketmq.v2.MessagingService`: one table from method path to
//! handler, written by hand over tonic's server helpers (no generated code). A method Silo
//! does not serve answers gRPC UNIMPLEMENTED, as Apache's proxy does for the pull-style RPCs.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::server::Grpc;
use tonic::{Request, Response, Status, Streaming};
use tonic_prost::ProstCodec;

use crate::frontend::Frontend;
use crate::proto::{self, method};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The service as tonic's server takes it.
#[derive(Debug, Clone)]
pub struct MessagingService {
    frontend: Arc<Frontend>,
}

impl MessagingService {
    pub fn new(frontend: Arc<Frontend>) -> Self {
        Self { frontend }
    }
}

impl tonic::server::NamedService for MessagingService {
    const NAME: &'static str = proto::SERVICE;
}

/// A handler as a tower service over one request type.
struct Handler<F>(F);

impl<Req, Resp, F, Fut> tower_service::Service<Request<Req>> for Handler<F>
where
    F: FnMut(Request<Req>) -> Fut,
    Fut: Future<Output = Result<Response<Resp>, Status>>,
{
    type Response = Response<Resp>;
    type Error = Status;
    type Future = Fut;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Req>) -> Fut {
        (self.0)(req)
    }
}

/// The largest request of any method but SendMessage: names, handles and settings, never
/// bodies. (The decoder reserves a message's declared length before reading it, so each method
/// takes no more than it can need.)
pub const MAX_CONTROL_MESSAGE: usize = 4 << 20;

fn grpc<Resp, Req>(frontend: &Frontend, path: &str) -> Grpc<ProstCodec<Resp, Req>>
where
    Resp: prost::Message + Send + 'static,
    Req: prost::Message + Default + Send + 'static,
{
    let limit = if path == method::SEND_MESSAGE {
        frontend.config.max_inbound_message_size
    } else {
        MAX_CONTROL_MESSAGE.min(frontend.config.max_inbound_message_size)
    };
    Grpc::new(ProstCodec::default()).max_decoding_message_size(limit)
}

/// tonic refuses a request longer than the inbound limit with OUT_OF_RANGE; grpc-java, and so
/// Apache's proxy, with RESOURCE_EXHAUSTED, which is what the SDKs expect.
fn as_grpc_java_answers(mut response: http::Response<Body>) -> http::Response<Body> {
    const OUT_OF_RANGE: &str = "11";
    let too_long =
        response.headers().get("grpc-status").is_some_and(|v| v == OUT_OF_RANGE)
            && response.headers().get("grpc-message").and_then(|v| v.to_str().ok()).is_some_and(|m| {
                m.contains("message%20length%20too%20large") || m.contains("message length too large")
            });
    if too_long {
        response.headers_mut().insert("grpc-status", http::HeaderValue::from_static("8"));
    }
    response
}

macro_rules! unary {
    ($fe:expr, $req:expr, $handler:ident) => {{
        let fe = Arc::clone(&$fe);
        let path = $req.uri().path().to_owned();
        Box::pin(async move {
            let mut g = grpc(&fe, &path);
            let svc = Handler(move |r| {
                let fe = Arc::clone(&fe);
                async move { fe.$handler(r).await }
            });
            Ok(as_grpc_java_answers(g.unary(svc, $req).await))
        })
    }};
}

impl<B> tower_service::Service<http::Request<B>> for MessagingService
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<BoxError> + Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let fe = &self.frontend;
        match req.uri().path() {
            method::QUERY_ROUTE => unary!(fe, req, query_route),
            method::HEARTBEAT => unary!(fe, req, heartbeat),
            method::SEND_MESSAGE => unary!(fe, req, send_message),
            method::QUERY_ASSIGNMENT => unary!(fe, req, query_assignment),
            method::ACK_MESSAGE => unary!(fe, req, ack_message),
            method::FORWARD_MESSAGE_TO_DEAD_LETTER_QUEUE => unary!(fe, req, forward_to_dead_letter_queue),
            method::END_TRANSACTION => unary!(fe, req, end_transaction),
            method::RECALL_MESSAGE => unary!(fe, req, recall_message),
            method::NOTIFY_CLIENT_TERMINATION => unary!(fe, req, notify_client_termination),
            method::CHANGE_INVISIBLE_DURATION => unary!(fe, req, change_invisible_duration),
            method::RECEIVE_MESSAGE => {
                let fe = Arc::clone(fe);
                Box::pin(async move {
                    let mut g = grpc(&fe, method::RECEIVE_MESSAGE);
                    let svc = Handler(move |r| {
                        let fe = Arc::clone(&fe);
                        async move { fe.receive_message(r).await }
                    });
                    Ok(as_grpc_java_answers(g.server_streaming(svc, req).await))
                })
            }
            method::TELEMETRY => {
                let fe = Arc::clone(fe);
                Box::pin(async move {
                    let mut g = grpc(&fe, method::TELEMETRY);
                    let svc = Handler(move |r: Request<Streaming<proto::TelemetryCommand>>| {
                        let fe = Arc::clone(&fe);
                        async move { fe.telemetry(r).await }
                    });
                    Ok(g.streaming(svc, req).await)
                })
            }
            _ => Box::pin(async move { Ok(Status::unimplemented("").into_http()) }),
        }
    }
}
