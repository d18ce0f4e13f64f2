//! `type: cli-tool` runners: one process in the case's scratch copy with a scrubbed environment.
//!
//! Runx delivers a cli-tool's inputs through its environment, never its arguments:
//! `RUNX_INPUTS_JSON` holds the whole input object (or, above 48 KiB, `RUNX_INPUTS_PATH` names a
//! file holding it) and `RUNX_INPUT_<NAME>` holds each value of at most 8 KiB (strings raw,
//! everything else as JSON, null as empty). `RUNX_CWD` names the workspace. The child inherits
//! nothing else from us except `PATH`, `LANG`, `LC_ALL` and `SHELL`, and its `HOME` is a fresh
//! directory, so a harness replay never sees the operator's credentials or dotfiles.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::child::{Limits, run_bounded};

/// Runx's threshold above which the whole input object travels as a file.
const MAX_INLINE_INPUTS_BYTES: usize = 48 * 1024;

/// Runx's threshold above which one input is not given its own variable.
const MAX_INLINE_INPUT_VALUE_BYTES: usize = 8 * 1024;

/// Captured stdout or stderr beyond this is a failure, as in Runx, not a silent clip.
const OUTPUT_LIMIT_BYTES: usize = 4 * 1024 * 1024;

/// The host variables a child may inherit.
pub(crate) const INHERITED: [&str; 4] = ["PATH", "LANG", "LC_ALL", "SHELL"];

/// What the process did.
#[derive(Debug, Clone)]
pub(crate) struct ProcessResult {
    /// True when it exited 0 within the timeout and its output fit the capture limit.
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
}

/// The variable name Runx gives one input: ASCII alphanumerics upper-cased, every run of other
/// characters collapsed to one `_` (none leading).
pub(crate) fn input_env_name(key: &str) -> String {
    let mut suffix = String::new();
    let mut pending = false;
    for ch in key.chars() {
        if ch.is_ascii_alphanumeric() {
            if pending && !suffix.is_empty() {
                suffix.push('_');
            }
            suffix.push(ch.to_ascii_uppercase());
            pending = false;
        } else {
            pending = true;
        }
    }
    format!("RUNX_INPUT_{suffix}")
}

/// How one input value is spelled in its variable.
pub(crate) fn env_value(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `{{name}}` in an argument is replaced by that input's spelling, as Runx's template does.
fn resolve_template(template: &str, inputs: &Map<String, Value>) -> String {
    let mut resolved = template.to_owned();
    for (key, value) in inputs {
        resolved = resolved.replace(&format!("{{{{{key}}}}}"), &env_value(value));
    }
    resolved
}

/// Everything needed to spawn the runner's command.
pub(crate) struct CliRequest<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    /// The runner's `cwd`, relative to the package; it may not leave the scratch copy.
    pub cwd: Option<&'a str>,
    pub inputs: &'a Map<String, Value>,
    /// Declared `environment` names with their values from the case's `env`.
    pub declared_env: &'a BTreeMap<String, String>,
    pub scratch: &'a Path,
    pub home: &'a Path,
    pub timeout: Duration,
    /// The source's `input_mode: stdin`: Runx also writes the input object to its stdin.
    pub stdin: bool,
}

/// The child's complete environment; exposed so tests can check the scrubbing directly.
pub(crate) fn child_env(
    request: &CliRequest<'_>,
    host: impl Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, String> {
    let mut env = BTreeMap::new();
    for name in INHERITED {
        if let Some(value) = host(name) {
            env.insert(name.to_owned(), value);
        }
    }
    env.entry("PATH".to_owned())
        .or_insert_with(|| "/usr/local/bin:/usr/bin:/bin".to_owned());
    env.insert("HOME".to_owned(), request.home.display().to_string());
    env.insert("RUNX_CWD".to_owned(), request.scratch.display().to_string());
    for (name, value) in request.declared_env {
        env.insert(name.clone(), value.clone());
    }
    let serialized = serde_json::to_string(request.inputs).map_err(|err| err.to_string())?;
    if serialized.len() > MAX_INLINE_INPUTS_BYTES {
        let path = request.home.join("runx-inputs.json");
        std::fs::write(&path, &serialized)
            .map_err(|err| format!("writing {}: {err}", path.display()))?;
        env.insert("RUNX_INPUTS_PATH".to_owned(), path.display().to_string());
    } else {
        env.insert("RUNX_INPUTS_JSON".to_owned(), serialized);
    }
    let mut owners: BTreeMap<String, &String> = BTreeMap::new();
    for (key, value) in request.inputs {
        let spelled = env_value(value);
        if spelled.len() > MAX_INLINE_INPUT_VALUE_BYTES {
            continue;
        }
        let name = input_env_name(key);
        if let Some(prior) = owners.insert(name.clone(), key) {
            return Err(format!(
                "input keys {prior:?} and {key:?} collide on environment variable {name}"
            ));
        }
        env.insert(name, spelled);
    }
    Ok(env)
}

fn working_dir(scratch: &Path, cwd: Option<&str>) -> Result<PathBuf, String> {
    let Some(cwd) = cwd else {
        return Ok(scratch.to_path_buf());
    };
    let relative = Path::new(cwd);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!("cwd {cwd:?} leaves the package"));
    }
    Ok(scratch.join(relative))
}

/// What a replay's refusal of a cli-tool argument outside the package says (Runx runs the file
/// beside the package; the Lab's replay holds a copy of the package alone).
pub(crate) const ARG_OUTSIDE_PACKAGE: &str = "names a file outside the package";

/// The second line of that refusal: where MindRune is stricter than Runx.
pub(crate) const ARG_OUTSIDE_STRICTER: &str = "  Runx runs a cli-tool's file beside the package and accepts \
     it, MindRune is stricter: a replay holds the package alone, so a package must carry the \
     files it runs (move it inside the package)";

/// Whether a relative path argument, read from the package folder `cwd` (itself relative to
/// the package), climbs out of the package.
fn leaves_package(cwd: Option<&str>, arg: &str) -> bool {
    if !arg.starts_with("../") && arg != ".." {
        return false;
    }
    let mut depth = cwd.map_or(0, |cwd| {
        Path::new(cwd)
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .count()
    });
    for component in Path::new(arg).components() {
        match component {
            std::path::Component::ParentDir if depth == 0 => return true,
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
    }
    false
}

/// Spawn, capture and wait, killing the child at the timeout.
pub(crate) fn run(request: &CliRequest<'_>) -> Result<ProcessResult, String> {
    let env = child_env(request, |name| std::env::var(name).ok())?;
    let cwd = working_dir(request.scratch, request.cwd)?;
    let args: Vec<String> = request
        .args
        .iter()
        .map(|arg| resolve_template(arg, request.inputs))
        .collect();
    if let Some(arg) = args.iter().find(|arg| leaves_package(request.cwd, arg)) {
        return Err(format!(
            "cli-tool {} argument {arg:?} {ARG_OUTSIDE_PACKAGE}",
            request.command
        ));
    }
    let mut command = Command::new(request.command);
    command.args(&args).current_dir(&cwd).env_clear().envs(&env);
    let limits = Limits {
        timeout: request.timeout,
        max_output: OUTPUT_LIMIT_BYTES,
    };
    // Its own process group, killed whole at exit or timeout: nothing it starts outlives it.
    let stdin = if request.stdin {
        Some(serde_json::to_vec(request.inputs).map_err(|err| err.to_string())?)
    } else {
        None
    };
    let done = run_bounded(command, stdin, true, limits)
        .map_err(|err| format!("spawning {:?}: {err}", request.command))?;
    let over = done.overflowed;
    let exit_code = done.status.and_then(|status| status.code());
    Ok(ProcessResult {
        success: done.status.is_some_and(|status| status.success()) && !done.timed_out && !over,
        stdout: if over {
            String::new()
        } else {
            String::from_utf8_lossy(&done.stdout).into_owned()
        },
        stderr: if over {
            format!("cli-tool output exceeded {OUTPUT_LIMIT_BYTES} bytes; stdout/stderr omitted")
        } else {
            String::from_utf8_lossy(&done.stderr).into_owned()
        },
        exit_code,
        timed_out: done.timed_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_climbing_out_of_the_package_is_found_from_the_cwd() {
        assert!(leaves_package(None, "../run.mjs"));
        assert!(leaves_package(None, ".."));
        assert!(leaves_package(Some("bin"), "../../run.mjs"));
        assert!(leaves_package(None, "../pkg/../../x"));
        assert!(!leaves_package(Some("bin"), "../run.mjs"));
        assert!(!leaves_package(None, "run.mjs"));
        assert!(!leaves_package(None, "./run.mjs"));
        assert!(!leaves_package(None, "/usr/bin/env"));
        assert!(!leaves_package(None, "..foo"));
    }

    #[test]
    fn names_follow_runx() {
        assert_eq!(input_env_name("message"), "RUNX_INPUT_MESSAGE");
        assert_eq!(input_env_name("max-bytes.v2"), "RUNX_INPUT_MAX_BYTES_V2");
        assert_eq!(input_env_name("_lead"), "RUNX_INPUT_LEAD");
        assert_eq!(env_value(&serde_json::json!({"a": 1})), "{\"a\":1}");
        assert_eq!(env_value(&Value::Null), "");
    }

    #[test]
    fn child_env_keeps_only_the_allowlist() {
        let inputs = serde_json::json!({"message": "hi", "n": 3})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let declared = BTreeMap::new();
        let request = CliRequest {
            command: "true",
            args: &[],
            cwd: None,
            inputs: &inputs,
            declared_env: &declared,
            scratch: Path::new("/scratch"),
            home: Path::new("/home-x"),
            timeout: Duration::from_secs(1),
            stdin: false,
        };
        let env = child_env(&request, |name| match name {
            "PATH" => Some("/bin".to_owned()),
            "AWS_SECRET_ACCESS_KEY" => Some("leak".to_owned()),
            _ => None,
        });
        let Ok(env) = env else {
            panic!("child env failed");
        };
        let names: Vec<&str> = env.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "HOME",
                "PATH",
                "RUNX_CWD",
                "RUNX_INPUTS_JSON",
                "RUNX_INPUT_MESSAGE",
                "RUNX_INPUT_N"
            ]
        );
        assert_eq!(env.get("RUNX_INPUT_N").map(String::as_str), Some("3"));
    }
}
