//! The owner's dashboard and the operator's console, in process: every request goes through
//! the real router (`router`) over an in-memory library built with the `Store` API.
//!
//! Two families: ada's (avatar buzz: a shared script, a headed one at 3/5 runs, a private one
//! with two versions, one whose name and goal are markup) and bob's (avatar rex, one script),
//! so every test can also ask for the other family's ids.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use mindrune_engine::now_millis;
use mindrune_server::AppState;
use mindrune_server::CONTENT_SECURITY_POLICY;
use mindrune_server::ServerConfig;
use mindrune_server::{new_secret, secret_digest};
use mindrune_store::Directory as _;
use mindrune_store::Recording as _;
use mindrune_store::{
    AgentId, HeaderState, NewUse, Outcome, OwnerId, ScriptSnapshot, SkillHeader, SkillId,
    SqliteStore, Standing, VersionId,
};
use proptest::prelude::*;
use tower::ServiceExt as _;

/// The family tag as the dashboard writes it: its icon (inline SVG, no emoji font needed), then
/// the word.
const FAMILY_TAG: &str = "</svg>Family</span>";

/// A private tag saying `words`, after its padlock icon.
fn private_tag(words: &str) -> String {
    format!("</svg>{words}</span>")
}

const ADA_KEY: &str = "mrk_ada0123456789abcdef0123456789abcdef0123456789abc";
const BOB_KEY: &str = "mrk_b0b0123456789abcdef0123456789abcdef0123456789abc";

struct World {
    state: AppState,
    ada: OwnerId,
    buzz: AgentId,
    rex: AgentId,
    chop: SkillId,
    fish: SkillId,
    mine: SkillId,
    bob_skill: SkillId,
    operator_token: String,
}

fn snapshot(
    agent: AgentId,
    bot: &str,
    name: &str,
    code: &str,
    header: SkillHeader,
) -> ScriptSnapshot {
    ScriptSnapshot {
        agent,
        path: format!("bots/{bot}/{name}.ts"),
        name: name.into(),
        digest: mindrune_core::sha256(code.as_bytes()),
        code: code.into(),
        tags: vec![],
        header,
        file_digest: None,
        origin: None,
    }
}

fn headed(goal: &str) -> SkillHeader {
    SkillHeader {
        state: HeaderState::Skill,
        goal: Some(goal.into()),
        ..SkillHeader::default()
    }
}

fn run(version: VersionId, agent: AgentId, ok: bool, at: i64) -> NewUse {
    NewUse {
        version,
        agent,
        outcome: Outcome {
            at,
            ok,
            duration_ms: 60_000,
            ..Outcome::default()
        },
        source: "shell".into(),
        call: None,
        output: None,
        event_id: None,
        recorded_at: at,
    }
}

fn world() -> World {
    let store = SqliteStore::open_in_memory().unwrap();
    let now = now_millis();
    let ada = store
        .create_owner("ada", &secret_digest(ADA_KEY), now)
        .unwrap();
    let bob = store
        .create_owner("bob", &secret_digest(BOB_KEY), now)
        .unwrap();
    let buzz = store.create_agent(ada.id, "buzz", "/ws/ada", now).unwrap();
    let rex = store.create_agent(bob.id, "rex", "/ws/bob", now).unwrap();
    let mut at = now - 3_600_000;
    let mut record = |owner: OwnerId, version: VersionId, agent: AgentId, ok: bool| {
        at += 60_000;
        store
            .record_use(owner, &run(version, agent, ok, at))
            .unwrap();
    };

    // chop-oaks: headed, 5 clean runs, shared. Its code holds the owner's key, which the
    // dashboard must never show.
    let chop_code = format!("await chop(); // key {ADA_KEY}\nconst a = 1 < 2 && 3 > 2;\n");
    let chop = store
        .match_script(
            ada.id,
            &snapshot(
                buzz.id,
                "buzz",
                "chop-oaks",
                &chop_code,
                headed("chop oaks west of Draynor and bank the logs"),
            ),
            now,
        )
        .unwrap();
    for _ in 0..5 {
        record(ada.id, chop.version.id, buzz.id, true);
    }
    // fish: headed, 3 clean runs: 3/5, not shared yet.
    let fish = store
        .match_script(
            ada.id,
            &snapshot(
                buzz.id,
                "buzz",
                "fish",
                "await fish();\n",
                headed("fish shrimps"),
            ),
            now,
        )
        .unwrap();
    for _ in 0..3 {
        record(ada.id, fish.version.id, buzz.id, true);
    }
    // mine: no header; v1 ran cleanly 5 times, v2 failed twice, so v1 is the best.
    let mine = store
        .match_script(
            ada.id,
            &snapshot(
                buzz.id,
                "buzz",
                "mine",
                "await mine(1);\n",
                SkillHeader::default(),
            ),
            now,
        )
        .unwrap();
    for _ in 0..5 {
        record(ada.id, mine.version.id, buzz.id, true);
    }
    let mine2 = store
        .match_script(
            ada.id,
            &snapshot(
                buzz.id,
                "buzz",
                "mine",
                "await mine(2);\n",
                SkillHeader::default(),
            ),
            now,
        )
        .unwrap();
    for _ in 0..2 {
        record(ada.id, mine2.version.id, buzz.id, false);
    }
    // A script whose name and goal are markup.
    let evil = store
        .match_script(
            ada.id,
            &snapshot(
                buzz.id,
                "buzz",
                "<script>alert(1)</script>",
                "x();\n",
                SkillHeader {
                    state: HeaderState::Skill,
                    goal: Some(
                        "<script>alert(\"goal\")</script> & <img src=x onerror=alert(2)>".into(),
                    ),
                    ..SkillHeader::default()
                },
            ),
            now,
        )
        .unwrap();
    for _ in 0..5 {
        record(ada.id, evil.version.id, buzz.id, true);
    }
    // bob's family.
    let bob_skill = store
        .match_script(
            bob.id,
            &snapshot(
                rex.id,
                "rex",
                "bobs-secret-route",
                "walk();\n",
                headed("bob's"),
            ),
            now,
        )
        .unwrap();
    record(bob.id, bob_skill.version.id, rex.id, true);

    let operator_token = new_secret("mr_operator_");
    store
        .issue_operator_token(&secret_digest(&operator_token), now)
        .unwrap();

    let state = AppState::new(Box::new(store), ServerConfig::default());
    World {
        state,
        ada: ada.id,
        buzz: buzz.id,
        rex: rex.id,
        chop: chop.skill.id,
        fish: fish.skill.id,
        mine: mine.skill.id,
        bob_skill: bob_skill.skill.id,
        operator_token,
    }
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn location(&self) -> &str {
        self.headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect()
    }

    /// The `name=value` part of the `Set-Cookie` for `name`.
    fn cookie(&self, name: &str) -> Option<String> {
        self.set_cookies()
            .into_iter()
            .find(|c| c.starts_with(&format!("{name}=")))
            .map(|c| c.split(';').next().unwrap().to_string())
    }
}

/// What the request helpers serve from: a test world's server state.
trait Served {
    fn app_state(&self) -> &AppState;
}

impl Served for World {
    fn app_state(&self) -> &AppState {
        &self.state
    }
}

async fn send(world: &impl Served, request: Request<Body>) -> Answer {
    let response = mindrune_server::router(world.app_state().clone())
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

async fn get(world: &impl Served, path: &str, cookie: Option<&str>) -> Answer {
    let mut request = Request::get(path);
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    send(world, request.body(Body::empty()).unwrap()).await
}

async fn post(world: &impl Served, path: &str, cookie: Option<&str>, form: &str) -> Answer {
    let mut request =
        Request::post(path).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    send(world, request.body(Body::from(form.to_string())).unwrap()).await
}

/// The value of the first hidden `csrf` input of a page.
fn csrf_of(html: &str) -> String {
    let at = html
        .find("name=\"csrf\" value=\"")
        .expect("the page has a csrf field")
        + "name=\"csrf\" value=\"".len();
    html[at..].split('"').next().unwrap().to_string()
}

/// Text as the pages escape it (maud's `&`, `<`, `>` and `"`; a `'` needs none in element
/// content or a double-quoted attribute).
fn page_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn form_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Logs in as `name` with `key` the way a browser does: open the login page, post its form.
async fn try_login(world: &impl Served, name: &str, key: &str) -> Answer {
    let page = get(world, "/dashboard/login", None).await;
    assert_eq!(page.status, StatusCode::OK);
    let guard = page
        .cookie("mindrune_login")
        .expect("the login page sets its form cookie");
    let csrf = csrf_of(&page.body);
    post(
        world,
        "/dashboard/login",
        Some(&guard),
        &format!(
            "name={}&key={}&csrf={}",
            form_escape(name),
            form_escape(key),
            form_escape(&csrf)
        ),
    )
    .await
}

/// A logged-in session: its cookie (`mindrune_session=…`) and its CSRF token.
async fn login(world: &World) -> (String, String) {
    let answer = try_login(world, "ada", ADA_KEY).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let cookie = answer.cookie("mindrune_session").expect("a session cookie");
    let page = get(world, "/dashboard", Some(&cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    let csrf = csrf_of(&page.body);
    (cookie, csrf)
}

fn eager_now(world: &World) -> bool {
    world.state.store().owner(world.ada).unwrap().eager_sharing
}

// -------------------------------------------------------------------------------------------

#[tokio::test]
async fn the_root_and_unauthenticated_pages_lead_to_the_login() {
    let world = world();
    let root = get(&world, "/", None).await;
    assert_eq!(root.status, StatusCode::SEE_OTHER);
    assert_eq!(root.location(), "/dashboard");
    for path in [
        "/dashboard".to_string(),
        format!("/dashboard/avatars/{}", world.buzz.0),
        format!("/dashboard/skills/{}/code", world.chop.0),
    ] {
        let answer = get(&world, &path, None).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(answer.location(), "/dashboard/login", "{path}");
        let stale = get(&world, &path, Some("mindrune_session=mr_session_nope")).await;
        assert_eq!(stale.location(), "/dashboard/login", "{path}");
    }
}

#[tokio::test]
async fn the_owner_key_logs_in_with_a_strict_http_only_session_cookie() {
    let world = world();
    let answer = try_login(&world, "ada", ADA_KEY).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(answer.location(), "/dashboard");
    let set = answer
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("mindrune_session="))
        .unwrap();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/;"] {
        assert!(set.contains(part), "{set}");
    }
    assert!(!set.contains("Secure"), "no TLS configured: {set}");
    let secret = set
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("mindrune_session=");
    assert!(secret.starts_with("mr_session_"));
    // Only the digest is stored: the cookie's secret finds the session, its digest does not.
    let store = world.state.store();
    assert!(
        store
            .session(&secret_digest(secret), now_millis())
            .unwrap()
            .is_some()
    );
    assert!(store.session(secret, now_millis()).unwrap().is_none());
    let page = get(
        &world,
        "/dashboard",
        Some(&format!("mindrune_session={secret}")),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Your family"));
    assert!(page.body.contains("buzz"));
    assert!(page.body.contains("4 scripts · 2 family"), "{}", page.body);
}

#[tokio::test]
async fn a_wrong_name_and_a_wrong_key_get_the_same_answer() {
    let world = world();
    let wrong_key = try_login(&world, "ada", BOB_KEY).await;
    let wrong_name = try_login(&world, "nobody", ADA_KEY).await;
    for answer in [&wrong_key, &wrong_name] {
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        assert!(answer.cookie("mindrune_session").is_none());
        assert!(
            answer
                .body
                .contains("That owner name and key do not match an account.")
        );
    }
    let message = |body: &str| {
        body[body.find("role=\"alert\"").unwrap()..]
            .split("</p>")
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(message(&wrong_key.body), message(&wrong_name.body));
}

#[tokio::test]
async fn the_stored_digest_does_not_log_in_and_a_replaced_key_stops_working() {
    let world = world();
    let store = world.state.store();
    let ada = store.owner_by_name("ada").unwrap().unwrap();
    // The library holds the key's digest only: whoever reads it there cannot log in with it.
    assert_eq!(ada.key_digest, secret_digest(ADA_KEY));
    let with_digest = try_login(&world, "ada", &ada.key_digest).await;
    assert_eq!(with_digest.status, StatusCode::UNAUTHORIZED);
    assert!(with_digest.cookie("mindrune_session").is_none());
    // `mindrune owner key ada` replaces the key: the old one is refused, the new one logs in.
    let new_key = "mrk_0badc0ffee0123456789abcdef0123456789abcdef012345";
    store
        .replace_owner_key(ada.id, &secret_digest(new_key))
        .unwrap();
    assert_eq!(
        try_login(&world, "ada", ADA_KEY).await.status,
        StatusCode::UNAUTHORIZED
    );
    let answer = try_login(&world, "ada", new_key).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert!(answer.cookie("mindrune_session").is_some());
}

#[tokio::test]
async fn a_login_without_its_form_token_is_refused() {
    let world = world();
    let answer = post(
        &world,
        "/dashboard/login",
        None,
        &format!("name=ada&key={ADA_KEY}&csrf=x"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(answer.cookie("mindrune_session").is_none());
    let page = get(&world, "/dashboard/login", None).await;
    let guard = page.cookie("mindrune_login").unwrap();
    let answer = post(
        &world,
        "/dashboard/login",
        Some(&guard),
        &format!("name=ada&key={ADA_KEY}&csrf=mr_login_wrong"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_planted_login_cookie_with_its_own_value_as_the_token_is_refused() {
    // An attacker who can plant a cookie (a sibling subdomain, plain HTTP) used to pass with
    // any well-formed value repeated in the form: the token now belongs to a pre-session the
    // server itself opened.
    let world = world();
    let planted = format!("mr_login_{}", "7".repeat(64));
    let answer = post(
        &world,
        "/dashboard/login",
        Some(&format!("mindrune_login={planted}")),
        &format!("name=ada&key={ADA_KEY}&csrf={planted}"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(answer.cookie("mindrune_session").is_none());
    // The login page's own cookie and token still log in.
    let page = get(&world, "/dashboard/login", None).await;
    let guard = page.cookie("mindrune_login").unwrap();
    let token = csrf_of(&page.body);
    assert!(token.starts_with("mr_csrf_"), "{token}");
    assert_ne!(
        guard.split_once('=').unwrap().1,
        token,
        "the cookie is not the token"
    );
    let answer = post(
        &world,
        "/dashboard/login",
        Some(&guard),
        &format!("name=ada&key={ADA_KEY}&csrf={token}"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert!(answer.cookie("mindrune_session").is_some());
}

#[tokio::test]
async fn a_form_body_over_the_limit_is_refused() {
    let world = world();
    let (cookie, csrf) = login(&world).await;
    let huge = format!("csrf={csrf}&eager=on&back={}", "a".repeat(64 * 1024));
    let answer = post(&world, "/dashboard/eager", Some(&cookie), &huge).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(!eager_now(&world), "nothing changed");
}

#[tokio::test]
async fn the_eager_switch_moves_the_bar_and_the_progress_lines_at_once() {
    let world = world();
    let (cookie, csrf) = login(&world).await;
    let avatar = format!("/dashboard/avatars/{}", world.buzz.0);
    let before = get(&world, &avatar, Some(&cookie)).await;
    assert!(
        before.body.contains("fish.ts: 3/5 runs, score "),
        "{}",
        before.body
    );
    assert!(before.body.contains("/600 — not shared yet"));
    assert!(
        before
            .body
            .contains("shared after 5 runs of its current version and a score of 600")
    );

    let answer = post(
        &world,
        "/dashboard/eager",
        Some(&cookie),
        &format!("csrf={csrf}&eager=on&back={}", form_escape(&avatar)),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(answer.location(), avatar);
    assert!(eager_now(&world));
    let after = get(&world, &avatar, Some(&cookie)).await;
    assert!(
        after.body.contains("Eager family sharing is on"),
        "{}",
        after.body
    );
    assert!(
        after
            .body
            .contains("shared after 3 runs of its current version and a score of 500")
    );
    assert!(
        after.body.contains("fish.ts: 3/3 runs, score "),
        "{}",
        after.body
    );
    assert!(after.body.contains("/500"));
    assert!(after.body.contains("id=\"eager\" checked"));

    // Unticked, the checkbox sends nothing: that is "off".
    let answer = post(
        &world,
        "/dashboard/eager",
        Some(&cookie),
        &format!("csrf={csrf}"),
    )
    .await;
    assert_eq!(answer.location(), "/dashboard");
    assert!(!eager_now(&world));
    // A value that is neither on nor off changes nothing.
    let answer = post(
        &world,
        "/dashboard/eager",
        Some(&cookie),
        &format!("csrf={csrf}&eager=maybe"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(!eager_now(&world));
    // The way back is only ever a dashboard page.
    let answer = post(
        &world,
        "/dashboard/eager",
        Some(&cookie),
        &format!("csrf={csrf}&back=https%3A%2F%2Fevil.example%2F"),
    )
    .await;
    assert_eq!(answer.location(), "/dashboard");
}

#[tokio::test]
async fn a_missing_or_wrong_csrf_token_is_403_and_changes_nothing() {
    let world = world();
    let (cookie, csrf) = login(&world).await;
    for form in [
        "eager=on".to_string(),
        "eager=on&csrf=".to_string(),
        "eager=on&csrf=mr_csrf_wrong".to_string(),
        format!("eager=on&csrf={csrf}x"),
    ] {
        let answer = post(&world, "/dashboard/eager", Some(&cookie), &form).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{form}");
        assert!(
            answer.body.contains("Nothing was changed"),
            "{}",
            answer.body
        );
        assert!(!eager_now(&world), "{form}");
    }
    // Logging out needs the token too; without it the session lives on.
    let answer = post(&world, "/dashboard/logout", Some(&cookie), "csrf=nope").await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert_eq!(
        get(&world, "/dashboard", Some(&cookie)).await.status,
        StatusCode::OK
    );
    // Without a session a form changes nothing either.
    let answer = post(
        &world,
        "/dashboard/eager",
        None,
        &format!("eager=on&csrf={csrf}"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert!(!eager_now(&world));
}

#[tokio::test]
async fn logging_out_ends_the_session() {
    let world = world();
    let (cookie, csrf) = login(&world).await;
    let answer = post(
        &world,
        "/dashboard/logout",
        Some(&cookie),
        &format!("csrf={csrf}"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(answer.location(), "/dashboard/login");
    assert!(
        answer
            .set_cookies()
            .iter()
            .any(|c| c.starts_with("mindrune_session=;") && c.contains("Max-Age=0"))
    );
    assert_eq!(
        get(&world, "/dashboard", Some(&cookie)).await.location(),
        "/dashboard/login"
    );
}

#[tokio::test]
async fn another_familys_avatar_and_skill_are_not_found() {
    let world = world();
    let (cookie, _) = login(&world).await;
    for path in [
        format!("/dashboard/avatars/{}", world.rex.0),
        format!("/dashboard/skills/{}/code", world.bob_skill.0),
        format!("/dashboard/skills/{}/code?download=1", world.bob_skill.0),
        format!("/dashboard/skills/{}/code?version=1", world.bob_skill.0),
        "/dashboard/avatars/999999".to_string(),
        "/dashboard/avatars/abc".to_string(),
        "/dashboard/avatars/-1".to_string(),
        format!("/dashboard/skills/{}/code?version=99", world.chop.0),
    ] {
        let answer = get(&world, &path, Some(&cookie)).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{path}");
        assert!(answer.body.contains("in your family"), "{path}");
        assert!(
            !answer.body.contains("bobs-secret-route") && !answer.body.contains("walk()"),
            "{path}"
        );
    }
    let family = get(&world, "/dashboard", Some(&cookie)).await;
    assert!(!family.body.contains("rex"));
}

#[tokio::test]
async fn code_is_a_page_with_a_title_and_a_way_back_plain_text_on_asking_and_downloads_as_a_ts_file()
 {
    let world = world();
    let (cookie, _) = login(&world).await;
    // To read: a page with the file and version as its title, a way back, the code escaped.
    let page = get(
        &world,
        &format!("/dashboard/skills/{}/code?version=1", world.chop.0),
        Some(&cookie),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{:?}",
        page.headers
    );
    assert!(
        page.body.contains("<title>chop-oaks.ts v1"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains(&format!(
            "<a href=\"/dashboard/skills/{}\">← Back to chop-oaks.ts</a>",
            world.chop.0
        )),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("1 &lt; 2 &amp;&amp; 3 &gt; 2"),
        "{}",
        page.body
    );
    assert!(!page.body.contains(ADA_KEY));
    // Plain text on asking (what a script reads).
    let view = get(
        &world,
        &format!("/dashboard/skills/{}/code?raw=1", world.chop.0),
        Some(&cookie),
    )
    .await;
    assert_eq!(view.status, StatusCode::OK);
    assert_eq!(
        view.headers[header::CONTENT_TYPE],
        "text/plain; charset=utf-8"
    );
    assert_eq!(view.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert!(view.headers.get(header::CONTENT_DISPOSITION).is_none());
    assert!(view.body.starts_with("await chop();"), "{}", view.body);
    assert!(
        view.body.contains("1 < 2 && 3 > 2"),
        "text, not escaped: {}",
        view.body
    );
    assert!(
        !view.body.contains(ADA_KEY),
        "the owner's key is scrubbed: {}",
        view.body
    );

    let download = get(
        &world,
        &format!("/dashboard/skills/{}/code?download=1", world.chop.0),
        Some(&cookie),
    )
    .await;
    assert_eq!(download.status, StatusCode::OK);
    assert_eq!(
        download.headers[header::CONTENT_DISPOSITION],
        "attachment; filename=\"chop-oaks.ts\""
    );
    assert_eq!(download.body, view.body);

    let v1 = get(
        &world,
        &format!(
            "/dashboard/skills/{}/code?version=1&download=1",
            world.mine.0
        ),
        Some(&cookie),
    )
    .await;
    assert_eq!(v1.body, "await mine(1);\n");
    assert_eq!(
        v1.headers[header::CONTENT_DISPOSITION],
        "attachment; filename=\"mine-v1.ts\""
    );
    let latest = get(
        &world,
        &format!("/dashboard/skills/{}/code?raw=1", world.mine.0),
        Some(&cookie),
    )
    .await;
    assert_eq!(latest.body, "await mine(2);\n");

    let bad = get(
        &world,
        &format!("/dashboard/skills/{}/code?version=x", world.chop.0),
        Some(&cookie),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_avatar_page_shows_each_script_as_one_entry() {
    let world = world();
    let (cookie, _) = login(&world).await;
    let page = get(
        &world,
        &format!("/dashboard/avatars/{}", world.buzz.0),
        Some(&cookie),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    // Shared scripts carry the family tag; the headed one shows its way to being shared.
    let chop = section(body, world.chop);
    assert!(chop.contains(FAMILY_TAG), "{chop}");
    assert!(chop.contains("v1 · 1 version"), "{chop}");
    assert!(chop.contains("5 runs"), "{chop}");
    assert!(chop.contains("chop oaks west of Draynor and bank the logs"));
    assert!(chop.contains("data-copy=\"code-"));
    assert!(chop.contains("?download=1"));
    assert!(!chop.contains(ADA_KEY));
    assert!(
        chop.contains("1 &lt; 2 &amp;&amp; 3 &gt; 2"),
        "code is escaped text: {chop}"
    );
    let fish = section(body, world.fish);
    assert!(fish.contains(&private_tag("Not shared yet")), "{fish}");
    assert!(fish.contains("fish.ts: 3/5 runs"), "{fish}");
    // A private script with two versions: the latest is shown, the better older one named.
    let mine = section(body, world.mine);
    assert!(mine.contains("v2 · 2 versions"), "{mine}");
    assert!(mine.contains("best: v1, "), "{mine}");
    assert!(
        !mine.contains("not shared yet"),
        "no header, nothing about sharing: {mine}"
    );
    assert!(
        mine.find("data-label=\"Version\">v2").unwrap()
            < mine.find("data-label=\"Version\">v1").unwrap(),
        "newest first: {mine}"
    );
    // The stats: none reported yet.
    assert!(body.contains("No state reported yet"));
    // The avatar's counts.
    assert!(body.contains("4 scripts · 2 family"));
}

#[tokio::test]
async fn needs_attention_comes_first_naming_a_failing_script_and_the_version_that_broke_it() {
    // mine: v1 ran well five times, v2 failed twice since.
    let world = world();
    let (cookie, _) = login(&world).await;
    let page = get(&world, "/dashboard", Some(&cookie)).await;
    let body = &page.body;
    let attention = body
        .find("id=\"attention-title\"")
        .expect("a Needs attention section");
    assert!(
        attention < body.find("id=\"changes-title\"").unwrap(),
        "it comes before the changes"
    );
    let section = &body[attention..attention + body[attention..].find("</section>").unwrap()];
    assert!(
        section.contains("buzz/mine.ts</a> failed its last 2 runs"),
        "{section}"
    );
    assert!(section.contains("Suspect: v2"), "{section}");
    assert!(
        section.contains(&format!(
            "href=\"/dashboard/skills/{}/diff?from=1&amp;to=2\"",
            world.mine.0
        )),
        "{section}"
    );
    assert!(
        section.contains(&format!(
            "href=\"/dashboard/skills/{}/code?version=1&amp;download=1\" download",
            world.mine.0
        )),
        "the last good version's code to download: {section}"
    );
    assert!(section.contains("Next: v2 likely broke it"), "{section}");
    // Scripts whose latest run went well are not listed.
    assert!(!section.contains("chop-oaks"), "{section}");
    // The avatar's own page leads with its part of it.
    let avatar = get(
        &world,
        &format!("/dashboard/avatars/{}", world.buzz.0),
        Some(&cookie),
    )
    .await
    .body;
    let own = avatar
        .find("id=\"attention-title\"")
        .expect("its own attention");
    assert!(own < avatar.find("id=\"scripts-title\"").unwrap());
    assert!(avatar[own..].contains("buzz/mine.ts</a> failed its last 2 runs"));
}

/// The first number after `marker` in `text` (`score 612` → 612).
fn number_after(text: &str, marker: &str) -> i64 {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {text}"));
    text[at + marker.len()..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn every_view_shows_one_score_for_an_idle_skill_at_one_clock() {
    // A shared skill last run thirty days ago: its score as of now has drifted well below the
    // one its last run left, and every view shows the drifted one.
    let store = SqliteStore::open_in_memory().unwrap();
    let now = now_millis();
    let ada = store
        .create_owner("ada", &secret_digest(ADA_KEY), now)
        .unwrap();
    let buzz = store.create_agent(ada.id, "buzz", "/ws/ada", now).unwrap();
    let pickles = store
        .create_agent(ada.id, "pickles", "/ws/ada2", now)
        .unwrap();
    let chop = store
        .match_script(
            ada.id,
            &snapshot(
                buzz.id,
                "buzz",
                "chop-oaks",
                "await chop();\n",
                headed("chop oaks"),
            ),
            now,
        )
        .unwrap();
    let long_ago = now - 30 * 86_400_000;
    for i in 0..6 {
        store
            .record_use(
                ada.id,
                &run(chop.version.id, buzz.id, true, long_ago + i * 60_000),
            )
            .unwrap();
    }
    let operator_token = new_secret("mr_operator_");
    store
        .issue_operator_token(&secret_digest(&operator_token), now)
        .unwrap();
    let stored = store.versions(ada.id, chop.skill.id).unwrap()[0]
        .score
        .round() as i64;
    let entries = mindrune_engine::skills_as_of(&store, ada.id, None, now).unwrap();
    let shown = mindrune_engine::points(entries[0].version.score);
    assert!(stored - shown >= 10, "drifted from {stored} to {shown}");
    let sibling = mindrune_engine::family_answer(&store, &pickles).unwrap();
    let index_line = sibling
        .index
        .lines()
        .find(|line| line.starts_with("- buzz/chop-oaks.ts — score "))
        .unwrap_or_else(|| panic!("{}", sibling.index))
        .to_string();
    let world = World {
        state: AppState::new(Box::new(store), ServerConfig::default()),
        ada: ada.id,
        buzz: buzz.id,
        rex: buzz.id,
        chop: chop.skill.id,
        fish: chop.skill.id,
        mine: chop.skill.id,
        bob_skill: chop.skill.id,
        operator_token,
    };
    let (cookie, _) = login(&world).await;
    let family = get(&world, "/dashboard", Some(&cookie)).await.body;
    let avatar = get(
        &world,
        &format!("/dashboard/avatars/{}", world.buzz.0),
        Some(&cookie),
    )
    .await
    .body;
    let script = get(
        &world,
        &format!("/dashboard/skills/{}", world.chop.0),
        Some(&cookie),
    )
    .await
    .body;
    let console = send(
        &world,
        Request::get("/console")
            .header(
                header::AUTHORIZATION,
                format!("Bearer {}", world.operator_token),
            )
            .body(Body::empty())
            .unwrap(),
    )
    .await
    .body;
    let views = [
        ("INDEX.md", number_after(&index_line, "score ")),
        (
            "family tile",
            number_after(&family, "chop-oaks.ts</span> ("),
        ),
        (
            "avatar page",
            number_after(&section(&avatar, world.chop), "class=\"score\">score "),
        ),
        (
            "script page",
            number_after(&script, "class=\"score\">score "),
        ),
        ("console", {
            let row = &console[console.find(">chop-oaks</td>").expect("the console row")..];
            number_after(row, "data-label=\"Score\" class=\"num\">")
        }),
    ];
    for (view, score) in views {
        assert_eq!(
            score, shown,
            "{view} shows {score}, the library's view {shown}"
        );
    }
}

/// The part of an avatar page about one script.
fn section(body: &str, skill: SkillId) -> String {
    let start = body
        .find(&format!("id=\"skill-{}\"", skill.0))
        .expect("the script is listed");
    let rest = &body[start..];
    let end = rest[1..]
        .find("<li class=\"card script\"")
        .map_or(rest.len(), |e| e + 1);
    rest[..end].to_string()
}

#[tokio::test]
async fn the_avatar_page_shows_the_latest_reported_stats() {
    let world = world();
    let store = world.state.store();
    let stats = serde_json::json!({
        "levels": {"Woodcutting": 31, "Attack": 12},
        "quests": ["Cook's Assistant", "<b>The Restless Ghost</b>"],
        "wealth": 12345,
        "gear": ["Bronze axe"],
        "bank": {"Oak logs": 1500},
    });
    store
        .save_avatar_state(
            world.ada,
            world.buzz,
            &stats.to_string(),
            Some(Standing::coins(12345)),
            now_millis(),
        )
        .unwrap();
    let (cookie, _) = login(&world).await;
    let page = get(
        &world,
        &format!("/dashboard/avatars/{}", world.buzz.0),
        Some(&cookie),
    )
    .await;
    for text in [
        "Woodcutting",
        "31",
        "Total",
        "43",
        "2 done",
        "Cook's Assistant",
        "&lt;b&gt;The Restless Ghost",
        "12,345 coins",
        "Bronze axe",
        "Oak logs",
        "1,500",
    ] {
        assert!(page.body.contains(text), "{text}: {}", page.body);
    }
}

/// Reports through the runner API as a runner sends them: `(hours ago, coins, woodcutting xp)`.
async fn report_states(world: &World, reports: &[(i64, i64, u64)]) {
    let token = new_secret("mr_runner_");
    world
        .state
        .store()
        .issue_runner_token(world.ada, world.buzz, &secret_digest(&token), now_millis())
        .unwrap();
    let now = now_millis();
    for &(hours_ago, coins, xp) in reports {
        let at = time::OffsetDateTime::from_unix_timestamp((now / 1000) - hours_ago * 3600)
            .unwrap()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        let body = serde_json::json!({
            "at": at,
            "levels": {"Woodcutting": 30, "Attack": 1},
            "xp": {"Woodcutting": xp, "Attack": 0},
            "quests": ["Cook's Assistant"],
            "wealth": coins,
        });
        let answer = send(
            world,
            Request::post("/v1/state")
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await;
        assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    }
}

#[tokio::test]
async fn the_avatar_page_shows_xp_and_wealth_over_time_from_the_runner_s_reports() {
    let world = world();
    let (cookie, _) = login(&world).await;
    let path = format!("/dashboard/avatars/{}", world.buzz.0);
    report_states(&world, &[(3, 1_000, 2_500)]).await;
    let one = get(&world, &path, Some(&cookie)).await;
    assert!(
        one.body
            .contains("Not enough reports in the last 30 days for a chart"),
        "{}",
        one.body
    );
    report_states(&world, &[(1, 1_500, 13_363)]).await;
    let page = get(&world, &path, Some(&cookie)).await;
    let body = &page.body;
    assert!(
        body.contains("<span class=\"xp small muted\">13,363 XP</span>"),
        "{body}"
    );
    assert!(body.contains(">0 XP</span>"), "{body}");
    assert!(body.contains("1,500 coins"), "{body}");
    let start = body.find("id=\"wealth-chart\"").expect("a wealth chart");
    let chart = &body[start..start + body[start..].find("</figure>").unwrap()];
    assert!(chart.contains("<svg"), "{chart}");
    assert!(chart.contains("Coins over the last 30 days"), "{chart}");
    assert!(
        chart.contains(
            "2 points from ",
        ) && chart.contains(
            ": 1,000 coins at first and 1,500 coins at last; lowest 1,000 coins, highest 1,500 coins."
        ),
        "{chart}"
    );
    assert_eq!(chart.matches("<circle class=\"dot\"").count(), 2, "{chart}");
    assert!(!body.contains("Not enough reports"), "{body}");
}

/// The part of `body` from the element with `id` to the end of its figure.
fn figure<'a>(body: &'a str, id: &str) -> &'a str {
    let start = body
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {body}"));
    &body[start..start + body[start..].find("</figure>").unwrap()]
}

#[tokio::test]
async fn the_charts_cover_the_time_the_owner_picks_and_refuse_any_other() {
    let world = world();
    let (cookie, _) = login(&world).await;
    // Two older runs of chop-oaks' first version: three and twelve days ago.
    let store = world.state.store();
    let now = now_millis();
    let v1 = store.versions(world.ada, world.mine).unwrap();
    let v1 = v1.iter().find(|v| v.number == 1).unwrap().id;
    for days in [3, 12] {
        store
            .record_use(
                world.ada,
                &run(v1, world.buzz, true, now - days * 86_400_000),
            )
            .unwrap();
    }

    // The family's runs: hour bars over 24 h, day bars over 7 and 30 days, and over all of it
    // days from the first run's; the picked range is marked.
    for (range, bars, unit) in [
        ("24h", 24, "hour"),
        ("7d", 7, "day"),
        ("30d", 30, "day"),
        ("all", 13, "day"),
    ] {
        let page = get(&world, &format!("/dashboard?range={range}"), Some(&cookie)).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let chart = figure(&page.body, "family-runs");
        assert_eq!(
            chart.matches("<g class=\"bar\"").count(),
            bars,
            "{range}: {chart}"
        );
        assert!(
            page.body.contains(&format!(">Runs per {unit}</h2>")),
            "{range}"
        );
        assert!(
            page.body.contains(&format!(
                "<a href=\"/dashboard?range={range}#runs-title\" aria-current=\"true\">"
            )),
            "{range}: {}",
            page.body
        );
    }
    // The 24 hours hold the world's runs of the last hour, not the older ones.
    let day = get(&world, "/dashboard?range=24h", Some(&cookie)).await;
    let all = get(&world, "/dashboard?range=all", Some(&cookie)).await;
    let runs_in = |body: &str| -> u64 {
        figure(body, "family-runs")
            .split("data-ok=\"")
            .skip(1)
            .map(|rest| {
                let ok: u64 = rest.split('"').next().unwrap().parse().unwrap();
                let failed = rest.split("data-failed=\"").nth(1).unwrap();
                ok + failed.split('"').next().unwrap().parse::<u64>().unwrap()
            })
            .sum()
    };
    assert_eq!(runs_in(&all.body), runs_in(&day.body) + 2);

    // A script's score: its points over the picked time only, placed by time.
    let script = |range: &'static str| {
        let path = format!("/dashboard/skills/{}?range={range}", world.mine.0);
        let world = &world;
        let cookie = cookie.clone();
        async move {
            let page = get(world, &path, Some(&cookie)).await;
            assert_eq!(page.status, StatusCode::OK, "{}", page.body);
            figure(&page.body, "score-chart")
                .matches("class=\"dot")
                .count()
        }
    };
    assert_eq!(script("all").await, 9);
    assert_eq!(script("30d").await, 9);
    assert_eq!(script("7d").await, 8);
    assert_eq!(script("24h").await, 7);

    // The avatar's wealth chart takes a range too.
    report_states(&world, &[(3, 1_000, 2_500), (1, 1_500, 13_363)]).await;
    let avatar = format!("/dashboard/avatars/{}", world.buzz.0);
    let page = get(&world, &format!("{avatar}?range=7d"), Some(&cookie)).await;
    assert!(
        figure(&page.body, "wealth-chart").contains("Coins over the last 7 days"),
        "{}",
        page.body
    );

    // Any other range is refused, saying which there are.
    for path in [
        "/dashboard?range=1y".to_owned(),
        format!("{avatar}?range=week"),
        format!("/dashboard/skills/{}?range=365d", world.mine.0),
    ] {
        let page = get(&world, &path, Some(&cookie)).await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{path}");
        assert!(
            page.body.contains("is 24h, 7d, 30d or all."),
            "{}",
            page.body
        );
    }
}

#[tokio::test]
async fn an_avatar_with_only_recorded_runs_shows_the_levels_and_wealth_its_last_run_printed() {
    let world = world();
    let (cookie, _) = login(&world).await;
    let path = format!("/dashboard/avatars/{}", world.buzz.0);
    let before = get(&world, &path, Some(&cookie)).await;
    assert!(
        before.body.contains("No state reported yet"),
        "{}",
        before.body
    );

    // A fork runner's real output (`shared/data/rs-sdk/runs`), the avatar carrying coins too.
    let output = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/rs-sdk/runs/fork-chop-trees.txt"),
    )
    .expect("the real runs beside the checkout")
    .replace("- Logs x5\n", "- Logs x5\n- Coins x2500\n");
    let token = new_secret("mr_runner_");
    world
        .state
        .store()
        .issue_runner_token(world.ada, world.buzz, &secret_digest(&token), now_millis())
        .unwrap();
    let script = "bots/buzz/chop-trees.ts";
    let events = serde_json::json!({ "events": [{
        "event": {
            "id": "chop-1",
            "kind": "shell",
            "command": format!("bun {script}"),
            "cwd": "/ws/ada",
            "output": output,
        },
        "files": { script: { "text": "await bot.chopTree();\n" } },
    }]});
    let answer = send(
        &world,
        Request::post("/v1/events")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(events.to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(answer.body.contains("\"recorded\""), "{}", answer.body);

    let page = get(&world, &path, Some(&cookie)).await;
    let body = &page.body;
    let start = body.find("id=\"stats-title\"").expect("the stats column");
    let stats = &body[start..start + body[start..].find("</aside>").unwrap()];
    for text in [
        "From the last run's printed state",
        "bank and quests not printed",
        // 21 skills: Woodcutting 20, Hitpoints 10, the others 1.
        "Total level 49",
        "Woodcutting</span><span class=\"level\">20</span>",
        "3,125 XP",
        "2,500 coins",
        "Nothing equipped.",
    ] {
        assert!(stats.contains(text), "{text}: {stats}");
    }
    assert!(!stats.contains("No state reported yet"), "{stats}");
}

#[tokio::test]
async fn quests_are_counted_of_all_only_once_the_vocabulary_is_built() {
    let world = world();
    let (cookie, _) = login(&world).await;
    report_states(&world, &[(1, 1_500, 13_363)]).await;
    let path = format!("/dashboard/avatars/{}", world.buzz.0);
    let page = get(&world, &path, Some(&cookie)).await;
    assert!(page.body.contains(">1 done</span>"), "{}", page.body);
    assert!(
        page.body.contains("<code>mindrune tags build</code>"),
        "{}",
        page.body
    );
    let store = world.state.store();
    let quests: Vec<mindrune_store::VocabularyEntry> =
        ["cooks-assistant", "restless-ghost", "rune-mysteries"]
            .iter()
            .map(|slug| {
                mindrune_store::VocabularyEntry::new(
                    "quest",
                    slug,
                    slug,
                    mindrune_store::VocabularySource::Wiki,
                )
            })
            .collect();
    store.replace_vocabulary(&quests, now_millis()).unwrap();
    let all = mindrune_engine::load_vocabulary(store)
        .unwrap()
        .counts_by_kind()["quest"];
    assert!(all >= 3, "{all}");
    let page = get(&world, &path, Some(&cookie)).await;
    assert!(
        page.body.contains(&format!(">1 of {all} done</span>")),
        "{}",
        page.body
    );
    assert!(!page.body.contains("mindrune tags build"), "{}", page.body);
}

#[tokio::test]
async fn every_page_escapes_names_and_goals() {
    let world = world();
    let (cookie, _) = login(&world).await;
    let pages = [
        get(&world, "/dashboard", Some(&cookie)).await,
        get(
            &world,
            &format!("/dashboard/avatars/{}", world.buzz.0),
            Some(&cookie),
        )
        .await,
        send(
            &world,
            Request::get("/console")
                .header(
                    header::AUTHORIZATION,
                    format!("Bearer {}", world.operator_token),
                )
                .body(Body::empty())
                .unwrap(),
        )
        .await,
    ];
    for page in &pages {
        assert_eq!(page.status, StatusCode::OK);
        assert!(!page.body.contains("<script>alert"), "{}", page.body);
        assert!(!page.body.contains("<img src=x"), "{}", page.body);
    }
    assert!(
        pages[1]
            .body
            .contains("&lt;script&gt;alert(1)&lt;/script&gt;.ts")
    );
    assert!(
        pages[1]
            .body
            .contains("&lt;script&gt;alert(&quot;goal&quot;)&lt;/script&gt; &amp; &lt;img")
    );
    assert!(
        pages[2]
            .body
            .contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{}",
        pages[2].body
    );
    let download = get(
        &world,
        &format!(
            "/dashboard/skills/{}/code?download=1",
            section_id(&pages[1].body, "&lt;script&gt;")
        ),
        Some(&cookie),
    )
    .await;
    assert_eq!(
        download.headers[header::CONTENT_DISPOSITION],
        "attachment; filename=\"_script_alert_1___script_.ts\""
    );
}

#[tokio::test]
async fn a_hostile_avatar_and_script_name_show_escaped_on_the_family_and_avatar_pages() {
    let world = world();
    let store = world.state.store();
    let now = now_millis();
    let name = "<script>alert(1)</script>\"q\"&co";
    let agent = store
        .create_agent(world.ada, name, "/ws/evil", now)
        .unwrap();
    let script = store
        .match_script(
            world.ada,
            &snapshot(
                agent.id,
                name,
                name,
                "x();\n",
                headed("\"goal\" & <b>more</b>"),
            ),
            now,
        )
        .unwrap();
    store
        .record_use(
            world.ada,
            &run(script.version.id, agent.id, true, now - 60_000),
        )
        .unwrap();
    let (cookie, _) = login(&world).await;
    let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;q&quot;&amp;co";
    let family = get(&world, "/dashboard", Some(&cookie)).await;
    let avatar = get(
        &world,
        &format!("/dashboard/avatars/{}", agent.id.0),
        Some(&cookie),
    )
    .await;
    for page in [&family, &avatar] {
        assert_eq!(page.status, StatusCode::OK);
        assert!(!page.body.contains("<script>alert"), "{}", page.body);
        assert!(!page.body.contains("\"q\""), "{}", page.body);
        assert!(!page.body.contains("&co"), "{}", page.body);
    }
    // The tile: its name as text and as the data attribute, and its script as the newest.
    let tile = tile_of(&family.body, &format!("data-avatar=\"{escaped}\""));
    assert!(
        tile.contains(&format!("<span class=\"name\">{escaped}</span>")),
        "{tile}"
    );
    assert!(
        tile.contains(&format!("<span class=\"file\">{escaped}.ts</span>")),
        "{tile}"
    );
    // The avatar page: its title, its heading and its script's entry and goal.
    assert!(
        avatar
            .body
            .contains(&format!("<title>{escaped} · MindRune</title>")),
        "{}",
        avatar.body
    );
    assert!(
        avatar.body.contains(&format!("<h1>{escaped}</h1>")),
        "{}",
        avatar.body
    );
    assert!(
        avatar
            .body
            .contains(&format!("<span class=\"file\">{escaped}.ts</span>")),
        "{}",
        avatar.body
    );
    assert!(
        avatar
            .body
            .contains("&quot;goal&quot; &amp; &lt;b&gt;more&lt;/b&gt;"),
        "{}",
        avatar.body
    );
}

/// The skill id of the first script whose file name contains `marker`.
fn section_id(body: &str, marker: &str) -> i64 {
    let at = body
        .find(&format!("<span class=\"file\">{marker}"))
        .unwrap();
    let before = &body[..at];
    let id_at = before.rfind("id=\"skill-").unwrap() + "id=\"skill-".len();
    before[id_at..].split('"').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn pages_carry_the_strict_csp_and_no_inline_code() {
    let world = world();
    let (cookie, _) = login(&world).await;
    let pages = [
        get(&world, "/dashboard/login", None).await,
        get(&world, "/dashboard", Some(&cookie)).await,
        get(
            &world,
            &format!("/dashboard/avatars/{}", world.buzz.0),
            Some(&cookie),
        )
        .await,
        get(&world, "/console/login", None).await,
        get(&world, "/dashboard/avatars/999999", Some(&cookie)).await,
    ];
    for page in &pages {
        assert_eq!(
            page.headers[header::CONTENT_SECURITY_POLICY],
            CONTENT_SECURITY_POLICY
        );
        assert_eq!(
            page.headers[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        assert_eq!(page.headers[header::CACHE_CONTROL], "no-store");
        assert!(page.body.contains("<meta name=\"viewport\""));
        assert!(!page.body.contains(" style="), "no inline style");
        assert!(!page.body.contains("<style"), "no inline style");
        assert!(
            !has_event_handler(&page.body),
            "no inline event handler attributes"
        );
        for script in page
            .body
            .match_indices("<script")
            .map(|(i, _)| &page.body[i..])
        {
            assert!(
                script.starts_with("<script src=\"/static/app.js?v="),
                "only the static script: {}",
                &script[..40.min(script.len())]
            );
        }
    }
}

/// Whether some tag of the page has an `on…=` attribute (an inline event handler).
fn has_event_handler(html: &str) -> bool {
    html.split('<').skip(1).any(|tag| {
        let tag = tag.split('>').next().unwrap_or("");
        tag.split_whitespace().skip(1).any(|attr| {
            attr.starts_with("on")
                && attr[2..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphabetic())
                    .count()
                    > 0
                && attr.contains('=')
        })
    })
}

#[tokio::test]
async fn static_assets_have_their_types_and_long_caching() {
    let world = world();
    let page = get(&world, "/dashboard/login", None).await;
    for (prefix, content_type) in [
        ("/static/app.css?v=", "text/css; charset=utf-8"),
        ("/static/app.js?v=", "text/javascript; charset=utf-8"),
    ] {
        let at = page.body.find(prefix).unwrap();
        let url = page.body[at..].split('"').next().unwrap();
        let asset = get(&world, url, None).await;
        assert_eq!(asset.status, StatusCode::OK);
        assert_eq!(asset.headers[header::CONTENT_TYPE], content_type);
        assert!(
            asset.headers[header::CACHE_CONTROL]
                .to_str()
                .unwrap()
                .contains("max-age=31536000")
        );
        assert!(!asset.body.is_empty());
    }
}

#[tokio::test]
async fn the_console_needs_an_operator_token() {
    let world = world();
    let anonymous = get(&world, "/console", None).await;
    assert_eq!(anonymous.status, StatusCode::SEE_OTHER);
    assert_eq!(anonymous.location(), "/console/login");
    let wrong = send(
        &world,
        Request::get("/console")
            .header(header::AUTHORIZATION, "Bearer mr_operator_nope")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    // An owner's session is no operator token.
    let (cookie, _) = login(&world).await;
    assert_eq!(
        get(&world, "/console", Some(&cookie)).await.status,
        StatusCode::SEE_OTHER
    );

    let page = send(
        &world,
        Request::get("/console")
            .header(
                header::AUTHORIZATION,
                format!("Bearer {}", world.operator_token),
            )
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Family skill reuse"));
    assert!(
        page.body
            .contains("\">chop-oaks</td><td data-label=\"Version\">v1</td><td data-label=\"Runs\" class=\"num\">5</td>"),
        "{}",
        page.body
    );
    assert!(!page.body.contains(">fish</td>"), "fish is not shared");
    assert!(!page.body.contains(">mine</td>"));
    assert!(!page.body.contains(ADA_KEY) && !page.body.contains(BOB_KEY));
    // Read-only: its one form is the log-out, which only forgets the token in this browser.
    assert_eq!(page.body.matches("<form").count(), 1, "read-only");
    assert!(
        page.body
            .contains("<form method=\"post\" action=\"/console/logout\"")
    );
    // ada's row: 20 runs in the window, none from a family skill.
    assert!(page.body.contains("<tr><td data-label=\"Family\">ada</td><td data-label=\"Avatars\" class=\"num\">1</td><td data-label=\"Runs\" class=\"num\">20</td><td data-label=\"From a family skill\" class=\"num\">0</td><td data-label=\"Share\" class=\"num\">0 %</td>"), "{}", page.body);

    // The login form sets the token as an HttpOnly, strict cookie for /console.
    let login_page = get(&world, "/console/login", None).await;
    let guard = login_page.cookie("mindrune_console_login").unwrap();
    let csrf = csrf_of(&login_page.body);
    let bad = post(
        &world,
        "/console/login",
        Some(&guard),
        &format!("token=mr_operator_nope&csrf={csrf}"),
    )
    .await;
    assert_eq!(bad.status, StatusCode::UNAUTHORIZED);
    assert!(bad.body.contains("unknown or revoked"));
    let missing_csrf = post(
        &world,
        "/console/login",
        Some(&guard),
        &format!("token={}", world.operator_token),
    )
    .await;
    assert_eq!(missing_csrf.status, StatusCode::FORBIDDEN);
    let good = post(
        &world,
        "/console/login",
        Some(&guard),
        &format!("token={}&csrf={csrf}", world.operator_token),
    )
    .await;
    assert_eq!(good.status, StatusCode::SEE_OTHER);
    let set = good
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("mindrune_operator="))
        .unwrap();
    assert!(
        set.contains("HttpOnly")
            && set.contains("SameSite=Strict")
            && set.contains("Path=/console"),
        "{set}"
    );
    let cookie = good.cookie("mindrune_operator").unwrap();
    let page = get(&world, "/console", Some(&cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Family skills"));
}

#[tokio::test]
async fn a_shared_skill_shows_the_version_siblings_get_until_a_newer_one_is_shared() {
    let world = world();
    let store = world.state.store();
    // buzz edits chop-oaks: v2 is the file now, with one run; siblings still get v1.
    let v2 = store
        .match_script(
            world.ada,
            &snapshot(
                world.buzz,
                "buzz",
                "chop-oaks",
                "await chop(2);\n",
                headed("chop oaks west of Draynor and bank the logs"),
            ),
            now_millis(),
        )
        .unwrap();
    assert_eq!(v2.version.number, 2);
    store
        .record_use(
            world.ada,
            &run(v2.version.id, world.buzz, true, now_millis()),
        )
        .unwrap();
    let (cookie, _) = login(&world).await;
    let page = get(
        &world,
        &format!("/dashboard/avatars/{}", world.buzz.0),
        Some(&cookie),
    )
    .await;
    let chop = section(&page.body, world.chop);
    assert!(chop.contains(FAMILY_TAG), "{chop}");
    assert!(chop.contains("v1 · 2 versions"), "{chop}");
    assert!(
        chop.contains("Newer draft v2, chop-oaks.ts: 1/5 runs"),
        "{chop}"
    );
    assert!(
        chop.contains("(siblings get it)") && chop.contains("(the file now)"),
        "{chop}"
    );
    let code = get(
        &world,
        &format!("/dashboard/skills/{}/code?raw=1", world.chop.0),
        Some(&cookie),
    )
    .await;
    assert!(
        code.body.starts_with("await chop();"),
        "the shown version's code: {}",
        code.body
    );
}

// -------------------------------------------------------------------------------------------
// Two families, every dashboard route that takes an id, any ids: a property test.
//
// Each family's every name, goal, line of code and stat carries its marker (letters that are
// not hex, so no session secret or CSRF token can hold them by chance): an answer to one
// family's session that holds the other's marker showed the other family's data.

/// What the test knows of one family: its owner, its marker, and its ids.
struct Family {
    owner: OwnerId,
    name: String,
    key: &'static str,
    marker: &'static str,
    /// Its wealth as the stats show it (`7,345,219 coins`): a number, not a marked text.
    wealth: &'static str,
    agents: Vec<(AgentId, String)>,
    /// Each skill: its id, the agent that has it, its name, and each version's code (v1
    /// first).
    skills: Vec<(SkillId, AgentId, String, Vec<String>)>,
}

struct Families {
    state: AppState,
    families: [Family; 2],
}

impl Served for Families {
    fn app_state(&self) -> &AppState {
        &self.state
    }
}

const MARKERS: [&str; 2] = ["zqada", "vxbob"];
const WEALTH: [(i64, &str); 2] = [(1_234_567, "1,234,567"), (7_345_219, "7,345,219")];

fn families() -> Families {
    let store = SqliteStore::open_in_memory().unwrap();
    let now = now_millis();
    let mut at = now - 3_600_000;
    let mut families = Vec::new();
    for (f, key) in [ADA_KEY, BOB_KEY].into_iter().enumerate() {
        let marker = MARKERS[f];
        let owner = store
            .create_owner(marker, &secret_digest(key), now)
            .unwrap();
        let mut family = Family {
            owner: owner.id,
            name: owner.name.clone(),
            key,
            marker,
            wealth: WEALTH[f].1,
            agents: Vec::new(),
            skills: Vec::new(),
        };
        for bot in ["buzz", "pickles"] {
            let name = format!("{marker}-{bot}");
            let agent = store
                .create_agent(owner.id, &name, &format!("/ws/{name}"), now)
                .unwrap();
            // Two scripts each: a headed one that is shared after 5 clean runs, and a private
            // one with two versions.
            for (script, header, versions, runs) in [
                ("chop", headed(&format!("{marker} goal: chop oaks")), 1, 5),
                ("fish", SkillHeader::default(), 2, 2),
            ] {
                let skill_name = format!("{marker}-{bot}-{script}");
                let mut codes = Vec::new();
                let mut skill = None;
                for v in 1..=versions {
                    let code = format!("await {script}({v}); // {marker} code v{v}\n");
                    let matched = store
                        .match_script(
                            owner.id,
                            &snapshot(agent.id, &name, &skill_name, &code, header.clone()),
                            now,
                        )
                        .unwrap();
                    for _ in 0..runs {
                        at += 60_000;
                        store
                            .record_use(owner.id, &run(matched.version.id, agent.id, true, at))
                            .unwrap();
                    }
                    codes.push(code);
                    skill = Some(matched.skill.id);
                }
                family
                    .skills
                    .push((skill.unwrap(), agent.id, skill_name, codes));
            }
            let stats = serde_json::json!({
                "levels": {"Woodcutting": 40 + f},
                "quests": [format!("{marker} quest of {bot}")],
                "wealth": WEALTH[f].0,
                "gear": [format!("{marker} axe")],
                "bank": {format!("{marker} logs"): 12},
            });
            store
                .save_avatar_state(
                    owner.id,
                    agent.id,
                    &stats.to_string(),
                    Some(Standing::coins(WEALTH[f].0)),
                    now,
                )
                .unwrap();
            family.agents.push((agent.id, name));
        }
        families.push(family);
    }
    let [ada, bob] = <[Family; 2]>::try_from(families).ok().unwrap();
    Families {
        state: AppState::new(Box::new(store), ServerConfig::default()),
        families: [ada, bob],
    }
}

/// An id as a request spells it.
#[derive(Debug, Clone)]
enum Id {
    /// Family `.0`'s `.1`-th avatar (of two).
    Avatar(usize, usize),
    /// Family `.0`'s `.1`-th skill (of four).
    Skill(usize, usize),
    /// Any number: often some family's avatar or skill too.
    Number(i64),
    /// Not a number at all.
    Junk(&'static str),
}

/// How an id's number is written: as is, with a `+`, or with leading zeros (all the same
/// number to a parser; none may reach another family's data).
#[derive(Debug, Clone, Copy)]
enum Spelling {
    Plain,
    Plus,
    Zeros,
}

#[derive(Debug, Clone)]
enum Ask {
    /// `GET /dashboard`.
    Family,
    /// `GET /dashboard/avatars/{id}`.
    Avatar(Id, Spelling),
    /// `GET /dashboard/skills/{id}/code[?version=…][&download=…]`.
    Code {
        id: Id,
        spelling: Spelling,
        version: Option<&'static str>,
        download: Option<&'static str>,
    },
    /// `POST /dashboard/eager` with the session's CSRF token, back to an avatar's page, and
    /// the page it sends the owner back to.
    Eager {
        on: bool,
        back: Id,
        spelling: Spelling,
    },
    /// The old loopback API's `GET /skills/{id}` and `POST /skills/{id}/outcome`.
    Gone(Id, bool),
}

#[derive(Debug, Clone)]
struct Step {
    /// The family whose logged-in session asks.
    by: usize,
    request: Ask,
}

fn any_id() -> impl Strategy<Value = Id> {
    prop_oneof![
        3 => (0..2usize, 0..2usize).prop_map(|(f, i)| Id::Avatar(f, i)),
        3 => (0..2usize, 0..4usize).prop_map(|(f, i)| Id::Skill(f, i)),
        2 => (-2i64..30).prop_map(Id::Number),
        1 => any::<i64>().prop_map(Id::Number),
        1 => prop::sample::select(vec![
            "abc",
            "1.0",
            "1e3",
            "0x1",
            "%20",
            "%2e%2e",
            "99999999999999999999",
            "",
        ])
        .prop_map(Id::Junk),
    ]
}

fn spelling() -> impl Strategy<Value = Spelling> {
    prop_oneof![
        4 => Just(Spelling::Plain),
        1 => Just(Spelling::Plus),
        1 => Just(Spelling::Zeros),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let request = prop_oneof![
        1 => Just(Ask::Family),
        3 => (any_id(), spelling()).prop_map(|(id, s)| Ask::Avatar(id, s)),
        4 => (
            any_id(),
            spelling(),
            prop::option::of(prop::sample::select(vec!["1", "2", "3", "0", "-1", "x", ""])),
            prop::option::of(prop::sample::select(vec!["1", "0", "true", "", "yes"])),
        )
            .prop_map(|(id, spelling, version, download)| Ask::Code {
                id,
                spelling,
                version,
                download,
            }),
        2 => (any::<bool>(), any_id(), spelling())
            .prop_map(|(on, back, spelling)| Ask::Eager { on, back, spelling }),
        1 => (any_id(), any::<bool>()).prop_map(|(id, outcome)| Ask::Gone(id, outcome)),
    ];
    (0..2usize, request).prop_map(|(by, request)| Step { by, request })
}

/// Everything the library holds of a family that a page could show or a form could change.
fn holdings(world: &Families, family: usize) -> String {
    let store = world.state.store();
    let owner = world.families[family].owner;
    let mut out = format!("{:?}\n", store.owner(owner).unwrap());
    for agent in store.agents(owner).unwrap() {
        out.push_str(&format!(
            "{agent:?}\n{:?}\n",
            store.avatar_state(owner, agent.id).unwrap()
        ));
    }
    for entry in store.skills(owner, None).unwrap() {
        out.push_str(&format!(
            "{entry:?}\n{:?}\n",
            store.versions(owner, entry.skill.id).unwrap()
        ));
    }
    out
}

impl Families {
    /// The URL text of an id, and the number a parser reads from it (`None`: not a number).
    fn spell(&self, id: &Id, spelling: Spelling) -> String {
        let number = match id {
            Id::Avatar(f, i) => self.families[*f].agents[*i].0.0,
            Id::Skill(f, i) => self.families[*f].skills[*i].0.0,
            Id::Number(n) => *n,
            Id::Junk(text) => return (*text).to_string(),
        };
        match spelling {
            Spelling::Plain => number.to_string(),
            // `+-3` is no number; that is fine, it is one more id that is not found.
            Spelling::Plus => format!("%2B{number}"),
            Spelling::Zeros => format!("00{number}"),
        }
    }

    /// What the dashboard makes of an id in a URL: a positive number, or nothing (404).
    fn parsed(text: &str) -> Option<i64> {
        let decoded = text.replace("%2B", "+").replace("%20", " ");
        decoded.parse::<i64>().ok().filter(|n| *n > 0)
    }

    async fn sessions(&self) -> [(String, String); 2] {
        let mut sessions = Vec::new();
        for family in &self.families {
            let answer = try_login(self, &family.name, family.key).await;
            assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
            let cookie = answer.cookie("mindrune_session").unwrap();
            let page = get(self, "/dashboard", Some(&cookie)).await;
            assert_eq!(page.status, StatusCode::OK);
            sessions.push((cookie, csrf_of(&page.body)));
        }
        <[(String, String); 2]>::try_from(sessions).unwrap()
    }

    /// Runs one step, checks its answer, and checks that no other answer to come may differ.
    #[expect(
        clippy::too_many_lines,
        reason = "the model-based test: one arm per step against the model"
    )]
    async fn check(&self, step: &Step, sessions: &[(String, String); 2]) {
        let (by, other) = (step.by, 1 - step.by);
        let own = &self.families[by];
        let (cookie, csrf) = &sessions[by];
        let before = [holdings(self, 0), holdings(self, 1)];
        let was_eager = self.state.store().owner(own.owner).unwrap().eager_sharing;
        let mut answers = Vec::new();
        let mut eager = None;
        match &step.request {
            Ask::Family => {
                let answer = get(self, "/dashboard", Some(cookie)).await;
                assert_eq!(answer.status, StatusCode::OK);
                for (_, name) in &own.agents {
                    assert!(answer.body.contains(name.as_str()), "{}", answer.body);
                }
                answers.push(answer);
            }
            Ask::Avatar(id, spelling) => {
                let text = self.spell(id, *spelling);
                let path = format!("/dashboard/avatars/{text}");
                let answer = get(self, &path, Some(cookie)).await;
                self.expect_avatar(by, &path, &answer);
                answers.push(answer);
            }
            Ask::Code {
                id,
                spelling,
                version,
                download,
            } => {
                let text = self.spell(id, *spelling);
                let mut query = Vec::new();
                if let Some(version) = version {
                    query.push(format!("version={version}"));
                }
                if let Some(download) = download {
                    query.push(format!("download={download}"));
                }
                let path = format!("/dashboard/skills/{text}/code?{}", query.join("&"));
                let answer = get(self, &path, Some(cookie)).await;
                let wanted_version = version.map(|v| v.parse::<i64>().ok().filter(|n| *n > 0));
                let wanted_download = download.map(|d| match d {
                    "0" => Some(false),
                    "1" | "true" | "" => Some(true),
                    _ => None,
                });
                let skill = Families::parsed(&text).map(|n| own.skills.iter().find(|s| s.0.0 == n));
                match (skill, wanted_version, wanted_download) {
                    // Not a number: not found, before anything else is read.
                    (None, _, _) => self.expect_not_found(&path, &answer),
                    // A query that is not one of the links': 400, whoever's the id is.
                    (_, Some(None), _) | (_, _, Some(None)) => {
                        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{path}");
                    }
                    (Some(None), _, _) => self.expect_not_found(&path, &answer),
                    (Some(Some((_, _, name, codes))), version, download) => {
                        let version = version.flatten();
                        match version {
                            Some(n) if n as usize > codes.len() => {
                                self.expect_not_found(&path, &answer);
                            }
                            _ => {
                                assert_eq!(
                                    answer.status,
                                    StatusCode::OK,
                                    "{path}: {}",
                                    answer.body
                                );
                                // A download is the file itself; otherwise the code is
                                // read on a page, escaped.
                                let downloaded = download.flatten() == Some(true);
                                let holds = |code: &String| {
                                    if downloaded {
                                        answer.body == *code
                                    } else {
                                        answer.body.contains(&page_escape(code))
                                    }
                                };
                                match version {
                                    Some(n) => assert!(holds(&codes[n as usize - 1]), "{path}"),
                                    None => assert!(codes.iter().any(holds), "{path}"),
                                }
                                let attachment = answer.headers.get(header::CONTENT_DISPOSITION);
                                if download.flatten() == Some(true) {
                                    let value = attachment.unwrap().to_str().unwrap();
                                    assert!(value.contains(name.as_str()), "{value}");
                                } else {
                                    assert!(attachment.is_none(), "{path}");
                                }
                            }
                        }
                    }
                }
                answers.push(answer);
            }
            Ask::Eager { on, back, spelling } => {
                let text = self.spell(back, *spelling);
                let back = format!("/dashboard/avatars/{text}");
                let form = format!(
                    "csrf={csrf}{}&back={}",
                    if *on { "&eager=on" } else { "" },
                    form_escape(&back)
                );
                let answer = post(self, "/dashboard/eager", Some(cookie), &form).await;
                assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
                eager = Some(*on);
                // Back to the avatar's page when the field names one by its digits, else to
                // the family; either way the page is asked for with this owner's session.
                let digits = !text.is_empty()
                    && text.len() <= 18
                    && text.bytes().all(|b| b.is_ascii_digit());
                let location = answer.location().to_string();
                assert_eq!(location, if digits { back.as_str() } else { "/dashboard" });
                let page = get(self, &location, Some(cookie)).await;
                if digits {
                    self.expect_avatar(by, &location, &page);
                } else {
                    assert_eq!(page.status, StatusCode::OK);
                }
                answers.push(answer);
                answers.push(page);
            }
            Ask::Gone(id, outcome) => {
                let text = self.spell(id, Spelling::Plain);
                let answer = if *outcome {
                    post(self, &format!("/skills/{text}/outcome"), Some(cookie), "").await
                } else {
                    get(self, &format!("/skills/{text}"), Some(cookie)).await
                };
                // The route matches only a non-empty id segment.
                if !text.is_empty() {
                    assert_eq!(answer.status, StatusCode::GONE, "{}", answer.body);
                    assert!(answer.body.contains("skills are files now"));
                }
                answers.push(answer);
            }
        }

        for answer in &answers {
            let text = answer.body.to_lowercase();
            let foreign = &self.families[other];
            assert!(
                !text.contains(foreign.marker),
                "{step:?}: an answer to {}'s session holds {}'s data:\n{}",
                own.marker,
                foreign.marker,
                answer.body
            );
            assert!(
                !answer.body.contains(foreign.wealth),
                "{step:?}: {}'s wealth:\n{}",
                foreign.marker,
                answer.body
            );
            for (_, value) in &answer.headers {
                let value = String::from_utf8_lossy(value.as_bytes()).to_lowercase();
                assert!(
                    !value.contains(foreign.marker),
                    "{step:?}: a header: {value}"
                );
            }
            for key in [ADA_KEY, BOB_KEY] {
                assert!(!answer.body.contains(key), "{step:?}: an owner's key");
            }
        }

        // Nothing changed but the asking owner's own switch, when it was set.
        let after = match eager {
            Some(on) => {
                let store = self.state.store();
                assert_eq!(store.owner(own.owner).unwrap().eager_sharing, on);
                // Set back for the comparison, then as the owner set it.
                store.set_eager_sharing(own.owner, was_eager).unwrap();
                let after = holdings(self, by);
                store.set_eager_sharing(own.owner, on).unwrap();
                after
            }
            None => holdings(self, by),
        };
        assert_eq!(
            after, before[by],
            "{step:?}: the asking family's library changed"
        );
        assert_eq!(
            holdings(self, other),
            before[other],
            "{step:?}: another family's library changed"
        );
    }

    /// The avatar page at `path`: the family's own avatar when its id reads as one, else 404.
    fn expect_avatar(&self, by: usize, path: &str, answer: &Answer) {
        let own = &self.families[by];
        let number = Families::parsed(path.trim_start_matches("/dashboard/avatars/"));
        match number.and_then(|n| own.agents.iter().find(|(id, _)| id.0 == n)) {
            Some((agent, name)) => {
                assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
                assert!(
                    answer.body.contains(&format!("<h1>{name}</h1>")),
                    "{}",
                    answer.body
                );
                for (_, owner_agent, skill, _) in &own.skills {
                    assert_eq!(
                        answer.body.contains(&format!("{skill}.ts")),
                        owner_agent == agent,
                        "{skill}: {}",
                        answer.body
                    );
                }
                assert!(answer.body.contains(own.wealth), "{}", answer.body);
                assert!(answer.body.contains("axe"), "{}", answer.body);
            }
            None => self.expect_not_found(path, answer),
        }
    }

    /// 404: the dashboard's "not in your family" page, or, for an empty id segment, the
    /// router's bare 404 (no route matches).
    fn expect_not_found(&self, what: &str, answer: &Answer) {
        assert_eq!(
            answer.status,
            StatusCode::NOT_FOUND,
            "{what}: {}",
            answer.body
        );
        if !what.contains("//") && !what.ends_with('/') {
            assert!(
                answer.body.contains("in your family"),
                "{what}: {}",
                answer.body
            );
        }
    }
}

proptest! {
    // A few seconds; `PROPTEST_CASES=1000` for a deeper run.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64),
        max_shrink_iters: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Either owner's logged-in session asks every dashboard route that takes an id (the
    /// avatar page, the code's view, download and versions, the Eager switch's way back, the
    /// old API's `/skills/{id}`) with ids of both families, other numbers and no numbers,
    /// spelled plainly, with a `+` or leading zeros: the own family's ids show the own data;
    /// every other id is 404 "not in your family" (a malformed query 400); no answer holds
    /// anything of the other family (avatar names, script names, goals, code, stats) or a key;
    /// and nothing in the library changes but the asking owner's own switch.
    #[test]
    fn no_dashboard_answer_ever_holds_the_other_familys_data(
        steps in prop::collection::vec(step(), 1..10)
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let world = families();
            let sessions = world.sessions().await;
            for step in &steps {
                world.check(step, &sessions).await;
            }
        });
    }
}

// -------------------------------------------------------------------------------------------
// The Inbox: playbook cards of the owner's assistants, answered from the dashboard.
//
// Each assistant's workspace is real (a temp folder with `playbooks.toml` and the shipped
// permissions, as `crates/engine/tests/playbooks.rs` makes them), and its cards are filed by
// the engine's own door, so what the Inbox answers is exactly what `mindrune card` answers.

mod inbox {
    use std::fs;
    use std::path::{Path, PathBuf};

    use mindrune_core::Permissions;
    use mindrune_core::{Status, parse_skill_file};
    use mindrune_engine::Report;
    use mindrune_engine::{Attendance, Created, Proposal, Suggester};
    use mindrune_engine::{CardKind, CardState, Playbooks};
    use mindrune_server::PlaybookWorkspace;

    use super::*;

    /// The workspace key of the first workspace section of an Inbox page (`id="ws-KEY"`).
    fn inbox_key_of(html: &str) -> String {
        let at = html.find("id=\"ws-").expect("a workspace section") + "id=\"ws-".len();
        html[at..].split('"').next().unwrap().to_string()
    }

    const CAROL_KEY: &str = "mrk_ca2010123456789abcdef0123456789abcdef0123456789a";

    /// An assistant's workspace. Its fixer only hands the report's token back beside the
    /// workspace, so a test can file a revision as the fixer would.
    struct Assistant {
        _home: tempfile::TempDir,
        dir: PathBuf,
        playbooks: Playbooks,
    }

    fn assistant() -> Assistant {
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().canonicalize().unwrap();
        let dir = home_path.join("workspace");
        fs::create_dir_all(&dir).unwrap();
        let fixer = "fixer = 'printf %s \"$MINDRUNE_FIXER_TOKEN\" > \"$MINDRUNE_WORKSPACE/../token-$MINDRUNE_REPORT.tmp\" && mv \"$MINDRUNE_WORKSPACE/../token-$MINDRUNE_REPORT.tmp\" \"$MINDRUNE_WORKSPACE/../token-$MINDRUNE_REPORT\"'";
        fs::write(
            dir.join("playbooks.toml"),
            format!(
                "tools = [\"shell\"]\nhome = {:?}\n{fixer}\n",
                home_path.display().to_string()
            ),
        )
        .unwrap();
        fs::write(
            dir.join("permissions.yaml"),
            Permissions::shipped_default().render(),
        )
        .unwrap();
        let playbooks = Playbooks::open(&dir).unwrap();
        Assistant {
            _home: home,
            dir,
            playbooks,
        }
    }

    impl Assistant {
        fn skills(&self) -> PathBuf {
            self.dir.join("skills")
        }

        /// Files a draft through the door, as the assistant's `skill_create` does; the card
        /// waits for the human.
        fn propose(&self, name: &str, text: &str) -> i64 {
            let (skill, _) = parse_skill_file(text).unwrap();
            let proposal = Proposal {
                name: name.into(),
                skill,
                suggested_by: Suggester::Assistant,
                accepted_as_done: false,
            };
            match self
                .playbooks
                .create(&proposal, Attendance::Attended)
                .unwrap()
            {
                Created::Filed {
                    card,
                    answered: None,
                } => card,
                other => panic!("the draft should wait for the human: {other:?}"),
            }
        }

        fn card(&self, id: i64) -> mindrune_engine::Card {
            self.playbooks.ledger().card(id).unwrap().unwrap()
        }

        fn live_text(&self, name: &str) -> String {
            fs::read_to_string(self.skills().join(name).join("SKILL.md")).unwrap()
        }
    }

    fn skill_text(trigger: &str) -> String {
        format!(
            "---\ntrigger: {trigger}\nuse_when: a week of notes exists\nnot_when: a single day's summary\npreconditions:\n  - notes/ holds this week's files\nsteps:\n  - do: Read this week's notes\n    tool: workspace_read\n  - do: Write the report to reports/weekly.md\n    tool: file_write\nforbidden-tools:\n  - shell\nexpected_result: reports/weekly.md exists\nfailure_modes:\n  - last week's notes get included\nevidence:\n  - the 2026-11-20 report\n---\nRead the notes, then write the report.\n"
        )
    }

    /// Every file under a folder, with its bytes: to show a refusal changed nothing.
    fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(folder) = stack.pop() {
            for entry in fs::read_dir(&folder).unwrap() {
                let entry = entry.unwrap();
                let path = entry.path();
                if entry.file_type().unwrap().is_dir() {
                    files.push((path.clone(), Vec::new()));
                    stack.push(path);
                } else {
                    files.push((path.clone(), fs::read(&path).unwrap()));
                }
            }
        }
        files.sort();
        files
    }

    /// Three owners: ada with an assistant whose draft waits, bob with an assistant of his
    /// own (nothing waiting), carol with none.
    struct InboxWorld {
        state: AppState,
        ada: Assistant,
        bob: Assistant,
        card: i64,
    }

    impl Served for InboxWorld {
        fn app_state(&self) -> &AppState {
            &self.state
        }
    }

    const TRIGGER: &str = "the human asks for the <weekly> report & \"more\"";

    fn inbox_world() -> InboxWorld {
        let store = SqliteStore::open_in_memory().unwrap();
        let now = now_millis();
        for (name, key) in [("ada", ADA_KEY), ("bob", BOB_KEY), ("carol", CAROL_KEY)] {
            store.create_owner(name, &secret_digest(key), now).unwrap();
        }
        let ada = assistant();
        let bob = assistant();
        let card = ada.propose("weekly-report", &skill_text(TRIGGER));
        let config = ServerConfig {
            playbooks: vec![
                PlaybookWorkspace::new("ada", &ada.dir),
                PlaybookWorkspace::new("bob", &bob.dir),
            ],
            ..ServerConfig::default()
        };
        config.check_playbooks(&store).unwrap();
        InboxWorld {
            state: AppState::new(Box::new(store), config),
            ada,
            bob,
            card,
        }
    }

    /// A session of `name`: its cookie and its CSRF token.
    async fn login_as(world: &InboxWorld, name: &str, key: &str) -> (String, String) {
        let answer = try_login(world, name, key).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
        let cookie = answer.cookie("mindrune_session").expect("a session cookie");
        let page = get(world, "/dashboard", Some(&cookie)).await;
        assert_eq!(page.status, StatusCode::OK);
        (cookie, csrf_of(&page.body))
    }

    /// The address of card `id` as the Inbox links it.
    fn card_href(inbox: &str, id: i64) -> String {
        let end = format!("/cards/{id}\"");
        let at = inbox.find(&end).expect("the Inbox links the card");
        let start = inbox[..at].rfind("href=\"").unwrap() + "href=\"".len();
        inbox[start..at + end.len() - 1].to_string()
    }

    async fn ada_card_href(world: &InboxWorld, cookie: &str) -> String {
        let inbox = get(world, "/dashboard/inbox", Some(cookie)).await;
        assert_eq!(inbox.status, StatusCode::OK, "{}", inbox.body);
        card_href(&inbox.body, world.card)
    }

    #[tokio::test]
    async fn a_card_filed_by_the_door_waits_in_its_owners_inbox() {
        let world = inbox_world();
        let (cookie, csrf) = login_as(&world, "ada", ADA_KEY).await;
        let family = get(&world, "/dashboard", Some(&cookie)).await;
        assert!(
            family
                .body
                .contains("<a href=\"/dashboard/inbox\">Inbox <span class=\"count\" aria-label=\"1 waiting\">1</span></a>"),
            "the navigation links the Inbox, with the number of cards waiting: {}",
            family.body
        );
        let inbox = get(&world, "/dashboard/inbox", Some(&cookie)).await;
        assert_eq!(inbox.status, StatusCode::OK, "{}", inbox.body);
        assert!(inbox.body.contains("1 card waits"), "{}", inbox.body);
        assert!(
            inbox.body.contains("weekly-report") && inbox.body.contains(">create<"),
            "{}",
            inbox.body
        );
        assert!(inbox.body.contains("Filed by assistant"), "{}", inbox.body);
        // What it proposes, escaped: the trigger's markup is text.
        assert!(
            inbox.body.contains(
                "A new skill, for when the human asks for the &lt;weekly&gt; report &amp; &quot;more&quot;"
            ),
            "{}",
            inbox.body
        );
        assert!(!inbox.body.contains("<weekly>"));
        let href = card_href(&inbox.body, world.card);
        assert!(href.starts_with("/dashboard/inbox/"), "{href}");
        // A card is approved from the list too; the workspace is named by its name, its
        // folder below it.
        assert!(
            inbox.body.contains(&format!("action=\"{href}/approve\"")),
            "{}",
            inbox.body
        );
        let at = inbox.body.find("<h2 id=\"ws-").unwrap();
        let heading = &inbox.body[at..at + inbox.body[at..].find("</h2>").unwrap()];
        assert!(!heading.contains('/'), "a name, not a path: {heading}");
        assert!(
            inbox.body.contains("class=\"small muted fingerprint\">/"),
            "{}",
            inbox.body
        );
        // The card: the proposed file and the two forms, each with the session's token.
        let card = get(&world, &href, Some(&cookie)).await;
        assert_eq!(card.status, StatusCode::OK, "{}", card.body);
        assert!(card.body.contains("The proposed SKILL.md"), "{}", card.body);
        assert!(card.body.contains("Write the report to reports/weekly.md"));
        assert!(!card.body.contains("<weekly>"));
        assert!(card.body.contains(&format!("action=\"{href}/approve\"")));
        assert!(card.body.contains(&format!("action=\"{href}/reject\"")));
        assert_eq!(
            card.body
                .matches(&format!("name=\"csrf\" value=\"{csrf}\""))
                .count(),
            3,
            "logout, approve and reject carry the token"
        );
        // carol has no assistant: no Inbox link, and no Inbox.
        let (carol, _) = login_as(&world, "carol", CAROL_KEY).await;
        let family = get(&world, "/dashboard", Some(&carol)).await;
        assert!(!family.body.contains("/dashboard/inbox"));
    }

    #[tokio::test]
    async fn approving_through_the_form_makes_the_skill_live() {
        let world = inbox_world();
        let (cookie, csrf) = login_as(&world, "ada", ADA_KEY).await;
        let href = ada_card_href(&world, &cookie).await;
        let answer = post(
            &world,
            &format!("{href}/approve"),
            Some(&cookie),
            &format!("csrf={csrf}"),
        )
        .await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
        assert!(
            answer.location().starts_with("/dashboard/inbox?ws="),
            "{}",
            answer.location()
        );
        // Live as the engine makes it: moved out of pending/, active at v1, answered by the human.
        let skills = world.ada.skills();
        assert!(!skills.join("pending/weekly-report").exists());
        let (live, _) = parse_skill_file(&world.ada.live_text("weekly-report")).unwrap();
        assert_eq!(live.version, Some(1));
        assert_eq!(live.status, Some(Status::Active));
        let card = world.ada.card(world.card);
        assert_eq!(card.state, CardState::Applied);
        assert_eq!(card.answered_by.as_deref(), Some("human"));
        // Back in the Inbox, a notice says what happened and nothing waits any more.
        let inbox = get(&world, answer.location(), Some(&cookie)).await;
        assert_eq!(inbox.status, StatusCode::OK);
        assert!(
            inbox
                .body
                .contains("Card #1 approved: weekly-report is live as v1"),
            "{}",
            inbox.body
        );
        assert!(inbox.body.contains("0 cards wait"), "{}", inbox.body);
        // A second answer is refused by the engine's rule and changes nothing.
        let before = snapshot(&skills);
        let again = post(
            &world,
            &format!("{href}/approve"),
            Some(&cookie),
            &format!("csrf={csrf}"),
        )
        .await;
        assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
        assert!(again.body.contains("already answered"), "{}", again.body);
        assert_eq!(snapshot(&skills), before);
        // The answered card shows how it was answered, without the forms.
        let page = get(&world, &href, Some(&cookie)).await;
        assert!(page.body.contains("Approved by human"), "{}", page.body);
        assert!(!page.body.contains("/approve\""));
    }

    #[tokio::test]
    async fn turning_a_card_down_needs_a_reason_and_records_it() {
        let world = inbox_world();
        let (cookie, csrf) = login_as(&world, "ada", ADA_KEY).await;
        let href = ada_card_href(&world, &cookie).await;
        let skills = world.ada.skills();
        let before = snapshot(&skills);
        for reason in ["", "%20%20", "%0A"] {
            let answer = post(
                &world,
                &format!("{href}/reject"),
                Some(&cookie),
                &format!("csrf={csrf}&reason={reason}"),
            )
            .await;
            assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{reason:?}");
            assert!(
                answer.body.contains("Say why you turn it down"),
                "{}",
                answer.body
            );
            assert!(answer.body.contains("Nothing was changed"));
            // The page is the card again, its forms ready to answer.
            assert!(answer.body.contains(&format!("action=\"{href}/reject\"")));
            assert_eq!(world.ada.card(world.card).state, CardState::Waiting);
            assert_eq!(snapshot(&skills), before);
        }
        let answer = post(
            &world,
            &format!("{href}/reject"),
            Some(&cookie),
            &format!(
                "csrf={csrf}&reason={}",
                form_escape("I write that report <myself>")
            ),
        )
        .await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
        let card = world.ada.card(world.card);
        assert_eq!(card.state, CardState::Rejected);
        assert_eq!(card.reason.as_deref(), Some("I write that report <myself>"));
        assert!(skills.join("rejected/weekly-report").is_dir());
        assert!(!skills.join("pending/weekly-report").exists());
        let inbox = get(&world, answer.location(), Some(&cookie)).await;
        assert!(
            inbox
                .body
                .contains("Card #1 turned down: weekly-report moved to skills/rejected/"),
            "{}",
            inbox.body
        );
        let page = get(&world, &href, Some(&cookie)).await;
        assert!(
            page.body
                .contains("Your reason: “I write that report &lt;myself&gt;”"),
            "{}",
            page.body
        );
    }

    #[tokio::test]
    async fn inbox_forms_without_the_sessions_token_are_403_and_change_nothing() {
        let world = inbox_world();
        let (cookie, csrf) = login_as(&world, "ada", ADA_KEY).await;
        let href = ada_card_href(&world, &cookie).await;
        let skills = world.ada.skills();
        let before = snapshot(&skills);
        for action in ["approve", "reject"] {
            for form in [
                "reason=no".to_string(),
                "csrf=&reason=no".to_string(),
                "csrf=mr_csrf_wrong&reason=no".to_string(),
                format!("csrf={csrf}x&reason=no"),
            ] {
                let answer = post(&world, &format!("{href}/{action}"), Some(&cookie), &form).await;
                assert_eq!(answer.status, StatusCode::FORBIDDEN, "{action} {form}");
                assert!(
                    answer.body.contains("Nothing was changed"),
                    "{}",
                    answer.body
                );
            }
            // Without a session, nothing either.
            let answer = post(
                &world,
                &format!("{href}/{action}"),
                None,
                &format!("csrf={csrf}&reason=no"),
            )
            .await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{action}");
        }
        assert_eq!(world.ada.card(world.card).state, CardState::Waiting);
        assert_eq!(snapshot(&skills), before);
    }

    #[tokio::test]
    async fn another_owners_session_cannot_list_view_or_answer_a_card() {
        let world = inbox_world();
        let (ada, _) = login_as(&world, "ada", ADA_KEY).await;
        let href = ada_card_href(&world, &ada).await;
        let ada_key = href
            .trim_start_matches("/dashboard/inbox/")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let skills = world.ada.skills();
        let before = snapshot(&skills);

        // bob has an assistant of his own: his Inbox is his, and ada's card is not in it.
        let (bob, bob_csrf) = login_as(&world, "bob", BOB_KEY).await;
        let inbox = get(&world, "/dashboard/inbox", Some(&bob)).await;
        assert_eq!(inbox.status, StatusCode::OK);
        assert!(!inbox.body.contains("weekly-report"), "{}", inbox.body);
        assert!(!inbox.body.contains(&ada_key));
        assert!(!inbox.body.contains(&world.ada.dir.display().to_string()));
        let bob_key = inbox_key_of(&inbox.body);
        // carol has none at all.
        let (carol, carol_csrf) = login_as(&world, "carol", CAROL_KEY).await;
        assert_eq!(
            get(&world, "/dashboard/inbox", Some(&carol)).await.status,
            StatusCode::NOT_FOUND
        );

        for (cookie, csrf) in [(&bob, &bob_csrf), (&carol, &carol_csrf)] {
            // ada's workspace by its key, and ada's card id in bob's own workspace.
            for path in [
                href.clone(),
                format!("/dashboard/inbox/{bob_key}/cards/{}", world.card),
                format!("/dashboard/inbox/{ada_key}/cards/abc"),
                "/dashboard/inbox/0000000000000000/cards/1".to_string(),
            ] {
                let page = get(&world, &path, Some(cookie)).await;
                assert_eq!(page.status, StatusCode::NOT_FOUND, "{path}");
                assert!(!page.body.contains("weekly-report"), "{path}");
                for action in ["approve", "reject"] {
                    let answer = post(
                        &world,
                        &format!("{path}/{action}"),
                        Some(cookie),
                        &format!("csrf={csrf}&reason=mine+now"),
                    )
                    .await;
                    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{path}/{action}");
                    assert!(!answer.body.contains("weekly-report"));
                }
            }
        }
        assert_eq!(world.ada.card(world.card).state, CardState::Waiting);
        assert_eq!(snapshot(&skills), before);
        assert!(
            world
                .bob
                .playbooks
                .ledger()
                .cards(false)
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_revision_card_shows_the_diff_of_what_would_land() {
        let world = inbox_world();
        let ada = &world.ada;
        assert_eq!(
            ada.playbooks.approve(world.card).unwrap().state,
            CardState::Applied
        );
        let report = ada
            .playbooks
            .report(&Report {
                skill: "weekly-report".into(),
                revision: 1,
                step: 2,
                turn: None,
            })
            .unwrap()
            .report;
        let token_file = ada.dir.parent().unwrap().join(format!("token-{report}"));
        let mut token = None;
        for _ in 0..400 {
            if let Ok(text) = fs::read_to_string(&token_file) {
                token = Some(text);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        let token = token.expect("the fixer hands its token back");
        let live = ada.live_text("weekly-report");
        let revised = live.replace(
            "Write the report to reports/weekly.md",
            "Write the report to reports/weekly.md, newest week first",
        );
        let fingerprint = mindrune_core::sha256(live.as_bytes());
        let card = ada
            .playbooks
            .revise(report, &revised, &fingerprint, &token, "fixer")
            .unwrap()
            .card;
        assert_eq!(ada.card(card).kind, CardKind::Revise);

        let (cookie, csrf) = login_as(&world, "ada", ADA_KEY).await;
        let inbox = get(&world, "/dashboard/inbox", Some(&cookie)).await;
        assert!(
            inbox
                .body
                .contains(&format!("A revision of v1, answering report #{report}")),
            "{}",
            inbox.body
        );
        let href = card_href(&inbox.body, card);
        let page = get(&world, &href, Some(&cookie)).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        // The diff of the text as it would land (the engine's preview: the next version).
        assert!(
            page.body.contains("<span class=\"meta\">+++ proposed"),
            "{}",
            page.body
        );
        assert!(page.body.contains(
            "<span class=\"add\">+  - do: Write the report to reports/weekly.md, newest week first"
        ));
        assert!(
            page.body
                .contains("<span class=\"del\">-  - do: Write the report to reports/weekly.md\n")
        );
        assert!(
            page.body.contains("<span class=\"add\">+version: 2"),
            "{}",
            page.body
        );
        assert!(
            page.body
                .contains(&format!("Answers report #{report}: step 2 of v1"))
        );
        let answer = post(
            &world,
            &format!("{href}/approve"),
            Some(&cookie),
            &format!("csrf={csrf}"),
        )
        .await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
        let (now, _) = parse_skill_file(&ada.live_text("weekly-report")).unwrap();
        assert_eq!(now.version, Some(2));
        assert!(
            ada.skills()
                .join("weekly-report/history/1/SKILL.md")
                .is_file()
        );
    }

    #[tokio::test]
    async fn inbox_pages_carry_the_strict_csp_and_no_inline_code() {
        let world = inbox_world();
        let (cookie, csrf) = login_as(&world, "ada", ADA_KEY).await;
        let href = ada_card_href(&world, &cookie).await;
        let pages = [
            get(&world, "/dashboard/inbox", Some(&cookie)).await,
            get(&world, &href, Some(&cookie)).await,
            post(
                &world,
                &format!("{href}/reject"),
                Some(&cookie),
                &format!("csrf={csrf}&reason="),
            )
            .await,
        ];
        for page in &pages {
            assert_eq!(
                page.headers[header::CONTENT_SECURITY_POLICY],
                CONTENT_SECURITY_POLICY
            );
            assert_eq!(page.headers[header::CACHE_CONTROL], "no-store");
            assert!(!page.body.contains(" style="), "no inline style");
            assert!(!page.body.contains("<style"), "no inline style");
            assert!(!has_event_handler(&page.body), "no inline event handlers");
            for script in page
                .body
                .match_indices("<script")
                .map(|(i, _)| &page.body[i..])
            {
                assert!(script.starts_with("<script src=\"/static/app.js?v="));
            }
        }
    }
}

#[tokio::test]
async fn a_script_s_last_failure_shows_its_cause_escaped_and_scrubbed() {
    let world = world();
    let store = world.state.store();
    let mine = store.skill(world.ada, world.mine).unwrap();
    let mut failed = run(
        mine.current_version.unwrap(),
        world.buzz,
        false,
        now_millis(),
    );
    failed.outcome.failure = Some(format!(
        "Error: Script timeout after 60000ms — game: You do not have an <axe> {ADA_KEY}"
    ));
    store.record_use(world.ada, &failed).unwrap();
    let (cookie, _) = login(&world).await;
    let page = get(
        &world,
        &format!("/dashboard/avatars/{}", world.buzz.0),
        Some(&cookie),
    )
    .await;
    let mine = section(&page.body, world.mine);
    assert!(mine.contains("Last failure (v2, "), "{mine}");
    assert!(
        mine.contains("Error: Script timeout after 60000ms — game: You do not have an &lt;axe&gt;"),
        "{mine}"
    );
    assert!(!page.body.contains(ADA_KEY));
    // A script that never failed says nothing about failures.
    assert!(!section(&page.body, world.fish).contains("Last failure"));
}

#[tokio::test]
async fn a_script_left_unused_shows_its_score_as_of_now() {
    let world = world();
    let store = world.state.store();
    let old = store
        .match_script(
            world.ada,
            &snapshot(
                world.buzz,
                "buzz",
                "old-route",
                "await walk(9);\n",
                SkillHeader::default(),
            ),
            now_millis(),
        )
        .unwrap();
    let sixty_days_ago = now_millis() - 60 * 86_400_000;
    for i in 0..5 {
        store
            .record_use(
                world.ada,
                &run(
                    old.version.id,
                    world.buzz,
                    true,
                    sixty_days_ago + i * 60_000,
                ),
            )
            .unwrap();
    }
    let stored = store.version(world.ada, old.version.id).unwrap().score;
    let (cookie, _) = login(&world).await;
    let page = get(
        &world,
        &format!("/dashboard/avatars/{}", world.buzz.0),
        Some(&cookie),
    )
    .await;
    let card = section(&page.body, old.skill.id);
    let shown: i64 = card
        .split("score ")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{card}"));
    assert!(
        shown < stored.round() as i64 - 20,
        "stored {stored}, shown {shown}: {card}"
    );
}

/// The part of a page from the element carrying `marker` to the end of its list item.
fn tile_of<'a>(body: &'a str, marker: &str) -> &'a str {
    let start = body
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in {body}"));
    let end = body[start..]
        .find("</li>")
        .map_or(body.len(), |e| start + e);
    &body[start..end]
}

#[tokio::test]
async fn the_family_page_shows_tiles_the_runs_chart_and_what_changed_since_the_last_visit() {
    let world = world();
    let before_the_runs = now_millis() - 2 * 3_600_000;
    let (session, _) = login(&world).await;

    // A first visit covers the last 24 hours (not "nothing new" over a day of runs), against
    // the 24 hours before, and remembers itself.
    let first = get(&world, "/dashboard", Some(&session)).await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(
        first.body.contains("Your first visit: the last 24 hours"),
        "{}",
        first.body
    );
    assert!(
        first.body.contains("20 runs (+20 on the period before)")
            && first.body.contains("2 failed (+2)"),
        "{}",
        first.body
    );
    let first_changes = &first.body[first
        .body
        .find("class=\"change-list\"")
        .expect("the day's changes")..];
    assert!(
        first_changes.contains("buzz/chop-oaks</a> v1 is a family skill now"),
        "{first_changes}"
    );
    let seen = first
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("mindrune_seen="))
        .expect("the visit is remembered");
    assert!(
        seen.contains("HttpOnly") && seen.contains("Path=/dashboard"),
        "{seen}"
    );

    // ada's family ran 20 scripts (chop 5, fish 3, mine 5 + 2 failed, the markup one 5).
    assert!(
        first.body.contains("20 runs from ") && first.body.contains(": 18 ok, 2 failed."),
        "{}",
        first.body
    );
    assert_eq!(
        first.body.matches("<g class=\"bar\"").count(),
        30,
        "30 days"
    );
    assert!(first.body.contains("role=\"img\""));
    assert!(first.body.contains("<summary>As a table</summary>"));

    // The tile: best and newest script, when it last ran, today's runs.
    let store = world.state.store();
    let entries = store.skills(world.ada, Some(world.buzz)).unwrap();
    let best = &entries[0];
    let tile = tile_of(&first.body, "data-avatar=\"buzz\"");
    assert!(
        tile.contains(&format!(
            "<span class=\"file\">{}.ts</span> ({})",
            best.skill
                .name
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;"),
            best.version.score.round() as i64
        )),
        "{tile}"
    );
    assert!(tile.contains("Newest"), "{tile}");
    let last_ran = entries
        .iter()
        .filter_map(|e| e.version.last_used_at)
        .max()
        .unwrap();
    // When it last ran: how long ago, with the exact time on hover.
    assert!(
        tile.contains(&format!(
            "title=\"{} UTC\">",
            mindrune_engine::when(Some(last_ran))
        )) && tile.contains(" ago</time>"),
        "{tile}"
    );
    let today = now_millis() / mindrune_store::DAY_MILLIS;
    let (all, failed) = store
        .runs_per_day(world.ada, today * mindrune_store::DAY_MILLIS)
        .unwrap()
        .iter()
        .fold((0, 0), |(a, f), d| (a + d.ok + d.failed, f + d.failed));
    let runs_today = if all == 1 {
        "1 run".to_string()
    } else {
        format!("{all} runs")
    };
    assert!(tile.contains(&runs_today), "{runs_today} in {tile}");
    assert_eq!(
        tile.contains(&format!("{failed} failed")),
        failed > 0,
        "{tile}"
    );
    assert!(!first.body.contains("rex"), "bob's avatar is not ada's");

    // Since a time before the runs: two scripts became family skills, mine fails now.
    let cookie = format!("{session}; mindrune_seen={before_the_runs}");
    let later = get(&world, "/dashboard", Some(&cookie)).await;
    let start = later
        .body
        .find("class=\"change-list\"")
        .expect("a list of changes");
    let changes = &later.body[start..start + later.body[start..].find("</ul>").unwrap()];
    assert!(changes.contains("class=\"newly-shared\""), "{changes}");
    assert!(
        changes.contains("buzz/chop-oaks</a> v1 is a family skill now"),
        "{changes}"
    );
    assert!(changes.contains(&format!("href=\"/dashboard/skills/{}\"", world.mine.0)));
    assert!(
        changes.contains("buzz/mine.ts</a> failed on its latest run"),
        "{changes}"
    );
    assert!(!changes.contains("un-shared"), "{changes}");
    assert!(
        !changes.contains("fish"),
        "fish ran cleanly and is not shared: {changes}"
    );

    // Since now: no change, no run.
    let cookie = format!("{session}; mindrune_seen={}", now_millis());
    let now = get(&world, "/dashboard", Some(&cookie)).await;
    assert!(
        now.body
            .contains("No script was shared, un-shared or started failing")
            && now.body.contains("0 runs (±0 on the period before)"),
        "{}",
        now.body
    );
}

#[tokio::test]
async fn a_script_s_page_says_how_many_runs_were_not_measured_and_why_and_which_had_no_outcome() {
    let world = world();
    let store = world.state.store();
    let fish = store.skill(world.ada, world.fish).unwrap();
    let version = fish.current_version.unwrap();
    let now = now_millis();
    for (i, reason) in [
        "output cut by tail",
        "output cut by tail",
        "no state printed before it",
    ]
    .into_iter()
    .enumerate()
    {
        let mut cut = run(version, world.buzz, true, now - 1_000 + i as i64);
        cut.outcome.unmeasured = Some(reason.into());
        store.record_use(world.ada, &cut).unwrap();
    }
    store
        .note_unrecorded(
            world.ada,
            &mindrune_store::UnrecordedCall {
                agent: world.buzz,
                event_id: "cut-1#bots/buzz/fish.ts".into(),
                at: now - 500,
                reason: mindrune_store::UnrecordedReason::OutcomeUnknown,
                detail: "bots/buzz/fish.ts: bun bots/buzz/fish.ts | tail -5".into(),
                output: None,
            },
        )
        .unwrap();
    let (session, _) = login(&world).await;
    let page = get(
        &world,
        &format!("/dashboard/skills/{}", world.fish.0),
        Some(&session),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;
    let start = body
        .find("id=\"unmeasured\"")
        .expect("the not-measured lines");
    let lines = &body[start..start + body[start..].find("</ul>").unwrap()];
    assert!(
        lines.contains("2 runs not measured: output cut by tail")
            && lines.contains("1 run not measured: no state printed before it")
            && lines.contains("1 run of unknown outcome")
            && lines.contains("run the file without `| tail` to see how it ends"),
        "{lines}"
    );
    // Each such run says so in its row: unknown, not "–".
    assert!(
        body.contains("not measured: output cut by tail</td>"),
        "{body}"
    );
    // A script whose runs were all measured says nothing of it.
    let mine = get(
        &world,
        &format!("/dashboard/skills/{}", world.mine.0),
        Some(&session),
    )
    .await;
    assert!(!mine.body.contains("id=\"unmeasured\""), "{}", mine.body);
}

#[tokio::test]
async fn a_script_s_page_lists_its_runs_charts_its_score_and_diffs_two_versions() {
    let world = world();
    let (session, _) = login(&world).await;
    let page = get(
        &world,
        &format!("/dashboard/skills/{}", world.mine.0),
        Some(&session),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;
    // Seven runs, newest first: v2's two failures, then v1's five clean runs.
    let start = body.find("id=\"runs\"").expect("a runs table");
    let runs = &body[start..start + body[start..].find("</table>").unwrap()];
    let versions: Vec<&str> = runs
        .split("<td data-label=\"Version\">")
        .skip(1)
        .map(|cell| cell.split('<').next().unwrap())
        .collect();
    assert_eq!(versions, ["v2", "v2", "v1", "v1", "v1", "v1", "v1"]);
    assert_eq!(runs.matches("class=\"run failed\"").count(), 2);
    assert!(runs.contains("no cause recorded"), "{runs}");
    assert!(runs.contains(">1 min</td>"), "{runs}");
    assert!(body.contains("71% ok of the last 7 runs"), "{body}");
    // The score chart: a point per run, the change to v2 marked, the last point the stored score.
    let store = world.state.store();
    let stored = store.versions(world.ada, world.mine).unwrap();
    // Five clean runs are dots, v2's two failures crosses.
    assert_eq!(body.matches("<circle class=\"dot\"").count(), 5, "{body}");
    assert_eq!(
        body.matches("<path class=\"dot failed\"").count(),
        2,
        "{body}"
    );
    assert_eq!(
        body.matches("class=\"version-change\" data-version=\"2\"")
            .count(),
        1
    );
    let v2 = stored.iter().find(|v| v.number == 2).unwrap();
    let v1 = stored.iter().find(|v| v.number == 1).unwrap();
    assert!(
        body.contains(&format!(
            "to {}, 2 failed runs, 1 version change.",
            (v2.score * 10.0).round() / 10.0
        )),
        "{body}"
    );
    // Versions, with the best one named, and the way to a diff.
    assert!(
        body.contains(&format!(
            "<p class=\"best\">best: v1, {}</p>",
            v1.score.round() as i64
        )),
        "{body}"
    );
    assert!(body.contains("action=\"/dashboard/skills/"), "{body}");
    assert!(
        body.contains("<option value=\"1\" selected>v1</option>"),
        "{body}"
    );

    let diff = get(
        &world,
        &format!("/dashboard/skills/{}/diff?from=1&to=2", world.mine.0),
        Some(&session),
    )
    .await;
    assert_eq!(diff.status, StatusCode::OK, "{}", diff.body);
    assert!(diff.body.contains("<h1>v1 → v2</h1>"), "{}", diff.body);
    assert!(
        diff.body
            .contains("<span class=\"del\">-await mine(1);\n</span>"),
        "{}",
        diff.body
    );
    assert!(
        diff.body
            .contains("<span class=\"add\">+await mine(2);\n</span>"),
        "{}",
        diff.body
    );
    for bad in ["from=1", "from=1&to=x", "from=0&to=2"] {
        let answer = get(
            &world,
            &format!("/dashboard/skills/{}/diff?{bad}", world.mine.0),
            Some(&session),
        )
        .await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{bad}");
    }
    let missing = get(
        &world,
        &format!("/dashboard/skills/{}/diff?from=1&to=9", world.mine.0),
        Some(&session),
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    // Another family's script is not there, page or diff; without a login, the login page.
    for path in [
        format!("/dashboard/skills/{}", world.bob_skill.0),
        format!("/dashboard/skills/{}/diff?from=1&to=1", world.bob_skill.0),
    ] {
        let answer = get(&world, &path, Some(&session)).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{path}");
        assert!(!answer.body.contains("bobs-secret-route"), "{path}");
    }
    let anonymous = get(&world, &format!("/dashboard/skills/{}", world.mine.0), None).await;
    assert_eq!(anonymous.location(), "/dashboard/login");
    // The shared script's page says so; its code holds the owner's key, never shown.
    let chop = get(
        &world,
        &format!("/dashboard/skills/{}", world.chop.0),
        Some(&session),
    )
    .await;
    assert!(chop.body.contains(FAMILY_TAG), "{}", chop.body);
    assert!(!chop.body.contains(ADA_KEY));
}

#[tokio::test]
async fn the_avatar_page_shows_trends_gone_files_and_a_proven_script_s_way_to_being_shared() {
    let world = world();
    let store = world.state.store();
    let now = now_millis();
    // walk: no header, six clean runs: proven, and one header away from the family.
    let walk = store
        .match_script(
            world.ada,
            &snapshot(
                world.buzz,
                "buzz",
                "walk",
                "await walk();\n",
                SkillHeader::default(),
            ),
            now,
        )
        .unwrap();
    for i in 0..6 {
        store
            .record_use(
                world.ada,
                &run(walk.version.id, world.buzz, true, now - 600_000 + i * 1000),
            )
            .unwrap();
    }
    // fish's file is deleted: it stays, private, with its runs.
    store.mark_file_gone(world.ada, world.fish, now).unwrap();
    let (cookie, _) = login(&world).await;
    let page = get(
        &world,
        &format!("/dashboard/avatars/{}", world.buzz.0),
        Some(&cookie),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;

    let walk_score = store.versions(world.ada, walk.skill.id).unwrap()[0].score_at(now_millis());
    let walk_entry = section(body, walk.skill.id);
    assert!(
        walk_entry.contains(&format!(
            "<p class=\"share-hint\">add the @skill header: 6 runs, {} ≥ 600</p>",
            walk_score.round() as i64
        )),
        "{walk_entry}"
    );
    let fish = section(body, world.fish);
    assert!(fish.contains(&private_tag("Private")), "{fish}");
    assert!(fish.contains("Its file is gone since"), "{fish}");
    assert!(fish.contains("3 runs"), "{fish}");
    assert!(
        !fish.contains("3/5 runs"),
        "a gone file is not on its way to sharing: {fish}"
    );

    let chop = section(body, world.chop);
    assert!(chop.contains("<svg class=\"sparkline\""), "{chop}");
    assert!(chop.contains("100% ok of the last 5 runs"), "{chop}");
    assert!(chop.contains(&format!("href=\"/dashboard/skills/{}\"", world.chop.0)));
    let mine = section(body, world.mine);
    assert!(mine.contains("71% ok of the last 7 runs"), "{mine}");
    // The sharing bar is said once, at the page's foot.
    assert_eq!(body.matches("id=\"sharing-bar\"").count(), 1);
    assert!(body.find("id=\"sharing-bar\"").unwrap() > body.find("id=\"stats-title\"").unwrap());

    // The script's own page of the gone file keeps its history.
    let fish_page = get(
        &world,
        &format!("/dashboard/skills/{}", world.fish.0),
        Some(&cookie),
    )
    .await;
    assert!(
        fish_page.body.contains(&private_tag("Private")),
        "{}",
        fish_page.body
    );
    assert!(
        fish_page
            .body
            .contains("Its file is gone from <code>bots/buzz/fish.ts</code>")
    );
    assert_eq!(fish_page.body.matches("class=\"run ok\"").count(), 3);
}

#[tokio::test]
async fn the_console_shows_the_server_s_health_and_logs_out() {
    let world = world();
    let bearer = format!("Bearer {}", world.operator_token);
    // A refused runner call, and a runner's call with its spool backlog.
    let refused = send(
        &world,
        Request::get("/v1/whoami")
            .header(header::AUTHORIZATION, "Bearer mr_runner_nope")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let token = new_secret("mr_runner_");
    world
        .state
        .store()
        .issue_runner_token(world.ada, world.buzz, &secret_digest(&token), now_millis())
        .unwrap();
    let whoami = send(
        &world,
        Request::get("/v1/whoami")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(mindrune_server::wire::SPOOL_HEADER, "7")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(whoami.status, StatusCode::OK, "{}", whoami.body);
    let page = send(
        &world,
        Request::get("/console")
            .header(header::AUTHORIZATION, &bearer)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    assert!(
        body.contains("kept in the library, so a restart goes on from them"),
        "{body}"
    );
    assert!(body.contains("Events per second, last hour"));
    assert!(body.contains("id=\"health-minutes\""), "{body}");
    let start = body.find("id=\"runners\"").expect("a runners table");
    let runners = &body[start..start + body[start..].find("</table>").unwrap()];
    assert!(runners.contains(">buzz</td>"), "{runners}");
    assert!(runners.contains(">7 items</td>"), "{runners}");
    let start = body.find("id=\"refused\"").expect("a refusals table");
    let refused = &body[start..start + body[start..].find("</table>").unwrap()];
    assert!(
        refused.contains(
            "401 Unauthorized (runner API: /v1/whoami)</td><td data-label=\"Requests\" class=\"num\">1</td>"
        ),
        "{refused}"
    );
    // The database of an in-memory library has no file to measure.
    assert!(
        body.contains("<dt>Database size</dt><dd>unknown</dd>"),
        "{body}"
    );
    // Reuse over time: ada's 20 runs, none from a family skill, bob's one.
    assert!(body.contains("id=\"reuse-chart\""), "{body}");
    assert!(body.contains("21 runs from "), "{body}");
    assert!(
        body.contains(": 0 from a family skill, 21 other runs."),
        "{body}"
    );

    let out = post(&world, "/console/logout", None, "").await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert_eq!(out.location(), "/console/login");
    let cleared = out
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("mindrune_operator="))
        .unwrap();
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
}

// -------------------------------------------------------------------------------------------
// Runs you can point at
// -------------------------------------------------------------------------------------------

/// The rows of a script page's runs table (`<tr class="run ok|failed">`).
fn run_rows(body: &str) -> usize {
    body.matches("<tr class=\"run ").count()
}

/// The first run link of a page (`/dashboard/runs/{id}`).
fn first_run_link(body: &str) -> String {
    let at = body.find("href=\"/dashboard/runs/").expect("a run link") + "href=\"".len();
    body[at..].split('"').next().unwrap().to_string()
}

#[tokio::test]
async fn a_run_s_page_shows_its_cause_output_version_and_the_diff_before_it() {
    let world = world();
    let (session, _) = login(&world).await;
    let store = world.state.store();
    let v2 = store
        .versions(world.ada, world.mine)
        .unwrap()
        .into_iter()
        .find(|v| v.number == 2)
        .unwrap();
    let mut failed = run(v2.id, world.buzz, false, now_millis() - 1_000);
    failed.outcome.failure = Some("Error: no <b>rocks</b> left & the pick broke".into());
    failed.output = Some("mining…\n<script>alert('out')</script>\nError: no rocks left".into());
    store.record_use(world.ada, &failed).unwrap();
    let newest = store
        .script_runs(world.ada, world.mine, 1)
        .unwrap()
        .remove(0);

    // The script page's newest row links to the run's page.
    let script = get(
        &world,
        &format!("/dashboard/skills/{}", world.mine.0),
        Some(&session),
    )
    .await;
    let link = first_run_link(&script.body);
    assert_eq!(link, format!("/dashboard/runs/{}", newest.id));

    let page = get(&world, &link, Some(&session)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;
    // Its script and avatar, linked; its result, when, and a permalink.
    assert!(
        body.contains(&format!(
            "href=\"/dashboard/skills/{}\">mine.ts</a>",
            world.mine.0
        )),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "href=\"/dashboard/avatars/{}\">buzz</a>",
            world.buzz.0
        )),
        "{body}"
    );
    assert!(
        body.contains("<span class=\"run-failed\">failed</span>"),
        "{body}"
    );
    assert!(body.contains("just now"), "{body}");
    assert!(body.contains("took 1 min"), "{body}");
    assert!(
        body.contains(&format!(
            "href=\"/dashboard/runs/{}\" rel=\"bookmark\"",
            newest.id
        )),
        "{body}"
    );
    // The cause and the output, escaped.
    assert!(
        body.contains("Error: no &lt;b&gt;rocks&lt;/b&gt; left &amp; the pick broke"),
        "{body}"
    );
    assert!(
        body.contains("&lt;script&gt;alert('out')&lt;/script&gt;"),
        "{body}"
    );
    assert!(!body.contains("<script>alert"), "{body}");
    assert!(!body.contains("<b>rocks"), "{body}");
    // The version it ran, its code, and the diff against the one before it.
    assert!(body.contains("ran v2"), "{body}");
    assert!(
        body.contains(&format!(
            "/dashboard/skills/{}/code?version=2",
            world.mine.0
        )),
        "{body}"
    );
    assert!(body.contains("What changed in v2"), "{body}");
    assert!(
        body.contains("<span class=\"del\">-await mine(1);"),
        "{body}"
    );
    assert!(
        body.contains("<span class=\"add\">+await mine(2);"),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "/dashboard/skills/{}/diff?from=1&amp;to=2",
            world.mine.0
        )),
        "{body}"
    );

    // A v1 run has nothing before it: its code, no diff.
    let v1_run = store
        .script_runs_where(
            world.ada,
            world.mine,
            &mindrune_store::RunFilter {
                version: Some(1),
                ..Default::default()
            },
            1,
            0,
        )
        .unwrap()
        .remove(0);
    let first = get(
        &world,
        &format!("/dashboard/runs/{}", v1_run.id),
        Some(&session),
    )
    .await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(first.body.contains("the first version"), "{}", first.body);
    assert!(first.body.contains("<span class=\"run-ok\">ok</span>"));
    assert!(!first.body.contains("id=\"cause\""));
    assert!(!first.body.contains("class=\"diff\""));
}

#[tokio::test]
async fn another_family_s_run_is_not_found_and_so_is_nonsense() {
    let world = world();
    let (session, _) = login(&world).await;
    let store = world.state.store();
    let bob = store.owner_by_name("bob").unwrap().unwrap();
    let bobs = store
        .script_runs(bob.id, world.bob_skill, 1)
        .unwrap()
        .remove(0);
    // Bob's run under its own id, for Ada: not found, and nothing of it shown.
    let page = get(
        &world,
        &format!("/dashboard/runs/{}", bobs.id),
        Some(&session),
    )
    .await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(!page.body.contains("bobs-secret-route"), "{}", page.body);
    for path in [
        "/dashboard/runs/0",
        "/dashboard/runs/-3",
        "/dashboard/runs/x",
        "/dashboard/runs/99999",
    ] {
        assert_eq!(
            get(&world, path, Some(&session)).await.status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    // Without a session, the login.
    let anonymous = get(&world, &format!("/dashboard/runs/{}", bobs.id), None).await;
    assert_eq!(anonymous.status, StatusCode::SEE_OTHER);
    assert_eq!(anonymous.location(), "/dashboard/login");
}

#[tokio::test]
async fn the_runs_list_filters_by_result_version_and_avatar() {
    let world = world();
    let (session, _) = login(&world).await;
    let list = |query: &str| {
        let path = format!("/dashboard/skills/{}{query}", world.mine.0);
        let world = &world;
        let session = session.clone();
        async move { get(world, &path, Some(&session)).await }
    };
    // mine: v1 ran cleanly 5 times, v2 failed twice, all by buzz.
    let all = list("").await;
    assert_eq!(run_rows(&all.body), 7);
    assert!(all.body.contains("<form method=\"get\""), "{}", all.body);
    assert!(all.body.contains("name=\"result\""));
    assert!(all.body.contains("<option value=\"2\">v2</option>"));
    let failed = list("?result=failed").await;
    assert_eq!(failed.status, StatusCode::OK);
    assert_eq!(run_rows(&failed.body), 2);
    assert_eq!(failed.body.matches("<tr class=\"run failed\"").count(), 2);
    assert!(failed.body.contains("<option value=\"failed\" selected>"));
    assert_eq!(run_rows(&list("?result=ok").await.body), 5);
    assert_eq!(run_rows(&list("?version=1").await.body), 5);
    assert_eq!(run_rows(&list("?result=ok&version=2").await.body), 0);
    assert!(
        list("?result=ok&version=2")
            .await
            .body
            .contains("No runs match")
    );
    // The form's "any" is an empty value.
    assert_eq!(run_rows(&list("?result=&version=&avatar=").await.body), 7);
    assert_eq!(
        run_rows(&list(&format!("?avatar={}", world.buzz.0)).await.body),
        7
    );
    // Another family's avatar ran none of Ada's runs.
    assert_eq!(
        run_rows(&list(&format!("?avatar={}", world.rex.0)).await.body),
        0
    );
    for nonsense in ["?result=maybe", "?version=0", "?avatar=x", "?page=0"] {
        assert_eq!(
            list(nonsense).await.status,
            StatusCode::BAD_REQUEST,
            "{nonsense}"
        );
    }
}

#[tokio::test]
async fn the_runs_list_pages_past_a_hundred_newest_first() {
    let world = world();
    let (session, _) = login(&world).await;
    let store = world.state.store();
    let fish = store.versions(world.ada, world.fish).unwrap().remove(0);
    // 120 older runs of fish, a day ago, one a second: with its 3 it has 123; every tenth failed.
    let start = now_millis() - 86_400_000;
    for i in 0..120 {
        store
            .record_use(
                world.ada,
                &run(fish.id, world.buzz, i % 10 != 0, start + i * 1000),
            )
            .unwrap();
    }
    let page = |query: &str| {
        let path = format!("/dashboard/skills/{}{query}", world.fish.0);
        let world = &world;
        let session = session.clone();
        async move { get(world, &path, Some(&session)).await }
    };
    let first = page("").await;
    assert_eq!(run_rows(&first.body), 100);
    let older = format!("/dashboard/skills/{}?page=2#runs-title", world.fish.0);
    assert!(
        first
            .body
            .contains(&format!("href=\"{older}\" rel=\"next\">older runs")),
        "{}",
        first.body
    );
    assert!(!first.body.contains("rel=\"prev\""));
    let second = page("?page=2").await;
    assert_eq!(run_rows(&second.body), 23);
    assert!(!second.body.contains("rel=\"next\""));
    assert!(second.body.contains("newer runs"));
    // The oldest run is the last row of the last page.
    let oldest = store
        .script_runs_where(world.ada, world.fish, &Default::default(), 1, 122)
        .unwrap()
        .remove(0);
    assert_eq!(oldest.outcome.at, start);
    let last_link = second
        .body
        .rfind(&format!("href=\"/dashboard/runs/{}\"", oldest.id));
    assert!(last_link.is_some(), "{}", second.body);
    assert!(
        !first
            .body
            .contains(&format!("href=\"/dashboard/runs/{}\"", oldest.id))
    );
    assert_eq!(run_rows(&page("?page=3").await.body), 0);
    // Filters and pages together: 12 failed runs fit one page; 111 ok ones take two, and the
    // links keep the filter.
    assert_eq!(run_rows(&page("?result=failed").await.body), 12);
    let ok = page("?result=ok").await;
    assert_eq!(run_rows(&ok.body), 100);
    assert!(
        ok.body
            .contains("?result=ok&amp;page=2#runs-title\" rel=\"next\""),
        "{}",
        ok.body
    );
    let ok2 = page("?result=ok&page=2").await;
    assert_eq!(run_rows(&ok2.body), 11);
    assert_eq!(ok2.body.matches("<tr class=\"run failed\"").count(), 0);
}

#[tokio::test]
async fn a_runner_that_stopped_with_events_in_its_spool_needs_attention() {
    let world = world();
    let (cookie, _) = login(&world).await;
    let contact = |minutes_ago: i64, backlog: u64| mindrune_server::RunnerContact {
        owner: world.ada,
        agent: "buzz".into(),
        at: now_millis() - minutes_ago * 60_000,
        backlog: Some(backlog),
        hook_failures: None,
    };
    // Asked two minutes ago with events waiting: still running, nothing to say.
    world.state.health().note_runner(world.buzz, contact(2, 4));
    let page = get(&world, "/dashboard", Some(&cookie)).await;
    assert!(!page.body.contains("runner-stopped"), "{}", page.body);
    // Silent for ten minutes with four events in its spool: stopped.
    world.state.health().note_runner(world.buzz, contact(10, 4));
    for path in [
        "/dashboard".to_owned(),
        format!("/dashboard/avatars/{}", world.buzz.0),
    ] {
        let page = get(&world, &path, Some(&cookie)).await;
        let start = page
            .body
            .find("class=\"runner-stopped\"")
            .unwrap_or_else(|| panic!("{path}: {}", page.body));
        let item = &page.body[start..start + page.body[start..].find("</li>").unwrap()];
        assert!(item.contains("buzz</a>'s runner stopped"), "{item}");
        assert!(item.contains("with 4 events still in its spool"), "{item}");
        assert!(item.contains("Next: start buzz's runner again"), "{item}");
    }
    // Another family's page never shows it.
    let answer = try_login(&world, "bob", BOB_KEY).await;
    let bob = answer.cookie("mindrune_session").expect("a session cookie");
    let page = get(&world, "/dashboard", Some(&bob)).await;
    assert!(!page.body.contains("runner-stopped"), "{}", page.body);
}

#[tokio::test]
async fn since_the_last_visit_says_the_xp_levels_and_wealth_the_family_gained() {
    let world = world();
    // buzz reported three hours ago and an hour ago: 2,500 XP then 13,363, 1,000 coins then
    // 1,500, the same levels.
    report_states(&world, &[(3, 1_000, 2_500), (1, 1_500, 13_363)]).await;
    let (cookie, _) = login(&world).await;
    let page = get(&world, "/dashboard", Some(&cookie)).await;
    let start = page.body.find("<ul class=\"period\">").expect("the period");
    let period = &page.body[start..start + page.body[start..].find("</ul>").unwrap()];
    for line in [
        "<li class=\"period-xp\">13,363 XP (+10,863)</li>",
        "<li class=\"period-levels\">total level 31 (±0)</li>",
        "<li class=\"period-wealth\">wealth 1,500 coins (+500)</li>",
    ] {
        assert!(period.contains(line), "{line} in {period}");
    }
}
