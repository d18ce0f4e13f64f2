//! The runner protocol (`/v1/`) in process: the router over an in-memory library, called with
//! `tower::ServiceExt::oneshot`.
//!
//! Two owners (`zq…` and `yq…`) have two avatars each, with a runner token per avatar. Each
//! family records its scripts through `POST /v1/events` (with the files the runner read) and
//! ends turns through `POST /v1/turns` until a headed script of its first avatar is a family
//! skill and both avatars have lessons and a reported state. Every string that belongs to one
//! owner spells its marker (`zq` or `yq`), which nothing else the server says can spell, so a
//! leak of one family's data into the other's answers shows as the marker.
//!
//! Every answer of every test goes through [`World::send`], which checks it against
//! `docs/openapi.json`: the status code must be documented for the path and method, and the
//! body must validate against the documented schema (JSON Schema 2020-12). A request the server
//! accepted must also validate against the documented request body, so the document is never
//! stricter than the server.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use mindrune_server::AppState;
use mindrune_server::ServerConfig;
use mindrune_server::router;
use mindrune_server::wire::{MAX_EVENTS_BODY, MAX_SMALL_BODY, MAX_TURN_BODY, SKILLS_ARE_FILES};
use mindrune_server::{new_secret, secret_digest};
use mindrune_store::{Agent, Owner, SqliteStore, Store};
use proptest::prelude::*;
use serde_json::{Value, json};
use tower::ServiceExt as _;

// -------------------------------------------------------------------------------------------
// The document, and the one check every answer goes through
// -------------------------------------------------------------------------------------------

const DOC_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");

struct Doc {
    doc: Value,
    /// Compiled validators by the schema's text.
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

fn doc() -> &'static Doc {
    static DOC: OnceLock<Doc> = OnceLock::new();
    DOC.get_or_init(|| {
        let text = std::fs::read_to_string(DOC_PATH)
            .unwrap_or_else(|err| panic!("cannot read {DOC_PATH}: {err}"));
        let doc: Value = serde_json::from_str(&text)
            .unwrap_or_else(|err| panic!("{DOC_PATH} is not JSON: {err}"));
        Doc {
            doc,
            validators: Mutex::new(HashMap::new()),
        }
    })
}

impl Doc {
    /// The document's path template a concrete path matches (`/skills/42` → `/skills/{id}`).
    fn template(&self, path: &str) -> Option<&str> {
        let segments: Vec<&str> = path.split('/').collect();
        self.doc["paths"]
            .as_object()?
            .keys()
            .find(|template| {
                let parts: Vec<&str> = template.split('/').collect();
                parts.len() == segments.len()
                    && parts.iter().zip(&segments).all(|(part, segment)| {
                        part == segment || (part.starts_with('{') && !segment.is_empty())
                    })
            })
            .map(String::as_str)
    }

    fn operation(&self, method: &Method, path: &str) -> &Value {
        let template = self
            .template(path)
            .unwrap_or_else(|| panic!("{path} is not a path of docs/openapi.json"));
        let operation = &self.doc["paths"][template][method.as_str().to_ascii_lowercase()];
        assert!(
            operation.is_object(),
            "{method} {template} is not an operation of docs/openapi.json"
        );
        operation
    }

    /// Follows a local `$ref` (`#/components/responses/BadRequest`).
    fn resolve<'a>(&'a self, value: &'a Value) -> &'a Value {
        match value.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                let pointer = reference
                    .strip_prefix('#')
                    .unwrap_or_else(|| panic!("{reference} is not a local reference"));
                self.resolve(
                    self.doc
                        .pointer(pointer)
                        .unwrap_or_else(|| panic!("{reference} leads nowhere")),
                )
            }
            None => value,
        }
    }

    /// A validator for a schema of the document: the schema with the document's components
    /// beside it, so its `#/components/schemas/…` references resolve. Formats are asserted.
    fn validator(&self, schema: &Value) -> Arc<jsonschema::Validator> {
        let key = schema.to_string();
        let mut validators = self.validators.lock().unwrap_or_else(|e| e.into_inner());
        validators
            .entry(key)
            .or_insert_with(|| {
                let root = json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "components": self.doc["components"],
                    "allOf": [schema],
                });
                let validator = jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft202012)
                    .should_validate_formats(true)
                    .build(&root)
                    .unwrap_or_else(|err| panic!("the schema {schema} does not compile: {err}"));
                Arc::new(validator)
            })
            .clone()
    }

    /// Why a value does not validate against a schema, one line per problem (empty: it does).
    fn problems(&self, schema: &Value, value: &Value) -> Vec<String> {
        self.validator(schema)
            .iter_errors(value)
            .map(|err| format!("{}: {err}", err.instance_path()))
            .collect()
    }

    /// Panics unless the answer is one the document describes for this request.
    fn check_answer(
        &self,
        method: &Method,
        path: &str,
        status: StatusCode,
        content_type: Option<&str>,
        body: &[u8],
    ) {
        let text = String::from_utf8_lossy(body);
        let operation = self.operation(method, path);
        let Some(response) = operation["responses"].get(status.as_str()) else {
            panic!(
                "{method} {path} answered {status}, which docs/openapi.json does not list for it: {text}"
            );
        };
        let response = self.resolve(response);
        let Some(content) = response.get("content") else {
            assert!(
                body.is_empty(),
                "{method} {path} {status} is documented without a body, but has one: {text}"
            );
            return;
        };
        if let Some(text_schema) = content.get("text/plain") {
            // `/metrics`: Prometheus' text format, which promtool checks (the cli's tests).
            assert_eq!(text_schema["schema"]["type"], "string");
            assert!(
                content_type.is_some_and(|t| t.starts_with("text/plain")),
                "{method} {path} {status} answered {content_type:?}, not text: {text}"
            );
            return;
        }
        let schema = &content["application/json"]["schema"];
        assert!(
            schema.is_object(),
            "{method} {path} {status}: only JSON and plain-text answers are documented"
        );
        assert!(
            content_type.is_some_and(|t| t.starts_with("application/json")),
            "{method} {path} {status} answered {content_type:?}, not JSON: {text}"
        );
        let value: Value = serde_json::from_slice(body).unwrap_or_else(|err| {
            panic!("{method} {path} {status}: the body is not JSON ({err}): {text}")
        });
        let problems = self.problems(schema, &value);
        assert!(
            problems.is_empty(),
            "{method} {path} {status}: the answer does not match docs/openapi.json:\n  {}\n{value:#}",
            problems.join("\n  ")
        );
    }

    /// Why a request body does not validate against the documented request body.
    fn request_problems(&self, method: &Method, path: &str, body: &Value) -> Vec<String> {
        let operation = self.operation(method, path);
        let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
        if !schema.is_object() {
            return Vec::new();
        }
        self.problems(schema, body)
    }
}

// -------------------------------------------------------------------------------------------
// Two families, and how a test talks to the server
// -------------------------------------------------------------------------------------------

/// Each owner's marker: every name, script, code and lesson of that owner spells it.
const MARKERS: [&str; 2] = ["zq", "yq"];
/// Each owner's key (a secret: scrubbed from everything the library keeps). Shaped as
/// `owner add` makes keys, `mrk_` and 48 hex digits: the library keeps only its digest, so
/// the key is scrubbed by that shape, and a marker in it would make it another shape.
const OWNER_KEYS: [&str; 2] = [
    "mrk_0f0f0123456789abcdef0123456789abcdef0123456789ab",
    "mrk_e0e00123456789abcdef0123456789abcdef0123456789ab",
];
/// The script every avatar of both families has, with the very same code (and a header that
/// differs by family).
const COMMON: &str = "chop-oaks";

struct Avatar {
    name: String,
    token: String,
    agent: Agent,
}

struct Family {
    owner: Owner,
    marker: &'static str,
    avatars: [Avatar; 2],
}

struct World {
    app: Router,
    store: &'static dyn Store,
    families: [Family; 2],
}

/// An answer, already checked against the document.
#[derive(Debug)]
struct Answer {
    status: StatusCode,
    text: String,
    json: Value,
}

impl Answer {
    fn error_code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }

    fn error_field(&self) -> &str {
        self.json["error"]["field"].as_str().unwrap_or("")
    }

    fn error_message(&self) -> &str {
        self.json["error"]["message"].as_str().unwrap_or("")
    }

    #[track_caller]
    fn assert_status(&self, status: StatusCode) -> &Self {
        assert_eq!(self.status, status, "{}", self.text);
        self
    }

    /// A 4xx with the JSON error body: this code, and this field when one is given.
    #[track_caller]
    fn assert_error(&self, status: StatusCode, code: &str, field: Option<&str>) -> &Self {
        self.assert_status(status);
        assert_eq!(self.error_code(), code, "{}", self.text);
        assert!(!self.error_message().is_empty(), "{}", self.text);
        if let Some(field) = field {
            assert_eq!(self.error_field(), field, "{}", self.text);
        }
        self
    }
}

/// What the library holds of one family: uses recorded, skills and lessons.
#[derive(Debug, Clone, PartialEq)]
struct Counts {
    uses: i64,
    skills: usize,
    lessons: usize,
}

impl World {
    /// Two owners with two avatars each and a runner token per avatar; nothing recorded yet.
    fn empty() -> World {
        let state = AppState::new(
            Box::new(SqliteStore::open_in_memory().expect("an in-memory library opens")),
            ServerConfig::default(),
        );
        let store = state.store();
        let families = [0, 1].map(|f| {
            let marker = MARKERS[f];
            let owner = store
                .create_owner(&format!("{marker}owner"), &secret_digest(OWNER_KEYS[f]), 1)
                .expect("the owner is created");
            let avatars = ["buzz", "pickles"].map(|name| {
                let name = format!("{marker}{name}");
                let agent = store
                    .create_agent(owner.id, &name, "/work", 1)
                    .expect("the avatar is created");
                let token = new_secret("mr_runner_");
                store
                    .issue_runner_token(owner.id, agent.id, &secret_digest(&token), 1)
                    .expect("the token is kept");
                Avatar { name, token, agent }
            });
            Family {
                owner,
                marker,
                avatars,
            }
        });
        World {
            app: router(state),
            store,
            families,
        }
    }

    /// [`World::empty`], then each family's sharing set up through the API.
    async fn new() -> World {
        let world = World::empty();
        for f in 0..2 {
            world.set_up_family(f).await;
        }
        world
    }

    fn avatar(&self, family: usize, avatar: usize) -> &Avatar {
        &self.families[family].avatars[avatar]
    }

    fn counts(&self, family: usize) -> Counts {
        let owner = self.families[family].owner.id;
        Counts {
            uses: self.store.use_count(owner).unwrap(),
            skills: self.store.skills(owner, None).unwrap().len(),
            lessons: self.store.lessons(owner).unwrap().len(),
        }
    }

    /// Sends a request and checks the answer against `docs/openapi.json`; every test's
    /// requests go through here. `sent` is the JSON body, when there is one.
    async fn send(&self, request: Request<Body>, sent: Option<&Value>) -> Answer {
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let response = self
            .app
            .clone()
            .oneshot(request)
            .await
            .expect("the router always answers");
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response
            .into_body()
            .collect()
            .await
            .expect("the answer's body is read")
            .to_bytes();
        doc().check_answer(&method, &path, status, content_type.as_deref(), &body);
        if let Some(sent) = sent {
            let problems = doc().request_problems(&method, &path, sent);
            assert!(
                !status.is_success() || problems.is_empty(),
                "{method} {path} was accepted ({status}), but docs/openapi.json rejects its body:\n  {}\n{sent:#}",
                problems.join("\n  ")
            );
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Answer { status, text, json }
    }

    fn request(method: Method, path: &str, token: Option<&str>, body: Body) -> Request<Body> {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        request
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .expect("the request is well formed")
    }

    async fn get(&self, path: &str, token: Option<&str>) -> Answer {
        self.send(Self::request(Method::GET, path, token, Body::empty()), None)
            .await
    }

    async fn post(&self, path: &str, token: Option<&str>, body: &Value) -> Answer {
        let bytes = serde_json::to_vec(body).unwrap();
        self.send(
            Self::request(Method::POST, path, token, Body::from(bytes)),
            Some(body),
        )
        .await
    }

    async fn post_raw(&self, path: &str, token: Option<&str>, body: Body) -> Answer {
        self.send(Self::request(Method::POST, path, token, body), None)
            .await
    }

    /// The first avatar records two headed scripts five times each (both become family
    /// skills), both avatars write lessons and end a turn, the second one reads the mirror,
    /// runs an inline snippet again and again, and both report their state.
    #[expect(
        clippy::too_many_lines,
        reason = "a fixture: one family set up through the API, step by step"
    )]
    async fn set_up_family(&self, f: usize) {
        let m = self.families[f].marker;
        let key = OWNER_KEYS[f];
        let (buzz, pickles) = (self.avatar(f, 0), self.avatar(f, 1));
        let route = format!("{m}mark-route");
        let scripts = [COMMON.to_string(), route.clone()];

        let events: Vec<Value> = scripts
            .iter()
            .flat_map(|name| {
                (0..5).map(move |i| {
                    run_event(
                        &format!("{m}-setup-{name}-{i}"),
                        &buzz.name,
                        name,
                        true,
                        &script_text(m, name, true),
                    )
                })
            })
            .collect();
        let answer = self
            .post(
                "/v1/events",
                Some(&buzz.token),
                &json!({ "events": events }),
            )
            .await;
        answer.assert_status(StatusCode::OK);
        let results = answer.json["results"].as_array().unwrap();
        assert_eq!(results.len(), 10);
        for result in results {
            assert_eq!(result["status"], "recorded", "{result}");
        }
        for fifth in [&results[4], &results[9]] {
            let run = &fifth["runs"][0];
            assert_eq!(run["uses"], 5, "{fifth}");
            assert!(
                run["score"].as_f64().unwrap() >= 600.0,
                "five clean runs clear the bar: {fifth}"
            );
        }

        // The first avatar's lesson names its owner's key, which must never be kept.
        let buzz_files = snapshot(
            &buzz.name,
            &[(COMMON, true), (&route, true)],
            m,
            Some(&format!(
                "# lab log\nprivate: {m}mark musing\nShare: {m}mark lesson: Father Aereck is in the church (key {key})\n"
            )),
        );
        let answer = self
            .post(
                "/v1/turns",
                Some(&buzz.token),
                &json!({ "boundary": "turn_end", "files": buzz_files }),
            )
            .await;
        answer.assert_status(StatusCode::OK);
        let report = &answer.json["report"];
        let shared: Vec<&str> = report["sharing"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == "shared")
            .map(|c| c["label"].as_str().unwrap())
            .collect();
        assert_eq!(
            shared,
            [
                format!("{}/{COMMON}", buzz.name),
                format!("{}/{route}", buzz.name)
            ],
            "{report:#}"
        );
        assert_eq!(report["lessons"]["added"].as_array().unwrap().len(), 1);

        let pickles_files = snapshot(
            &pickles.name,
            &[],
            m,
            Some(&format!(
                "- Share: [skill:{}/{COMMON}] {m}mark feedback: bank first\n",
                buzz.name
            )),
        );
        let answer = self
            .post(
                "/v1/turns",
                Some(&pickles.token),
                &json!({ "boundary": "start", "files": pickles_files, "mirror": {} }),
            )
            .await;
        answer.assert_status(StatusCode::OK);
        let mirror = mirror_files(&answer.json["mirror"]);
        assert_eq!(
            mirror.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "INDEX.md".to_string(),
                "LESSONS.md".into(),
                format!("{}/{COMMON}.ts", buzz.name),
                format!("{}/{route}.ts", buzz.name)
            ],
            "the sibling sees exactly the two shared skills"
        );
        let lessons = &mirror["LESSONS.md"];
        assert!(
            lessons.contains(&format!("{m}mark lesson: Father Aereck is in the church")),
            "{lessons}"
        );
        assert!(
            !lessons.contains(key),
            "the owner's key is scrubbed: {lessons}"
        );
        assert!(
            !lessons.contains("musing"),
            "only Share: lines leave a lab log"
        );

        for avatar in [buzz, pickles] {
            let answer = self
                .post(
                    "/v1/state",
                    Some(&avatar.token),
                    &json!({
                        "at": "2026-11-28T10:00:00Z",
                        "levels": { "Woodcutting": 31 },
                        "quests": [format!("{m}mark quest")],
                        "wealth": 1200,
                        "gear": ["Bronze axe"],
                        "bank": { format!("{m}mark logs"): 3 },
                    }),
                )
                .await;
            answer.assert_status(StatusCode::NO_CONTENT);
        }

        // Near-repeats of inline code: the wrap-up suggests a file.
        let snippets: Vec<Value> = (0..3)
            .map(|i| {
                json!({ "event": {
                    "id": format!("{m}-snippet-{i}"),
                    "kind": "execute_code",
                    "code": format!("await bot.chopTree({}); // {m}mark", 3 + i),
                    "ok": true,
                    "duration_ms": 20000,
                } })
            })
            .collect();
        let answer = self
            .post(
                "/v1/events",
                Some(&pickles.token),
                &json!({ "events": snippets }),
            )
            .await;
        answer.assert_status(StatusCode::OK);
        for result in answer.json["results"].as_array().unwrap() {
            assert_eq!(result["status"], "recorded", "{result}");
        }
    }
}

/// A script's text: the common script has the same code in every family; the others spell
/// the family's marker in their code. A header, when asked for, spells it in its goal.
fn script_text(marker: &str, name: &str, headed: bool) -> String {
    let code = if name == COMMON {
        "import { runScript } from '../../sdk/runner';\n\nawait runScript(async ({ bot }) => {\n  await bot.chopTree(1);\n});\n".to_string()
    } else {
        format!(
            "import {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot }}) => {{\n  await bot.say('{marker}mark {name}');\n}});\n"
        )
    };
    if headed {
        format!(
            "/** @skill {name}\n * Goal: {name} west of Draynor ({marker}mark goal)\n */\n{code}"
        )
    } else {
        code
    }
}

/// A shell event running `bots/<agent>/<name>.ts`, with the file as the runner read it.
fn run_event(id: &str, agent: &str, name: &str, ok: bool, text: &str) -> Value {
    let path = format!("bots/{agent}/{name}.ts");
    json!({
        "event": {
            "id": id,
            "kind": "shell",
            "command": format!("bun {path}"),
            "cwd": "/work",
            "ok": ok,
            "duration_ms": 60000,
        },
        "files": { path: { "text": text } },
    })
}

/// A turn's file snapshot: scripts (name, headed) and the lab log.
fn snapshot(agent: &str, scripts: &[(&str, bool)], marker: &str, lab_log: Option<&str>) -> Value {
    let mut files = serde_json::Map::new();
    for (name, headed) in scripts {
        files.insert(
            format!("bots/{agent}/{name}.ts"),
            json!({ "text": script_text(marker, name, *headed) }),
        );
    }
    if let Some(log) = lab_log {
        files.insert(format!("bots/{agent}/lab_log.md"), json!({ "text": log }));
    }
    Value::Object(files)
}

/// A mirror answer's files with content, path → content.
fn mirror_files(mirror: &Value) -> std::collections::BTreeMap<String, String> {
    mirror["files"]
        .as_array()
        .expect("a mirror answer")
        .iter()
        .map(|file| {
            (
                file["path"].as_str().unwrap().to_string(),
                file["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

// -------------------------------------------------------------------------------------------
// The document itself
// -------------------------------------------------------------------------------------------

/// Every route of the runner protocol, the probes and the removed loopback tools, as
/// `(method, path)`: what the document describes. (The dashboard's and the console's HTML pages
/// are for people, not for runners, and are not in it.)
const ROUTES: &[(&str, &str)] = &[
    ("get", "/health"),
    ("get", "/ready"),
    ("get", "/v1/whoami"),
    ("post", "/v1/events"),
    ("post", "/v1/turns"),
    ("get", "/v1/mirror"),
    ("post", "/v1/mirror"),
    ("post", "/v1/wrapup"),
    ("get", "/v1/instructions"),
    ("post", "/v1/state"),
    ("get", "/skills"),
    ("post", "/skills"),
    ("get", "/skills/{id}"),
    ("post", "/skills/{id}/outcome"),
    ("get", "/metrics"),
];

#[test]
fn the_document_is_openapi_3_1_with_valid_json_schema_2020_12_schemas() {
    let doc = doc();
    assert!(
        doc.doc["openapi"].as_str().unwrap().starts_with("3.1."),
        "OpenAPI 3.1, whose schemas are JSON Schema 2020-12"
    );
    let schemas = doc.doc["components"]["schemas"].as_object().unwrap();
    for (name, schema) in schemas {
        let mut alone = schema.clone();
        alone["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
        if let Err(err) = jsonschema::meta::validate(&alone) {
            panic!("components.schemas.{name} is not valid JSON Schema 2020-12: {err}");
        }
        // Compiling resolves every reference it makes.
        doc.validator(&json!({ "$ref": format!("#/components/schemas/{name}") }));
    }
}

#[test]
fn the_document_describes_exactly_the_runner_routes() {
    let doc = doc();
    let mut documented = HashSet::new();
    for (path, item) in doc.doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            documented.insert((method.clone(), path.clone()));
            let responses = operation["responses"].as_object().unwrap();
            assert!(!responses.is_empty(), "{method} {path} documents no answer");
            for response in responses.values() {
                assert!(
                    doc.resolve(response)["description"].is_string(),
                    "{method} {path}: every answer is described"
                );
            }
            let secured = operation["security"] != json!([]);
            let scheme = if path.starts_with("/v1/") {
                Some("runnerToken")
            } else if path == "/metrics" {
                Some("operatorToken")
            } else {
                None
            };
            assert_eq!(
                operation["security"],
                scheme.map_or(json!([]), |scheme| json!([{ (scheme): [] }])),
                "{method} {path}: exactly the /v1/ routes take the runner token, and /metrics the operator's"
            );
            if secured {
                assert!(
                    responses.contains_key("401"),
                    "{method} {path} can be a 401"
                );
            }
            if operation.get("requestBody").is_some() {
                for status in ["400", "413"] {
                    assert!(
                        responses.contains_key(status),
                        "{method} {path} reads a body, so it can be a {status}"
                    );
                }
            }
        }
    }
    let served: HashSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(documented, served);
}

#[tokio::test]
async fn every_documented_route_is_served() {
    let world = World::empty();
    for (method, path) in ROUTES {
        let path = path.replace("{id}", "7");
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let answer = world
            .send(
                World::request(method.clone(), &path, None, Body::empty()),
                None,
            )
            .await;
        assert!(
            answer.status != StatusCode::NOT_FOUND
                && answer.status != StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}: {}",
            answer.status
        );
    }
}

// -------------------------------------------------------------------------------------------
// What works
// -------------------------------------------------------------------------------------------

#[tokio::test]
async fn health_and_ready_answer_200() {
    let world = World::empty();
    let health = world.get("/health", None).await;
    health.assert_status(StatusCode::OK);
    assert_eq!(health.json, json!({ "status": "ok" }));
    let ready = world.get("/ready", None).await;
    ready.assert_status(StatusCode::OK);
    assert_eq!(ready.json, json!({ "status": "ready" }));
}

#[tokio::test]
async fn the_old_loopback_skill_endpoints_answer_410_skills_are_files() {
    let world = World::new().await;
    let token = world.avatar(0, 0).token.clone();
    let before = world.counts(0);
    for token in [None, Some(token.as_str())] {
        let answers = [
            world.get("/skills?q=chop", token).await,
            world
                .post("/skills", token, &json!({ "name": "chop", "code": "x" }))
                .await,
            world.get("/skills/42", token).await,
            world
                .post("/skills/42/outcome", token, &json!({ "ok": true }))
                .await,
        ];
        for answer in answers {
            answer.assert_error(StatusCode::GONE, "gone", None);
            assert_eq!(answer.error_message(), SKILLS_ARE_FILES);
            assert_eq!(
                answer.error_message(),
                "skills are files now: add the @skill header"
            );
        }
    }
    assert_eq!(world.counts(0), before, "an outcome report adds no use");
}

#[tokio::test]
async fn whoami_names_the_tokens_avatar() {
    let world = World::empty();
    for f in 0..2 {
        for a in 0..2 {
            let avatar = world.avatar(f, a);
            let answer = world.get("/v1/whoami", Some(&avatar.token)).await;
            answer.assert_status(StatusCode::OK);
            assert_eq!(
                answer.json,
                json!({ "agent": avatar.name, "api_version": "v1" })
            );
        }
    }
}

#[tokio::test]
async fn a_family_shares_proven_skills_and_lessons_with_siblings_only() {
    // `World::new` checks the sharing itself: five clean runs share a headed script right
    // away, the turn end reports it, the sibling's mirror holds it and the lesson.
    let world = World::new().await;
    for f in 0..2 {
        let m = MARKERS[f];
        let other = MARKERS[1 - f];
        let (buzz, pickles) = (world.avatar(f, 0), world.avatar(f, 1));

        // The author's mirror holds no file of its own skills, but how siblings use them and
        // their feedback, first.
        let answer = world.get("/v1/mirror", Some(&buzz.token)).await;
        answer.assert_status(StatusCode::OK);
        let own = mirror_files(&answer.json);
        assert_eq!(
            own.keys().map(String::as_str).collect::<Vec<_>>(),
            ["INDEX.md", "LESSONS.md"]
        );
        assert!(
            own["INDEX.md"].contains("## Your shared skills"),
            "{}",
            own["INDEX.md"]
        );
        assert!(
            own["LESSONS.md"].contains(&format!("{m}mark feedback: bank first")),
            "{}",
            own["LESSONS.md"]
        );

        // The sibling's copy of the common script is its family's header, never the other
        // owner's (the code is the same in both families).
        let answer = world.get("/v1/mirror", Some(&pickles.token)).await;
        let files = mirror_files(&answer.json);
        let common = &files[&format!("{}/{COMMON}.ts", buzz.name)];
        assert!(common.contains(&format!("{m}mark goal")), "{common}");
        for (path, content) in &files {
            assert!(
                !path.contains(other) && !content.contains(other),
                "{path} holds the other family's data:\n{content}"
            );
        }

        // The library kept the state, scrubbed of nothing it did not need to be.
        let state = world
            .store
            .avatar_state(world.families[f].owner.id, pickles.agent.id)
            .unwrap()
            .expect("the state is kept");
        let state: Value = serde_json::from_str(&state.state).unwrap();
        assert_eq!(state["quests"], json!([format!("{m}mark quest")]));
        assert_eq!(state["levels"]["Woodcutting"], 31);
    }
}

#[tokio::test]
async fn the_state_is_scrubbed_of_the_owners_key() {
    let world = World::empty();
    let avatar = world.avatar(0, 0);
    let answer = world
        .post(
            "/v1/state",
            Some(&avatar.token),
            &json!({ "quests": [format!("note {}", OWNER_KEYS[0])] }),
        )
        .await;
    answer.assert_status(StatusCode::NO_CONTENT);
    assert!(answer.text.is_empty());
    let kept = world
        .store
        .avatar_state(world.families[0].owner.id, avatar.agent.id)
        .unwrap()
        .unwrap();
    assert!(!kept.state.contains(OWNER_KEYS[0]), "{}", kept.state);
}

#[tokio::test]
async fn a_wrapup_lists_new_family_skills_and_suggests_a_file_for_repeated_inline_code() {
    let world = World::new().await;
    let (buzz, pickles) = (world.avatar(0, 0), world.avatar(0, 1));
    let m = MARKERS[0];
    let route = format!("{m}mark-route");

    let files = snapshot(&buzz.name, &[(COMMON, true), (&route, true)], m, None);
    let answer = world
        .post("/v1/wrapup", Some(&buzz.token), &json!({ "files": files }))
        .await;
    answer.assert_status(StatusCode::OK);
    let became: Vec<&str> = answer.json["became_family"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        became,
        [
            format!("{}/{COMMON}", buzz.name),
            format!("{}/{route}", buzz.name)
        ]
    );
    assert_eq!(answer.json["bar"], json!({ "runs": 5, "score": 600.0 }));

    let answer = world
        .post("/v1/wrapup", Some(&pickles.token), &json!({ "files": {} }))
        .await;
    answer.assert_status(StatusCode::OK);
    let suggestions = answer.json["suggestions"].as_array().unwrap();
    assert_eq!(suggestions.len(), 1, "{:#}", answer.json);
    assert_eq!(suggestions[0]["count"], 3);
    assert_eq!(suggestions[0]["near_repeat"], true);
}

#[tokio::test]
async fn instructions_tell_the_avatar_its_familys_bar() {
    let world = World::empty();
    let avatar = world.avatar(1, 0);
    let answer = world.get("/v1/instructions", Some(&avatar.token)).await;
    answer.assert_status(StatusCode::OK);
    let text = answer.json["text"].as_str().unwrap();
    assert!(text.contains(&format!("bots/{}/", avatar.name)), "{text}");
    assert!(
        text.contains("at least 5 recorded runs and a score of at least 600"),
        "{text}"
    );

    world
        .store
        .set_eager_sharing(world.families[1].owner.id, true)
        .unwrap();
    let answer = world.get("/v1/instructions", Some(&avatar.token)).await;
    let text = answer.json["text"].as_str().unwrap();
    assert!(
        text.contains("at least 3 recorded runs and a score of at least 500"),
        "{text}"
    );
}

#[tokio::test]
async fn a_mirror_request_leaves_out_the_content_the_runner_holds() {
    let world = World::new().await;
    let pickles = world.avatar(0, 1);
    let full = world.get("/v1/mirror", Some(&pickles.token)).await;
    let files = full.json["files"].as_array().unwrap();
    assert!(files.iter().all(|f| f["content"].is_string()));
    let index = files.iter().find(|f| f["path"] == "INDEX.md").unwrap();
    let have = json!({ "have": { "INDEX.md": index["key"], "LESSONS.md": "sha256:stale" } });
    let answer = world.post("/v1/mirror", Some(&pickles.token), &have).await;
    answer.assert_status(StatusCode::OK);
    for file in answer.json["files"].as_array().unwrap() {
        assert_eq!(
            file["content"].is_null(),
            file["path"] == "INDEX.md",
            "only the file held at its key comes without content: {file}"
        );
    }
}

#[tokio::test]
async fn a_turn_end_sends_the_mirror_at_most_once_a_minute() {
    let world = World::empty();
    let avatar = world.avatar(0, 0);
    let turn = json!({ "boundary": "turn_end", "files": {}, "mirror": { "have": {} } });
    let first = world.post("/v1/turns", Some(&avatar.token), &turn).await;
    first.assert_status(StatusCode::OK);
    assert!(first.json["mirror"].is_object(), "{}", first.text);
    let second = world.post("/v1/turns", Some(&avatar.token), &turn).await;
    second.assert_status(StatusCode::OK);
    assert!(second.json.get("mirror").is_none(), "{}", second.text);
    assert_eq!(second.json["report"]["mirror"]["status"], "skipped");
    // A start always sends it.
    let start = json!({ "boundary": "start", "files": {}, "mirror": { "have": {} } });
    let third = world.post("/v1/turns", Some(&avatar.token), &start).await;
    assert!(third.json["mirror"].is_object(), "{}", third.text);
}

// -------------------------------------------------------------------------------------------
// Bad input: a clear 4xx with the JSON error body, and nothing stored
// -------------------------------------------------------------------------------------------

/// A batch of one good run of the first avatar's common script.
fn good_batch(world: &World, id: &str) -> Value {
    let avatar = world.avatar(0, 0);
    json!({ "events": [run_event(id, &avatar.name, COMMON, true, &script_text("zq", COMMON, true))] })
}

#[tokio::test]
async fn malformed_json_is_a_400_and_stores_nothing() {
    let world = World::new().await;
    let token = world.avatar(0, 0).token.clone();
    let before = world.counts(0);
    for (path, body) in [
        ("/v1/events", "{\"events\": [{\"event\": "),
        ("/v1/events", "not json"),
        ("/v1/events", "{\"events\": []} trailing"),
        ("/v1/events", ""),
        ("/v1/turns", "{\"boundary\": \"turn_end\", \"files\": {"),
        ("/v1/wrapup", "[1, 2"),
        ("/v1/mirror", "{\"have\": 3}"),
        ("/v1/state", "{\"levels\": {\"Attack\": -1}}"),
    ] {
        let answer = world
            .post_raw(path, Some(&token), Body::from(body.to_string()))
            .await;
        answer.assert_error(StatusCode::BAD_REQUEST, "bad_request", None);
    }
    assert_eq!(world.counts(0), before);
}

#[tokio::test]
async fn an_unknown_field_is_a_400_naming_it_without_a_position() {
    let world = World::new().await;
    let avatar = world.avatar(0, 0);
    let before = world.counts(0);
    let mut colourful = good_batch(&world, "colour-1");
    colourful["events"][0]["event"]["colour"] = json!("red");
    let answer = world
        .post("/v1/events", Some(&avatar.token), &colourful)
        .await;
    answer.assert_error(
        StatusCode::BAD_REQUEST,
        "bad_request",
        Some("events[0].event.colour"),
    );
    let message = answer.error_message();
    assert!(message.contains("unknown field `colour`"), "{message}");
    assert!(
        !message.contains("line 1") && !message.contains("column"),
        "a position in a line the server wrote itself points nowhere: {message}"
    );

    let mut nested = good_batch(&world, "colour-2");
    nested["events"][0]["event"]["damage"] = json!({ "deaths": 0, "hue": 1 });
    world
        .post("/v1/events", Some(&avatar.token), &nested)
        .await
        .assert_error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            Some("events[0].event.damage.hue"),
        );

    let mut beside = good_batch(&world, "colour-3");
    beside["events"][0]["colour"] = json!("red");
    world
        .post("/v1/events", Some(&avatar.token), &beside)
        .await
        .assert_error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            Some("events[0].colour"),
        );

    let mut top = good_batch(&world, "colour-4");
    top["colour"] = json!("red");
    world
        .post("/v1/events", Some(&avatar.token), &top)
        .await
        .assert_error(StatusCode::BAD_REQUEST, "bad_request", Some("colour"));

    let file = json!({ "boundary": "turn_end", "files": {
        format!("bots/{}/x.ts", avatar.name): { "text": "x", "colour": "red" }
    } });
    world
        .post("/v1/turns", Some(&avatar.token), &file)
        .await
        .assert_status(StatusCode::BAD_REQUEST);
    for (path, body, field) in [
        (
            "/v1/turns",
            json!({ "boundary": "turn_end", "files": {}, "colour": 1 }),
            "colour",
        ),
        ("/v1/wrapup", json!({ "files": {}, "colour": 1 }), "colour"),
        ("/v1/mirror", json!({ "have": {}, "colour": 1 }), "colour"),
        ("/v1/state", json!({ "colour": 1 }), "colour"),
        (
            "/v1/turns",
            json!({ "boundary": "noon", "files": {} }),
            "boundary",
        ),
    ] {
        world
            .post(path, Some(&avatar.token), &body)
            .await
            .assert_error(StatusCode::BAD_REQUEST, "bad_request", Some(field));
    }
    assert_eq!(world.counts(0), before);
}

#[tokio::test]
async fn a_bad_value_in_an_event_names_its_field_and_stores_nothing() {
    let world = World::new().await;
    let avatar = world.avatar(0, 0);
    let before = world.counts(0);
    for (field, value, named) in [
        ("ok", json!("yes"), "events[1].event.ok"),
        ("duration_ms", json!(-5), "events[1].event.duration_ms"),
        ("at", json!("yesterday"), "events[1].event.at"),
        (
            "measures",
            json!({ "xp": { "Woodcutting": -1 } }),
            "events[1].event.measures",
        ),
        (
            "measures",
            json!({ "xp": { "Woodcutting": "lots" } }),
            "events[1].event.measures.xp.Woodcutting",
        ),
        (
            "code",
            json!("await bot.chopTree(1)"),
            "events[1].event.kind",
        ),
    ] {
        // The first event is good: a bad one anywhere in the batch stores nothing.
        let mut batch = good_batch(&world, "good-first");
        let mut bad = batch["events"][0].clone();
        bad["event"]["id"] = json!("bad-second");
        bad["event"][field] = value;
        batch["events"].as_array_mut().unwrap().push(bad);
        let answer = world.post("/v1/events", Some(&avatar.token), &batch).await;
        answer.assert_error(StatusCode::BAD_REQUEST, "bad_request", Some(named));
        assert!(
            !answer.error_message().contains("line 1"),
            "{}",
            answer.error_message()
        );
    }
    assert_eq!(world.counts(0), before);
}

#[tokio::test]
async fn an_event_without_an_id_is_a_400_and_stores_nothing() {
    let world = World::new().await;
    let avatar = world.avatar(0, 0);
    let before = world.counts(0);
    for id in [None, Some(json!("")), Some(Value::Null)] {
        let mut batch = good_batch(&world, "x");
        let event = batch["events"][0]["event"].as_object_mut().unwrap();
        match id {
            None => {
                event.remove("id");
            }
            Some(id) => {
                event.insert("id".into(), id);
            }
        }
        world
            .post("/v1/events", Some(&avatar.token), &batch)
            .await
            .assert_error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                Some("events[0].event.id"),
            );
    }
    assert_eq!(world.counts(0), before);
}

#[tokio::test]
async fn a_file_outside_the_avatars_bot_folder_or_its_bot_env_is_a_400_and_stores_nothing() {
    let world = World::new().await;
    let avatar = world.avatar(0, 0);
    let name = &avatar.name;
    let sibling = &world.avatar(0, 1).name;
    let foreign = &world.avatar(1, 0).name;
    let before = world.counts(0);
    let lessons_before = world.store.lessons(world.families[0].owner.id).unwrap();
    for path in [
        format!("bots/{foreign}/{COMMON}.ts"),
        format!("bots/{sibling}/{COMMON}.ts"),
        format!("bots/{name}/bot.env"),
        format!("bots/{name}/sub/{COMMON}.ts"),
        format!("bots/{name}/../{sibling}/x.ts"),
        format!("bots/{name}/"),
        "/etc/passwd".to_string(),
        "../x.ts".to_string(),
        format!("{COMMON}.ts"),
    ] {
        let text = json!({ "text": "BOT_PASSWORD=hunter2\n" });
        let mut batch = good_batch(&world, "outside");
        batch["events"][0]["files"][&path] = text.clone();
        let answer = world.post("/v1/events", Some(&avatar.token), &batch).await;
        let field = format!("events[0].files.{path}");
        answer.assert_error(StatusCode::BAD_REQUEST, "bad_request", Some(&field));

        let mut files = snapshot(
            name,
            &[(COMMON, true)],
            "zq",
            Some("Share: zqmark new lesson\n"),
        );
        files[&path] = text;
        let turn = json!({ "boundary": "turn_end", "files": files });
        world
            .post("/v1/turns", Some(&avatar.token), &turn)
            .await
            .assert_error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                Some(&format!("files.{path}")),
            );
        let wrapup = json!({ "files": files });
        world
            .post("/v1/wrapup", Some(&avatar.token), &wrapup)
            .await
            .assert_error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                Some(&format!("files.{path}")),
            );
    }
    assert_eq!(world.counts(0), before);
    assert_eq!(
        world.store.lessons(world.families[0].owner.id).unwrap(),
        lessons_before,
        "a refused turn changes no lesson"
    );
}

#[tokio::test]
async fn an_oversized_body_is_a_413_and_stores_nothing() {
    let world = World::new().await;
    let token = world.avatar(0, 0).token.clone();
    let before = world.counts(0);
    for (path, limit) in [
        ("/v1/events", MAX_EVENTS_BODY),
        ("/v1/state", MAX_EVENTS_BODY),
        ("/v1/mirror", MAX_SMALL_BODY),
    ] {
        // A valid JSON body just over the limit, with its length declared up front …
        let padding = "x".repeat(limit);
        let body = match path {
            "/v1/events" => {
                let mut batch = good_batch(&world, "big");
                batch["events"][0]["event"]["output"] = json!(padding);
                batch
            }
            "/v1/state" => json!({ "quests": [padding] }),
            _ => json!({ "have": { "INDEX.md": padding } }),
        };
        let bytes = serde_json::to_vec(&body).unwrap();
        let length = bytes.len();
        assert!(length > limit);
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_LENGTH, length)
            .body(Body::from(bytes.clone()))
            .unwrap();
        world.send(request, Some(&body)).await.assert_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            None,
        );

        // … and streamed without a length.
        let chunks: Vec<Result<Bytes, std::io::Error>> = bytes
            .chunks(64 * 1024)
            .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
            .collect();
        let streamed = Body::from_stream(futures_util::stream::iter(chunks));
        world
            .post_raw(path, Some(&token), streamed)
            .await
            .assert_error(StatusCode::PAYLOAD_TOO_LARGE, "too_large", None);
    }
    // The turn and wrap-up limit (64 MiB): a declared length over it is refused before the
    // body is read.
    for path in ["/v1/turns", "/v1/wrapup"] {
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_LENGTH, MAX_TURN_BODY + 1)
            .body(Body::from(r#"{"boundary": "turn_end", "files": {}}"#))
            .unwrap();
        world.send(request, None).await.assert_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            None,
        );
    }
    assert_eq!(world.counts(0), before);
}

#[tokio::test]
async fn metrics_answer_an_operator_token_in_prometheus_text_and_refuse_a_runner_or_revoked_one() {
    let world = World::new().await;
    let operator = new_secret("mr_operator_");
    let id = world
        .store
        .issue_operator_token(&secret_digest(&operator), 1)
        .unwrap();
    let answer = world.get("/metrics", Some(&operator)).await;
    answer.assert_status(StatusCode::OK);
    for owner in ["zqowner", "yqowner"] {
        assert!(
            answer.text.contains(&format!(
                "mindrune_runs_total{{owner=\"{owner}\",outcome=\"ok\"}} "
            )),
            "{}",
            answer.text
        );
    }
    assert!(
        answer
            .text
            .lines()
            .any(|l| l.starts_with("mindrune_events_recorded_total ") && !l.ends_with(" 0")),
        "{}",
        answer.text
    );
    let runner = world.avatar(0, 0).token.clone();
    for token in [None, Some(runner.as_str())] {
        world.get("/metrics", token).await.assert_error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            None,
        );
    }
    world
        .store
        .revoke_operator_token(mindrune_store::OperatorTokenKey::Id(id), 2)
        .unwrap();
    world.get("/metrics", Some(&operator)).await.assert_error(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        None,
    );
}

#[tokio::test]
async fn a_missing_unknown_or_revoked_token_is_a_401() {
    let world = World::new().await;
    let buzz = world.avatar(0, 0);
    let pickles = world.avatar(0, 1);
    let before = world.counts(0);
    let batch = good_batch(&world, "unauthorized");
    let unknown = new_secret("mr_runner_");
    let headers: [Option<String>; 5] = [
        None,
        Some("Bearer ".into()),
        Some(format!("Basic {}", buzz.token)),
        Some(format!("bearer {}", buzz.token)),
        Some(format!("Bearer {unknown}")),
    ];
    for value in headers {
        let mut request = Request::builder().method(Method::POST).uri("/v1/events");
        if let Some(value) = &value {
            request = request.header(header::AUTHORIZATION, value);
        }
        let request = request
            .body(Body::from(serde_json::to_vec(&batch).unwrap()))
            .unwrap();
        world.send(request, Some(&batch)).await.assert_error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            None,
        );
    }
    for path in ["/v1/whoami", "/v1/mirror", "/v1/instructions"] {
        world
            .get(path, None)
            .await
            .assert_error(StatusCode::UNAUTHORIZED, "unauthorized", None);
    }
    for (path, body) in [
        ("/v1/turns", json!({ "boundary": "turn_end", "files": {} })),
        ("/v1/mirror", json!({})),
        ("/v1/wrapup", json!({ "files": {} })),
        ("/v1/state", json!({})),
    ] {
        world.post(path, Some(&unknown), &body).await.assert_error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            None,
        );
    }

    // Revoked: the avatar's tokens stop working, its sibling's do not.
    let revoked = world
        .store
        .revoke_runner_tokens(world.families[0].owner.id, buzz.agent.id, 2)
        .unwrap();
    assert_eq!(revoked, 1);
    world
        .post("/v1/events", Some(&buzz.token), &batch)
        .await
        .assert_error(StatusCode::UNAUTHORIZED, "unauthorized", None);
    world
        .get("/v1/whoami", Some(&buzz.token))
        .await
        .assert_error(StatusCode::UNAUTHORIZED, "unauthorized", None);
    world
        .get("/v1/whoami", Some(&pickles.token))
        .await
        .assert_status(StatusCode::OK);
    assert_eq!(world.counts(0), before);
}

#[tokio::test]
async fn a_replayed_batch_answers_duplicate_and_counts_nothing_twice() {
    let world = World::new().await;
    let avatar = world.avatar(0, 0);
    let m = MARKERS[0];
    let mut events: Vec<Value> = (0..3)
        .map(|i| {
            run_event(
                &format!("replay-{i}"),
                &avatar.name,
                COMMON,
                i != 1,
                &script_text(m, COMMON, true),
            )
        })
        .collect();
    events.push(json!({ "event": {
        "id": "replay-snippet", "kind": "execute_code", "code": "await bot.say('hi')", "ok": true
    } }));
    let batch = json!({ "events": events });
    let before = world.counts(0);
    let first = world.post("/v1/events", Some(&avatar.token), &batch).await;
    first.assert_status(StatusCode::OK);
    let statuses = |answer: &Answer| -> Vec<String> {
        answer.json["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["status"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(statuses(&first), ["recorded"; 4]);
    let after_first = world.counts(0);
    assert_eq!(after_first.uses, before.uses + 3);

    let again = world.post("/v1/events", Some(&avatar.token), &batch).await;
    again.assert_status(StatusCode::OK);
    assert_eq!(statuses(&again), ["duplicate"; 4]);
    assert_eq!(world.counts(0), after_first, "nothing counts twice");
    let uses = |answer: &Answer| answer.json["results"][2]["runs"][0]["uses"].clone();
    assert_eq!(uses(&again), uses(&first));
}

#[tokio::test]
async fn a_batch_of_more_than_500_events_is_a_400_and_stores_nothing() {
    let world = World::new().await;
    let avatar = world.avatar(0, 0);
    let text = script_text("zq", COMMON, true);
    let batch = |n: usize| {
        let events: Vec<Value> = (0..n)
            .map(|i| run_event(&format!("many-{i}"), &avatar.name, COMMON, true, &text))
            .collect();
        json!({ "events": events })
    };
    let before = world.counts(0);
    let answer = world
        .post("/v1/events", Some(&avatar.token), &batch(501))
        .await;
    answer.assert_error(StatusCode::BAD_REQUEST, "bad_request", Some("events"));
    assert!(answer.error_message().contains("501"), "{}", answer.text);
    assert_eq!(world.counts(0), before);

    let answer = world
        .post("/v1/events", Some(&avatar.token), &batch(500))
        .await;
    answer.assert_status(StatusCode::OK);
    assert_eq!(world.counts(0).uses, before.uses + 500);
}

#[tokio::test]
async fn a_body_cut_short_is_a_400_stores_nothing_and_the_server_keeps_serving() {
    let world = World::new().await;
    let avatar = world.avatar(0, 0);
    let before = world.counts(0);
    let whole = serde_json::to_vec(&good_batch(&world, "cut-short")).unwrap();
    let half = Bytes::copy_from_slice(&whole[..whole.len() / 2]);
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(half),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "the runner went away",
        )),
    ];
    let body = Body::from_stream(futures_util::stream::iter(chunks));
    let answer = world
        .post_raw("/v1/events", Some(&avatar.token), body)
        .await;
    answer.assert_error(StatusCode::BAD_REQUEST, "bad_request", None);
    assert!(
        answer.error_message().contains("could not be read"),
        "{}",
        answer.text
    );
    assert_eq!(world.counts(0), before);

    let answer = world
        .post(
            "/v1/events",
            Some(&avatar.token),
            &good_batch(&world, "cut-short"),
        )
        .await;
    answer.assert_status(StatusCode::OK);
    assert_eq!(answer.json["results"][0]["status"], "recorded");
    assert_eq!(world.counts(0).uses, before.uses + 1);
}

#[tokio::test]
async fn an_event_naming_another_avatar_is_refused_403_and_stores_nothing() {
    let world = World::new().await;
    let avatar = world.avatar(0, 0);
    let before = [world.counts(0), world.counts(1)];
    for agent in [
        json!(world.avatar(1, 0).name),
        json!(world.avatar(0, 1).name),
        json!("nobody"),
        Value::Null,
    ] {
        let mut batch = good_batch(&world, "good-first");
        let mut other = batch["events"][0].clone();
        other["event"]["id"] = json!("other-agent");
        other["event"]["agent"] = agent;
        batch["events"].as_array_mut().unwrap().push(other);
        world
            .post("/v1/events", Some(&avatar.token), &batch)
            .await
            .assert_error(StatusCode::FORBIDDEN, "forbidden", None);
    }
    assert_eq!([world.counts(0), world.counts(1)], before);

    // Naming its own avatar is fine.
    let mut batch = good_batch(&world, "own-agent");
    batch["events"][0]["event"]["agent"] = json!(avatar.name);
    let answer = world.post("/v1/events", Some(&avatar.token), &batch).await;
    answer.assert_status(StatusCode::OK);
    assert_eq!(answer.json["results"][0]["status"], "recorded");
}

#[tokio::test]
async fn a_state_time_that_is_not_rfc_3339_is_a_400_naming_at() {
    let world = World::empty();
    let avatar = world.avatar(0, 0);
    world
        .post("/v1/state", Some(&avatar.token), &json!({ "at": "noon" }))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "bad_request", Some("at"));
    assert!(
        world
            .store
            .avatar_state(world.families[0].owner.id, avatar.agent.id)
            .unwrap()
            .is_none()
    );
}

/// A runner that sends an inline snippet's event id again with other code (or a sibling that
/// happens to use the same id) is told `duplicate`, as a retried script run is — never a 500,
/// which would make a runner send the batch again forever.
#[tokio::test]
async fn a_retried_snippet_id_with_other_code_is_a_duplicate_not_a_500() {
    let world = World::empty();
    let (buzz, pickles) = (world.avatar(0, 0), world.avatar(0, 1));
    let snippet = |code: &str| {
        json!({ "events": [{ "event": {
            "id": "same-id", "kind": "execute_code", "code": code, "ok": true
        } }] })
    };
    let first = world
        .post(
            "/v1/events",
            Some(&buzz.token),
            &snippet("await bot.chopTree(1)"),
        )
        .await;
    assert_eq!(
        first.json["results"][0]["status"], "recorded",
        "{}",
        first.text
    );
    let before = world.counts(0);
    for (token, code) in [
        (&buzz.token, "await bot.chopTree(2)"),
        (&pickles.token, "await bot.chopTree(1)"),
    ] {
        let again = world.post("/v1/events", Some(token), &snippet(code)).await;
        again.assert_status(StatusCode::OK);
        assert_eq!(
            again.json["results"][0]["status"], "duplicate",
            "{}",
            again.text
        );
    }
    assert_eq!(world.counts(0), before);
}

#[test]
fn the_answer_check_refuses_what_the_document_does_not_describe() {
    let doc = doc();
    let json = Some("application/json");
    let check =
        |method: Method, path: &'static str, status: u16, content_type, body: &'static str| {
            std::panic::catch_unwind(|| {
                doc.check_answer(
                    &method,
                    path,
                    StatusCode::from_u16(status).unwrap(),
                    content_type,
                    body.as_bytes(),
                );
            })
            .is_ok()
        };
    let whoami = r#"{"agent":"zqbuzz","api_version":"v1"}"#;
    assert!(check(Method::GET, "/v1/whoami", 200, json, whoami));
    // A status the path does not document, a field too many or missing, a wrong type, a body
    // that is not JSON, and a body where none is documented.
    assert!(!check(Method::GET, "/v1/whoami", 403, json, whoami));
    assert!(!check(
        Method::GET,
        "/v1/whoami",
        200,
        json,
        r#"{"agent":"zqbuzz","api_version":"v1","owner":"x"}"#
    ));
    assert!(!check(
        Method::GET,
        "/v1/whoami",
        200,
        json,
        r#"{"agent":"zqbuzz"}"#
    ));
    assert!(!check(
        Method::GET,
        "/v1/whoami",
        200,
        json,
        r#"{"agent":7,"api_version":"v1"}"#
    ));
    assert!(!check(
        Method::GET,
        "/v1/whoami",
        200,
        Some("text/plain"),
        whoami
    ));
    assert!(!check(Method::POST, "/v1/state", 204, None, "{}"));
    assert!(check(Method::POST, "/v1/state", 204, None, ""));
    // Nested schemas are followed: a wire file with both forms, an unknown event status.
    assert!(!check(
        Method::POST,
        "/v1/events",
        200,
        json,
        r#"{"results":[{"id":"a","status":"stored"}]}"#
    ));
    assert!(check(
        Method::GET,
        "/skills/42",
        410,
        json,
        r#"{"error":{"code":"gone","message":"skills are files now: add the @skill header"}}"#
    ));
    assert!(!check(
        Method::GET,
        "/skills/42",
        410,
        json,
        r#"{"error":{"code":"gone"}}"#
    ));
    let file = json!({ "text": "x", "unreadable": "symlink" });
    let files_schema = json!({ "$ref": "#/components/schemas/WireFile" });
    assert!(!doc.problems(&files_schema, &file).is_empty());
    assert!(
        doc.problems(&files_schema, &json!({ "unreadable": "not_text" }))
            .is_empty()
    );
    assert!(
        !doc.problems(&files_schema, &json!({ "unreadable": "gone" }))
            .is_empty()
    );
}

// -------------------------------------------------------------------------------------------
// Owner isolation, for any sequence of requests
// -------------------------------------------------------------------------------------------

/// The scripts an avatar runs; `MARK` is its family's marker.
const SCRIPTS: &[&str] = &[COMMON, "mine-iron", "fish", "MARKmark-route"];

#[derive(Debug, Clone)]
enum AgentField {
    Left,
    Own,
    Sibling,
    OtherOwners,
}

#[derive(Debug, Clone)]
enum Call {
    Shell,
    Script,
    Inline,
}

#[derive(Debug, Clone)]
struct Ev {
    id: String,
    /// A name of [`SCRIPTS`] or a random one; `MARK` is the family's marker.
    script: String,
    call: Call,
    ok: bool,
    headed: bool,
    agent: AgentField,
}

#[derive(Debug, Clone)]
enum Op {
    Events {
        by: usize,
        events: Vec<Ev>,
    },
    Turn {
        by: usize,
        start: bool,
        headed: bool,
        lesson: bool,
        mirror: bool,
    },
    GetMirror {
        by: usize,
    },
    PostMirror {
        by: usize,
    },
    WrapUp {
        by: usize,
        headed: bool,
    },
    Instructions {
        by: usize,
    },
    WhoAmI {
        by: usize,
    },
    State {
        by: usize,
    },
}

fn ev() -> impl Strategy<Value = Ev> {
    (
        "[a-f0-9]{1,3}",
        prop_oneof![
            3 => prop::sample::select(SCRIPTS).prop_map(str::to_string),
            1 => "[a-h]{1,6}(-[a-h]{1,4})?".prop_map(|name| format!("MARK{name}")),
        ],
        prop_oneof![Just(Call::Shell), Just(Call::Script), Just(Call::Inline)],
        any::<bool>(),
        any::<bool>(),
        prop_oneof![
            6 => Just(AgentField::Left),
            3 => Just(AgentField::Own),
            1 => Just(AgentField::Sibling),
            1 => Just(AgentField::OtherOwners),
        ],
    )
        .prop_map(|(id, script, call, ok, headed, agent)| Ev {
            id,
            script,
            call,
            ok,
            headed,
            agent,
        })
}

fn op() -> impl Strategy<Value = Op> {
    let by = 0..4usize;
    prop_oneof![
        4 => (by.clone(), prop::collection::vec(ev(), 1..4))
            .prop_map(|(by, events)| Op::Events { by, events }),
        2 => (by.clone(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
            |(by, start, headed, lesson, mirror)| Op::Turn { by, start, headed, lesson, mirror }
        ),
        1 => by.clone().prop_map(|by| Op::GetMirror { by }),
        1 => by.clone().prop_map(|by| Op::PostMirror { by }),
        1 => (by.clone(), any::<bool>()).prop_map(|(by, headed)| Op::WrapUp { by, headed }),
        1 => by.clone().prop_map(|by| Op::Instructions { by }),
        1 => by.clone().prop_map(|by| Op::WhoAmI { by }),
        1 => by.prop_map(|by| Op::State { by }),
    ]
}

/// The id of an inline snippet's event: each avatar has its own, and one id is always the
/// same code. A retried id with other code, or a sibling's id, is answered `duplicate` (see
/// `a_retried_snippet_id_with_other_code_is_a_duplicate_not_a_500`); that has its own test,
/// and keeping the ids apart here keeps the model of what is stored simple.
fn snippet_id(avatar: usize, id: &str) -> String {
    format!("{avatar}-{id}")
}

/// What the test knows of each family: the event ids its uses and snippet runs were stored
/// under (a retry of one is a duplicate; the other family's ids are no concern of it).
#[derive(Default)]
struct Model {
    script_ids: [HashSet<String>; 2],
    snippet_ids: [HashSet<String>; 2],
}

impl World {
    fn script_name(&self, family: usize, name: &str) -> String {
        name.replace("MARK", self.families[family].marker)
    }

    fn all_scripts(&self, family: usize, avatar: usize, headed: bool) -> Value {
        let names: Vec<String> = SCRIPTS
            .iter()
            .map(|name| self.script_name(family, name))
            .collect();
        let scripts: Vec<(&str, bool)> = names.iter().map(|n| (n.as_str(), headed)).collect();
        snapshot(
            &self.avatar(family, avatar).name,
            &scripts,
            self.families[family].marker,
            None,
        )
    }

    /// Runs one operation and checks what it answered against the model.
    #[expect(
        clippy::too_many_lines,
        reason = "the model-based test: one arm per operation against the model"
    )]
    async fn run(&self, op: &Op, model: &mut Model) {
        let by = match op {
            Op::Events { by, .. }
            | Op::Turn { by, .. }
            | Op::GetMirror { by }
            | Op::PostMirror { by }
            | Op::WrapUp { by, .. }
            | Op::Instructions { by }
            | Op::WhoAmI { by }
            | Op::State { by } => *by,
        };
        let (f, a) = (by / 2, by % 2);
        let m = self.families[f].marker;
        let avatar = self.avatar(f, a);
        let token = Some(avatar.token.as_str());
        let before = [self.counts(0), self.counts(1)];
        let mut echoed: Option<String> = None;
        let answer = match op {
            Op::Events { events, .. } => {
                let wire: Vec<Value> = events
                    .iter()
                    .map(|ev| {
                        let name = self.script_name(f, &ev.script);
                        let path = format!("bots/{}/{name}.ts", avatar.name);
                        let mut event = match ev.call {
                            Call::Shell => json!({
                                "kind": "shell", "command": format!("bun {path}"), "cwd": "/work"
                            }),
                            Call::Script => json!({ "kind": "execute_code", "script": path }),
                            Call::Inline => json!({
                                "kind": "execute_code",
                                "code": format!(
                                    "await bot.chopTree({}); // {m}mark {}",
                                    ev.id.len(),
                                    snippet_id(a, &ev.id)
                                ),
                            }),
                        };
                        event["id"] = json!(match ev.call {
                            Call::Inline => snippet_id(a, &ev.id),
                            _ => ev.id.clone(),
                        });
                        event["ok"] = json!(ev.ok);
                        event["duration_ms"] = json!(30000);
                        match ev.agent {
                            AgentField::Left => {}
                            AgentField::Own => event["agent"] = json!(avatar.name),
                            AgentField::Sibling => {
                                event["agent"] = json!(self.avatar(f, 1 - a).name)
                            }
                            AgentField::OtherOwners => {
                                let name = self.avatar(1 - f, a).name.clone();
                                event["agent"] = json!(name);
                                echoed = Some(name);
                            }
                        }
                        let mut wire = json!({ "event": event });
                        if !matches!(ev.call, Call::Inline) {
                            wire["files"] = json!({
                                path: { "text": script_text(m, &name, ev.headed) }
                            });
                        }
                        wire
                    })
                    .collect();
                let answer = self
                    .post("/v1/events", token, &json!({ "events": wire }))
                    .await;
                let refused = events
                    .iter()
                    .any(|ev| matches!(ev.agent, AgentField::Sibling | AgentField::OtherOwners));
                if refused {
                    answer.assert_error(StatusCode::FORBIDDEN, "forbidden", None);
                    assert_eq!(
                        [self.counts(0), self.counts(1)],
                        before,
                        "a refused batch stores nothing"
                    );
                } else {
                    answer.assert_status(StatusCode::OK);
                    let results = answer.json["results"].as_array().unwrap();
                    let mut recorded = 0;
                    for (ev, result) in events.iter().zip(results) {
                        let (ids, id) = match ev.call {
                            Call::Inline => (&mut model.snippet_ids[f], snippet_id(a, &ev.id)),
                            _ => (&mut model.script_ids[f], ev.id.clone()),
                        };
                        let expected = if ids.insert(id) {
                            if !matches!(ev.call, Call::Inline) {
                                recorded += 1;
                            }
                            "recorded"
                        } else {
                            "duplicate"
                        };
                        assert_eq!(
                            result["status"], expected,
                            "an id is a retry only within its own family: {result}"
                        );
                    }
                    assert_eq!(self.counts(f).uses, before[f].uses + recorded);
                    assert_eq!(self.counts(1 - f), before[1 - f]);
                }
                answer
            }
            Op::Turn {
                start,
                headed,
                lesson,
                mirror,
                ..
            } => {
                let mut files = self.all_scripts(f, a, *headed);
                if *lesson {
                    files[format!("bots/{}/lab_log.md", avatar.name)] = json!({
                        "text": format!("Share: {m}mark lesson of {} at Lumbridge\n", avatar.name)
                    });
                }
                let mut turn = json!({
                    "boundary": if *start { "start" } else { "turn_end" },
                    "files": files,
                });
                if *mirror {
                    turn["mirror"] = json!({ "have": {} });
                }
                let answer = self.post("/v1/turns", token, &turn).await;
                answer.assert_status(StatusCode::OK);
                assert_eq!(answer.json["report"]["agent"], json!(avatar.name));
                answer
            }
            Op::GetMirror { .. } => {
                let answer = self.get("/v1/mirror", token).await;
                answer.assert_status(StatusCode::OK);
                answer
            }
            Op::PostMirror { .. } => {
                let answer = self
                    .post(
                        "/v1/mirror",
                        token,
                        &json!({ "have": { "INDEX.md": "sha256:0" } }),
                    )
                    .await;
                answer.assert_status(StatusCode::OK);
                answer
            }
            Op::WrapUp { headed, .. } => {
                let files = self.all_scripts(f, a, *headed);
                let answer = self
                    .post("/v1/wrapup", token, &json!({ "files": files }))
                    .await;
                answer.assert_status(StatusCode::OK);
                answer
            }
            Op::Instructions { .. } => {
                let answer = self.get("/v1/instructions", token).await;
                answer.assert_status(StatusCode::OK);
                answer
            }
            Op::WhoAmI { .. } => {
                let answer = self.get("/v1/whoami", token).await;
                answer.assert_status(StatusCode::OK);
                assert_eq!(answer.json["agent"], json!(avatar.name));
                answer
            }
            Op::State { .. } => {
                let answer = self
                    .post(
                        "/v1/state",
                        token,
                        &json!({ "quests": [format!("{m}mark quest {}", OWNER_KEYS[f])] }),
                    )
                    .await;
                answer.assert_status(StatusCode::NO_CONTENT);
                answer
            }
        };

        // The answer holds nothing of the other family (the other avatar's name an event
        // named, echoed in the refusal, aside) and no owner's key.
        let mut text = answer.text.to_lowercase();
        if let Some(echoed) = echoed {
            text = text.replace(&echoed, "");
        }
        let other = self.families[1 - f].marker;
        assert!(
            !text.contains(other),
            "{op:?}: an answer to a token of owner {m} holds data of owner {other}:\n{}",
            answer.text
        );
        for key in OWNER_KEYS {
            assert!(
                !answer.text.contains(key),
                "{op:?}: an owner's key: {}",
                answer.text
            );
        }
    }
}

proptest! {
    // A few seconds by default; `PROPTEST_CASES=1000` for a deeper run.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(24),
        max_shrink_iters: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Any sequence of requests by any token of either owner: no answer to one owner's token
    /// holds anything of the other's (avatar names, script names, code, headers, lessons,
    /// state, keys), an event id is a retry only within its own family, and an event naming
    /// another avatar is refused 403 with nothing stored.
    #[test]
    fn no_answer_to_one_owner_ever_holds_the_other_owners_data(
        ops in prop::collection::vec(op(), 1..12)
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let world = World::new().await;
            // The setup's ids (`zq-setup-…`, `zq-snippet-…`) are never generated.
            let mut model = Model::default();
            for op in &ops {
                world.run(op, &mut model).await;
            }
        });
    }
}
