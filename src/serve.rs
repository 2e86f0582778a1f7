//! One HTTP stack for every endpoint the tool serves (the live page, the Prometheus scrape
//! endpoint; the coordinator's routes use axum the same way): axum on the tool's tokio runtime,
//! or, when called outside one (a benchmark, a unit test), on a thread of its own with a
//! runtime of one thread.
//!
//! Owns: binding, serving and closing an endpoint. Never: what a route answers.

use std::net::SocketAddr;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// After a close, how long connections still open (an event stream) are given to end.
const GRACE: Duration = Duration::from_secs(1);

/// An endpoint being served, until `close`.
pub(crate) struct Served {
    pub(crate) addr: SocketAddr,
    stop: CancellationToken,
    /// Says when the endpoint stopped (its last responses written).
    ended: std::sync::mpsc::Receiver<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Binds `addr` now (so a port that cannot be had is said before anything runs) and serves
/// `router` there, each request knowing its client's address (`ConnectInfo<SocketAddr>`).
pub(crate) fn serve(addr: SocketAddr, router: axum::Router, name: &str) -> std::io::Result<Served> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let until = stop.clone();
    let (done, ended) = std::sync::mpsc::channel();
    let served = async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        let app = router.into_make_service_with_connect_info::<SocketAddr>();
        let server =
            axum::serve(listener, app).with_graceful_shutdown(until.clone().cancelled_owned());
        tokio::select! {
            _ = server => {}
            () = async { until.cancelled().await; tokio::time::sleep(GRACE).await } => {}
        }
        let _ = done.send(());
    };
    let thread =
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(served);
                None
            }
            Err(_) => Some(std::thread::Builder::new().name(name.to_string()).spawn(
                move || {
                    if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        rt.block_on(served);
                    }
                },
            )?),
        };
    Ok(Served {
        addr,
        stop,
        ended,
        thread,
    })
}

impl Served {
    /// Stops taking connections; responses being written are finished (a last scrape), and
    /// connections still open (an event stream) are given `GRACE` to end, not waited for
    /// beyond it.
    pub(crate) fn close(mut self) {
        self.stop.cancel();
        let ended = &self.ended;
        let wait = || {
            let _ = ended.recv_timeout(GRACE + Duration::from_millis(500));
        };
        // On the tool's runtime the connections' tasks need its workers to finish writing: this
        // one waits as a blocking thread, so the others go on.
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait);
            }
            _ => wait(),
        }
        if let Some(t) = self.thread.take().filter(|t| t.is_finished()) {
            let _ = t.join();
        }
    }
}
