//! The dashboard and the console in a real browser: headless Chromium driven over the
//! WebDriver protocol by chromedriver.
//!
//! Requirement: Debian's `chromium` and `chromium-driver` packages (`/usr/bin/chromium` and
//! `chromedriver` on the PATH): `apt-get install -y chromium chromium-driver`. `.ci/run`
//! installs them when they are missing. Without them this test fails and says so; set
//! `MINDRUNE_SKIP_BROWSER=1` to skip it instead (it prints a note).
//!
//! The server runs in process on a free port, over a library prepared the way a real one fills
//! up: an owner and an avatar through the `Store` API, then runs recorded by the engine's
//! `Recorder` from real script files in a temporary workspace (one script shared after 5 good
//! runs, one headed at 3/5, one private with two versions). WebDriver is a dozen HTTP calls,
//! made here with `ureq`. Screenshots (desktop and a 390-px phone) are written as PNG files to
//! `target/browser-screenshots/`.

use mindrune_store::Directory as _;
use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mindrune_engine::now_millis;

use mindrune_server::AppState;
use mindrune_server::ServerConfig;
use mindrune_server::{new_secret, secret_digest};
use mindrune_store::Recording as _;
use mindrune_store::{SqliteStore, Standing};
use serde_json::{Value, json};

const OWNER_KEY: &str = "mrk_ada0b20e5e20123456789abcdef0123456789abcdef01234";
const CHROMIUM: &str = "/usr/bin/chromium";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

// -------------------------------------------------------------------------------------------
// A tiny WebDriver client
// -------------------------------------------------------------------------------------------

/// chromedriver, stopped when the test ends (also when it fails).
struct Driver {
    child: Child,
    base: String,
    http: ureq::Agent,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free local port")
        .port()
}

impl Driver {
    fn start() -> Driver {
        let port = free_port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let http: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let driver = Driver {
            child,
            base: format!("http://127.0.0.1:{port}"),
            http,
        };
        wait_for("chromedriver to answer", Duration::from_secs(20), || {
            driver
                .http
                .get(format!("{}/status", driver.base))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_json::<Value>().ok())
                .is_some_and(|v| v["value"]["ready"] == json!(true))
        });
        driver
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        match self.try_call(method, path, body) {
            Ok(value) => value,
            Err(problem) => panic!("{problem}"),
        }
    }

    /// A WebDriver call that may fail (an element that went stale while a page reloaded).
    fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let url = format!("{}{path}", self.base);
        let answer = match (method, body) {
            ("GET", _) => self.http.get(&url).call(),
            ("DELETE", _) => self.http.delete(&url).call(),
            (_, body) => self
                .http
                .post(&url)
                .send_json(body.unwrap_or_else(|| json!({}))),
        };
        let mut response = answer.unwrap_or_else(|err| panic!("{method} {path}: {err}"));
        let status = response.status();
        let value: Value = response
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_json()
            .unwrap_or(Value::Null);
        if status.is_success() {
            Ok(value["value"].clone())
        } else {
            Err(format!(
                "WebDriver {method} {path} answered {status}: {value}"
            ))
        }
    }

    /// A new browser window; `phone` emulates a phone's screen of that size (a headless
    /// window itself cannot be narrower than 500 px).
    fn session(&self, width: u32, height: u32, phone: bool) -> Session<'_> {
        let mut capabilities = json!({
            "capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": [
                        "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                        format!("--window-size={width},{height}"),
                    ],
                },
            }},
        });
        if phone {
            capabilities["capabilities"]["alwaysMatch"]["goog:chromeOptions"]["mobileEmulation"] = json!({
                "deviceMetrics": {"width": width, "height": height, "pixelRatio": 2, "touch": true},
            });
        }
        let value = self.call("POST", "/session", Some(capabilities));
        let id = value["sessionId"]
            .as_str()
            .expect("a WebDriver session id")
            .to_string();
        Session { driver: self, id }
    }
}

/// A browser window, closed when the test ends.
struct Session<'d> {
    driver: &'d Driver,
    id: String,
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let url = format!("{}/session/{}", self.driver.base, self.id);
        let _ = self.driver.http.delete(&url).call();
    }
}

impl Session<'_> {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.driver
            .call(method, &format!("/session/{}{path}", self.id), body)
    }

    fn go(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    fn url(&self) -> String {
        self.call("GET", "/url", None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    fn find(&self, css: &str) -> String {
        let value = self.call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        value[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element for `{css}`: {value}"))
            .to_string()
    }

    fn count(&self, css: &str) -> usize {
        self.call(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        )
        .as_array()
        .map_or(0, Vec::len)
    }

    fn click(&self, css: &str) {
        let element = self.find(css);
        self.call("POST", &format!("/element/{element}/click"), None);
    }

    fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css);
        self.call(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        );
    }

    fn text(&self, css: &str) -> String {
        let element = self.find(css);
        self.call("GET", &format!("/element/{element}/text"), None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    fn attribute(&self, css: &str, name: &str) -> Option<String> {
        let element = self.find(css);
        self.call("GET", &format!("/element/{element}/attribute/{name}"), None)
            .as_str()
            .map(str::to_string)
    }

    fn script(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    fn cookie(&self, name: &str) -> String {
        self.call("GET", &format!("/cookie/{name}"), None)["value"]
            .as_str()
            .unwrap_or_else(|| panic!("no cookie {name}"))
            .to_string()
    }

    fn screenshot(&self, name: &str) -> PathBuf {
        let encoded = self.call("GET", "/screenshot", None);
        let png = base64_decode(encoded.as_str().expect("a base64 screenshot"));
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("the screenshot folder can be made");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("the screenshot can be written");
        path
    }

    /// The text of `css`, or `None` while there is no such element (a page still loading, or
    /// an element gone stale as its page reloaded).
    fn try_text(&self, css: &str) -> Option<String> {
        let found = self
            .driver
            .try_call(
                "POST",
                &format!("/session/{}/element", self.id),
                Some(json!({"using": "css selector", "value": css})),
            )
            .ok()?;
        let element = found[ELEMENT].as_str()?.to_string();
        self.driver
            .try_call(
                "GET",
                &format!("/session/{}/element/{element}/text", self.id),
                None,
            )
            .ok()?
            .as_str()
            .map(str::to_string)
    }

    /// Waits until `css`'s text contains `needle` (a page that reloads after a form).
    fn wait_for_text(&self, css: &str, needle: &str) {
        let start = Instant::now();
        loop {
            let text = self.try_text(css);
            if text.as_deref().is_some_and(|t| t.contains(needle)) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "`{css}` never showed `{needle}`; it shows: {text:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    target.join("browser-screenshots")
}

/// Standard base64 (WebDriver's screenshots), without a crate for it.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter_map(value) {
        acc = (acc << 6) | c;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

fn tool_present(name: &str) -> bool {
    if name.contains('/') {
        return Path::new(name).exists();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
}

// -------------------------------------------------------------------------------------------
// The library the browser looks at
// -------------------------------------------------------------------------------------------

struct Library {
    state: AppState,
    operator_token: String,
    chop_code: String,
    _workspace: tempfile::TempDir,
    _assistant: tempfile::TempDir,
}

/// ada's personal assistant: a playbook workspace whose draft `weekly-report` waits on card #1,
/// filed through the engine's door.
fn assistant() -> (tempfile::TempDir, PathBuf) {
    use mindrune_engine::{Attendance, Created, Proposal, Suggester};
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().canonicalize().unwrap();
    let dir = home_path.join("assistant");
    std::fs::create_dir_all(&dir).unwrap();
    write(
        &dir,
        "playbooks.toml",
        &format!("tools = []\nhome = {:?}\n", home_path.display().to_string()),
    );
    write(
        &dir,
        "permissions.yaml",
        &mindrune_core::Permissions::shipped_default().render(),
    );
    let text = "---\ntrigger: the human asks for the weekly report\nuse_when: a week of notes exists\nnot_when: a single day's summary\npreconditions:\n  - notes/ holds this week's files\nsteps:\n  - do: Read this week's notes\n    tool: workspace_read\n  - do: Write the report to reports/weekly.md\n    tool: file_write\nexpected_result: reports/weekly.md exists\nfailure_modes:\n  - last week's notes get included\nevidence:\n  - the 2026-11-20 report\n---\nRead the notes, then write the report.\n";
    let (skill, _) = mindrune_core::parse_skill_file(text).unwrap();
    let playbooks = mindrune_engine::Playbooks::open(&dir).unwrap();
    let proposal = Proposal {
        name: "weekly-report".into(),
        skill,
        suggested_by: Suggester::Assistant,
        accepted_as_done: false,
    };
    let created = playbooks.create(&proposal, Attendance::Attended).unwrap();
    assert!(
        matches!(
            created,
            Created::Filed {
                card: 1,
                answered: None
            }
        ),
        "{created:?}"
    );
    (home, dir)
}

fn write(workspace: &Path, path: &str, text: &str) {
    let path = workspace.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn library() -> Library {
    let workspace = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_in_memory().unwrap();
    let now = now_millis();
    let owner = store
        .create_owner("ada", &secret_digest(OWNER_KEY), now)
        .unwrap();
    let ws = workspace.path().display().to_string();
    let buzz = store.create_agent(owner.id, "buzz", &ws, now).unwrap();
    store.create_agent(owner.id, "pickles", &ws, now).unwrap();
    let operator_token = new_secret("mr_operator_");
    store
        .issue_operator_token(&secret_digest(&operator_token), now)
        .unwrap();
    let mut stats = json!({
        "levels": {"Woodcutting": 31, "Fishing": 12, "Attack": 20},
        "xp": {"Woodcutting": 15_000, "Fishing": 1_200, "Attack": 4_500},
        "quests": ["Cook's Assistant"],
        "wealth": 9_000,
        "gear": ["Bronze axe", "Leather boots"],
        "bank": {"Oak logs": 1500, "Raw shrimps": 27},
    });
    // An earlier report, so the wealth chart has two points.
    store
        .save_avatar_state(
            owner.id,
            buzz.id,
            &stats.to_string(),
            Some(Standing::coins(9_000)),
            now - 2 * 3_600_000,
        )
        .unwrap();
    stats["wealth"] = json!(12345);
    store
        .save_avatar_state(
            owner.id,
            buzz.id,
            &stats.to_string(),
            Some(Standing::coins(12345)),
            now,
        )
        .unwrap();

    let chop_code = "import { runScript } from '../../sdk/runner';\n\
                     await runScript(async ({ bot }) => {\n  \
                     for (let i = 0; i < 3 && bot.inventory.free() > 0; i++) await bot.chop('Oak');\n  \
                     await bot.bank();\n});\n";
    write(
        workspace.path(),
        "bots/buzz/chop-oaks.ts",
        &format!(
            "/** @skill chop-oaks\n * Goal: chop oaks west of Draynor and bank the logs\n * Preconditions: an axe, Woodcutting 15\n */\n{chop_code}"
        ),
    );
    write(
        workspace.path(),
        "bots/buzz/fish.ts",
        "/** @skill fish\n * Goal: fish shrimps at Lumbridge swamp\n */\nawait bot.fish('Shrimps');\n",
    );
    write(
        workspace.path(),
        "bots/buzz/walk.ts",
        "await bot.walkTo(3222, 3218);\n",
    );

    let (assistant_home, assistant) = assistant();
    let config = ServerConfig {
        playbooks: vec![mindrune_server::PlaybookWorkspace::new("ada", assistant)],
        ..ServerConfig::default()
    };
    let state = AppState::new(Box::new(store), config);
    let recorder = state.recorder();
    let mut n = 0;
    let mut run = |script: &str, ok: bool| {
        n += 1;
        let event = json!({
            "id": format!("ev-{n}"), "agent": "buzz", "kind": "shell",
            "command": format!("bun bots/buzz/{script}.ts"), "cwd": "/work",
            "ok": ok, "duration_ms": 60_000,
        });
        let recorded = recorder.record_line(&event.to_string()).unwrap();
        assert_eq!(recorded.runs.len(), 1, "{recorded:?}");
    };
    for _ in 0..5 {
        run("chop-oaks", true);
    }
    for _ in 0..3 {
        run("fish", true);
    }
    for _ in 0..2 {
        run("walk", true);
    }
    // An edit of walk.ts is its v2.
    write(
        workspace.path(),
        "bots/buzz/walk.ts",
        "await bot.walkTo(3222, 3219);\n",
    );
    run("walk", false);
    // pickles ran fetch.ts once a day, and has been quiet for a week since.
    write(
        workspace.path(),
        "bots/pickles/fetch.ts",
        "await bot.walkTo(3200, 3200);\n",
    );
    for days_ago in [10, 9, 8, 7] {
        n += 1;
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(
            i128::from(now - days_ago * 86_400_000) * 1_000_000,
        )
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
        let event = json!({
            "id": format!("ev-{n}"), "agent": "pickles", "kind": "shell", "at": at,
            "command": "bun bots/pickles/fetch.ts", "cwd": "/work",
            "ok": true, "duration_ms": 30_000,
        });
        let recorded = recorder.record_line(&event.to_string()).unwrap();
        assert_eq!(recorded.runs.len(), 1, "{recorded:?}");
    }
    Library {
        state,
        operator_token,
        chop_code: chop_code.to_string(),
        _workspace: workspace,
        _assistant: assistant_home,
    }
}

// -------------------------------------------------------------------------------------------

#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end story in a real browser, told in order"
)]
#[test]
fn the_dashboard_and_the_console_work_in_a_real_browser() {
    if std::env::var("MINDRUNE_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("note: MINDRUNE_SKIP_BROWSER=1: the browser test was skipped");
        return;
    }
    let missing: Vec<&str> = [CHROMIUM, "chromedriver"]
        .into_iter()
        .filter(|tool| !tool_present(tool))
        .collect();
    assert!(
        missing.is_empty(),
        "the browser test needs Chromium and chromedriver, and {} is missing: install them with \
         `apt-get install -y chromium chromium-driver` (or set MINDRUNE_SKIP_BROWSER=1 to skip this test)",
        missing.join(" and ")
    );

    let library = library();
    let store = library.state.store();
    let owner = store.owner_by_name("ada").unwrap().unwrap();
    let buzz = store.agent_by_name("buzz").unwrap().unwrap();
    let entries = store.skills(owner.id, Some(buzz.id)).unwrap();
    let id_of = |name: &str| {
        entries
            .iter()
            .find(|e| e.skill.name == name)
            .unwrap_or_else(|| panic!("{name} is a skill"))
            .skill
            .id
            .0
    };
    let (chop, fish, walk) = (id_of("chop-oaks"), id_of("fish"), id_of("walk"));
    assert!(
        entries
            .iter()
            .find(|e| e.skill.id.0 == chop)
            .unwrap()
            .family
    );

    // The server, in process, on a free port.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = runtime.spawn(mindrune_server::serve(
        library.state.clone(),
        listener,
        async {
            let _ = stopped.await;
        },
    ));

    let driver = Driver::start();
    let mut shots = Vec::new();
    {
        let browser = driver.session(1280, 900, false);

        // Logging in.
        browser.go(&format!("{base}/dashboard"));
        assert!(
            browser.url().ends_with("/dashboard/login"),
            "{}",
            browser.url()
        );
        browser.type_into("#name", "ada");
        browser.type_into("#key", OWNER_KEY);
        browser.click("button[type=submit]");
        browser.wait_for_text("h1", "Your family");
        assert!(browser.url().ends_with("/dashboard"));
        assert_eq!(
            browser.script("return document.documentElement.classList.contains('js')"),
            json!(true),
            "the dashboard's script runs under the CSP"
        );
        let card = browser.text(&format!("a[href='/dashboard/avatars/{}']", buzz.id.0));
        assert!(card.contains("3 scripts · 1 family"), "{card}");
        // What needs attention comes first: walk.ts failing since its v2, the change before it
        // the suspect, with the way to what changed and to v1's code; pickles quiet for a week.
        let attention = browser.text(".attention");
        assert!(
            browser
                .text(".attention .failing-now")
                .contains("buzz/walk.ts"),
            "{attention}"
        );
        assert!(
            browser
                .text(".attention .failing-now .suspect")
                .contains("Suspect: v2"),
            "{attention}"
        );
        assert_eq!(
            browser.count(&format!(
                ".attention a[href='/dashboard/skills/{walk}/diff?from=1&to=2']"
            )),
            1,
            "{attention}"
        );
        assert_eq!(
            browser.count(&format!(
                ".attention a[href='/dashboard/skills/{walk}/code?version=1']"
            )),
            1,
            "{attention}"
        );
        assert!(
            browser
                .text(".attention .quiet")
                .contains("pickles has been quiet since"),
            "{attention}"
        );
        // The failing script is listed before the quiet avatar (more harm).
        assert!(
            attention.find("walk.ts").unwrap() < attention.find("pickles").unwrap(),
            "{attention}"
        );
        shots.push(browser.screenshot("attention-desktop"));
        // The tile's numbers, and the family's runs per day: 15 runs, one failed.
        let tile = browser.text(".tile[data-avatar='buzz']");
        for text in ["Total level", "63", "12,345 coins", "Last ran"] {
            assert!(tile.contains(text), "{text} in {tile}");
        }
        assert!(
            browser
                .text(".tile[data-avatar='buzz'] .best")
                .contains("chop-oaks.ts"),
            "{tile}"
        );
        assert_eq!(browser.count("#family-runs svg g.bar"), 30, "30 days");
        let caption = browser.text("#family-runs figcaption");
        assert!(
            caption.contains("15 runs from ") && caption.contains(": 14 ok, 1 failed."),
            "{caption}"
        );
        assert_eq!(
            browser.script(
                "return document.querySelector('#family-runs svg').getBoundingClientRect().height > 50"
            ),
            json!(true),
            "the chart is drawn"
        );
        shots.push(browser.screenshot("family-desktop"));

        // An avatar's page.
        browser.click(&format!("a[href='/dashboard/avatars/{}']", buzz.id.0));
        browser.wait_for_text("h1", "buzz");
        assert!(
            browser
                .text(&format!("#skill-{chop} .tag"))
                .contains("Family")
        );
        assert!(
            browser
                .text(&format!("#skill-{chop} .facts"))
                .contains("v1 · 1 version")
        );
        assert!(
            browser
                .text(&format!("#skill-{chop} .goal"))
                .contains("chop oaks west of Draynor")
        );
        assert!(
            browser
                .text(&format!("#skill-{fish} .tag"))
                .contains("Not shared yet")
        );
        let progress = browser.text(&format!("#skill-{fish} .progress"));
        assert!(
            progress.starts_with("fish.ts: 3/5 runs, score "),
            "{progress}"
        );
        assert!(progress.ends_with("/600 — not shared yet"), "{progress}");
        assert_eq!(
            browser.count(&format!("#skill-{walk} .progress")),
            0,
            "no header, nothing about sharing"
        );
        let stats = browser.text(".stats");
        for text in [
            "Woodcutting",
            "31",
            "Cook's Assistant",
            "12,345 coins",
            "15,000 XP",
            "Bronze axe",
            "Oak logs",
        ] {
            assert!(stats.contains(text), "{text} in {stats}");
        }
        assert!(
            stats.contains("9,000 coins at first and 12,345 coins at last"),
            "the wealth chart's words: {stats}"
        );
        let drawn = browser.script(
            "const r = document.querySelector('#wealth-chart svg').getBoundingClientRect(); \
             return r.width > 100 && r.height > 50",
        );
        assert_eq!(drawn, json!(true), "the wealth chart is drawn");
        shots.push(browser.screenshot("avatar-desktop"));
        browser.script("document.querySelector('#wealth-chart').scrollIntoView(); return true");
        shots.push(browser.screenshot("avatar-wealth"));

        // The Eager family sharing switch saves itself and moves the bar and the progress line.
        browser.click("#eager");
        browser.wait_for_text("#sharing-bar", "Eager family sharing is on");
        assert!(
            browser
                .text("#sharing-bar")
                .contains("3 runs of its current version and a score of 500")
        );
        let progress = browser.text(&format!("#skill-{fish} .progress"));
        assert!(
            progress.starts_with("fish.ts: 3/3 runs, score "),
            "{progress}"
        );
        assert!(progress.contains("/500"), "{progress}");
        assert!(
            store.owner(owner.id).unwrap().eager_sharing,
            "saved on the account"
        );
        assert_eq!(
            browser.attribute("#eager", "checked").as_deref(),
            Some("true")
        );

        // View the code.
        assert_eq!(
            browser.text(&format!("#code-{chop}")),
            "",
            "closed until asked"
        );
        browser.click(&format!("#skill-{chop} details.code > summary"));
        let shown = browser.text(&format!("#code-{chop}"));
        assert!(shown.contains("await bot.chop('Oak');"), "{shown}");
        assert!(
            shown.contains("i < 3 && bot.inventory"),
            "code shown as text: {shown}"
        );
        // Copy: the button appears only with the script, and answers.
        browser.click(&format!("#skill-{chop} button.copy"));
        // The clipboard answers asynchronously: wait for the button to say what happened.
        let copy = format!("#skill-{chop} button.copy");
        let mut said = String::new();
        wait_for("the Copy button to answer", Duration::from_secs(10), || {
            said = browser.try_text(&copy).unwrap_or_default();
            said != "Copy"
        });
        assert!(said == "Copied" || said.starts_with("Selected"), "{said}");
        // Download: the link answers with the file as an attachment.
        let href = browser
            .attribute(&format!("#skill-{chop} a.download"), "href")
            .unwrap();
        let session = browser.cookie("mindrune_session");
        let url = if href.starts_with("http") {
            href.clone()
        } else {
            format!("{base}{href}")
        };
        let mut answer = ureq::get(&url)
            .header("Cookie", &format!("mindrune_session={session}"))
            .call()
            .unwrap();
        assert_eq!(
            answer.headers()["content-disposition"],
            "attachment; filename=\"chop-oaks.ts\""
        );
        assert_eq!(
            answer.headers()["content-type"],
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            answer.body_mut().read_to_string().unwrap(),
            library.chop_code
        );

        // Versions, behind a tap, newest first.
        browser.click(&format!("#skill-{walk} details.versions > summary"));
        let versions = browser.text(&format!("#skill-{walk} details.versions tbody"));
        let rows: Vec<&str> = versions.lines().collect();
        assert!(rows[0].starts_with("v2"), "{versions}");
        assert!(rows[1].starts_with("v1"), "{versions}");
        assert!(
            browser
                .text(&format!("#skill-{walk} .best"))
                .starts_with("best: v1, ")
        );
        assert!(
            browser
                .text(&format!("#skill-{walk} .facts"))
                .contains("v2 · 2 versions")
        );
        shots.push(browser.screenshot("avatar-desktop-open"));

        // A script's page: its runs newest first, its score over time, a diff of two versions.
        browser.click(&format!("#skill-{walk} a.open-script"));
        browser.wait_for_text("h1", "walk.ts");
        assert_eq!(browser.count("#runs tbody tr"), 3);
        let newest = browser.text("#runs tbody tr:first-child");
        assert!(
            newest.contains("v2") && newest.contains("failed"),
            "{newest}"
        );
        assert!(browser.text("#runs tbody tr:last-child").contains("v1"));
        // A dot per run, a failed run a cross.
        assert_eq!(browser.count("#score-chart .dot"), 3);
        assert_eq!(
            browser.count("#score-chart path.dot.failed"),
            browser.count("#runs tbody tr.failed")
        );
        assert_eq!(browser.count("#score-chart .version-change"), 1);
        assert!(browser.text(".best").starts_with("best: v1, "));
        shots.push(browser.screenshot("script-desktop"));
        browser.click(".diff-form button[type=submit]");
        browser.wait_for_text("h1", "v1 → v2");
        let diff = browser.text("pre.diff");
        assert!(diff.contains("-await bot.walkTo(3222, 3218);"), "{diff}");
        assert!(diff.contains("+await bot.walkTo(3222, 3219);"), "{diff}");
        shots.push(browser.screenshot("diff-desktop"));

        // The Inbox: the assistant's draft, turned down with a reason.
        browser.click("nav a[href='/dashboard/inbox']");
        browser.wait_for_text("h1", "Inbox");
        let row = browser.text(".inbox-card");
        assert!(
            row.contains("weekly-report") && row.contains("A new skill"),
            "{row}"
        );
        browser.click(".inbox-card h3 a");
        browser.wait_for_text("h1", "Card #1");
        assert!(
            browser
                .text("pre")
                .contains("Write the report to reports/weekly.md")
        );
        shots.push(browser.screenshot("card-desktop"));
        browser.type_into("#reason", "I write that report myself");
        browser.click("form.reject button[type=submit]");
        browser.wait_for_text(".notice", "turned down");
        assert!(browser.text("h1").contains("Inbox"));

        // The console, with an operator token.
        browser.go(&format!("{base}/console"));
        assert!(
            browser.url().ends_with("/console/login"),
            "{}",
            browser.url()
        );
        browser.type_into("#token", &library.operator_token);
        browser.click("button[type=submit]");
        browser.wait_for_text("#reuse", "ada");
        let reuse = browser.text("#reuse tbody tr");
        assert!(reuse.starts_with("ada 2 15 0 0 %"), "{reuse}");
        let skills = browser.text("#family-skills tbody");
        assert!(skills.contains("ada buzz chop-oaks v1 5"), "{skills}");
        assert!(!skills.contains("fish"), "fish is not shared: {skills}");
        browser.click("#family-skills details > summary");
        assert!(browser.text("#family-skills details table").contains("v1"));
        let health = browser.text("#health");
        assert!(
            health.contains("kept in the library, so a restart goes on from them"),
            "{health}"
        );
        assert!(health.contains("Requests refused"), "{health}");
        let reuse_chart = browser.text("#reuse-chart figcaption");
        assert!(
            reuse_chart.contains("15 runs from ")
                && reuse_chart.contains(": 0 from a family skill, 15 other runs."),
            "{reuse_chart}"
        );
        shots.push(browser.screenshot("console-desktop"));
        browser.click("nav form[action='/console/logout'] button");
        wait_for("the console's log-out", Duration::from_secs(10), || {
            browser.url().ends_with("/console/login")
        });
    }
    {
        // A phone: one column, nothing wider than the screen.
        let phone = driver.session(390, 844, true);
        phone.go(&format!("{base}/dashboard/login"));
        phone.type_into("#name", "ada");
        phone.type_into("#key", OWNER_KEY);
        phone.click("button[type=submit]");
        phone.wait_for_text("h1", "Your family");
        let width = phone.script("return window.innerWidth");
        assert!(
            width.as_i64().is_some_and(|w| w <= 420),
            "a phone-wide window: {width}"
        );
        // The attention list, first on the phone too, within the screen.
        assert!(
            phone
                .text(".attention .failing-now")
                .contains("buzz/walk.ts")
        );
        assert_eq!(
            phone.script(
                "const r = document.querySelector('.attention').getBoundingClientRect(); \
                 return r.right <= window.innerWidth + 1"
            ),
            json!(true),
            "the attention list fits the phone"
        );
        shots.push(phone.screenshot("family-phone"));
        phone.go(&format!("{base}/dashboard/avatars/{}", buzz.id.0));
        phone.wait_for_text("h1", "buzz");
        assert_eq!(
            phone.script("return document.documentElement.scrollWidth <= window.innerWidth"),
            json!(true),
            "the avatar page fits a phone's width"
        );
        let columns = phone.script(
            "return getComputedStyle(document.querySelector('.avatar-layout')).gridTemplateColumns.split(' ').length",
        );
        assert_eq!(columns, json!(1), "one column on a phone");
        phone.click(&format!("#skill-{walk} details.versions > summary"));
        shots.push(phone.screenshot("avatar-phone"));
        // The open Versions table is stacked cards, not a table clipped at the screen's edge.
        assert_eq!(
            phone.script(&format!(
                "return getComputedStyle(document.querySelector('#skill-{walk} details.versions tbody tr')).display"
            )),
            json!("block"),
            "a version is a card on a phone"
        );

        let fits = "return document.documentElement.scrollWidth <= window.innerWidth";
        phone.go(&format!("{base}/dashboard"));
        phone.wait_for_text("h1", "Your family");
        assert_eq!(
            phone.script(fits),
            json!(true),
            "the family page fits a phone"
        );
        // A script's page: its runs are stacked cards, its code wraps, nothing is clipped.
        phone.go(&format!("{base}/dashboard/skills/{walk}"));
        phone.wait_for_text("h1", "walk.ts");
        phone.click("#versions details.code > summary");
        assert_eq!(
            phone.script(fits),
            json!(true),
            "the script page fits a phone"
        );
        assert_eq!(
            phone.script(
                "return getComputedStyle(document.querySelector('#runs tbody tr')).display"
            ),
            json!("block"),
            "a run is a card on a phone"
        );
        assert_eq!(
            phone.script("return getComputedStyle(document.querySelector('#runs thead')).position"),
            json!("absolute"),
            "the column heads move into each card's labels"
        );
        shots.push(phone.screenshot("script-phone"));
        // A run's own page, from its row: its facts, output and change fit a phone too.
        let run = phone
            .attribute("#runs tbody tr a[href^='/dashboard/runs/']", "href")
            .expect("each run links to its page");
        phone.go(&format!("{base}{run}"));
        phone.wait_for_text("h1", "Run of");
        assert_eq!(phone.script(fits), json!(true), "a run's page fits a phone");
        shots.push(phone.screenshot("run-phone"));
        phone.go(&format!("{base}/dashboard/skills/{walk}/diff?from=1&to=2"));
        phone.wait_for_text("h1", "v1 → v2");
        assert_eq!(phone.script(fits), json!(true), "the diff fits a phone");
        phone.go(&format!("{base}/console/login"));
        phone.type_into("#token", &library.operator_token);
        phone.click("button[type=submit]");
        phone.wait_for_text("#reuse", "ada");
        assert_eq!(phone.script(fits), json!(true), "the console fits a phone");
        shots.push(phone.screenshot("console-phone"));
    }
    drop(driver);
    let _ = stop.send(());
    runtime.block_on(server).unwrap().unwrap();
    for shot in shots {
        eprintln!("screenshot: {}", shot.display());
    }
}
