//! `mindrune setup claude-code [PROJECT] [--workspace DIR] [--dry-run]`: an assistant's
//! playbook workspace, wired into Claude Code.
//!
//! It registers `mindrune mcp` in the project's `.mcp.json` (the assistant's skill tools) and
//! merges MindRune's hooks into its `.claude/settings.json`: the guard before the host's own
//! file tools and shell (`PreToolUse`), the host's reads of skills logged as `workspace_read`
//! logs them (`PostToolUse`/`PostToolUseFailure` of `Read`), and the carried skills added to
//! every turn (`UserPromptSubmit`). Both files are the user's: every other byte stays, a dry
//! run shows the diffs, running it twice changes nothing.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use mindrune_engine::CONFIG_FILE;
use mindrune_engine::{
    WORKSPACE_HOOK_EVENTS, enable_mcpjson_server, hook_command_start, merge_mcp_server,
};

use super::{SettingsPlan, file_diff, moved_note, plan_hooks, read_text, shell_word, this_binary};

/// The name the MCP server is registered under: its tools reach the model as
/// `mcp__mindrune__skill_create` and so on.
const SERVER_NAME: &str = "mindrune";

/// `mindrune setup claude-code`.
pub(crate) fn claude_code(
    project: &Path,
    workspace: Option<&Path>,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    let plan = Plan::make(project, workspace)?;
    let mut out = std::io::stdout().lock();
    if dry_run {
        writeln!(out, "Dry run: nothing is changed.\n")?;
        plan.report(&mut out, true)?;
        return Ok(ExitCode::SUCCESS);
    }
    plan.apply()?;
    plan.report(&mut out, false)?;
    Ok(ExitCode::SUCCESS)
}

struct Plan {
    /// This binary, absolute and canonical: what the hooks and `.mcp.json` run.
    binary: String,
    project: PathBuf,
    workspace: PathBuf,
    /// Whether the workspace has no playbook settings yet (`playbook init` makes them).
    init: bool,
    settings: SettingsPlan,
    mcp: McpPlan,
}

struct McpPlan {
    path: PathBuf,
    old: Option<String>,
    new: Option<String>,
    updated: bool,
    /// `.claude/settings.local.json`, the user's own settings of the project (never shared):
    /// the approval of the project's server `mindrune`.
    approval_path: PathBuf,
    approval_old: Option<String>,
    approval_new: Option<String>,
}

impl Plan {
    fn make(project: &Path, workspace: Option<&Path>) -> anyhow::Result<Plan> {
        let project = project.canonicalize().with_context(|| {
            format!(
                "{} does not exist\n\nhint: give the folder you start Claude Code in (its project)",
                project.display()
            )
        })?;
        if !project.is_dir() {
            bail!(
                "{} is not a folder\n\nhint: give the folder you start Claude Code in (its project)",
                project.display()
            );
        }
        let workspace = match workspace {
            None => project.clone(),
            Some(dir) => {
                let absolute = std::path::absolute(dir)
                    .with_context(|| format!("cannot resolve {}", dir.display()))?;
                absolute.canonicalize().unwrap_or(absolute)
            }
        };
        if workspace.exists() && !workspace.is_dir() {
            bail!(
                "{} is not a folder, so it cannot be the assistant's workspace; nothing was changed",
                workspace.display()
            );
        }
        let workspace_text = workspace
            .to_str()
            .with_context(|| format!("the path {} is not UTF-8", workspace.display()))?
            .to_string();
        let init = !workspace.join(CONFIG_FILE).exists();
        let binary = this_binary()?;
        let settings = plan_hooks(
            &project,
            &WORKSPACE_HOOK_EVENTS,
            &hook_command(&binary, &project, &workspace),
        )?;
        let mcp = McpPlan::make(&binary, &project, &workspace_text)?;
        Ok(Plan {
            binary,
            project,
            workspace,
            init,
            settings,
            mcp,
        })
    }

    /// The workspace first (the hooks and the server need it), then the two files.
    fn apply(&self) -> anyhow::Result<()> {
        if self.init {
            crate::playbooks::init_workspace(&self.workspace, false)?;
        }
        if let Some(text) = &self.settings.new {
            super::write_atomically(&self.settings.path, text.as_bytes())?;
        }
        if let Some(text) = &self.mcp.new {
            super::write_atomically(&self.mcp.path, text.as_bytes())?;
        }
        if let Some(text) = &self.mcp.approval_new {
            super::write_atomically(&self.mcp.approval_path, text.as_bytes())?;
        }
        Ok(())
    }

    fn report(&self, out: &mut impl std::io::Write, dry: bool) -> anyhow::Result<()> {
        let workspace = self.workspace.display();
        if self.init {
            let verb = if dry { "Would make" } else { "Made" };
            writeln!(
                out,
                "{verb} the playbook workspace {workspace} (skills/, playbooks.toml, and permissions.yaml as shipped: every card waits for you)."
            )?;
        } else {
            writeln!(out, "Using the playbook workspace {workspace}.")?;
        }
        let settings = &self.settings;
        let shown = Path::new(".claude").join("settings.json");
        let shown = shown.display();
        if settings.added.is_empty() && settings.updated.is_empty() {
            writeln!(out, "MindRune's hooks are installed already in {shown}.")?;
        } else {
            let verb = match (dry, settings.added.is_empty()) {
                (true, false) => "Would add",
                (false, false) => "Added",
                (true, true) => "Would update",
                (false, true) => "Updated",
            };
            let events: Vec<&str> = settings
                .added
                .iter()
                .chain(&settings.updated)
                .copied()
                .collect();
            writeln!(
                out,
                "{verb} MindRune's hooks for {} in {shown}{}",
                events.join(", "),
                if dry { ":" } else { "." }
            )?;
            moved_note(out, settings, &self.binary, dry)?;
            if dry {
                file_diff(
                    out,
                    &Path::new(".claude").join("settings.json"),
                    settings.old.as_deref(),
                    settings.new.as_deref(),
                )?;
            }
        }
        let mcp = &self.mcp;
        match (&mcp.new, mcp.updated) {
            (None, _) => writeln!(
                out,
                "The MCP server `{SERVER_NAME}` is registered already in .mcp.json."
            )?,
            (Some(_), updated) => {
                let verb = match (dry, updated) {
                    (true, false) => "Would register",
                    (false, false) => "Registered",
                    (true, true) => "Would update",
                    (false, true) => "Updated",
                };
                writeln!(
                    out,
                    "{verb} the MCP server `{SERVER_NAME}` ({} mcp --workspace {workspace}) in .mcp.json{}",
                    shell_word(&self.binary),
                    if dry { ":" } else { "." }
                )?;
                if dry {
                    file_diff(
                        out,
                        Path::new(".mcp.json"),
                        mcp.old.as_deref(),
                        mcp.new.as_deref(),
                    )?;
                }
            }
        }
        if mcp.approval_new.is_some() {
            let verb = if dry { "Would approve" } else { "Approved" };
            writeln!(
                out,
                "{verb} it for you in .claude/settings.local.json (your own settings of the project, never shared){}",
                if dry { ":" } else { "." }
            )?;
            if dry {
                file_diff(
                    out,
                    &Path::new(".claude").join("settings.local.json"),
                    mcp.approval_old.as_deref(),
                    mcp.approval_new.as_deref(),
                )?;
            }
        }
        writeln!(out)?;
        writeln!(
            out,
            "In Claude Code the host's own Write, Edit, MultiEdit, NotebookEdit and Bash cannot write into skills/, .mindrune/, playbooks.toml or permissions.yaml: a skill is made with skill_create and changed with skill_refine."
        )?;
        writeln!(
            out,
            "Start Claude Code in {} (`claude`): the skill tools are the MCP server `{SERVER_NAME}`'s.",
            self.project.display()
        )?;
        Ok(())
    }
}

impl McpPlan {
    fn make(binary: &str, project: &Path, workspace: &str) -> anyhow::Result<McpPlan> {
        let path = project.join(".mcp.json");
        let old = read_text(&path, "MindRune's MCP server")?;
        let args = ["mcp".to_string(), "--workspace".into(), workspace.into()];
        let merged = merge_mcp_server(old.as_deref(), SERVER_NAME, binary, &args)
            .map_err(|err| json_error(&path, &err, "MindRune's MCP server cannot be added"))?;
        let approval_path = project.join(".claude").join("settings.local.json");
        let approval_old = read_text(&approval_path, "the approval of MindRune's MCP server")?;
        let approval_new =
            enable_mcpjson_server(approval_old.as_deref(), SERVER_NAME).map_err(|err| {
                json_error(
                    &approval_path,
                    &err,
                    "MindRune's MCP server cannot be approved there",
                )
            })?;
        Ok(McpPlan {
            path,
            old,
            new: merged.text,
            updated: merged.updated,
            approval_path,
            approval_old,
            approval_new,
        })
    }
}

/// A JSON file MindRune cannot merge into: where (line and column) and why, and what to do.
fn json_error(path: &Path, err: &serde_json::Error, consequence: &str) -> anyhow::Error {
    let (line, column) = (err.line(), err.column());
    let message = err.to_string();
    let message = message
        .strip_suffix(&format!(" at line {line} column {column}"))
        .unwrap_or(&message);
    anyhow::anyhow!(
        "{}: line {line}, column {}: {message}; {consequence}, and nothing was changed\n\nhint: fix the JSON there (Claude Code cannot read it either), or move the file away, then run this again",
        path.display(),
        column.max(1)
    )
}

/// The command the workspace's hooks run: the workspace named from the project folder
/// (`$CLAUDE_PROJECT_DIR`, which Claude Code sets) when it lies inside it, else absolutely;
/// never relative to the folder a hook happens to run in, which moves with the agent's `cd`.
fn hook_command(binary: &str, project: &Path, workspace: &Path) -> String {
    let workspace = match workspace.strip_prefix(project) {
        Ok(inside) if inside.as_os_str().is_empty() => "\"$CLAUDE_PROJECT_DIR\"".to_string(),
        Ok(inside) => format!(
            "\"$CLAUDE_PROJECT_DIR\"/{}",
            shell_word(&inside.display().to_string())
        ),
        Err(_) => shell_word(&workspace.display().to_string()),
    };
    format!("{} --workspace {workspace}", hook_command_start(binary))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_is_named_from_the_project_folder_or_absolutely() {
        let project = Path::new("/p");
        assert_eq!(
            hook_command("/opt/mr bin/mindrune", project, Path::new("/p")),
            "'/opt/mr bin/mindrune' hook claude-code --workspace \"$CLAUDE_PROJECT_DIR\""
        );
        assert_eq!(
            hook_command("/opt/mr bin/mindrune", project, Path::new("/p/assistant")),
            "'/opt/mr bin/mindrune' hook claude-code --workspace \"$CLAUDE_PROJECT_DIR\"/assistant"
        );
        assert_eq!(
            hook_command("/opt/mr bin/mindrune", project, Path::new("/elsewhere/ws")),
            "'/opt/mr bin/mindrune' hook claude-code --workspace /elsewhere/ws"
        );
    }

    #[test]
    fn the_mcp_server_goes_into_the_user_s_mcp_json_once() {
        let args = ["mcp".to_string(), "--workspace".into(), "/ws".into()];
        let text = "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  }\n}\n";
        let once = merge_mcp_server(Some(text), SERVER_NAME, "mindrune", &args).unwrap();
        let new = once.text.unwrap();
        assert!(new.starts_with("{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"},\n    \"mindrune\": {\n"), "{new}");
        let parsed: serde_json::Value = serde_json::from_str(&new).unwrap();
        assert_eq!(parsed["mcpServers"]["mindrune"]["args"][2], "/ws");
        let twice = merge_mcp_server(Some(&new), SERVER_NAME, "mindrune", &args).unwrap();
        assert!(twice.text.is_none(), "a second run changed the file");
        let moved = ["mcp".to_string(), "--workspace".into(), "/ws2".into()];
        let updated = merge_mcp_server(Some(&new), SERVER_NAME, "mindrune", &moved).unwrap();
        assert!(updated.updated);
        let parsed: serde_json::Value = serde_json::from_str(&updated.text.unwrap()).unwrap();
        assert_eq!(parsed["mcpServers"]["mindrune"]["args"][2], "/ws2");
        assert_eq!(parsed["mcpServers"]["other"]["command"], "x");
    }

    #[test]
    fn local_settings_of_another_shape_are_refused_and_a_listed_server_changes_nothing() {
        for text in ["[1]", "{\"enabledMcpjsonServers\": \"mindrune\"}"] {
            assert!(
                enable_mcpjson_server(Some(text), SERVER_NAME).is_err(),
                "{text}"
            );
        }
        let listed = "{\"enabledMcpjsonServers\": [\"mindrune\"]}";
        assert_eq!(
            enable_mcpjson_server(Some(listed), SERVER_NAME).unwrap(),
            None
        );
        let added =
            enable_mcpjson_server(Some("{\"enabledMcpjsonServers\": [\"gh\"]}"), SERVER_NAME)
                .unwrap()
                .unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&added).unwrap();
        assert_eq!(
            parsed["enabledMcpjsonServers"],
            serde_json::json!(["gh", "mindrune"])
        );
    }

    #[test]
    fn an_mcp_json_that_is_no_object_is_refused() {
        let args = ["mcp".to_string()];
        assert!(merge_mcp_server(Some("[]"), SERVER_NAME, "mindrune", &args).is_err());
        assert!(
            merge_mcp_server(Some("{\"mcpServers\": 1}"), SERVER_NAME, "mindrune", &args).is_err()
        );
    }
}
