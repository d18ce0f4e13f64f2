//! Merging MindRune's hooks into Claude Code's `settings.json`. The file is the user's: it
//! is checked with serde_json (so an error names its line and column), and then only
//! edited in place, by inserting text at the end of the `hooks` object or of an event's
//! array, indented as the file is. Every other byte stays as it was.
//!
//! Claude Code's hooks: `{"hooks": {"PreToolUse": [{"matcher": "…", "hooks": [{"type":
//! "command", "command": "…"}]}], …}}`.
//!
//! The hook events each setup installs are written here, beside `hook`, which decodes the calls
//! those hooks make: the two sides of one contract.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap as _, SerializeSeq as _, Serializer};

/// The words after the program in every hook command MindRune installs. One settings file
/// serves every bot of the checkout: whoever starts the bot's Claude Code sets `MINDRUNE_AGENT`
/// to the bot's name (the hook reads it from its environment).
const HOOK_SUBCOMMAND: &str = "hook claude-code";

/// The start of the command every hook runs: the binary by its absolute path, so the hook runs
/// this MindRune whatever the `PATH` of the shell Claude Code starts it in (a hook whose
/// program is not found exits 127, which Claude Code takes for a non-blocking error and shows
/// nobody), as pre-commit's hook scripts name their interpreter.
pub fn hook_command_start(program: &str) -> String {
    format!("{} {HOOK_SUBCOMMAND}", shell_word(program))
}

/// The program a MindRune hook command runs (unquoted), when `command` is one: its first shell
/// word names a file called `mindrune` (by name or path: older setups wrote `mindrune` alone)
/// and `hook claude-code` follows.
pub fn hook_program(command: &str) -> Option<String> {
    let (program, rest) = first_shell_word(command.trim_start())?;
    let named = std::path::Path::new(&program).file_name()? == "mindrune";
    let rest = rest.trim_start().strip_prefix(HOOK_SUBCOMMAND)?;
    (named && (rest.is_empty() || rest.starts_with(char::is_whitespace))).then_some(program)
}

/// The value of `flag` (`--home`, `--database`) in a MindRune hook command, as the shell reads
/// it when Claude Code runs the hook in `project` (which it names in `$CLAUDE_PROJECT_DIR`):
/// what setup wrote, read back by `doctor` to check the library the hooks really use.
pub fn hook_option(command: &str, flag: &str, project: &std::path::Path) -> Option<String> {
    let project = project.to_str()?;
    let (_, rest) = command.split_once(&format!(" {flag} "))?;
    let rest = rest.trim_start();
    let rest = match rest.strip_prefix("\"$CLAUDE_PROJECT_DIR\"") {
        Some(after) => format!("{}{after}", shell_word(project)),
        None => rest.to_string(),
    };
    first_shell_word(&rest).map(|(word, _)| word)
}

/// A word a POSIX shell reads back as `text`: as it is when that is safe, else single-quoted.
pub fn shell_word(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if safe {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The first word of a shell command as the shell reads it (its quotes removed) and the text
/// after it; `None` for an empty command or an unclosed quote. Only what setup writes and what a
/// person types in front of a program needs reading here: plain, single- and double-quoted
/// parts, and backslash escapes; anything the shell would expand (`$`, `` ` ``) is not a fixed
/// program and gives `None`.
fn first_shell_word(command: &str) -> Option<(String, &str)> {
    let mut word = String::new();
    let mut chars = command.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => return (!word.is_empty()).then(|| (word, &command[at..])),
            '\'' => loop {
                match chars.next()?.1 {
                    '\'' => break,
                    c => word.push(c),
                }
            },
            '"' => loop {
                match chars.next()?.1 {
                    '"' => break,
                    '\\' => word.push(chars.next()?.1),
                    '$' | '`' => return None,
                    c => word.push(c),
                }
            },
            '\\' => word.push(chars.next()?.1),
            '$' | '`' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => return None,
            c => word.push(c),
        }
    }
    (!word.is_empty()).then(|| (word, &command[command.len()..]))
}

/// The tool calls the hooks watch: shell commands and rs-sdk's MCP `execute_code`.
const TOOL_MATCHER: &str = "Bash|mcp__.*__execute_code";

/// The tool calls `PreToolUse` sees: the runs, the host's file tools, which the guard keeps
/// out of family-skills/, the siblings' folders and the library, and its reading tools, which
/// it keeps out of the library.
const GUARDED_TOOL_MATCHER: &str =
    "Bash|Write|Edit|MultiEdit|NotebookEdit|Read|Grep|Glob|mcp__.*__execute_code";

/// The Claude Code hook events MindRune listens to, and each one's matcher: `PreToolUse` is
/// the guard and notes a run's start; the two other tool events record runs; `Stop` and
/// `StopFailure` (a turn an API error ended) are the turn boundary; `SessionStart` re-checks
/// the headers, writes family-skills/ and hands the agent its instructions (a `SessionStart`
/// hook's output becomes the agent's context).
pub const HOOK_EVENTS: [(&str, Option<&str>); 6] = [
    ("PreToolUse", Some(GUARDED_TOOL_MATCHER)),
    ("PostToolUse", Some(TOOL_MATCHER)),
    ("PostToolUseFailure", Some(TOOL_MATCHER)),
    ("Stop", None),
    ("StopFailure", None),
    ("SessionStart", None),
];

/// The hook events of an assistant's workspace (`mindrune setup claude-code`): the guard
/// before the host's own file tools and shell, the host's `Read` of a skill logged as
/// `workspace_read` logs it, the carried skills added to every turn, and the session's turn
/// record (every event but the guard's notes it; at `Stop` the observer reads it).
pub const WORKSPACE_HOOK_EVENTS: [(&str, Option<&str>); 6] = [
    ("PreToolUse", Some("Bash|Write|Edit|MultiEdit|NotebookEdit")),
    ("PostToolUse", Some("Read")),
    ("PostToolUseFailure", Some("Read")),
    ("UserPromptSubmit", None),
    ("SessionStart", None),
    ("Stop", None),
];

/// The hook events one setup installs, each with its matcher (`None`: every call).
pub type Events = [(&'static str, Option<&'static str>)];

/// What merging gives: the new text (`None` when every hook is there already), the events
/// a hook was added to, and those whose MindRune hook ran an older command or matched other
/// tools (rewritten in place), in the order of the events given.
pub struct Merged {
    pub text: Option<String>,
    pub added: Vec<&'static str>,
    pub updated: Vec<&'static str>,
    /// The programs MindRune's rewritten hooks ran before, where they were not the one wanted
    /// now (the binary moved, or an older setup named it `mindrune` alone), in the order found.
    pub moved_from: Vec<String>,
}

/// The settings of a checkout that has none: MindRune's hooks alone.
pub fn fresh(events: &Events, command: &str) -> Merged {
    let settings = Json::Object(vec![("hooks".into(), all_hooks(events, command))]);
    let mut text = pretty(&settings, "  ");
    text.push('\n');
    Merged {
        text: Some(text),
        added: events.iter().map(|(event, _)| *event).collect(),
        updated: Vec::new(),
        moved_from: Vec::new(),
    }
}

/// Whether a hook command is MindRune's, whichever version of it setup wrote and wherever its
/// binary was then.
fn is_ours(command: &str) -> bool {
    hook_program(command).is_some()
}

/// Where an event's matcher groups run one of MindRune's commands: the group, the command
/// string's node and its text.
fn our_commands<'n>(text: &str, groups: &'n Node) -> Vec<(&'n Node, &'n Node, String)> {
    let mut found = Vec::new();
    for group in &groups.elements {
        let Some(hooks) = group.last_member("hooks") else {
            continue;
        };
        for hook in &hooks.elements {
            if let Some(node) = hook.last_member("command")
                && let Ok(command) = serde_json::from_str::<String>(&text[node.start..node.end])
                && is_ours(&command)
            {
                found.push((group, node, command));
            }
        }
    }
    found
}

/// Adds MindRune's hook to every event that does not run its command yet, and rewrites an
/// older MindRune command in place (so an upgrade never leaves two hooks recording one
/// call). With a repeated key the last one counts, as when Claude Code reads the file.
pub fn merge(text: &str, events: &Events, command: &str) -> Result<Merged, serde_json::Error> {
    serde_json::from_str::<SettingsCheck>(text)?;
    let top = Scanner { text, at: 0 }.value();
    let style = Style::of(text);
    let mut edits = Vec::new();
    let mut added = Vec::new();
    let mut updated = Vec::new();
    let mut moved_from = Vec::new();
    let wanted_program = hook_program(command);
    match top.last_member("hooks") {
        None => {
            edits.push(style.append(
                text,
                &top,
                &[Item::Member("hooks", all_hooks(events, command))],
            ));
            added.extend(events.iter().map(|(event, _)| *event));
        }
        Some(hooks) => {
            let mut missing = Vec::new();
            for &(event, matcher) in events {
                match hooks.last_member(event) {
                    None => {
                        missing.push(Item::Member(
                            event,
                            Json::Array(vec![group(matcher, command)]),
                        ));
                        added.push(event);
                    }
                    Some(groups) => {
                        let ours = our_commands(text, groups);
                        if ours.is_empty() {
                            edits.push(style.append(
                                text,
                                groups,
                                &[Item::Element(group(matcher, command))],
                            ));
                            added.push(event);
                            continue;
                        }
                        let mut changed = false;
                        for (group, node, present) in ours {
                            if let Some(program) = hook_program(&present)
                                && Some(&program) != wanted_program.as_ref()
                                && !moved_from.contains(&program)
                            {
                                moved_from.push(program);
                            }
                            if present != command {
                                edits.push(Edit {
                                    from: node.start,
                                    to: node.end,
                                    text: quoted(command),
                                });
                                changed = true;
                            }
                            // An older MindRune watched fewer tools (the guard needs the file
                            // tools too): its matcher is rewritten in place as well.
                            if let (Some(wanted), Some(node)) =
                                (matcher, group.last_member("matcher"))
                                && serde_json::from_str::<String>(&text[node.start..node.end])
                                    .ok()
                                    .as_deref()
                                    != Some(wanted)
                            {
                                edits.push(Edit {
                                    from: node.start,
                                    to: node.end,
                                    text: quoted(wanted),
                                });
                                changed = true;
                            }
                        }
                        if changed {
                            updated.push(event);
                        }
                    }
                }
            }
            if !missing.is_empty() {
                edits.push(style.append(text, hooks, &missing));
            }
        }
    }
    if edits.is_empty() {
        return Ok(Merged {
            text: None,
            added,
            updated,
            moved_from,
        });
    }
    // From the end backwards, so each edit's offsets still hold. Edits never overlap: an
    // event's array ends before the end of the hooks object it is in.
    edits.sort_by_key(|edit| std::cmp::Reverse(edit.from));
    let mut merged = text.to_string();
    for edit in edits {
        merged.replace_range(edit.from..edit.to, &edit.text);
    }
    Ok(Merged {
        text: Some(merged),
        added,
        updated,
        moved_from,
    })
}

/// What an MCP config merge gives: the new text (`None`: the server is there as wanted), and
/// whether an older entry of the same name was rewritten.
pub struct MergedServer {
    pub text: Option<String>,
    pub updated: bool,
}

/// Puts the MCP server `name` (`command` with `args`) into a project's `.mcp.json` text
/// (`{"mcpServers": {NAME: {"command": …, "args": […]}}}`), or makes the file when `text` is
/// `None`. Every other byte stays; an entry of that name that differs is replaced in place.
pub fn merge_mcp_server(
    text: Option<&str>,
    name: &'static str,
    command: &str,
    args: &[String],
) -> Result<MergedServer, serde_json::Error> {
    let server = Json::Object(vec![
        ("command".into(), Json::String(command.into())),
        (
            "args".into(),
            Json::Array(args.iter().map(|a| Json::String(a.clone())).collect()),
        ),
    ]);
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        let file = Json::Object(vec![(
            "mcpServers".into(),
            Json::Object(vec![(name.into(), server)]),
        )]);
        let mut text = pretty(&file, "  ");
        text.push('\n');
        return Ok(MergedServer {
            text: Some(text),
            updated: false,
        });
    };
    // Its shape checked by serde, so a wrong one is named by its line and column.
    #[derive(serde::Deserialize)]
    struct McpFile {
        #[serde(rename = "mcpServers", default)]
        _servers: Option<std::collections::BTreeMap<String, IgnoredAny>>,
    }
    // (serde reads a struct from an array too: the object is checked first.)
    serde_json::from_str::<std::collections::BTreeMap<String, IgnoredAny>>(text)?;
    serde_json::from_str::<McpFile>(text)?;
    let parsed: serde_json::Value = serde_json::from_str(text)?;
    let wanted = serde_json::json!({"command": command, "args": args});
    let present = parsed.get("mcpServers").and_then(|s| s.get(name));
    if present == Some(&wanted) {
        return Ok(MergedServer {
            text: None,
            updated: false,
        });
    }
    let top = Scanner { text, at: 0 }.value();
    let style = Style::of(text);
    let edit = match top.last_member("mcpServers") {
        None => style.append(
            text,
            &top,
            &[Item::Member(
                "mcpServers",
                Json::Object(vec![(name.into(), server)]),
            )],
        ),
        Some(servers) => match servers.last_member(name) {
            Some(node) => {
                let indent = indentation(text, node.start).to_string();
                Edit {
                    from: node.start,
                    to: node.end,
                    text: pretty(&server, &style.unit).replace('\n', &format!("\n{indent}")),
                }
            }
            None => style.append(text, servers, &[Item::Member(name, server)]),
        },
    };
    let mut merged = text.to_string();
    merged.replace_range(edit.from..edit.to, &edit.text);
    Ok(MergedServer {
        text: Some(merged),
        updated: present.is_some(),
    })
}

/// Makes sure a settings text's `enabledMcpjsonServers` lists `name`: the user's approval of a
/// server in the project's `.mcp.json`, which an interactive Claude Code otherwise asks for
/// once (the user asked for it by running setup). `None`: it is listed.
pub fn enable_mcpjson_server(
    text: Option<&str>,
    name: &'static str,
) -> Result<Option<String>, serde_json::Error> {
    const KEY: &str = "enabledMcpjsonServers";
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        let file = Json::Object(vec![(
            KEY.into(),
            Json::Array(vec![Json::String(name.into())]),
        )]);
        let mut text = pretty(&file, "  ");
        text.push('\n');
        return Ok(Some(text));
    };
    #[derive(serde::Deserialize)]
    struct LocalSettings {
        #[serde(rename = "enabledMcpjsonServers", default)]
        _servers: Option<Vec<IgnoredAny>>,
    }
    serde_json::from_str::<std::collections::BTreeMap<String, IgnoredAny>>(text)?;
    serde_json::from_str::<LocalSettings>(text)?;
    let parsed: serde_json::Value = serde_json::from_str(text)?;
    match parsed.get(KEY) {
        Some(serde_json::Value::Array(names)) if names.iter().any(|n| n == name) => {
            return Ok(None);
        }
        // Any other shape was refused above, with its place.
        _ => {}
    }
    let top = Scanner { text, at: 0 }.value();
    let style = Style::of(text);
    let edit = match top.last_member(KEY) {
        Some(names) => style.append(text, names, &[Item::Element(Json::String(name.into()))]),
        None => style.append(
            text,
            &top,
            &[Item::Member(
                KEY,
                Json::Array(vec![Json::String(name.into())]),
            )],
        ),
    };
    let mut merged = text.to_string();
    merged.replace_range(edit.from..edit.to, &edit.text);
    Ok(Some(merged))
}

/// The `hooks` object with MindRune's hook on every event.
fn all_hooks(events: &Events, command: &str) -> Json {
    Json::Object(
        events
            .iter()
            .map(|(event, matcher)| {
                (
                    event.to_string(),
                    Json::Array(vec![group(*matcher, command)]),
                )
            })
            .collect(),
    )
}

/// One matcher group running MindRune's hook command.
fn group(matcher: Option<&str>, command: &str) -> Json {
    let command = Json::Object(vec![
        ("type".into(), Json::String("command".into())),
        ("command".into(), Json::String(command.into())),
    ]);
    let mut group = Vec::new();
    if let Some(matcher) = matcher {
        group.push(("matcher".into(), Json::String(matcher.into())));
    }
    group.push(("hooks".into(), Json::Array(vec![command])));
    Json::Object(group)
}

// -- Where things are in the text ------------------------------------------------------

/// A value's place in the text (`end` is past its last byte) and, for an object or an
/// array, its children's.
struct Node {
    start: usize,
    end: usize,
    /// Members: where each starts (its key), its key, its value.
    members: Vec<(usize, String, Node)>,
    elements: Vec<Node>,
}

impl Node {
    fn last_member(&self, key: &str) -> Option<&Node> {
        self.members
            .iter()
            .rev()
            .find(|(_, name, _)| name == key)
            .map(|(_, _, value)| value)
    }

    /// Where the first and the last child start, and where the last one ends.
    fn children(&self) -> Option<(usize, usize, usize)> {
        if let (Some(first), Some(last)) = (self.members.first(), self.members.last()) {
            return Some((first.0, last.0, last.2.end));
        }
        match (self.elements.first(), self.elements.last()) {
            (Some(first), Some(last)) => Some((first.start, last.start, last.end)),
            _ => None,
        }
    }
}

/// Finds where the values of a text serde_json has accepted are (so it needs no error
/// handling: on any other text it still ends, with nonsense places).
struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn string(&mut self) {
        self.at += 1;
        while let Some(byte) = self.peek() {
            self.at += if byte == b'\\' { 2 } else { 1 };
            if byte == b'"' {
                break;
            }
        }
        self.at = self.at.min(self.text.len());
    }

    fn value(&mut self) -> Node {
        self.skip_space();
        let start = self.at;
        let mut node = Node {
            start,
            end: start,
            members: Vec::new(),
            elements: Vec::new(),
        };
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                loop {
                    self.skip_space();
                    match self.peek() {
                        None => break,
                        Some(b'}') => {
                            self.at += 1;
                            break;
                        }
                        Some(b'"') => {
                            let key_start = self.at;
                            self.string();
                            let key = serde_json::from_str(&self.text[key_start..self.at])
                                .unwrap_or_default();
                            self.skip_space();
                            if self.peek() == Some(b':') {
                                self.at += 1;
                            }
                            let value = self.value();
                            node.members.push((key_start, key, value));
                        }
                        Some(_) => self.at += 1,
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                loop {
                    self.skip_space();
                    match self.peek() {
                        None => break,
                        Some(b']') => {
                            self.at += 1;
                            break;
                        }
                        Some(b',') => self.at += 1,
                        Some(_) => {
                            let before = self.at;
                            node.elements.push(self.value());
                            if self.at == before {
                                self.at += 1;
                            }
                        }
                    }
                }
            }
            Some(b'"') => self.string(),
            _ => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.at += 1;
                }
            }
        }
        node.end = self.at;
        node
    }
}

// -- Writing text the way the file is written ------------------------------------------

/// A replacement of `from..to` by `text`.
struct Edit {
    from: usize,
    to: usize,
    text: String,
}

enum Item {
    Member(&'static str, Json),
    Element(Json),
}

/// How the file indents: its first indented line's indentation, else two spaces.
struct Style {
    unit: String,
}

impl Style {
    fn of(text: &str) -> Style {
        let unit = text
            .lines()
            .find_map(|line| {
                let rest = line.trim_start_matches([' ', '\t']);
                (rest.len() < line.len() && !rest.is_empty())
                    .then(|| line[..line.len() - rest.len()].to_string())
            })
            .unwrap_or_else(|| "  ".into());
        Style { unit }
    }

    /// Adds `items` at the end of the object or array `node`: each on a line of its own
    /// indented as its siblings (a one-line container stays on one line).
    fn append(&self, text: &str, node: &Node, items: &[Item]) -> Edit {
        let one_line = |item: &Item| match item {
            Item::Member(key, value) => format!("{}: {}", quoted(key), compact(value)),
            Item::Element(value) => compact(value),
        };
        let on_lines = |item: &Item, indent: &str| {
            let (key, value) = match item {
                Item::Member(key, value) => (format!("{}: ", quoted(key)), value),
                Item::Element(value) => (String::new(), value),
            };
            let value = pretty(value, &self.unit).replace('\n', &format!("\n{indent}"));
            format!("{indent}{key}{value}")
        };
        match node.children() {
            Some((first, last, last_end)) => {
                let text = if text[node.start..first].contains('\n') {
                    let indent = indentation(text, last);
                    items
                        .iter()
                        .map(|item| format!(",\n{}", on_lines(item, indent)))
                        .collect()
                } else {
                    items
                        .iter()
                        .map(|item| format!(", {}", one_line(item)))
                        .collect()
                };
                Edit {
                    from: last_end,
                    to: last_end,
                    text,
                }
            }
            None => {
                let close = node.end.saturating_sub(1);
                let text = if text.trim().contains('\n') {
                    let outer = indentation(text, node.start);
                    let inner = format!("{outer}{}", self.unit);
                    let lines: Vec<String> =
                        items.iter().map(|item| on_lines(item, &inner)).collect();
                    format!("\n{}\n{outer}", lines.join(",\n"))
                } else {
                    items.iter().map(one_line).collect::<Vec<_>>().join(", ")
                };
                Edit {
                    from: node.start + 1,
                    to: close,
                    text,
                }
            }
        }
    }
}

/// The indentation of the line `at` is on.
fn indentation(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

fn quoted(key: &str) -> String {
    serde_json::to_string(key).unwrap_or_default()
}

/// A value on one line, spaced as people write it: `{"type": "command", "command": "…"}`.
fn compact(value: &Json) -> String {
    struct OneLine;
    impl serde_json::ser::Formatter for OneLine {
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                writer.write_all(b", ")
            }
        }
        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                writer.write_all(b", ")
            }
        }
        fn begin_object_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
        ) -> std::io::Result<()> {
            writer.write_all(b": ")
        }
    }
    let mut bytes = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, OneLine);
    // Writing to memory; a `Json` holds nothing serde_json cannot write.
    let _ = value.serialize(&mut serializer);
    String::from_utf8(bytes).unwrap_or_default()
}

fn pretty(value: &Json, unit: &str) -> String {
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    // Writing to memory; a `Json` holds nothing serde_json cannot write.
    let _ = value.serialize(&mut serializer);
    String::from_utf8(bytes).unwrap_or_default()
}

// -- Checking the file with serde_json --------------------------------------------------

/// Claude Code's settings as far as MindRune edits them: an object whose `hooks` is an
/// object whose MindRune events are arrays. Reading it tells where it is not (serde_json
/// names the line and column).
struct SettingsCheck;
struct HooksCheck;
struct GroupsCheck;

impl<'de> Deserialize<'de> for SettingsCheck {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SettingsCheck, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SettingsCheck;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object (Claude Code's settings)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SettingsCheck, A::Error> {
                while let Some(key) = map.next_key::<String>()? {
                    if key == "hooks" {
                        map.next_value::<HooksCheck>()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(SettingsCheck)
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for HooksCheck {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HooksCheck, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HooksCheck;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"hooks\" to be an object of hook events")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HooksCheck, A::Error> {
                while let Some(key) = map.next_key::<String>()? {
                    if HOOK_EVENTS
                        .iter()
                        .chain(WORKSPACE_HOOK_EVENTS.iter())
                        .any(|(event, _)| *event == key)
                    {
                        map.next_value::<GroupsCheck>()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(HooksCheck)
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for GroupsCheck {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<GroupsCheck, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = GroupsCheck;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a hook event to be an array of matcher groups")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<GroupsCheck, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(GroupsCheck)
            }
        }
        deserializer.deserialize_seq(V)
    }
}

// -- A JSON value with its keys in order -----------------------------------------------

/// A JSON value whose objects keep their keys in the order written, for reading an
/// event's groups and writing MindRune's.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(v)
                    .map(Json::Number)
                    .ok_or_else(|| E::custom("a number that is not finite"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut members = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    members.push((key, map.next_value()?));
                }
                Ok(Json::Object(members))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(v) => serializer.serialize_bool(*v),
            Json::Number(v) => v.serialize(serializer),
            Json::String(v) => serializer.serialize_str(v),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(members) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                for (key, value) in members {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command the tests install (what setup writes for a library outside the checkout).
    const HOOK_COMMAND: &str = "mindrune hook claude-code --home /lib";

    fn merged(text: &str) -> Merged {
        merge(text, &HOOK_EVENTS, HOOK_COMMAND).unwrap()
    }

    #[test]
    fn a_hook_command_is_mindrunes_by_its_program_wherever_that_binary_lives() {
        let start = hook_command_start("/opt/my tools/mindrune");
        assert_eq!(start, "'/opt/my tools/mindrune' hook claude-code");
        let command = format!("{start} --home /lib");
        assert_eq!(
            hook_program(&command).as_deref(),
            Some("/opt/my tools/mindrune")
        );
        for (command, program) in [
            ("mindrune hook claude-code --home /lib", Some("mindrune")),
            (
                "/usr/bin/mindrune hook claude-code",
                Some("/usr/bin/mindrune"),
            ),
            (
                r#""/a b/mindrune" hook claude-code --agent x"#,
                Some("/a b/mindrune"),
            ),
            (r"/a\ b/mindrune hook claude-code", Some("/a b/mindrune")),
            ("  /x/mindrune   hook claude-code", Some("/x/mindrune")),
            ("/x/mindrune hook claude-codex", None),
            ("/x/mindrune mcp", None),
            ("/x/mindrune-old hook claude-code", None),
            ("./scripts/lint-staged.sh", None),
            ("$HOME/bin/mindrune hook claude-code", None),
            ("'/unclosed/mindrune hook claude-code", None),
            ("", None),
        ] {
            assert_eq!(hook_program(command).as_deref(), program, "{command}");
        }
    }

    #[test]
    fn a_hook_command_s_options_read_back_as_the_shell_reads_them_in_the_project() {
        let project = std::path::Path::new("/home/ada/my sdk");
        let command =
            r#"/usr/bin/mindrune hook claude-code --home "$CLAUDE_PROJECT_DIR"/.mindrune"#;
        assert_eq!(
            hook_option(command, "--home", project).as_deref(),
            Some("/home/ada/my sdk/.mindrune")
        );
        let command =
            "/usr/bin/mindrune hook claude-code --home '/srv/my lib' --database sqlite:/srv/x.db";
        assert_eq!(
            hook_option(command, "--home", project).as_deref(),
            Some("/srv/my lib")
        );
        assert_eq!(
            hook_option(command, "--database", project).as_deref(),
            Some("sqlite:/srv/x.db")
        );
        assert_eq!(hook_option(command, "--agent", project), None);
    }

    #[test]
    fn a_hook_command_of_a_moved_binary_is_rewritten_in_place() {
        let old = merged("{}").text.unwrap();
        let moved = merge(
            &old,
            &HOOK_EVENTS,
            "/new/place/mindrune hook claude-code --home /lib",
        )
        .unwrap();
        assert!(moved.added.is_empty());
        assert_eq!(moved.updated.len(), HOOK_EVENTS.len());
        let text = moved.text.unwrap();
        assert_eq!(
            text.matches("/new/place/mindrune hook claude-code").count(),
            HOOK_EVENTS.len()
        );
        assert!(!text.contains("\"mindrune hook"), "{text}");
        assert_eq!(moved.moved_from, ["mindrune"]);
    }

    #[test]
    fn hooks_go_in_at_the_end_of_each_array_and_every_other_byte_stays() {
        let text = "{\n    \"zeta\": 1.50,\n    \"hooks\": {\n        \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}],\n        \"Notification\": {\"odd\": true}\n    },\n    \"alpha\": [null, \"x\"]\n}\n";
        let once = merged(text);
        assert_eq!(
            once.added,
            [
                "PreToolUse",
                "PostToolUse",
                "PostToolUseFailure",
                "Stop",
                "StopFailure",
                "SessionStart"
            ]
        );
        let new = once.text.unwrap();
        // What was there is still there, byte for byte, around the insertions.
        assert!(new.starts_with("{\n    \"zeta\": 1.50,\n    \"hooks\": {\n        \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}, {\"hooks\": [{\"type\": \"command\", \"command\": \"mindrune hook claude-code --home /lib\"}]}],\n        \"Notification\": {\"odd\": true},\n        \"PreToolUse\": [\n            {\n                \"matcher\": \"Bash|Write|Edit|MultiEdit|NotebookEdit|Read|Grep|Glob|mcp__.*__execute_code\",\n"), "{new}");
        assert!(
            new.ends_with("\n    },\n    \"alpha\": [null, \"x\"]\n}\n"),
            "{new}"
        );
        let value: serde_json::Value = serde_json::from_str(&new).unwrap();
        assert_eq!(value["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(
            value["hooks"]["PostToolUseFailure"][0]["hooks"][0]["command"],
            HOOK_COMMAND
        );
        let twice = merged(&new);
        assert!(twice.added.is_empty());
        assert!(twice.text.is_none());
    }

    #[test]
    fn empty_objects_and_arrays_are_filled_in_the_file_s_style() {
        let one_line = merged("{\"model\": \"opus\"}").text.unwrap();
        assert!(
            one_line.starts_with("{\"model\": \"opus\", \"hooks\": {\"PreToolUse\": [{"),
            "{one_line}"
        );
        assert!(!one_line.contains('\n'), "{one_line}");
        let tabs = merged("{\n\t\"hooks\": {\n\t\t\"PreToolUse\": []\n\t}\n}")
            .text
            .unwrap();
        assert!(
            tabs.starts_with(
                "{\n\t\"hooks\": {\n\t\t\"PreToolUse\": [\n\t\t\t{\n\t\t\t\t\"matcher\""
            ),
            "{tabs}"
        );
        let spaces = merged("{\n  \"hooks\": {}\n}\n").text.unwrap();
        assert!(
            spaces.starts_with("{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n"),
            "{spaces}"
        );
        assert!(spaces.ends_with("\n    ]\n  }\n}\n"), "{spaces}");
        for text in [&one_line, &tabs, &spaces] {
            serde_json::from_str::<serde_json::Value>(text).unwrap();
            assert!(merged(text).text.is_none(), "{text}");
        }
    }

    #[test]
    fn a_hooks_value_that_is_no_object_is_an_error_with_its_position() {
        let err = merge("{\n  \"hooks\": [1]\n}", &HOOK_EVENTS, HOOK_COMMAND)
            .err()
            .unwrap();
        assert_eq!((err.line(), err.column()), (2, 11));
        assert!(err.is_data());
        let err = merge("{\"hooks\": {\"Stop\": {}}}", &HOOK_EVENTS, HOOK_COMMAND)
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("an array of matcher groups"),
            "{err}"
        );
        assert!(merge("[]", &HOOK_EVENTS, HOOK_COMMAND).is_err());
        let err = merge("{\n  \"a\": 1,\n}", &HOOK_EVENTS, HOOK_COMMAND)
            .err()
            .unwrap();
        assert_eq!((err.line(), err.column()), (3, 1));
    }
}
