//! Secrets never leave through any output path: a sample of the secret corpus
//! (`crates/core/tests/data/secret_corpus.txt`), the bot's password from its bot.env and the
//! owner's real key are planted in a shared script's code and goal, a run's output, inline
//! code and lab-log lessons; none of them may appear in the library's files, its JSON answers,
//! a sibling's `family-skills/` or a wrap-up.

use std::collections::BTreeSet;

use serde_json::json;

use crate::util::{TestLibrary, contains, stderr, visible_files};

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

/// One planted corpus line: its kind, the line, and the values that must not survive.
struct Planted {
    kind: String,
    line: String,
    values: Vec<String>,
}

/// Up to `per_kind` single-line secret cases of every kind in the corpus, with the corpus's
/// owner key replaced by `owner_key`.
fn corpus_sample(owner_key: &str, per_kind: usize) -> Vec<Planted> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../core/tests/data/secret_corpus.txt");
    let corpus = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<Planted> = Vec::new();
    for raw in corpus.lines() {
        let cols: Vec<&str> = raw.split('\t').collect();
        if cols.len() != 3 || cols[0] != "secret" || cols[2].contains("\\n") {
            continue;
        }
        let kind = cols[1];
        if out.iter().filter(|p| p.kind == kind).count() >= per_kind {
            continue;
        }
        let marked = cols[2]
            .replace("\\\\", "\\")
            .replace(CORPUS_OWNER_KEY, owner_key);
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
            kind: kind.to_owned(),
            line,
            values,
        });
    }
    out
}

fn owner_key_of(added: &str) -> String {
    let at = added.find("mrk_").expect("`owner add` prints the key");
    added[at..]
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .unwrap()
        .to_owned()
}

/// Every text value in the library's tables, the owners' keys left out (the owner's key is
/// kept in clear on purpose: it is needed to scrub it).
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
        let names: Vec<String> = statement.column_names().map(str::to_owned).collect();
        let mut rows = statement.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for (i, name) in names.iter().enumerate() {
                if table == "owners" && name.contains("key") {
                    continue;
                }
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

    let sample = corpus_sample(&owner_key, 1);
    assert!(sample.len() >= 30, "only {} kinds sampled", sample.len());
    let shapes: Vec<&Planted> = sample
        .iter()
        .filter(|p| SHAPE_KINDS.contains(&p.kind.as_str()))
        .collect();
    assert!(shapes.len() >= 12, "only {} shape kinds", shapes.len());
    let mut values: BTreeSet<String> = sample.iter().flat_map(|p| p.values.clone()).collect();
    values.insert(owner_key.clone());
    values.insert(BOT_PASSWORD.to_owned());
    let lines: String = sample.iter().map(|p| format!("{}\n", p.line)).collect();

    // A headed script: secrets in its goal and its code.
    let goal = shapes
        .iter()
        .map(|p| p.values.join(" "))
        .collect::<Vec<_>>()
        .join(" ");
    let source = format!(
        "/** @skill leaky\n * Goal: chop oaks using {goal}\n */\nimport {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot }}) => {{\n{lines}  await bot.chop(1);\n}});\n"
    );
    lib.write_script("woody", "leaky", &source);

    // Five good runs whose output prints every planted line: the script is shared.
    let runs: Vec<_> = (0..5)
        .map(|i| {
            json!({"agent": "woody", "kind": "shell", "command": "bun bots/woody/leaky.ts",
                   "cwd": "/work", "ok": true, "duration_ms": 60000,
                   "output": format!("run {i}\n{lines}XP: Woodcutting +25\n")})
        })
        .collect();
    let output = lib.record(&runs);
    assert!(output.status.success(), "{}", stderr(&output));

    // Inline code run three times with other numbers, so the wrap-up quotes it.
    let snippets: Vec<_> = [3200, 3210, 3222]
        .iter()
        .enumerate()
        .map(|(i, x)| {
            json!({"agent": "woody", "at": now_rfc3339(-300 + i as i64 * 60), "kind": "execute_code",
                   "code": format!("await bot.walkTo({x}, 3220);\n{lines}await bot.chopTree(sdk.findNearbyLoc(/^Oak$/));"),
                   "ok": true})
        })
        .collect();
    let output = lib.record(&snippets);
    assert!(output.status.success(), "{}", stderr(&output));

    // Lessons: `Share:` lines carrying secrets.
    let lessons: String = shapes
        .iter()
        .map(|p| format!("Share: [skill:woody/leaky] {}\n", p.line))
        .collect();
    std::fs::write(bots.join("lab_log.md"), format!("# lab log\n{lessons}")).unwrap();
    lib.ok(&["turn-end", "woody"]);
    lib.ok(&["turn-end", "pip"]);

    let skills = lib.ok(&["skills", "--json", "--owner", "zed"]);
    let show = lib.ok(&["skill", "show", "woody/leaky", "--json"]);
    let wrapup = lib.ok(&["wrapup", "woody", "--json"]);
    let mirror = visible_files(&lib.workspace("pip").join("family-skills"));
    // The paths were really taken: shared, mirrored with the lessons, the snippet quoted.
    assert!(mirror.contains_key("woody/leaky.ts"), "{:?}", mirror.keys());
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
        wrapup.contains("walkTo(3222, 3220);\\nconst key = \\\"[redacted]\\\";"),
        "the wrap-up quotes the snippet, scrubbed:\n{wrapup}"
    );
    assert!(show.contains("\"shared\": true"), "{show}");

    let stored = lib.stored_bytes();
    let texts = stored_texts(&lib);
    let mut leaks = Vec::new();
    for value in &values {
        for piece in value.lines().filter(|p| !p.is_empty()) {
            // The owner's key is stored in clear in its own row, and only there.
            if piece != owner_key && contains(&stored, piece) {
                leaks.push(format!("library files: {piece}"));
            }
            if texts.iter().any(|t| t.contains(piece)) {
                leaks.push(format!("library rows: {piece}"));
            }
            for (name, text) in [
                ("skills --json", &skills),
                ("skill show --json", &show),
                ("wrapup --json", &wrapup),
            ] {
                if text.contains(piece) {
                    leaks.push(format!("{name}: {piece}"));
                }
            }
            for (file, bytes) in &mirror {
                if contains(bytes, piece) {
                    leaks.push(format!("family-skills/{file}: {piece}"));
                }
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}
