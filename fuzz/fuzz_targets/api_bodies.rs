//! The runner protocol's bodies: whatever a runner (or anyone holding a token) sends to a `/v1/`
//! endpoint, the server answers without panicking and never with a server error — bad input is
//! a 4xx with a JSON body.
#![no_main]

use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{Method, Request};
use libfuzzer_sys::fuzz_target;
use mindrune_server::router;
use mindrune_server::AppState;
use mindrune_server::secret_digest;
use mindrune_server::ServerConfig;
use mindrune_store::{Directory as _, SqliteStore};
use tower::ServiceExt as _;

const TOKEN: &str = "mr_runner_fuzz";

struct Fixture {
    runtime: tokio::runtime::Runtime,
    state: AppState,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let store = SqliteStore::open_in_memory().expect("an in-memory library");
        // The library keeps an owner's key only as its digest.
        let owner = store
            .create_owner("fuzz", &secret_digest("mrk_fuzz_key"), 0)
            .unwrap();
        let agent = store.create_agent(owner.id, "buzz", "/work", 0).unwrap();
        store
            .issue_runner_token(owner.id, agent.id, &secret_digest(TOKEN), 0)
            .unwrap();
        Fixture {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            state: AppState::new(Box::new(store), ServerConfig::default()),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let path = match which % 5 {
        0 => "/v1/events",
        1 => "/v1/turns",
        2 => "/v1/mirror",
        3 => "/v1/state",
        _ => "/v1/wrapup",
    };
    let fixture = fixture();
    let request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_vec()))
        .unwrap();
    let response = fixture
        .runtime
        .block_on(router(fixture.state.clone()).oneshot(request))
        .unwrap();
    assert!(
        !response.status().is_server_error(),
        "{path} answered {} to {:?}",
        response.status(),
        String::from_utf8_lossy(body)
    );
});
