//! The real Claude Code CLI drives MindRune: its hooks, as `mindrune setup rs-sdk` installs
//! them, against a scripted model (a stand-in for the model API on 127.0.0.1).
//!
//! Claude Code and bun come from npm, pinned in `tests/claude-code/package-lock.json`, and are
//! installed once with `npm ci` under the target folder. `MINDRUNE_SKIP_CLAUDE_CODE=1` skips
//! these tests on a machine without npm; without it a missing npm fails them, saying so.

mod agents;
mod assistant_host;
mod host_guard;
pub(crate) mod model_api;
mod rs_sdk_host;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// Whether the Claude Code tests are skipped on this machine (said once per test).
pub(crate) fn skipped(test: &str) -> bool {
    let skip = std::env::var_os("MINDRUNE_SKIP_CLAUDE_CODE").is_some_and(|v| v == "1");
    if skip {
        eprintln!("{test}: skipped (MINDRUNE_SKIP_CLAUDE_CODE=1)");
    }
    skip
}

/// The folder of the pinned npm packages: installed on first use, again when the lock file
/// changed.
pub(crate) fn tools() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("claude-code");
    let pins = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/claude-code");
    std::fs::create_dir_all(&dir).unwrap();
    // Tests run in parallel: one installs, the others wait for it.
    let lock = std::fs::File::create(dir.join(".install-lock")).unwrap();
    lock.lock().unwrap();
    let wanted = std::fs::read(pins.join("package-lock.json")).unwrap();
    let installed = std::fs::read(dir.join("package-lock.json")).ok();
    if installed.as_deref() != Some(&wanted[..]) || !dir.join("node_modules/.bin/claude").exists() {
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(pins.join(file), dir.join(file)).unwrap();
        }
        let output = Command::new("npm")
            // The packages' install scripts put the platform binary (an optional package from
            // the same registry) in place; nothing else is fetched.
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .output()
            .unwrap_or_else(|err| {
                panic!(
                    "cannot run npm ({err}): the Claude Code tests install the real Claude Code CLI and bun with it.\n\
                     Install Node.js and npm (Debian: apt-get install nodejs npm), or set MINDRUNE_SKIP_CLAUDE_CODE=1"
                )
            });
        assert!(
            output.status.success(),
            "npm ci in {} failed:\n{}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    dir.join("node_modules/.bin")
}

/// One hook process as Claude Code ran it: what it read, printed and returned.
#[derive(Debug)]
pub(crate) struct HookCall {
    pub input: Value,
    pub stdout: String,
    pub stderr: String,
    pub exit: i32,
}

impl HookCall {
    pub(crate) fn event(&self) -> &str {
        self.input["hook_event_name"].as_str().unwrap_or("")
    }
}

/// A `mindrune` in front of the real one for the hooks (`ClaudeCode::hook_recorder` points the
/// installed hooks at it): it keeps each hook call's input, output and exit status in `log`,
/// then answers as the real one did. Anything else (the MCP
/// server of `.mcp.json`, which talks over stdin for as long as it runs) is the real one.
pub(crate) fn hook_recorder(bin: &Path, log: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    std::fs::create_dir_all(log).unwrap();
    let real = assert_cmd::cargo::cargo_bin("mindrune");
    let script = format!(
        "#!/bin/sh\n\
         [ \"$1\" = hook ] || exec '{real}' \"$@\"\n\
         dir=$(mktemp -d '{log}/call-XXXXXXXX')\n\
         cat > \"$dir/stdin\"\n\
         '{real}' \"$@\" < \"$dir/stdin\" > \"$dir/stdout\" 2> \"$dir/stderr\"\n\
         code=$?\n\
         echo \"$code\" > \"$dir/exit\"\n\
         cat \"$dir/stdout\"\n\
         cat \"$dir/stderr\" >&2\n\
         exit \"$code\"\n",
        log = log.display(),
        real = real.display()
    );
    let path = bin.join("mindrune");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Points the MindRune hooks of `project`'s `.claude/settings.json` at `recorder` instead of the
/// real binary they name.
fn record_hooks_through(project: &Path, recorder: &Path) {
    let path = project.join(".claude/settings.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    let real = crate::util::mindrune_bin();
    if text.contains(&real) {
        std::fs::write(&path, text.replace(&real, recorder.to_str().unwrap())).unwrap();
    }
}

/// The hook calls the recorder kept, in the order they ran.
pub(crate) fn hook_calls(log: &Path) -> Vec<HookCall> {
    let mut calls: Vec<(std::time::SystemTime, HookCall)> = std::fs::read_dir(log)
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().join("exit").exists())
        .map(|entry| {
            let dir = entry.path();
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            let started = std::fs::metadata(dir.join("stdin"))
                .and_then(|m| m.modified())
                .unwrap();
            (
                started,
                HookCall {
                    input: serde_json::from_str(&read("stdin")).unwrap_or(Value::Null),
                    stdout: read("stdout"),
                    stderr: read("stderr"),
                    exit: read("exit").trim().parse().unwrap_or(-1),
                },
            )
        })
        .collect();
    calls.sort_by_key(|(at, _)| *at);
    calls.into_iter().map(|(_, call)| call).collect()
}

/// The real Claude Code, headless, in `project`, against the stand-in model.
pub(crate) struct ClaudeCode {
    pub tools: PathBuf,
    /// The folder of the hook recorder's `mindrune` ([`hook_recorder`]): before each session
    /// the hooks setup installed in the project (which name the real binary by its absolute
    /// path) are pointed at it.
    pub hook_recorder: Option<PathBuf>,
    pub home: PathBuf,
    pub model_url: String,
    pub env: Vec<(String, String)>,
}

impl ClaudeCode {
    /// `claude -p PROMPT` in `project`, with every permission granted (as root that needs
    /// `IS_SANDBOX=1`), the MCP servers of `mcp_config` if any, and nothing reaching past
    /// loopback: no telemetry, no updates, no error reports.
    pub(crate) fn run(&self, project: &Path, prompt: &str, mcp_config: Option<&Path>) -> Output {
        let output = self.run_unchecked(project, prompt, mcp_config);
        assert!(
            output.status.success(),
            "claude -p failed ({}):\nstdout: {}\nstderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// [`ClaudeCode::run`] with more arguments (`--session-id`, `--resume`).
    pub(crate) fn run_args(
        &self,
        project: &Path,
        prompt: &str,
        mcp_config: Option<&Path>,
        args: &[&str],
    ) -> Output {
        let output = self.run_unchecked_args(project, prompt, mcp_config, args);
        assert!(
            output.status.success(),
            "claude -p failed ({}):\nstdout: {}\nstderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// [`ClaudeCode::run`] for a session that may fail (an API error ends it).
    pub(crate) fn run_unchecked(
        &self,
        project: &Path,
        prompt: &str,
        mcp_config: Option<&Path>,
    ) -> Output {
        self.run_unchecked_args(project, prompt, mcp_config, &[])
    }

    fn run_unchecked_args(
        &self,
        project: &Path,
        prompt: &str,
        mcp_config: Option<&Path>,
        args: &[&str],
    ) -> Output {
        if let Some(recorder) = &self.hook_recorder {
            record_hooks_through(project, &recorder.join("mindrune"));
        }
        // No `mindrune` on PATH: what setup installed must name the binary itself.
        let mut path: Vec<PathBuf> = vec![self.tools.clone()];
        path.extend(std::env::split_paths(&crate::util::path_without_mindrune()));
        // Bounded: a session that hangs fails the test instead of holding the suite.
        let mut command = Command::new("timeout");
        command
            .arg("300")
            .arg(self.tools.join("claude"))
            .args(["-p", prompt, "--permission-mode", "bypassPermissions"])
            .args(["--output-format", "json"])
            .args(args)
            .current_dir(project)
            .env_clear()
            .env("PATH", std::env::join_paths(path).unwrap())
            .env("HOME", &self.home)
            .env("ANTHROPIC_BASE_URL", &self.model_url)
            .env("ANTHROPIC_API_KEY", "sk-ant-standin")
            .env("IS_SANDBOX", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("TMPDIR", std::env::temp_dir());
        if let Some(config) = mcp_config {
            command
                .arg("--mcp-config")
                .arg(config)
                .arg("--strict-mcp-config");
        }
        for (name, value) in &self.env {
            command.env(name, value);
        }
        command.output().expect("the claude binary runs")
    }
}
