//! The family mirror (`family-skills/`) for any family: owner isolation, secrets, caps and
//! which files it holds.
//!
//! Every case builds two owners' families directly through the `Store` API (as the engine
//! would, but with secrets planted in what the store is given: the mirror must scrub them
//! again), writes every agent's mirror with `refresh_mirror`, and reads the files back:
//!
//! * `INDEX.md` and `LESSONS.md` stay within their caps;
//! * nothing that belongs to the other owner (its agents' names, the marker words planted in
//!   its code, headers and lessons, its key) appears in any file of this owner's mirrors;
//! * no planted secret (the owner's key, key shapes the scrubber knows, a private key block,
//!   a `password=` assignment) appears in any file;
//! * an agent's own lessons are not in its `LESSONS.md`;
//! * an agent's own skills are never files in its own mirror, and `<sibling>/<name>.ts` is
//!   there exactly for the skills that are shared (headed, file present, a version cleared the
//!   bar), at the version siblings get;
//! * the mirror holds only `INDEX.md`, `LESSONS.md`, those skill files and the writer's own
//!   `.manifest`, and a second refresh rewrites nothing.

use mindrune_core::secret_digest;
use mindrune_store::{Directory as _, FamilySharing as _};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use mindrune_core::Scrubber;
use mindrune_core::parse_header;
use mindrune_core::{INDEX_CAP, LESSONS_CAP};
use mindrune_core::{SharingBar, VersionStanding, version_for_siblings};
use mindrune_core::{code_without_header, sha256};
use mindrune_core::{exact_tags, normalize_tag};
use mindrune_engine::now_millis;
use mindrune_engine::{MIRROR_DIR, MirrorOutcome, refresh_mirror};
use mindrune_store::Recording as _;
use mindrune_store::{
    Agent, HeaderState, NewLesson, NewUse, Outcome, OwnerId, ScriptSnapshot, SkillHeader, SkillId,
    SqliteStore, VersionId,
};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;

// -------------------------------------------------------------------------------------------
// What a case is made of
// -------------------------------------------------------------------------------------------

/// Skill names every agent picks from (so both owners have skills of the same names).
const NAMES: &[&str] = &["chop-oaks", "mine-iron", "fish", "bank.v2", "walk_to", "x"];

/// Agent names per owner. Every string that belongs to one owner only contains a `q` followed
/// by a digit or `mark`, which nothing else a case generates can spell.
const AGENTS: [[&str; 4]; 2] = [["zq1", "zq2", "zq3", "zq4"], ["yq1", "yq2", "yq3", "yq4"]];
/// Each owner's marker word: planted in its code, headers and lessons.
const MARKERS: [&str; 2] = ["zqmark", "yqmark"];

/// Words, tags, Markdown and header syntax, line breaks: what texts are made of.
const WORDS: &[&str] = &[
    "chop",
    "oaks west of Draynor",
    "bank first",
    "an axe",
    "Woodcutting 15",
    "Father Aereck is in the church",
    "fails when the inventory is full",
    "quest:restless-ghost",
    "[quest:restless-ghost]",
    "Quest:Cooks-Assistant",
    "[place:lumbridge, npc:father-aereck]",
    "item:bronze-pickaxe",
    "skill:woodcutting",
    "shop:general-store",
    "[todo]",
    "[",
    "]",
    "*/",
    "/**",
    "@skill",
    "@private",
    "Share:",
    "## Lessons",
    "# Family skills",
    "- ",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "\u{2028}",
    "é",
    "€",
    "😀",
    "`",
    "#",
    ",",
    ":",
    ".",
    "—",
    "|",
    "password",
    "token",
    "await bot.walkTo(3222, 3218);",
    "import { runScript } from '../../sdk/runner';",
    "console.log(`chop ${i}`);",
    "// a comment",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
];

/// Words repeated into long texts, to reach the caps.
const LONG_WORDS: &[&str] = &["chop oaks ", "é€😀", "[quest:restless-ghost] ", "x"];

/// Tags as a header's `Tags:` gives them (one word each).
const TAGS: &[&str] = &[
    "quest:restless-ghost",
    "Quest:Restless-Ghost",
    "place:lumbridge",
    "item:oak-logs",
    "skill:woodcutting",
    "npc:father-aereck",
    "item:bronze-axe",
    "place:draynor",
    "npc:hans",
    "quest:cooks-assistant",
    "shop:general-store",
    "skill:mining",
    "skill:fishing",
    "woodcutting",
    "lumby",
    "a*/b",
    "@private",
    "x,y",
];

/// A secret planted in a text; the seed makes its random part.
#[derive(Debug, Clone, Copy)]
enum Plant {
    /// The owner's key, as given to `create_owner`.
    OwnerKey,
    /// An AWS access key id, `AKIA` + 16.
    Aws(u64),
    /// A GitHub token, `ghp_` + 36.
    Github(u64),
    /// A PEM private key block (in a one-line text, with JSON `\n` escapes).
    PrivateKey(u64),
    /// `password=<value>`.
    Password(u64),
}

#[derive(Debug, Clone)]
enum Piece {
    Word(&'static str),
    /// Any short text (without `q`, so it never spells an owner's string).
    Free(String),
    /// A word repeated.
    Long(&'static str, usize),
    /// The owner's marker word.
    Marker,
    Plant(Plant),
    /// `[skill:<agent>/<name>]` naming one of the owner's own agents or the other owner's.
    SkillRef {
        other_owner: bool,
        agent: usize,
        name: usize,
        bracket: bool,
        ts: bool,
    },
}

#[derive(Debug, Clone)]
enum Tag {
    Word(&'static str),
    Marker,
    /// A secret as a whole tag.
    Plant(Plant),
    /// An AWS key id written as a topic tag, `item:AKIA…`.
    AwsTopic(u64),
}

#[derive(Debug, Clone)]
struct Run {
    ok: bool,
    /// Run by a sibling (an offset to another agent of the family) rather than the author.
    by_sibling: Option<usize>,
    xp: bool,
}

#[derive(Debug, Clone)]
struct VersionSpec {
    state: HeaderState,
    code: Vec<Piece>,
    runs: Vec<Run>,
}

#[derive(Debug, Clone)]
struct ScriptSpec {
    name: usize,
    goal: Option<Vec<Piece>>,
    preconditions: Option<Vec<Piece>>,
    params: Option<Vec<Piece>>,
    result: Option<Vec<Piece>>,
    tags: Vec<Tag>,
    versions: Vec<VersionSpec>,
    /// The file is deleted at the end (its skill stops being shared).
    gone: bool,
}

#[derive(Debug, Clone)]
struct AgentSpec {
    scripts: Vec<ScriptSpec>,
    lessons: Vec<Vec<Piece>>,
    /// Long plain lessons after those, so that `LESSONS.md` reaches its cap.
    filler: usize,
}

#[derive(Debug, Clone)]
struct FamilySpec {
    agents: Vec<AgentSpec>,
}

fn plant() -> impl Strategy<Value = Plant> {
    prop_oneof![
        2 => Just(Plant::OwnerKey),
        1 => any::<u64>().prop_map(Plant::Aws),
        1 => any::<u64>().prop_map(Plant::Github),
        1 => any::<u64>().prop_map(Plant::PrivateKey),
        1 => any::<u64>().prop_map(Plant::Password),
    ]
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        8 => select(WORDS).prop_map(Piece::Word),
        3 => "[a-pr-zA-PR-Z0-9 ]{1,10}".prop_map(Piece::Free),
        1 => (select(LONG_WORDS), 1..80usize).prop_map(|(w, n)| Piece::Long(w, n)),
        1 => Just(Piece::Marker),
        2 => plant().prop_map(Piece::Plant),
    ]
}

fn lesson_piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        6 => piece(),
        2 => (any::<bool>(), 0..4usize, 0..NAMES.len(), any::<bool>(), any::<bool>()).prop_map(
            |(other_owner, agent, name, bracket, ts)| Piece::SkillRef {
                other_owner,
                agent,
                name,
                bracket,
                ts,
            }
        ),
    ]
}

fn text(max: usize) -> impl Strategy<Value = Vec<Piece>> {
    proptest::collection::vec(piece(), 0..max)
}

/// A goal or precondition: sometimes long enough to be cut in `INDEX.md`.
fn wordy(max: usize) -> impl Strategy<Value = Vec<Piece>> {
    (text(max), proptest::bool::weighted(0.3)).prop_map(|(mut pieces, long)| {
        if long {
            pieces.push(Piece::Long("chop oaks ", 20));
        }
        pieces
    })
}

fn tag() -> impl Strategy<Value = Tag> {
    // Private keys span words, which a tag never does.
    let tag_plant = prop_oneof![
        Just(Plant::OwnerKey),
        any::<u64>().prop_map(Plant::Aws),
        any::<u64>().prop_map(Plant::Github),
        any::<u64>().prop_map(Plant::Password),
    ];
    prop_oneof![
        6 => select(TAGS).prop_map(Tag::Word),
        1 => Just(Tag::Marker),
        1 => tag_plant.prop_map(Tag::Plant),
        1 => any::<u64>().prop_map(Tag::AwsTopic),
    ]
}

fn run() -> impl Strategy<Value = Run> {
    (
        proptest::bool::weighted(0.9),
        proptest::option::weighted(0.2, 0..3usize),
        proptest::bool::weighted(0.2),
    )
        .prop_map(|(ok, by_sibling, xp)| Run { ok, by_sibling, xp })
}

fn version_spec() -> impl Strategy<Value = VersionSpec> {
    let state = prop_oneof![
        8 => Just(HeaderState::Skill),
        1 => Just(HeaderState::None),
        1 => Just(HeaderState::Private),
    ];
    (state, text(10), proptest::collection::vec(run(), 0..=9))
        .prop_map(|(state, code, runs)| VersionSpec { state, code, runs })
}

fn script_spec() -> impl Strategy<Value = ScriptSpec> {
    (
        0..NAMES.len(),
        proptest::option::weighted(0.8, wordy(8)),
        proptest::option::of(wordy(6)),
        proptest::option::weighted(0.3, text(4)),
        proptest::option::weighted(0.3, text(4)),
        proptest::collection::vec(tag(), 0..8),
        proptest::collection::vec(version_spec(), 1..=2),
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |(name, goal, preconditions, params, result, tags, versions, gone)| ScriptSpec {
                name,
                goal,
                preconditions,
                params,
                result,
                tags,
                versions,
                gone,
            },
        )
}

fn agent_spec() -> impl Strategy<Value = AgentSpec> {
    (
        proptest::collection::vec(script_spec(), 0..=4),
        proptest::collection::vec(proptest::collection::vec(lesson_piece(), 0..10), 0..=6),
        prop_oneof![3 => Just(0usize), 1 => 1..30usize],
    )
        .prop_map(|(scripts, lessons, filler)| AgentSpec {
            scripts,
            lessons,
            filler,
        })
}

fn family_spec() -> impl Strategy<Value = FamilySpec> {
    (
        proptest::collection::vec(agent_spec(), 2..=4),
        proptest::bool::weighted(0.25),
    )
        .prop_map(|(agents, crowd)| {
            let family = FamilySpec { agents };
            if crowd { crowded(family) } else { family }
        })
}

/// The family made crowded, so that `INDEX.md` reaches its cap: every agent shares four skills
/// with long goals and preconditions and several topics each.
fn crowded(mut family: FamilySpec) -> FamilySpec {
    const TOPICAL: [&str; 4] = [
        "quest:restless-ghost",
        "place:lumbridge",
        "item:oak-logs",
        "skill:woodcutting",
    ];
    for agent in &mut family.agents {
        while agent.scripts.len() < 4 {
            agent.scripts.push(ScriptSpec {
                name: 0,
                goal: None,
                preconditions: None,
                params: None,
                result: None,
                tags: Vec::new(),
                versions: vec![VersionSpec {
                    state: HeaderState::Skill,
                    code: Vec::new(),
                    runs: Vec::new(),
                }],
                gone: false,
            });
        }
        for (i, script) in agent.scripts.iter_mut().enumerate() {
            script.name = i;
            script.gone = false;
            script
                .goal
                .get_or_insert_with(Vec::new)
                .push(Piece::Long("chop oaks ", 20));
            script
                .preconditions
                .get_or_insert_with(Vec::new)
                .push(Piece::Long("an axe ", 25));
            script
                .tags
                .extend(TOPICAL.iter().skip(i % 2).map(|t| Tag::Word(t)));
            for version in &mut script.versions {
                version.state = HeaderState::Skill;
            }
            let clean = Run {
                ok: true,
                by_sibling: None,
                xp: false,
            };
            script.versions[0].runs.splice(0..0, vec![clean; 6]);
        }
    }
    family
}

// -------------------------------------------------------------------------------------------
// Rendering the pieces into an owner's texts
// -------------------------------------------------------------------------------------------

const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPRSTUVWXYZ0123456789";
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPRSTUVWXYZabcdefghijklmnoprstuvwxyz0123456789";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPRSTUVWXYZabcdefghijklmnoprstuvwxyz0123456789+/";

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `len` distinct characters of `alphabet` in a random order: random enough for every shape
/// rule, and never a placeholder (no repeats, so no `xxxx`, `0000000` or `example`).
fn distinct(seed: u64, alphabet: &[u8], len: usize) -> String {
    let mut state = seed;
    let mut chars = alphabet.to_vec();
    for i in (1..chars.len()).rev() {
        let j = (splitmix(&mut state) % (i as u64 + 1)) as usize;
        chars.swap(i, j);
    }
    chars[..len].iter().map(|&b| b as char).collect()
}

/// The owner's key: `mrk_` and 48 hex digits, as `mindrune owner add` makes them.
fn owner_key(seed: u64) -> String {
    let mut state = seed;
    let mut key = String::from("mrk_");
    for _ in 0..3 {
        key.push_str(&format!("{:016x}", splitmix(&mut state)));
    }
    key
}

/// A plant's text and the parts of it that must never appear in a mirror (compared without
/// case, so a lower-cased copy counts too).
fn plant_text(plant: Plant, key: &str, one_line: bool) -> (String, Vec<String>) {
    match plant {
        Plant::OwnerKey => (key.to_string(), vec![key.to_string()]),
        Plant::Aws(seed) => {
            let id = format!("AKIA{}", distinct(seed, UPPER_DIGITS, 16));
            (id.clone(), vec![id])
        }
        Plant::Github(seed) => {
            let body = distinct(seed, ALNUM, 36);
            (format!("ghp_{body}"), vec![body])
        }
        Plant::PrivateKey(seed) => {
            let first = format!(
                "MII{}{}",
                distinct(seed, BASE64, 30),
                distinct(seed ^ 1, BASE64, 31)
            );
            let second = distinct(seed ^ 2, BASE64, 40);
            let newline = if one_line { "\\n" } else { "\n" };
            (
                format!(
                    "-----BEGIN PRIVATE KEY-----{newline}{first}{newline}{second}={newline}-----END PRIVATE KEY-----"
                ),
                vec![first, second],
            )
        }
        Plant::Password(seed) => {
            let value = format!("Pw7{}", distinct(seed, ALNUM, 10));
            // Not at the start of a line: there the scrubber reads `NAME=value` as an env
            // line whose value runs to the line's end, and a `${…}` later on the line makes it
            // a placeholder (`password=Pw7… console.log(`${i}`)` is left as it is).
            (format!("login password={value}"), vec![value])
        }
    }
}

/// Everything one owner's texts are rendered with.
struct Names<'a> {
    owner: usize,
    agents: [&'a [&'static str]; 2],
    key: &'a str,
}

/// A text and the secret parts planted in it.
struct Rendered {
    text: String,
    secrets: Vec<String>,
}

fn render(pieces: &[Piece], names: &Names<'_>, place: &str, one_line: bool) -> Rendered {
    let mut parts: Vec<String> = Vec::new();
    let mut secrets = Vec::new();
    for piece in pieces {
        parts.push(match piece {
            Piece::Word(word) => (*word).to_string(),
            Piece::Free(text) => text.clone(),
            Piece::Long(word, times) => word.repeat(*times),
            Piece::Marker => format!("{}{place}", MARKERS[names.owner]),
            Piece::Plant(plant) => {
                let (text, parts) = plant_text(*plant, names.key, one_line);
                secrets.extend(parts);
                text
            }
            Piece::SkillRef {
                other_owner,
                agent,
                name,
                bracket,
                ts,
            } => {
                let family = if *other_owner {
                    1 - names.owner
                } else {
                    names.owner
                };
                let agents = names.agents[family];
                let reference = format!(
                    "skill:{}/{}{}",
                    agents[agent % agents.len()],
                    NAMES[*name],
                    if *ts { ".ts" } else { "" }
                );
                if *bracket {
                    format!("[{reference}]")
                } else {
                    reference
                }
            }
        });
    }
    Rendered {
        text: parts.join(" "),
        secrets,
    }
}

fn render_tag(tag: &Tag, names: &Names<'_>) -> Rendered {
    match tag {
        Tag::Word(word) => Rendered {
            text: (*word).to_string(),
            secrets: Vec::new(),
        },
        Tag::Marker => Rendered {
            text: format!("{}tag", MARKERS[names.owner]),
            secrets: Vec::new(),
        },
        Tag::Plant(plant) => {
            let (text, secrets) = plant_text(*plant, names.key, true);
            Rendered { text, secrets }
        }
        Tag::AwsTopic(seed) => {
            let (text, secrets) = plant_text(Plant::Aws(*seed), names.key, true);
            Rendered {
                text: format!("item:{text}"),
                secrets,
            }
        }
    }
}

/// The header's topic tags, as the engine derives them from the words it read (tags written
/// exactly, and exact tags in the goal and preconditions).
fn header_topics(tags: &[String], goal: Option<&str>, preconditions: Option<&str>) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let from_words = [goal, preconditions]
        .into_iter()
        .flatten()
        .flat_map(exact_tags);
    for topic in tags
        .iter()
        .filter_map(|tag| normalize_tag(tag))
        .chain(from_words)
    {
        if !found.contains(&topic) {
            found.push(topic);
        }
    }
    found
}

// -------------------------------------------------------------------------------------------
// Building the library
// -------------------------------------------------------------------------------------------

/// One owner's family as built, with what its mirrors may and may not hold.
struct OwnerWorld {
    id: OwnerId,
    key: String,
    agents: Vec<Agent>,
    /// Secret parts planted anywhere in this owner's inputs.
    secrets: BTreeSet<String>,
    /// `<agent>/<name>` of the skills that must be shared, with their ids.
    shared: BTreeMap<String, SkillId>,
}

/// A temp home whose mirror folders are made writable again before it is deleted, so cleanup
/// also works for a user other than root.
struct Home(tempfile::TempDir);

impl Drop for Home {
    fn drop(&mut self) {
        open_up_all(self.0.path());
    }
}

fn open_up_all(path: &Path) {
    let Ok(metadata) = fs::symlink_metadata(path) else {
        return;
    };
    if metadata.is_dir() {
        let _ = fs::set_permissions(path, fs::Permissions::from_mode(0o755));
        for entry in fs::read_dir(path).into_iter().flatten().flatten() {
            open_up_all(&entry.path());
        }
    }
}

fn fail(message: String) -> TestCaseError {
    TestCaseError::fail(message)
}

/// Checks that the scrubber alone takes every planted secret out of the text it was planted
/// in, so a secret found in a mirror is the mirror's fault, not a shape the scrubber does not
/// know.
fn scrubber_catches(
    scrubber: &Scrubber,
    rendered: &Rendered,
    what: &str,
) -> Result<(), TestCaseError> {
    let scrubbed = scrubber.scrub(&rendered.text).text.to_lowercase();
    for secret in &rendered.secrets {
        if scrubbed.contains(&secret.to_lowercase()) {
            return Err(fail(format!(
                "the generator planted {secret:?} in a {what} where the scrubber itself does not \
                 catch it: {:?}",
                rendered.text
            )));
        }
    }
    Ok(())
}

#[expect(
    clippy::too_many_lines,
    reason = "a fixture: one family built row by row"
)]
fn build_owner(
    store: &SqliteStore,
    home: &Path,
    owner_index: usize,
    spec: &FamilySpec,
    agent_names: [&[&'static str]; 2],
    key: &str,
    base: i64,
) -> Result<OwnerWorld, TestCaseError> {
    let owner_name = ["zqowner", "yqowner"][owner_index];
    let owner = store
        .create_owner(owner_name, &secret_digest(key), base)
        .unwrap();
    let scrubber = Scrubber::new(&[key]);
    let names = Names {
        owner: owner_index,
        agents: agent_names,
        key,
    };
    let mut agents = Vec::new();
    for name in agent_names[owner_index] {
        let workspace = home.join(name);
        fs::create_dir_all(&workspace).unwrap();
        agents.push(
            store
                .create_agent(owner.id, name, workspace.to_str().unwrap(), base)
                .unwrap(),
        );
    }
    let mut secrets = BTreeSet::new();
    let mut shared = BTreeMap::new();
    let mut clock = base;
    for (a, agent_spec) in spec.agents.iter().enumerate() {
        let agent = &agents[a];
        let mut names_used = BTreeSet::new();
        for script in &agent_spec.scripts {
            if !names_used.insert(script.name) {
                continue;
            }
            let name = NAMES[script.name];
            let label = format!("{}/{name}", agent.name);
            let field = |pieces: &Option<Vec<Piece>>, what: &str| {
                pieces
                    .as_ref()
                    .map(|p| render(p, &names, &format!("{what}{}", agent.name), true))
            };
            let goal = field(&script.goal, "goal");
            let preconditions = field(&script.preconditions, "pre");
            let params = field(&script.params, "params");
            let result = field(&script.result, "result");
            for (what, rendered) in [
                ("goal", &goal),
                ("precondition", &preconditions),
                ("params", &params),
                ("result", &result),
            ] {
                if let Some(rendered) = rendered {
                    scrubber_catches(&scrubber, rendered, what)?;
                    secrets.extend(rendered.secrets.iter().cloned());
                }
            }
            let mut tags = Vec::new();
            for tag in &script.tags {
                let rendered = render_tag(tag, &names);
                scrubber_catches(&scrubber, &rendered, "tag")?;
                secrets.extend(rendered.secrets.iter().cloned());
                tags.push(rendered.text);
            }
            let text_of = |r: &Option<Rendered>| r.as_ref().map(|r| r.text.clone());
            let topics = header_topics(
                &tags,
                goal.as_ref().map(|g| g.text.as_str()),
                preconditions.as_ref().map(|p| p.text.as_str()),
            );
            let mut skill_id = None;
            let mut last_state = HeaderState::None;
            let mut shared_versions: BTreeSet<VersionId> = BTreeSet::new();
            for version in &script.versions {
                let rendered = render(&version.code, &names, &format!("code{}", agent.name), false);
                scrubber_catches(&scrubber, &rendered, "script")?;
                secrets.extend(rendered.secrets.iter().cloned());
                // Code as the engine stores it: without a header, `\n` line ends (but here
                // not scrubbed: the mirror must scrub it again).
                let code = code_without_header(&format!("{}\nawait done();\n", rendered.text));
                let snapshot = ScriptSnapshot {
                    agent: agent.id,
                    path: format!("bots/{}/{name}.ts", agent.name),
                    name: name.to_string(),
                    digest: sha256(code.as_bytes()),
                    code,
                    tags: tags.clone(),
                    header: SkillHeader {
                        state: version.state,
                        goal: text_of(&goal),
                        preconditions: text_of(&preconditions),
                        params: text_of(&params),
                        result: text_of(&result),
                        from: None,
                        topics: if version.state == HeaderState::None {
                            Vec::new()
                        } else {
                            topics.clone()
                        },
                    },
                    file_digest: None,
                    origin: None,
                };
                clock += 1000;
                let matched = store.match_script(owner.id, &snapshot, clock).unwrap();
                // Adding the header to a script that already proved itself (or going back to
                // a version that did) shares it at once.
                if matched.version.shared_at.is_some() && shared_versions.insert(matched.version.id)
                {
                    prop_assert!(
                        SharingBar::STANDARD
                            .cleared_by(matched.version.uses, matched.version.score),
                        "{label} v{} was shared at {} runs and score {}",
                        matched.version.number,
                        matched.version.uses,
                        matched.version.score
                    );
                    prop_assert_eq!(version.state, HeaderState::Skill);
                }
                skill_id = Some(matched.skill.id);
                last_state = version.state;
                for run in &version.runs {
                    clock += 1000;
                    let runner = match run.by_sibling {
                        Some(offset) => {
                            &agents[(a + 1 + offset % (spec.agents.len() - 1)) % spec.agents.len()]
                        }
                        None => agent,
                    };
                    let mut outcome = Outcome {
                        at: clock,
                        ok: run.ok,
                        duration_ms: 60_000,
                        ..Outcome::default()
                    };
                    if run.xp && run.ok {
                        outcome.xp.insert("woodcutting".into(), 25.0);
                    }
                    let recorded = store
                        .record_use(
                            owner.id,
                            &NewUse {
                                version: matched.version.id,
                                agent: runner.id,
                                outcome,
                                source: "shell".into(),
                                call: None,
                                output: None,
                                event_id: None,
                                recorded_at: clock,
                            },
                        )
                        .unwrap();
                    if let Some(change) = recorded.shared {
                        // A version is shared only by clearing the bar on its own runs.
                        let bar = SharingBar::STANDARD;
                        prop_assert!(
                            bar.cleared_by(recorded.version.uses, recorded.version.score),
                            "{label} v{} was shared at {} runs and score {}",
                            recorded.version.number,
                            recorded.version.uses,
                            recorded.version.score
                        );
                        prop_assert_eq!(version.state, HeaderState::Skill);
                        prop_assert_eq!(&change.label, &label);
                        shared_versions.insert(recorded.version.id);
                    }
                }
            }
            let skill_id = skill_id.expect("every script has a version");
            if script.gone {
                clock += 1000;
                store.mark_file_gone(owner.id, skill_id, clock).unwrap();
            }
            if last_state == HeaderState::Skill && !script.gone && !shared_versions.is_empty() {
                shared.insert(label, skill_id);
            }
        }
        let mut lessons = Vec::new();
        for (line, pieces) in agent_spec.lessons.iter().enumerate() {
            let rendered = render(pieces, &names, &format!("lesson{}", agent.name), false);
            scrubber_catches(&scrubber, &rendered, "lesson")?;
            secrets.extend(rendered.secrets.iter().cloned());
            lessons.push(NewLesson {
                line: line + 1,
                text: rendered.text,
            });
        }
        for i in 0..agent_spec.filler {
            lessons.push(NewLesson {
                line: agent_spec.lessons.len() + i + 1,
                text: format!(
                    "[quest:restless-ghost] {}lesson{} number {i} {}",
                    MARKERS[owner_index],
                    agent.name,
                    "chop oaks ".repeat(10 + i)
                ),
            });
        }
        clock += 1000;
        store
            .replace_lessons(owner.id, agent.id, &lessons, clock)
            .unwrap();
    }
    Ok(OwnerWorld {
        id: owner.id,
        key: key.to_string(),
        agents,
        secrets,
        shared,
    })
}

// -------------------------------------------------------------------------------------------
// Reading and checking a mirror
// -------------------------------------------------------------------------------------------

/// Every file below `dir` (relative path → content) and every folder.
fn read_tree(dir: &Path) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let mut files = BTreeMap::new();
    let mut dirs = BTreeSet::new();
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path
                .strip_prefix(dir)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                dirs.insert(rel);
                stack.push(path);
            } else {
                files.insert(rel, fs::read_to_string(&path).unwrap());
            }
        }
    }
    (files, dirs)
}

/// Where a forbidden string was found, for the failure message.
fn excerpt(text: &str, at: usize) -> String {
    let start = text.floor_char_boundary(at.saturating_sub(60));
    let end = text.ceil_char_boundary((at + 80).min(text.len()));
    text[start..end].to_string()
}

fn check_mirror(
    store: &SqliteStore,
    worlds: &[OwnerWorld; 2],
    owner_index: usize,
    reader: &Agent,
    dir: &Path,
) -> Result<(), TestCaseError> {
    let world = &worlds[owner_index];
    let other = &worlds[1 - owner_index];
    let (files, dirs) = read_tree(dir);

    // (a) The caps.
    let index = files
        .get("INDEX.md")
        .ok_or_else(|| fail(format!("{}: no INDEX.md", reader.name)))?;
    let lessons = files
        .get("LESSONS.md")
        .ok_or_else(|| fail(format!("{}: no LESSONS.md", reader.name)))?;
    prop_assert!(
        index.len() <= INDEX_CAP,
        "INDEX.md is {} bytes",
        index.len()
    );
    prop_assert!(
        lessons.len() <= LESSONS_CAP,
        "LESSONS.md is {} bytes",
        lessons.len()
    );

    // The reader's own lessons are not in its mirror: only its siblings'.
    let own_author = format!("({})", reader.name);
    prop_assert!(
        !lessons.lines().any(|line| line.ends_with(&own_author)),
        "{}'s own lesson in its LESSONS.md",
        reader.name
    );

    // (d) and (e): exactly the siblings' shared skills, nothing else.
    let expected: BTreeSet<String> = world
        .shared
        .keys()
        .filter(|label| !label.starts_with(&format!("{}/", reader.name)))
        .map(|label| format!("{label}.ts"))
        .collect();
    let skill_files: BTreeSet<String> = files
        .keys()
        .filter(|path| !matches!(path.as_str(), "INDEX.md" | "LESSONS.md" | ".manifest"))
        .cloned()
        .collect();
    prop_assert!(
        !skill_files
            .iter()
            .any(|path| path.starts_with(&format!("{}/", reader.name))),
        "{}'s own skill in its mirror: {:?}",
        reader.name,
        skill_files
    );
    prop_assert_eq!(
        &skill_files,
        &expected,
        "{}'s mirror holds other files than the siblings' shared skills",
        reader.name
    );
    let expected_dirs: BTreeSet<String> = expected
        .iter()
        .map(|path| path.split('/').next().unwrap().to_string())
        .collect();
    prop_assert_eq!(&dirs, &expected_dirs);

    // The skill files: the version siblings get, its header read back, its code scrubbed.
    let scrubber = Scrubber::new(&[world.key.as_str()]);
    for path in &expected {
        let label = path.strip_suffix(".ts").unwrap();
        let (_, name) = label.split_once('/').unwrap();
        let file = &files[path];
        let versions = store.versions(world.id, world.shared[label]).unwrap();
        let standings: Vec<VersionStanding> = versions
            .iter()
            .map(|v| VersionStanding {
                number: v.number,
                runs: v.uses,
                score: v.score,
                shared: v.shared_at.is_some(),
            })
            .collect();
        let chosen = version_for_siblings(&standings, SharingBar::STANDARD)
            .ok_or_else(|| fail(format!("{label} is mirrored but no version was shared")))?;
        let (parsed, _) = parse_header(file);
        let parsed = parsed.ok_or_else(|| fail(format!("{path}: the header does not parse")))?;
        prop_assert_eq!(parsed.name.as_str(), name);
        prop_assert_eq!(parsed.from.as_deref(), Some(label));
        prop_assert!(!parsed.private, "{path} reads as @private");
        prop_assert_eq!(
            code_without_header(file),
            scrubber.scrub(&versions[chosen].code).text.into_owned(),
            "{} is not the scrubbed code of v{}",
            path,
            versions[chosen].number
        );
    }

    // (b) and (c): nothing of the other owner's, no planted secret, in any file (the writer's
    // manifest included).
    let mut forbidden: Vec<(String, String)> = vec![
        (
            MARKERS[1 - owner_index].to_string(),
            "the other owner's marker".into(),
        ),
        (other.key.clone(), "the other owner's key".into()),
        (world.key.clone(), "the owner's key".into()),
    ];
    for secret in world.secrets.iter().chain(&other.secrets) {
        forbidden.push((secret.to_lowercase(), "a planted secret".into()));
    }
    for (path, content) in &files {
        let lower = content.to_lowercase();
        for (needle, what) in &forbidden {
            if let Some(at) = lower.find(&needle.to_lowercase()) {
                return Err(fail(format!(
                    "{what} ({needle}) in {}'s {path}: …{}…",
                    reader.name,
                    excerpt(content, at)
                )));
            }
        }
        // The other owner's agents: never named, except in the words a lesson of this family
        // wrote (`yq1/fish`, or a reference cut short with its lesson: `skill:yq1/…`), which
        // must never become a tag (`[skill:yq1/fish]`).
        for agent in &other.agents {
            for (at, _) in content.match_indices(agent.name.as_str()) {
                let after = &content[at + agent.name.len()..];
                let name_len = after
                    .get(1..)
                    .unwrap_or("")
                    .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
                    .unwrap_or(after.len().saturating_sub(1));
                let tag = content[..at].ends_with("[skill:")
                    && name_len > 0
                    && after[1 + name_len..].starts_with(']');
                let plain_words = path == "LESSONS.md" && after.starts_with('/') && !tag;
                prop_assert!(
                    plain_words,
                    "the other owner's agent {} in {}'s {}: …{}…",
                    agent.name,
                    reader.name,
                    path,
                    excerpt(content, at)
                );
            }
        }
    }
    for agent in &other.agents {
        prop_assert!(!dirs.contains(&agent.name));
    }
    Ok(())
}

fn run_case(specs: &[FamilySpec; 2], seeds: (u64, u64)) -> Result<(), TestCaseError> {
    let home = Home(tempfile::tempdir().unwrap());
    let store = SqliteStore::open_in_memory().unwrap();
    let keys = [owner_key(seeds.0), owner_key(seeds.1)];
    let agent_names: [&[&'static str]; 2] = [
        &AGENTS[0][..specs[0].agents.len()],
        &AGENTS[1][..specs[1].agents.len()],
    ];
    // An hour ago, so every run is inside the last 7 days.
    let base = now_millis() - 3_600_000;
    let worlds = [
        build_owner(
            &store,
            home.0.path(),
            0,
            &specs[0],
            agent_names,
            &keys[0],
            base,
        )?,
        build_owner(
            &store,
            home.0.path(),
            1,
            &specs[1],
            agent_names,
            &keys[1],
            base,
        )?,
    ];
    for world in &worlds {
        for agent in &world.agents {
            let dir = Path::new(&agent.workspace).join(MIRROR_DIR);
            refresh_mirror(&store, agent, Some(&dir)).unwrap();
        }
    }
    for (owner_index, world) in worlds.iter().enumerate() {
        for agent in &world.agents {
            let dir = Path::new(&agent.workspace).join(MIRROR_DIR);
            check_mirror(&store, &worlds, owner_index, agent, &dir)?;
            // Nothing changed, so a second refresh writes nothing.
            match refresh_mirror(&store, agent, Some(&dir)).unwrap() {
                MirrorOutcome::Refreshed {
                    written, removed, ..
                } => {
                    prop_assert!(
                        written.is_empty() && removed.is_empty(),
                        "a second refresh of {} wrote {:?} and removed {:?}",
                        agent.name,
                        written,
                        removed
                    );
                }
                MirrorOutcome::Skipped { reason } => {
                    return Err(fail(format!("refresh skipped: {reason}")));
                }
            }
        }
    }
    Ok(())
}

proptest! {
    // No regression files: tests must not write into the source tree.
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(48)
    })]

    #[test]
    fn every_mirror_is_isolated_scrubbed_capped_and_holds_only_shared_sibling_skills(
        a in family_spec(),
        b in family_spec(),
        seeds in (any::<u64>(), any::<u64>()),
    ) {
        run_case(&[a, b], seeds)?;
    }
}

// -------------------------------------------------------------------------------------------
// Cases the property found (fixed in `family.rs`)
// -------------------------------------------------------------------------------------------

/// One owner, `zq1` sharing `chop-oaks` with these tags and goal; returns the mirror of its
/// sibling `zq2` (path → content).
fn sibling_mirror_of_a_skill_with(tags: &[&str], goal: &str) -> BTreeMap<String, String> {
    let home = Home(tempfile::tempdir().unwrap());
    let store = SqliteStore::open_in_memory().unwrap();
    let key = owner_key(7);
    let owner = store
        .create_owner("zqowner", &secret_digest(&key), 0)
        .unwrap();
    let agents: Vec<Agent> = ["zq1", "zq2"]
        .iter()
        .map(|name| {
            let workspace = home.0.path().join(name);
            fs::create_dir_all(&workspace).unwrap();
            store
                .create_agent(owner.id, name, workspace.to_str().unwrap(), 0)
                .unwrap()
        })
        .collect();
    let tags: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
    let code = "await chop();\n".to_string();
    let matched = store
        .match_script(
            owner.id,
            &ScriptSnapshot {
                agent: agents[0].id,
                path: "bots/zq1/chop-oaks.ts".into(),
                name: "chop-oaks".into(),
                digest: sha256(code.as_bytes()),
                code,
                tags: tags.clone(),
                header: SkillHeader {
                    state: HeaderState::Skill,
                    goal: Some(goal.to_string()),
                    topics: header_topics(&tags, Some(goal), None),
                    ..SkillHeader::default()
                },
                file_digest: None,
                origin: None,
            },
            1000,
        )
        .unwrap();
    let base = now_millis() - 3_600_000;
    for i in 0..5 {
        store
            .record_use(
                owner.id,
                &NewUse {
                    version: matched.version.id,
                    agent: agents[0].id,
                    outcome: Outcome {
                        at: base + i * 1000,
                        ok: true,
                        duration_ms: 60_000,
                        ..Outcome::default()
                    },
                    source: "shell".into(),
                    call: None,
                    output: None,
                    event_id: None,
                    recorded_at: base + i * 1000,
                },
            )
            .unwrap();
    }
    let dir = Path::new(&agents[1].workspace).join(MIRROR_DIR);
    refresh_mirror(&store, &agents[1], Some(&dir)).unwrap();
    read_tree(&dir).0
}

#[test]
fn a_secret_written_as_a_tag_is_scrubbed_from_the_mirrored_skill_file() {
    // The engine keeps `Tags:` as written and the mirror wrote them unscrubbed.
    let key = owner_key(7);
    let token = format!("ghp_{}", distinct(1, ALNUM, 36));
    let mirror = sibling_mirror_of_a_skill_with(&[&key, &token, "quest:restless-ghost"], "chop");
    let file = &mirror["zq1/chop-oaks.ts"];
    assert!(!file.contains(&key), "{file}");
    assert!(!file.contains(&token), "{file}");
    // Both are `[redacted]` now, written once.
    assert!(
        file.contains(" * Tags: [redacted], quest:restless-ghost\n"),
        "{file}"
    );
}

#[test]
fn a_secret_written_as_a_topic_tag_is_not_shown_as_its_lower_cased_topic() {
    // `item:AKIA…` is a topic tag once lower-cased, which no scrubber rule recognises as a key.
    let aws = format!("AKIA{}", distinct(2, UPPER_DIGITS, 16));
    let tag = format!("item:{aws}");
    let mirror = sibling_mirror_of_a_skill_with(&[&tag, "quest:restless-ghost"], "chop");
    for (path, content) in &mirror {
        assert!(
            !content.to_lowercase().contains(&aws.to_lowercase()),
            "{path}: {content}"
        );
    }
    // Topics that are no secret are still shown.
    assert!(mirror["INDEX.md"].contains("- quest:restless-ghost (1 skill, 0 lessons)\n"));
    assert!(mirror["zq1/chop-oaks.ts"].contains(" * Topics: quest:restless-ghost\n"));
}
