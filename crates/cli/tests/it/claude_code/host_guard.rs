//! The host keeps MindRune's rules: the real Claude Code, wired by the real `mindrune setup
//! claude-code` (an assistant) and `mindrune setup rs-sdk` (avatars), tries the host's own
//! tools on the places MindRune keeps; each call is denied before it runs, nothing reaches the
//! disk, and the model is told why. A host `Read` of a skill is logged, and the carried list
//! reaches the model on the turn after a skill goes live.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::model_api::{ModelApi, Step, bash, tool};
use super::{ClaudeCode, hook_calls, hook_recorder, skipped, tools};
use crate::mcp::weekly_report;

const WEEKLY: &str = "---\ntrigger: the human asks for the weekly report\nuse_when: a week of notes exists under notes/\nsteps:\n  - do: Read this week's notes\n    tool: workspace_read\n  - do: Write the report to reports/weekly.md\n    tool: file_write\nexpected_result: reports/weekly.md exists\n---\nRead the notes, then write the report.\n";

/// `mindrune ARGS…` in `dir`, which must succeed; its stdout.
fn mindrune(dir: &Path, home: &Path, args: &[&str]) -> String {
    let output = Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("MINDRUNE_WORKSPACE")
        .env_remove("MINDRUNE_HOME")
        .env_remove("MINDRUNE_AGENT")
        .env_remove("MINDRUNE_RELAY")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "mindrune {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The text of every tool result the model was sent, once per call, in order.
fn tool_results(model: &ModelApi) -> Vec<String> {
    let mut ids = Vec::new();
    let mut results = Vec::new();
    for request in model.requests() {
        for message in request["messages"].as_array().into_iter().flatten() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" && !ids.contains(&block["tool_use_id"]) {
                    ids.push(block["tool_use_id"].clone());
                    results.push(block["content"].to_string());
                }
            }
        }
    }
    results
}

/// Whether any request sent the model `text` anywhere (a hook's added context included).
fn model_saw(model: &ModelApi, text: &str) -> bool {
    model
        .requests()
        .iter()
        .any(|request| request.to_string().contains(text))
}

/// Whether the model was told of a denial by MindRune's guard naming `place`.
fn denial_named(results: &[String], place: &str) -> bool {
    results
        .iter()
        .any(|text| text.contains("MindRune denied") && text.contains(place))
}

struct Assistant {
    _dir: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
    model: ModelApi,
    claude: ClaudeCode,
    root: PathBuf,
}

impl Assistant {
    fn new() -> Assistant {
        let tools = tools();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let project = root.join("assistant");
        let home = root.join("home");
        std::fs::create_dir_all(project.join("notes")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            project.join("notes/monday.md"),
            "# Monday\nshipped the fix\n",
        )
        .unwrap();
        hook_recorder(&root.join("hook-bin"), &root.join("hook-log"));
        let model = ModelApi::start();
        let claude = ClaudeCode {
            tools,
            hook_recorder: Some(root.join("hook-bin")),
            home: home.clone(),
            model_url: model.url.clone(),
            env: Vec::new(),
        };
        Assistant {
            _dir: dir,
            project,
            home,
            model,
            claude,
            root,
        }
    }

    fn mindrune(&self, args: &[&str]) -> String {
        mindrune(&self.project, &self.home, args)
    }

    fn workspace(&self, command: &str, args: &[&str]) -> String {
        let mut all = vec![command, "--workspace", self.project.to_str().unwrap()];
        all.extend_from_slice(args);
        self.mindrune(&all)
    }
}

#[test]
fn in_an_assistant_s_workspace_the_host_s_own_tools_cannot_write_skills_and_its_reads_count() {
    if skipped("in_an_assistant_s_workspace_the_host_s_own_tools_cannot_write_skills") {
        return;
    }
    let ws = Assistant::new();
    let setup = ws.mindrune(&["setup", "claude-code", ws.project.to_str().unwrap()]);
    assert!(
        setup.contains("Registered the MCP server `mindrune`"),
        "{setup}"
    );
    // A live skill the attempts aim at: proposed by the human and approved.
    std::fs::write(ws.root.join("weekly.md"), WEEKLY).unwrap();
    ws.workspace(
        "playbook",
        &[
            "propose",
            "weekly-report",
            "--file",
            ws.root.join("weekly.md").to_str().unwrap(),
        ],
    );
    ws.workspace("card", &["approve", "1"]);
    let skill = ws.project.join("skills/weekly-report/SKILL.md");
    let before = std::fs::read_to_string(&skill).unwrap();
    let p = ws.project.display().to_string();

    ws.model.script(
        "attempts",
        vec![
            tool("Read", json!({"file_path": format!("{p}/skills/weekly-report/SKILL.md")})),
            tool(
                "Write",
                json!({"file_path": format!("{p}/skills/fresh/SKILL.md"), "content": "---\ntrigger: x\n---\nx\n"}),
            ),
            tool(
                "Edit",
                json!({"file_path": format!("{p}/skills/weekly-report/SKILL.md"),
                       "old_string": "Read the notes", "new_string": "Skip the notes"}),
            ),
            bash("echo '# mine' > skills/fresh/SKILL.md"),
            bash("cp notes/monday.md skills/weekly-report/SKILL.md"),
            bash("cd skills/weekly-report && sed -i 's/Read/Skip/' SKILL.md"),
            // Claude Code refuses to overwrite a file it has not read before any hook runs.
            tool("Read", json!({"file_path": format!("{p}/permissions.yaml")})),
            tool(
                "Write",
                json!({"file_path": format!("{p}/permissions.yaml"), "content": "create: auto\n"}),
            ),
            bash("cat skills/weekly-report/SKILL.md > notes/copy.md"),
            Step::Text("Done.".into()),
        ],
    );
    ws.claude.run(
        &ws.project,
        "[[attempts]] Tidy up the weekly report skill.",
        None,
    );

    let results = tool_results(&ws.model);
    for place in [
        "skills/fresh/SKILL.md",
        "skills/weekly-report/SKILL.md",
        "permissions.yaml",
    ] {
        assert!(
            denial_named(&results, place),
            "the model was not told the guard denied {place}:\n{results:#?}"
        );
    }
    let denials = results
        .iter()
        .filter(|t| t.contains("MindRune denied"))
        .count();
    assert_eq!(denials, 6, "every write attempt is denied:\n{results:#?}");
    assert!(
        results.iter().any(|t| t.contains("skill_create")),
        "the model was not told the right tool"
    );
    assert!(
        !ws.project.join("skills/fresh").exists(),
        "a skill was dropped in"
    );
    assert_eq!(
        std::fs::read_to_string(&skill).unwrap(),
        before,
        "the skill changed"
    );
    assert!(
        std::fs::read_to_string(ws.project.join("permissions.yaml"))
            .unwrap()
            .contains("create"),
    );
    // The read went through and the copy outside skills/ was allowed.
    assert!(
        ws.project.join("notes/copy.md").is_file(),
        "a read-only line was denied"
    );

    // The host's Read of the skill wrote the usage line workspace_read writes.
    let record = ws.workspace("playbook", &["record", "weekly-report"]);
    assert!(
        record.contains("1 read"),
        "the host's Read was not logged:\n{record}"
    );

    // Every hook exited cleanly, and only the guard and the turn's context spoke on stdout.
    let hooks = hook_calls(&ws.root.join("hook-log"));
    assert!(!hooks.is_empty(), "no hook ran");
    for call in &hooks {
        assert_eq!(
            call.exit,
            0,
            "{} exited {}: {}",
            call.event(),
            call.exit,
            call.stderr
        );
        if !call.stdout.is_empty() {
            assert!(
                matches!(call.event(), "PreToolUse" | "UserPromptSubmit"),
                "{} wrote to stdout: {}",
                call.event(),
                call.stdout
            );
        }
    }
    // With no `mindrune` on PATH, every link of the assistant's wiring holds.
    let doctor = Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .args(["doctor", ws.project.to_str().unwrap()])
        .current_dir(&ws.project)
        .env("HOME", &ws.home)
        .env(
            "PATH",
            format!(
                "{}:{}",
                ws.claude.tools.display(),
                crate::util::path_without_mindrune()
            ),
        )
        .env_remove("MINDRUNE_HOME")
        .env_remove("MINDRUNE_AGENT")
        .env_remove("MINDRUNE_RELAY")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        doctor.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&doctor.stderr)
    );
    assert!(said.contains("guard: a Write into skills/doctor-probe/SKILL.md through the installed PreToolUse hook is denied"), "{said}");
}

#[test]
fn a_skill_made_live_on_turn_one_is_carried_into_turn_two() {
    if skipped("a_skill_made_live_on_turn_one_is_carried_into_turn_two") {
        return;
    }
    let ws = Assistant::new();
    ws.mindrune(&["setup", "claude-code", ws.project.to_str().unwrap()]);
    // The human says yes to skill_create's question (Claude Code's Elicitation hook answers for
    // them in print mode), then approves the card between the turns.
    let settings_path = ws.project.join(".claude/settings.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    let answer = json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                        "content": {"approve": true}}});
    settings["hooks"]["Elicitation"] = json!([{"hooks": [{"type": "command",
        "command": format!("cat > /dev/null; echo '{answer}'")}]}]);
    std::fs::write(&settings_path, settings.to_string()).unwrap();

    // One session, two turns (the second resumes the first); the stand-in counts the session's
    // assistant turns, so one script spans both.
    ws.model.script(
        "carried",
        vec![
            tool("mcp__mindrune__skill_create", weekly_report()),
            Step::Text("Saved.".into()),
            Step::Text("Here is the report.".into()),
        ],
    );
    let session = "7b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b";
    ws.claude.run_args(
        &ws.project,
        "[[carried]] Save the weekly report as a skill.",
        None,
        &["--session-id", session],
    );
    assert!(
        model_saw(&ws.model, "Drafted weekly-report and filed card #1"),
        "skill_create did not run through the project's MCP server"
    );
    assert!(
        model_saw(&ws.model, "MindRune carries no skills yet"),
        "turn one's prompt was not given the carried list"
    );
    ws.workspace("card", &["approve", "1"]);

    ws.claude.run_args(
        &ws.project,
        "Now write this week's report.",
        None,
        &["--resume", session],
    );
    let turn_two: Vec<Value> = ws
        .model
        .requests()
        .into_iter()
        .filter(|r| r.to_string().contains("Now write this week's report."))
        .collect();
    assert!(!turn_two.is_empty(), "turn two never reached the model");
    assert!(
        turn_two
            .iter()
            .all(|r| r.to_string().contains("[[carried]]")),
        "turn two is not the same session"
    );
    assert!(
        turn_two.iter().any(|r| r
            .to_string()
            .contains("weekly-report: a week of notes exists under notes/")),
        "turn two did not carry the skill made live after turn one"
    );
}

#[test]
fn an_avatar_s_host_tools_cannot_write_family_skills_or_a_sibling_s_folder() {
    if skipped("an_avatar_s_host_tools_cannot_write_family_skills") {
        return;
    }
    let tools = tools();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let checkout = root.join("rs-sdk");
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    for bot in ["buzz", "rex"] {
        let folder = checkout.join("bots").join(bot);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("bot.env"),
            format!("BOT_USERNAME={bot}\nPASSWORD=pw-{bot}-Zq8\n"),
        )
        .unwrap();
    }
    std::fs::write(checkout.join("bots/rex/fish.ts"), "console.log('fish');\n").unwrap();
    std::fs::write(checkout.join("claude.md"), "# rs-sdk\n").unwrap();
    mindrune(
        &checkout,
        &home,
        &[
            "--home",
            checkout.join(".mindrune").to_str().unwrap(),
            "setup",
            "rs-sdk",
            ".",
            "--owner",
            "ada",
        ],
    );
    // buzz's view is on disk before the session (its SessionStart writes the same again), so
    // the model can quote a line of it to Edit.
    let library = checkout.join(".mindrune");
    mindrune(
        &checkout,
        &home,
        &["--home", library.to_str().unwrap(), "mirror", "buzz"],
    );
    let index = checkout.join("bots/buzz/family-skills/INDEX.md");
    let index_before = std::fs::read_to_string(&index).unwrap();
    let first_line = index_before.lines().next().unwrap().to_string();
    hook_recorder(&root.join("hook-bin"), &root.join("hook-log"));
    let model = ModelApi::start();
    let claude = ClaudeCode {
        tools,
        hook_recorder: Some(root.join("hook-bin")),
        home,
        model_url: model.url.clone(),
        env: vec![("MINDRUNE_AGENT".into(), "buzz".into())],
    };
    let c = checkout.display().to_string();
    model.script(
        "sibling",
        vec![
            tool(
                "Read",
                json!({"file_path": format!("{c}/bots/rex/fish.ts")}),
            ),
            tool(
                "Edit",
                json!({"file_path": format!("{c}/bots/rex/fish.ts"),
                       "old_string": "fish", "new_string": "mine"}),
            ),
            tool(
                "Read",
                json!({"file_path": format!("{c}/bots/buzz/family-skills/INDEX.md")}),
            ),
            tool(
                "Edit",
                json!({"file_path": format!("{c}/bots/buzz/family-skills/INDEX.md"),
                       "old_string": first_line, "new_string": "# mine"}),
            ),
            bash("echo '// mine' >> bots/rex/fish.ts"),
            bash("cp bots/rex/fish.ts bots/buzz/fish.ts"),
            Step::Text("Done.".into()),
        ],
    );
    claude.run(&checkout, "[[sibling]] Work on your goal.", None);
    let results = tool_results(&model);
    assert!(denial_named(&results, "bots/rex/"), "{results:#?}");
    assert!(denial_named(&results, "family-skills/"), "{results:#?}");
    let denials = results
        .iter()
        .filter(|t| t.contains("MindRune denied"))
        .count();
    assert_eq!(denials, 3, "{results:#?}");
    assert_eq!(
        std::fs::read_to_string(checkout.join("bots/rex/fish.ts")).unwrap(),
        "console.log('fish');\n",
        "the sibling's script changed"
    );
    assert_eq!(
        std::fs::read_to_string(&index).unwrap(),
        index_before,
        "family-skills/ was written"
    );
    // Copying a sibling's script into its own folder is its own work.
    assert!(checkout.join("bots/buzz/fish.ts").is_file());
}
