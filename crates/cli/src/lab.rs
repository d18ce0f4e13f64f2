//! `mindrune lab`: the Skill Lab's runners (`design`, `build`, `improve`, `harness`) and its
//! native steps on their own (`inspect`, `validate`, `verify`).
//!
//! Exit status follows Runx: 0 when the run sealed and closed, 1 on a failure or refusal, 2
//! when an agent act needs an answer (the answers template is printed).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use mindrune_core::{
    LOCAL_DEVELOPMENT_SIGNATURE_PREFIX, RUNX_VERIFY_KID_ENV, RUNX_VERIFY_PUBLIC_KEY_ENV,
    SignatureCheck, VerifiedReceipt, VerifyOptions, check_receipt_integrity, public_key_base64,
    verify_receipt,
};
use mindrune_engine::Backend;
use mindrune_engine::{
    Agent, AnswersFile, LabTools, LocalSigningKey, NoAgent, PackageValidator, ReceiptStore, RunEnd,
    RunReport, RunRequest, Runner, RunnerAgent, SIGNING_KEY_ENV, StoreSealer, answers_template,
    inspect_workspace, run_request, throwaway_sealer, validate_package,
};
use mindrune_engine::{CaseProgress, CaseSealer, HarnessOptions};
use mindrune_engine::{WorkerCommand, serve_worker};
use serde_json::{Value, json};

use crate::progress::{Progress, Unit};

#[derive(Debug, Subcommand)]
pub(crate) enum LabCommand {
    /// Read-only catalog fit and architecture planning: stops at the digest-bound plan.
    Design(RunArgs),
    /// Create or update a package; it is written only after its staged copy passes parsing,
    /// inspection and harness replay.
    Build(RunArgs),
    /// Turn one receipt or harness failure into a bounded package update.
    Improve(RunArgs),
    /// Add fixtures to an existing package and replay its harness before committing them.
    Harness(RunArgs),
    /// Print the authoring context of a package target (files, metrics, base_digest, catalog).
    Inspect {
        #[command(flatten)]
        target: Target,
        /// Print the result as JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Validate a package: parse it, inspect it, and replay its harness when that is safe.
    Validate {
        #[command(flatten)]
        target: Target,
        /// Replay the harness even when the package's catalog says it executes (cli-tool
        /// runners run in a scratch copy with a scrubbed environment).
        #[arg(long)]
        allow_execute_harness: bool,
        /// Print the result as JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Internal: run one JavaScript module invocation read from stdin and print the answer.
    /// The harness spawns this with an empty environment, an empty working folder and a
    /// deadline, so a module looping inside a builtin is killed instead of hanging the lab.
    #[command(hide = true)]
    JsWorker,
    /// Check a receipt's digest, content id and signature against the local key.
    Verify {
        /// A receipt id (`sha256:…`), its file name, or a path to the file.
        receipt: String,
        /// The workspace root whose receipt store holds the receipt (defaults to the current
        /// folder).
        #[arg(long, default_value = ".", value_name = "DIR")]
        repo_root: PathBuf,
        /// Also accept Runx's unsigned `sig:<digest>` development receipts (they read
        /// `unverified`). Without a key under --repo-root, check what Runx's local-development
        /// mode checks: digest, content id and such a pseudo-signature.
        #[arg(long)]
        allow_local_development_signatures: bool,
        /// Print the result as JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct Target {
    /// The package folder, relative to the repo root.
    #[arg(long, value_name = "DIR")]
    target_dir: String,
    /// The workspace root (defaults to the current folder).
    #[arg(long, default_value = ".", value_name = "DIR")]
    repo_root: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    target: Target,
    /// The capability or improvement to deliver.
    #[arg(long)]
    objective: String,
    /// The identity of a newly requested package (build).
    #[arg(long)]
    package_name: Option<String>,
    /// Product, repository and operator constraints.
    #[arg(long)]
    project_context: Option<String>,
    /// The agent: a shell command that reads an act's JSON request on stdin and prints its
    /// JSON answer (`{"architecture_decision": …}` or `{"change_draft": …}`).
    #[arg(long, value_name = "CMD", conflicts_with_all = ["answers", "agent"])]
    agent_cmd: Option<String>,
    /// MindRune's own agent for the two acts: `claude` (Claude Code on PATH, read-only tools,
    /// the package's task contracts as its instructions).
    #[arg(long, value_name = "AGENT", conflicts_with = "answers", value_parser = ["claude"])]
    agent: Option<String>,
    /// What one agent act may cost, in US dollars (Claude Code's count).
    #[arg(long, default_value_t = 2.0, value_name = "USD")]
    agent_budget_usd: f64,
    /// Answers instead of an agent: `{"answers": {"agent_task.<task>.output": …}}`.
    #[arg(long, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// How long one agent act may take.
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    agent_timeout: u64,
    /// Improve: the receipt whose failure is being fixed.
    #[arg(long)]
    receipt_id: Option<String>,
    /// Improve: a summary of that receipt.
    #[arg(long)]
    receipt_summary: Option<String>,
    /// Improve and harness: sanitized harness output or an assertion failure.
    #[arg(long)]
    harness_output: Option<String>,
    /// Improve: a JSON failure packet (runx.review.receipt.v1) from a file.
    #[arg(long, value_name = "FILE")]
    failure_packet: Option<PathBuf>,
    /// Print the result as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn lab(command: LabCommand) -> anyhow::Result<ExitCode> {
    // Lab commands run package code as processes of our user: cli-tool runners, the agent
    // command. A process of the same user may read another's /proc/<pid>/environ (and mem)
    // unless that process is non-dumpable, so a child could read the operator's environment,
    // credentials included, through /proc/$PPID/environ. Non-dumpable puts our /proc entries
    // out of its reach; children get their own dumpable flag back at exec.
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .context("cannot make the lab process non-dumpable")?;
    match command {
        LabCommand::Design(args) => run(Runner::Design, args),
        LabCommand::Build(args) => run(Runner::Build, args),
        LabCommand::Improve(args) => run(Runner::Improve, args),
        LabCommand::Harness(args) => run(Runner::Harness, args),
        LabCommand::Inspect { target, json } => inspect_command(&target, json),
        LabCommand::JsWorker => js_worker(),
        LabCommand::Validate {
            target,
            allow_execute_harness,
            json,
        } => validate_command(&target, allow_execute_harness, json),
        LabCommand::Verify {
            receipt,
            repo_root,
            allow_local_development_signatures,
            json,
        } => verify_command(
            &receipt,
            &repo_root,
            allow_local_development_signatures,
            json,
        ),
    }
}

/// How the lab replays a harness: JavaScript modules run in `mindrune lab js-worker`
/// processes, the only way to stop a module looping inside a builtin at its wall limit. On a
/// terminal a bar shows which case of how many is replaying. The repository root is the
/// workspace Runx would run in (where it looks for local tool manifests).
fn harness_options(repo_root: &std::path::Path) -> anyhow::Result<HarnessOptions> {
    let program = std::env::current_exe()
        .context("cannot find the running mindrune program for the JavaScript worker")?;
    Ok(HarnessOptions {
        js_worker: Some(WorkerCommand {
            program,
            args: vec!["lab".to_owned(), "js-worker".to_owned()],
        }),
        on_case: Some(case_bar()),
        workspace_root: Some(
            std::fs::canonicalize(repo_root).unwrap_or_else(|_| repo_root.to_path_buf()),
        ),
        ..HarnessOptions::default()
    })
}

/// A bar over a replay's cases, made when the replay starts and cleared when it ends (a build
/// replays more than one staged copy, each with a bar of its own).
fn case_bar() -> CaseProgress {
    let bar: std::sync::Mutex<Option<Progress>> = std::sync::Mutex::new(None);
    CaseProgress::new(move |done, total, next| {
        let mut bar = bar.lock().unwrap_or_else(|e| e.into_inner());
        if done >= total {
            *bar = None;
            return;
        }
        // A case's name is the package's text: no control characters reach the terminal.
        let next: String = next
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        let message = format!("case {} of {total}: {next}", done + 1);
        let shown = bar.get_or_insert_with(|| Progress::bar(total as u64, &message, Unit::Cases));
        shown.reach(done as u64);
        shown.say(&message);
    })
}

/// The worker side of [`harness_options`]: one request on stdin, one answer on stdout.
fn js_worker() -> anyhow::Result<ExitCode> {
    let mut request = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut request)
        .context("cannot read the JavaScript worker's request")?;
    let mut out = std::io::stdout().lock();
    out.write_all(&serve_worker(&request))?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn print_json(value: &Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

fn inspect_command(target: &Target, json: bool) -> anyhow::Result<ExitCode> {
    let context = inspect_workspace(&target.repo_root, Some(&target.target_dir))?;
    if json {
        print_json(&context)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", target.target_dir)?;
    if context["target_exists"] == json!(false) {
        writeln!(out, "  absent (a build would create it)")?;
    }
    writeln!(
        out,
        "  base_digest  {}",
        context["base_digest"].as_str().unwrap_or("")
    )?;
    let metrics = &context["target_metrics"];
    writeln!(
        out,
        "  files        {} ({} bytes, {} executable lines)",
        metrics["files"], metrics["bytes"], metrics["executable_lines"]
    )?;
    if let Some(inspection) = context
        .get("target_inspection")
        .filter(|value| !value.is_null())
    {
        if inspection["status"] == "invalid" {
            writeln!(
                out,
                "  invalid      {}",
                inspection["error"].as_str().unwrap_or("")
            )?;
        } else {
            let runners: Vec<String> = inspection["runner_inspections"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|inspected| {
                    format!(
                        "{} ({})",
                        inspected["runner"]["name"].as_str().unwrap_or(""),
                        inspected["runner"]["type"].as_str().unwrap_or("")
                    )
                })
                .collect();
            writeln!(
                out,
                "  skill        {} {}",
                inspection["name"].as_str().unwrap_or(""),
                inspection["version"].as_str().unwrap_or("")
            )?;
            writeln!(out, "  runners      {}", runners.join(", "))?;
            writeln!(
                out,
                "  examples     {} for the default runner",
                inspection["examples"].as_array().map_or(0, Vec::len)
            )?;
        }
    }
    let skills = context["catalog_skills"].as_array().map_or(0, Vec::len);
    writeln!(
        out,
        "  catalog      {} in the workspace",
        crate::render::count(skills, "skill", "skills")
    )?;
    Ok(ExitCode::SUCCESS)
}

fn validate_command(target: &Target, allow: bool, json: bool) -> anyhow::Result<ExitCode> {
    let relative = mindrune_core::normalize_target_dir(&target.target_dir)?;
    mindrune_engine::finish_interrupted_apply(&target.repo_root, &relative)?;
    // Nested candidate checks (a skill-lab fixture that builds a package) seal into throwaway
    // stores; the package's own cases seal into the workspace's store, as Runx copies a
    // replay's verified receipts to `.runx/receipts`.
    let nested = throwaway_sealer;
    let options = harness_options(&target.repo_root)?;
    let mut tools = LabTools::new(&nested, &options);
    let repo_root = target.repo_root.clone();
    // Open the store and key once up front, so a problem with either is reported as such.
    StoreSealer::for_repo(&repo_root).map_err(anyhow::Error::msg)?;
    let case_sealers = move || -> Box<dyn CaseSealer> {
        match StoreSealer::for_repo(&repo_root) {
            Ok(sealer) => Box::new(sealer),
            Err(_) => throwaway_sealer(),
        }
    };
    let validation = validate_package(
        &target.repo_root.join(&relative),
        &target.target_dir,
        &relative,
        allow,
        &mut tools,
        &case_sealers,
        &options,
    )
    .map_err(anyhow::Error::msg)?;
    let verdict = validation["verdict"].as_str().unwrap_or("");
    if json {
        print_json(&validation)?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{relative}: {verdict}")?;
        writeln!(
            out,
            "  base_digest     {}",
            validation["base_digest"].as_str().unwrap_or("")
        )?;
        if let Some(error) = validation["inspect"]["error"].as_str() {
            writeln!(out, "  error           {error}")?;
        }
        let harness = &validation["harness"];
        if harness["attempted"] == json!(true) && harness.get("case_count").is_some() {
            writeln!(
                out,
                "  harness         {}: {}, {}",
                harness["status"].as_str().unwrap_or(""),
                crate::render::count(
                    harness["case_count"].as_u64().unwrap_or(0) as usize,
                    "case",
                    "cases"
                ),
                crate::render::count(
                    harness["assertion_error_count"].as_u64().unwrap_or(0) as usize,
                    "assertion error",
                    "assertion errors"
                )
            )?;
            for error in harness["assertion_errors"].as_array().into_iter().flatten() {
                writeln!(out, "    {}", error.as_str().unwrap_or(""))?;
            }
        } else if harness["attempted"] == json!(false) {
            writeln!(
                out,
                "  harness         not replayed: the package executes; pass --allow-execute-harness to replay it in a scratch copy"
            )?;
        }
    }
    Ok(if verdict == "validation_failed" {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn verify_command(
    reference: &str,
    repo_root: &Path,
    allow_dev: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let store = ReceiptStore::for_repo(repo_root)?;
    let stored = store.load(reference)?;
    let key = verifier_key(repo_root, allow_dev)?;
    let mut options = VerifyOptions::trusting(key.iter().map(|key| key.trusted_key()));
    options.allow_local_development_signatures = allow_dev;
    let outcome = VerifyOutcome::of(&stored.receipt, &options);
    let public_key = key
        .as_ref()
        .map(|key| public_key_base64(&key.verifying_key()));
    if json {
        let mut value = match &outcome.result {
            Ok(verified) => json!({
                "verdict": outcome.verdict, "id": verified.id, "digest": verified.digest,
                "kid": verified.kid, "disposition": verified.disposition,
                "reason_code": verified.reason_code, "path": stored.path,
            }),
            Err(err) => json!({"verdict": "invalid", "error": err, "path": stored.path}),
        };
        value["signature_mode"] = json!(outcome.signature_mode);
        value["runx_without_verifier"] = json!(outcome.runx_without_verifier);
        if let Some(reason) = &outcome.reason {
            value["reason"] = json!(reason);
        }
        if let (Some(public_key), "verified") = (&public_key, outcome.verdict) {
            value["public_key_base64"] = json!(public_key);
        }
        print_json(&value)?;
    } else {
        print_verify_text(&outcome, &stored.path, public_key.as_deref())?;
    }
    Ok(if outcome.result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The key `lab verify` checks a signature with: `MINDRUNE_LAB_SIGNING_KEY`, else the
/// repository's own. Verifying never makes a key: a fresh one could not have sealed anything.
/// Without one, `--allow-local-development-signatures` still checks what Runx's local-development
/// mode checks (digest, content id, a `sig:<digest>` pseudo-signature); otherwise it is refused.
fn verifier_key(repo_root: &Path, allow_dev: bool) -> anyhow::Result<Option<LocalSigningKey>> {
    let (key_path, named) = match std::env::var_os(SIGNING_KEY_ENV) {
        Some(path) if !path.is_empty() => (repo_root.join(path), true),
        _ => (LocalSigningKey::default_path(repo_root), false),
    };
    if allow_dev && !named && !key_path.exists() {
        return Ok(None);
    }
    let key = LocalSigningKey::load(&key_path).with_context(|| {
        format!(
            "receipts are verified with the key that sealed them, {} (set {} to name another; \
             pass --allow-local-development-signatures to check a Runx local-development \
             receipt's digest, content id and sig: pseudo-signature without a key)",
            key_path.display(),
            SIGNING_KEY_ENV
        )
    })?;
    Ok(Some(key))
}

/// What `lab verify` says of a receipt, in Runx's words.
struct VerifyOutcome {
    /// `verified` (an Ed25519 signature by the trusted key), `unverified` (digest and content
    /// id hold, the signature is Runx's `sig:` pseudo-signature, which names no signer: what
    /// `runx history` says of its own receipts without a verifier) or `invalid`.
    verdict: &'static str,
    result: Result<VerifiedReceipt, String>,
    /// Runx's `signature.mode`: `production` with a key, `local-development` without.
    signature_mode: &'static str,
    reason: Option<String>,
    /// How Runx marks this receipt without a verifier key (`runx history`, or `runx verify
    /// --allow-local-development-signatures`): its local-development check accepts only a
    /// `sig:` pseudo-signature, so a receipt the Lab sealed (an Ed25519 signature) reads
    /// `invalid` there (`signature_malformed`), and one Runx wrote locally `unverified`.
    runx_without_verifier: &'static str,
}

impl VerifyOutcome {
    fn of(stored: &Value, options: &VerifyOptions) -> Self {
        let keyless = options.trusted_keys.is_empty();
        let pseudo = stored["signature"]["value"]
            .as_str()
            .is_some_and(|value| value.starts_with(LOCAL_DEVELOPMENT_SIGNATURE_PREFIX));
        let mut dev_options = VerifyOptions::trusting([]);
        dev_options.allow_local_development_signatures = true;
        let runx_without_verifier = if pseudo && verify_receipt(stored, &dev_options).is_ok() {
            "unverified"
        } else {
            "invalid"
        };
        let signature_mode = if keyless {
            "local-development"
        } else {
            "production"
        };
        let mut result = verify_receipt(stored, options).map_err(|err| err.to_string());
        if keyless && !pseudo && result.is_err() && check_receipt_integrity(stored).is_ok() {
            result = Err(format!(
                "signature_malformed: without a verifier key only a local-development \
                 pseudo-signature (sig:<digest>) can be checked, as in Runx, and this receipt \
                 carries an Ed25519 signature; verify it with the key that sealed it ({})",
                SIGNING_KEY_ENV
            ));
        }
        let (verdict, reason) = match &result {
            Ok(verified) if verified.signature == SignatureCheck::LocalDevelopment => (
                "unverified",
                Some(format!(
                    "digest and content id hold; the signature is a local-development \
                     pseudo-signature (sig:{}), which names no signer (Runx: valid in \
                     local-development mode, `unverified` in its history)",
                    verified.digest
                )),
            ),
            Ok(_) => ("verified", None),
            Err(_) => ("invalid", None),
        };
        Self {
            verdict,
            result,
            signature_mode,
            reason,
            runx_without_verifier,
        }
    }
}

fn print_verify_text(
    outcome: &VerifyOutcome,
    path: &Path,
    public_key: Option<&str>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match &outcome.result {
        Ok(verified) => {
            writeln!(out, "{} {}", outcome.verdict, verified.id)?;
            writeln!(out, "  digest       {}", verified.digest)?;
            writeln!(out, "  signed by    {}", verified.kid)?;
            writeln!(
                out,
                "  seal         {} ({})",
                verified.disposition, verified.reason_code
            )?;
            if let Some(reason) = &outcome.reason {
                writeln!(out, "  signature    {reason}")?;
            }
            // The same check with Runx's own verifier, which takes the trusted key from
            // these two variables.
            if let (Some(public_key), "verified") = (public_key, outcome.verdict) {
                writeln!(
                    out,
                    "  runx verify  {}={} {}={} runx verify --receipt {} --json",
                    RUNX_VERIFY_KID_ENV,
                    verified.kid,
                    RUNX_VERIFY_PUBLIC_KEY_ENV,
                    public_key,
                    path.display()
                )?;
            }
        }
        Err(err) => writeln!(out, "invalid receipt {}: {err}", path.display())?,
    }
    writeln!(
        out,
        "  without a verifier key Runx marks it {}",
        outcome.runx_without_verifier
    )?;
    Ok(())
}

fn run(runner: Runner, args: RunArgs) -> anyhow::Result<ExitCode> {
    let relative = mindrune_core::normalize_target_dir(&args.target.target_dir)?;
    let repo_root = std::fs::canonicalize(&args.target.repo_root).with_context(|| {
        format!(
            "cannot open the workspace {}",
            args.target.repo_root.display()
        )
    })?;
    let failure_packet = match &args.failure_packet {
        Some(path) => Some(
            serde_json::from_str::<Value>(
                &std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?,
            )
            .with_context(|| format!("{} is not JSON", path.display()))?,
        ),
        None => None,
    };
    let request = RunRequest {
        repo_root: repo_root.clone(),
        target_dir: relative,
        objective: args.objective,
        package_name: args.package_name,
        project_context: args.project_context,
        receipt_id: args.receipt_id,
        receipt_summary: args.receipt_summary,
        harness_output: args.harness_output,
        failure_packet,
    };
    if !(args.agent_budget_usd.is_finite() && args.agent_budget_usd > 0.0) {
        anyhow::bail!(
            "--agent-budget-usd {} is not a positive amount of dollars",
            args.agent_budget_usd
        );
    }
    let backend = match (&args.agent_cmd, &args.agent) {
        (Some(command), _) => Some(Backend::Command {
            command: command.clone(),
        }),
        (None, Some(_)) => Some(Backend::claude_on_path().context(
            "--agent claude: Claude Code (`claude`) is not on PATH; install it (npm install -g @anthropic-ai/claude-code), or give --agent-cmd or --answers",
        )?),
        (None, None) => None,
    };
    let spent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut agent: Box<dyn Agent> = match (backend, &args.answers) {
        (Some(backend), _) => Box::new(RunnerAgent {
            backend,
            workdir: repo_root.clone(),
            timeout: Duration::from_secs(args.agent_timeout),
            max_usd: args.agent_budget_usd,
            spent: spent.clone(),
        }),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the answers file {}", path.display()))?;
            let value: Value = serde_json::from_str(&text)
                .with_context(|| format!("the answers file {} is not JSON", path.display()))?;
            Box::new(AnswersFile::new(value))
        }
        (None, None) => Box::new(NoAgent),
    };
    // The store and key first: a run that could not seal its receipt must not write anything.
    let sealer = StoreSealer::for_repo(&repo_root).map_err(anyhow::Error::msg)?;
    let sealers = throwaway_sealer;
    let options = harness_options(&repo_root)?;
    let mut validator = PackageValidator::new(&sealers, &options);
    let report = mindrune_engine::run_lab(runner, &request, agent.as_mut(), &mut validator);
    // What each agent act took, on stderr: the result on stdout stays the contract's.
    for line in spent.lock().map(|lines| lines.clone()).unwrap_or_default() {
        eprintln!("agent {line}");
    }
    let (receipt_id, receipt_path) = sealer
        .seal_request(&run_request(&report))
        .map_err(anyhow::Error::msg)?;

    let mut result = report.result_json();
    if let Some(object) = result.as_object_mut() {
        object.insert("receipt_id".into(), json!(receipt_id));
        object.insert(
            "steps".into(),
            json!(
                report
                    .steps
                    .iter()
                    .map(|s| json!({"step": s.step, "status": s.status}))
                    .collect::<Vec<_>>()
            ),
        );
    }
    if args.json {
        print_json(&result)?;
    } else {
        // The act's request is large (it carries the whole authoring context): keep it in a
        // file the operator can hand to an agent, rather than flooding the terminal.
        let request_file = match &report.end {
            RunEnd::NeedsAgent { act, request } => {
                let path = repo_root.join(".runx/authoring/requests").join(format!(
                    "{}-{}.json",
                    report.runner.as_str(),
                    act.task()
                ));
                std::fs::create_dir_all(path.parent().unwrap_or(&repo_root))
                    .with_context(|| format!("cannot create {}", path.display()))?;
                let bytes = serde_json::to_vec_pretty(request)?;
                mindrune_engine::write_atomic(&path, &bytes, 0o644)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                Some(path)
            }
            _ => None,
        };
        print_run(&report, &receipt_path, request_file.as_deref())?;
    }
    Ok(match &report.end {
        RunEnd::Planned | RunEnd::Applied(_) => ExitCode::SUCCESS,
        RunEnd::NeedsAgent { .. } => ExitCode::from(2),
        RunEnd::Failed { .. } => ExitCode::FAILURE,
    })
}

fn print_run(
    report: &RunReport,
    receipt_path: &Path,
    request_file: Option<&Path>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for step in &report.steps {
        let mark = match step.status {
            "sealed" => "✓",
            "needs_agent" => "…",
            _ => "✗",
        };
        let detail = step_detail(report, step.step);
        // A step with no detail (one that stopped) ends at its name, with no trailing blanks.
        let line = format!("{mark} {:<9} {detail}", step.step);
        writeln!(out, "{}", line.trim_end())?;
    }
    match &report.end {
        RunEnd::Planned => {
            writeln!(
                out,
                "design stops at the plan; run `mindrune lab build` with the same objective to write it"
            )?;
        }
        RunEnd::Applied(_) => {}
        RunEnd::NeedsAgent { act, .. } => {
            writeln!(out)?;
            writeln!(
                out,
                "The {} act needs an answer. Give one with --agent claude (Claude Code), --agent-cmd CMD (it receives the request on stdin) or --answers FILE shaped like:",
                act.task()
            )?;
            serde_json::to_writer_pretty(&mut out, &answers_template(*act))?;
            writeln!(out)?;
            if let Some(path) = request_file {
                writeln!(out, "request   {}", path.display())?;
            }
        }
        RunEnd::Failed { step, reason } => {
            writeln!(out, "{step} refused: {reason}")?;
            writeln!(out, "nothing was written to the target")?;
        }
    }
    writeln!(out, "receipt   {}", receipt_path.display())?;
    Ok(())
}

fn step_detail(report: &RunReport, step: &str) -> String {
    match step {
        "inspect" => report
            .authoring_context
            .as_ref()
            .map(|context| {
                format!(
                    "{} ({}, {})",
                    context["target_dir"].as_str().unwrap_or(""),
                    if context["target_exists"] == json!(true) {
                        "exists"
                    } else {
                        "absent"
                    },
                    context["base_digest"].as_str().unwrap_or("")
                )
            })
            .unwrap_or_default(),
        "architect" | "plan" => report
            .plan
            .as_ref()
            .map(|plan| {
                let disposition =
                    serde_json::to_value(plan.architecture.disposition).unwrap_or_default();
                if step == "plan" {
                    plan.plan_digest.to_string()
                } else {
                    disposition.as_str().unwrap_or("").to_owned()
                }
            })
            .unwrap_or_default(),
        "author" | "bind" => report
            .bundle
            .as_ref()
            .map(|bundle| {
                format!(
                    "{}: {}, {}",
                    bundle.decision.as_str(),
                    crate::render::count(bundle.writes.len(), "write", "writes"),
                    crate::render::count(bundle.deletes.len(), "delete", "deletes")
                )
            })
            .unwrap_or_default(),
        "apply" => match &report.end {
            RunEnd::Applied(result) => format!(
                "{} → {}",
                serde_json::to_value(result.verdict)
                    .unwrap_or_default()
                    .as_str()
                    .unwrap_or(""),
                result.package_digest
            ),
            _ => String::new(),
        },
        _ => String::new(),
    }
}
