//! Secrets never leave through any output path. Every secret case of the corpus
//! (`crates/core/tests/data/secret_corpus.txt`), the bot's password from its bot.env and the
//! owner's real key are planted in a shared script's code and goal, a run's output, inline
//! code and lab-log lessons, each path taking all its cases in one file or one run; none of
//! them may appear in the library's files, its JSON answers, a sibling's `family-skills/` or a
//! wrap-up. And a playbook skill carrying any one of them is refused at `skill_create`'s door,
//! with nothing of it in the workspace's files, its ledger's bytes or anything printed.

use std::collections::BTreeSet;

use serde_json::json;

use crate::util::{TestLibrary, stderr, visible_files};

/// The corpus's known secrets, replaced by the real ones in this test (see the corpus header).
const CORPUS_OWNER_KEY: &str = "mrk_e330ccb17b3f6f8b137ddda52a76d045cc89778fb6167222";
const BOT_PASSWORD: &str = "trout-Fisher-lumbridge";

/// Kinds whose values are caught by their shape wherever they stand (not only as an
/// assignment at the start of a line), so they can be planted inside prose too.
const SHAPE_KINDS: &[&str] = &[
    "owner-key",
    "owner-key-shape",
    "bot-password",
    "mindrune-token",
    "aws-access-key",
    "github-token",
    "github-pat",
    "gitlab-token",
    "slack-token",
    "openai-key",
    "anthropic-key",
    "google-api-key",
    "npm-token",
    "sendgrid-key",
    "jwt",
    "telegram-token",
    "high-entropy",
];

/// One planted corpus case: its kind, its text (a private key spans several lines), and the
/// values that must not survive.
struct Planted {
    kind: String,
    line: String,
    values: Vec<String>,
    /// From the world's shapes (`secret_corpus_world.txt`), of which the scrubber may miss up
    /// to 1 %, rather than the first corpus, of which it misses none.
    world: bool,
}

impl Planted {
    fn single_line(&self) -> bool {
        !self.line.contains('\n')
    }

    /// The pieces a leak is looked for by: every non-empty line of every value.
    fn pieces(&self) -> impl Iterator<Item = &str> {
        self.values
            .iter()
            .flat_map(|value| value.lines())
            .filter(|piece| !piece.is_empty())
    }
}

/// In a corpus line, `\n` is a line break and `\\` a backslash; any other backslash stays.
fn decode(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('n')) => {
                chars.next();
                out.push('\n');
            }
            ('\\', Some('\\')) => {
                chars.next();
                out.push('\\');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every secret case of the corpus (several lines for a private key), with the corpus's owner
/// key replaced by `owner_key`.
fn corpus_secrets(owner_key: &str) -> Vec<Planted> {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/data");
    let corpus = std::fs::read_to_string(data.join("secret_corpus.txt")).unwrap();
    // The world's shapes carry their source in a column before the line.
    let world = std::fs::read_to_string(data.join("secret_corpus_world.txt")).unwrap();
    let rows = corpus
        .lines()
        .map(|raw| raw.split('\t').collect::<Vec<_>>())
        .filter(|cols| cols.len() == 3)
        .map(|cols| (false, cols))
        .chain(world_rows(&world));
    planted_from(rows, owner_key)
}

/// The secret cases of the rules corpus (every gitleaks rule and trufflehog detector).
fn rules_secrets() -> Vec<Planted> {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/data");
    let rules = std::fs::read_to_string(data.join("secret_corpus_rules.txt")).unwrap();
    planted_from(world_rows(&rules), CORPUS_OWNER_KEY)
}

/// The rows of a four-column corpus (kind, source, line), as (from the world, columns).
fn world_rows(text: &str) -> impl Iterator<Item = (bool, Vec<&str>)> {
    text.lines().filter_map(|raw| {
        let cols: Vec<&str> = raw.split('\t').collect();
        (cols.len() == 4).then(|| (true, vec![cols[0], cols[1], cols[3]]))
    })
}

fn planted_from<'a>(
    rows: impl Iterator<Item = (bool, Vec<&'a str>)>,
    owner_key: &str,
) -> Vec<Planted> {
    let mut out: Vec<Planted> = Vec::new();
    for (world, cols) in rows {
        if cols[0] != "secret" {
            continue;
        }
        let marked = decode(cols[2]).replace(CORPUS_OWNER_KEY, owner_key);
        let mut line = String::new();
        let mut values = Vec::new();
        let mut rest = marked.as_str();
        while let Some(open) = rest.find('⟦') {
            line.push_str(&rest[..open]);
            let after = &rest[open + '⟦'.len_utf8()..];
            let close = after.find('⟧').unwrap();
            line.push_str(&after[..close]);
            values.push(after[..close].to_owned());
            rest = &after[close + '⟧'.len_utf8()..];
        }
        line.push_str(rest);
        out.push(Planted {
            kind: cols[1].to_owned(),
            line,
            values,
            world,
        });
    }
    out
}

/// Which of `pieces` occur in `haystack` (one pass for all of them).
fn found(haystack: &[u8], pieces: &[&str]) -> BTreeSet<usize> {
    let finder = aho_corasick::AhoCorasick::new(pieces).unwrap();
    finder
        .find_overlapping_iter(haystack)
        .map(|found| found.pattern().as_usize())
        .collect()
}

fn owner_key_of(added: &str) -> String {
    let at = added.find("mrk_").expect("`owner add` prints the key");
    added[at..]
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .unwrap()
        .to_owned()
}

/// Every text value in the library's tables (the owners' rows too: only the key's digest is
/// kept there).
fn stored_texts(lib: &TestLibrary) -> Vec<String> {
    let db = rusqlite::Connection::open(lib.home().join("library.db")).unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut texts = Vec::new();
    for table in tables {
        let mut statement = db.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = statement.column_count();
        let mut rows = statement.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..columns {
                match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        texts.push(String::from_utf8_lossy(t).into_owned());
                    }
                    _ => {}
                }
            }
        }
    }
    texts
}

fn now_rfc3339(offset_secs: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    time::OffsetDateTime::from_unix_timestamp(now + offset_secs)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

#[expect(
    clippy::too_many_lines,
    reason = "one story: planted secrets followed through every output path, each checked in turn"
)]
#[test]
fn planted_secrets_leave_through_no_output_path() {
    let lib = TestLibrary::new();
    let owner_key = owner_key_of(&lib.ok(&["owner", "add", "zed"]));
    let bots = lib.agent("woody", "zed");
    lib.agent("pip", "zed");
    std::fs::write(
        bots.join("bot.env"),
        format!("BOT_USERNAME=woody\nBOT_PASSWORD={BOT_PASSWORD}\nSERVER=localhost\n"),
    )
    .unwrap();

    // Every secret case: the multi-line ones (private keys) where a path takes several lines
    // (code, output), the ones caught by their shape wherever they stand also in prose (a
    // script's goal, lessons).
    let planted = corpus_secrets(&owner_key);
    assert!(planted.len() >= 150, "only {} secret cases", planted.len());
    let shapes: Vec<&Planted> = planted
        .iter()
        .filter(|p| SHAPE_KINDS.contains(&p.kind.as_str()) && p.single_line())
        .collect();
    assert!(shapes.len() >= 40, "only {} shape cases", shapes.len());
    let mut values: BTreeSet<String> = planted.iter().flat_map(|p| p.values.clone()).collect();
    values.insert(owner_key.clone());
    values.insert(BOT_PASSWORD.to_owned());
    let lines: String = planted.iter().map(|p| format!("{}\n", p.line)).collect();

    // Headed scripts: every case in the code of `leaky`, and the shape values in the goals of
    // `leaky` and its siblings (a header value is cut at 1000 characters, so the values are
    // spread over as many goals as they need).
    let mut goals: Vec<String> = vec![String::new()];
    for value in shapes.iter().flat_map(|p| &p.values) {
        if goals.last().unwrap().len() + value.len() > 900 {
            goals.push(String::new());
        }
        let goal = goals.last_mut().unwrap();
        goal.push(' ');
        goal.push_str(value);
    }
    let names: Vec<String> = (0..goals.len())
        .map(|k| match k {
            0 => "leaky".to_owned(),
            k => format!("leaky{k}"),
        })
        .collect();
    let mut runs = Vec::new();
    for (k, (name, goal)) in names.iter().zip(&goals).enumerate() {
        let code = if k == 0 { lines.as_str() } else { "" };
        let source = format!(
            "/** @skill {name}\n * Goal: chop oaks using{goal}\n */\nimport {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot }}) => {{\n{code}  await bot.chop({k});\n}});\n"
        );
        lib.write_script("woody", name, &source);
        // Five good runs each, so every script is shared; those of `leaky` print every case.
        for i in 0..5 {
            let printed = if k == 0 { lines.as_str() } else { "" };
            runs.push(json!({"agent": "woody", "kind": "shell", "command": format!("bun bots/woody/{name}.ts"),
                   "cwd": "/work", "ok": true, "duration_ms": 60000,
                   "output": format!("run {i}\n{printed}XP: Woodcutting +25\n")}));
        }
    }
    let output = lib.record(&runs);
    assert!(output.status.success(), "{}", stderr(&output));

    // Inline code, each snippet run three times, so the wrap-up quotes it: the cases in
    // snippets short enough to be quoted whole (a quote keeps 20 lines).
    let mut chunks: Vec<String> = vec![String::new()];
    for case in &planted {
        let last = chunks.last().unwrap();
        if last.lines().count() + case.line.lines().count() > 18 {
            chunks.push(String::new());
        }
        let chunk = chunks.last_mut().unwrap();
        chunk.push_str(&case.line);
        chunk.push('\n');
    }
    let mut snippets = Vec::new();
    for (k, chunk) in chunks.iter().enumerate() {
        for i in 0..3 {
            snippets.push(json!({"agent": "woody", "at": now_rfc3339(-300 + i * 60), "kind": "execute_code",
                   "code": format!("await bot.walkTo({}, 3220);\n{chunk}await bot.chopTree(sdk.findNearbyLoc(/^Oak$/));", 3200 + k),
                   "ok": true}));
        }
    }
    let output = lib.record(&snippets);
    assert!(output.status.success(), "{}", stderr(&output));

    // Lessons: `Share:` lines carrying secrets, one a line.
    let lessons: String = planted
        .iter()
        .filter(|p| p.single_line())
        .map(|p| format!("Share: [skill:woody/leaky] {}\n", p.line))
        .collect();
    std::fs::write(bots.join("lab_log.md"), format!("# lab log\n{lessons}")).unwrap();
    lib.ok(&["turn-end", "woody"]);
    lib.ok(&["turn-end", "pip"]);

    eprintln!(
        "secrets: {} corpus cases planted in code, output and {} inline snippets, {} shape cases in {} goals, {} in lessons",
        planted.len(),
        chunks.len(),
        shapes.len(),
        goals.len(),
        lessons.lines().count()
    );
    let skills = lib.ok(&["skills", "--json", "--owner", "zed"]);
    let show = lib.ok(&["skill", "show", "woody/leaky", "--json"]);
    let wrapup = lib.ok(&["wrapup", "woody", "--json"]);
    let mirror = visible_files(&lib.workspace("pip").join("family-skills"));
    // The paths were really taken: shared, mirrored with the lessons, the snippet quoted.
    for name in &names {
        let file = format!("woody/{name}.ts");
        assert!(mirror.contains_key(&file), "{file}: {:?}", mirror.keys());
    }
    let quoted: serde_json::Value = serde_json::from_str(&wrapup).unwrap();
    assert_eq!(
        quoted["suggestions"].as_array().unwrap().len(),
        chunks.len(),
        "every snippet is quoted: {wrapup}"
    );
    assert!(
        String::from_utf8_lossy(&mirror["LESSONS.md"]).contains("[redacted]"),
        "the lessons reached the sibling"
    );
    let mirrored = String::from_utf8_lossy(&mirror["woody/leaky.ts"]).into_owned();
    assert!(
        mirrored.contains(" * Goal: chop oaks using [redacted]"),
        "{mirrored}"
    );
    assert!(skills.contains("leaky"), "{skills}");
    assert!(
        wrapup.contains("walkTo(3200, 3220);\\n    const key = \\\"[redacted]\\\";"),
        "the wrap-up quotes the snippet, scrubbed:\n{wrapup}"
    );
    assert!(show.contains("\"shared\": true"), "{show}");

    let stored = lib.stored_bytes();
    let texts = stored_texts(&lib).join("\n");
    let pieces: Vec<&str> = values
        .iter()
        .flat_map(|value| value.lines())
        .filter(|piece| !piece.is_empty())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut leaks = Vec::new();
    let mut report = |place: &str, haystack: &[u8]| {
        for index in found(haystack, &pieces) {
            leaks.push(format!("{place}: {}", pieces[index]));
        }
    };
    report("library files", &stored);
    report("library rows", texts.as_bytes());
    report("skills --json", skills.as_bytes());
    report("skill show --json", show.as_bytes());
    report("wrapup --json", wrapup.as_bytes());
    for (file, bytes) in &mirror {
        report(&format!("family-skills/{file}"), bytes);
    }
    // A case is kept out when none of its pieces is found in any output path. Every case of
    // the first corpus is; of all cases at least 99 %, as the core corpus test measures.
    let leaked: BTreeSet<&str> = leaks
        .iter()
        .filter_map(|leak| leak.split_once(": ").map(|(_, piece)| piece))
        .collect();
    let leaking: Vec<&Planted> = planted
        .iter()
        .filter(|p| p.pieces().any(|piece| leaked.contains(piece)))
        .collect();
    eprintln!(
        "output paths: {}/{} planted cases kept out of every output path ({:.1} %)",
        planted.len() - leaking.len(),
        planted.len(),
        100.0 * (planted.len() - leaking.len()) as f64 / planted.len() as f64
    );
    assert!(
        leaking.iter().all(|p| p.world) && leaking.len() * 100 <= planted.len(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
    let known: BTreeSet<&str> = planted
        .iter()
        .flat_map(|p| p.pieces())
        .chain([owner_key.as_str(), BOT_PASSWORD])
        .collect();
    assert!(
        leaked.iter().all(|piece| known.contains(piece)),
        "{leaks:?}"
    );
}

#[test]
fn every_rule_of_the_world_s_scanners_stays_out_of_every_output_path() {
    // Every gitleaks rule's and trufflehog detector's shape (secret_corpus_rules.txt), planted
    // in a shared script's code and in what its runs printed, then looked for in the library's
    // files and rows, the JSON answers and the sibling's family-skills/.
    let lib = TestLibrary::new();
    lib.agent("woody", "ada");
    lib.agent("pip", "ada");
    let planted = rules_secrets();
    assert!(planted.len() >= 3000, "only {} rule cases", planted.len());
    let lines: String = planted.iter().map(|p| format!("{}\n", p.line)).collect();
    let source = format!(
        "/** @skill rules\n * Goal: chop oaks\n */\nimport {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot }}) => {{\n{lines}  await bot.chop(1);\n}});\n"
    );
    lib.write_script("woody", "rules", &source);
    let runs: Vec<serde_json::Value> = (0..5)
        .map(|i| {
            json!({"agent": "woody", "kind": "shell", "command": "bun bots/woody/rules.ts",
                   "cwd": "/work", "ok": true, "duration_ms": 60000,
                   "output": format!("run {i}\n{lines}XP: Woodcutting +25\n")})
        })
        .collect();
    let output = lib.record(&runs);
    assert!(output.status.success(), "{}", stderr(&output));
    lib.ok(&["turn-end", "woody"]);
    lib.ok(&["turn-end", "pip"]);
    let skills = lib.ok(&["skills", "--json", "--owner", "ada"]);
    let show = lib.ok(&["skill", "show", "woody/rules", "--json"]);
    let mirror = visible_files(&lib.workspace("pip").join("family-skills"));
    assert!(mirror.contains_key("woody/rules.ts"), "{:?}", mirror.keys());

    let pieces: Vec<&str> = planted
        .iter()
        .flat_map(|p| p.pieces())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let stored = lib.stored_bytes();
    let texts = stored_texts(&lib).join("\n");
    let mut leaked: BTreeSet<&str> = BTreeSet::new();
    let mut places: Vec<(String, Vec<u8>)> = vec![
        ("library files".into(), stored),
        ("library rows".into(), texts.into_bytes()),
        ("skills --json".into(), skills.into_bytes()),
        ("skill show --json".into(), show.into_bytes()),
    ];
    places.extend(
        mirror
            .into_iter()
            .map(|(file, bytes)| (format!("family-skills/{file}"), bytes)),
    );
    let mut leaks = Vec::new();
    for (place, haystack) in &places {
        for index in found(haystack, &pieces) {
            leaked.insert(pieces[index]);
            leaks.push(format!("{place}: {}", pieces[index]));
        }
    }
    let leaking = planted
        .iter()
        .filter(|p| p.pieces().any(|piece| leaked.contains(piece)))
        .count();
    eprintln!(
        "output paths (gitleaks and trufflehog rules): {}/{} planted cases kept out of every output path",
        planted.len() - leaking,
        planted.len()
    );
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}

/// A playbook skill is an output path too: every secret case of the corpus, in a proposed
/// SKILL.md's body and (one line at a time) in a step's `do:`, goes through `skill_create`'s
/// door. Each is refused for the credential it carries, and afterwards nothing secret is in
/// the workspace's files, the ledger's raw bytes (`.mindrune/playbooks.sqlite3` and its WAL),
/// the refusals or what `mindrune inbox` and `mindrune card show` print. A workspace does not
/// know the bot's password (only the library that keeps its bot.env does), so the four cases
/// that hold it are left out, as they are for package writes in the core corpus test; an
/// owner's key is caught by its shape.
#[test]
fn a_playbook_skill_carrying_any_planted_secret_is_refused_at_the_door() {
    use mindrune_core::parse_skill_file;
    use mindrune_engine::{Attendance, Created, Proposal, Suggester};
    use mindrune_engine::{Playbooks, Rule};

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap();
    let workspace = home.join("assistant");
    let mindrune = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_mindrune"))
            .args(args)
            .env("MINDRUNE_WORKSPACE", &workspace)
            .env("HOME", &home)
            .env_remove("MINDRUNE_DATABASE_URL")
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    mindrune(&["playbook", "init"]);

    // The first corpus, every case of which the door must refuse; the world's shapes are
    // measured at the scrubber's 99 % bar by the core corpus test and the output-path test.
    let planted: Vec<Planted> = corpus_secrets(CORPUS_OWNER_KEY)
        .into_iter()
        .filter(|p| !p.world && !p.line.contains(BOT_PASSWORD))
        .collect();
    assert!(planted.len() >= 150, "only {} secret cases", planted.len());
    // Each proposal's last step uses a tool of its own, so no proposal is ever refused as the
    // same procedure as another one that got through.
    let head = |n: usize, step: &str| {
        format!(
            "---\ntrigger: the human asks for the weekly report\nuse_when: a week of notes exists\nsteps:\n  - do: Read this week's notes\n    tool: workspace_read\n  - do: {step}\n    tool: upload-{n}\n---\n"
        )
    };
    let mut proposals: Vec<(String, String)> = Vec::new();
    for (i, case) in planted.iter().enumerate() {
        let n = proposals.len();
        let body = format!(
            "{}Read the notes, then upload the report:\n\n{}\n\nThen say where it is.\n",
            head(n, "Upload the report"),
            case.line
        );
        proposals.push((format!("leak-body-{i}"), body));
        if case.single_line() {
            // A JSON string is a YAML double-quoted scalar: the step is the line as it is.
            let step = serde_json::to_string(&case.line).unwrap();
            let n = proposals.len();
            proposals.push((
                format!("leak-step-{i}"),
                format!(
                    "{}Read the notes, then upload the report.\n",
                    head(n, &step)
                ),
            ));
        }
    }
    let tools: Vec<String> = (0..proposals.len())
        .map(|n| format!("upload-{n}"))
        .collect();
    let config = workspace.join("playbooks.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("tools = []", &format!("tools = {tools:?}"));
    std::fs::write(&config, text).unwrap();

    let before = visible_files(&workspace);
    let mut refusals = String::new();
    let mut failures = Vec::new();
    {
        let playbooks = Playbooks::open(&workspace).unwrap();
        for (name, text) in &proposals {
            let (skill, _) = parse_skill_file(text)
                .unwrap_or_else(|err| panic!("{name} does not parse: {err}\n{text}"));
            let proposal = Proposal {
                name: name.clone(),
                skill,
                suggested_by: Suggester::Assistant,
                accepted_as_done: false,
            };
            match playbooks.create(&proposal, Attendance::Attended) {
                Err(err)
                    if err.rule() == Some(Rule::Blocked)
                        && err.to_string().contains("must never carry a credential") =>
                {
                    refusals.push_str(&format!("{err}\n"));
                }
                Err(err) => failures.push(format!("{name}: refused for another reason: {err}")),
                Ok(Created::Filed { card, .. }) => {
                    failures.push(format!("{name}: filed as card #{card}"))
                }
                Ok(other) => failures.push(format!("{name}: {other:?}")),
            }
        }
    }
    // What the human's side prints: nothing waits, and no card holds any of it.
    let inbox = mindrune(&["inbox", "--all", "--json"]);
    let mut printed = inbox.clone();
    let cards: serde_json::Value = serde_json::from_str(&inbox).unwrap();
    for card in cards.as_array().unwrap() {
        printed.push_str(&mindrune(&["card", "show", &card["id"].to_string()]));
    }

    let pieces: Vec<&str> = planted
        .iter()
        .flat_map(Planted::pieces)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut leaks = Vec::new();
    let mut report = |place: &str, haystack: &[u8]| {
        for index in found(haystack, &pieces) {
            leaks.push(format!("{place}: {}", pieces[index]));
        }
    };
    report("refusals", refusals.as_bytes());
    report("inbox and cards", printed.as_bytes());
    let mut files = Vec::new();
    let mut pending = vec![workspace.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    for path in &files {
        let relative = path.strip_prefix(&workspace).unwrap().display().to_string();
        report(&relative, &std::fs::read(path).unwrap());
    }
    eprintln!(
        "secrets: {} playbook skills carrying {} corpus cases proposed, {} refused for the credential",
        proposals.len(),
        planted.len(),
        proposals.len() - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} proposals not refused for their credential:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
    // The door wrote no draft: the workspace's own files are as `playbook init` left them.
    assert_eq!(visible_files(&workspace), before);
    assert!(
        files
            .iter()
            .any(|path| path.ends_with(".mindrune/playbooks.sqlite3")),
        "{files:?}"
    );
}

/// The owner's key as the library keeps it: the `owners` row's stored value.
fn stored_key_digest(lib: &TestLibrary, owner: &str) -> String {
    let db = rusqlite::Connection::open(lib.home().join("library.db")).unwrap();
    db.query_row(
        "SELECT key_digest FROM owners WHERE name = ?1",
        [owner],
        |r| r.get(0),
    )
    .unwrap()
}

/// Whether any file of the library (the database, its `-wal` and `-shm`) holds the key, or
/// the start of it a `grep -a` for `mrk_` would show.
fn library_holds(lib: &TestLibrary, key: &str) -> bool {
    let stored = lib.stored_bytes();
    !found(&stored, &[key, &key[..16], &key[4..]]).is_empty()
}

#[test]
fn owner_add_prints_the_key_once_and_the_library_keeps_only_its_digest() {
    let lib = TestLibrary::new();
    let added = lib.ok(&["owner", "add", "zed"]);
    let key = owner_key_of(&added);
    assert!(
        key.len() == 52 && key[4..].bytes().all(|b| b.is_ascii_hexdigit()),
        "the key has the shape the scrubber knows: {key}"
    );
    assert!(added.contains("cannot be shown again"), "{added}");
    assert!(added.contains("`mindrune owner key zed`"), "{added}");
    assert!(!library_holds(&lib, &key), "the library holds the key");
    assert_eq!(
        stored_key_digest(&lib, "zed"),
        mindrune_core::secret_digest(&key)
    );
    // Nothing shows it again: not a listing, not a second look at the library.
    let listed = lib.ok(&["owner", "list", "--json"]);
    assert!(!listed.contains(&key[4..]), "{listed}");
}

#[test]
fn owner_key_issues_a_new_key_and_the_old_one_stops_working() {
    let lib = TestLibrary::new();
    let old = owner_key_of(&lib.ok(&["owner", "add", "zed"]));
    let issued = lib.ok(&["owner", "key", "zed"]);
    assert!(issued.contains("the old key no longer works"), "{issued}");
    assert!(issued.contains("cannot be shown again"), "{issued}");
    let new = owner_key_of(&issued);
    assert_ne!(new, old);
    assert_eq!(new.len(), 52, "{new}");
    // Only the new key's digest is kept: the old key no longer matches, neither key is stored.
    let stored = stored_key_digest(&lib, "zed");
    assert_eq!(stored, mindrune_core::secret_digest(&new));
    assert_ne!(stored, mindrune_core::secret_digest(&old));
    assert!(!library_holds(&lib, &new) && !library_holds(&lib, &old));

    let unknown = lib.run(&["owner", "key", "nobody"]);
    assert!(!unknown.status.success());
    let err = stderr(&unknown);
    assert!(err.contains("nobody"), "{err}");
    assert_eq!(stored_key_digest(&lib, "zed"), stored);
}
