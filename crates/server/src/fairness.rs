//! Fair shares of the server under load: no client, however slow or however many of its
//! connections, starves the others.
//!
//! Three limits, each against one way of holding the server:
//!
//! * **Connections per peer** (`max_connections_per_peer`): one address holds at most that many
//!   of the `max_connections` slots, so a slowloris from one host leaves the rest to everyone
//!   else. Counted by IP address (an IPv4-mapped IPv6 address is its IPv4 address).
//! * **A deadline on the request body** (`body_read_timeout_secs`): headers already have hyper's
//!   header-read timeout; a body that trickles in is cut off at the deadline and answered 408,
//!   so a slow upload holds a slot seconds, not the whole request timeout.
//! * **Requests in flight per route class**: the sign-in and page routes, which need no
//!   credential to reach, may use at most a quarter of `max_connections` at once and the runner
//!   API half; `/health`, `/ready` and `/metrics` are never limited. A flood of logins is
//!   answered 503 at once past its share and never takes the runners' or the probes' turn.
//!
//! Architecture invariant: every limit here answers at once (503 or 408 with what to do); none
//! queues a request, so a held slot is always one a client is using.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse as _, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::Semaphore;

use crate::error::ApiError;
use crate::state::AppState;

/// How many connections each peer holds now; a slot is given back when its [`PeerSlot`] drops.
#[derive(Debug)]
pub(crate) struct PeerConnections {
    held: Mutex<HashMap<IpAddr, usize>>,
    limit: usize,
}

/// One connection of one peer, counted while it lives.
#[derive(Debug)]
pub(crate) struct PeerSlot {
    peers: Arc<PeerConnections>,
    ip: IpAddr,
}

impl PeerConnections {
    pub(crate) fn new(limit: usize) -> Arc<PeerConnections> {
        Arc::new(PeerConnections {
            held: Mutex::new(HashMap::new()),
            limit,
        })
    }

    /// A slot for a new connection from `ip`, or `None` when that peer holds its limit.
    pub(crate) fn open(self: &Arc<Self>, ip: IpAddr) -> Option<PeerSlot> {
        let ip = ip.to_canonical();
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = held.entry(ip).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            peers: Arc::clone(self),
            ip,
        })
    }

    /// How many connections `ip` holds now.
    #[cfg(test)]
    pub(crate) fn held_by(&self, ip: IpAddr) -> usize {
        let held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        held.get(&ip.to_canonical()).copied().unwrap_or(0)
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut held = self
            .peers
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = held.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                // A peer that left holds no memory: the table is as large as the peers
                // connected now, never as all the peers ever seen.
                held.remove(&self.ip);
            }
        }
    }
}

/// What a route is for, as far as sharing the server goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouteClass {
    /// `/health`, `/ready`, `/metrics`: cheap, and what tells an operator the server lives.
    Probe,
    /// `/v1/…`: the runners, each with its avatar's token.
    Runner,
    /// Everything a browser reaches: the sign-in forms, the dashboard and the console.
    Pages,
}

impl RouteClass {
    pub(crate) fn of(path: &str) -> RouteClass {
        match path {
            "/health" | "/ready" | "/metrics" => RouteClass::Probe,
            _ if path.starts_with("/v1/") => RouteClass::Runner,
            _ => RouteClass::Pages,
        }
    }
}

/// The requests in flight each route class may have at once.
#[derive(Debug)]
pub struct ClassLimits {
    runner: Arc<Semaphore>,
    pages: Arc<Semaphore>,
    runner_share: usize,
    pages_share: usize,
}

impl ClassLimits {
    /// The shares of a server taking `max_connections`: half for the runners, a quarter for
    /// the pages (at least one each).
    pub fn new(max_connections: usize) -> ClassLimits {
        let runner_share = (max_connections / 2).max(1);
        let pages_share = (max_connections / 4).max(1);
        ClassLimits {
            runner: Arc::new(Semaphore::new(runner_share)),
            pages: Arc::new(Semaphore::new(pages_share)),
            runner_share,
            pages_share,
        }
    }

    fn semaphore(&self, class: RouteClass) -> Option<(&Arc<Semaphore>, usize)> {
        match class {
            RouteClass::Probe => None,
            RouteClass::Runner => Some((&self.runner, self.runner_share)),
            RouteClass::Pages => Some((&self.pages, self.pages_share)),
        }
    }
}

/// The middleware: a request takes its class's share or hears 503 at once, and its body must
/// arrive within `body_read_timeout_secs`.
pub(crate) async fn fair_share(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let class = RouteClass::of(request.uri().path());
    let permit = match state.class_limits().semaphore(class) {
        None => None,
        Some((semaphore, share)) => match Arc::clone(semaphore).try_acquire_owned() {
            Ok(permit) => Some(permit),
            Err(_) => return over_share(class, share),
        },
    };
    let secs = state.config().body_read_timeout_secs;
    let request = request.map(|body| Body::new(DeadlineBody::new(body, secs)));
    let response = next.run(request).await;
    drop(permit);
    response
}

fn over_share(class: RouteClass, share: usize) -> Response {
    let what = match class {
        RouteClass::Runner => "runner requests",
        _ => "page and sign-in requests",
    };
    let mut response = ApiError::unavailable(format!(
        "the server is serving as many {what} as it takes at once ({share}, a share of max_connections); try again in a second"
    ))
    .into_response();
    response.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("1"),
    );
    response
}

/// The error a body gives when its deadline passed before its last byte arrived.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error(
    "the request body did not arrive within {secs} s (body_read_timeout_secs); nothing was stored — send it again at once, not byte by byte"
)]
pub(crate) struct BodyDeadline {
    pub secs: u64,
}

impl BodyDeadline {
    /// The deadline that ended `err`'s body, if one did (the error as a handler sees it, with
    /// the deadline somewhere in its sources).
    pub(crate) fn in_error(err: &(dyn std::error::Error + 'static)) -> Option<BodyDeadline> {
        let mut current = Some(err);
        while let Some(err) = current {
            if let Some(deadline) = err.downcast_ref::<BodyDeadline>() {
                return Some(*deadline);
            }
            current = err.source();
        }
        None
    }

    pub(crate) fn to_api_error(self) -> ApiError {
        ApiError::request_timeout(self.to_string())
    }
}

/// A request body that fails with [`BodyDeadline`] once its deadline passes. Written by hand:
/// tower-http's `RequestBodyTimeout` restarts its clock at every frame, so a client sending a
/// byte a second would never meet it.
///
/// The clock starts when the handler first reads the body, not when the request arrives: a
/// request waiting its turn for the [`BodyBudget`] has not been slow.
struct DeadlineBody {
    inner: Body,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    secs: u64,
}

impl DeadlineBody {
    fn new(inner: Body, secs: u64) -> DeadlineBody {
        DeadlineBody {
            inner,
            deadline: None,
            secs,
        }
    }
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let secs = this.secs;
        let deadline = this
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_secs(secs))));
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(BodyDeadline {
                secs: this.secs,
            })))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The bytes of request bodies the server holds at once, across every client: a body waits for
/// its share before it is read, so what many large requests at once cost is bounded by the
/// budget, not by how many arrive. Counted in KiB.
#[derive(Debug)]
pub struct BodyBudget {
    kib: Arc<Semaphore>,
    total_kib: usize,
}

/// A body's share of the [`BodyBudget`], given back when dropped (after the request's value,
/// which costs about as much as its body, is no longer needed).
#[derive(Debug)]
pub struct BudgetShare {
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl BodyBudget {
    pub fn new(bytes: usize) -> BodyBudget {
        let total_kib = bytes.div_ceil(1024).max(1);
        BodyBudget {
            kib: Arc::new(Semaphore::new(total_kib)),
            total_kib,
        }
    }

    /// Waits until `bytes` more may be held. Bodies under 64 KiB are not counted: they cost
    /// little, and a runner's small requests must never wait behind a large one.
    pub async fn share(&self, bytes: usize) -> BudgetShare {
        if bytes < SMALL_BODY_BYTES {
            return BudgetShare { _permit: None };
        }
        let kib = bytes.div_ceil(1024).min(self.total_kib);
        let kib = u32::try_from(kib).unwrap_or(u32::MAX);
        let permit = Arc::clone(&self.kib).acquire_many_owned(kib).await.ok();
        BudgetShare { _permit: permit }
    }
}

/// The server's body budget: room for one largest turn (32 MiB) and an event batch (8 MiB)
/// beside it. With what the bodies become while they are recorded (about three times their
/// size at the peak, measured by `load::one_token_s_costliest_requests_…`), this bounds what
/// requests cost the server's memory: under 300 MB whatever one token, or all of them, send.
pub(crate) const BODY_BUDGET_BYTES: usize = 40 * 1024 * 1024;

/// Below this a body is read without waiting for the budget (and parsed on the request's own
/// task: it is too small to hold a runtime thread).
pub(crate) const SMALL_BODY_BYTES: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn a_peer_holds_at_most_its_limit_and_a_closed_connection_gives_its_slot_back() {
        let peers = PeerConnections::new(2);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let first = peers.open(a).unwrap();
        let _second = peers.open(a).unwrap();
        assert!(peers.open(a).is_none(), "a third connection of one peer");
        assert!(peers.open(b).is_some(), "another peer is not held back");
        drop(first);
        assert_eq!(peers.held_by(a), 1);
        assert!(peers.open(a).is_some());
    }

    #[test]
    fn an_ipv4_mapped_address_is_counted_as_its_ipv4_peer() {
        let peers = PeerConnections::new(1);
        let _slot = peers.open("127.0.0.1".parse().unwrap()).unwrap();
        assert!(peers.open("::ffff:127.0.0.1".parse().unwrap()).is_none());
    }

    #[test]
    fn a_peer_that_left_is_forgotten() {
        let peers = PeerConnections::new(4);
        drop(peers.open("10.0.0.1".parse().unwrap()));
        assert!(peers.held.lock().unwrap().is_empty());
    }

    #[test]
    fn routes_fall_into_probes_runners_and_pages() {
        assert_eq!(RouteClass::of("/health"), RouteClass::Probe);
        assert_eq!(RouteClass::of("/metrics"), RouteClass::Probe);
        assert_eq!(RouteClass::of("/v1/events"), RouteClass::Runner);
        assert_eq!(RouteClass::of("/dashboard/login"), RouteClass::Pages);
        assert_eq!(RouteClass::of("/console/login"), RouteClass::Pages);
        assert_eq!(RouteClass::of("/v1x"), RouteClass::Pages);
    }

    #[test]
    fn the_shares_are_half_and_a_quarter_of_the_connections_and_never_zero() {
        let limits = ClassLimits::new(512);
        assert_eq!((limits.runner_share, limits.pages_share), (256, 128));
        let tiny = ClassLimits::new(1);
        assert_eq!((tiny.runner_share, tiny.pages_share), (1, 1));
    }

    #[tokio::test]
    async fn large_bodies_wait_for_their_share_of_the_budget_and_small_ones_never_wait() {
        let budget = BodyBudget::new(1024 * 1024);
        let first = budget.share(800 * 1024).await;
        let second = budget.share(800 * 1024);
        tokio::pin!(second);
        assert!(
            futures_util::poll!(second.as_mut()).is_pending(),
            "a second large body waits"
        );
        let small = budget.share(10 * 1024).await;
        drop(small);
        drop(first);
        let _second = second.await;
        // A body larger than the whole budget still gets in, alone.
        drop(_second);
        let _alone = budget.share(8 * 1024 * 1024).await;
    }

    #[tokio::test]
    async fn a_body_that_trickles_past_its_deadline_fails_naming_the_setting() {
        // One byte, then nothing: the sender is kept, so the body never ends by itself.
        let (sender, receiver) =
            tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(1);
        sender
            .send(Ok(Frame::data(Bytes::from_static(b"{"))))
            .await
            .unwrap();
        let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|item| (item, receiver))
        });
        let trickling = Body::new(http_body_util::StreamBody::new(stream));
        let body = Body::new(DeadlineBody::new(trickling, 1));
        let err = axum::body::to_bytes(body, 1024).await.unwrap_err();
        let deadline = BodyDeadline::in_error(&err).expect("the deadline is the cause");
        assert_eq!(deadline.secs, 1);
        assert!(
            deadline
                .to_string()
                .contains("within 1 s (body_read_timeout_secs)")
        );
        assert_eq!(deadline.to_api_error().status, StatusCode::REQUEST_TIMEOUT);
        drop(sender);
    }
}
