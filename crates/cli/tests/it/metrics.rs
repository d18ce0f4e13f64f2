//! Operator tokens on the command line (issue, list, revoke) and `GET /metrics` scraped by the
//! real Prometheus from a real `mindrune serve`.
//!
//! The Prometheus test needs Debian's `prometheus` package (the server and `promtool`);
//! `.ci/run` installs it when missing. `MINDRUNE_SKIP_PROMETHEUS=1` skips that test, saying so.

use std::io::Write as _;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{TestLibrary, free_port, stderr, stdout};

/// Issues an operator token: the token (stdout) and its id (from stderr's line).
fn issue_operator(lib: &TestLibrary) -> (String, i64) {
    let output = lib.run(&["token", "operator"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let token = stdout(&output).trim().to_string();
    assert!(token.starts_with("mr_operator_"), "{token}");
    let err = stderr(&output);
    let id = err
        .strip_prefix("operator token ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no id on stderr: {err}"));
    (token, id)
}

fn operator_list(lib: &TestLibrary) -> Vec<Value> {
    let listed: Value =
        serde_json::from_str(&lib.ok(&["token", "list", "--operator", "--json"])).unwrap();
    listed.as_array().unwrap().clone()
}

#[test]
fn an_operator_token_is_revoked_by_the_token_or_its_id_and_the_list_shows_when() {
    let lib = TestLibrary::new();
    assert!(
        lib.ok(&["token", "list", "--operator"])
            .contains("no operator tokens; issue one with `mindrune token operator`")
    );
    let (first, first_id) = issue_operator(&lib);
    let (_second, second_id) = issue_operator(&lib);
    let listed = operator_list(&lib);
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["id"], first_id);
    assert_eq!(listed[1]["id"], second_id);
    assert!(listed.iter().all(|t| t["revoked_at"].is_null()));
    assert!(listed[0]["created_at"].as_str().unwrap().contains('T'));

    // By the token itself, then by the id.
    assert_eq!(
        lib.ok(&["token", "revoke", "--operator", &first]).trim(),
        format!("revoked operator token {first_id}")
    );
    assert_eq!(
        lib.ok(&["token", "revoke", "--operator", &second_id.to_string()])
            .trim(),
        format!("revoked operator token {second_id}")
    );
    // Again: said, and nothing changes.
    assert!(
        lib.ok(&["token", "revoke", "--operator", &first_id.to_string()])
            .contains(&format!(
                "operator token {first_id} was revoked already, at "
            ))
    );
    let listed = operator_list(&lib);
    assert!(listed.iter().all(|t| t["revoked_at"].is_string()));
    let table = lib.ok(&["token", "list", "--operator"]);
    assert!(table.starts_with("id  created  revoked\n"), "{table}");

    // Unknown: a clear error and the way to list them.
    for unknown in [
        "9999".to_string(),
        format!("mr_operator_{}", "0".repeat(64)),
        "buzz".to_string(),
    ] {
        let output = lib.run(&["token", "revoke", "--operator", &unknown]);
        assert!(!output.status.success());
        let err = stderr(&output);
        assert!(err.contains("no operator token"), "{err}");
        assert!(
            err.contains("list them with `mindrune token list --operator`"),
            "{err}"
        );
    }
    let output = lib.run(&["token", "list"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("add `--operator`"));
}

/// A child process killed and waited for when dropped, so a failing test leaves none behind.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const DEADLINE: Duration = Duration::from_secs(60);

/// Polls `probe` until it answers, or fails naming `what` after [`DEADLINE`].
fn poll<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "gave up after {DEADLINE:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn http() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(10)))
            .build(),
    )
}

/// GET with an optional bearer token: status and body, or what failed on the way.
fn try_get(url: &str, token: Option<&str>) -> Result<(u16, String), ureq::Error> {
    let mut request = http().get(url);
    if let Some(token) = token {
        request = request.header("Authorization", &format!("Bearer {token}"));
    }
    let mut response = request.call()?;
    let status = response.status().as_u16();
    Ok((status, response.body_mut().read_to_string()?))
}

fn get(url: &str, token: Option<&str>) -> (u16, String) {
    try_get(url, token).unwrap_or_else(|err| panic!("GET {url}: {err}"))
}

fn run_event(id: &str, agent: &str, name: &str, ok: bool) -> Value {
    let path = format!("bots/{agent}/{name}.ts");
    json!({
        "event": {
            "id": id, "kind": "shell", "command": format!("bun {path}"), "cwd": "/work",
            "ok": ok, "duration_ms": 60000,
        },
        "files": { path: { "text": format!("await bot.say('{name}');\n") } },
    })
}

/// Prometheus' value of an instant query's single series, when it has one.
fn query(prometheus: &str, expr: &str) -> Option<f64> {
    let encoded: String = expr
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    // Until Prometheus listens, the connection is refused: not yet, like an empty answer.
    let (status, body) =
        try_get(&format!("{prometheus}/api/v1/query?query={encoded}"), None).ok()?;
    if status != 200 {
        return None;
    }
    let answer: Value = serde_json::from_str(&body).ok()?;
    let result = answer["data"]["result"].as_array()?;
    let [series] = result.as_slice() else {
        return None;
    };
    series["value"][1].as_str()?.parse().ok()
}

#[test]
fn prometheus_scrapes_metrics_with_the_operator_token_until_it_is_revoked() {
    if std::env::var_os("MINDRUNE_SKIP_PROMETHEUS").is_some_and(|v| v == "1") {
        eprintln!("skipped: MINDRUNE_SKIP_PROMETHEUS=1 (this test runs the real Prometheus)");
        return;
    }
    for tool in ["prometheus", "promtool"] {
        assert!(
            Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            "`{tool}` is not installed: this test runs the real Prometheus. Install it with \
             `apt-get install -y prometheus` (Debian's package has both), or set \
             MINDRUNE_SKIP_PROMETHEUS=1 to skip this test"
        );
    }

    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    let runner_token = lib.ok(&["token", "issue", "buzz"]).trim().to_string();
    let (operator, operator_id) = issue_operator(&lib);

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let log = std::fs::File::create(lib.dir.path().join("serve.log")).unwrap();
    let serve = Killed(
        lib.std_cmd()
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    poll("`mindrune serve` to listen", || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    });

    // Three runs of one script (two ok, one failed), and the same batch again: duplicates.
    let batch = json!({ "events": [
        run_event("e1", "buzz", "chop", true),
        run_event("e2", "buzz", "chop", true),
        run_event("e3", "buzz", "chop", false),
    ]});
    for _ in 0..2 {
        let mut response = http()
            .post(&format!("{base}/v1/events"))
            .header("Authorization", &format!("Bearer {runner_token}"))
            .header("X-MindRune-Spool", "4")
            .send_json(&batch)
            .unwrap();
        let text = response.body_mut().read_to_string().unwrap();
        assert_eq!(response.status(), 200, "{text}");
    }

    // Without the token, or with a wrong one: 401.
    assert_eq!(get(&format!("{base}/metrics"), None).0, 401);
    assert_eq!(
        get(&format!("{base}/metrics"), Some("mr_operator_nope")).0,
        401
    );
    let (status, body) = get(&format!("{base}/metrics"), Some(&operator));
    assert_eq!(status, 200, "{body}");
    for line in [
        "# TYPE mindrune_events_recorded_total counter",
        "mindrune_events_recorded_total 3",
        "mindrune_events_duplicate_total 3",
        "mindrune_runs_total{owner=\"ada\",outcome=\"ok\"} 2",
        "mindrune_runs_total{owner=\"ada\",outcome=\"failed\"} 1",
        "# TYPE mindrune_write_group_commit_seconds histogram",
        "mindrune_write_group_events_count 2",
        "mindrune_runner_spool_items{agent=\"buzz\"} 4",
        "mindrune_requests_refused_total{status=\"401\",area=\"metrics\"} 2",
        "# TYPE mindrune_database_size_bytes gauge",
    ] {
        assert!(body.lines().any(|l| l == line), "no `{line}` in:\n{body}");
    }

    // promtool's linter passes the body as scraped.
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let checked = check.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "`promtool check metrics` refused the body:\n{}{}\n{body}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );

    // The real Prometheus scrapes it with the operator token as its bearer credentials.
    let prom_port = free_port();
    let prometheus = format!("http://127.0.0.1:{prom_port}");
    let config = lib.dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: mindrune\n    authorization:\n      credentials: {operator}\n    \
             static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        ),
    )
    .unwrap();
    let prom_log = std::fs::File::create(lib.dir.path().join("prometheus.log")).unwrap();
    let _prometheus = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                lib.dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(prom_log)
            .spawn()
            .unwrap(),
    );
    let prom_log_text =
        || std::fs::read_to_string(lib.dir.path().join("prometheus.log")).unwrap_or_default();
    let recorded = poll(
        "Prometheus to scrape mindrune_events_recorded_total",
        || query(&prometheus, "mindrune_events_recorded_total"),
    );
    assert_eq!(recorded, 3.0, "Prometheus' log:\n{}", prom_log_text());
    assert_eq!(
        query(&prometheus, "mindrune_runs_total{outcome=\"failed\"}"),
        Some(1.0)
    );
    assert_eq!(query(&prometheus, "up{job=\"mindrune\"}"), Some(1.0));

    // Revoked: /metrics and the console refuse the token, and Prometheus sees the target down.
    lib.ok(&["token", "revoke", "--operator", &operator_id.to_string()]);
    assert_eq!(get(&format!("{base}/metrics"), Some(&operator)).0, 401);
    assert_eq!(get(&format!("{base}/console"), Some(&operator)).0, 401);
    poll("Prometheus to see the target down", || {
        (query(&prometheus, "up{job=\"mindrune\"}") == Some(0.0)).then_some(())
    });
    drop(serve);
}
