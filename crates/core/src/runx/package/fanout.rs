//! A graph's fanout groups, checked as Runx's graph validator checks them
//! (`runx-parser/src/graph/fanout.rs`), in its order and words: first the `fanout.groups`
//! policies (before the steps), then, once the steps are read, how the steps use them.

use std::collections::{BTreeMap, BTreeSet};

use super::check::{Check, get};
use super::model::GraphStep;
use super::{PackageError, join};
use crate::runx::yaml::{YamlEntry, YamlNode, YamlValue};

/// One group's policy, as far as the step checks need it.
pub(super) struct FanoutGroup {
    id: String,
    line: usize,
    min_success: Option<u64>,
    /// The steps its threshold gates name, then each step its conflict gates name.
    gate_steps: Vec<(&'static str, String)>,
}

/// Runx's `validate_fanout_groups`: the graph's `fanout` (at `field`), when it has one.
pub(super) fn check_fanout_groups(
    check: &Check<'_>,
    graph: &[YamlEntry],
    field: &str,
) -> Result<Vec<FanoutGroup>, PackageError> {
    let Some(fanout) = get(graph, "fanout").filter(|entry| !entry.value.is_null()) else {
        return Ok(Vec::new());
    };
    let fanout_field = join(field, "fanout");
    let fanout_entries = mapping(check, &fanout.value, &fanout_field, "fanout")?;
    let groups_node = get(fanout_entries, "groups").map(|entry| &entry.value);
    let groups = match groups_node.map(|node| &node.value) {
        Some(YamlValue::Mapping(groups)) => groups,
        _ => {
            let line = groups_node.map_or(fanout.line, |node| node.line);
            return Err(refuse(
                check,
                line,
                &join(&fanout_field, "groups"),
                "declare the groups the fanout steps name: fanout: {groups: {<id>: {strategy: …}}}",
                "fanout.groups must be an object.",
            ));
        }
    };
    let mut sorted: Vec<&YamlEntry> = groups.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    sorted
        .into_iter()
        .map(|group| check_group(check, group, &fanout_field))
        .collect()
}

fn check_group(
    check: &Check<'_>,
    group: &YamlEntry,
    fanout_field: &str,
) -> Result<FanoutGroup, PackageError> {
    let id = group.key.clone();
    let runx_field = format!("fanout.groups.{id}");
    let field = format!("{fanout_field}.groups.{id}");
    let entries = mapping(check, &group.value, &field, &runx_field)?;
    let one_of =
        |key: &str, allowed: &[&str], words: &str| -> Result<Option<String>, PackageError> {
            let Some(entry) = get(entries, key).filter(|entry| !entry.value.is_null()) else {
                return Ok(None);
            };
            match entry.value.as_str() {
                Some(value) if allowed.contains(&value) => Ok(Some(value.to_owned())),
                Some(_) => Err(refuse(
                    check,
                    entry.line,
                    &join(&field, key),
                    &format!("use one of: {}", allowed.join(", ")),
                    &format!("{runx_field}.{key} must be {words}."),
                )),
                None => Err(refuse(
                    check,
                    entry.line,
                    &join(&field, key),
                    "must be a string",
                    &format!("{runx_field}.{key} must be a string."),
                )),
            }
        };
    let strategy = one_of("strategy", &["all", "any", "quorum"], "all, any, or quorum")?
        .unwrap_or_else(|| "all".to_owned());
    let min_success = match get(entries, "min_success").filter(|entry| !entry.value.is_null()) {
        None => None,
        Some(entry) => {
            let number = match &entry.value.value {
                YamlValue::Number(number) => number.as_f64(),
                _ => None,
            };
            let Some(number) = number else {
                return Err(refuse(
                    check,
                    entry.line,
                    &join(&field, "min_success"),
                    "must be a whole number of branches",
                    &format!("{runx_field}.min_success must be a finite number."),
                ));
            };
            if number.fract() != 0.0 || number < 1.0 {
                return Err(refuse(
                    check,
                    entry.line,
                    &join(&field, "min_success"),
                    "must be a whole number of branches, at least 1",
                    &format!("{runx_field}.min_success must be a positive integer."),
                ));
            }
            entry.value.as_u64()
        }
    };
    if strategy == "quorum" && min_success.is_none() {
        return Err(refuse(
            check,
            group.line,
            &join(&field, "min_success"),
            "a quorum needs min_success: how many branches must succeed",
            &format!("{runx_field}.min_success must be a positive integer for quorum sync."),
        ));
    }
    one_of(
        "on_branch_failure",
        &["halt", "continue"],
        "halt or continue",
    )?;
    let mut gate_steps = Vec::new();
    for (key, conflict) in [("threshold_gates", false), ("conflict_gates", true)] {
        let Some(entry) = get(entries, key).filter(|entry| !entry.value.is_null()) else {
            continue;
        };
        let gates_field = format!("{runx_field}.{key}");
        let Some(gates) = entry.value.as_sequence() else {
            return Err(refuse(
                check,
                entry.line,
                &join(&field, key),
                "must be a list of gates",
                &format!("{gates_field} must be an array."),
            ));
        };
        for (index, gate) in gates.iter().enumerate() {
            let gate_field = format!("{gates_field}.{index}");
            let steps = check_gate(check, gate, &gate_field, conflict)?;
            let kind = if conflict {
                "conflict_gates"
            } else {
                "threshold_gates"
            };
            gate_steps.extend(steps.into_iter().map(|step| (kind, step)));
        }
    }
    Ok(FanoutGroup {
        id,
        line: group.line,
        min_success,
        gate_steps,
    })
}

/// A gate's fields; the steps it names.
fn check_gate(
    check: &Check<'_>,
    gate: &YamlNode,
    gate_field: &str,
    conflict: bool,
) -> Result<Vec<String>, PackageError> {
    let entries = mapping(check, gate, gate_field, gate_field)?;
    for key in ["contains", "matches", "semantic", "prompt", "sentiment"] {
        if let Some(entry) = get(entries, key) {
            return Err(refuse(
                check,
                entry.line,
                &join(gate_field, key),
                "a gate compares structured fields: use field and above (or steps)",
                &format!(
                    "{gate_field}.{key} is not supported; graph policy must evaluate structured \
                     fields."
                ),
            ));
        }
    }
    let string = |key: &str| -> Result<Option<String>, PackageError> {
        match get(entries, key).map(|entry| (entry, &entry.value.value)) {
            None | Some((_, YamlValue::Null)) => Ok(None),
            Some((_, YamlValue::String(value))) => Ok(Some(value.clone())),
            Some((entry, _)) => Err(refuse(
                check,
                entry.line,
                &join(gate_field, key),
                "must be a string",
                &format!("{gate_field}.{key} must be a string."),
            )),
        }
    };
    let required = |key: &str| -> Result<String, PackageError> {
        string(key)?
            .filter(|value| !value.is_empty())
            .ok_or_else(|| {
                refuse(
                    check,
                    gate.line,
                    &join(gate_field, key),
                    "is required",
                    &format!("{gate_field}.{key} is required."),
                )
            })
    };
    let action_is_known = |action: Option<String>| {
        action.is_some_and(|action| matches!(action.as_str(), "pause" | "escalate"))
    };
    if conflict {
        required("field")?;
        let steps = match get(entries, "steps").filter(|entry| !entry.value.is_null()) {
            None => Vec::new(),
            Some(entry) => entry
                .value
                .as_sequence()
                .filter(|items| items.iter().all(|item| item.as_str().is_some()))
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|item| item.as_str().map(str::to_owned))
                        .collect()
                })
                .ok_or_else(|| {
                    refuse(
                        check,
                        entry.line,
                        &join(gate_field, "steps"),
                        "must be a list of step ids",
                        &format!("{gate_field}.steps must be an array of strings."),
                    )
                })?,
        };
        if !action_is_known(string("action")?) {
            return Err(action_refusal(check, gate, gate_field));
        }
        return Ok(steps);
    }
    let step = required("step")?;
    required("field")?;
    let above = get(entries, "above").filter(|entry| !entry.value.is_null());
    match above.map(|entry| (entry, &entry.value.value)) {
        Some((_, YamlValue::Number(number))) if number.as_f64().is_some() => {}
        None => {
            return Err(refuse(
                check,
                gate.line,
                &join(gate_field, "above"),
                "is required: the value above which the gate acts",
                &format!("{gate_field}.above is required."),
            ));
        }
        Some((entry, _)) => {
            return Err(refuse(
                check,
                entry.line,
                &join(gate_field, "above"),
                "must be a number",
                &format!("{gate_field}.above must be a finite number."),
            ));
        }
    }
    if !action_is_known(string("action")?) {
        return Err(action_refusal(check, gate, gate_field));
    }
    Ok(vec![step])
}

fn action_refusal(check: &Check<'_>, gate: &YamlNode, gate_field: &str) -> PackageError {
    refuse(
        check,
        gate.line,
        &join(gate_field, "action"),
        "say what the gate does: pause or escalate",
        &format!("{gate_field}.action must be pause or escalate."),
    )
}

/// Runx's `validate_fanout_step_bindings`: every step's group is declared, every group is
/// used by contiguous steps, no more successes are required than it has branches, its gates
/// name its own steps, and no branch reads another branch of its group.
pub(super) fn check_fanout_steps(
    check: &Check<'_>,
    groups: &[FanoutGroup],
    steps: &[GraphStep],
    field: &str,
) -> Result<(), PackageError> {
    let mut members: BTreeMap<&str, Vec<&GraphStep>> = BTreeMap::new();
    for step in steps {
        let Some(group) = step.fanout_group.as_deref() else {
            continue;
        };
        if !groups.iter().any(|declared| declared.id == group) {
            return Err(refuse(
                check,
                step.line,
                &format!("{field}.steps.{}.fanout_group", step.id),
                "name a group declared under fanout.groups",
                &format!(
                    "steps.{}.fanout_group references unknown fanout group '{group}'.",
                    step.id
                ),
            ));
        }
        members.entry(group).or_default().push(step);
    }
    for group in groups {
        let group_steps = members.get(group.id.as_str()).cloned().unwrap_or_default();
        let at = |message: &str, runx: String| {
            refuse(
                check,
                group.line,
                &format!("{field}.fanout.groups.{}", group.id),
                message,
                &runx,
            )
        };
        if group_steps.is_empty() {
            return Err(at(
                "no step names this group; remove it or set fanout_group on its steps",
                format!("fanout.groups.{} is not used by any graph step.", group.id),
            ));
        }
        let positions: Vec<usize> = group_steps
            .iter()
            .filter_map(|member| steps.iter().position(|step| step.id == member.id))
            .collect();
        let (first, last) = (
            positions.iter().min().copied().unwrap_or_default(),
            positions.iter().max().copied().unwrap_or_default(),
        );
        if steps[first..=last]
            .iter()
            .any(|step| step.fanout_group.as_deref() != Some(group.id.as_str()))
        {
            return Err(at(
                "a group's branches are one run of steps; move the other steps out of it",
                format!("fanout group '{}' steps must be contiguous.", group.id),
            ));
        }
        if group
            .min_success
            .is_some_and(|min| min > group_steps.len() as u64)
        {
            return Err(at(
                "asks more successes than the group has branches",
                format!(
                    "fanout.groups.{}.min_success cannot exceed the number of branches.",
                    group.id
                ),
            ));
        }
        let ids: BTreeSet<&str> = group_steps.iter().map(|step| step.id.as_str()).collect();
        if let Some((kind, step)) = group
            .gate_steps
            .iter()
            .find(|(_, step)| !ids.contains(step.as_str()))
        {
            return Err(at(
                "a gate watches branches of its own group",
                format!(
                    "fanout.groups.{}.{kind} step '{step}' is not in the fanout group.",
                    group.id
                ),
            ));
        }
    }
    for step in steps {
        let Some(group) = step.fanout_group.as_deref() else {
            continue;
        };
        for (input, from) in &step.context {
            let from_step = from.split_once('.').map_or(from.as_str(), |(step, _)| step);
            let sibling = steps
                .iter()
                .any(|other| other.id == from_step && other.fanout_group.as_deref() == Some(group));
            if sibling {
                return Err(refuse(
                    check,
                    step.line,
                    &format!("{field}.steps.{}.context.{input}", step.id),
                    "branches of one group run side by side; read a step before the group",
                    &format!(
                        "steps.{}.context.{input} cannot depend on another branch in the same \
                         fanout group.",
                        step.id
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn mapping<'n>(
    check: &Check<'_>,
    node: &'n YamlNode,
    field: &str,
    runx_field: &str,
) -> Result<&'n [YamlEntry], PackageError> {
    node.as_mapping().ok_or_else(|| {
        refuse(
            check,
            node.line,
            field,
            &format!("must be a mapping, not {}", node.kind()),
            &format!("{runx_field} must be an object."),
        )
    })
}

/// A refusal in Runx's words (`<file>: <runx>`), MindRune's hint second.
fn refuse(check: &Check<'_>, line: usize, field: &str, message: &str, runx: &str) -> PackageError {
    check.err_runx(line, field, message, format!("{}: {runx}", check.file))
}

#[cfg(test)]
mod tests {
    use super::super::first_refusal_line;

    /// A graph runner whose steps `b1` and `b2` are branches (of `g` and `b2_group`), `extra`
    /// steps after them, then `c`; `fanout` is the graph's `fanout:` block.
    fn profile(fanout: &str, b2_group: &str, extra: &str) -> String {
        let step = |id: &str, group: Option<&str>| {
            let fanout = group.map_or(String::new(), |group| {
                format!("          mode: fanout\n          fanout_group: {group}\n")
            });
            format!(
                "        - id: {id}\n{fanout}          run:\n            type: cli-tool\n            \
                 command: node\n            args: [./s.cjs]\n"
            )
        };
        format!(
            "skill: demo\nrunners:\n  main:\n    default: true\n    type: graph\n    graph:\n      \
             name: demo\n      result_from: [c]\n{fanout}      steps:\n{}{}{extra}{}",
            step("b1", Some("g")),
            step("b2", Some(b2_group)),
            step("c", None),
        )
    }

    fn first_line(profile: &str) -> Option<String> {
        first_refusal_line(&[
            (
                "SKILL.md",
                b"---\nname: demo\ndescription: A demo.\n---\n\nUse it.\n",
            ),
            ("X.yaml", profile.as_bytes()),
            ("s.cjs", b"console.log('{}')\n"),
        ])
    }

    fn groups(body: &str) -> String {
        format!("      fanout:\n        groups:\n{body}")
    }

    // Every expected line is the real runx-cli 0.8.2's (`runx skill inspect`).
    #[test]
    fn fanout_groups_and_their_steps_are_checked_in_runx_words() {
        let gate = |gate: &str| groups(&format!("          g:\n            {gate}\n"));
        let branch = |id: &str, context: &str| {
            format!(
                "        - id: {id}\n          mode: fanout\n          fanout_group: g\n{context}          \
                 run:\n            type: cli-tool\n            command: node\n            args: \
                 [./s.cjs]\n"
            )
        };
        let middle = "        - id: mid\n          run:\n            type: cli-tool\n            \
                      command: node\n            args: [./s.cjs]\n";
        let cases: Vec<(String, Option<&str>)> = vec![
            (
                profile(&groups("          g: {strategy: all}\n"), "g", ""),
                None,
            ),
            (
                profile(
                    &gate(
                        "conflict_gates:\n              - {field: x, steps: [b1, b2], action: escalate}",
                    ),
                    "g",
                    "",
                ),
                None,
            ),
            (
                profile("      fanout: {}\n", "g", ""),
                Some("X.yaml: fanout.groups must be an object."),
            ),
            (
                profile(&groups("          g: 3\n"), "g", ""),
                Some("X.yaml: fanout.groups.g must be an object."),
            ),
            (
                profile(&groups("          g: {strategy: most}\n"), "g", ""),
                Some("X.yaml: fanout.groups.g.strategy must be all, any, or quorum."),
            ),
            (
                profile(&groups("          g: {strategy: quorum}\n"), "g", ""),
                Some(
                    "X.yaml: fanout.groups.g.min_success must be a positive integer for quorum sync.",
                ),
            ),
            (
                profile(
                    &groups("          g: {strategy: quorum, min_success: 0}\n"),
                    "g",
                    "",
                ),
                Some("X.yaml: fanout.groups.g.min_success must be a positive integer."),
            ),
            (
                profile(
                    &groups("          g: {strategy: quorum, min_success: two}\n"),
                    "g",
                    "",
                ),
                Some("X.yaml: fanout.groups.g.min_success must be a finite number."),
            ),
            (
                profile(
                    &groups("          g: {strategy: quorum, min_success: 3}\n"),
                    "g",
                    "",
                ),
                Some("X.yaml: fanout.groups.g.min_success cannot exceed the number of branches."),
            ),
            (
                profile(&groups("          g: {on_branch_failure: stop}\n"), "g", ""),
                Some("X.yaml: fanout.groups.g.on_branch_failure must be halt or continue."),
            ),
            (
                profile(&groups("          g: {}\n"), "h", ""),
                Some("X.yaml: steps.b2.fanout_group references unknown fanout group 'h'."),
            ),
            (
                profile("", "g", ""),
                Some("X.yaml: steps.b1.fanout_group references unknown fanout group 'g'."),
            ),
            (
                profile(&groups("          g: {}\n          h: {}\n"), "g", ""),
                Some("X.yaml: fanout.groups.h is not used by any graph step."),
            ),
            (
                profile(
                    &gate(
                        "threshold_gates:\n              - {step: c, field: score, above: 5, action: pause}",
                    ),
                    "g",
                    "",
                ),
                Some(
                    "X.yaml: fanout.groups.g.threshold_gates step 'c' is not in the fanout group.",
                ),
            ),
            (
                profile(
                    &gate(
                        "threshold_gates:\n              - {step: b1, field: s, above: 5, action: pause, prompt: x}",
                    ),
                    "g",
                    "",
                ),
                Some(
                    "X.yaml: fanout.groups.g.threshold_gates.0.prompt is not supported; graph \
                     policy must evaluate structured fields.",
                ),
            ),
            (
                profile(
                    &gate("threshold_gates:\n              - {step: b1, field: s, action: pause}"),
                    "g",
                    "",
                ),
                Some("X.yaml: fanout.groups.g.threshold_gates.0.above is required."),
            ),
            (
                profile(
                    &gate(
                        "threshold_gates:\n              - {step: b1, field: s, above: 5, action: stop}",
                    ),
                    "g",
                    "",
                ),
                Some("X.yaml: fanout.groups.g.threshold_gates.0.action must be pause or escalate."),
            ),
            (
                profile(&gate("threshold_gates: {a: 1}"), "g", ""),
                Some("X.yaml: fanout.groups.g.threshold_gates must be an array."),
            ),
            (
                profile(
                    &gate(
                        "conflict_gates:\n              - {field: x, steps: [b1, c], action: escalate}",
                    ),
                    "g",
                    "",
                ),
                Some("X.yaml: fanout.groups.g.conflict_gates step 'c' is not in the fanout group."),
            ),
            (
                profile(
                    &groups("          g: {}\n"),
                    "g",
                    &format!("{middle}{}", branch("b3", "")),
                ),
                Some("X.yaml: fanout group 'g' steps must be contiguous."),
            ),
            (
                profile(
                    &groups("          g: {}\n"),
                    "g",
                    &branch("b3", "          context:\n            prev: b1.note\n"),
                ),
                Some(
                    "X.yaml: steps.b3.context.prev cannot depend on another branch in the same \
                     fanout group.",
                ),
            ),
        ];
        for (profile, expected) in cases {
            assert_eq!(first_line(&profile).as_deref(), expected, "{profile}");
        }
    }
}
