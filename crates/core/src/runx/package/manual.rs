//! SKILL.md: the frontmatter of the package's manual, the fields it owns and the execution
//! fields it refuses, and the retry, idempotency and artifact policies it shares with X.yaml.

use std::collections::BTreeMap;

use serde_json::Value;

use super::check::{Check, get, has, line_of};
use super::inputs::{SourceContext, check_inputs, check_source};
use super::model::{SkillFrontmatter, SkillManual};
use super::references::stricter_yaml;
use super::yaml_as_runx::read_frontmatter;
use super::{MANUAL_EXECUTION_FIELDS, PackageError, SKILL_FILE, invalid_as_runx, join};
use crate::runx::yaml::{self, YamlEntry, YamlNode, YamlValue};

/// Reads SKILL.md on its own, as Runx's `validate_skill` does: the frontmatter block must be
/// there with a non-empty `name`; the legacy portable fields (`source`, `inputs`, `retry`, ...)
/// are accepted and checked; unknown keys are kept. [`load_package`](super::load_package) additionally refuses the
/// execution fields, which belong in X.yaml.
#[cfg(test)]
pub(crate) fn parse_skill_md(text: &str) -> Result<SkillManual, PackageError> {
    parse_manual(text).map(|(manual, _)| manual)
}

/// [`parse_skill_md`], also handing back the frontmatter tree for the package checks.
pub(super) fn parse_manual(text: &str) -> Result<(SkillManual, YamlNode), PackageError> {
    parse_manual_owned(text, false)
}

/// [`parse_manual`] inside a package: as Runx does, the execution fields SKILL.md may not hold
/// ([`check_manual_ownership`]) are refused before their values are checked.
pub(super) fn parse_package_manual(text: &str) -> Result<(SkillManual, YamlNode), PackageError> {
    parse_manual_owned(text, true)
}

fn parse_manual_owned(text: &str, package: bool) -> Result<(SkillManual, YamlNode), PackageError> {
    let file = SKILL_FILE;
    let check = Check {
        file,
        graph_file: false,
    };
    let (frontmatter, body) = split_frontmatter(text).ok_or_else(|| {
        invalid_as_runx(
            file,
            1,
            "frontmatter",
            "SKILL.md must start with a YAML frontmatter block: a `---` line, `name: ...` and \
             `description: ...`, and a closing `---` line",
            "skill: Skill markdown must start with YAML frontmatter delimited by ---.",
        )
    })?;
    // The frontmatter's first line is SKILL.md's second line. Runx reads it with serde_norway:
    // what it cannot read is refused in its words first; what it reads and the Lab's stricter
    // reader refuses says so.
    let node = match (
        read_frontmatter(frontmatter),
        yaml::parse_at(file, frontmatter, 2),
    ) {
        (Ok(()), Ok(node)) => node,
        (Err(runx), Err(err)) => {
            return Err(PackageError::Yaml(err).opening_with_runx(format!("{file}: {runx}")));
        }
        (Err(runx), Ok(_)) => {
            return Err(invalid_as_runx(
                file,
                2,
                "frontmatter",
                "Runx's YAML reader refuses it; fix what the line above names",
                runx,
            ));
        }
        (Ok(()), Err(err)) => return Err(stricter_yaml(err, "manual's frontmatter")),
    };
    let entries = match &node.value {
        YamlValue::Mapping(entries) => entries.as_slice(),
        YamlValue::Null => &[],
        _ => {
            return Err(invalid_as_runx(
                file,
                node.line,
                "frontmatter",
                format!("must be a mapping of fields, not {}", node.kind()),
                "skill_frontmatter: Skill frontmatter must parse to an object.",
            ));
        }
    };
    if package {
        check_manual_ownership(&node)?;
    }
    // As Runx's `required_string`: only an empty name is missing; a blank one is a name (which
    // X.yaml's `skill` must then match).
    let name = match check.opt_string(entries, "name", "")? {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => return Err(check.err_field(1, "name", "is required", "is required.")),
    };
    let description = check
        .opt_string(entries, "description", "")?
        .map(str::to_owned);
    let category = trimmed(check.opt_string(entries, "category", "")?);
    let registry_owner = check.opt_string(entries, "registry_owner", "")?;
    if let Some(owner) = registry_owner
        && (owner.is_empty()
            || !owner.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
            }))
    {
        return Err(check.err(
            line_of(entries, "registry_owner"),
            "registry_owner",
            format!(
                "is {owner:?}; a registry namespace is lowercase letters, digits, '.', '_' \
                     and '-' (leave it out for the runx namespace)"
            ),
        ));
    }
    let runx = match get(entries, "runx") {
        None => None,
        Some(entry) if entry.value.is_null() => None,
        Some(entry) => Some(entry.value.as_mapping().ok_or_else(|| {
            check.err_runx(
                entry.line,
                "runx",
                format!(
                    "runx must be a mapping when present, not {}",
                    entry.value.kind()
                ),
                format!("{file}: runx must be an object when present."),
            )
        })?),
    };
    let runx_entries = runx.unwrap_or_default();
    let runx_category = trimmed(check.opt_string(runx_entries, "category", "runx")?);
    let post_run_reflect = post_run_reflect(&check, runx_entries, "runx")?;
    let source = match get(entries, "source").filter(|entry| !entry.value.is_null()) {
        None => None,
        Some(entry) => {
            let source = check.mapping(&entry.value, "source")?;
            check_source(
                &check,
                source,
                entry.line,
                "source",
                SourceContext::Skill,
                true,
            )?;
            Some(entry.value.to_json())
        }
    };
    let inputs = match check.opt_mapping(entries, "inputs", "")? {
        None => Vec::new(),
        Some(inputs) => check_inputs(&check, inputs, "inputs", &[])?,
    };
    let retry = first(entries, "retry", runx_entries);
    if let Some((entry, field)) = &retry {
        check_retry(&check, entry, field)?;
    }
    let idempotency = first(entries, "idempotency", runx_entries);
    if let Some((entry, field)) = &idempotency {
        check_idempotency(&check, entry, field)?;
    }
    let risk = get(entries, "risk").filter(|entry| !entry.value.is_null());
    let mutating = match get(entries, "mutating")
        .or_else(|| risk.and_then(|risk| risk.value.entry("mutating")))
        .or_else(|| get(runx_entries, "mutating"))
        .filter(|entry| !entry.value.is_null())
    {
        None => None,
        Some(entry) => Some(
            entry
                .value
                .as_bool()
                .ok_or_else(|| check.err(entry.line, "mutating", "must be true or false"))?,
        ),
    };
    let artifacts = match get(runx_entries, "artifacts").filter(|entry| !entry.value.is_null()) {
        None => None,
        Some(entry) => {
            check_artifacts(&check, entry, "runx.artifacts")?;
            Some(entry.value.to_json())
        }
    };
    let allowed_tools = check.opt_strings(runx_entries, "allowed_tools", "runx")?;
    let execution =
        first(entries, "execution", runx_entries).map(|(entry, _)| entry.value.to_json());
    let json_of = |key: &str| {
        get(entries, key)
            .filter(|e| !e.value.is_null())
            .map(|e| e.value.to_json())
    };
    let manual = SkillManual {
        frontmatter: SkillFrontmatter {
            name,
            description,
            category,
            runx_category,
            registry_owner: registry_owner.map(str::to_owned),
            runx: match get(entries, "runx").map(|entry| entry.value.to_json()) {
                Some(Value::Object(map)) => Some(map),
                _ => None,
            },
            source,
            inputs,
            auth: json_of("auth"),
            risk: json_of("risk"),
            runtime: json_of("runtime"),
            retry: retry.map(|(entry, _)| entry.value.to_json()),
            idempotency: idempotency.map(|(entry, _)| entry.value.to_json()),
            mutating,
            execution,
            allowed_tools,
            artifacts,
            post_run_reflect,
        },
        body: body.to_owned(),
        json: node.to_json(),
    };
    Ok((manual, node))
}

/// The field at the top level, else under `runx:`, with its path (Runx reads governance
/// fields from either place, top level first).
pub(super) fn first<'n>(
    entries: &'n [YamlEntry],
    key: &str,
    runx: &'n [YamlEntry],
) -> Option<(&'n YamlEntry, String)> {
    get(entries, key)
        .filter(|entry| !entry.value.is_null())
        .map(|entry| (entry, key.to_owned()))
        .or_else(|| {
            get(runx, key)
                .filter(|entry| !entry.value.is_null())
                .map(|entry| (entry, format!("runx.{key}")))
        })
}

pub(super) fn trimmed(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|value| !value.is_empty())
        .map(str::to_owned)
}

/// Splits SKILL.md as the regex `^---\r?\n(.*?)\r?\n---` (dot matching newlines) does: the
/// frontmatter is everything up to the first `\n---` (a `\r` before it excluded), and the body
/// starts on the line after the closing `---` line.
pub(super) fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let close = rest.find("\n---")?;
    let frontmatter = rest.get(..close)?;
    let frontmatter = frontmatter.strip_suffix('\r').unwrap_or(frontmatter);
    let after = rest.get(close + "\n---".len()..)?;
    let body = after
        .find('\n')
        .map_or("", |newline| after.get(newline + 1..).unwrap_or(""));
    Some((frontmatter, body))
}

/// Inside a package, Runx refuses execution metadata in SKILL.md: it belongs in X.yaml, and
/// the manual's `runx:` block may only carry the catalog `category` and `tags`.
pub(super) fn check_manual_ownership(frontmatter: &YamlNode) -> Result<(), PackageError> {
    let entries = frontmatter.as_mapping().unwrap_or_default();
    // Runx names the first of its list that the frontmatter has.
    if let Some(entry) = MANUAL_EXECUTION_FIELDS
        .iter()
        .find_map(|field| entries.iter().find(|entry| entry.key == *field))
    {
        return Err(PackageError::Invalid {
            file: SKILL_FILE.to_owned(),
            line: entry.line,
            field: entry.key.clone(),
            message: format!(
                "execution metadata belongs in X.yaml, not SKILL.md (the operator manual); move \
                 {} to the runner in X.yaml",
                entry.key
            ),
            runx: Some(format!(
                "SKILL.md.{}: execution metadata belongs in X.yaml; SKILL.md is the operator manual",
                entry.key
            )),
        });
    }
    let runx = get(entries, "runx").and_then(|entry| entry.value.as_mapping());
    if let Some(entry) = runx
        .unwrap_or_default()
        .iter()
        .find(|entry| !matches!(entry.key.as_str(), "category" | "tags"))
    {
        return Err(PackageError::Invalid {
            file: SKILL_FILE.to_owned(),
            line: entry.line,
            field: join("runx", &entry.key),
            message: "execution metadata belongs in X.yaml; SKILL.md's runx block may only hold \
                      category and tags"
                .to_owned(),
            runx: Some(format!(
                "SKILL.md.runx.{}: execution metadata belongs in X.yaml; SKILL.md.runx may contain \
                 only catalog category and tags",
                entry.key
            )),
        });
    }
    Ok(())
}

pub(super) fn post_run_reflect(
    check: &Check<'_>,
    runx: &[YamlEntry],
    parent: &str,
) -> Result<String, PackageError> {
    let field = join(parent, "post_run");
    let Some(post_run) = check.opt_mapping(runx, "post_run", parent)? else {
        return Ok("never".to_owned());
    };
    Ok(check
        .opt_one_of(post_run, "reflect", &field, &["auto", "always", "never"])?
        .unwrap_or_else(|| "never".to_owned()))
}

pub(super) fn check_retry(
    check: &Check<'_>,
    entry: &YamlEntry,
    field: &str,
) -> Result<(), PackageError> {
    let retry = check.mapping(&entry.value, field)?;
    if let Some(attempts) = check.opt_u64(retry, "max_attempts", field)?
        && attempts == 0
    {
        return Err(check.err_field(
            line_of(retry, "max_attempts"),
            &join(field, "max_attempts"),
            "must be a positive whole number (1 means no retry)",
            "must be a positive integer.",
        ));
    }
    Ok(())
}

pub(super) fn check_idempotency(
    check: &Check<'_>,
    entry: &YamlEntry,
    field: &str,
) -> Result<(), PackageError> {
    match &entry.value.value {
        YamlValue::String(key) if key.trim().is_empty() => Err(check.err(
            entry.line,
            field,
            "must not be empty; write the key or remove it",
        )),
        YamlValue::String(_) => Ok(()),
        _ => {
            let record = check.mapping(&entry.value, field)?;
            check.opt_non_empty(record, "key", field).map(|_| ())
        }
    }
}

/// An artifact contract (`emits`, `named_emits`, `packets`, `wrap_as`, `packet`).
pub(super) fn check_artifacts(
    check: &Check<'_>,
    entry: &YamlEntry,
    field: &str,
) -> Result<(), PackageError> {
    let record = check.mapping(&entry.value, field)?;
    if let Some(emits) = get(record, "emits").filter(|e| !e.value.is_null())
        && emits.value.as_str().is_none()
    {
        check.opt_strings(record, "emits", field)?;
    }
    let named_key = if has(record, "named_emits") {
        "named_emits"
    } else {
        "namedEmits"
    };
    let named = named_outputs(check, record, named_key, field)?;
    let packets = named_outputs(check, record, "packets", field)?;
    if let Some(packets) = &packets {
        let Some(named) = &named else {
            return Err(check.err(
                line_of(record, "packets"),
                &join(field, "packets"),
                format!("needs {field}.named_emits naming the outputs the packets describe"),
            ));
        };
        if let Some((output, line)) = packets
            .iter()
            .find(|(output, _)| !named.contains_key(*output))
        {
            return Err(check.err(
                *line,
                &join(&join(field, "packets"), output),
                format!("must name an output declared in {field}.named_emits"),
            ));
        }
    }
    let wrap_key = if has(record, "wrap_as") {
        "wrap_as"
    } else {
        "wrapAs"
    };
    let wrap_as = check.opt_non_empty(record, wrap_key, field)?;
    let packet = check.opt_non_empty(record, "packet", field)?;
    if packet.is_some() && wrap_as.is_none() {
        return Err(check.err(
            line_of(record, "packet"),
            &join(field, "packet"),
            format!("needs {field}.wrap_as; use named_emits and packets for named packet outputs"),
        ));
    }
    Ok(())
}

/// A mapping of output names to non-empty strings, with each key's line.
pub(super) fn named_outputs(
    check: &Check<'_>,
    record: &[YamlEntry],
    key: &str,
    parent: &str,
) -> Result<Option<BTreeMap<String, usize>>, PackageError> {
    let field = join(parent, key);
    let Some(entries) = check.opt_mapping(record, key, parent)? else {
        return Ok(None);
    };
    let mut names = BTreeMap::new();
    for entry in entries {
        let value = check.string(entry, &join(&field, &entry.key))?;
        if value.trim().is_empty() {
            return Err(check.err(
                entry.line,
                &join(&field, &entry.key),
                "must be a non-empty string",
            ));
        }
        names.insert(entry.key.clone(), entry.line);
    }
    Ok(Some(names))
}
