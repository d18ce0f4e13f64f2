//! Parsing what an rs-sdk run printed.
//!
//! Two producers are understood:
//!
//! * `sdk/runner.ts` (`runScript`, i.e. `bun bots/<bot>/<name>.ts`) ends its output with
//!   `── Result ──` (JSON), maybe `── Error ── Name: msg` plus a few stack frames, and
//!   `── State ──` holding `formatWorldStateSummary`:
//!
//!   ```text
//!   Pos (3222, 3218) lvl 0 | HP 10/10 | DEAD | fighting Cow
//!   XP: Woodcutting +1,250, Firemaking +40          (or "XP: none gained")
//!   Inv 5/28: Bronze axe, Logs x4
//!   NPCs: Man x3 (2t)
//!   [!] dialog open (3 options)
//!   > I can't reach that!
//!   ```
//!
//! * The MCP `execute_code` tool returns `── Execution (success, 1234ms) ──`, `── Console ──`,
//!   `── Result ──` or `── Error ──` (message on the following line), and
//!   `── Terminal World State ──` (older servers: `── World State ──`, no Execution header)
//!   holding the full `formatWorldState` (`Status: DEAD …`, `## Dialog`, `## Recent Messages` …).
//!
//! Real captures are messy: they can be truncated anywhere, interleaved with the script's own
//! logs and the runner's stderr, carry CRLF line ends or ANSI colour codes, and hold several
//! runs back to back. The parser therefore works line by line, keys on section headers only, and
//! for every field takes the LAST section of its kind, because the last one describes the run
//! that finished most recently. It never panics and never fails: anything it does not recognise
//! is simply left out of the result.

use std::borrow::Cow;
use std::collections::BTreeMap;

/// The longest error summary kept, in characters; longer ones are cut so a run record stays small.
pub(crate) const ERROR_MAX_CHARS: usize = 200;

/// What [`parse_run_output`] reports when an `── Error ──` section exists but its message was
/// lost (the capture was cut right after the header). The section alone proves the run failed,
/// so `error` is still `Some`.
pub(crate) const MISSING_ERROR_MESSAGE: &str = "(no error message)";

/// The facts MindRune needs from one run's printed output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutput {
    /// XP gained per skill, from the last `XP:` line of the last state section.
    /// `"Woodcutting +1,250"` becomes `("Woodcutting", 1250.0)`. Values are finite and ≥ 0.
    pub xp: BTreeMap<String, f64>,
    /// An `XP:` line was present in the last state section (even `XP: none gained`), so an empty
    /// `xp` means "nothing gained" rather than "unknown".
    pub xp_line_seen: bool,
    /// The last state section says the player is dead: a `| DEAD` segment on its `Pos (…)` line
    /// (runner summary) or a `Status: DEAD` line (full world state).
    pub(crate) dead: bool,
    /// `"Name: msg"` of the last `── Error ──` section: its first line only, at most
    /// [`ERROR_MAX_CHARS`] characters.
    pub(crate) error: Option<String>,
    /// `success`, `error`, `timeout` or `cancelled` from the last `── Execution (…) ──` header.
    pub execution_status: Option<String>,
    /// Milliseconds from the last `── Execution (status, 1234ms) ──` header.
    pub elapsed_ms: Option<u64>,
    /// The run probably ended stuck: `blocking_ui.is_some() || cant_reach`.
    pub(crate) stuck_hint: bool,
    /// A state section (`State`, `World State` or `Terminal World State`) was found.
    pub state_seen: bool,
    /// What blocks the next script, from the last state section: the text after `[!] ` in the
    /// summary form, or the open-UI headings (`Dialog`, `Modal Open`, `Interface`, `Shop`,
    /// `Trade`, `Grand Exchange`) of the full form, joined with `", "`.
    pub(crate) blocking_ui: Option<String>,
    /// A recent game message of the last state section (`> …` lines of the summary, `- …` lines
    /// under `## Recent Messages` of the full form) says "can't reach" / "cannot reach"
    /// (any case, straight or curly apostrophe), as in the game's "I can't reach that!".
    pub(crate) cant_reach: bool,
    /// The output ends in a failure: its last `── Execution (…) ──` header says anything but
    /// `success`, or an `── Error ──` section comes after the last `── Result ──`. Both runners
    /// print the error this way also when the process exits 0 (the fork runner on a throw or a
    /// timeout, any runner behind `| tail`), so this, not the exit status, is the truth.
    pub failed: bool,
    /// Skill totals (XP) of the last state section's `## Skills` (full form only:
    /// `Woodcutting: 20 (3,125 xp)`). The fork runner prints these and no `XP:` line, so its gain
    /// is measured against the avatar's previous run (see [`measure_against`]).
    pub skill_totals: BTreeMap<String, f64>,
    /// Base levels of the last state section's `## Skills` (full form only). In
    /// `Hitpoints: 5/10 (1,154 xp)` the base level is 10: the boosted or drained 5 is not what
    /// the avatar has, as a state file's `baseLevel` is not.
    pub skill_levels: BTreeMap<String, u32>,
    /// The items worn, from the full form's `## Equipment` (`- Bronze sword`), in its order.
    /// rs-sdk's formatter prints the section only when something is worn, so in a
    /// [full state](RunOutput::full_state) an empty list means nothing is.
    pub equipment: Vec<String>,
    /// `Position: (3222, 3218) Level 0` of the full form's `## Player`: x, z and the plane.
    pub(crate) position: Option<(i64, i64, i64)>,
    /// Hitpoints now and at most, from the `Hitpoints` line of `## Skills` (the current level
    /// is the boosted one: `Hitpoints: 5/10` is 5 of 10; `Hitpoints: 10` is 10 of 10).
    pub(crate) hitpoints: Option<(u32, u32)>,
    /// The player's name from `Name: Woody (Combat 3)` of the full form's `## Player`.
    pub player_name: Option<String>,
    /// The inventory of the last state section: the summary's `Inv N/28: …` line or the full
    /// form's `## Inventory` list.
    pub inventory: Option<Inventory>,
    /// The last game messages of the last state section, newest first, with the summary's
    /// repeat count (`(x2)`) removed. They are the game's last messages, not this run's: they
    /// carry over from earlier runs.
    pub(crate) messages: Vec<String>,
    /// The output holds a section that tells how the run ended: `── Result ──`, `── Error ──` or
    /// `── Execution (…) ──`. Without one (the output was cut by `| tail`, or it is the middle
    /// of a state dump), the output cannot say whether the run worked.
    pub verdict_seen: bool,
    /// The last SDK action timeout the script's own log or console printed, from `Timed out`
    /// on (`chop at (3217, 3231): Timed out waiting for tree chop` gives `Timed out waiting
    /// for tree chop`): what the game did not do. Only a cause's detail: a run that printed one
    /// and returned its Result still worked.
    pub(crate) sdk_timeout: Option<String>,
}

/// An inventory as a runner printed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    /// Slots in use (`Inv 23/28`, or 28 less `## Inventory (5 empty slots)`).
    pub(crate) slots: Option<u32>,
    /// Item name → count, as listed (`Logs x5` → 5).
    pub items: BTreeMap<String, u32>,
    /// Every item is listed: the summary did not end in `+N more`.
    pub(crate) complete: bool,
}

/// Parses the printed output of a `runScript` run or an `execute_code` call. Never panics.
pub fn parse_run_output(output: &str) -> RunOutput {
    let clean = strip_ansi(output);
    // Splitting on both '\r' and '\n' handles CRLF and carriage-return progress lines alike; the
    // empty lines this creates are harmless because every rule below skips blank lines.
    // Sized first: growing it line by line was most of the parse's allocations.
    let mut lines: Vec<&str> =
        Vec::with_capacity(1 + clean.bytes().filter(|b| matches!(b, b'\n' | b'\r')).count());
    lines.extend(clean.split(['\n', '\r']));
    let sections = split_sections(&lines);

    let mut out = RunOutput {
        verdict_seen: sections.iter().any(|s| {
            matches!(
                s.kind,
                SectionKind::Result | SectionKind::Error | SectionKind::Execution
            )
        }),
        ..RunOutput::default()
    };

    if let Some(exec) = sections
        .iter()
        .rev()
        .find(|s| s.kind == SectionKind::Execution)
    {
        let (status, elapsed) = parse_execution_title(exec.title);
        out.execution_status = status;
        out.elapsed_ms = elapsed;
    }

    if let Some(err) = sections.iter().rev().find(|s| s.kind == SectionKind::Error) {
        let first = if err.inline.is_empty() {
            error_line(err.body)
        } else {
            Some(err.inline)
        };
        let msg = first.unwrap_or(MISSING_ERROR_MESSAGE);
        out.error = Some(truncate_chars(msg, ERROR_MAX_CHARS).to_owned());
    } else if let [only] = sections.as_slice() {
        // An MCP `execute_code` that threw answers with its error alone, no section at all
        // (`Error: bot.chopOak is not a function…` then `Stack trace:`). The host's `isError`
        // says it failed; this line is why. It does not make the output failed by itself: a
        // script's own log may start with `Error:` too.
        out.error =
            bare_error_line(only.body).map(|l| truncate_chars(l, ERROR_MAX_CHARS).to_owned());
    }

    let last_of = |kind: SectionKind| sections.iter().rposition(|s| s.kind == kind);
    let error_last = match (last_of(SectionKind::Error), last_of(SectionKind::Result)) {
        (Some(error), Some(result)) => error > result,
        (Some(_), None) => true,
        (None, _) => false,
    };
    out.failed = error_last
        || out
            .execution_status
            .as_deref()
            .is_some_and(|status| status != "success");

    if let Some(state) = sections.iter().rev().find(|s| s.kind == SectionKind::State) {
        out.state_seen = true;
        read_state(state.body, &mut out);
    }

    out.sdk_timeout = sections
        .iter()
        .filter(|s| matches!(s.kind, SectionKind::Preamble | SectionKind::Console))
        .flat_map(|s| s.body.iter())
        .rev()
        .find_map(|line| {
            let at = line.find(SDK_TIMEOUT)?;
            Some(truncate_chars(line[at..].trim_end(), ERROR_MAX_CHARS).to_owned())
        });

    out.stuck_hint = out.blocking_ui.is_some() || out.cant_reach;
    out
}

/// The error line of an `── Error ──` section whose message is on the lines below its header.
/// The fork runner prints the bare message first and `Name: message` on the next line
/// (`bot.chopOak is not a function…` then `TypeError: bot.chopOak is not a function…`); the
/// named line says more, so it is taken when it repeats the first.
fn error_line<'a>(body: &[&'a str]) -> Option<&'a str> {
    let mut lines = body.iter().map(|l| l.trim()).filter(|l| !l.is_empty());
    let first = lines.next()?;
    if let Some(second) = lines.next()
        && let Some((name, rest)) = second.split_once(": ")
        && rest == first
        && !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
    {
        return Some(second);
    }
    Some(first)
}

/// The first line of an output made of an error alone, when it names one (`Error: …`,
/// `TypeError: …`).
fn bare_error_line<'a>(body: &[&'a str]) -> Option<&'a str> {
    let first = body.iter().map(|l| l.trim()).find(|l| !l.is_empty())?;
    let (name, rest) = first.split_once(": ")?;
    let named = name.ends_with("Error")
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !rest.trim().is_empty();
    named.then_some(first)
}

/// Whether a shell line shows only part of what the command printed: it pipes through `tail`
/// or `head`. The kept part may miss the run's own `── Result ──` / `── Error ──` and its
/// state, and the shell's exit status is then `tail`'s.
pub fn command_cuts_output(command: &str) -> bool {
    command.split('|').skip(1).any(|stage| {
        let word = stage.split_whitespace().next().unwrap_or("");
        let word = word.rsplit('/').next().unwrap_or(word);
        matches!(word, "tail" | "head")
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectionKind {
    /// Text before the first header: the script's own logs.
    Preamble,
    Execution,
    Console,
    Result,
    Error,
    State,
    Tip,
    /// A header we do not know, e.g. one a script printed itself. It still ends the section
    /// before it, which keeps foreign text out of the sections we read.
    Other,
}

struct Section<'a> {
    kind: SectionKind,
    /// The header's title, e.g. `Execution (success, 12ms)`.
    title: &'a str,
    /// Text after the closing `──` on the header line (the runner's `── Error ── Name: msg`).
    inline: &'a str,
    body: &'a [&'a str],
}

fn split_sections<'a>(lines: &'a [&'a str]) -> Vec<Section<'a>> {
    // A runner's output has a preamble and four or five sections.
    let mut sections = Vec::with_capacity(8);
    let mut kind = SectionKind::Preamble;
    let mut title = "";
    let mut inline = "";
    let mut body_start = 0;
    for (i, line) in lines.iter().enumerate() {
        if let Some((t, rest)) = parse_header(line) {
            sections.push(Section {
                kind,
                title,
                inline,
                body: &lines[body_start..i],
            });
            kind = classify_title(t);
            title = t;
            inline = rest;
            body_start = i + 1;
        } else if kind == SectionKind::Preamble && line.trim() == LOOK_STATE_TITLE {
            // A look (`bun sdk/cli.ts NAME`) prints `formatWorldState` bare, without the
            // runner's `── World State ──` before it: the same state, so the same section.
            sections.push(Section {
                kind,
                title,
                inline,
                body: &lines[body_start..i],
            });
            kind = SectionKind::State;
            title = "World State";
            inline = "";
            body_start = i + 1;
        }
    }
    sections.push(Section {
        kind,
        title,
        inline,
        body: &lines[body_start.min(lines.len())..],
    });
    sections
}

/// How the SDK's actions say the game did not answer in time (`Timed out waiting for tree
/// chop`, `… for the bank to open`).
const SDK_TIMEOUT: &str = "Timed out waiting for";

/// The first line of `formatWorldState`, which a look prints with no section header before it.
const LOOK_STATE_TITLE: &str = "# World State";

/// Recognises `── Title ──` and `── Title ── inline text`. The rule (a trimmed line starting
/// with at least two box-drawing dashes and carrying a non-empty title) is loose on purpose: a
/// header cut by truncation (`── Sta`) still ends the previous section instead of being read as
/// part of it. Lines made only of dashes are dividers, not headers.
fn parse_header(line: &str) -> Option<(&str, &str)> {
    const DASH: char = '─';
    let t = line.trim();
    if !t.starts_with("──") {
        return None;
    }
    let rest = t.trim_start_matches(DASH).trim_start();
    let (title, inline) = match rest.find("──") {
        Some(i) => (&rest[..i], rest[i..].trim_start_matches(DASH)),
        None => (rest, ""),
    };
    let title = title.trim();
    if title.is_empty() {
        return None;
    }
    Some((title, inline.trim()))
}

fn classify_title(title: &str) -> SectionKind {
    let lower = title.to_ascii_lowercase();
    match lower.as_str() {
        "result" => SectionKind::Result,
        "error" => SectionKind::Error,
        "state" | "world state" | "terminal world state" => SectionKind::State,
        "console" => SectionKind::Console,
        "tip" => SectionKind::Tip,
        _ if lower.starts_with("execution") => SectionKind::Execution,
        _ => SectionKind::Other,
    }
}

/// Reads `Execution (success, 1234ms)`. A status outside the four documented ones (for example a
/// word cut by truncation) is dropped rather than guessed; the elapsed time needs its `ms` unit so
/// that a number cut in half is not mistaken for a shorter run.
fn parse_execution_title(title: &str) -> (Option<String>, Option<u64>) {
    let Some(open) = title.find('(') else {
        return (None, None);
    };
    let inner = &title[open + 1..];
    let inner = inner.split(')').next().unwrap_or(inner);
    let mut parts = inner.split(',');
    let status = parts
        .next()
        .map(|s| s.trim().to_ascii_lowercase())
        .and_then(|s| match s.as_str() {
            "success" | "error" | "timeout" | "cancelled" => Some(s),
            "canceled" => Some("cancelled".to_owned()),
            _ => None,
        });
    // Everything after the first comma is the duration; a locale may have grouped its digits.
    let rest: String = parts.collect::<Vec<_>>().join("");
    let rest = rest.trim();
    let elapsed = rest.strip_suffix("ms").and_then(|n| {
        let digits: String = n
            .chars()
            .filter(|c| !matches!(c, ',' | '_' | ' '))
            .collect();
        digits.trim().parse::<u64>().ok()
    });
    (status, elapsed)
}

/// The full-form headings that mean an interface is open and will block the next script.
const BLOCKING_HEADINGS: &[&str] = &[
    "Dialog",
    "Modal Open",
    "Interface",
    "Shop",
    "Trade",
    "Grand Exchange",
];

/// The full form's subsection a line belongs to, where it matters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Subsection {
    Other,
    Player,
    Skills,
    Inventory,
    Equipment,
    RecentMessages,
}

fn read_state(body: &[&str], out: &mut RunOutput) {
    let mut blockers: Vec<String> = Vec::new();
    let mut summary_blocker: Option<String> = None;
    let mut sub = Subsection::Other;
    let mut full_inventory: Option<Inventory> = None;
    let mut summary_inventory: Option<Inventory> = None;
    let mut summary_messages: Vec<String> = Vec::new();
    let mut full_messages: Vec<String> = Vec::new();
    for raw in body {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            // Full world state: remember which subsection we are in, and note open UIs.
            let heading = heading.trim();
            sub = if heading.eq_ignore_ascii_case("Recent Messages") {
                Subsection::RecentMessages
            } else if heading.eq_ignore_ascii_case("Skills") {
                Subsection::Skills
            } else if heading.eq_ignore_ascii_case("Player") {
                Subsection::Player
            } else if heading.eq_ignore_ascii_case("Equipment") {
                // A section printed twice (two dumps in one section) lists what is worn now.
                out.equipment.clear();
                Subsection::Equipment
            } else if let Some(rest) = heading.strip_prefix("Inventory") {
                full_inventory = Some(Inventory {
                    slots: empty_slots(rest).map(|empty| BACKPACK_SLOTS.saturating_sub(empty)),
                    items: BTreeMap::new(),
                    complete: true,
                });
                Subsection::Inventory
            } else {
                Subsection::Other
            };
            if BLOCKING_HEADINGS.iter().any(|h| heading.starts_with(h)) {
                blockers.push(heading.to_owned());
            }
            continue;
        }
        if sub == Subsection::Skills
            && let Some(skill) = parse_skill_line(line)
        {
            out.skill_totals.insert(skill.name.to_owned(), skill.xp);
            if let Some(base) = skill.base {
                out.skill_levels.insert(skill.name.to_owned(), base);
                if skill.name.eq_ignore_ascii_case("Hitpoints") {
                    out.hitpoints = Some((skill.current.unwrap_or(base), base));
                }
            }
            continue;
        }
        if sub == Subsection::Equipment
            && let Some(item) = line.strip_prefix("- ")
        {
            let item = strip_options(item).trim();
            if !item.is_empty() && out.equipment.len() < MAX_EQUIPMENT {
                out.equipment.push(item.to_owned());
            }
            continue;
        }
        if sub == Subsection::Player {
            if let Some(rest) = line.strip_prefix("Name:") {
                // `Woody (Combat 3)`: the name is what comes before the combat level.
                let name = rest.rsplit_once(" (Combat").map_or(rest, |(name, _)| name);
                let name = name.trim();
                out.player_name = (!name.is_empty()).then(|| name.to_owned());
                continue;
            }
            if let Some(rest) = line.strip_prefix("Position:") {
                out.position = parse_position(rest);
                continue;
            }
        }
        if sub == Subsection::Inventory
            && let Some(inv) = full_inventory.as_mut()
        {
            if let Some(item) = line.strip_prefix("- ") {
                if let Some((name, count)) = parse_item(strip_options(item)) {
                    add_item(&mut inv.items, name, count);
                }
                continue;
            }
            if line.starts_with("...") {
                inv.complete = false;
                continue;
            }
        }
        if let Some(rest) = line.strip_prefix("Inv ") {
            summary_inventory = Some(parse_summary_inventory(rest));
            continue;
        }
        if let Some(rest) = line.strip_prefix("Pos (") {
            // Segments are separated by '|': "… | HP 10/10 | DEAD | fighting Cow". Matching a
            // whole segment keeps an NPC called "Dead …" in "fighting …" from counting.
            out.dead = rest.split('|').skip(1).any(|seg| seg.trim() == "DEAD");
        } else if let Some(rest) = line.strip_prefix("Status:") {
            out.dead = rest.trim_start().starts_with("DEAD");
        } else if let Some(rest) = line.strip_prefix("XP:") {
            out.xp_line_seen = true;
            out.xp = parse_xp_list(rest);
        } else if let Some(rest) = line.strip_prefix("[!]") {
            summary_blocker = Some(rest.trim().to_owned());
        } else if let Some(msg) = line.strip_prefix('>') {
            out.cant_reach |= says_cant_reach(msg);
            push_message(&mut summary_messages, msg);
        } else if sub == Subsection::RecentMessages
            && let Some(msg) = line.strip_prefix("- ")
        {
            out.cant_reach |= says_cant_reach(msg);
            push_message(&mut full_messages, msg);
        }
    }
    // A state section is one of the two forms; should a capture mix them, the summary (the
    // later runner's) is preferred.
    out.inventory = summary_inventory.or(full_inventory);
    out.messages = if summary_messages.is_empty() {
        full_messages
    } else {
        summary_messages
    };
    out.blocking_ui = match summary_blocker {
        Some(b) if !b.is_empty() => Some(b),
        Some(_) => Some("blocking UI".to_owned()),
        None if !blockers.is_empty() => Some(blockers.join(", ")),
        None => None,
    };
}

/// Slots in a backpack.
pub(crate) const BACKPACK_SLOTS: u32 = 28;

/// The most game messages kept from one state section (the full form lists a few dozen at most).
const MAX_MESSAGES: usize = 50;

/// `(5 empty slots)` → 5.
fn empty_slots(rest: &str) -> Option<u32> {
    let inner = rest.trim().strip_prefix('(')?.split(')').next()?;
    let n = inner
        .trim()
        .strip_suffix("empty slots")
        .or_else(|| inner.trim().strip_suffix("empty slot"))?;
    n.trim().parse().ok()
}

/// The most worn items kept from one state section (a player wears at most 14).
const MAX_EQUIPMENT: usize = 32;

/// One line of the full form's `## Skills`.
struct SkillLine<'a> {
    name: &'a str,
    /// The level now, when it differs from the base level (`5/10`: 5).
    current: Option<u32>,
    base: Option<u32>,
    xp: f64,
}

/// `Woodcutting: 20 (3,125 xp)` → Woodcutting, base level 20, 3,125 XP; `Hitpoints: 5/10
/// (1,154 xp)` → base level 10, now 5. A level that does not read is left out, the XP kept.
fn parse_skill_line(line: &str) -> Option<SkillLine<'_>> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim();
    let open = rest.find('(')?;
    let inner = rest[open + 1..].split(')').next()?;
    let number = inner.trim().strip_suffix("xp")?;
    let digits: String = number
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let xp: f64 = digits.parse().ok()?;
    if name.is_empty() || !xp.is_finite() || xp < 0.0 {
        return None;
    }
    let levels = rest[..open].trim();
    let (current, base) = match levels.split_once('/') {
        Some((current, base)) => (current.trim().parse().ok(), base.trim().parse().ok()),
        None => (None, levels.parse().ok()),
    };
    Some(SkillLine {
        name,
        current: current.filter(|_| base.is_some()),
        base,
        xp,
    })
}

/// ` (3222, 3218) Level 0` (after `Position:`) → `(3222, 3218, 0)`.
fn parse_position(rest: &str) -> Option<(i64, i64, i64)> {
    let rest = rest.trim().strip_prefix('(')?;
    let (inner, after) = rest.split_once(')')?;
    let (x, z) = inner.split_once(',')?;
    let plane = after
        .trim()
        .strip_prefix("Level")
        .map_or(Some(0), |l| l.trim().parse().ok())?;
    Some((x.trim().parse().ok()?, z.trim().parse().ok()?, plane))
}

/// Drops the full form's options after an item: `Bronze axe x1 [Wield]` → `Bronze axe x1`.
fn strip_options(item: &str) -> &str {
    match item.find(" [") {
        Some(i) => &item[..i],
        None => item,
    }
}

/// `Logs x5` → `("Logs", 5)`, `Bronze axe` → `("Bronze axe", 1)`.
fn parse_item(item: &str) -> Option<(&str, u32)> {
    let item = item.trim();
    if let Some((name, count)) = item.rsplit_once(" x")
        && !count.is_empty()
        && count.chars().all(|c| c.is_ascii_digit() || c == ',')
    {
        let digits: String = count.chars().filter(char::is_ascii_digit).collect();
        let name = name.trim();
        return (!name.is_empty()).then(|| (name, digits.parse().unwrap_or(u32::MAX)));
    }
    (!item.is_empty()).then_some((item, 1))
}

fn add_item(items: &mut BTreeMap<String, u32>, name: &str, count: u32) {
    let entry = items.entry(name.to_owned()).or_insert(0);
    *entry = entry.saturating_add(count);
}

/// The summary's `23/28: Bronze axe, Tinderbox, +11 more` (after `Inv `).
fn parse_summary_inventory(rest: &str) -> Inventory {
    let (count, list) = rest.split_once(':').unwrap_or((rest, ""));
    let slots = count.split('/').next().and_then(|n| n.trim().parse().ok());
    let mut inv = Inventory {
        slots,
        items: BTreeMap::new(),
        complete: true,
    };
    for entry in list.split(',') {
        let entry = entry.trim();
        if entry.is_empty() || entry.eq_ignore_ascii_case("(empty)") || entry == "empty" {
            continue;
        }
        if entry.starts_with('+') && entry.ends_with("more") {
            inv.complete = false;
            continue;
        }
        if let Some((name, count)) = parse_item(entry) {
            add_item(&mut inv.items, name, count);
        }
    }
    inv
}

/// Keeps a game message without the summary's repeat count: `You get some logs. (x2)`.
fn push_message(messages: &mut Vec<String>, msg: &str) {
    if messages.len() >= MAX_MESSAGES {
        return;
    }
    let msg = msg.trim();
    let msg = match msg.rsplit_once(" (x") {
        Some((text, count))
            if count
                .strip_suffix(')')
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())) =>
        {
            text.trim_end()
        }
        _ => msg,
    };
    if !msg.is_empty() {
        messages.push(msg.to_owned());
    }
}

fn says_cant_reach(msg: &str) -> bool {
    let lower = msg.to_lowercase();
    lower.contains("can't reach") || lower.contains("can’t reach") || lower.contains("cannot reach")
}

/// The `Name +number` entries of an `XP:` line, as `(name, number)` text. Entries are separated
/// by commas, and the number may itself contain grouping separators (`1,250`; other locales use
/// `'`, `’` or a (narrow) no-break or thin space), so a comma only ends a number when it is not
/// followed by exactly three digits. `.` is read as the decimal point, as Bun's default `en-US`
/// `toLocaleString` prints it. Skill names may contain spaces and digits (`Stat18`).
///
/// It finds what the regular expression
/// `(?:^|,)\s*([^,+]+?)\s*\+\s*([0-9]+(?:[,'’\x{a0}\x{202f}\x{2009} ][0-9]{3})*(?:\.[0-9]+)?)`
/// finds, one match after another (a property test holds it to that regex), written out
/// because the regex's search was a twenty-fifth of recording a use in a write group: an entry
/// starts at the line's start or after a comma, its name runs to the next `+` (a comma first
/// and it is no entry), and its number follows the `+` and any spaces.
fn xp_entries(list: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut from = 0;
    let mut at_start = true;
    std::iter::from_fn(move || {
        loop {
            // Where the next try begins: the line's start, or just after the next comma.
            let start = if std::mem::take(&mut at_start) {
                0
            } else {
                from + list.get(from..)?.find(',')? + 1
            };
            from = start;
            let rest = &list[start..];
            let plus = rest.find([',', '+'])?;
            if plus == 0 || rest.as_bytes()[plus] == b',' {
                continue;
            }
            let after = &rest[plus + 1..];
            let number_at = after.len() - after.trim_start().len();
            let number = xp_number(&after[number_at..]);
            if number.is_empty() {
                continue;
            }
            let end = start + plus + 1 + number_at + number.len();
            from = end;
            return Some((&rest[..plus], number));
        }
    })
}

/// The longest XP number at the start of `text`: digits, then groups of a separator and exactly
/// three digits, then a `.` and digits; empty when `text` starts with no digit.
fn xp_number(text: &str) -> &str {
    const SEPARATORS: [char; 7] = [',', '\'', '’', '\u{a0}', '\u{202f}', '\u{2009}', ' '];
    let digits = |from: usize| text[from..].bytes().take_while(u8::is_ascii_digit).count();
    let mut end = digits(0);
    if end == 0 {
        return "";
    }
    while let Some(separator) = text[end..]
        .chars()
        .next()
        .filter(|c| SEPARATORS.contains(c))
    {
        let group = end + separator.len_utf8();
        let run = digits(group);
        if run < 3 {
            break;
        }
        end = group + 3;
    }
    if text[end..].starts_with('.') && digits(end + 1) > 0 {
        end += 1 + digits(end + 1);
    }
    &text[..end]
}

fn parse_xp_list(list: &str) -> BTreeMap<String, f64> {
    let mut xp = BTreeMap::new();
    if list.trim().eq_ignore_ascii_case("none gained") {
        return xp;
    }
    for (name, number) in xp_entries(list) {
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        let digits: String = number
            .chars()
            .filter(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let Ok(value) = digits.parse::<f64>() else {
            continue;
        };
        // A number too long for f64 parses as infinity; it cannot be a real XP gain.
        if !value.is_finite() || value < 0.0 {
            continue;
        }
        let entry = xp.entry(name.to_owned()).or_insert(0.0);
        let sum = *entry + value;
        *entry = if sum.is_finite() { sum } else { f64::MAX };
    }
    xp
}

/// What one run did, read from its output against the same avatar's previous run: no runner
/// prints an items delta, the fork runner prints no XP gained, and the game messages carry over
/// from earlier runs, so each of these needs the state the avatar was in before.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFacts {
    /// XP gained per skill: the `XP:` line when the runner printed one, else the skill totals
    /// against the previous run's. Empty when nothing was gained or there is nothing to compare.
    pub xp: BTreeMap<String, f64>,
    /// Item name → change in count (negative when fewer), for every item whose count both
    /// inventories tell.
    pub items: BTreeMap<String, f64>,
    /// Slots emptied by a death (0 without one): the larger of the listed losses and the drop in
    /// slots in use, since a cut list (`+11 more`) hides most of what was lost.
    pub items_lost: u32,
    /// The avatar died in this run: the state says `DEAD`, or `Oh dear you are dead!` is among
    /// this run's own game messages.
    pub died: bool,
    /// A blocking interface was open at the end, or this run's messages say "can't reach".
    pub stuck: bool,
    /// The game messages this run added, newest first (all of them when there is no previous
    /// run to tell the carried-over ones by).
    pub(crate) new_messages: Vec<String>,
    /// Why the run failed, for the person reading its record: the error line, and the game
    /// message that explains it when this run showed one (`You do not have an axe…`).
    pub failure: Option<String>,
    /// Why this run's gains (XP and items) could not be measured, when they could not: they are
    /// unknown, not zero. [`UNMEASURED_CUT`] or [`UNMEASURED_NO_STATE_BEFORE`].
    pub unmeasured: Option<&'static str>,
}

/// The run's output holds no readable state (no Skills, Inventory or XP line): cut by `| tail`,
/// or it ended before printing one. Its gains are unknown, and they must not be moved to the
/// next run: that one measures only against a state printed after this.
pub(crate) const UNMEASURED_CUT: &str = "output cut by tail";

/// Nothing printed the avatar's state earlier in this turn (since its last state-less call), and
/// the runner prints no XP line of its own: there is nothing to measure the run's totals against.
pub(crate) const UNMEASURED_NO_STATE_BEFORE: &str = "no state printed before it";

impl RunOutput {
    /// The output printed the avatar's whole state in the full form (`formatWorldState`): its
    /// skills with their levels and its whole inventory. The summary form and a dump cut by
    /// `| tail` do not: then the avatar's levels, gear and wealth cannot be read from it.
    pub fn full_state(&self) -> bool {
        self.state_seen
            && !self.skill_levels.is_empty()
            && self.inventory.as_ref().is_some_and(|inv| inv.complete)
    }

    /// The output shows enough of the avatar's state to measure against: its skill totals, its
    /// inventory or the runner's own XP line. A state dump cut by `| tail` to its last
    /// subsections (objects, ground items, messages) has none of them.
    pub fn state_readable(&self) -> bool {
        self.state_seen
            && (self.xp_line_seen || !self.skill_totals.is_empty() || self.inventory.is_some())
    }
}

/// The game's death message, as it prints it (older clients put a comma after "dear").
fn is_death_message(msg: &str) -> bool {
    let lower = msg.to_lowercase();
    lower.contains("oh dear") && lower.contains("you are dead")
}

/// Game messages that say why an action could not be done; one of these among the run's own
/// messages is the likely cause of its failure.
const EXPLAINING: &[&str] = &[
    "you do not have",
    "you don't have",
    "you need",
    "you can't",
    "you cannot",
    "can't reach",
    "cannot reach",
    "not enough",
    "inventory is full",
    "inventory is too full",
    "nothing interesting happens",
    "you are dead",
];

fn explains(msg: &str) -> bool {
    let lower = msg.to_lowercase().replace('’', "'");
    EXPLAINING.iter().any(|p| lower.contains(p))
}

/// The messages of `current` that the previous run had not shown yet. Both lists are newest
/// first and capped, so the carried-over messages are a tail of `current` that starts
/// `previous`: the longest such tail is taken off.
fn new_messages<'a>(current: &'a [String], previous: &[String]) -> &'a [String] {
    for k in 0..current.len() {
        let tail = &current[k..];
        if tail.len() <= previous.len() && previous[..tail.len()] == *tail {
            return &current[..k];
        }
    }
    current
}

/// The facts of one run (`current`) given the avatar's previous run (`previous`, `None` for its
/// first or when the previous output showed no state).
pub fn measure_against(current: &RunOutput, previous: Option<&RunOutput>) -> RunFacts {
    let mut facts = RunFacts::default();
    let previous = previous.filter(|p| p.state_readable());
    facts.unmeasured = if !current.state_readable() {
        Some(UNMEASURED_CUT)
    } else if !current.xp_line_seen && previous.is_none() {
        Some(UNMEASURED_NO_STATE_BEFORE)
    } else {
        None
    };

    facts.xp = if current.xp_line_seen {
        // `XP: Attack +0` gains nothing: only what grew is a gain.
        current
            .xp
            .iter()
            .filter(|(_, gain)| **gain > 0.0)
            .map(|(skill, gain)| (skill.clone(), *gain))
            .collect()
    } else if let Some(prev) = previous
        && !current.skill_totals.is_empty()
        && !prev.skill_totals.is_empty()
    {
        current
            .skill_totals
            .iter()
            .filter_map(|(skill, now)| {
                let before = prev.skill_totals.get(skill)?;
                let gain = now - before;
                (gain > 0.0 && gain.is_finite()).then(|| (skill.clone(), gain))
            })
            .collect()
    } else {
        BTreeMap::new()
    };

    let fresh: &[String] = match previous {
        Some(prev) => new_messages(&current.messages, &prev.messages),
        None => &current.messages,
    };
    facts.new_messages = fresh.to_vec();
    let died_by_message = match previous {
        Some(_) => fresh.iter().any(|m| is_death_message(m)),
        // Nothing to tell a carried-over death message by: it counts only as the newest message,
        // with nothing the avatar did after it.
        None => current
            .messages
            .first()
            .is_some_and(|m| is_death_message(m)),
    };
    facts.died = current.dead || died_by_message;

    if let (Some(now), Some(before)) = (
        current.inventory.as_ref(),
        previous.and_then(|p| p.inventory.as_ref()),
    ) {
        for (name, &count) in &now.items {
            let was = match before.items.get(name) {
                Some(&was) => was,
                None if before.complete => 0,
                None => continue,
            };
            if count != was {
                facts
                    .items
                    .insert(name.clone(), f64::from(count) - f64::from(was));
            }
        }
        if now.complete {
            for (name, &was) in &before.items {
                if !now.items.contains_key(name) {
                    facts.items.insert(name.clone(), -f64::from(was));
                }
            }
        }
        if facts.died {
            // The spec counts a death's loss in backpack slots (a full backpack is 28), not in
            // items: 25 arrows lost are one slot. The drop in slots in use says it exactly; an
            // item gone from a complete list freed at least one slot, which is all a list tells
            // when a side printed no slot count.
            let names_lost = if now.complete {
                before
                    .items
                    .keys()
                    .filter(|name| !now.items.contains_key(*name))
                    .count() as u64
            } else {
                0
            };
            let slot_drop = match (before.slots, now.slots) {
                (Some(b), Some(n)) => u64::from(b.saturating_sub(n)),
                _ => 0,
            };
            facts.items_lost = u32::try_from(names_lost.max(slot_drop))
                .unwrap_or(u32::MAX)
                .min(BACKPACK_SLOTS);
        }
    }

    facts.stuck = current.blocking_ui.is_some() || fresh.iter().any(|m| says_cant_reach(m));

    if current.failed || current.error.is_some() {
        let error = current
            .error
            .clone()
            .or_else(|| {
                current
                    .execution_status
                    .as_ref()
                    .map(|status| format!("execution {status}"))
            })
            .unwrap_or_else(|| MISSING_ERROR_MESSAGE.to_owned());
        let cause = fresh.iter().find(|m| explains(m));
        // A game message says why best; without one, the SDK's own timeout says what the game
        // did not do (the error is often the script's generic "chopped nothing").
        facts.failure = Some(match (cause, &current.sdk_timeout) {
            (Some(message), _) => {
                truncate_chars(&format!("{error} — game: {message}"), FAILURE_MAX_CHARS).to_owned()
            }
            (None, Some(timeout)) if !error.contains(timeout.as_str()) => {
                truncate_chars(&format!("{error} — sdk: {timeout}"), FAILURE_MAX_CHARS).to_owned()
            }
            (None, _) => error,
        });
    }
    facts
}

/// The longest failure cause kept: the error line and one game message.
pub(crate) const FAILURE_MAX_CHARS: usize = ERROR_MAX_CHARS + 120;

fn truncate_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Removes ANSI escape sequences (CSI such as colours, OSC such as hyperlinks and titles, and
/// two- or three-character escapes). A malformed sequence stops at the first character that
/// cannot belong to it, so a stray ESC never swallows the rest of a line or the next line.
pub(crate) fn strip_ansi(s: &str) -> Cow<'_, str> {
    if !s.contains(['\u{1b}', '\u{9b}']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let csi = match c {
            '\u{9b}' => true,
            '\u{1b}' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    true
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    // String sequences end with BEL or ESC '\'; a line end also stops them.
                    while let Some(&n) = chars.peek() {
                        match n {
                            '\u{7}' => {
                                chars.next();
                                break;
                            }
                            '\u{1b}' => {
                                chars.next();
                                if chars.peek() == Some(&'\\') {
                                    chars.next();
                                }
                                break;
                            }
                            '\n' | '\r' => break,
                            _ => {
                                chars.next();
                            }
                        }
                    }
                    continue;
                }
                Some(&n) if (' '..='/').contains(&n) || ('0'..='~').contains(&n) => {
                    // nF escapes (ESC, intermediates, final) and two-character Fp/Fe/Fs escapes.
                    while chars.peek().is_some_and(|n| (' '..='/').contains(n)) {
                        chars.next();
                    }
                    if chars.peek().is_some_and(|n| ('0'..='~').contains(n)) {
                        chars.next();
                    }
                    continue;
                }
                _ => continue,
            },
            other => {
                out.push(other);
                false
            }
        };
        if csi {
            // Parameter bytes 0x30–0x3F, intermediates 0x20–0x2F, then one final byte 0x40–0x7E.
            while chars.peek().is_some_and(|n| ('0'..='?').contains(n)) {
                chars.next();
            }
            while chars.peek().is_some_and(|n| (' '..='/').contains(n)) {
                chars.next();
            }
            if chars.peek().is_some_and(|n| ('@'..='~').contains(n)) {
                chars.next();
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const RUNNER_SUCCESS: &str = "\
[Runner] Connecting to bot \"woody1\"...
[Runner] Connected to bot \"woody1\"
chopping tree 1
chopping tree 2

── Result ──
{
  \"logs\": 4
}

── State ──
Pos (3222, 3218) | HP 10/10
XP: Woodcutting +1,250, Firemaking +40
Inv 5/28: Bronze axe, Logs x4
NPCs: Man x3 (2t)
> You get some logs.
[Runner] Disconnecting bot \"woody1\"...
";

    const RUNNER_FAILURE: &str = "\
[Runner] Connected to bot \"miner\"

── Error ── BotDisconnectedError: Bot client disconnected during script execution
    at <anonymous> (/repo/sdk/runner.ts:412:45)
    at processTicksAndRejections (native:7:39)

── State ──
Pos (3285, 3365) lvl 0 | HP 3/10 | DEAD | fighting Giant rat
XP: none gained
Inv 1/28: Bronze pickaxe
[!] dialog open (3 options)
> Oh dear, you are dead!
";

    #[test]
    fn runner_success() {
        let r = parse_run_output(RUNNER_SUCCESS);
        assert!(r.xp_line_seen);
        assert_eq!(r.xp.get("Woodcutting"), Some(&1250.0));
        assert_eq!(r.xp.get("Firemaking"), Some(&40.0));
        assert_eq!(r.xp.len(), 2);
        assert!(!r.dead);
        assert_eq!(r.error, None);
        assert_eq!(r.execution_status, None);
        assert_eq!(r.elapsed_ms, None);
        assert!(!r.stuck_hint);
        assert!(r.state_seen);
        assert_eq!(r.blocking_ui, None);
    }

    #[test]
    fn runner_failure_dead_none_gained_dialog() {
        let r = parse_run_output(RUNNER_FAILURE);
        assert!(r.xp_line_seen);
        assert!(r.xp.is_empty());
        assert!(r.dead);
        assert_eq!(
            r.error.as_deref(),
            Some("BotDisconnectedError: Bot client disconnected during script execution")
        );
        assert!(r.stuck_hint);
        assert_eq!(r.blocking_ui.as_deref(), Some("dialog open (3 options)"));
        assert!(!r.cant_reach);
    }

    #[test]
    fn cant_reach_message_is_a_stuck_hint() {
        let out = "── State ──\nPos (3200, 3200) | HP 10/10\nXP: none gained\n\
                   Inv 0/28: (empty)\n> I can't reach that!\n> I can't reach that! (x3)\n";
        let r = parse_run_output(out);
        assert!(r.cant_reach);
        assert!(r.stuck_hint);
        assert_eq!(r.blocking_ui, None);
    }

    #[test]
    fn curly_apostrophe_and_cannot() {
        assert!(says_cant_reach(" I can’t reach that!"));
        assert!(says_cant_reach("You cannot reach that."));
        assert!(!says_cant_reach("You reach the tree."));
    }

    #[test]
    fn dead_only_as_its_own_segment() {
        let out = "── State ──\nPos (3200, 3200) | HP 10/10 | fighting DEAD Man\nXP: none gained\n";
        assert!(!parse_run_output(out).dead);
        let out = "── State ──\nPos (3200, 3200) | HP 0/10 | DEAD\n";
        assert!(parse_run_output(out).dead);
    }

    #[test]
    fn stale_state_suffix() {
        let out = "── State ──\nPos (3200, 3200) | HP 0/10 | DEAD | state 12s ago\nXP: Attack +4\n";
        let r = parse_run_output(out);
        assert!(r.dead);
        assert_eq!(r.xp.get("Attack"), Some(&4.0));
    }

    const MCP_NEW_SUCCESS: &str = "\
── Execution (success, 1234ms) ──

── Console ──
walking to bank
── fake header printed by the script ──

── Result ──
{
  \"ok\": true
}

── Terminal World State ──
# World State
Tick: 1200 | In Game: true | Updated: just now

## Player
Name: woody1 (Combat 3)
Position: (3222, 3218) Level 0

## Skills
Woodcutting: 15 (2,411 xp)

## Recent Messages
- You get some logs.
";

    #[test]
    fn execute_code_new_success() {
        let r = parse_run_output(MCP_NEW_SUCCESS);
        assert_eq!(r.execution_status.as_deref(), Some("success"));
        assert_eq!(r.elapsed_ms, Some(1234));
        assert_eq!(r.error, None);
        assert!(r.state_seen);
        assert!(!r.xp_line_seen);
        assert!(r.xp.is_empty());
        assert!(!r.dead);
        assert!(!r.stuck_hint);
    }

    const MCP_NEW_TIMEOUT: &str = "\
── Execution (timeout, 120003ms) ──

── Console ──
attacking cow
[warn] still attacking

── Error ──
Code execution timed out after 2 minute(s)

An SDK/BotActions call had already started when execution stopped.

── Terminal World State ──
# World State
Tick: 5 | In Game: true

## Player
Name: fighter (Combat 3)
Position: (3253, 3266) Level 0
Status: DEAD (life 2, death tick 4)

## Dialog
Options (select with sendClickDialog(N) using the N below, or clickDialogByText(\"...\")):
  1. Yes
  2. No

## Player Chat
- Zezima: I can't reach that lol

## Recent Messages
- Oh dear, you are dead!
- I can't reach that!
";

    #[test]
    fn execute_code_new_timeout() {
        let r = parse_run_output(MCP_NEW_TIMEOUT);
        assert_eq!(r.execution_status.as_deref(), Some("timeout"));
        assert_eq!(r.elapsed_ms, Some(120_003));
        assert_eq!(
            r.error.as_deref(),
            Some("Code execution timed out after 2 minute(s)")
        );
        assert!(r.dead);
        assert_eq!(r.blocking_ui.as_deref(), Some("Dialog"));
        assert!(r.cant_reach);
        assert!(r.stuck_hint);
    }

    #[test]
    fn player_chat_is_not_a_game_message() {
        let out = "── Terminal World State ──\n## Player Chat\n- Bob: I can't reach that\n\
                   ## Recent Messages\n- Welcome to RuneScape.\n";
        let r = parse_run_output(out);
        assert!(!r.cant_reach);
        assert!(!r.stuck_hint);
    }

    #[test]
    fn execute_code_old_form() {
        let out = "── Console ──\nhello\n\n── Error ──\nTypeError: bot.chop is not a function\n\n\
                   ── World State ──\n# World State\n## Player\nPosition: (3200, 3200) Level 0\n\
                   ## Shop\nTitle: Bob's Brilliant Axes\n## Interface (id: 270)\n";
        let r = parse_run_output(out);
        assert_eq!(r.execution_status, None);
        assert_eq!(r.elapsed_ms, None);
        assert_eq!(
            r.error.as_deref(),
            Some("TypeError: bot.chop is not a function")
        );
        assert!(r.state_seen);
        assert_eq!(r.blocking_ui.as_deref(), Some("Shop, Interface (id: 270)"));
        assert!(r.stuck_hint);
    }

    #[test]
    fn cancelled_and_canceled() {
        let r = parse_run_output(
            "── Execution (cancelled, 5ms) ──\n── Error ──\nCancelled by MCP client\n",
        );
        assert_eq!(r.execution_status.as_deref(), Some("cancelled"));
        assert_eq!(r.elapsed_ms, Some(5));
        let r = parse_run_output("── Execution (canceled, 5ms) ──\n");
        assert_eq!(r.execution_status.as_deref(), Some("cancelled"));
        let r = parse_run_output("── Execution (exploded, 5ms) ──\n");
        assert_eq!(r.execution_status, None);
        assert_eq!(r.elapsed_ms, Some(5));
        let r = parse_run_output("── Execution (error, 1,234ms) ──\n");
        assert_eq!(r.execution_status.as_deref(), Some("error"));
        assert_eq!(r.elapsed_ms, Some(1234));
    }

    #[test]
    fn crlf_output() {
        let r = parse_run_output(&RUNNER_FAILURE.replace('\n', "\r\n"));
        assert!(r.dead);
        assert!(r.xp_line_seen);
        assert_eq!(
            r.error.as_deref(),
            Some("BotDisconnectedError: Bot client disconnected during script execution")
        );
        let r = parse_run_output(&RUNNER_SUCCESS.replace('\n', "\r\n"));
        assert_eq!(r.xp.get("Woodcutting"), Some(&1250.0));
    }

    #[test]
    fn ansi_colours() {
        let out = "\x1b[1m── Execution (success, 88ms) ──\x1b[0m\n\
                   \x1b[2m── State ──\x1b[22m\n\
                   Pos (3200, 3200) | HP \x1b[31m0/10\x1b[39m | \x1b[31mDEAD\x1b[0m\n\
                   XP: \x1b[32mMining +1,005\x1b[0m\n\
                   \x1b]8;;https://example.com\x07link\x1b]8;;\x07\n";
        let r = parse_run_output(out);
        assert_eq!(r.execution_status.as_deref(), Some("success"));
        assert_eq!(r.elapsed_ms, Some(88));
        assert!(r.dead);
        assert_eq!(r.xp.get("Mining"), Some(&1005.0));
    }

    #[test]
    fn strip_ansi_forms() {
        assert_eq!(strip_ansi("plain"), Cow::Borrowed("plain"));
        assert_eq!(strip_ansi("\x1b[38;5;196mred\x1b[0m"), "red");
        assert_eq!(strip_ansi("\x1b(Bx"), "x");
        assert_eq!(strip_ansi("\x1b]0;title\x1b\\y"), "y");
        assert_eq!(strip_ansi("\u{9b}1mz"), "z");
        // A truncated sequence must not eat the following line.
        assert_eq!(strip_ansi("a\x1b[31\nb"), "a\nb");
        assert_eq!(strip_ansi("a\x1b]8;;http\nb"), "a\nb");
        assert_eq!(strip_ansi("end\x1b"), "end");
    }

    #[test]
    fn truncated_mid_state() {
        let out =
            "── Result ──\n42\n\n── State ──\nPos (3200, 3200) | HP 10/10\nXP: Woodcutting +1,2";
        let r = parse_run_output(out);
        assert!(r.xp_line_seen);
        // The number was cut; what is left still parses as a (smaller, but finite) gain.
        assert_eq!(r.xp.get("Woodcutting"), Some(&1.0));
        let out = "── Result ──\n42\n\n── State ──\nPos (3200, 32";
        let r = parse_run_output(out);
        assert!(r.state_seen);
        assert!(!r.xp_line_seen);
        assert!(!r.dead);
        // A header cut in half ends the section before it but is not a state section.
        let r = parse_run_output("── State ──\nXP: Attack +5\n── Sta");
        assert_eq!(r.xp.get("Attack"), Some(&5.0));
        let r = parse_run_output("── Error ──");
        assert_eq!(r.error.as_deref(), Some(MISSING_ERROR_MESSAGE));
    }

    #[test]
    fn last_state_section_wins() {
        let out = format!(
            "{RUNNER_FAILURE}\n{RUNNER_SUCCESS}\n── State ──\nPos (1, 2) | HP 1/10\nXP: Fishing +7\n"
        );
        let r = parse_run_output(&out);
        assert!(!r.dead);
        assert!(!r.stuck_hint);
        assert_eq!(r.xp.len(), 1);
        assert_eq!(r.xp.get("Fishing"), Some(&7.0));
        // The error of the earlier run is still the last error section in the capture.
        assert!(r.error.is_some());
        // And in the other order the dead state is the last one.
        let r = parse_run_output(&format!("{RUNNER_SUCCESS}{RUNNER_FAILURE}"));
        assert!(r.dead);
        assert!(r.xp.is_empty());
    }

    #[test]
    fn xp_numbers_and_names() {
        let xp = parse_xp_list(" Woodcutting +1,250, Firemaking +40");
        assert_eq!(xp.get("Woodcutting"), Some(&1250.0));
        assert_eq!(xp.get("Firemaking"), Some(&40.0));
        let xp = parse_xp_list(" Attack +1,234,567, Hitpoints +12.5,Defence +3");
        assert_eq!(xp.get("Attack"), Some(&1_234_567.0));
        assert_eq!(xp.get("Hitpoints"), Some(&12.5));
        assert_eq!(xp.get("Defence"), Some(&3.0));
        let xp = parse_xp_list(" Rune Crafting +1\u{202f}250, Stat18 +2, Slayer +1'000");
        assert_eq!(xp.get("Rune Crafting"), Some(&1250.0));
        assert_eq!(xp.get("Stat18"), Some(&2.0));
        assert_eq!(xp.get("Slayer"), Some(&1000.0));
        assert!(parse_xp_list(" none gained").is_empty());
        assert!(parse_xp_list(" +5, , garbage").is_empty());
        // A number that overflows f64 is dropped instead of becoming infinity.
        let huge = format!(" Magic +{}", "9".repeat(400));
        assert!(parse_xp_list(&huge).is_empty());
    }

    #[test]
    fn error_first_line_truncated_to_200_chars() {
        let long = "é".repeat(300);
        let r = parse_run_output(&format!("── Error ── Error: {long}\n    at x (y.ts:1:1)\n"));
        let e = r.error.expect("error");
        assert_eq!(e.chars().count(), ERROR_MAX_CHARS);
        assert!(e.starts_with("Error: é"));
    }

    #[test]
    fn empty_and_garbage() {
        assert_eq!(parse_run_output(""), RunOutput::default());
        assert_eq!(
            parse_run_output("just some logs\nXP: Attack +5\n"),
            RunOutput::default()
        );
        let r = parse_run_output("──────────\n── ──\n──");
        assert_eq!(r, RunOutput::default());
    }

    /// A real run of `../shared/data/rs-sdk/runs/` (see its README for what truly happened).
    fn real(name: &str) -> RunOutput {
        parse_run_output(&real_text(name))
    }

    /// The text of [`real`].
    fn real_text(name: &str) -> String {
        let dir = std::env::var_os("MINDRUNE_SHARED").map_or_else(
            || std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
            std::path::PathBuf::from,
        );
        let path = dir.join("data/rs-sdk/runs").join(format!("{name}.txt"));
        std::fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "cannot read {}: {err} (set MINDRUNE_SHARED)",
                path.display()
            )
        })
    }

    /// The real runs in the order the README gives (one bot's life; the runs not kept are
    /// left out, so each run's previous one is the last kept before it).
    const REAL_ORDER: &[&str] = &[
        "fork-chop-trees",
        "fork-broken",
        "later-chop-trees",
        "later-broken",
        "later-fight-man",
        "e2e-chop-1",
        "e2e-chop-6",
        "e2e-chop-7",
    ];

    /// Every real run's facts, each read against the one before it.
    fn replayed() -> BTreeMap<&'static str, RunFacts> {
        let mut previous: Option<RunOutput> = None;
        let mut facts = BTreeMap::new();
        for name in REAL_ORDER {
            let run = real(name);
            facts.insert(*name, measure_against(&run, previous.as_ref()));
            previous = Some(run);
        }
        facts
    }

    #[test]
    fn real_runs_fail_exactly_where_the_readme_says_whatever_the_exit_status() {
        let failed: Vec<&str> = REAL_ORDER
            .iter()
            .copied()
            .filter(|name| real(name).failed)
            .collect();
        // fork-broken exited 0 and e2e-chop-1 timed out: the output, not the exit, tells.
        assert_eq!(failed, ["fork-broken", "later-broken", "e2e-chop-1"]);
    }

    #[test]
    fn real_error_lines_name_the_error() {
        assert_eq!(
            real("fork-broken").error.as_deref(),
            Some(
                "TypeError: bot.chopOak is not a function. (In 'bot.chopOak()', 'bot.chopOak' is undefined)"
            )
        );
        assert_eq!(
            real("later-broken").error.as_deref(),
            Some(
                "TypeError: bot.chopOak is not a function. (In 'bot.chopOak()', 'bot.chopOak' is undefined)"
            )
        );
        assert_eq!(
            real("e2e-chop-1").error.as_deref(),
            Some("Error: Script timeout after 60000ms")
        );
    }

    #[test]
    fn a_timeout_keeps_the_game_message_that_explains_it() {
        let facts = replayed();
        assert_eq!(
            facts["e2e-chop-1"].failure.as_deref(),
            Some(
                "Error: Script timeout after 60000ms — game: You do not have an axe which you have the level to use."
            )
        );
        // A script error the game did not cause keeps the error line alone.
        assert_eq!(
            facts["later-broken"].failure.as_deref(),
            real("later-broken").error.as_deref()
        );
        assert_eq!(facts["fork-chop-trees"].failure, None);
        assert_eq!(facts["later-fight-man"].failure, None);
    }

    #[test]
    fn the_fork_runner_prints_skill_totals_and_a_full_inventory() {
        let run = real("fork-chop-trees");
        assert!(!run.xp_line_seen);
        assert_eq!(run.skill_totals.get("Woodcutting"), Some(&3125.0));
        assert_eq!(run.skill_totals.get("Hitpoints"), Some(&980.0));
        assert_eq!(run.skill_totals.len(), 21);
        let inv = run.inventory.expect("inventory");
        assert_eq!(inv.slots, Some(23));
        assert!(inv.complete);
        assert_eq!(inv.items.get("Logs"), Some(&5));
        assert_eq!(inv.items.get("Bronze arrow"), Some(&25));
        assert_eq!(inv.items.len(), 19);
        assert_eq!(
            run.messages.first().map(String::as_str),
            Some("Congratulations, you just advanced a woodcutting level.")
        );
        assert_eq!(run.messages.len(), 5);
    }

    #[test]
    fn the_later_runner_summary_inventory_may_be_cut() {
        let inv = real("later-broken").inventory.expect("inventory");
        assert_eq!(inv.slots, Some(23));
        assert!(!inv.complete);
        assert_eq!(inv.items.len(), 8);
        let inv = real("e2e-chop-7").inventory.expect("inventory");
        assert!(inv.complete);
        assert_eq!(inv.slots, Some(10));
        assert_eq!(inv.items.get("Logs"), Some(&6));
        // The repeat count is not part of the message.
        assert_eq!(
            real("e2e-chop-1").messages,
            [
                "You do not have an axe which you have the level to use.",
                "Oh dear you are dead!",
                "Welcome to RuneScape."
            ]
        );
    }

    #[test]
    fn xp_of_real_runs_meets_the_readme() {
        let facts = replayed();
        let xp = |name: &str| facts[name].xp.clone();
        let wc = |n: f64| BTreeMap::from([("Woodcutting".to_owned(), n)]);
        // The fork runner's first kept run has no earlier totals to compare with.
        assert!(xp("fork-chop-trees").is_empty());
        assert!(xp("fork-broken").is_empty());
        assert_eq!(xp("later-chop-trees"), wc(3125.0));
        assert!(xp("later-broken").is_empty());
        assert!(xp("later-fight-man").is_empty());
        assert!(xp("e2e-chop-1").is_empty());
        assert_eq!(xp("e2e-chop-6"), wc(1875.0));
        assert_eq!(xp("e2e-chop-7"), wc(3750.0));
    }

    #[test]
    fn fork_runner_xp_is_the_totals_against_the_previous_run() {
        // The bot's state before fork-chop-trees: the same dump with no Woodcutting XP yet.
        let text = std::fs::read_to_string(
            std::env::var_os("MINDRUNE_SHARED")
                .map_or_else(
                    || {
                        std::path::PathBuf::from(concat!(
                            env!("CARGO_MANIFEST_DIR"),
                            "/../../../shared"
                        ))
                    },
                    std::path::PathBuf::from,
                )
                .join("data/rs-sdk/runs/fork-chop-trees.txt"),
        )
        .expect("real run");
        let before = parse_run_output(
            &text
                .replace("Woodcutting: 20 (3,125 xp)", "Woodcutting: 1 (0 xp)")
                .replace("- Logs x5\n", ""),
        );
        let facts = measure_against(&real("fork-chop-trees"), Some(&before));
        assert_eq!(
            facts.xp,
            BTreeMap::from([("Woodcutting".to_owned(), 3125.0)])
        );
        assert_eq!(facts.items, BTreeMap::from([("Logs".to_owned(), 5.0)]));
        assert!(!facts.died);
    }

    #[test]
    fn items_of_real_runs_come_from_the_inventory_against_the_previous_run() {
        let facts = replayed();
        let items = |name: &str| facts[name].items.clone();
        assert!(items("fork-broken").is_empty());
        // later-chop-trees dropped its 5 logs and chopped 5 again; its list is cut (+11 more).
        assert!(items("later-chop-trees").is_empty());
        assert!(items("later-broken").is_empty());
        assert_eq!(
            items("e2e-chop-6"),
            BTreeMap::from([("Bronze axe".to_owned(), 1.0), ("Logs".to_owned(), 3.0)])
        );
        assert_eq!(
            items("e2e-chop-7"),
            BTreeMap::from([("Logs".to_owned(), 3.0)])
        );
        assert!(items("e2e-chop-1").is_empty());
    }

    #[test]
    fn only_a_death_in_this_run_counts_and_it_loses_20_items() {
        let facts = replayed();
        let died: Vec<&str> = REAL_ORDER
            .iter()
            .copied()
            .filter(|name| facts[name].died)
            .collect();
        assert_eq!(died, ["later-fight-man"]);
        assert_eq!(facts["later-fight-man"].items_lost, 20);
        // e2e-chop-1 still shows the death message of fight-man: carried over, not counted.
        assert_eq!(
            facts["e2e-chop-1"].new_messages,
            ["You do not have an axe which you have the level to use."]
        );
        assert_eq!(facts["e2e-chop-1"].items_lost, 0);
        for name in REAL_ORDER.iter().filter(|n| **n != "later-fight-man") {
            assert_eq!(facts[name].items_lost, 0, "{name}");
        }
    }

    #[test]
    fn a_death_loses_backpack_slots_not_stacked_items() {
        // live-fight-death: 26 slots in use before (the README's truth, a state not in the
        // folder: bank-stuck's inventory with three more slots filled), 3 after. Stacks of 25
        // arrows and 25 runes are one slot each: 23 slots, not the 94 items of the stacks.
        let mut before = real("live/live-bank-stuck");
        before.inventory.as_mut().expect("inventory").slots = Some(26);
        let facts = measure_against(&real("live/live-fight-death"), Some(&before));
        assert!(facts.died);
        assert_eq!(facts.items_lost, 23);
        assert!(facts.items.values().map(|n| -n).sum::<f64>() > 23.0);
    }

    #[test]
    fn an_output_cut_by_tail_has_no_verdict_and_no_readable_state() {
        let cut = real("live/live-chop-tail20");
        assert!(!cut.verdict_seen);
        assert!(!cut.state_readable());
        let facts = measure_against(&cut, Some(&real("live/live-chop-timed-out")));
        assert_eq!(facts.unmeasured, Some(UNMEASURED_CUT));
        assert!(facts.xp.is_empty() && facts.items.is_empty());
        // The same failure as live-chop-full-error, its Error section cut away: no verdict.
        let echo = real("live/live-chop-tail12-echo");
        assert!(!echo.verdict_seen && !echo.failed);
        assert!(real("live/live-chop-full-error").verdict_seen);
    }

    #[test]
    fn a_run_with_nothing_before_it_is_not_measured_rather_than_zero() {
        let facts = measure_against(&real("live/live-copy-first-run"), None);
        assert_eq!(facts.unmeasured, Some(UNMEASURED_NO_STATE_BEFORE));
        let facts = measure_against(
            &real("live/live-walk-timeout"),
            Some(&real("live/live-chop-full-error")),
        );
        assert_eq!(facts.unmeasured, None);
    }

    #[test]
    fn a_failed_execute_code_keeps_its_bare_error_line_as_the_cause() {
        let out = real("live/mcp-error");
        assert!(
            !out.failed,
            "the host's isError says it failed, not the text"
        );
        let facts = measure_against(&out, None);
        assert_eq!(
            facts.failure.as_deref(),
            Some(
                "Error: bot.chopOak is not a function. (In 'bot.chopOak()', 'bot.chopOak' is undefined)"
            )
        );
        // A log line that merely mentions an error is no cause.
        assert_eq!(parse_run_output("chopping...\nno Error: here").error, None);
    }

    #[test]
    fn a_look_s_bare_world_state_is_a_readable_state() {
        // `bun sdk/cli.ts woody` prints the World State the runner prints, without its header.
        let text = real_text("live/live-chop-timed-out");
        let look = &text[text.find("# World State").unwrap()..];
        let out = parse_run_output(look);
        assert!(out.state_readable() && !out.verdict_seen);
        assert_eq!(
            out.skill_totals,
            real("live/live-chop-timed-out").skill_totals
        );
        // Inside a runner's output the line is the State section's own first line.
        assert_eq!(
            parse_run_output(&text).skill_totals,
            real("live/live-chop-timed-out").skill_totals
        );
        assert!(!parse_run_output("chopping\n# World Statement").state_seen);
    }

    #[test]
    fn a_fork_run_s_world_state_gives_the_avatar_s_levels_position_and_hitpoints() {
        let out = real("fork-chop-trees");
        assert!(out.full_state());
        assert_eq!(out.skill_levels.len(), 21);
        assert_eq!(out.skill_levels["Woodcutting"], 20);
        assert_eq!(out.skill_levels["Hitpoints"], 10);
        assert_eq!(out.skill_levels["Attack"], 1);
        assert_eq!(out.skill_totals["Woodcutting"], 3125.0);
        assert_eq!(out.position, Some((3223, 3242, 0)));
        assert_eq!(out.hitpoints, Some((10, 10)));
        assert_eq!(out.player_name.as_deref(), Some("Woody"));
        // It wields nothing (`Weapon: Unarmed`): the formatter printed no `## Equipment`.
        assert!(out.equipment.is_empty());
        assert_eq!(out.inventory.as_ref().unwrap().items["Bronze axe"], 1);
    }

    #[test]
    fn a_live_run_s_world_state_gives_levels_after_a_death_and_its_kept_items() {
        let out = real("live/live-fight-death");
        assert!(out.full_state());
        assert_eq!(out.skill_levels["Attack"], 3);
        assert_eq!(out.skill_levels["Woodcutting"], 44);
        // The operator's `::setstat hitpoints 1` set the base level itself.
        assert_eq!(out.hitpoints, Some((1, 1)));
        assert_eq!(out.position, Some((3220, 3218, 0)));
        assert!(out.equipment.is_empty());
        let items = &out.inventory.as_ref().unwrap().items;
        assert_eq!(
            items.keys().map(String::as_str).collect::<Vec<_>>(),
            ["Bronze sword", "Shortbow", "Wooden shield"]
        );
        let bank = real("live/live-bank-stuck");
        assert!(bank.full_state());
        assert_eq!(bank.skill_levels["Woodcutting"], 40);
        assert_eq!(bank.player_name.as_deref(), Some("Woody"));
    }

    #[test]
    fn worn_items_and_a_drained_level_read_as_gear_and_the_base_level() {
        // What rs-sdk's formatter prints when something is worn and a level is drained.
        let text = real_text("fork-chop-trees")
            .replace("Hitpoints: 10 (980 xp)", "Hitpoints: 4/10 (980 xp)")
            .replace(
                "## Combat Style",
                "## Equipment\n- Bronze sword\n- Wooden shield\n\n## Combat Style",
            );
        let out = parse_run_output(&text);
        assert_eq!(out.skill_levels["Hitpoints"], 10);
        assert_eq!(out.hitpoints, Some((4, 10)));
        assert_eq!(out.equipment, ["Bronze sword", "Wooden shield"]);
        assert!(out.full_state());
    }

    #[test]
    fn a_summary_or_a_cut_dump_is_no_full_state() {
        // The later runner's compact `── State ──` has no levels.
        assert!(!real("later-chop-trees").full_state());
        assert!(real("later-chop-trees").skill_levels.is_empty());
        // `| tail -20` kept only the dump's last subsections.
        assert!(!real("live/live-chop-tail20").full_state());
        // A failed execute_code answers with its error alone.
        assert!(!real("live/mcp-error").full_state());
    }

    #[test]
    fn an_sdk_timeout_is_a_failed_run_s_detail_and_never_fails_a_run_that_returned() {
        // live-chop-timed-out: one chop timed out, the run returned its Result. Truly ok.
        let timed_out = real("live/live-chop-timed-out");
        assert_eq!(
            timed_out.sdk_timeout.as_deref(),
            Some("Timed out waiting for tree chop")
        );
        assert!(!timed_out.failed && timed_out.error.is_none());
        assert_eq!(measure_against(&timed_out, Some(&timed_out)).failure, None);
        // The same run had it thrown with nothing the game said: the SDK's timeout is why.
        let text = real_text("live/live-chop-timed-out");
        let thrown = text.replace(
            "── Result ──",
            "── Error ──\nchopped nothing\nError: chopped nothing\n\n── Returned ──",
        );
        let facts = measure_against(&parse_run_output(&thrown), Some(&timed_out));
        assert_eq!(
            facts.failure.as_deref(),
            Some("Error: chopped nothing — sdk: Timed out waiting for tree chop")
        );
        // A game message explains better: live-chop-full-error keeps it.
        let full = measure_against(&real("live/live-chop-full-error"), None);
        assert!(
            full.failure
                .as_deref()
                .unwrap()
                .ends_with("— game: Your inventory is too full to hold any more logs."),
            "{full:?}"
        );
    }

    #[test]
    fn commands_piped_through_tail_or_head_cut_their_output() {
        assert!(command_cuts_output(
            "timeout 90 bun bots/woody/chop-trees.ts 2>&1 | tail -20"
        ));
        assert!(command_cuts_output("bun x.ts | /usr/bin/head -n 5"));
        assert!(!command_cuts_output("bun bots/woody/chop-trees.ts 2>&1"));
        assert!(!command_cuts_output("bun bots/woody/tail.ts"));
    }

    #[test]
    fn without_a_previous_run_a_death_message_counts_only_as_the_newest() {
        assert!(measure_against(&real("later-fight-man"), None).died);
        assert!(!measure_against(&real("e2e-chop-1"), None).died);
    }

    #[test]
    fn a_blocking_dialog_is_stuck() {
        let facts = replayed();
        // fork-broken ended with the level-up dialog open ("Click here to continue").
        assert!(facts["fork-broken"].stuck);
        assert!(!facts["fork-chop-trees"].stuck);
        assert!(!facts["e2e-chop-7"].stuck);
        let out = parse_run_output(RUNNER_FAILURE);
        assert!(measure_against(&out, None).stuck);
    }

    #[test]
    fn an_error_before_the_last_result_is_an_earlier_run_of_a_loop() {
        let r = parse_run_output(&format!("{RUNNER_FAILURE}{RUNNER_SUCCESS}"));
        assert!(r.error.is_some());
        assert!(!r.failed);
        assert!(parse_run_output(&format!("{RUNNER_SUCCESS}{RUNNER_FAILURE}")).failed);
        assert!(parse_run_output("── Execution (timeout, 5ms) ──\n").failed);
        assert!(!parse_run_output("── Execution (success, 5ms) ──\n").failed);
    }

    #[test]
    fn new_messages_are_what_precedes_the_carried_over_tail() {
        let s = |v: &[&str]| v.iter().map(|m| (*m).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            new_messages(&s(&["a", "b", "c"]), &s(&["b", "c", "d"])),
            s(&["a"])
        );
        assert_eq!(new_messages(&s(&["a", "b"]), &s(&["a", "b"])), s(&[]));
        assert_eq!(new_messages(&s(&["x", "y"]), &s(&["a"])), s(&["x", "y"]));
        assert_eq!(new_messages(&s(&[]), &s(&["a"])), s(&[]));
    }

    fn section_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("── State ──".to_owned()),
            Just("── Terminal World State ──".to_owned()),
            Just("── Error ──".to_owned()),
            Just("── Error ── Error: boom".to_owned()),
            Just("── Result ──".to_owned()),
            Just("## Skills".to_owned()),
            Just("## Inventory (5 empty slots)".to_owned()),
            Just("## Recent Messages".to_owned()),
            Just("## Player".to_owned()),
            Just("## Equipment".to_owned()),
            "Name: [A-Za-z ]{0,10}( \\(Combat [0-9]{0,3}\\))?",
            "Position: \\(-?[0-9]{0,12}, ?-?[0-9]{0,12}\\)( Level -?[0-9]{0,3})?",
            "[A-Za-z]{1,8}: [0-9]{0,12}/?[0-9]{0,12} \\([0-9,]{0,12} xp\\)",
            "[A-Za-z]{1,8}: [0-9]{1,2} \\([0-9,]{0,12} xp\\)",
            "Inv [0-9]{0,3}/28: ([A-Za-z ]{0,8}( x[0-9]{1,3})?, ){0,4}(\\+[0-9] more)?",
            "- [A-Za-z ]{0,10}( x[0-9,]{0,12})?( \\[Wield\\])?",
            "> (Oh dear you are dead!|You do not have an axe|I can't reach that!)( \\(x[0-9]\\))?",
            "── Execution \\([a-z]{0,9}, [0-9,]{0,25}(ms)?\\) ──",
            "XP: ([A-Za-z ]{0,12} \\+[0-9,.'\u{202f} ]{0,30}(, )?){0,4}",
            "Pos \\([0-9, ]{0,12}\\)( \\| [A-Z]{0,5})*",
            "(> |\\[!\\] |- |## )[ -~]{0,30}",
            "\u{1b}\\[[0-9;]{0,6}[a-zA-Z]?",
            ".{0,40}",
        ]
    }

    proptest! {
        // No regression files: this crate's tests must not write into the source tree.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn xp_entries_are_what_the_entry_regex_finds(
            list in "([ ,+.0-9'’\u{a0}\u{202f}\u{2009}\t]|[A-Za-z]{1,3}|é){0,24}",
        ) {
            // The rule as it was written before `xp_entries`, compiled once for every case.
            static REGEX: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
                regex::Regex::new(
                    r"(?:^|,)\s*([^,+]+?)\s*\+\s*([0-9]+(?:[,'’\x{a0}\x{202f}\x{2009} ][0-9]{3})*(?:\.[0-9]+)?)",
                )
                .unwrap()
            });
            let by_regex: Vec<(&str, &str)> = REGEX
                .captures_iter(&list)
                .map(|caps| (caps.get(1).unwrap().as_str(), caps.get(2).unwrap().as_str()))
                .collect();
            let by_hand: Vec<(&str, &str)> = xp_entries(&list).collect();
            // The regex's name may start later (its `\s*` before the name); names are trimmed.
            let trimmed = |entries: Vec<(&str, &str)>| -> Vec<(String, String)> {
                entries
                    .into_iter()
                    .map(|(name, number)| (name.trim().to_owned(), number.to_owned()))
                    .collect()
            };
            prop_assert_eq!(trimmed(by_hand), trimmed(by_regex), "{:?}", list);
        }

        #[test]
        fn never_panics_on_arbitrary_text(s in any::<String>()) {
            let r = parse_run_output(&s);
            for v in r.xp.values() {
                prop_assert!(v.is_finite() && *v >= 0.0);
            }
            if let Some(e) = &r.error {
                prop_assert!(e.chars().count() <= ERROR_MAX_CHARS);
            }
        }

        #[test]
        fn measuring_against_any_previous_run_never_panics(
            a in proptest::collection::vec(section_strategy(), 0..20),
            b in proptest::collection::vec(section_strategy(), 0..20),
        ) {
            let current = parse_run_output(&a.join("\n"));
            let previous = parse_run_output(&b.join("\n"));
            let facts = measure_against(&current, Some(&previous));
            for v in facts.xp.values().chain(facts.items.values()) {
                prop_assert!(v.is_finite());
            }
            for v in facts.xp.values() {
                prop_assert!(*v > 0.0);
            }
            // A cause is kept for every error the output names (a passing run's earlier loop
            // error too: it is read only when the run failed).
            prop_assert_eq!(facts.failure.is_some(), current.failed || current.error.is_some());
            prop_assert!(facts.new_messages.len() <= current.messages.len());
        }

        #[test]
        fn never_panics_on_structured_text(
            parts in proptest::collection::vec(section_strategy(), 0..30),
            sep in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        ) {
            let s = parts.join(sep);
            let r = parse_run_output(&s);
            for v in r.xp.values() {
                prop_assert!(v.is_finite() && *v >= 0.0);
            }
            prop_assert_eq!(r.stuck_hint, r.blocking_ui.is_some() || r.cant_reach);
            // A level is only read beside its XP, and a full state always has levels.
            prop_assert!(r.skill_levels.keys().all(|k| r.skill_totals.contains_key(k)));
            prop_assert!(!r.full_state() || !r.skill_levels.is_empty());
            prop_assert!(r.equipment.len() <= MAX_EQUIPMENT);
            if let Some(status) = &r.execution_status {
                prop_assert!(["success", "error", "timeout", "cancelled"].contains(&status.as_str()));
            }
        }
    }
}
