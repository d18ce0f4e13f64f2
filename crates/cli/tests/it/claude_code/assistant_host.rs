//! The real Claude Code as the assistant's MCP client: `mindrune mcp` asks the human through
//! elicitation, and in print mode Claude Code answers every elicitation `cancel` unless an
//! `Elicitation` hook answers it. A cancel is nobody answering, never a no.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::model_api::{ModelApi, Step, tool};
use super::{ClaudeCode, skipped, tools};
use crate::mcp::weekly_report;

/// `mindrune COMMAND --workspace W ARGS…`, which must succeed; its stdout.
fn mindrune(workspace: &Path, command: &str, args: &[&str]) -> String {
    let output = Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .arg(command)
        .arg("--workspace")
        .arg(workspace)
        .args(args)
        .env_remove("MINDRUNE_WORKSPACE")
        .env_remove("MINDRUNE_HOME")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "mindrune {command} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Whether any tool result the model was sent holds `text`.
fn model_was_told(model: &ModelApi, text: &str) -> bool {
    model.requests().iter().any(|request| {
        request["messages"].as_array().is_some_and(|messages| {
            messages.iter().any(|message| {
                message["content"].as_array().is_some_and(|blocks| {
                    blocks.iter().any(|block| {
                        block["type"] == "tool_result"
                            && block["content"].to_string().contains(text)
                    })
                })
            })
        })
    })
}

#[test]
fn with_the_real_claude_code_a_cancel_drafts_nothing_and_an_elicitation_hook_s_yes_drafts() {
    if skipped("with_the_real_claude_code_a_cancel_drafts_nothing") {
        return;
    }
    let tools = tools();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let workspace = root.join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    mindrune(&workspace, "playbook", &["init"]);
    let config = root.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"mindrune": {"command": assert_cmd::cargo::cargo_bin("mindrune"),
               "args": ["mcp", "--workspace", workspace]}}})
        .to_string(),
    )
    .unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let model = ModelApi::start();
    let claude = ClaudeCode {
        tools,
        hook_recorder: None,
        home,
        model_url: model.url.clone(),
        env: Vec::new(),
    };
    let create = || {
        vec![
            tool("mcp__mindrune__skill_create", weekly_report()),
            Step::Text("Done.".into()),
        ]
    };

    // Print mode, no hook: Claude Code answers the question `cancel`.
    model.script("cancel", create());
    claude.run(
        &workspace,
        "[[cancel]] Save the weekly report as a skill.",
        Some(&config),
    );
    assert!(
        model_was_told(&model, "Nobody answered: the client cancelled the question"),
        "the assistant was not told that nobody answered"
    );
    assert!(
        !workspace.join("skills/pending/weekly-report").exists(),
        "a cancel drafted the skill"
    );
    let cards: Value = serde_json::from_str(&mindrune(&workspace, "inbox", &["--json"])).unwrap();
    assert_eq!(cards.as_array().unwrap().len(), 0, "{cards:#}");

    // An Elicitation hook of the host answers for the human: yes.
    std::fs::create_dir_all(workspace.join(".claude")).unwrap();
    let answer = json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                        "content": {"approve": true}}});
    std::fs::write(
        workspace.join(".claude/settings.json"),
        json!({"hooks": {"Elicitation": [{"hooks": [{"type": "command",
               "command": format!("cat > /dev/null; echo '{answer}'")}]}]}})
        .to_string(),
    )
    .unwrap();
    model.script("hook-yes", create());
    claude.run(
        &workspace,
        "[[hook-yes]] Save the weekly report as a skill.",
        Some(&config),
    );
    assert!(
        model_was_told(&model, "Drafted weekly-report and filed card #1"),
        "the hook's yes did not draft the skill"
    );
    let cards: Value = serde_json::from_str(&mindrune(&workspace, "inbox", &["--json"])).unwrap();
    assert_eq!(cards.as_array().unwrap().len(), 1, "{cards:#}");
}
