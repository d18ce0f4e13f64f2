//! `mindrune bench guard`: the host guard runs before every tool call Claude Code makes, so
//! its budget is < 20 ms a call, as Claude Code waits for it: the whole hook process (start,
//! read the payload, judge, answer), beside the bare start of the same binary; and the
//! judgement alone, beside parsing the payload it judges.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use mindrune_engine::{HostGuard, Verdict};
use serde_json::{Value, json};

use crate::measure::{percentile, time_it};
use crate::report::{Print, Row};

/// The budget for one guarded hook call, as Claude Code waits for it.
const BUDGET_MS: f64 = 20.0;

/// The tool calls judged: what an assistant does all day (reads, edits of its notes, shell
/// lines) and the attempts the guard denies.
fn payloads(workspace: &str) -> Vec<Value> {
    let bash = |line: &str| {
        json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": workspace,
               "tool_input": {"command": line, "description": "bench"}})
    };
    let file = |tool: &str, path: &str| {
        json!({"hook_event_name": "PreToolUse", "tool_name": tool, "cwd": workspace,
               "tool_input": {"file_path": format!("{workspace}/{path}"), "content": "x"}})
    };
    vec![
        file("Write", "notes/today.md"),
        file("Edit", "reports/weekly.md"),
        file("Write", "skills/weekly-report/SKILL.md"),
        file("MultiEdit", "notes/../skills/x/SKILL.md"),
        bash("ls -la notes && cat notes/monday.md | grep -n shipped"),
        bash("cd notes && for f in *.md; do wc -l \"$f\"; done > ../reports/counts.txt"),
        bash("git status && git diff --stat"),
        bash("echo '# mine' > skills/fresh/SKILL.md"),
        bash("python3 tools/summarise.py notes/ --out reports/summary.md"),
        bash("cp -r skills/weekly-report /tmp/backup && rm -rf /tmp/backup"),
    ]
}

pub fn guard(calls: usize, print: Print) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(
        (10..=100_000).contains(&calls),
        "--calls must be from 10 to 100000"
    );
    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;
    let workspace = dir.path().canonicalize()?;
    let exe = std::env::current_exe().context("cannot find the mindrune binary")?;
    // The workspace the hook judges in is the one `mindrune playbook init` makes.
    let init = Command::new(&exe)
        .args(["playbook", "--workspace"])
        .arg(&workspace)
        .arg("init")
        .stdout(Stdio::null())
        .output()
        .context("cannot run `mindrune playbook init`")?;
    anyhow::ensure!(
        init.status.success(),
        "`mindrune playbook init` failed: {}",
        String::from_utf8_lossy(&init.stderr).trim()
    );
    for folder in ["notes", "reports", "skills/weekly-report"] {
        std::fs::create_dir_all(workspace.join(folder))?;
    }
    std::fs::write(
        workspace.join("skills/weekly-report/SKILL.md"),
        "---\ntrigger: x\n---\nx\n",
    )?;
    let ws_text = workspace.display().to_string();
    let payloads = payloads(&ws_text);
    let texts: Vec<String> = payloads.iter().map(Value::to_string).collect();

    // In process: what one hook call does after it started, beside parsing its input.
    let mut judged = Vec::with_capacity(calls);
    let mut parsed = Vec::with_capacity(calls);
    let mut denied = 0;
    for i in 0..calls {
        let text = &texts[i % texts.len()];
        let (took, verdict) = time_it(|| {
            let payload: Value = serde_json::from_str(text)?;
            Ok(HostGuard::for_workspace(&workspace, None).check(&payload))
        })?;
        denied += usize::from(matches!(verdict, Verdict::Deny(_)));
        judged.push(took);
        let (took, _) = time_it(|| Ok(serde_json::from_str::<Value>(text)?))?;
        parsed.push(took);
    }

    // The whole hook process, as Claude Code runs it, beside the binary's bare start.
    let processes = calls.min(200);
    let mut hook = Vec::with_capacity(processes);
    let mut bare = Vec::with_capacity(processes);
    for i in 0..processes {
        let text = &texts[i % texts.len()];
        hook.push(spawn_timed(
            Command::new(&exe)
                .args(["hook", "claude-code", "--workspace", &ws_text])
                .env("CLAUDE_PROJECT_DIR", &workspace),
            text,
        )?);
        bare.push(spawn_timed(Command::new(&exe).arg("--version"), "")?);
    }
    for samples in [&mut judged, &mut parsed, &mut hook, &mut bare] {
        samples.sort();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let (hook_p50, hook_p99) = (percentile(&hook, 0.5), percentile(&hook, 0.99));
    let (bare_p50, bare_p99) = (percentile(&bare, 0.5), percentile(&bare, 0.99));
    let size = format!("{} kinds of call, {denied} of {calls} denied", texts.len());
    let process_size = format!("{processes} hook processes");
    let rows = vec![
        Row::new("guard", "hook process, median", &process_size)
            .figure(ms(hook_p50), "ms")
            .baseline("`mindrune --version`", ms(bare_p50), "ms")
            .target(format!("< {BUDGET_MS} ms"), ms(hook_p50) < BUDGET_MS),
        Row::new("guard", "hook process, p99", &process_size)
            .figure(ms(hook_p99), "ms")
            .baseline("`mindrune --version`", ms(bare_p99), "ms")
            .target(format!("< {BUDGET_MS} ms"), ms(hook_p99) < BUDGET_MS),
        Row::new("guard", "judge one call, median", &size)
            .figure(us(percentile(&judged, 0.5)), "µs")
            .baseline("parse the payload", us(percentile(&parsed, 0.5)), "µs"),
        Row::new("guard", "judge one call, p99", &size)
            .figure(us(percentile(&judged, 0.99)), "µs")
            .baseline("parse the payload", us(percentile(&parsed, 0.99)), "µs"),
    ];
    match print {
        Print::Quiet => {}
        Print::Text | Print::Json => {
            crate::report::print_rows(&rows, matches!(print, Print::Json))?
        }
    }
    Ok(rows)
}

/// Runs a command with `input` on stdin; how long until it exited (which must be success).
fn spawn_timed(command: &mut Command, input: &str) -> anyhow::Result<Duration> {
    let began = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start the mindrune binary")?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes())?;
    }
    let status = child.wait()?;
    let took = began.elapsed();
    anyhow::ensure!(status.success(), "the hook process failed ({status})");
    Ok(took)
}
