//! The owner's dashboard and the operator's console, in process: every request goes through
//! the real router (`app::router`) over an in-memory library built with the `Store` API.
//!
//! Two families: ada's (avatar buzz: a shared script, a headed one at 3/5 runs, a private one
//! with two versions, one whose name and goal are markup) and bob's (avatar rex, one script),
//! so every test can also ask for the other family's ids.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use mindrune_engine::ingest::now_millis;
use mindrune_server::app::{self, AppState, CONTENT_SECURITY_POLICY};
use mindrune_server::auth::{new_secret, secret_digest};
use mindrune_server::config::ServerConfig;
use mindrune_store::{
    AgentId, HeaderState, NewUse, Outcome, OwnerId, ScriptSnapshot, SkillHeader, SkillId,
    SqliteStore, Store, VersionId,
};
use tower::ServiceExt as _;

const ADA_KEY: &str = "mrk_ada_0123456789abcdef0123456789abcdef";
const BOB_KEY: &str = "mrk_bob_0123456789abcdef0123456789abcdef";

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
        digest: mindrune_core::digest::sha256(code.as_bytes()),
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
    let ada = store.create_owner("ada", ADA_KEY, now).unwrap();
    let bob = store.create_owner("bob", BOB_KEY, now).unwrap();
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

async fn send(world: &World, request: Request<Body>) -> Answer {
    let response = app::router(world.state.clone())
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

async fn get(world: &World, path: &str, cookie: Option<&str>) -> Answer {
    let mut request = Request::get(path);
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    send(world, request.body(Body::empty()).unwrap()).await
}

async fn post(world: &World, path: &str, cookie: Option<&str>, form: &str) -> Answer {
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

fn form_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Logs in as `name` with `key` the way a browser does: open the login page, post its form.
async fn try_login(world: &World, name: &str, key: &str) -> Answer {
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
async fn code_is_plain_text_and_downloads_as_a_ts_file() {
    let world = world();
    let (cookie, _) = login(&world).await;
    let view = get(
        &world,
        &format!("/dashboard/skills/{}/code", world.chop.0),
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
        &format!("/dashboard/skills/{}/code", world.mine.0),
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
    assert!(chop.contains("👪 Family"), "{chop}");
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
    assert!(fish.contains("🔒 Private"), "{fish}");
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
        mine.find("<td>v2").unwrap() < mine.find("<td>v1").unwrap(),
        "newest first: {mine}"
    );
    // The stats: none reported yet.
    assert!(body.contains("No state reported yet"));
    // The avatar's counts.
    assert!(body.contains("4 scripts · 2 family"));
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
        .save_avatar_state(world.ada, world.buzz, &stats.to_string(), now_millis())
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
        "Quests (2)",
        "Cook&#39;s Assistant",
        "&lt;b&gt;The Restless Ghost",
        "12,345 coins",
        "Bronze axe",
        "Oak logs",
        "1,500",
    ] {
        assert!(page.body.contains(text), "{text}: {}", page.body);
    }
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
            .contains("<td>chop-oaks</td><td>v1</td><td class=\"num\">5</td>"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("<td>fish</td>"), "fish is not shared");
    assert!(!page.body.contains("<td>mine</td>"));
    assert!(!page.body.contains(ADA_KEY) && !page.body.contains(BOB_KEY));
    assert!(!page.body.contains("<form"), "read-only: no forms");
    // ada's row: 20 runs in the window, none from a family skill.
    assert!(page.body.contains("<tr><td>ada</td><td class=\"num\">1</td><td class=\"num\">20</td><td class=\"num\">0</td><td class=\"num\">0 %</td>"), "{}", page.body);

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
    assert!(chop.contains("👪 Family"), "{chop}");
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
        &format!("/dashboard/skills/{}/code", world.chop.0),
        Some(&cookie),
    )
    .await;
    assert!(
        code.body.starts_with("await chop();"),
        "the shown version's code: {}",
        code.body
    );
}
