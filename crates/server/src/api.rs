//! The runner protocol (`/v1/`): events, turn boundaries, the mirror, wrap-ups, instructions
//! and the avatar's state. Every handler takes its avatar from the runner's token ([`Runner`])
//! and passes that avatar's owner to the store, which filters every query by it.

use std::collections::BTreeMap;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::{Json, http::header::CONTENT_LENGTH};
use mindrune_core::Scrubber;
use mindrune_core::SharingBar;
use mindrune_core::{Event, RawEvent};
use mindrune_engine::wrap_up_with;
use mindrune_engine::{
    Boundary, MIRROR_REFRESH_INTERVAL_MS, MirrorPolicy, TurnError, turn_boundary_with,
};
use mindrune_engine::{FamilyError, MirrorOutcome, mirror_plan};
use mindrune_engine::{IngestError, now_millis};
use mindrune_engine::{ReadError, SnapshotFiles};
use mindrune_store::{Agent, Standing, Store};
use serde::de::DeserializeOwned;

use crate::auth::Runner;
use crate::error::ApiError;
use crate::fairness::{BudgetShare, SMALL_BODY_BYTES};
use crate::state::AppState;
use crate::wire::{
    self, AvatarStats, EventBatch, EventResult, EventStatus, EventsAnswer, FileProblem,
    InstructionsAnswer, MirrorAnswer, MirrorFile, MirrorRequest, TurnAnswer, TurnRequest, WhoAmI,
    WireBoundary, WireFile, WireRun, WrapUpRequest,
};

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/whoami", get(whoami))
        .route("/v1/events", post(post_events))
        .route("/v1/turns", post(post_turn))
        .route("/v1/mirror", get(get_mirror).post(post_mirror))
        .route("/v1/wrapup", post(post_wrapup))
        .route("/v1/instructions", get(instructions))
        .route("/v1/state", post(post_state))
        // The loopback skill tools of old: skills are files now.
        .route("/skills", get(skills_are_files).post(skills_are_files))
        .route("/skills/{id}", get(skills_are_files))
        .route("/skills/{id}/outcome", post(skills_are_files))
        // Each handler reads its body with its own limit (see `read_json`).
        .layer(DefaultBodyLimit::disable())
}

async fn skills_are_files() -> ApiError {
    ApiError::gone(wire::SKILLS_ARE_FILES)
}

/// Reads a JSON body of at most `limit` bytes, once the body's share of the server's
/// [`BodyBudget`](crate::fairness::BodyBudget) is free; the share is handed back with the value
/// and lasts as long as the caller keeps it. A body over the limit is a 413; a body that is not
/// the expected JSON is a 400 naming the field (`events[3].event`); a body cut short (the
/// client went away) is a 400 too, and one that trickled past `body_read_timeout_secs` a 408.
/// Nothing is stored in any of these cases. A large body is decoded on a blocking thread, so
/// it never holds up the requests the runtime's threads are serving.
async fn read_json<T: DeserializeOwned + Send + 'static>(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<(T, BudgetShare), ApiError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(ApiError::too_large(limit));
    }
    let share = state
        .body_budget()
        .share(declared.map_or(limit, |len| len as usize))
        .await;
    let bytes: Bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(err) => {
            if let Some(deadline) = crate::fairness::BodyDeadline::in_error(&err) {
                return Err(deadline.to_api_error());
            }
            let over = std::error::Error::source(&err)
                .is_some_and(|e| e.is::<http_body_util::LengthLimitError>())
                || err.to_string().contains("length limit exceeded");
            return Err(if over {
                ApiError::too_large(limit)
            } else {
                ApiError::bad_request(format!(
                    "the request body could not be read ({err}); nothing was stored — send it again"
                ))
            });
        }
    };
    let value = if bytes.len() < SMALL_BODY_BYTES {
        decode_json(&bytes)?
    } else {
        tokio::task::spawn_blocking(move || decode_json(&bytes))
            .await
            .map_err(|err| ApiError::internal("the request body could not be decoded", err))??
    };
    Ok((value, share))
}

/// The value of a JSON body, or a 400 naming the field at fault.
fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let message = format!("{inner}; nothing was stored");
        if path == "." || path.is_empty() {
            ApiError::bad_request(format!("the body is not the expected JSON: {message}"))
        } else {
            ApiError::bad_field(path, message)
        }
    })?;
    deserializer.end().map_err(|err| {
        ApiError::bad_request(format!("trailing data after the JSON body: {err}"))
    })?;
    Ok(value)
}

async fn whoami(runner: Runner) -> Json<WhoAmI> {
    Json(WhoAmI {
        agent: runner.agent.name,
        api_version: wire::API_VERSION.into(),
    })
}

/// Checks one event of a batch against the event contract and the runner's avatar.
fn check_event(index: usize, value: serde_json::Value, agent: &Agent) -> Result<Event, ApiError> {
    let at = |field: Option<&str>| match field {
        Some(field) => format!("events[{index}].event.{field}"),
        None => format!("events[{index}].event"),
    };
    let serde_json::Value::Object(mut object) = value else {
        return Err(ApiError::bad_field(
            at(None),
            "must be a JSON object (the event contract: kind, command or script or code, ok, …)",
        ));
    };
    match object.get("agent") {
        None => {
            object.insert("agent".into(), agent.name.clone().into());
        }
        Some(serde_json::Value::String(name)) if *name == agent.name => {}
        Some(other) => {
            return Err(ApiError::forbidden(format!(
                "{} is {other}, but this runner's token is for `{}`; a runner reports only its own avatar (leave `agent` out)",
                at(Some("agent")),
                agent.name
            )));
        }
    }
    // Decoded from the value itself, not from a line written again from it: a position in such
    // a line ("at line 1 column 93") points nowhere in what the runner sent, while the path
    // names the field (`events[0].event.measures.xp.Mining`).
    let raw: RawEvent = serde_path_to_error::deserialize(serde_json::Value::Object(object))
        .map_err(|err| {
            let path = err.path().to_string();
            let message = err.into_inner().to_string();
            let field = (path != "." && !path.is_empty()).then_some(path);
            ApiError::bad_field(at(field.as_deref()), message)
        })?;
    let event = mindrune_core::check_event(raw)
        .map_err(|err| ApiError::bad_field(at(err.field.as_deref()), err.message))?;
    if event.id.as_deref().is_none_or(str::is_empty) {
        return Err(ApiError::bad_field(
            at(Some("id")),
            "is required on the wire: a batch sent again is recognised by its events' ids, so nothing counts twice",
        ));
    }
    Ok(event)
}

/// Turns the files a runner sent into a snapshot. Only files directly in the avatar's own
/// `bots/<bot>/` may be sent, and never `bot.env`.
fn snapshot(
    files: BTreeMap<String, WireFile>,
    agent: &Agent,
    field: &str,
) -> Result<SnapshotFiles, ApiError> {
    let mut snapshot = SnapshotFiles::new();
    let folder = format!("bots/{}/", agent.name);
    for (path, file) in files {
        let name = path.strip_prefix(&folder).unwrap_or("");
        if name.is_empty() || name.contains('/') || name == "bot.env" {
            return Err(ApiError::bad_field(
                format!("{field}.{}", wire::shown_path(&path)),
                format!(
                    "a runner sends only the files directly in {folder} (its scripts and lab_log.md, never bot.env)"
                ),
            ));
        }
        let content = match file {
            WireFile::Text(text) => Ok(text),
            WireFile::Unreadable(problem) => Err(match problem {
                FileProblem::Symlink => ReadError::Symlink(path.clone()),
                FileProblem::NotAFile => ReadError::NotAFile(path.clone()),
                FileProblem::NotText => ReadError::NotText(path.clone()),
                FileProblem::TooLarge => ReadError::TooLarge {
                    path: path.clone(),
                    size: 0,
                    limit: mindrune_engine::MAX_SCRIPT_BYTES,
                },
            }),
        };
        snapshot.insert(&path, content).map_err(|err| {
            ApiError::bad_field(
                format!("{field}.{}", wire::shown_path(&path)),
                err.to_string(),
            )
        })?;
    }
    Ok(snapshot)
}

async fn post_events(
    State(state): State<AppState>,
    runner: Runner,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<EventsAnswer>, ApiError> {
    let (batch, _budget): (EventBatch, _) =
        read_json(&state, &headers, body, wire::MAX_EVENTS_BODY).await?;
    if batch.events.len() > wire::MAX_BATCH_EVENTS {
        return Err(ApiError::bad_field(
            "events",
            format!(
                "holds {} events, over the {} a batch may hold; send smaller batches",
                batch.events.len(),
                wire::MAX_BATCH_EVENTS
            ),
        ));
    }
    // The whole batch is checked before anything is stored: a bad event stores nothing.
    let mut checked = Vec::with_capacity(batch.events.len());
    for (index, wire_event) in batch.events.into_iter().enumerate() {
        let event = check_event(index, wire_event.event, &runner.agent)?;
        let files = snapshot(
            wire_event.files,
            &runner.agent,
            &format!("events[{index}].files"),
        )?;
        checked.push((event, files));
    }
    let ids: Vec<String> = checked
        .iter()
        .map(|(event, _)| event.id.clone().unwrap_or_default())
        .collect();
    // What needs no library (the outputs' parse and scrub) is done here, beside the writer,
    // not on its thread.
    let recorder = state.recorder();
    let agent = runner.agent.clone();
    let checked = state
        .blocking(move || {
            checked
                .into_iter()
                .map(|(event, files)| {
                    // A failure here (the owner's key unreadable) is met again while recording,
                    // where it is answered for the event: the output is then prepared there.
                    let prepared = recorder.prepare(&agent, &event, &files).ok();
                    (event, files, prepared)
                })
                .collect::<Vec<_>>()
        })
        .await?;
    let answer = state
        .group_commit()
        .record(runner.agent, checked)
        .await
        .map_err(|_| {
            ApiError::internal(
                "the library's writer stopped unexpectedly",
                "group commit lane ended",
            )
        })?;
    // The library failed: the runner sends the batch again, and what was stored already is
    // recognised by its ids.
    let recorded = answer.map_err(ApiError::from)?;
    let mut results = Vec::with_capacity(recorded.len());
    let mut refusals = Vec::new();
    for (result, id) in recorded.into_iter().zip(ids) {
        results.push(match result {
            Ok(recorded) => {
                let added = recorded.runs.iter().any(|r| r.added)
                    || recorded.snippet.as_ref().is_some_and(|s| s.added);
                let status = if recorded.runs.is_empty() && recorded.snippet.is_none() {
                    EventStatus::Ignored
                } else if added {
                    EventStatus::Recorded
                } else {
                    EventStatus::Duplicate
                };
                EventResult {
                    id,
                    status,
                    runs: recorded
                        .runs
                        .iter()
                        .map(|run| WireRun {
                            skill: run.skill.clone(),
                            version: run.version,
                            ok: run.ok,
                            score: run.score,
                            uses: run.uses,
                        })
                        .collect(),
                    warnings: recorded.warnings,
                    error: None,
                }
            }
            Err(err) => {
                refusals.push(match err {
                    IngestError::Invalid { .. } => "invalid",
                    IngestError::Store(_) => "store",
                });
                EventResult {
                    id,
                    status: EventStatus::Rejected,
                    runs: Vec::new(),
                    warnings: Vec::new(),
                    error: Some(err.to_string()),
                }
            }
        });
    }
    let mut counts = crate::metrics::EventCounts::default();
    for result in &results {
        match result.status {
            EventStatus::Recorded => counts.recorded += 1,
            EventStatus::Duplicate => counts.duplicate += 1,
            EventStatus::Ignored => counts.ignored += 1,
            EventStatus::Rejected => {}
        }
    }
    state.metrics().note_events(counts);
    for reason in &refusals {
        state.metrics().note_event_refused(reason);
    }
    let refused = refusals.len() as u64;
    state.health().note_events(
        mindrune_engine::now_millis(),
        results.len() as u64 - refused,
        refused,
    );
    Ok(Json(EventsAnswer { results }))
}

fn turn_error(err: TurnError) -> ApiError {
    match err {
        TurnError::Store(err) => err.into(),
        TurnError::Ingest(IngestError::Store(err)) => err.into(),
        TurnError::Ingest(err) => ApiError::bad_request(err.to_string()),
        TurnError::BotDir { .. } | TurnError::NoWorkspace { .. } => {
            ApiError::bad_request(err.to_string())
        }
        TurnError::Mirror(err) => ApiError::internal("the mirror could not be made", err),
    }
}

/// The avatar's mirror, with content only for files the runner does not hold at that key.
/// Notes the refresh (so turn ends send it at most once a minute).
fn mirror_answer(
    store: &dyn Store,
    agent: &Agent,
    have: &BTreeMap<String, String>,
) -> Result<MirrorAnswer, ApiError> {
    let plan = mirror_plan(store, agent).map_err(|err| match err {
        FamilyError::Store(err) => ApiError::from(err),
        other => ApiError::internal("the mirror could not be made", other),
    })?;
    let mut files = Vec::with_capacity(plan.wanted.len());
    for wanted in &plan.wanted {
        let content = if have.get(&wanted.path) == Some(&wanted.key) {
            None
        } else {
            Some(
                plan.content(&wanted.path)
                    .map_err(|err| ApiError::internal("the mirror could not be made", err))?,
            )
        };
        files.push(MirrorFile {
            path: wanted.path.clone(),
            key: wanted.key.clone(),
            content,
        });
    }
    store.note_mirror_refresh(agent.owner, agent.id, now_millis())?;
    Ok(MirrorAnswer { files })
}

async fn post_turn(
    State(state): State<AppState>,
    runner: Runner,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<TurnAnswer>, ApiError> {
    let (request, _budget): (TurnRequest, _) =
        read_json(&state, &headers, body, wire::MAX_TURN_BODY).await?;
    let files = snapshot(request.files, &runner.agent, "files")?;
    let recorder = state.recorder();
    let agent = runner.agent;
    let answer = state
        .blocking(move || {
            recorder.know_agent(&agent);
            let boundary = match request.boundary {
                WireBoundary::TurnEnd => Boundary::TurnEnd,
                WireBoundary::Start => Boundary::Start,
            };
            let mut report = turn_boundary_with(
                recorder,
                &agent.name,
                &files,
                boundary,
                MirrorPolicy::Skip,
                None,
            )
            .map_err(turn_error)?;
            let now = now_millis();
            let due = boundary == Boundary::Start
                || agent
                    .mirror_refreshed_at
                    .is_none_or(|at| now - at >= MIRROR_REFRESH_INTERVAL_MS);
            let mirror = match (&request.mirror, due) {
                (Some(mirror), true) => {
                    report.mirror = MirrorOutcome::Skipped {
                        reason: "sent to the runner, which writes family-skills/".into(),
                    };
                    Some(mirror_answer(recorder.store(), &agent, &mirror.have)?)
                }
                (Some(_), false) => {
                    report.mirror = MirrorOutcome::Skipped {
                        reason: format!(
                            "sent {} s ago; family-skills/ is refreshed at most once a minute",
                            (now - agent.mirror_refreshed_at.unwrap_or(now)) / 1000
                        ),
                    };
                    None
                }
                (None, _) => {
                    report.mirror = MirrorOutcome::Skipped {
                        reason: "not asked for".into(),
                    };
                    None
                }
            };
            let report = serde_json::to_value(&report)
                .map_err(|err| ApiError::internal("the turn report could not be written", err))?;
            Ok::<_, ApiError>(TurnAnswer { report, mirror })
        })
        .await??;
    if answer.mirror.is_some() {
        state.metrics().note_mirror_refresh();
    }
    Ok(Json(answer))
}

async fn get_mirror(
    State(state): State<AppState>,
    runner: Runner,
) -> Result<Json<MirrorAnswer>, ApiError> {
    send_mirror(&state, runner.agent, BTreeMap::new()).await
}

async fn send_mirror(
    state: &AppState,
    agent: Agent,
    have: BTreeMap<String, String>,
) -> Result<Json<MirrorAnswer>, ApiError> {
    let store = state.store();
    let answer = state
        .blocking(move || mirror_answer(store, &agent, &have))
        .await??;
    state.metrics().note_mirror_refresh();
    Ok(Json(answer))
}

async fn post_mirror(
    State(state): State<AppState>,
    runner: Runner,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<MirrorAnswer>, ApiError> {
    let (request, _budget): (MirrorRequest, _) =
        read_json(&state, &headers, body, wire::MAX_SMALL_BODY).await?;
    send_mirror(&state, runner.agent, request.have).await
}

async fn post_wrapup(
    State(state): State<AppState>,
    runner: Runner,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (request, _budget): (WrapUpRequest, _) =
        read_json(&state, &headers, body, wire::MAX_TURN_BODY).await?;
    let files = snapshot(request.files, &runner.agent, "files")?;
    let recorder = state.recorder();
    let agent = runner.agent;
    let answer = state
        .blocking(move || {
            recorder.know_agent(&agent);
            let wrapup =
                wrap_up_with(recorder, agent, &files, MirrorPolicy::Skip).map_err(turn_error)?;
            serde_json::to_value(&wrapup)
                .map_err(|err| ApiError::internal("the wrap-up could not be written", err))
        })
        .await??;
    Ok(Json(answer))
}

async fn instructions(
    State(state): State<AppState>,
    runner: Runner,
) -> Result<Json<InstructionsAnswer>, ApiError> {
    let store = state.store();
    let owner = runner.owner();
    let eager = state
        .blocking(move || store.owner(owner).map(|o| o.eager_sharing))
        .await??;
    Ok(Json(InstructionsAnswer {
        text: mindrune_core::instructions_text(
            &runner.agent.name,
            SharingBar::for_family(eager),
            eager,
            mindrune_engine::mirror_relative(&runner.agent),
        ),
    }))
}

async fn post_state(
    State(state): State<AppState>,
    runner: Runner,
    headers: HeaderMap,
    body: Body,
) -> Result<axum::http::StatusCode, ApiError> {
    let (mut stats, _budget): (AvatarStats, _) =
        read_json(&state, &headers, body, wire::MAX_EVENTS_BODY).await?;
    // Only the recorder reads a state from a run's printed output; a report is the runner's.
    stats.printed = false;
    let at = match &stats.at {
        Some(text) => {
            let at =
                time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                    .map_err(|err| {
                    ApiError::bad_field("at", format!("`{text}` is not an RFC 3339 time: {err}"))
                })?;
            (at.unix_timestamp_nanos() / 1_000_000) as i64
        }
        None => now_millis(),
    };
    let store = state.store();
    let agent = runner.agent;
    state
        .blocking(move || {
            let json = serde_json::to_string(&stats).unwrap_or_default();
            // Item and quest names are free text: scrubbed like everything the library keeps
            // (the owner's key by its shape).
            let scrubbed = Scrubber::new(&[]).scrub(&json).text.into_owned();
            let standing = stats
                .wealth
                .map(|coins| Standing::of_report(coins, &stats.levels, &stats.xp));
            store.save_avatar_state(agent.owner, agent.id, &scrubbed, standing, at)
        })
        .await??;
    Ok(axum::http::StatusCode::NO_CONTENT)
}
