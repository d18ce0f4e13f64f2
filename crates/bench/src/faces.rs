//! `mindrune bench lab` and `mindrune bench search`: the two newer faces. The Skill Lab's
//! package snapshot digest and `lab inspect` on a generated Runx package at the size limit,
//! beside reading the same files; and playbook search over a workspace of generated skills,
//! beside a naive scan of every `SKILL.md`. No DESIGN budget applies to either, so every row is
//! informational.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use mindrune_core::{SNAPSHOT_MAX_BYTES, SNAPSHOT_MAX_FILES};
use mindrune_core::{SkillFile, Step};
use mindrune_engine::Playbooks;
use mindrune_engine::inspect_workspace;
use mindrune_engine::snapshot_package;
use mindrune_engine::{Attendance, Created, Proposal, Suggester};
use serde_json::json;

use crate::measure::{Dice, median, percentile, time_it};
use crate::report::{Print, Row};

// --- lab --------------------------------------------------------------------------------------

/// Timed runs of each lab measurement; the median is reported.
const LAB_RUNS: usize = 9;
/// Where the package sits in the generated repository, and its name.
const LAB_TARGET: &str = "skills/ledger-reconcile";
const LAB_SKILL: &str = "ledger-reconcile";
/// What the fixtures prove: a match, an entry held for review, a refused export.
const FIXTURE_KINDS: [&str; 3] = ["match", "hold", "refuse"];

/// A package of the shape Runx packages have, near its limits: `SKILL.md`, `X.yaml`, a module,
/// fixtures under `fixtures/` and large data exports under `data/<year>/` that make up the
/// bytes. Answers the files written, in Runx's walk order, and their total size.
fn write_package(dir: &Path, files: usize, bytes: u64) -> anyhow::Result<(Vec<PathBuf>, u64)> {
    let mut dice = Dice(0x517c_c1b7_2722_0a95);
    let mut written: Vec<(String, Vec<u8>)> = vec![
        ("SKILL.md".into(), lab_manual().into_bytes()),
        ("X.yaml".into(), lab_profile().into_bytes()),
        ("reconcile.mjs".into(), lab_module().into_bytes()),
    ];
    // One data export per eight files; the rest are fixtures.
    let data_files = (files / 8).max(1);
    let fixtures = files - written.len() - data_files;
    for i in 0..fixtures {
        let kind = FIXTURE_KINDS[i % FIXTURE_KINDS.len()];
        written.push((
            format!("fixtures/{kind}-{i:03}.yaml"),
            lab_fixture(i, kind, &mut dice).into_bytes(),
        ));
    }
    let so_far: u64 = written.iter().map(|(_, b)| b.len() as u64).sum();
    anyhow::ensure!(
        so_far < bytes,
        "{files} files take {so_far} bytes before the data exports; give more bytes or fewer files"
    );
    let each = (bytes - so_far) / data_files as u64;
    for month in 0..data_files {
        let last = month + 1 == data_files;
        let size = if last {
            bytes - so_far - each * (data_files as u64 - 1)
        } else {
            each
        };
        written.push((
            format!(
                "data/{:04}/ledger-{:02}.csv",
                2020 + month / 12,
                month % 12 + 1
            ),
            ledger_export(size as usize, &mut dice),
        ));
    }
    let mut total = 0;
    for (path, contents) in &written {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().context("a package file has no folder")?)?;
        fs::write(&path, contents)?;
        total += contents.len() as u64;
    }
    // The walk's own order, from the walk, so the baseline reads exactly what it reads.
    let snapshot = snapshot_package(dir)?;
    anyhow::ensure!(
        snapshot.files.len() == files && snapshot.total_bytes() == total,
        "the package snapshots as {} files, {} bytes; {files} files, {total} bytes were written",
        snapshot.files.len(),
        snapshot.total_bytes()
    );
    let order = snapshot
        .files
        .iter()
        .map(|file| dir.join(&file.path))
        .collect();
    Ok((order, total))
}

fn lab_manual() -> String {
    let mut manual = format!(
        "---\nname: {LAB_SKILL}\ndescription: Reconcile a month of bank and ledger exports, match what agrees and hold every unmatched entry for a person to review.\n---\n\n# Ledger Reconcile\n\nMatch a month of bank statement lines against the ledger export of the same month, say\nwhich entries agree, and hold the rest with the reason each was not matched.\n"
    );
    let sections = [
        (
            "What this skill does",
            "It reads the month's exports under data/, pairs each bank line with at most one ledger entry by date, amount and reference, and returns three lists: matched, held and refused. A held entry names the nearest candidate and why it was not taken, so the reviewer starts from evidence rather than a blank screen.",
        ),
        (
            "When to use it",
            "Use it at month end, or whenever a ledger export is replaced, before anything is filed. Do not use it to post entries: it never writes to the ledger, and a run that finds nothing to match still returns a sealed receipt saying so.",
        ),
        (
            "Inputs",
            "month is the month to reconcile as YYYY-MM. tolerance is the largest difference in amount still counted as a match, in the ledger's currency; it defaults to one cent and may not exceed one unit, because larger tolerances hide real differences.",
        ),
        (
            "Refusals",
            "A month with no export is refused, not reported as empty. An export whose header differs from the agreed columns is refused naming the first column that differs. Amounts with more than two decimals are refused rather than rounded.",
        ),
        (
            "Outputs",
            "matched pairs each bank line with its ledger entry; held lists the entries with their nearest candidate and the reason; refused lists lines that could not be read, with their line number. The receipt records the digests of both exports.",
        ),
    ];
    for round in 0..8 {
        for (title, text) in sections {
            manual.push_str(&format!("\n## {title} ({})\n\n{text}\n", round + 1));
        }
    }
    manual
}

fn lab_profile() -> String {
    format!(
        "skill: {LAB_SKILL}\nversion: \"0.3.0\"\n\ncatalog:\n  kind: skill\n  audience: public\n  visibility: public\n  role: canonical\n\n\
harness:\n  cases:\n    - name: reconcile-smoke\n      runner: default\n      operator_journeys:\n        - mode: standalone\n          confusors: [extract, web-fetch]\n          request: Reconcile the January exports and hold what does not match.\n          expected_outcome: Return matched, held and refused lists in a sealed receipt.\n        - mode: composed\n          request: Reconcile January again after the bank re-sent its export.\n          expected_outcome: Only the re-sent lines are matched again.\n          prior_evidence: [the January receipt]\n          must_not_repeat: [matching lines already sealed]\n      inputs:\n        month: \"2020-01\"\n      expect:\n        status: sealed\n        receipt:\n          schema: runx.receipt.v1\n          state: sealed\n\n\
runners:\n  default:\n    default: true\n    type: cli-tool\n    command: node\n    args:\n      - reconcile.mjs\n    inputs:\n      month:\n        type: string\n        required: true\n        description: Month to reconcile, as YYYY-MM.\n      tolerance:\n        type: number\n        required: false\n        default: 0.01\n        description: Largest difference in amount still counted as a match.\n"
    )
}

fn lab_module() -> String {
    let mut module = String::from(
        "// Pairs bank lines with ledger entries by date, amount and reference.\nimport { readFileSync } from 'node:fs';\n\nconst [month, tolerance = '0.01'] = process.argv.slice(2);\n",
    );
    for i in 0..40 {
        module.push_str(&format!(
            "\nfunction rule{i}(bank, ledger) {{\n  // Rule {i}: the same amount within tolerance and a reference sharing {i} characters.\n  const close = Math.abs(bank.amount - ledger.amount) <= Number(tolerance);\n  return close && bank.reference.slice(0, {}) === ledger.reference.slice(0, {});\n}}\n",
            i % 12 + 1,
            i % 12 + 1
        ));
    }
    module.push_str("\nconsole.log(JSON.stringify({ month, rules: 40 }));\n");
    module
}

fn lab_fixture(i: usize, kind: &str, dice: &mut Dice) -> String {
    let status = if kind == "refuse" {
        "failure"
    } else {
        "sealed"
    };
    let mut lines = String::new();
    for k in 0..(4 + dice.below(10)) {
        lines.push_str(&format!(
            "      - {{ date: \"2020-{:02}-{:02}\", amount: {}.{:02}, reference: \"INV-{:05}\" }}\n",
            i % 12 + 1,
            k % 28 + 1,
            dice.below(5_000),
            dice.below(100),
            dice.below(100_000)
        ));
    }
    format!(
        "name: {kind}-{i:03}\nkind: skill\ntarget: ..\nrunner: default\noperator_journeys:\n  - mode: standalone\n    confusors: [extract]\n    request: Reconcile month {} and {kind} what the exports say.\n    expected_outcome: Return the {kind} list with a reason for every entry in a sealed receipt.\ninputs:\n  month: \"2020-{:02}\"\n  tolerance: 0.01\n  bank_lines:\n{lines}expect:\n  status: {status}\nmetadata:\n  source_case: {kind}-{i}\n  source: generated-for-bench\n",
        i % 12 + 1,
        i % 12 + 1
    )
}

/// A CSV ledger export of exactly `size` bytes.
fn ledger_export(size: usize, dice: &mut Dice) -> Vec<u8> {
    const PAYEES: [&str; 8] = [
        "Acme Supplies",
        "City Water",
        "Northwind Traders",
        "Payroll",
        "Rent",
        "Office Lunch",
        "Cloud Hosting",
        "Refund",
    ];
    let mut out = String::from("date,amount,currency,reference,payee,memo\n");
    while out.len() < size {
        out.push_str(&format!(
            "2020-{:02}-{:02},{}.{:02},EUR,INV-{:05},{},paid from the operating account\n",
            dice.below(12) + 1,
            dice.below(28) + 1,
            dice.below(50_000),
            dice.below(100),
            dice.below(100_000),
            dice.pick(&PAYEES)
        ));
    }
    let mut bytes = out.into_bytes();
    bytes.truncate(size);
    if let Some(last) = bytes.last_mut() {
        *last = b'\n';
    }
    bytes
}

/// `mindrune bench lab`: the package snapshot digest (MB/s) and `lab inspect` (ms) on a
/// generated package of `files` files and `mebibytes` MiB, beside reading the same files in
/// the walk's order without hashing, in the same run.
pub fn lab(files: usize, mebibytes: usize, print: Print) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(
        (8..=SNAPSHOT_MAX_FILES).contains(&files),
        "--files must be from 8 to {SNAPSHOT_MAX_FILES} (Runx's limit)"
    );
    let bytes = mebibytes as u64 * 1024 * 1024;
    anyhow::ensure!(
        mebibytes >= 1 && bytes <= SNAPSHOT_MAX_BYTES,
        "--mebibytes must be from 1 to {} (Runx's limit)",
        SNAPSHOT_MAX_BYTES / 1024 / 1024
    );
    let repo = tempfile::tempdir().context("cannot make a temporary folder")?;
    let package = repo.path().join(LAB_TARGET);
    let (order, total) = write_package(&package, files, bytes)?;

    // One untimed pass of each, so all three start from the same warm page cache.
    let first = snapshot_package(&package)?;
    let context = inspect_workspace(repo.path(), Some(LAB_TARGET))?;
    anyhow::ensure!(
        context["target_inspection"]["status"] == "ok",
        "the generated package does not inspect as valid: {}",
        context["target_inspection"]
    );
    anyhow::ensure!(
        context["base_digest"] == first.digest.as_str(),
        "lab inspect's base digest is not the snapshot's"
    );
    let read_all = || -> anyhow::Result<usize> {
        let mut read = 0;
        for path in &order {
            read += std::hint::black_box(fs::read(path)?).len();
        }
        Ok(read)
    };
    anyhow::ensure!(read_all()? as u64 == total, "the baseline read other bytes");

    let (mut digests, mut reads, mut inspects, mut hashes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..LAB_RUNS {
        let (took, snapshot) = time_it(|| Ok(snapshot_package(&package)?))?;
        anyhow::ensure!(snapshot.digest == first.digest, "the digest changed");
        digests.push(took);
        reads.push(time_it(read_all)?.0);
        inspects.push(time_it(|| Ok(inspect_workspace(repo.path(), Some(LAB_TARGET))?))?.0);
        // Detail only: hashing the bytes already in memory, no disk.
        hashes.push(
            time_it(|| {
                Ok(std::hint::black_box(mindrune_core::snapshot_digest(
                    &first.files,
                )))
            })?
            .0,
        );
    }
    let (digest, read, inspect, hash) = (
        median(digests),
        median(reads),
        median(inspects),
        median(hashes),
    );
    let mb_per_second = |d: Duration| total as f64 / 1e6 / d.as_secs_f64();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let size = format!("{files} files, {:.1} MiB", total as f64 / 1024.0 / 1024.0);
    let baseline = "read the same files, walk order";
    let rows = vec![
        Row::new("lab", "package snapshot digest", &size)
            .figure(mb_per_second(digest), "MB/s")
            .baseline(baseline, mb_per_second(read), "MB/s"),
        Row::new("lab", "lab inspect of the package", &size)
            .figure(ms(inspect), "ms")
            .baseline(baseline, ms(read), "ms"),
    ];
    let mut out = std::io::stdout().lock();
    match print {
        Print::Json => {
            serde_json::to_writer_pretty(
                &mut out,
                &json!({
                    "benchmark": "lab",
                    "files": files,
                    "bytes": total,
                    "runs": LAB_RUNS,
                    "digest": first.digest,
                    "snapshot_ms": ms(digest),
                    "snapshot_mb_per_second": mb_per_second(digest),
                    "inspect_ms": ms(inspect),
                    "baseline_read_ms": ms(read),
                    "baseline_read_mb_per_second": mb_per_second(read),
                    "hash_in_memory_ms": ms(hash),
                    "hash_in_memory_mb_per_second": mb_per_second(hash),
                    "rows": rows,
                }),
            )?;
            writeln!(out)?;
        }
        Print::Text => {
            writeln!(
                out,
                "mindrune bench lab: a generated Runx package, {files} files ({} fixtures, {} data exports), {total} bytes; medians of {LAB_RUNS} runs\n",
                files - 3 - (files / 8).max(1),
                (files / 8).max(1)
            )?;
            writeln!(
                out,
                "  snapshot digest (walk, read, hash)   {:>9.1} ms  {:>7.0} MB/s",
                ms(digest),
                mb_per_second(digest)
            )?;
            writeln!(
                out,
                "  lab inspect (snapshot, parse, catalog) {:>7.1} ms",
                ms(inspect)
            )?;
            writeln!(
                out,
                "  baseline: read the same files        {:>9.1} ms  {:>7.0} MB/s",
                ms(read),
                mb_per_second(read)
            )?;
            writeln!(
                out,
                "  hash only, bytes in memory           {:>9.1} ms  {:>7.0} MB/s\n",
                ms(hash),
                mb_per_second(hash)
            )?;
            drop(out);
            crate::report::print_rows(&rows, false)?;
        }
        Print::Quiet => {}
    }
    Ok(rows)
}

// --- search -----------------------------------------------------------------------------------

/// Rounds over [`QUERIES`]; every query is timed once per round, beside the naive scan.
const SEARCH_ROUNDS: usize = 10;
/// How many hits a search asks for, as `playbook_search` does by default.
const SEARCH_LIMIT: usize = 10;

/// What a person asks an assistant to look up, in their words.
const QUERIES: [&str; 12] = [
    "weekly report",
    "invoice reminder",
    "book travel flights",
    "calendar conflicts",
    "expense receipts spreadsheet",
    "backup photos",
    "tax documents",
    "reply to a customer email",
    "release notes",
    "doctor appointment",
    "grocery list",
    "quarterly review",
];

/// The runtime's tools: MindRune's own file tools and those `playbooks.toml` declares.
const MCP_FILE_TOOLS: [&str; 4] = ["workspace_read", "file_write", "file_copy", "file_move"];
const RUNTIME_TOOLS: [&str; 8] = [
    "shell",
    "web_search",
    "calendar_read",
    "calendar_write",
    "email_read",
    "email_send",
    "spreadsheet",
    "browser",
];

/// The errands skills are written for: (topic, what the work is about, where its notes live).
const TOPICS: [(&str, &str, &str); 40] = [
    (
        "weekly report",
        "the week's notes and finished tasks",
        "notes/weekly",
    ),
    (
        "invoice reminder",
        "unpaid invoices past their due date",
        "finance/invoices",
    ),
    (
        "travel booking",
        "flights, trains and hotels for a trip",
        "travel",
    ),
    (
        "meeting notes",
        "what was decided and who does what",
        "notes/meetings",
    ),
    (
        "calendar conflicts",
        "double-booked slots and travel time",
        "calendar",
    ),
    (
        "newsletter",
        "the monthly update to friends and family",
        "writing/newsletter",
    ),
    (
        "photo backup",
        "phone photos copied to the archive drive",
        "photos",
    ),
    (
        "tax documents",
        "statements and receipts for the tax return",
        "finance/tax",
    ),
    (
        "grocery list",
        "what the week's recipes need",
        "home/groceries",
    ),
    (
        "school forms",
        "permission slips and term dates",
        "family/school",
    ),
    (
        "insurance claim",
        "the claim form and its evidence",
        "home/insurance",
    ),
    (
        "rent payment",
        "the monthly transfer and its receipt",
        "finance/rent",
    ),
    (
        "doctor appointment",
        "booking, reminders and questions to ask",
        "health",
    ),
    (
        "car service",
        "the service interval and the garage booking",
        "home/car",
    ),
    (
        "gift ideas",
        "birthdays coming up and what people like",
        "family/gifts",
    ),
    (
        "project status",
        "open tasks, blockers and dates",
        "work/projects",
    ),
    (
        "code review",
        "open pull requests waiting for a reviewer",
        "work/reviews",
    ),
    (
        "release notes",
        "what changed since the last release",
        "work/releases",
    ),
    (
        "bug triage",
        "new issues sorted by how much they hurt",
        "work/bugs",
    ),
    (
        "customer email",
        "questions from customers that need an answer",
        "work/support",
    ),
    (
        "support ticket",
        "tickets waiting longer than a day",
        "work/support",
    ),
    (
        "podcast notes",
        "episodes worth keeping and why",
        "notes/podcasts",
    ),
    (
        "reading list",
        "articles saved for the weekend",
        "notes/reading",
    ),
    (
        "research summary",
        "sources on one question and what they agree on",
        "research",
    ),
    (
        "budget spreadsheet",
        "spending by category against the plan",
        "finance/budget",
    ),
    (
        "subscription renewals",
        "services that renew this month",
        "finance/subscriptions",
    ),
    (
        "home maintenance",
        "filters, gutters and the boiler check",
        "home/maintenance",
    ),
    (
        "garden watering",
        "the watering schedule and the weather",
        "home/garden",
    ),
    (
        "recipe plan",
        "dinners for the week and who cooks",
        "home/recipes",
    ),
    (
        "workout log",
        "sessions done and the next week's plan",
        "health/workouts",
    ),
    (
        "job application",
        "the letter, the CV and the deadline",
        "work/applications",
    ),
    (
        "contract renewal",
        "contracts ending in the next quarter",
        "work/contracts",
    ),
    (
        "vendor quote",
        "three quotes compared on price and terms",
        "work/vendors",
    ),
    (
        "board meeting",
        "the pack, the minutes and the actions",
        "work/board",
    ),
    (
        "quarterly review",
        "goals, results and the slides for the review",
        "work/quarterly",
    ),
    (
        "onboarding checklist",
        "accounts, equipment and first-week meetings",
        "work/onboarding",
    ),
    (
        "inventory count",
        "stock on the shelves against the orders",
        "shop/inventory",
    ),
    (
        "expense receipts",
        "receipts photographed and filed by month",
        "finance/expenses",
    ),
    (
        "birthday party",
        "guests, food and the booking",
        "family/party",
    ),
    (
        "flight check-in",
        "check-in windows and boarding passes",
        "travel/flights",
    ),
];

const VERBS: [&str; 12] = [
    "draft",
    "summarize",
    "file",
    "check",
    "prepare",
    "send",
    "update",
    "collect",
    "reconcile",
    "archive",
    "plan",
    "remind",
];

/// Skill `i`'s tools, in order: four picked by the digits of `i` in base 12, after a
/// `workspace_read` for even `i`. Distinct for every `i` below 12⁴, as the door insists.
fn tool_sequence(i: usize) -> Vec<&'static str> {
    let tools: Vec<&str> = MCP_FILE_TOOLS
        .iter()
        .chain(&RUNTIME_TOOLS)
        .copied()
        .collect();
    let mut sequence = Vec::new();
    if i.is_multiple_of(2) {
        sequence.push("workspace_read");
    }
    let mut rest = i;
    for _ in 0..4 {
        sequence.push(tools[rest % tools.len()]);
        rest /= tools.len();
    }
    sequence
}

fn step_text(tool: &str, topic: &str, notes: &str) -> String {
    match tool {
        "workspace_read" => format!("Read the {topic} notes in {notes}/"),
        "file_write" => format!("Write the {topic} summary to {notes}/summary.md"),
        "file_copy" => format!("Copy last time's {topic} file as a starting point"),
        "file_move" => format!("Move the finished {topic} file to {notes}/done/"),
        "shell" => format!("List what changed in {notes}/ since the last run"),
        "web_search" => format!("Look up anything the {topic} needs that the notes lack"),
        "calendar_read" => format!("Check the calendar for dates the {topic} depends on"),
        "calendar_write" => format!("Put the {topic} follow-up in the calendar"),
        "email_read" => format!("Read the emails about the {topic} since the last run"),
        "email_send" => format!("Send the {topic} to the people who asked for it"),
        "spreadsheet" => format!("Update the {topic} sheet with the new figures"),
        _ => format!("Open the {topic} page and note what it says"),
    }
}

/// Skill `i` as an assistant would propose it: every field filled, a procedure of tools
/// distinct from every other skill's, and a body of a few paragraphs.
fn proposed_skill(i: usize, dice: &mut Dice) -> (String, SkillFile) {
    let (topic, about, notes) = TOPICS[i % TOPICS.len()];
    let verb = VERBS[(i / TOPICS.len()) % VERBS.len()];
    let name = format!("{verb}-{}-{i:04}", topic.replace(' ', "-"));
    let tools = tool_sequence(i);
    let steps = tools
        .iter()
        .map(|tool| Step {
            action: step_text(tool, topic, notes),
            tool: Some((*tool).to_string()),
            other_keys: Vec::new(),
            line: 0,
        })
        .collect();
    let forbidden = RUNTIME_TOOLS
        .iter()
        .find(|tool| !tools.contains(tool))
        .map(|tool| vec![(*tool).to_string()]);
    let other = TOPICS[dice.below(TOPICS.len())].0;
    let mut body = format!(
        "# {verb} the {topic}\n\nThis skill covers {about}. It came out of doing it by hand a few times: the steps above are the ones that mattered, in the order that avoided redoing work.\n\n"
    );
    for paragraph in 0..(2 + dice.below(3)) {
        body.push_str(&format!(
            "## Note {}\n\nStart from {notes}/ and keep the {topic} short: the human reads it on a phone. If something about the {other} turns up, leave it for that skill rather than mixing the two. Last time the {topic} took {} minutes; most of it went on {}, so do that part first and ask before guessing.\n\n",
            paragraph + 1,
            5 + dice.below(40),
            about
        ));
    }
    let skill = SkillFile {
        trigger: Some(format!("the human asks to {verb} the {topic}")),
        use_when: Some(format!("{about} need attention")),
        not_when: Some(format!("the human only wants to talk about the {other}")),
        preconditions: Some(vec![format!(
            "{notes}/ exists and holds this period's files"
        )]),
        steps: Some(steps),
        forbidden_tools: forbidden,
        expected_result: Some(format!("{notes}/summary.md is up to date")),
        failure_modes: Some(vec![
            format!("last period's {topic} gets included"),
            "a file that is still being edited is read half-written".to_string(),
        ]),
        evidence: Some(vec![format!(
            "the {topic} done by hand on 2026-{:02}-{:02}",
            dice.below(12) + 1,
            dice.below(28) + 1
        )]),
        body,
        ..SkillFile::default()
    };
    (name, skill)
}

/// A fresh workspace as `playbook init` leaves it (the shipped permissions, so every card
/// waits for the human), with `skills` skills made through the door and approved, as the
/// playbook tests make them. Answers the opened workspace and how long the skills took.
fn search_workspace(home: &Path, skills: usize) -> anyhow::Result<(Playbooks, Duration)> {
    let workspace = home.join("workspace");
    fs::create_dir_all(&workspace)?;
    let tools: Vec<String> = RUNTIME_TOOLS.iter().map(|t| format!("{t:?}")).collect();
    fs::write(
        workspace.join(mindrune_engine::CONFIG_FILE),
        format!(
            "tools = [{}]\nhome = {:?}\n",
            tools.join(", "),
            home.display().to_string()
        ),
    )?;
    fs::write(
        workspace.join(mindrune_engine::PERMISSIONS_FILE),
        mindrune_core::Permissions::shipped_default().render(),
    )?;
    let playbooks = Playbooks::open(&workspace)?;
    let mut dice = Dice(0x2545_f491_4f6c_dd1d);
    let began = Instant::now();
    for i in 0..skills {
        let (name, skill) = proposed_skill(i, &mut dice);
        let proposal = Proposal {
            name: name.clone(),
            skill,
            suggested_by: Suggester::Assistant,
            accepted_as_done: false,
        };
        match playbooks
            .create(&proposal, Attendance::Attended)
            .with_context(|| format!("skill_create {name}"))?
        {
            Created::Filed {
                card,
                answered: None,
            } => {
                playbooks
                    .approve(card)
                    .with_context(|| format!("approving {name}"))?;
            }
            other => anyhow::bail!("skill_create {name} did not file a card: {other:?}"),
        }
    }
    Ok((playbooks, began.elapsed()))
}

/// The baseline: every live `SKILL.md` read, lowercased, and searched for each query word as a
/// substring; the skills with the most words found, at most `limit`.
fn naive_search(skills_dir: &Path, query: &str, limit: usize) -> anyhow::Result<Vec<String>> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut found = Vec::new();
    for entry in fs::read_dir(skills_dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let text = match fs::read_to_string(entry.path().join("SKILL.md")) {
            Ok(text) => text.to_lowercase(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(err.into()),
        };
        let hits = words.iter().filter(|word| text.contains(*word)).count();
        if hits > 0 {
            found.push((hits, entry.file_name().to_string_lossy().into_owned()));
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(found
        .into_iter()
        .take(limit)
        .map(|(_, name)| name)
        .collect())
}

/// `mindrune bench search`: `playbook_search` over a workspace of `skills` skills, median and
/// p99 latency over [`QUERIES`], beside a naive scan of every `SKILL.md` in the same run.
/// The search's time by the query's length, up to its cap ([`MAX_QUERY_BYTES`], 64 distinct
/// words repeated), each beside a 64-byte query of the same words (the ratio grows with the
/// length, no faster), and a 1 MB query, refused before any work.
///
/// [`MAX_QUERY_BYTES`]: mindrune_engine::MAX_QUERY_BYTES
fn query_lengths(playbooks: &mindrune_engine::Playbooks) -> anyhow::Result<Vec<Row>> {
    use mindrune_engine::{MAX_QUERY_BYTES, MAX_QUERY_WORDS};
    let words: Vec<String> = (0..MAX_QUERY_WORDS)
        .map(|i| {
            let topic = TOPICS[i % TOPICS.len()].0;
            format!("{}{i}", topic.split(' ').next().unwrap_or("w"))
        })
        .collect();
    let text = words.join(" ");
    let query = |bytes: usize| {
        let mut query = text.repeat(bytes / text.len() + 1);
        query.truncate(bytes);
        query.truncate(query.rfind(' ').unwrap_or(0));
        query
    };
    let median_ms = |query: &str| -> anyhow::Result<f64> {
        let mut took = Vec::new();
        for _ in 0..SEARCH_ROUNDS {
            let (elapsed, _) = time_it(|| Ok(playbooks.search(query, SEARCH_LIMIT)?))?;
            took.push(elapsed);
        }
        took.sort();
        Ok(percentile(&took, 0.5).as_secs_f64() * 1e3)
    };
    let short = median_ms(&query(64))?;
    let mut rows = Vec::new();
    for bytes in [256, 1024, MAX_QUERY_BYTES] {
        rows.push(
            Row::new(
                "search",
                "a query of this length, median",
                format!("{bytes} bytes"),
            )
            .figure(median_ms(&query(bytes))?, "ms")
            .baseline("a 64-byte query", short, "ms"),
        );
    }
    let huge = "report ".repeat(150_000);
    let (refused, result) = time_it(|| Ok(playbooks.search(&huge, SEARCH_LIMIT).is_err()))?;
    anyhow::ensure!(result, "a 1 MB query was not refused");
    rows.push(
        Row::new("search", "a 1 MB query, refused", "1050000 bytes")
            .figure(refused.as_secs_f64() * 1e3, "ms")
            .baseline("a 64-byte query", short, "ms"),
    );
    Ok(rows)
}

pub fn search(skills: usize, print: Print) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(
        (TOPICS.len()..=20_000).contains(&skills),
        "--skills must be from {} to 20000",
        TOPICS.len()
    );
    let home = tempfile::tempdir().context("cannot make a temporary folder")?;
    let home_path = home.path().canonicalize()?;
    let (playbooks, created) = search_workspace(&home_path, skills)?;
    let skills_dir = mindrune_engine::skills_dir(playbooks.workspace());
    let mut sizes = Vec::new();
    for entry in fs::read_dir(&skills_dir)? {
        if let Ok(meta) = fs::metadata(entry?.path().join("SKILL.md")) {
            sizes.push(meta.len());
        }
    }
    anyhow::ensure!(
        sizes.len() == skills,
        "{} live skills on disk, {skills} made",
        sizes.len()
    );
    sizes.sort_unstable();
    let skill_bytes: u64 = sizes.iter().sum();

    // The first search indexes every skill; the timed ones find the index in step.
    let (first, _) = time_it(|| Ok(playbooks.search(QUERIES[0], SEARCH_LIMIT)?))?;
    let (mut found, mut naive_found) = (0, 0);
    let (mut latencies, mut naive_latencies) = (Vec::new(), Vec::new());
    for _ in 0..SEARCH_ROUNDS {
        for query in QUERIES {
            let (took, hits) = time_it(|| Ok(playbooks.search(query, SEARCH_LIMIT)?))?;
            anyhow::ensure!(!hits.is_empty(), "search found nothing for {query:?}");
            found += hits.len();
            latencies.push(took);
            let (took, hits) = time_it(|| naive_search(&skills_dir, query, SEARCH_LIMIT))?;
            naive_found += hits.len();
            naive_latencies.push(took);
        }
    }
    latencies.sort();
    naive_latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (p50, p99) = (percentile(&latencies, 0.5), percentile(&latencies, 0.99));
    let (naive_p50, naive_p99) = (
        percentile(&naive_latencies, 0.5),
        percentile(&naive_latencies, 0.99),
    );
    let size = format!("{skills} skills, {} queries", QUERIES.len());
    let baseline = "read every SKILL.md, substring match";
    let by_length = query_lengths(&playbooks)?;
    let rows = vec![
        Row::new("search", "find a playbook, median", &size)
            .figure(ms(p50), "ms")
            .baseline(baseline, ms(naive_p50), "ms"),
        Row::new("search", "find a playbook, p99", &size)
            .figure(ms(p99), "ms")
            .baseline(baseline, ms(naive_p99), "ms"),
    ];
    let rows = rows.into_iter().chain(by_length).collect::<Vec<_>>();
    let mut out = std::io::stdout().lock();
    match print {
        Print::Json => {
            serde_json::to_writer_pretty(
                &mut out,
                &json!({
                    "benchmark": "search",
                    "skills": skills,
                    "queries": QUERIES,
                    "searches": latencies.len(),
                    "limit": SEARCH_LIMIT,
                    "skill_bytes": skill_bytes,
                    "smallest_skill_bytes": sizes[0],
                    "largest_skill_bytes": sizes[sizes.len() - 1],
                    "create_and_approve_ms": ms(created),
                    "first_search_ms": ms(first),
                    "p50_ms": ms(p50),
                    "p99_ms": ms(p99),
                    "hits": found,
                    "baseline_naive_p50_ms": ms(naive_p50),
                    "baseline_naive_p99_ms": ms(naive_p99),
                    "baseline_hits": naive_found,
                    "rows": rows,
                }),
            )?;
            writeln!(out)?;
        }
        Print::Text => {
            writeln!(
                out,
                "mindrune bench search: {skills} skills ({} KB, {}–{} bytes each) made through the door and approved in {:.1} s; {} searches ({SEARCH_ROUNDS} rounds of {} queries, limit {SEARCH_LIMIT})\n",
                skill_bytes / 1024,
                sizes[0],
                sizes[sizes.len() - 1],
                created.as_secs_f64(),
                latencies.len(),
                QUERIES.len()
            )?;
            writeln!(
                out,
                "  first search (indexes every skill)  {:>9.1} ms",
                ms(first)
            )?;
            writeln!(
                out,
                "  search, p50 / p99                   {:>9.2} ms / {:.2} ms  ({found} hits)",
                ms(p50),
                ms(p99)
            )?;
            writeln!(
                out,
                "  baseline: naive scan, p50 / p99     {:>9.2} ms / {:.2} ms  ({naive_found} hits)\n",
                ms(naive_p50),
                ms(naive_p99)
            )?;
            drop(out);
            crate::report::print_rows(&rows, false)?;
        }
        Print::Quiet => {}
    }
    Ok(rows)
}
