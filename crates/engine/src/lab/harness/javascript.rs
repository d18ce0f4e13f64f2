//! The sandbox for a package's `type: javascript` modules: an embedded QuickJS with no ambient
//! authority.
//!
//! Runx runs deterministic domain modules in an isolated worker that "has no environment,
//! filesystem, network, clock or randomness" and receives only its validated in-memory module
//! bundle, its JSON inputs and a frozen `context.environment` holding the declared names. We
//! reproduce that contract in [`run_module`]: the module loader only serves files from the
//! bundle the caller hands us, the global object loses its clock and randomness, a memory limit
//! caps the heap and an interrupt handler enforces the wall limit inside a tight loop.
//!
//! The interrupt handler only runs between bytecode instructions, so a builtin that loops in C
//! (`Array.prototype.join.call({length: 2 ** 53 - 1}, "")`, or `reverse`, `sort`, `flat` on
//! `{length: 2 ** 32}`) never reaches it and never returns; a thread cannot be stopped from
//! outside. [`run_in_worker`] is therefore the bounded path: it sends the invocation as a
//! [`WorkerRequest`] to a separate process (for the CLI, `mindrune lab js-worker`, which
//! answers through [`serve_worker`]) with an empty environment and an empty working folder, and
//! kills that process's whole group at the wall limit plus [`WORKER_STARTUP`]. Calling
//! [`run_module`] directly, as library users and unit tests do, bounds JavaScript loops only.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::{CatchResultExt, Context, Ctx, Function, Module, Object, Promise, Runtime, Value};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::child::{Limits, run_bounded};

/// Runx's default wall limit for one JavaScript invocation.
pub(crate) const DEFAULT_WALL: Duration = Duration::from_secs(2);

/// The widest wall limit a runner may declare through `timeout_seconds` (1 through 30).
pub(crate) const MAX_TIMEOUT_SECONDS: u64 = 30;

/// Runx gives each worker a 64 MiB heap; a module that needs more is outside its contract.
pub(crate) const HEAP_BYTES: usize = 64 * 1024 * 1024;

/// A deep recursion must fail as a JavaScript error, not overflow the host thread's stack.
const STACK_BYTES: usize = 1024 * 1024;

/// What one invocation may use.
#[derive(Debug, Clone, Copy)]
pub struct JsLimits {
    /// Wall-clock ceiling for loading the modules and running the export together.
    pub wall: Duration,
    /// Heap ceiling handed to QuickJS.
    pub heap_bytes: usize,
}

impl Default for JsLimits {
    fn default() -> Self {
        Self {
            wall: DEFAULT_WALL,
            heap_bytes: HEAP_BYTES,
        }
    }
}

impl JsLimits {
    /// The limits for a runner that may declare `timeout_seconds`; values outside 1..=30 are
    /// refused rather than clamped, because Runx rejects them at parse time.
    pub fn for_timeout(timeout_seconds: Option<u64>) -> Result<Self, String> {
        match timeout_seconds {
            None => Ok(Self::default()),
            Some(seconds) if (1..=MAX_TIMEOUT_SECONDS).contains(&seconds) => Ok(Self {
                wall: Duration::from_secs(seconds),
                ..Self::default()
            }),
            Some(seconds) => Err(format!(
                "timeout_seconds {seconds} is outside 1..={MAX_TIMEOUT_SECONDS}"
            )),
        }
    }
}

/// One call of a module export.
#[derive(Debug, Clone)]
pub struct JsInvocation<'a> {
    /// Every module the worker may load, by package-relative path (`weather-forecast.mjs`).
    pub bundle: &'a BTreeMap<String, String>,
    /// The package-relative path of the module whose export is called.
    pub entry: &'a str,
    /// The export to call; Runx's default is `default`.
    pub export: &'a str,
    /// The first argument.
    pub inputs: &'a Json,
    /// The declared environment names and their values, frozen into `context.environment`.
    pub environment: &'a BTreeMap<String, String>,
    /// Wall and heap ceilings.
    pub limits: JsLimits,
}

/// Why an invocation produced no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsError {
    /// The bundle or a module's imports break the sandbox's rules (a path outside the bundle).
    ModuleRejected(String),
    /// The module threw, failed to parse or returned a promise that never settled.
    Execution(String),
    /// The wall limit was reached and the interrupt handler stopped the code.
    WallLimit(Duration),
    /// The export returned something `JSON.stringify` cannot represent as a value.
    OutputRejected(String),
}

impl std::fmt::Display for JsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ModuleRejected(message) => write!(f, "module rejected: {message}"),
            Self::Execution(message) => write!(f, "execution failed: {message}"),
            Self::WallLimit(wall) => {
                write!(f, "wall limit of {} ms reached", wall.as_millis())
            }
            Self::OutputRejected(message) => write!(f, "output rejected: {message}"),
        }
    }
}

impl std::error::Error for JsError {}

/// The globals a deterministic module must not reach, removed before any module is loaded.
/// `performance` is a clock, `WeakRef` and `FinalizationRegistry` observe the garbage
/// collector, and the rest do not exist in QuickJS but are deleted anyway so a future engine
/// update cannot quietly add them. `Date` stays, with its clock pinned (see [`PRELUDE`]).
const REMOVED_GLOBALS: [&str; 7] = [
    "performance",
    "WeakRef",
    "FinalizationRegistry",
    "fetch",
    "require",
    "process",
    "setTimeout",
];

/// Installed before the modules load: the global clean-up, `Date` with its clock pinned at the
/// epoch, a throwing `Math.random` and the frozen `Runx.parseUrl` helper. It is plain script
/// text so the sandbox's shape can be read in one place.
///
/// Runx's worker keeps `Date` but gives it a fixed clock at 0 (`Date.now() === 0`, `new Date()`
/// is the epoch), so a module may parse and compare timestamps it was handed while still
/// having no clock. QuickJS reads its clock in C, so the pinned clock is a wrapper: the
/// constructor and `Date.now` answer 0 where QuickJS would read the time, every other call
/// (`Date.parse`, `Date.UTC`, dates built from a value or from fields) goes to the real
/// constructor, and the prototype is QuickJS's own, so `instanceof Date` and every method hold.
const PRELUDE: &str = r##"
"use strict";
(() => {
  const removed = __REMOVED__;
  for (const name of removed) {
    delete globalThis[name];
  }
  const RealDate = Date;
  const PinnedDate = function Date(...args) {
    if (new.target === undefined) {
      return new RealDate(0).toString();
    }
    return Reflect.construct(RealDate, args.length === 0 ? [0] : args, new.target);
  };
  Object.defineProperty(PinnedDate, "length", { value: 7 });
  Object.defineProperty(PinnedDate, "prototype", {
    value: RealDate.prototype,
    configurable: false,
    enumerable: false,
    writable: false,
  });
  Object.defineProperty(RealDate.prototype, "constructor", {
    value: PinnedDate,
    configurable: true,
    enumerable: false,
    writable: true,
  });
  for (const [name, value] of [["now", function now() { return 0; }], ["parse", RealDate.parse], ["UTC", RealDate.UTC]]) {
    Object.defineProperty(PinnedDate, name, {
      value,
      configurable: true,
      enumerable: false,
      writable: true,
    });
  }
  Object.defineProperty(globalThis, "Date", {
    value: PinnedDate,
    configurable: true,
    enumerable: false,
    writable: true,
  });
  Object.defineProperty(Math, "random", {
    value() { throw new TypeError("Math.random is unavailable in deterministic modules"); },
    configurable: false,
    enumerable: false,
    writable: false,
  });
  const pattern = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:([^@/?#]*)@)?(\[[0-9A-Fa-f:.]+\]|[^:/?#]*)(?::([0-9]*))?([^?#]*)(\?[^#]*)?(#.*)?$/;
  const defaults = { "http:": "80", "https:": "443" };
  function parseUrl(value) {
    if (typeof value !== "string") {
      throw new TypeError("Runx.parseUrl expects a string");
    }
    const match = pattern.exec(value.trim());
    if (match === null || match[3] === "") {
      throw new TypeError("Runx.parseUrl expects an absolute URL: " + value);
    }
    const protocol = match[1].toLowerCase() + ":";
    const hostname = match[3].toLowerCase();
    const explicitPort = match[4] === undefined ? "" : match[4];
    const port = explicitPort === defaults[protocol] ? "" : explicitPort;
    const host = port === "" ? hostname : hostname + ":" + port;
    const pathname = match[5] === "" ? "/" : match[5];
    const search = match[6] === undefined || match[6] === "?" ? "" : match[6];
    const hash = match[7] === undefined || match[7] === "#" ? "" : match[7];
    const userinfo = match[2] === undefined ? "" : match[2];
    const split = userinfo.indexOf(":");
    return Object.freeze({
      href: protocol + "//" + (userinfo === "" ? "" : userinfo + "@") + host + pathname + search + hash,
      protocol,
      username: split < 0 ? userinfo : userinfo.slice(0, split),
      password: split < 0 ? "" : userinfo.slice(split + 1),
      host,
      hostname,
      port,
      pathname,
      search,
      hash,
      origin: protocol + "//" + host,
    });
  }
  Object.freeze(parseUrl);
  Object.defineProperty(globalThis, "Runx", {
    value: Object.freeze({ parseUrl }),
    configurable: false,
    enumerable: false,
    writable: false,
  });
})();
"##;

/// Build the frozen second argument from the environment JSON text.
const CONTEXT_FACTORY: &str = r#"
(environmentJson) => {
  const environment = Object.freeze(JSON.parse(environmentJson));
  return Object.freeze({ environment });
}
"#;

/// Serves modules from the in-memory bundle only. Resolution accepts relative specifiers that
/// stay inside the bundle root and name a file the bundle holds; a bare specifier (`node:fs`),
/// an absolute path or a `..` that climbs out is refused.
struct BundleLoader {
    bundle: BTreeMap<String, String>,
}

/// Resolve `specifier` imported from `base` against the bundle's root, or say why not.
pub(crate) fn resolve_import(base: &str, specifier: &str) -> Result<String, String> {
    if !(specifier.starts_with("./") || specifier.starts_with("../")) {
        return Err(format!(
            "import {specifier:?} from {base:?} is not a relative path inside the bundle"
        ));
    }
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for segment in specifier.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "import {specifier:?} from {base:?} climbs out of the bundle"
                    ));
                }
            }
            other => parts.push(other),
        }
    }
    Ok(parts.join("/"))
}

impl Resolver for BundleLoader {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        let resolved = resolve_import(base, name)
            .map_err(|message| rquickjs::Error::new_resolving_message(base, name, message))?;
        if self.bundle.contains_key(&resolved) {
            Ok(resolved)
        } else {
            Err(rquickjs::Error::new_resolving_message(
                base,
                name,
                format!("{resolved:?} is not in the package bundle"),
            ))
        }
    }
}

impl Loader for BundleLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, rquickjs::module::Declared>> {
        let source = self.bundle.get(name).ok_or_else(|| {
            rquickjs::Error::new_loading_message(name, "not in the package bundle")
        })?;
        Module::declare(ctx.clone(), name, source.clone())
    }
}

/// Check every static relative import in the bundle before anything runs, so a module that
/// reaches outside the bundle is refused as a whole rather than failing halfway.
fn check_static_imports(bundle: &BTreeMap<String, String>) -> Result<(), JsError> {
    for (path, source) in bundle {
        for specifier in static_import_specifiers(source) {
            let resolved = resolve_import(path, &specifier).map_err(JsError::ModuleRejected)?;
            if !bundle.contains_key(&resolved) {
                return Err(JsError::ModuleRejected(format!(
                    "import {specifier:?} from {path:?} resolves to {resolved:?}, which is not in the package bundle"
                )));
            }
        }
    }
    Ok(())
}

/// The string literals after `from` or a bare `import` — a lexical scan that is enough for the
/// pre-check; the loader remains the real gate for anything this scan misses.
fn static_import_specifiers(source: &str) -> Vec<String> {
    let mut specifiers = Vec::new();
    for line in source.lines() {
        let trimmed = line.trim_start();
        let is_import = trimmed.starts_with("import ")
            || trimmed.starts_with("import\"")
            || trimmed.starts_with("import'")
            || trimmed.starts_with("export ");
        if !is_import {
            continue;
        }
        let tail = match trimmed.rfind(" from ") {
            Some(at) => &trimmed[at + 6..],
            None if trimmed.starts_with("import") => trimmed["import".len()..].trim_start(),
            None => continue,
        };
        let tail = tail.trim_start();
        let Some(quote) = tail.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        if let Some(end) = tail[1..].find(quote) {
            specifiers.push(tail[1..=end].to_owned());
        }
    }
    specifiers
}

/// Run one export and return its JSON result.
pub fn run_module(invocation: &JsInvocation<'_>) -> Result<Json, JsError> {
    if !invocation.bundle.contains_key(invocation.entry) {
        return Err(JsError::ModuleRejected(format!(
            "entry module {:?} is not in the package bundle",
            invocation.entry
        )));
    }
    check_static_imports(invocation.bundle)?;
    let runtime =
        Runtime::new().map_err(|err| JsError::Execution(format!("starting QuickJS: {err}")))?;
    runtime.set_memory_limit(invocation.limits.heap_bytes);
    runtime.set_max_stack_size(STACK_BYTES);
    let deadline = Instant::now() + invocation.limits.wall;
    runtime.set_interrupt_handler(Some(Box::new(move || Instant::now() >= deadline)));
    runtime.set_loader(
        BundleLoader {
            bundle: invocation.bundle.clone(),
        },
        BundleLoader {
            bundle: invocation.bundle.clone(),
        },
    );
    let context =
        Context::full(&runtime).map_err(|err| JsError::Execution(format!("context: {err}")))?;
    let result = context.with(|ctx| evaluate(&ctx, invocation));
    // The interrupt handler's verdict is the honest cause of any failure after the deadline:
    // QuickJS reports an interrupted run as a generic uncatchable error.
    match result {
        Err(JsError::Execution(_)) if Instant::now() >= deadline => {
            Err(JsError::WallLimit(invocation.limits.wall))
        }
        other => other,
    }
}

fn evaluate(ctx: &Ctx<'_>, invocation: &JsInvocation<'_>) -> Result<Json, JsError> {
    let removed = serde_json::to_string(&REMOVED_GLOBALS)
        .map_err(|err| JsError::Execution(err.to_string()))?;
    let prelude = PRELUDE.replace("__REMOVED__", &removed);
    ctx.eval::<(), _>(prelude)
        .catch(ctx)
        .map_err(|err| JsError::Execution(format!("installing the sandbox: {err}")))?;

    let source = invocation
        .bundle
        .get(invocation.entry)
        .cloned()
        .unwrap_or_default();
    let declared = Module::declare(ctx.clone(), invocation.entry, source)
        .catch(ctx)
        .map_err(|err| module_error(invocation.entry, &err.to_string()))?;
    let (module, promise) = declared
        .eval()
        .catch(ctx)
        .map_err(|err| module_error(invocation.entry, &err.to_string()))?;
    promise
        .finish::<()>()
        .catch(ctx)
        .map_err(|err| module_error(invocation.entry, &err.to_string()))?;

    let export: Value = module
        .get(invocation.export)
        .catch(ctx)
        .map_err(|err| JsError::Execution(format!("reading export: {err}")))?;
    let Some(function) = export.as_function().cloned() else {
        return Err(JsError::Execution(format!(
            "module {:?} does not export a callable {:?}",
            invocation.entry, invocation.export
        )));
    };

    let inputs_text = serde_json::to_string(invocation.inputs)
        .map_err(|err| JsError::Execution(err.to_string()))?;
    let inputs = ctx
        .json_parse(inputs_text)
        .catch(ctx)
        .map_err(|err| JsError::Execution(format!("materialising inputs: {err}")))?;
    let environment_text = serde_json::to_string(invocation.environment)
        .map_err(|err| JsError::Execution(err.to_string()))?;
    let factory: Function = ctx
        .eval(CONTEXT_FACTORY)
        .catch(ctx)
        .map_err(|err| JsError::Execution(format!("building the context: {err}")))?;
    let context_arg: Object = factory
        .call((environment_text,))
        .catch(ctx)
        .map_err(|err| JsError::Execution(format!("building the context: {err}")))?;

    let returned: Value = function
        .call((inputs, context_arg))
        .catch(ctx)
        .map_err(|err| JsError::Execution(err.to_string()))?;
    let settled = match returned.as_promise() {
        Some(promise) => settle(ctx, promise)?,
        None => returned,
    };
    if settled.is_undefined() || settled.is_function() || settled.is_symbol() {
        return Err(JsError::OutputRejected(
            "the export returned a value JSON cannot represent".to_owned(),
        ));
    }
    let text = ctx
        .json_stringify(settled)
        .catch(ctx)
        .map_err(|err| JsError::OutputRejected(err.to_string()))?
        .ok_or_else(|| JsError::OutputRejected("the export returned no JSON value".to_owned()))?
        .to_string()
        .map_err(|err| JsError::OutputRejected(err.to_string()))?;
    serde_json::from_str(&text).map_err(|err| JsError::OutputRejected(err.to_string()))
}

fn settle<'js>(ctx: &Ctx<'js>, promise: &Promise<'js>) -> Result<Value<'js>, JsError> {
    promise.finish::<Value>().catch(ctx).map_err(|err| {
        let text = err.to_string();
        if text.contains("WouldBlock") || text.contains("would block") {
            JsError::Execution(
                "the export returned a promise that did not settle in the job queue".to_owned(),
            )
        } else {
            JsError::Execution(text)
        }
    })
}

/// A load failure that names the bundle boundary is a rejection of the module graph, not an
/// execution error, so the caller can tell "imported something outside" from "threw".
fn module_error(entry: &str, message: &str) -> JsError {
    if message.contains("bundle") || message.contains("resolving") || message.contains("loading") {
        JsError::ModuleRejected(format!("{entry}: {message}"))
    } else {
        JsError::Execution(format!("{entry}: {message}"))
    }
}

/// What a worker process gets beyond the module's wall limit to start, read its request and
/// write its answer before it is killed as if the wall had been reached.
pub(crate) const WORKER_STARTUP: Duration = Duration::from_secs(1);

/// The most a worker may print. The answer is the export's JSON, which had to fit the module's
/// heap as a string first; twice that leaves room for serde's re-escaping.
const WORKER_OUTPUT_BYTES: usize = 2 * HEAP_BYTES;

/// How much of a failed worker's stderr is quoted in the error.
const WORKER_STDERR_QUOTE: usize = 2000;

/// The program that serves [`WorkerRequest`]s on stdin: `program args…`, e.g. the running
/// `mindrune` with `["lab", "js-worker"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// One invocation on the wire to the worker process: an owned [`JsInvocation`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkerRequest {
    /// Every module the worker may load, path → source.
    pub bundle: BTreeMap<String, String>,
    pub entry: String,
    pub export: String,
    pub inputs: Json,
    /// The declared environment names and values, frozen into `context.environment`.
    pub environment: BTreeMap<String, String>,
    pub limits: WorkerLimits,
}

/// [`JsLimits`] on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkerLimits {
    pub wall_ms: u64,
    pub heap_bytes: usize,
}

/// The worker's answer: `{"ok": <json>}` or `{"error": {"kind": …, "message": …}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WorkerResponse {
    Ok(Json),
    Error(WorkerError),
}

/// A [`JsError`] on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkerError {
    pub kind: WorkerErrorKind,
    pub message: String,
}

/// Which [`JsError`] variant a [`WorkerError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WorkerErrorKind {
    ModuleRejected,
    Execution,
    WallLimit,
    OutputRejected,
}

impl WorkerRequest {
    pub(crate) fn new(invocation: &JsInvocation<'_>) -> Self {
        Self {
            bundle: invocation.bundle.clone(),
            entry: invocation.entry.to_owned(),
            export: invocation.export.to_owned(),
            inputs: invocation.inputs.clone(),
            environment: invocation.environment.clone(),
            limits: WorkerLimits {
                wall_ms: u64::try_from(invocation.limits.wall.as_millis()).unwrap_or(u64::MAX),
                heap_bytes: invocation.limits.heap_bytes,
            },
        }
    }

    pub(crate) fn invocation(&self) -> JsInvocation<'_> {
        JsInvocation {
            bundle: &self.bundle,
            entry: &self.entry,
            export: &self.export,
            inputs: &self.inputs,
            environment: &self.environment,
            limits: JsLimits {
                wall: Duration::from_millis(self.limits.wall_ms),
                heap_bytes: self.limits.heap_bytes,
            },
        }
    }
}

impl WorkerResponse {
    pub(crate) fn new(result: Result<Json, JsError>) -> Self {
        let (kind, message) = match result {
            Ok(value) => return Self::Ok(value),
            Err(err @ JsError::WallLimit(_)) => (WorkerErrorKind::WallLimit, err.to_string()),
            Err(JsError::ModuleRejected(message)) => (WorkerErrorKind::ModuleRejected, message),
            Err(JsError::Execution(message)) => (WorkerErrorKind::Execution, message),
            Err(JsError::OutputRejected(message)) => (WorkerErrorKind::OutputRejected, message),
        };
        Self::Error(WorkerError { kind, message })
    }

    /// Back to the in-process result; a wall limit is reported as the caller's `wall`, the
    /// same error the in-process path gives.
    pub(crate) fn into_result(self, wall: Duration) -> Result<Json, JsError> {
        match self {
            Self::Ok(value) => Ok(value),
            Self::Error(WorkerError { kind, message }) => Err(match kind {
                WorkerErrorKind::ModuleRejected => JsError::ModuleRejected(message),
                WorkerErrorKind::Execution => JsError::Execution(message),
                WorkerErrorKind::WallLimit => JsError::WallLimit(wall),
                WorkerErrorKind::OutputRejected => JsError::OutputRejected(message),
            }),
        }
    }
}

/// The worker side: read one [`WorkerRequest`] (the process's stdin), run it in process with
/// [`run_module`], and return the [`WorkerResponse`] to print on stdout. A request that does
/// not parse is answered with an execution error, never a panic.
pub fn serve_worker(request: &[u8]) -> Vec<u8> {
    let response = match serde_json::from_slice::<WorkerRequest>(request) {
        Ok(request) => WorkerResponse::new(run_module(&request.invocation())),
        Err(err) => WorkerResponse::Error(WorkerError {
            kind: WorkerErrorKind::Execution,
            message: format!("the JavaScript worker's request is not valid: {err}"),
        }),
    };
    serde_json::to_vec(&response).unwrap_or_else(|err| {
        let fallback = WorkerResponse::Error(WorkerError {
            kind: WorkerErrorKind::OutputRejected,
            message: format!("the answer could not be serialized: {err}"),
        });
        serde_json::to_vec(&fallback).unwrap_or_default()
    })
}

/// The local time zone a worker's `Date` uses.
pub(crate) const WORKER_TIME_ZONE: &str = "UTC";

/// The host side: run `invocation` in a fresh `worker` process with an empty environment, an
/// empty temporary working folder and the request on stdin, and kill its whole process group
/// at the wall limit plus [`WORKER_STARTUP`]. Being killed there is the same
/// [`JsError::WallLimit`] the in-process interrupt handler gives, so a fixture sees one failure
/// whichever stopped the module; unlike the interrupt handler, this also stops a builtin that
/// loops in C.
pub(crate) fn run_in_worker(
    worker: &WorkerCommand,
    invocation: &JsInvocation<'_>,
) -> Result<Json, JsError> {
    let wall = invocation.limits.wall;
    let request = serde_json::to_vec(&WorkerRequest::new(invocation))
        .map_err(|err| JsError::Execution(format!("encoding the worker's request: {err}")))?;
    let empty =
        super::scratch::scratch_dir(super::scratch::ScratchKind::Worker).map_err(|err| {
            JsError::Execution(format!("creating the worker's empty working folder: {err}"))
        })?;
    let mut command = Command::new(&worker.program);
    // `TZ` is the one variable the worker gets: without it the C library falls back to the
    // machine's `/etc/localtime`, and a module's local-time `Date` methods (and `Date.parse`
    // of a date-time without an offset) would answer differently from one machine to the
    // next. UTC is what Runx's worker reports on a host without a configured zone.
    command
        .args(&worker.args)
        .env_clear()
        .env("TZ", WORKER_TIME_ZONE)
        .current_dir(empty.path());
    let limits = Limits {
        timeout: wall.saturating_add(WORKER_STARTUP),
        max_output: WORKER_OUTPUT_BYTES,
    };
    let finished = run_bounded(command, Some(request), true, limits).map_err(|err| {
        JsError::Execution(format!(
            "starting the JavaScript worker {}: {err}",
            worker.program.display()
        ))
    })?;
    if finished.timed_out {
        return Err(JsError::WallLimit(wall));
    }
    if finished.overflowed {
        return Err(JsError::OutputRejected(format!(
            "the JavaScript worker printed more than {WORKER_OUTPUT_BYTES} bytes"
        )));
    }
    let succeeded = finished.status.is_some_and(|status| status.success());
    match serde_json::from_slice::<WorkerResponse>(&finished.stdout) {
        Ok(response) if succeeded => response.into_result(wall),
        _ => {
            let status = finished
                .status
                .map_or_else(|| "no status".to_owned(), |status| status.to_string());
            let stderr = String::from_utf8_lossy(&finished.stderr);
            let stderr: String = stderr.trim().chars().take(WORKER_STDERR_QUOTE).collect();
            Err(JsError::Execution(format!(
                "the JavaScript worker {} gave no answer ({status}): {stderr}",
                worker.program.display()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(source: &str, limits: JsLimits) -> Result<Json, JsError> {
        let bundle = BTreeMap::from([("main.mjs".to_owned(), source.to_owned())]);
        let environment = BTreeMap::from([("REGION".to_owned(), "eu".to_owned())]);
        run_module(&JsInvocation {
            bundle: &bundle,
            entry: "main.mjs",
            export: "default",
            inputs: &serde_json::json!({"value": 2}),
            environment: &environment,
            limits,
        })
    }

    #[test]
    fn calls_the_default_export_with_inputs_and_frozen_environment() {
        let output = run(
            "export default (inputs, context) => ({ doubled: inputs.value * 2, region: context.environment.REGION, frozen: Object.isFrozen(context.environment) && Object.isFrozen(context) });",
            JsLimits::default(),
        );
        assert_eq!(
            output,
            Ok(serde_json::json!({"doubled": 4, "region": "eu", "frozen": true}))
        );
    }

    #[test]
    fn resolves_relative_imports_inside_the_bundle() {
        let bundle = BTreeMap::from([
            (
                "lib/main.mjs".to_owned(),
                "import { value } from './value.mjs'; export function run() { return { value }; }"
                    .to_owned(),
            ),
            (
                "lib/value.mjs".to_owned(),
                "export const value = 42;".to_owned(),
            ),
        ]);
        let output = run_module(&JsInvocation {
            bundle: &bundle,
            entry: "lib/main.mjs",
            export: "run",
            inputs: &serde_json::json!({}),
            environment: &BTreeMap::new(),
            limits: JsLimits::default(),
        });
        assert_eq!(output, Ok(serde_json::json!({"value": 42})));
    }

    #[test]
    fn parse_url_is_frozen_and_splits_an_absolute_url() {
        let output = run(
            "export default () => { const u = Runx.parseUrl('HTTPS://Example.com:443/a/b?x=1#f'); return { host: u.host, path: u.pathname, search: u.search, frozen: Object.isFrozen(Runx) && Object.isFrozen(u) }; };",
            JsLimits::default(),
        );
        assert_eq!(
            output,
            Ok(
                serde_json::json!({"host": "example.com", "path": "/a/b", "search": "?x=1", "frozen": true})
            )
        );
    }

    #[test]
    fn heap_and_stack_exhaustion_fail_as_errors_not_crashes() {
        let small = JsLimits {
            heap_bytes: 8 * 1024 * 1024,
            ..JsLimits::default()
        };
        let heap = run(
            "export default () => { const keep = []; for (;;) keep.push(new Array(100000).fill(1)); };",
            small,
        );
        assert!(matches!(heap, Err(JsError::Execution(_))), "{heap:?}");
        let stack = run(
            "const f = (n) => f(n + 1) + 1; export default () => f(0);",
            JsLimits::default(),
        );
        assert!(matches!(stack, Err(JsError::Execution(_))), "{stack:?}");
    }

    #[test]
    fn serve_worker_round_trips_a_request_and_each_kind_of_answer() {
        let bundle = BTreeMap::from([(
            "main.mjs".to_owned(),
            "export default (inputs, context) => ({ sum: inputs.a + inputs.b, region: context.environment.REGION }); export const boom = () => { throw new Error('nope'); }; export const spin = () => { for (;;) {} };".to_owned(),
        )]);
        let environment = BTreeMap::from([("REGION".to_owned(), "eu".to_owned())]);
        let inputs = serde_json::json!({"a": 2, "b": 3});
        let request = |export: &'static str, wall: Duration| {
            WorkerRequest::new(&JsInvocation {
                bundle: &bundle,
                entry: "main.mjs",
                export,
                inputs: &inputs,
                environment: &environment,
                limits: JsLimits {
                    wall,
                    ..JsLimits::default()
                },
            })
        };
        let serve = |request: &WorkerRequest| -> Json {
            let bytes = serde_json::to_vec(request).unwrap();
            let decoded: WorkerRequest = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(&decoded, request);
            serde_json::from_slice(&serve_worker(&bytes)).unwrap()
        };

        let ok = serve(&request("default", DEFAULT_WALL));
        assert_eq!(ok, serde_json::json!({"ok": {"sum": 5, "region": "eu"}}));

        let thrown = serve(&request("boom", DEFAULT_WALL));
        assert_eq!(thrown["error"]["kind"], "execution", "{thrown}");
        assert!(
            thrown["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("nope")),
            "{thrown}"
        );

        let wall = Duration::from_millis(200);
        let spun = serve(&request("spin", wall));
        assert_eq!(spun["error"]["kind"], "wall_limit", "{spun}");
        let response: WorkerResponse = serde_json::from_value(spun).unwrap();
        assert_eq!(response.into_result(wall), Err(JsError::WallLimit(wall)));

        let missing = WorkerRequest {
            entry: "other.mjs".to_owned(),
            ..request("default", DEFAULT_WALL)
        };
        let rejected: WorkerResponse = serde_json::from_value(serve(&missing)).unwrap();
        assert!(
            matches!(rejected.into_result(wall), Err(JsError::ModuleRejected(_))),
            "a missing entry is a module rejection"
        );

        let garbage: Json = serde_json::from_slice(&serve_worker(b"{\"bundle\": 1")).unwrap();
        assert_eq!(garbage["error"]["kind"], "execution", "{garbage}");
    }

    fn sh_worker(script: &str) -> WorkerCommand {
        WorkerCommand {
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".to_owned(), script.to_owned()],
        }
    }

    fn in_worker(worker: &WorkerCommand, wall: Duration) -> Result<Json, JsError> {
        let bundle = BTreeMap::from([("main.mjs".to_owned(), String::new())]);
        run_in_worker(
            worker,
            &JsInvocation {
                bundle: &bundle,
                entry: "main.mjs",
                export: "default",
                inputs: &serde_json::json!({}),
                environment: &BTreeMap::new(),
                limits: JsLimits {
                    wall,
                    ..JsLimits::default()
                },
            },
        )
    }

    #[test]
    fn the_worker_gets_only_its_time_zone_and_an_empty_working_folder() {
        let worker = sh_worker(
            r#"cat > /dev/null; printf '{"ok": {"env": "%s", "files": "%s"}}' "$(env | grep -v '^PWD=\|^SHLVL=\|^_=' | tr '\n' ' ')" "$(ls -A)""#,
        );
        assert_eq!(
            in_worker(&worker, DEFAULT_WALL),
            Ok(serde_json::json!({"env": "TZ=UTC ", "files": ""}))
        );
    }

    /// Runx's own worker vector (`runx-js-worker`, engine tests): the clock reads 0.
    #[test]
    fn date_now_is_zero_as_in_runx_worker() {
        let bundle = BTreeMap::from([(
            "main.mjs".to_owned(),
            "export default ({ value }) => ({ value, now: Date.now() });".to_owned(),
        )]);
        let output = run_module(&JsInvocation {
            bundle: &bundle,
            entry: "main.mjs",
            export: "default",
            inputs: &serde_json::json!({"value": "runx"}),
            environment: &BTreeMap::new(),
            limits: JsLimits::default(),
        });
        assert_eq!(output, Ok(serde_json::json!({"value": "runx", "now": 0})));
    }

    #[test]
    fn date_has_a_clock_pinned_at_the_epoch_and_parses_timestamps() {
        let output = run(
            r#"export default () => {
                const now = new Date();
                const parsed = Date.parse("2026-06-09T00:00:00Z");
                const built = new Date(parsed);
                class Later extends Date {}
                return {
                    now_ms: now.getTime(),
                    now_iso: now.toISOString(),
                    called: typeof Date(),
                    parsed,
                    offset: Date.parse("2026-06-09T02:30:00+02:00"),
                    date_only: Date.parse("2026-06-09"),
                    invalid: Number.isNaN(Date.parse("not a date")),
                    utc: Date.UTC(2026, 5, 9),
                    built_iso: built.toISOString(),
                    instance: now instanceof Date && Object.getPrototypeOf(now) === Date.prototype,
                    constructor: now.constructor === Date,
                    subclass: new Later().getTime() === 0 && new Later() instanceof Date,
                    json: JSON.stringify({ at: new Date(86400000) }),
                    performance: typeof performance,
                };
            };"#,
            JsLimits::default(),
        );
        assert_eq!(
            output,
            Ok(serde_json::json!({
                "now_ms": 0,
                "now_iso": "1970-01-01T00:00:00.000Z",
                "called": "string",
                "parsed": 1_780_963_200_000_i64,
                "offset": 1_780_965_000_000_i64,
                "date_only": 1_780_963_200_000_i64,
                "invalid": true,
                "utc": 1_780_963_200_000_i64,
                "built_iso": "2026-06-09T00:00:00.000Z",
                "instance": true,
                "constructor": true,
                "subclass": true,
                "json": "{\"at\":\"1970-01-02T00:00:00.000Z\"}",
                "performance": "undefined",
            }))
        );
    }

    #[test]
    fn pinning_the_clock_leaves_randomness_closed() {
        let output = run(
            "export default () => { try { Math.random(); return 'open'; } catch (err) { return String(err.message); } };",
            JsLimits::default(),
        );
        assert_eq!(
            output,
            Ok(serde_json::json!(
                "Math.random is unavailable in deterministic modules"
            ))
        );
    }

    #[test]
    fn a_worker_still_running_past_the_wall_is_killed_as_the_wall_limit() {
        let wall = Duration::from_millis(100);
        let began = Instant::now();
        let result = in_worker(&sh_worker("sleep 30"), wall);
        assert_eq!(result, Err(JsError::WallLimit(wall)));
        assert!(
            began.elapsed() < wall + WORKER_STARTUP + Duration::from_secs(2),
            "{:?}",
            began.elapsed()
        );
    }

    #[test]
    fn a_worker_that_gives_no_answer_is_an_execution_error_quoting_its_stderr() {
        let result = in_worker(&sh_worker("echo broken >&2; exit 3"), DEFAULT_WALL);
        assert!(
            matches!(&result, Err(JsError::Execution(message)) if message.contains("broken")),
            "{result:?}"
        );
        let missing = WorkerCommand {
            program: PathBuf::from("/nonexistent/mindrune"),
            args: Vec::new(),
        };
        let result = in_worker(&missing, DEFAULT_WALL);
        assert!(matches!(result, Err(JsError::Execution(_))), "{result:?}");
    }

    #[test]
    fn resolve_import_refuses_climbing_out_and_bare_names() {
        assert_eq!(
            resolve_import("a/b.mjs", "./c.mjs"),
            Ok("a/c.mjs".to_owned())
        );
        assert_eq!(
            resolve_import("a/b.mjs", "../c.mjs"),
            Ok("c.mjs".to_owned())
        );
        assert!(resolve_import("b.mjs", "../c.mjs").is_err());
        assert!(resolve_import("b.mjs", "node:fs").is_err());
        assert!(resolve_import("b.mjs", "/etc/passwd").is_err());
    }
}
