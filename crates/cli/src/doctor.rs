//! `mindrune doctor [PROJECT] [--agent NAME] [--workspace DIR] [--server URL] [--json]`: checks
//! every link a face depends on, end to end, and names the fix for each one that fails.
//!
//! The checks run what Claude Code would run: the hook commands found in the project's
//! `.claude/settings*.json` are resolved as a shell resolves them, and a synthetic `PreToolUse`
//! of a `Write` into a kept place goes through the exact installed command (`sh -c`, in the
//! project, with `CLAUDE_PROJECT_DIR`), so a hook that would exit 127, run another MindRune or
//! let the write through fails here. Nothing is stored: the synthetic run is decoded as the
//! hook decodes it and never recorded, and no library, spool or workspace is made.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use mindrune_core::{Scrubber, secrets_in_bot_env_bytes};
use mindrune_engine::{AvatarHook, HookAction, Payload, handle_hook};
use mindrune_engine::{ChildLimits, list_contained, names_not_utf8, now_millis, run_bounded};
use mindrune_engine::{hook_option, hook_program, shell_word};
use mindrune_store::{Agent, Store};
use serde::Serialize;

use crate::commands::hook_failures;
use crate::library;

/// How long one synthetic hook call may take.
const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// What `doctor` was asked to check.
pub(crate) struct DoctorArgs<'a> {
    pub home: &'a Path,
    /// Whether the library was chosen (`--home`, `MINDRUNE_HOME`, `--database`); otherwise
    /// the one the project's hooks name is checked.
    pub home_given: bool,
    pub project: &'a Path,
    pub agent: Option<&'a str>,
    pub workspace: Option<&'a Path>,
    pub server: Option<&'a str>,
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Ok,
    Fail,
    /// Not checked, and why is in the detail: nothing to check, or nothing to check it with.
    Skip,
}

#[derive(Debug, Serialize)]
struct Check {
    name: &'static str,
    status: Status,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }
    fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
    fn skip(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Skip,
            detail: detail.into(),
            fix: None,
        }
    }
}

/// One MindRune hook found in a settings file.
struct InstalledHook {
    /// `.claude/settings.json` or `.claude/settings.local.json`.
    file: String,
    event: String,
    command: String,
    program: String,
}

/// Which face the project's hooks serve.
enum Face {
    /// `setup rs-sdk`: the avatars of a checkout.
    Avatars,
    /// `setup claude-code`: an assistant's playbook workspace (as the hook names it).
    Assistant,
}

struct Doctor<'a> {
    args: &'a DoctorArgs<'a>,
    /// The library checked: the one chosen, else the one the hooks name.
    home: PathBuf,
    project: PathBuf,
    binary: String,
    checks: Vec<Check>,
}

pub(crate) fn doctor(args: &DoctorArgs<'_>) -> anyhow::Result<ExitCode> {
    let project = args.project.canonicalize().map_err(|err| {
        anyhow::anyhow!(
            "{}: {err}\n\nhint: give the folder you start Claude Code in (its project)",
            args.project.display()
        )
    })?;
    let binary = crate::setup::this_binary()?;
    let mut doctor = Doctor {
        args,
        home: args.home.to_path_buf(),
        project,
        binary,
        checks: Vec::new(),
    };
    doctor.run();
    let failed = doctor
        .checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .count();
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = serde_json::json!({
            "project": doctor.project,
            "binary": doctor.binary,
            "version": env!("CARGO_PKG_VERSION"),
            "ok": failed == 0,
            "checks": doctor.checks,
        });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        doctor.render(&mut out, failed)?;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

impl Doctor<'_> {
    fn render(&self, out: &mut impl std::io::Write, failed: usize) -> std::io::Result<()> {
        writeln!(
            out,
            "MindRune doctor for {} (mindrune {} at {})",
            self.project.display(),
            env!("CARGO_PKG_VERSION"),
            self.binary
        )?;
        for check in &self.checks {
            let mark = match check.status {
                Status::Ok => "ok  ",
                Status::Fail => "FAIL",
                Status::Skip => "skip",
            };
            writeln!(out, "  {mark}  {}: {}", check.name, check.detail)?;
            if let Some(fix) = &check.fix {
                writeln!(out, "        fix: {fix}")?;
            }
        }
        match failed {
            0 => writeln!(out, "Every check passed."),
            1 => writeln!(out, "1 check failed."),
            n => writeln!(out, "{n} checks failed."),
        }
    }

    fn run(&mut self) {
        let hooks = self.hooks();
        if !self.args.home_given
            && let Some(hook) = hooks.first()
        {
            // The library the hooks really use, as the shell reads their command in the project.
            if let Some(home) = hook_option(&hook.command, "--home", &self.project) {
                self.home = PathBuf::from(home);
            }
            if let Some(database) = hook_option(&hook.command, "--database", &self.project) {
                // Checked as the hooks open it; an unreadable one fails the library check.
                let _ = library::choose_database(&database);
            }
        }
        let face = if hooks.iter().any(|h| h.command.contains("--workspace")) {
            Face::Assistant
        } else {
            Face::Avatars
        };
        match face {
            Face::Avatars => self.avatars(&hooks),
            Face::Assistant => self.assistant(&hooks),
        }
        self.claude();
    }

    /// The MindRune hooks of the project's settings, each resolved to this binary and version.
    fn hooks(&mut self) -> Vec<InstalledHook> {
        let mut found = Vec::new();
        let mut unreadable = Vec::new();
        for file in ["settings.json", "settings.local.json"] {
            let path = self.project.join(".claude").join(file);
            let shown = format!(".claude/{file}");
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(err) => {
                    unreadable.push(format!("{shown}: {err}"));
                    continue;
                }
            };
            let value: serde_json::Value = match serde_json::from_str(&text) {
                Ok(value) => value,
                Err(err) => {
                    unreadable.push(format!("{shown}:{}:{}: {err}", err.line(), err.column()));
                    continue;
                }
            };
            let Some(events) = value["hooks"].as_object() else {
                continue;
            };
            for (event, groups) in events {
                for group in groups.as_array().into_iter().flatten() {
                    for hook in group["hooks"].as_array().into_iter().flatten() {
                        let Some(command) = hook["command"].as_str() else {
                            continue;
                        };
                        if let Some(program) = hook_program(command) {
                            found.push(InstalledHook {
                                file: shown.clone(),
                                event: event.clone(),
                                command: command.to_string(),
                                program,
                            });
                        }
                    }
                }
            }
        }
        let setup = self.setup_command();
        if !unreadable.is_empty() {
            self.checks.push(Check::fail(
                "hooks",
                format!(
                    "Claude Code's settings cannot be read: {}",
                    unreadable.join("; ")
                ),
                "mend the file at the place named (Claude Code cannot read it either)",
            ));
        }
        if found.is_empty() {
            self.checks.push(Check::fail(
                "hooks",
                format!(
                    "no MindRune hook in {}/.claude/settings.json: no run is recorded and the guard never runs",
                    self.project.display()
                ),
                setup,
            ));
            return found;
        }
        let mut problems = Vec::new();
        for hook in &found {
            if let Err(problem) = self.resolve(&hook.program) {
                problems.push(format!(
                    "{} {} runs `{}`: {problem}",
                    hook.file, hook.event, hook.program
                ));
            }
        }
        if problems.is_empty() {
            let events: Vec<&str> = found.iter().map(|h| h.event.as_str()).collect();
            self.checks.push(Check::ok(
                "hooks",
                format!(
                    "{} MindRune hooks ({}) run this binary, version {}",
                    found.len(),
                    events.join(", "),
                    env!("CARGO_PKG_VERSION")
                ),
            ));
        } else {
            problems.dedup();
            self.checks
                .push(Check::fail("hooks", problems.join("; "), setup));
        }
        found
    }

    /// This binary with the library the doctor checked: how a printed fix names it.
    fn bin_home(&self) -> String {
        let home = std::path::absolute(&self.home).unwrap_or_else(|_| self.home.clone());
        let home = shell_word(&home.display().to_string());
        match library::chosen_flag(shell_word) {
            Some(database) => format!("{} --home {home} {database}", shell_word(&self.binary)),
            None => format!("{} --home {home}", shell_word(&self.binary)),
        }
    }

    /// The setup command that installs this face's hooks again, naming this binary.
    fn setup_command(&self) -> String {
        let bin = shell_word(&self.binary);
        let project = shell_word(&self.project.display().to_string());
        if self.project.join("bots").is_dir() {
            format!(
                "run `{bin} setup rs-sdk {project} --owner OWNER`: it rewrites MindRune's hooks in place to run this binary"
            )
        } else {
            format!(
                "run `{bin} setup claude-code {project}`: it rewrites MindRune's hooks in place to run this binary"
            )
        }
    }

    /// Where a hook's program resolves, as `sh` would find it; an error unless it is this
    /// binary or one of the same version.
    fn resolve(&self, program: &str) -> Result<(), String> {
        let path = if program.contains('/') {
            let path = PathBuf::from(program);
            if path.is_relative() {
                return Err(
                    "a relative path, resolved from wherever the agent's shell is".to_string(),
                );
            }
            path
        } else {
            match find_on_path(program) {
                Some(path) => path,
                None => {
                    return Err(format!(
                        "no `{program}` on PATH, so every hook call exits 127 and Claude Code ignores it"
                    ));
                }
            }
        };
        let Ok(resolved) = path.canonicalize() else {
            return Err(
                "no such file, so every hook call exits 127 and Claude Code ignores it".to_string(),
            );
        };
        if resolved.to_str() == Some(self.binary.as_str()) {
            return Ok(());
        }
        let version = Command::new(&resolved)
            .arg("--version")
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string());
        let this = format!("mindrune {}", env!("CARGO_PKG_VERSION"));
        match version {
            Some(version) if version == this => Ok(()),
            Some(version) => Err(format!(
                "that is {} ({version}), not this binary ({this})",
                resolved.display()
            )),
            None => Err(format!(
                "{} does not run as MindRune (`--version` fails)",
                resolved.display()
            )),
        }
    }

    fn avatars(&mut self, hooks: &[InstalledHook]) {
        let store = match library::open(&self.home) {
            Ok(store) => {
                self.checks.push(Check::ok(
                    "library",
                    format!(
                        "{} opens, its schema current",
                        library::database(&self.home)
                    ),
                ));
                Some(store)
            }
            Err(err) => {
                self.checks.push(Check::fail(
                    "library",
                    format!("{err:#}"),
                    "make it with `mindrune init` (or `setup rs-sdk`), or point --home / --database at the library the hooks name",
                ));
                None
            }
        };
        let agents = match &store {
            Some(store) => self.project_agents(&**store),
            None => Vec::new(),
        };
        if store.is_some() && agents.is_empty() {
            self.checks.push(Check::fail(
                "agents",
                format!(
                    "no agent of the library has {} as its workspace{}",
                    self.project.display(),
                    self.args
                        .agent
                        .map(|a| format!(" and the name `{a}`"))
                        .unwrap_or_default()
                ),
                self.setup_command(),
            ));
        }
        let guarded = hooks.iter().find(|h| h.event == "PreToolUse");
        for agent in &agents {
            if let Some(hook) = guarded {
                let target = self
                    .project
                    .join("bots")
                    .join(&agent.name)
                    .join("family-skills")
                    .join("INDEX.md");
                self.guard(hook, Some(&agent.name), &target);
            }
            self.bot_run(agent);
            self.bot_env(agent);
            self.names(agent);
            self.mirror(agent);
            self.spool(agent);
        }
        if guarded.is_none() && !hooks.is_empty() {
            self.checks.push(Check::fail(
                "guard",
                "no MindRune PreToolUse hook: the host's own tools may write into family-skills/ and the siblings' folders",
                self.setup_command(),
            ));
        }
        if let Some(store) = &store {
            self.vocabulary(&**store);
        }
        self.failures(&hook_failures::notes_dir(&self.home));
        self.server();
    }

    fn assistant(&mut self, hooks: &[InstalledHook]) {
        let workspace = match self.args.workspace {
            Some(dir) => dir.to_path_buf(),
            None => self.project.clone(),
        };
        match mindrune_engine::Playbooks::open_existing(&workspace) {
            Ok(_) => self.checks.push(Check::ok(
                "workspace",
                format!("{} opens, its ledger current", workspace.display()),
            )),
            Err(err) => self.checks.push(Check::fail(
                "workspace",
                err.to_string(),
                format!(
                    "run `{} setup claude-code {}`",
                    shell_word(&self.binary),
                    shell_word(&self.project.display().to_string())
                ),
            )),
        }
        match hooks.iter().find(|h| h.event == "PreToolUse") {
            Some(hook) => {
                let target = workspace
                    .join("skills")
                    .join("doctor-probe")
                    .join("SKILL.md");
                self.guard(hook, None, &target);
            }
            None => self.checks.push(Check::fail(
                "guard",
                "no MindRune PreToolUse hook: the host's own tools may write into skills/",
                self.setup_command(),
            )),
        }
        self.failures(&workspace.join(".mindrune").join("hooks"));
    }

    /// The agents of the library working in this project (or the one asked for).
    fn project_agents(&self, store: &dyn Store) -> Vec<Agent> {
        let project = self.project.display().to_string();
        let Ok(owners) = store.owners() else {
            return Vec::new();
        };
        owners
            .iter()
            .filter_map(|owner| store.agents(owner.id).ok())
            .flatten()
            .filter(|agent| {
                Path::new(&agent.workspace)
                    .canonicalize()
                    .is_ok_and(|w| w.display().to_string() == project)
            })
            .filter(|agent| self.args.agent.is_none_or(|name| name == agent.name))
            .collect()
    }

    /// A synthetic `PreToolUse` of a `Write` to `target` through the exact installed command:
    /// the guard must deny it.
    fn guard(&mut self, hook: &InstalledHook, agent: Option<&str>, target: &Path) {
        let input = serde_json::json!({
            "session_id": "mindrune-doctor",
            "transcript_path": "",
            "cwd": self.project,
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": target, "content": "doctor's probe: never written\n"},
            "tool_use_id": "toolu_mindrune_doctor",
        });
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&hook.command)
            .current_dir(&self.project)
            .env("CLAUDE_PROJECT_DIR", &self.project);
        if let Some(agent) = agent {
            command.env("MINDRUNE_AGENT", agent);
        }
        let name = "guard";
        let shown = target
            .strip_prefix(&self.project)
            .unwrap_or(target)
            .display()
            .to_string();
        let who = agent.map(|a| format!("{a}: ")).unwrap_or_default();
        let finished = run_bounded(
            command,
            Some(input.to_string().into_bytes()),
            true,
            ChildLimits {
                timeout: HOOK_TIMEOUT,
                max_output: 1024 * 1024,
            },
        );
        let finished = match finished {
            Ok(finished) => finished,
            Err(err) => {
                self.checks.push(Check::fail(
                    name,
                    format!("{who}cannot start `sh` to run the hook: {err}"),
                    "Claude Code runs hooks through sh; install one",
                ));
                return;
            }
        };
        let stdout = String::from_utf8_lossy(&finished.stdout);
        let stderr = String::from_utf8_lossy(&finished.stderr);
        let answer: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_default();
        let decision = answer["hookSpecificOutput"]["permissionDecision"].as_str();
        let code = finished.status.and_then(|s| s.code());
        if decision == Some("deny") {
            self.checks.push(Check::ok(
                name,
                format!(
                    "{who}a Write into {shown} through the installed {} hook is denied",
                    hook.event
                ),
            ));
        } else if finished.timed_out {
            self.checks.push(Check::fail(
                name,
                format!(
                    "{who}the installed hook did not answer within {} s",
                    HOOK_TIMEOUT.as_secs()
                ),
                "run the hook by hand (`MINDRUNE_LOG=debug`) to see where it waits",
            ));
        } else {
            let said = answer["systemMessage"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| stderr.trim().to_string());
            self.checks.push(Check::fail(
                name,
                format!(
                    "{who}a Write into {shown} through the installed hook was not denied (exit {}{})",
                    code.map_or("by signal".to_string(), |c| c.to_string()),
                    if said.is_empty() { String::new() } else { format!(": {said}") }
                ),
                if code == Some(127) {
                    self.setup_command()
                } else {
                    "read the hook's message above; `mindrune doctor` again once it is mended".to_string()
                },
            ));
        }
    }

    /// A synthetic run of one of the bot's scripts, decoded as the hook decodes a
    /// `PostToolUse` and checked against the library, never recorded.
    fn bot_run(&mut self, agent: &Agent) {
        let name = "bot run";
        let workspace = Path::new(&agent.workspace);
        let bot_dir = format!("bots/{}", agent.name);
        let script = list_contained(workspace, &bot_dir)
            .ok()
            .flatten()
            .unwrap_or_default()
            .into_iter()
            .find(|n| n.ends_with(".ts"));
        let Some(script) = script else {
            self.checks.push(Check::skip(
                name,
                format!("{}: no script in {bot_dir}/ to try a run with", agent.name),
            ));
            return;
        };
        let command = format!("bun {bot_dir}/{script}");
        let input = serde_json::json!({
            "session_id": "mindrune-doctor",
            "transcript_path": "",
            "cwd": workspace,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": "toolu_mindrune_doctor_run",
            "tool_response": {"stdout": "── State ──\n", "stderr": "", "interrupted": false},
        });
        // The hook's notes of started calls go to a folder of the doctor's own, dropped after.
        let notes = tempfile::tempdir();
        let decoded = notes.map_err(|err| err.to_string()).and_then(|dir| {
            let payload = Payload::parse(&input.to_string()).map_err(|e| e.to_string())?;
            let hook = AvatarHook {
                agent: &agent.name,
                spool: dir.path(),
                project: Some(workspace),
                kept: &[],
            };
            handle_hook(&payload, &hook).map_err(|e| e.to_string())
        });
        match decoded {
            Ok(HookAction::Record(event)) if event.agent == agent.name => {
                self.checks.push(Check::ok(
                    name,
                    format!(
                        "{}: a run of `{command}` is decoded into an event of the agent (dry run, nothing stored)",
                        agent.name
                    ),
                ));
            }
            Ok(other) => self.checks.push(Check::fail(
                name,
                format!(
                    "{}: a run of `{command}` is not recorded ({other:?})",
                    agent.name
                ),
                "report this: the hook's decoder does not take rs-sdk's run",
            )),
            Err(err) => self.checks.push(Check::fail(
                name,
                format!("{}: a run of `{command}` is refused: {err}", agent.name),
                "report this: the hook's decoder does not take rs-sdk's run",
            )),
        }
    }

    /// The bot's `bot.env` is read, and each secret in it would be scrubbed (never printed).
    fn bot_env(&mut self, agent: &Agent) {
        let name = "bot.env";
        let relative = format!("bots/{}/bot.env", agent.name);
        let path = Path::new(&agent.workspace).join(&relative);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                self.checks.push(Check::fail(
                    name,
                    format!("{}: there is no {relative}, so MindRune cannot scrub the bot's password from what it saves", agent.name),
                    format!("make the bot with rs-sdk's `bun scripts/create-bot.ts {}`, which writes it", agent.name),
                ));
                return;
            }
            Err(err) => {
                self.checks.push(Check::fail(
                    name,
                    format!("{}: {relative} cannot be read ({err})", agent.name),
                    "give the user running Claude Code read access to it",
                ));
                return;
            }
        };
        let values = secrets_in_bot_env_bytes(&bytes);
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        let scrubber = Scrubber::new(&refs);
        let leaked = values
            .iter()
            .filter(|value| {
                scrubber
                    .scrub(&format!("pw {value} end"))
                    .text
                    .contains(value.as_str())
            })
            .count();
        if values.is_empty() {
            self.checks.push(Check::fail(
                name,
                format!(
                    "{}: {relative} names no password, token, secret or key",
                    agent.name
                ),
                "write the bot's password as PASSWORD=… in it, as rs-sdk's create-bot does",
            ));
        } else if leaked > 0 {
            self.checks.push(Check::fail(
                name,
                format!("{}: {leaked} of the {} secrets in {relative} would not be scrubbed (too short to tell from ordinary text)", agent.name, values.len()),
                "use a longer password for the bot",
            ));
        } else {
            self.checks.push(Check::ok(
                name,
                format!(
                    "{}: {relative} read; its {} would be scrubbed",
                    agent.name,
                    crate::render::count(values.len(), "secret", "secrets")
                ),
            ));
        }
    }

    /// Names in the bot's folder that no event, skill or page can carry.
    fn names(&mut self, agent: &Agent) {
        let bot_dir = format!("bots/{}", agent.name);
        let odd = names_not_utf8(Path::new(&agent.workspace), &bot_dir);
        if !odd.is_empty() {
            self.checks.push(Check::fail(
                "file names",
                format!(
                    "{}: {} in {bot_dir}/ not UTF-8, so MindRune cannot record or share {}: {}",
                    agent.name,
                    if odd.len() == 1 {
                        "a name is"
                    } else {
                        "names are"
                    },
                    if odd.len() == 1 { "it" } else { "them" },
                    odd.join(", ")
                ),
                "rename them to names in UTF-8",
            ));
        }
    }

    /// The bot's `family-skills/` is no older than its last turn end.
    fn mirror(&mut self, agent: &Agent) {
        let name = "family-skills";
        let dir = Path::new(&agent.workspace).join(
            agent
                .mirror
                .as_deref()
                .unwrap_or(mindrune_engine::MIRROR_DIR),
        );
        let written = std::fs::metadata(dir.join("INDEX.md"))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as i64);
        let shown = dir
            .strip_prefix(&self.project)
            .unwrap_or(&dir)
            .display()
            .to_string();
        let refresh = format!(
            "`{} mirror {}` writes it now; the hooks write it at every session start",
            self.bin_home(),
            agent.name
        );
        match (written, agent.last_turn_at) {
            (None, _) => self.checks.push(Check::fail(
                name,
                format!("{}: {shown}/INDEX.md does not exist", agent.name),
                refresh,
            )),
            // A minute's grace: a refresh is at most once a minute.
            (Some(written), Some(turn)) if written + 60_000 < turn => {
                self.checks.push(Check::fail(
                    name,
                    format!(
                        "{}: {shown}/ was written {} before the agent's last turn ended",
                        agent.name,
                        crate::render::age(turn - written)
                    ),
                    refresh,
                ))
            }
            (Some(written), _) => self.checks.push(Check::ok(
                name,
                format!(
                    "{}: {shown}/ written {} ago",
                    agent.name,
                    crate::render::age(now_millis() - written)
                ),
            )),
        }
    }

    /// The runner's spool of the bot: its backlog and oldest item.
    fn spool(&mut self, agent: &Agent) {
        let name = "runner spool";
        let spool = mindrune_server::runner::default_spool(&self.home, &agent.name);
        if !spool.is_dir() {
            self.checks.push(Check::skip(
                name,
                format!(
                    "{}: no spool at {} (no runner relays for it here)",
                    agent.name,
                    spool.display()
                ),
            ));
            return;
        }
        let items = |folder: &str| -> Vec<String> {
            std::fs::read_dir(spool.join(folder))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with(".json"))
                .collect()
        };
        let waiting: Vec<String> = [
            mindrune_server::runner::spool::INBOX,
            mindrune_server::runner::spool::OUTBOX,
        ]
        .iter()
        .flat_map(|f| items(f))
        .collect();
        let rejected = items(mindrune_server::runner::spool::REJECTED).len();
        // An item's name starts with the millisecond it was written.
        let oldest = waiting
            .iter()
            .filter_map(|n| n.split('-').next()?.parse::<i64>().ok())
            .min();
        let backlog = crate::render::count(waiting.len(), "item", "items");
        let delivered =
            std::fs::read_to_string(spool.join(mindrune_server::runner::spool::LAST_DELIVERY))
                .ok()
                .and_then(|text| text.trim().parse::<i64>().ok())
                .map_or_else(
                    || "; nothing delivered yet".to_string(),
                    |at| {
                        format!(
                            "; last delivery {} ago",
                            crate::render::age(now_millis() - at)
                        )
                    },
                );
        match oldest {
            Some(oldest) if now_millis() - oldest > 5 * 60_000 => self.checks.push(Check::fail(
                name,
                format!(
                    "{}: {backlog} waiting in {}, the oldest for {}{delivered}: its runner is not delivering",
                    agent.name,
                    spool.display(),
                    crate::render::age(now_millis() - oldest)
                ),
                format!("start (or restart) the runner for `{}`; `{} runner … --once` delivers and says why it cannot", agent.name, shell_word(&self.binary)),
            )),
            _ => self.checks.push(Check::ok(
                name,
                format!(
                    "{}: {backlog} waiting in {}{}{delivered}",
                    agent.name,
                    spool.display(),
                    if rejected > 0 { format!(", {rejected} refused by the server (see rejected/)") } else { String::new() }
                ),
            )),
        }
    }

    fn vocabulary(&mut self, store: &dyn Store) {
        match store.vocabulary_digest() {
            Ok(Some(_)) => self.checks.push(Check::ok("vocabulary", "the topic-tag vocabulary is built")),
            Ok(None) => self.checks.push(Check::fail(
                "vocabulary",
                "no topic-tag vocabulary: headers' tags cannot be checked and lessons are not tagged",
                format!(
                    "`{} tags build --wiki {}`",
                    self.bin_home(),
                    shell_word(&self.project.join("wiki").display().to_string())
                ),
            )),
            Err(err) => self.checks.push(Check::fail(
                "vocabulary",
                format!("cannot read the vocabulary: {err}"),
                "see the library check",
            )),
        }
    }

    /// Failures the hooks noted in the last day.
    fn failures(&mut self, notes: &Path) {
        let day_ago = now_millis() - 24 * 3_600_000;
        let recent: Vec<_> = hook_failures::read_failures(notes)
            .into_iter()
            .filter(|f| f.at >= day_ago)
            .collect();
        match recent.last() {
            None => self
                .checks
                .push(Check::ok("hook failures", "none in the last 24 hours")),
            Some(last) => self.checks.push(Check::fail(
                "hook failures",
                format!(
                    "{} in the last 24 hours, the last {} ago ({}): {}",
                    recent.len(),
                    crate::render::age(now_millis() - last.at),
                    last.event,
                    last.error
                ),
                format!(
                    "mend what the last one says; they are kept in {}",
                    notes.join(hook_failures::FAILURES_FILE).display()
                ),
            )),
        }
    }

    fn server(&mut self) {
        let Some(server) = self.args.server else {
            self.checks.push(Check::skip(
                "server",
                "no --server given (relay mode needs one)",
            ));
            return;
        };
        let url = format!("{}/ready", server.trim_end_matches('/'));
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .timeout_global(Some(Duration::from_secs(10)))
                .http_status_as_error(false)
                .build(),
        );
        match agent.get(&url).call() {
            Ok(answer) if answer.status().is_success() => {
                self.checks
                    .push(Check::ok("server", format!("{url} answers ready")));
            }
            Ok(answer) => self.checks.push(Check::fail(
                "server",
                format!("{url} answers {}", answer.status()),
                "see the server's log: it is up but not ready (its library?)",
            )),
            Err(err) => self.checks.push(Check::fail(
                "server",
                format!("{url} does not answer: {err}"),
                format!("start it: `{} serve`", self.bin_home()),
            )),
        }
    }

    /// The `claude` on PATH, which the user starts, and its version.
    fn claude(&mut self) {
        let Some(path) = find_on_path("claude") else {
            self.checks.push(Check::fail(
                "claude",
                "no `claude` on PATH: the hooks run only inside Claude Code",
                "install Claude Code (`npm install -g @anthropic-ai/claude-code`)",
            ));
            return;
        };
        let version = Command::new(&path)
            .arg("--version")
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string());
        match version {
            Some(version) => self.checks.push(Check::ok(
                "claude",
                format!("{} ({version})", path.display()),
            )),
            None => self.checks.push(Check::fail(
                "claude",
                format!("{} does not answer `--version`", path.display()),
                "reinstall Claude Code",
            )),
        }
    }
}

/// The file `sh` would run for a command name, from PATH.
fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
