//! Fixtures and graph files as Runx reads them: first its text scan for ambiguous YAML
//! (`runx-parser/src/yaml.rs` `assert_yaml_parity_subset`), then serde_norway; a fixture into
//! `RawHarnessFixture` (`runx-parser/src/harness_fixture.rs`) and `validate_fixture`'s first
//! checks, a graph file into a mapping (`graph/validate.rs` `parse_graph_yaml`). The Lab's own fixture checks
//! ([`super::fixtures`]) say where and what to do; this says what Runx says, in its words, and
//! decides what Runx decides where serde is looser than a field check (a YAML scalar such as
//! `target: 3` is a string to serde).
//!
//! Every type keeps Runx's name and field order, because serde's refusals name them (`expected
//! struct RawHarnessExpectation`, `expected one of `name`, `kind`, …``).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::{MAX_SETUP_RECEIPTS, RETIRED_RECEIPT_FIELDS};
// Runx's `ClosureDisposition`: the receipt's own closed list, read here as a fixture expects it.
use crate::runx::receipt::Disposition;

/// Runx's `JsonObject`.
type JsonObject = BTreeMap<String, Value>;

/// The words Runx puts before a fixture's refusal (its package error's message).
pub(super) const INVALID_FIXTURE: &str = "invalid harness fixture: ";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum HarnessFixtureKind {
    Skill,
    Graph,
    Mcp,
    A2a,
    Agent,
    #[serde(rename = "agent_task")]
    AgentStep,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum HarnessExpectedStatus {
    Sealed,
    Failure,
    NeedsAgent,
    PolicyDenied,
    Escalated,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OperatorJourneyMode {
    Standalone,
    Composed,
    Refusal,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "its fields are read only by serde, for Runx's checks"
)]
struct OperatorJourneyClaim {
    mode: OperatorJourneyMode,
    request: String,
    expected_outcome: String,
    #[serde(default)]
    exercises_runner: Option<String>,
    #[serde(default)]
    confusors: Vec<String>,
    #[serde(default)]
    prior_evidence: Vec<String>,
    #[serde(default)]
    must_not_repeat: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HarnessSetup {
    #[serde(default)]
    receipts: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "its fields are read only by serde, for Runx's checks"
)]
struct HarnessJsonExpectation {
    exact: Option<Value>,
    subset: Option<Value>,
}

#[derive(Debug, Deserialize)]
enum ReceiptSchema {
    #[serde(rename = "runx.receipt.v1")]
    V1,
}

fn default_receipt_schema() -> ReceiptSchema {
    ReceiptSchema::V1
}

#[derive(Debug, Deserialize)]
#[allow(
    dead_code,
    reason = "its fields are read only by serde, for Runx's checks"
)]
struct RawReceiptExpectation {
    #[serde(default = "default_receipt_schema")]
    schema: ReceiptSchema,
    body_digest: Option<String>,
    receipt_id: Option<String>,
    receipt_digest: Option<String>,
    harness_id: Option<String>,
    state: Option<String>,
    disposition: Option<Disposition>,
    reason_code: Option<String>,
    #[serde(default)]
    act_ids: Vec<String>,
    #[serde(default)]
    decision_ids: Vec<String>,
    #[serde(default)]
    child_receipt_refs: Vec<String>,
    child_receipt_count: Option<usize>,
    #[serde(default)]
    verification_refs: Vec<String>,
    #[serde(flatten)]
    extra: BTreeMap<String, IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "its fields are read only by serde, for Runx's checks"
)]
struct RawHarnessExpectation {
    status: Option<HarnessExpectedStatus>,
    receipt: Option<RawReceiptExpectation>,
    #[serde(default)]
    steps: Vec<String>,
    output: Option<HarnessJsonExpectation>,
    #[serde(default)]
    step_outputs: BTreeMap<String, HarnessJsonExpectation>,
}

/// Runx's `RawHarnessFixture`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "its fields are read only by serde, for Runx's checks"
)]
struct RawHarnessFixture {
    name: String,
    kind: HarnessFixtureKind,
    #[serde(default)]
    target: Option<String>,
    runner: Option<String>,
    #[serde(default)]
    setup: HarnessSetup,
    #[serde(default)]
    inputs: JsonObject,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    caller: JsonObject,
    #[serde(default)]
    expect: RawHarnessExpectation,
    #[serde(default)]
    operator_journeys: Vec<OperatorJourneyClaim>,
    #[serde(default)]
    metadata: JsonObject,
}

/// The string fields of a fixture as serde read them, for the Lab to use what Runx uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FixtureStrings {
    pub(super) name: String,
    pub(super) target: String,
    pub(super) runner: Option<String>,
}

/// A fixture as Runx read it: its string fields, when serde could read them, and Runx's
/// refusal text (after the file's name), when it refuses the fixture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FixtureReading {
    pub(super) strings: Option<FixtureStrings>,
    pub(super) refusal: Option<String>,
}

/// Reads a fixture as Runx does: Runx's ambiguity scan and serde, then the first of
/// `validate_fixture`'s checks (the name, the kind, the target, the runner and the seeded
/// receipts).
pub(super) fn read_fixture(text: &str) -> FixtureReading {
    let refuse = |error: &dyn std::fmt::Display| FixtureReading {
        strings: None,
        refusal: Some(format!(
            "{INVALID_FIXTURE}failed to parse harness fixture YAML: yaml: YAML parse failed: \
             {error}"
        )),
    };
    if let Err(error) = parity_subset(text) {
        return refuse(&error);
    }
    let fixture: RawHarnessFixture = match serde_norway::from_str(text) {
        Ok(fixture) => fixture,
        Err(error) => return refuse(&error),
    };
    let target = fixture.target.clone().unwrap_or_default();
    let refusal = validate_fixture(&fixture, &target).err();
    FixtureReading {
        strings: Some(FixtureStrings {
            name: fixture.name,
            target,
            runner: fixture.runner,
        }),
        refusal,
    }
}

/// The first of Runx's `validate_fixture` checks that `fixture` fails, in Runx's words, in
/// its order: the name, the kind, the target, the runner, the caller's HTTP and provider
/// responses, the seeded receipts, the expectation, the operator journeys.
fn validate_fixture(fixture: &RawHarnessFixture, target: &str) -> Result<(), String> {
    let invalid = |message: String| format!("{INVALID_FIXTURE}{message}");
    let empty = |field: &str| invalid(format!("harness fixture {field} must not be empty"));
    let field_said =
        |field: &str, message: &str| invalid(format!("invalid harness fixture {field}: {message}"));
    if fixture.name.is_empty() {
        return Err(empty("name"));
    }
    if matches!(fixture.kind, HarnessFixtureKind::Mcp) {
        return Err(invalid(
            "harness fixture mode mcp at kind is not yet supported by the Rust harness".to_owned(),
        ));
    }
    if !matches!(fixture.kind, HarnessFixtureKind::AgentStep) && target.is_empty() {
        return Err(empty("target"));
    }
    if fixture.runner.as_deref() == Some("") {
        return Err(empty("runner"));
    }
    if fixture.caller.contains_key("web_responses") {
        return Err(field_said(
            "caller.web_responses",
            "was renamed to caller.http_responses",
        ));
    }
    check_http_responses(fixture.caller.get("http_responses"))
        .and_then(|()| check_provider_responses(fixture.caller.get("provider_responses")))
        .and_then(|()| check_setup_receipts(&fixture.setup.receipts))
        .and_then(|()| check_expectation(&fixture.expect))
        .and_then(|()| fixture.operator_journeys.iter().try_for_each(check_journey))
        .map_err(invalid)
}

/// Runx's `HarnessHttpResponseFixture`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HarnessHttpResponseFixture {
    status: u16,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: String,
}

/// Runx's `parse_harness_http_responses`: exact responses by absolute HTTP(S) URL.
fn check_http_responses(value: Option<&Value>) -> Result<(), String> {
    const FIELD: &str = "caller.http_responses";
    let Some(value) = value else {
        return Ok(());
    };
    let said = |field: &str, message: &str| format!("invalid harness fixture {field}: {message}");
    let responses: BTreeMap<String, HarnessHttpResponseFixture> =
        serde_json::from_value(value.clone()).map_err(|error| said(FIELD, &error.to_string()))?;
    if responses.is_empty() {
        return Err(said(
            FIELD,
            "must contain at least one exact response when declared",
        ));
    }
    if responses.len() > 32 {
        return Err(said(FIELD, "must contain at most 32 responses"));
    }
    for (url, response) in &responses {
        let field = format!("{FIELD}.{url}");
        if url.len() > 2048
            || url.chars().any(char::is_whitespace)
            || !(url.starts_with("https://") || url.starts_with("http://"))
        {
            return Err(said(
                &field,
                "key must be an exact absolute HTTP(S) URL no longer than 2048 characters",
            ));
        }
        if !(100..=599).contains(&response.status) {
            return Err(said(
                &format!("{field}.status"),
                "must be an HTTP status from 100 through 599",
            ));
        }
        if response.headers.len() > 64 {
            return Err(said(
                &format!("{field}.headers"),
                "must contain at most 64 headers",
            ));
        }
        let unbounded = |text: &str, limit: usize| {
            text.len() > limit || text.contains('\r') || text.contains('\n')
        };
        if response
            .headers
            .iter()
            .any(|(name, value)| name.is_empty() || unbounded(name, 256) || unbounded(value, 8192))
        {
            return Err(said(
                &format!("{field}.headers"),
                "header names and values must be bounded single-line strings",
            ));
        }
        if response.body.len() > 1_048_576 {
            return Err(said(
                &format!("{field}.body"),
                "must be no larger than 1048576 UTF-8 bytes",
            ));
        }
    }
    Ok(())
}

/// Runx's `HarnessProviderResponsesFixture` and its parts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HarnessProviderResponsesFixture {
    principal_id: String,
    grants: Vec<HarnessProviderGrantFixture>,
    operations: Vec<HarnessProviderOperationFixture>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HarnessProviderGrantFixture {
    grant_id: String,
    provider: String,
    scopes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
enum HarnessProviderAccess {
    Read,
    Mutate,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "its fields are read only by serde, for Runx's checks"
)]
struct HarnessProviderOperationFixture {
    grant_id: String,
    operation: String,
    target: String,
    access: HarnessProviderAccess,
    result: Value,
}

/// Runx's `parse_harness_provider_responses`: one principal, 1 to 16 grants with distinct ids,
/// 1 to 32 distinct operations each on a declared grant.
fn check_provider_responses(value: Option<&Value>) -> Result<(), String> {
    const FIELD: &str = "caller.provider_responses";
    let Some(value) = value else {
        return Ok(());
    };
    let said = |field: &str, message: &str| format!("invalid harness fixture {field}: {message}");
    let fixture: HarnessProviderResponsesFixture =
        serde_json::from_value(value.clone()).map_err(|error| said(FIELD, &error.to_string()))?;
    if fixture.principal_id.trim().is_empty() || fixture.principal_id.len() > 256 {
        return Err(said(
            &format!("{FIELD}.principal_id"),
            "must be a non-empty principal id no longer than 256 characters",
        ));
    }
    if fixture.grants.is_empty() || fixture.grants.len() > 16 {
        return Err(said(
            &format!("{FIELD}.grants"),
            "must contain between 1 and 16 grants",
        ));
    }
    if fixture.operations.is_empty() || fixture.operations.len() > 32 {
        return Err(said(
            &format!("{FIELD}.operations"),
            "must contain between 1 and 32 operations",
        ));
    }
    let mut grants = BTreeSet::new();
    for (index, grant) in fixture.grants.iter().enumerate() {
        let field = format!("{FIELD}.grants[{index}]");
        if grant.grant_id.trim().is_empty()
            || grant.provider.trim().is_empty()
            || grant.scopes.is_empty()
            || grant.scopes.iter().any(|scope| scope.trim().is_empty())
        {
            return Err(said(
                &field,
                "grant_id, provider, and every declared scope must be non-empty",
            ));
        }
        if !grants.insert(grant.grant_id.as_str()) {
            return Err(said(
                &field,
                &format!("duplicates grant id {:?}", grant.grant_id),
            ));
        }
    }
    let mut operations = BTreeSet::new();
    for (index, operation) in fixture.operations.iter().enumerate() {
        let field = format!("{FIELD}.operations[{index}]");
        if !grants.contains(operation.grant_id.as_str()) {
            return Err(said(
                &format!("{field}.grant_id"),
                "must reference a declared harness grant",
            ));
        }
        if operation.operation.trim().is_empty() || operation.target.trim().is_empty() {
            return Err(said(&field, "operation and target must be non-empty"));
        }
        let identity = (
            operation.grant_id.as_str(),
            operation.operation.as_str(),
            operation.target.as_str(),
            operation.access,
        );
        if !operations.insert(identity) {
            return Err(said(
                &field,
                "duplicates an earlier grant, operation, target, and access tuple",
            ));
        }
    }
    Ok(())
}

/// Runx's `validate_expectation`: a receipt expectation names only known fields, and each
/// output expectation says `exact` or `subset`.
fn check_expectation(expect: &RawHarnessExpectation) -> Result<(), String> {
    if let Some(field) = expect
        .receipt
        .as_ref()
        .and_then(|receipt| receipt.extra.keys().next())
    {
        let kind = if RETIRED_RECEIPT_FIELDS.contains(&field.as_str()) {
            "retired"
        } else {
            "unknown"
        };
        return Err(format!(
            "{kind} receipt expectation field expect.receipt.{field}"
        ));
    }
    let outputs = expect
        .output
        .iter()
        .map(|output| ("expect.output".to_owned(), output))
        .chain(
            expect
                .step_outputs
                .iter()
                .map(|(step, output)| (format!("expect.step_outputs.{step}"), output)),
        );
    for (field, output) in outputs {
        if output.exact.is_none() && output.subset.is_none() {
            return Err(format!(
                "harness fixture {field}.exact or {field}.subset is required"
            ));
        }
    }
    Ok(())
}

/// Runx's `validate_operator_journey`.
fn check_journey(claim: &OperatorJourneyClaim) -> Result<(), String> {
    for (field, value) in [
        ("operator_journey.request", &claim.request),
        ("operator_journey.expected_outcome", &claim.expected_outcome),
    ] {
        if value.trim().is_empty() {
            return Err(format!("harness fixture {field} is required"));
        }
    }
    let said = |field: &str, message: &str| format!("invalid harness fixture {field}: {message}");
    if claim
        .confusors
        .iter()
        .chain(&claim.prior_evidence)
        .chain(&claim.must_not_repeat)
        .any(|value| value.trim().is_empty())
    {
        return Err(said(
            "operator_journey",
            "confusors, prior_evidence, and must_not_repeat entries must not be empty",
        ));
    }
    if claim
        .exercises_runner
        .as_deref()
        .is_some_and(|runner| runner.trim().is_empty())
    {
        return Err(said(
            "operator_journey.exercises_runner",
            "must be a non-empty runner name when declared",
        ));
    }
    if matches!(claim.mode, OperatorJourneyMode::Composed)
        && (claim.prior_evidence.is_empty() || claim.must_not_repeat.is_empty())
    {
        return Err(said(
            "operator_journey",
            "composed journeys require prior_evidence and must_not_repeat assertions",
        ));
    }
    Ok(())
}

/// Runx's `validate_setup`: at most [`MAX_SETUP_RECEIPTS`] seeded receipts, each a normalized
/// package-relative `.json` path, none twice. The refusal is Runx's, after its prefix.
fn check_setup_receipts(receipts: &[String]) -> Result<(), String> {
    if receipts.len() > MAX_SETUP_RECEIPTS {
        return Err(format!(
            "invalid harness fixture setup.receipts: must contain at most {MAX_SETUP_RECEIPTS} receipt \
             files"
        ));
    }
    let mut seen = BTreeSet::new();
    for (index, path) in receipts.iter().enumerate() {
        let normalized = !path.is_empty()
            && path.len() <= 512
            && !path.starts_with('/')
            && !path.contains('\\')
            && path.ends_with(".json")
            && path
                .split('/')
                .all(|segment| !segment.is_empty() && !matches!(segment, "." | ".."));
        let refusal = if !normalized {
            "must be a normalized package-relative .json path"
        } else if !seen.insert(path) {
            "must not duplicate another receipt path"
        } else {
            continue;
        };
        return Err(format!(
            "invalid harness fixture setup.receipts[{index}]: {refusal}"
        ));
    }
    Ok(())
}

/// Reads a graph file as Runx's `parse_graph_yaml` does (a YAML mapping), or Runx's refusal
/// text after the file's name.
pub(super) fn read_graph_document(text: &str) -> Result<(), String> {
    parity_subset(text)
        .and_then(|()| {
            serde_norway::from_str::<JsonObject>(text)
                .map(drop)
                .map_err(|error| error.to_string())
        })
        .map_err(|error| format!("graph: YAML parse failed: {error}"))
}

/// Reads SKILL.md's frontmatter as Runx's `parse_skill_markdown` does (its ambiguity scan, then
/// serde_norway into any value; the object check comes after), or Runx's refusal text after
/// the file's name. Its lines are the frontmatter's own, as Runx counts them.
pub(super) fn read_frontmatter(frontmatter: &str) -> Result<(), String> {
    parity_subset(frontmatter)
        .and_then(|()| {
            serde_norway::from_str::<Value>(frontmatter)
                .map(drop)
                .map_err(|error| error.to_string())
        })
        .map_err(|error| format!("skill_frontmatter: YAML parse failed: {error}"))
}

/// What Runx says of X.yaml's text before its profile checks, when the Lab's reader refused it
/// with no Runx words of its own (a YAML syntax error): Runx's ambiguity scan, or serde_norway's
/// refusal, after the file's name.
pub(super) fn read_profile_document(text: &str) -> Result<(), String> {
    parity_subset(text)
        .and_then(|()| {
            serde_norway::from_str::<Value>(text)
                .map(drop)
                .map_err(|error| error.to_string())
        })
        .map_err(|error| format!("runner_manifest: YAML parse failed: {error}"))
}

/// Runx's refusal of X.yaml's text by its ambiguity scan, when it makes one.
pub(super) fn parity_subset_refusal(text: &str) -> Option<String> {
    parity_subset(text)
        .err()
        .map(|error| format!("runner_manifest: YAML parse failed: {error}"))
}

/// Runx's `assert_yaml_parity_subset`, a scan of the text line by line before any YAML reader
/// sees it: an explicit mapping key (`? k`), a plain key holding a `:` (`a:b: c`), or a plain
/// value holding `: ` (`k: a: b`) is "ambiguous", outside block scalars and comments. Written
/// by hand because it is Runx's own rule, not YAML's; the refusal is Runx's text.
fn parity_subset(text: &str) -> Result<(), String> {
    let ambiguous = |line: usize, literal: &str| {
        format!("ambiguous YAML construct at line {line}; quote the value or key: {literal}")
    };
    let mut block_indent = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let content = strip_comment(line);
        let trimmed = content.trim();
        if let Some(indent) = block_indent {
            if trimmed.is_empty() || leading_spaces(content) > indent {
                continue;
            }
            block_indent = None;
        }
        if trimmed.is_empty() || trimmed.starts_with("---") || trimmed.starts_with("...") {
            continue;
        }
        if trimmed == "?" || trimmed.starts_with("? ") {
            return Err(ambiguous(number, trimmed));
        }
        if plain_key(trimmed).is_some_and(|(key, _)| key.contains(':')) {
            return Err(ambiguous(number, trimmed));
        }
        if let Some(value) = plain_value(content)
            && value_has_colon_space(value)
        {
            return Err(ambiguous(number, value.trim()));
        }
        if block_scalar_starts(content) {
            block_indent = Some(leading_spaces(content));
        }
    }
    Ok(())
}

/// Where a character is, for the scans: in plain text or inside a quoted scalar.
#[derive(Clone, Copy, PartialEq)]
enum Quoting {
    Plain,
    Double,
    DoubleEscape,
    Single,
    /// A `'` inside a single-quoted scalar: an escape if another `'` follows, else its end.
    SingleApostrophe,
}

impl Quoting {
    /// Whether `next` is read as plain text.
    fn is_plain_at(self, next: char) -> bool {
        match self {
            Self::Plain => true,
            Self::SingleApostrophe => next != '\'',
            Self::Double | Self::DoubleEscape | Self::Single => false,
        }
    }

    fn after(self, next: char) -> Self {
        let plain = |next: char| match next {
            '\'' => Self::Single,
            '"' => Self::Double,
            _ => Self::Plain,
        };
        match self {
            Self::Plain => plain(next),
            Self::Double => match next {
                '\\' => Self::DoubleEscape,
                '"' => Self::Plain,
                _ => Self::Double,
            },
            Self::DoubleEscape => Self::Double,
            Self::Single if next == '\'' => Self::SingleApostrophe,
            Self::Single => Self::Single,
            Self::SingleApostrophe if next == '\'' => Self::Single,
            Self::SingleApostrophe => plain(next),
        }
    }
}

/// The index of the first plain character of `text` that `is` says is one, scanning quotes.
fn find_plain(text: &str, is: impl Fn(usize, char) -> bool) -> Option<usize> {
    let mut quoting = Quoting::Plain;
    for (index, next) in text.char_indices() {
        if quoting.is_plain_at(next) && is(index, next) {
            return Some(index);
        }
        quoting = quoting.after(next);
    }
    None
}

/// The line without a comment (a plain `#` at the start or after whitespace).
fn strip_comment(line: &str) -> &str {
    let comment = find_plain(line, |index, next| {
        next == '#' && (index == 0 || line[..index].ends_with(char::is_whitespace))
    });
    comment.map_or(line, |index| &line[..index])
}

/// Whether the `:` at `index` ends a key: the end of the text or whitespace follows.
fn is_delimiter(text: &str, index: usize) -> bool {
    text[index + 1..]
        .chars()
        .next()
        .is_none_or(char::is_whitespace)
}

/// A plain mapping key of the trimmed line and the index of its `:`.
fn plain_key(trimmed: &str) -> Option<(&str, usize)> {
    if trimmed.starts_with(['-', '?', '{', '[', '"', '\'']) {
        return None;
    }
    let colon = find_plain(trimmed, |index, next| {
        next == ':' && is_delimiter(trimmed, index)
    })?;
    Some((trimmed[..colon].trim(), colon))
}

/// What follows a plain key's `:` on the line.
fn plain_value(content: &str) -> Option<&str> {
    let trimmed = content.trim_start();
    let (_, colon) = plain_key(trimmed)?;
    Some(&trimmed[colon + 1..])
}

/// Whether a plain value holds a `: ` outside quotes (quoted, block, flow, `null` and booleans
/// are exempt).
fn value_has_colon_space(value: &str) -> bool {
    let trimmed = value.trim_start();
    if trimmed.is_empty()
        || trimmed.starts_with(['"', '\'', '|', '>', '{', '['])
        || matches!(trimmed, "null" | "true" | "false")
    {
        return false;
    }
    find_plain(trimmed, |index, next| {
        next == ':' && is_delimiter(trimmed, index)
    })
    .is_some()
}

fn leading_spaces(content: &str) -> usize {
    content.bytes().take_while(|byte| *byte == b' ').count()
}

/// Whether the line opens a block scalar (`key: |`, `- >-`, `- key: |2`).
fn block_scalar_starts(content: &str) -> bool {
    let mut candidates: Vec<&str> = plain_value(content).into_iter().collect();
    if let Some(item) = content.trim_start().strip_prefix("- ") {
        let item = item.trim_start();
        candidates.push(item);
        candidates.extend(plain_value(item));
    }
    candidates.into_iter().any(|value| {
        let mut chars = value.trim().chars();
        if !matches!(chars.next(), Some('|' | '>')) {
            return false;
        }
        let (mut chomp, mut indent) = (false, false);
        chars.all(|next| {
            if matches!(next, '+' | '-') && !chomp {
                chomp = true;
            } else if next.is_ascii_digit() && !indent {
                indent = true;
            } else {
                return false;
            }
            true
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::load_package;
    use super::*;
    use crate::runx::snapshot::SnapshotFile;

    // Every expected text is the real runx-cli 0.8.2's (`runx skill inspect`), after the file.

    #[test]
    fn a_fixture_is_refused_in_serdes_words_with_its_line_and_column() {
        let serde = "invalid harness fixture: failed to parse harness fixture YAML: yaml: YAML \
                     parse failed: ";
        for (text, says) in [
            (
                "kind: skill\nname: f\nzeta: 1\n",
                "unknown field `zeta`, expected one of `name`, `kind`, `target`, `runner`, \
                 `setup`, `inputs`, `env`, `caller`, `expect`, `operator_journeys`, `metadata` \
                 at line 3 column 1",
            ),
            (
                "kind: other\nname: f\n",
                "kind: unknown variant `other`, expected one of `skill`, `graph`, `mcp`, `a2a`, \
                 `agent`, `agent_task` at line 1 column 7",
            ),
            (
                "kind: skill\nname: f\nexpect:\n  status: nope\n",
                "expect.status: unknown variant `nope`, expected one of `sealed`, `failure`, \
                 `needs_agent`, `policy_denied`, `escalated` at line 4 column 11",
            ),
            (
                "kind: skill\nname: f\nexpect:\n  zeta: 1\n",
                "expect: unknown field `zeta`, expected one of `status`, `receipt`, `steps`, \
                 `output`, `step_outputs` at line 4 column 3",
            ),
            (
                "kind: skill\nname: f\nexpect: [1]\n",
                "expect: invalid type: sequence, expected struct RawHarnessExpectation at line 3 \
                 column 9",
            ),
            (
                "kind: skill\nname: f\nsetup: [1]\n",
                "setup: invalid type: sequence, expected struct HarnessSetup at line 3 column 8",
            ),
            (
                "kind: skill\nname: f\nsetup:\n  zeta: 1\n",
                "setup: unknown field `zeta`, expected `receipts` at line 4 column 3",
            ),
            (
                "kind: skill\nname: f\ninputs: [1]\n",
                "inputs: invalid type: sequence, expected a map at line 3 column 9",
            ),
            (
                "kind: skill\nname: f\ncaller: [1]\n",
                "caller: invalid type: sequence, expected a map at line 3 column 9",
            ),
            (
                "kind: skill\nname: [\n",
                "name: invalid type: sequence, expected a string at line 2 column 7",
            ),
            (
                "- 1\n",
                "invalid type: sequence, expected struct RawHarnessFixture",
            ),
        ] {
            assert_eq!(
                read_fixture(text).refusal,
                Some(format!("{serde}{says}")),
                "{text}"
            );
        }
    }

    #[test]
    fn a_fixture_that_serde_reads_is_held_to_runxs_first_checks() {
        for (text, says) in [
            (
                "kind: skill\nname: ''\n",
                "harness fixture name must not be empty",
            ),
            // A YAML scalar is a string to serde: `name: 3` is the name "3".
            (
                "kind: skill\nname: 3\n",
                "harness fixture target must not be empty",
            ),
            (
                "kind: skill\nname: f\nrunner: nope\n",
                "harness fixture target must not be empty",
            ),
        ] {
            assert_eq!(
                read_fixture(text).refusal,
                Some(format!("invalid harness fixture: {says}")),
                "{text}"
            );
        }
        assert_eq!(
            read_fixture("kind: skill\nname: f\ntarget: 3\n"),
            FixtureReading {
                strings: Some(FixtureStrings {
                    name: "f".to_owned(),
                    target: "3".to_owned(),
                    runner: None,
                }),
                refusal: None,
            }
        );
    }

    #[test]
    fn a_fixtures_caller_expectation_and_journeys_are_held_to_runxs_checks() {
        for (body, says) in [
            (
                "caller:\n  web_responses: {}\n",
                "invalid harness fixture caller.web_responses: was renamed to caller.http_responses",
            ),
            (
                "caller:\n  http_responses: {}\n",
                "invalid harness fixture caller.http_responses: must contain at least one exact response when declared",
            ),
            (
                "caller:\n  provider_responses: {principal_id: p}\n",
                "invalid harness fixture caller.provider_responses: missing field `grants`",
            ),
            (
                "caller:\n  provider_responses: {principal_id: p, grants: [], operations: []}\n",
                "invalid harness fixture caller.provider_responses.grants: must contain between 1 and 16 grants",
            ),
            (
                "caller:\n  provider_responses:\n    principal_id: p\n    grants: [{grant_id: g, provider: x, scopes: []}]\n    operations: [{grant_id: g, operation: o, target: t, access: read, result: 1}]\n",
                "invalid harness fixture caller.provider_responses.grants[0]: grant_id, provider, and every declared scope must be non-empty",
            ),
            (
                "caller:\n  provider_responses:\n    principal_id: p\n    grants: [{grant_id: g, provider: x, scopes: [s]}]\n    operations: [{grant_id: h, operation: o, target: t, access: read, result: 1}]\n",
                "invalid harness fixture caller.provider_responses.operations[0].grant_id: must reference a declared harness grant",
            ),
            (
                "expect:\n  receipt:\n    skill_name: x\n",
                "retired receipt expectation field expect.receipt.skill_name",
            ),
            (
                "expect:\n  receipt:\n    zeta: x\n",
                "unknown receipt expectation field expect.receipt.zeta",
            ),
            (
                "expect:\n  output: {}\n",
                "harness fixture expect.output.exact or expect.output.subset is required",
            ),
            (
                "expect:\n  step_outputs:\n    a: {}\n",
                "harness fixture expect.step_outputs.a.exact or expect.step_outputs.a.subset is required",
            ),
            (
                "operator_journeys:\n  - mode: standalone\n    request: ' '\n    expected_outcome: o\n",
                "harness fixture operator_journey.request is required",
            ),
            (
                "operator_journeys:\n  - mode: composed\n    request: r\n    expected_outcome: o\n",
                "invalid harness fixture operator_journey: composed journeys require prior_evidence and must_not_repeat assertions",
            ),
            (
                "operator_journeys:\n  - mode: standalone\n    request: r\n    expected_outcome: o\n    exercises_runner: ' '\n",
                "invalid harness fixture operator_journey.exercises_runner: must be a non-empty runner name when declared",
            ),
            (
                "operator_journeys:\n  - mode: standalone\n    request: r\n    expected_outcome: o\n    confusors: ['']\n",
                "invalid harness fixture operator_journey: confusors, prior_evidence, and must_not_repeat entries must not be empty",
            ),
            (
                "caller:\n  http_responses:\n    'ftp://x': {status: 200, body: ''}\n",
                "invalid harness fixture caller.http_responses.ftp://x: key must be an exact absolute HTTP(S) URL no longer than 2048 characters",
            ),
            (
                "caller:\n  http_responses:\n    'https://x.y/': {status: 99, body: ''}\n",
                "invalid harness fixture caller.http_responses.https://x.y/.status: must be an HTTP status from 100 through 599",
            ),
            (
                "caller:\n  http_responses:\n    'https://x.y/': {status: 200, body: '', zeta: 1}\n",
                "invalid harness fixture caller.http_responses: unknown field `zeta`, expected one of `status`, `headers`, `body`",
            ),
            (
                "caller:\n  http_responses:\n    'https://x.y/': {status: 200}\n",
                "invalid harness fixture caller.http_responses: missing field `body`",
            ),
            (
                "caller:\n  http_responses:\n    'https://x.y/': {status: 200, body: '', headers: {'': x}}\n",
                "invalid harness fixture caller.http_responses.https://x.y/.headers: header names and values must be bounded single-line strings",
            ),
        ] {
            let text = format!("kind: skill\nname: f\ntarget: ..\n{body}");
            assert_eq!(
                read_fixture(&text).refusal,
                Some(format!("invalid harness fixture: {says}")),
                "{body}"
            );
        }
    }

    #[test]
    fn ambiguous_yaml_is_refused_before_serde_reads_it() {
        let serde = "invalid harness fixture: failed to parse harness fixture YAML: yaml: YAML \
                     parse failed: ambiguous YAML construct at line 5; quote the value or key: ";
        let inputs = |body: &str| format!("kind: skill\nname: f\ntarget: ..\ninputs:\n{body}");
        for (body, literal) in [
            ("  a:b: 1\n", "a:b: 1"),
            ("  a: b: c\n", "b: c"),
            ("  ? a\n  : 1\n", "? a"),
        ] {
            assert_eq!(
                read_fixture(&inputs(body)).refusal,
                Some(format!("{serde}{literal}"))
            );
        }
        // Quoted, inside a block scalar, in a comment, or without a space after the colon: read.
        for body in [
            "  a: 'b: c'\n",
            "  a: |\n    b: c: d\n",
            "  u: http://x.y/z # a: b: c\n",
        ] {
            assert_eq!(read_fixture(&inputs(body)).refusal, None, "{body}");
        }
        assert_eq!(
            read_graph_document("name: flow\nowner: a: b\nsteps: []\n"),
            Err(
                "graph: YAML parse failed: ambiguous YAML construct at line 2; quote the value or \
                 key: a: b"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_fixture_or_graph_file_refusal_opens_with_runxs_words_and_says_where_second() {
        let manual: &[u8] = b"---\nname: demo\ndescription: A demo.\n---\n\nUse it.\n";
        let profile: &[u8] = b"skill: demo\nrunners:\n  main:\n    default: true\n    type: \
            cli-tool\n    command: node\n    args: [run.mjs]\n";
        let load = |extra: &[(&str, &[u8])]| {
            let mut files = vec![
                ("SKILL.md", manual),
                ("X.yaml", profile),
                ("run.mjs", b"console.log('{}');\n".as_slice()),
            ];
            files.extend_from_slice(extra);
            let files: Vec<SnapshotFile> = files
                .into_iter()
                .map(|(path, contents)| SnapshotFile {
                    path: path.to_owned(),
                    mode: 0o100_644,
                    contents: contents.to_vec(),
                })
                .collect();
            load_package(&files).err().map(|err| err.to_string())
        };
        let graph = |text: &'static [u8]| {
            load(&[
                (
                    "fixtures/g.yaml",
                    b"kind: graph\nname: g\ntarget: ../graphs/flow.yaml\n".as_slice(),
                ),
                ("graphs/flow.yaml", text),
            ])
        };
        assert_eq!(
            graph(b"name: flow\nsteps: [\n").as_deref(),
            Some(
                "graphs/flow.yaml: graph: YAML parse failed: did not find expected node content \
                 at line 3 column 1, while parsing a flow node\n  at graphs/flow.yaml:3: \
                 column 1: invalid YAML: while parsing a node, did not find expected node \
                 content (check the indentation and the brackets or quotes on this line)"
            )
        );
        // Runx reads an anchor in a graph file; the Lab refuses it and says it is stricter.
        let anchored = graph(b"name: &n flow\nsteps:\n  - id: a\n    tool: fs.read\n").unwrap();
        assert!(
            anchored.starts_with(
                "graphs/flow.yaml:1:7: anchors are not allowed in Runx YAML (remove &n and repeat \
                 the value)\n  Runx reads this graph file; MindRune is stricter: "
            ),
            "{anchored}"
        );
        // A scalar env value is a string to serde, as to Runx.
        let env = load(&[(
            "fixtures/f.yaml",
            b"kind: skill\nname: f\ntarget: ..\nenv:\n  X: 1\n",
        )]);
        assert_eq!(env, None);
        // A caller field Runx's reader takes and ignores: the Lab refuses it and says why.
        let caller = load(&[(
            "fixtures/f.yaml",
            b"kind: skill\nname: f\ntarget: ..\ncaller:\n  prompts: {a: b}\n",
        )])
        .unwrap();
        assert!(
            caller.starts_with(
                "fixtures/f.yaml:5: caller.prompts: unknown caller field; remove it or use one \
                 of: answers, approvals, http_responses, provider_responses\n  Runx reads this \
                 fixture; MindRune is stricter: "
            ),
            "{caller}"
        );
        // `target: 3` is the folder "3" to serde, as to Runx.
        let fixture = load(&[("fixtures/f.yaml", b"kind: skill\nname: f\ntarget: 3\n")]);
        assert_eq!(fixture, None);
        let fixture = load(&[("fixtures/f.yaml", b"kind: skill\nname: 3\n")]).unwrap();
        assert!(
            fixture.starts_with(
                "fixtures/f.yaml: invalid harness fixture: harness fixture target must not be \
                 empty\n  at fixtures/f.yaml:1: target: is required"
            ),
            "{fixture}"
        );
    }

    #[test]
    fn a_manuals_and_a_profiles_yaml_errors_open_with_runxs_words() {
        let load = |manual: &str, profile: &str| {
            let files: Vec<SnapshotFile> = [("SKILL.md", manual), ("X.yaml", profile)]
                .into_iter()
                .map(|(path, text)| SnapshotFile {
                    path: path.to_owned(),
                    mode: 0o100_644,
                    contents: text.as_bytes().to_vec(),
                })
                .collect();
            load_package(&files).err().map(|err| {
                err.to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
        };
        let manual = "---\nname: demo\ndescription: A demo.\n---\n\nUse it.\n";
        let profile = "skill: demo\nrunners: {}\n";
        // Every line is runx-cli 0.8.2's; a frontmatter's lines are its own, as Runx counts.
        for (bad_manual, runx) in [
            (
                "---\nname: demo\ndescription: [\n---\n\nUse it.\n",
                "SKILL.md: skill_frontmatter: YAML parse failed: did not find expected node \
                 content at line 3 column 1, while parsing a flow node",
            ),
            (
                "---\nname: demo\ndescription: a: b\n---\n\nUse it.\n",
                "SKILL.md: skill_frontmatter: YAML parse failed: ambiguous YAML construct at \
                 line 2; quote the value or key: a: b",
            ),
            (
                "---\nname: demo\n\tdescription: x\n---\n\nUse it.\n",
                "SKILL.md: skill_frontmatter: YAML parse failed: found a tab character that \
                 violates indentation at line 2 column 1, while scanning a plain scalar at line 1 \
                 column 7",
            ),
        ] {
            assert_eq!(
                load(bad_manual, profile).as_deref(),
                Some(runx),
                "{bad_manual}"
            );
        }
        for (bad_profile, runx) in [
            (
                "skill: demo\nrunners: [\n",
                "X.yaml: runner_manifest: YAML parse failed: did not find expected node content \
                 at line 3 column 1, while parsing a flow node",
            ),
            (
                "skill: demo\nversion: a: b\nrunners: {}\n",
                "X.yaml: runner_manifest: YAML parse failed: ambiguous YAML construct at line 2; \
                 quote the value or key: a: b",
            ),
            (
                "skill: demo\nrunners:\n\tmain: {}\n",
                "X.yaml: runner_manifest: YAML parse failed: found character that cannot start \
                 any token at line 3 column 1, while scanning for the next token",
            ),
        ] {
            assert_eq!(
                load(manual, bad_profile).as_deref(),
                Some(runx),
                "{bad_profile}"
            );
        }
        // Runx reads an anchor in a manual's frontmatter; the Lab says it is stricter.
        let anchored = load(
            "---\nname: &a demo\ndescription: A demo.\n---\n\nUse it.\n",
            profile,
        );
        assert_eq!(
            anchored.as_deref(),
            Some(
                "SKILL.md:2:7: anchors are not allowed in Runx YAML (remove &a and repeat the value)"
            )
        );
    }

    #[test]
    fn a_graph_file_is_a_yaml_mapping_in_serdes_words() {
        for (text, says) in [
            ("- 1\n", "invalid type: sequence, expected a map"),
            (
                "name: flow\nsteps: [\n",
                "did not find expected node content at line 3 column 1, while parsing a flow node",
            ),
            (
                "name: flow\n  bad: indent\n",
                "mapping values are not allowed in this context at line 2 column 6",
            ),
            (
                "name: flow\nsteps:\n\t- id: a\n",
                "found character that cannot start any token at line 3 column 1, while scanning \
                 for the next token",
            ),
        ] {
            assert_eq!(
                read_graph_document(text),
                Err(format!("graph: YAML parse failed: {says}")),
                "{text}"
            );
        }
        assert_eq!(read_graph_document("name: &n flow\nsteps: []\n"), Ok(()));
    }
}
