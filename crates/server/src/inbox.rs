//! The owner's Inbox: the playbook cards of the owner's personal assistants (the workspaces
//! that `[[playbooks]]` entries of the server's configuration give the owner), each to approve
//! or to turn down with a reason.
//!
//! `/dashboard/inbox` lists the waiting cards of each of the owner's workspaces;
//! `/dashboard/inbox/{ws}/cards/{id}` shows one card as `mindrune card show` does (a draft's
//! file; for a revision or revert the diff against the live file of the text as it would land,
//! from the engine's `cards::preview`), with two forms that POST to `…/approve` and `…/reject`.
//! An answer redirects back to the Inbox, whose notice says what happened (read back from the
//! card, so the notice is never text from the request).
//!
//! Architecture invariant: a workspace is looked for only among the entries of the session's
//! owner (its name comes from the store, by the session, never from the request), by a key
//! derived from its path; another owner's workspace is "not found" (404), like a missing one.
//! Cards are answered only through `Playbooks::approve` and `Playbooks::reject`, the calls of
//! `mindrune card`, so the door's rules, the workspace lock and the fingerprint binding apply.
//! Those calls are blocking (they take the ledger's lock), so every handler runs them on a
//! blocking thread (`AppState::blocking`).

use std::fmt::Write as _;
use std::path::{Path as FsPath, PathBuf};

use axum::Form;
use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use mindrune_core::{owed_fields, parse_skill_file};
use mindrune_engine::{
    Card, CardKind, CardState, PlaybookError, Playbooks, Rule, live_dir, preview_card,
    read_skill_text,
};
use mindrune_store::{Owner, OwnerId};
use serde::Deserialize;

use crate::auth::OwnerSession;
use crate::error::ApiError;
use crate::html::{self, Markup, Nav, Shown, diff_html, html};
use crate::pages::{CarriesCsrf, CsrfForm, OwnerPage, checked_form, error_page, parse_id};
use crate::state::AppState;

/// A reason longer than this is refused (the form says so before it is sent).
const MAX_REASON_CHARS: usize = 2000;

/// How many answered cards of a workspace the Inbox shows below the waiting ones.
const RECENTLY_ANSWERED: usize = 5;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/dashboard/inbox", get(inbox_page))
        .route("/dashboard/inbox/{ws}/cards/{id}", get(card_page))
        .route("/dashboard/inbox/{ws}/cards/{id}/approve", post(approve))
        .route("/dashboard/inbox/{ws}/cards/{id}/reject", post(reject))
        .layer(axum::extract::DefaultBodyLimit::max(
            crate::pages::FORM_LIMIT,
        ))
}

// -------------------------------------------------------------------------------------------
// The session's owner and the owner's workspaces
// -------------------------------------------------------------------------------------------

/// One of the owner's workspaces: the key its addresses use, and its folder.
struct Workspace {
    key: String,
    name: String,
    path: PathBuf,
}

/// The key of a workspace in addresses: the start of its path's SHA-256, so an address stays
/// the same when the configuration's entries are reordered, and shows nothing of the path.
fn workspace_key(path: &FsPath) -> String {
    let digest = mindrune_core::sha256(path.to_string_lossy().as_bytes());
    digest
        .trim_start_matches("sha256:")
        .chars()
        .take(16)
        .collect()
}

/// What every Inbox request starts from: the session's owner and that owner's workspaces.
struct Mine {
    owner: Owner,
    workspaces: Vec<Workspace>,
    shown: Shown,
}

/// The owner by the session's id (never by anything the request names), and the workspaces
/// the configuration gives that owner. Blocking: it reads the store.
fn mine(state: &AppState, owner_id: OwnerId) -> Result<Mine, ApiError> {
    let owner = state.store().owner(owner_id)?;
    let mut workspaces: Vec<Workspace> = Vec::new();
    for entry in state.config().playbooks_of(&owner.name) {
        let key = workspace_key(&entry.workspace);
        if !workspaces.iter().any(|known| known.key == key) {
            workspaces.push(Workspace {
                key,
                name: entry.shown_name(),
                path: entry.workspace.clone(),
            });
        }
    }
    let shown = Shown::new(&[]);
    Ok(Mine {
        owner,
        workspaces,
        shown,
    })
}

impl Mine {
    fn workspace(&self, key: &str) -> Option<&Workspace> {
        self.workspaces.iter().find(|known| known.key == key)
    }

    /// A whole page of the owner's.
    fn page(&self, title: &str, csrf: &str, body: Markup) -> Markup {
        html::page(
            title,
            Nav::Owner {
                owner: &self.owner.name,
                csrf,
                inbox: crate::pages::inbox_waiting(
                    self.workspaces.iter().map(|w| w.path.as_path()),
                ),
            },
            body,
        )
    }
}

fn no_inbox() -> Response {
    html::error_page(
        StatusCode::NOT_FOUND,
        "You have no Inbox: no playbook workspace of yours is set up on this server (a [[playbooks]] entry with your owner name in its configuration).",
        ("/dashboard", "Back to your family"),
    )
}

fn no_card() -> Response {
    html::error_page(
        StatusCode::NOT_FOUND,
        "There is no such card in your Inbox. It may have been removed.",
        ("/dashboard/inbox", "Back to your Inbox"),
    )
}

/// A playbook call that did not do what was asked, as a page. A rule's refusal says why in its
/// own words (scrubbed); a bad workspace configuration is the owner's own to see; the machine
/// failing goes to the log.
fn playbook_error(err: PlaybookError, shown: &Shown, back: &str) -> Response {
    match err {
        PlaybookError::Refused { rule, message } => {
            let status = match rule {
                Rule::NotFound => StatusCode::NOT_FOUND,
                Rule::AlreadyAnswered | Rule::StaleFingerprint | Rule::NameTaken => {
                    StatusCode::CONFLICT
                }
                _ => StatusCode::BAD_REQUEST,
            };
            html::error_page(status, &shown.plain(&message), (back, "Back"))
        }
        PlaybookError::Config { .. } => html::error_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            &shown.plain(&format!("The workspace could not be opened: {err}")),
            ("/dashboard", "Back to your family"),
        ),
        other => error_page(&ApiError::internal(
            "the playbook workspace could not be read or changed",
            other,
        )),
    }
}

/// A card's time (`2026-11-28T10:00:00Z`) as the dashboard shows times: `2026-11-28 10:00`.
fn stamp(rfc3339: &str) -> String {
    time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .ok()
        .and_then(|at| i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok())
        .map_or_else(|| rfc3339.to_string(), |millis| html::when(Some(millis)))
}

fn card_path(key: &str, id: i64) -> String {
    format!("/dashboard/inbox/{key}/cards/{id}")
}

// -------------------------------------------------------------------------------------------
// The Inbox
// -------------------------------------------------------------------------------------------

/// What one card proposes, in a line (plain text).
fn proposes(card: &Card) -> String {
    let mut line = match card.kind {
        CardKind::Create => {
            let trigger = card
                .proposal
                .as_deref()
                .and_then(|text| parse_skill_file(text).ok())
                .and_then(|(skill, _)| skill.trigger)
                .map(|trigger| trigger.lines().next().unwrap_or_default().to_string())
                .filter(|trigger| !trigger.trim().is_empty());
            match trigger {
                Some(trigger) => format!("A new skill, for when {trigger}"),
                None => "A new skill".to_string(),
            }
        }
        CardKind::Revise => {
            let mut line = match card.base_version {
                Some(version) => format!("A revision of v{version}"),
                None => "A revision".to_string(),
            };
            if let Some(report) = card.report_id {
                let _ = write!(line, ", answering report #{report}");
            }
            line
        }
        CardKind::Revert => match (card.restore_version, card.base_version) {
            (Some(restore), Some(base)) => format!("Make v{restore} live again, replacing v{base}"),
            (Some(restore), None) => format!("Make v{restore} live again"),
            _ => "Make a kept version live again".to_string(),
        },
        CardKind::Retire => "Stop using it: retired and no longer carried".to_string(),
    };
    if let Some(why) = card.why.as_deref().filter(|why| !why.trim().is_empty()) {
        let _ = write!(line, " — why: {}", why.lines().next().unwrap_or_default());
    }
    line.chars().take(300).collect()
}

fn card_row(key: &str, card: &Card, shown: &Shown, csrf: &str) -> Markup {
    let href = card_path(key, card.id);
    html! {
        li class="inbox-card" id={ "card-" (key) "-" (card.id) } {
            h3 {
                a href=(href) { "#" (card.id) " " span class="skill" { (shown.plain(&card.skill)) } }
                " " span class="tag kind" { (card.kind.as_str()) }
            }
            p class="proposes" { (shown.plain(&proposes(card))) }
            p class="small muted" {
                "Filed by " (shown.plain(&card.filed_by)) ", " (shown.plain(&stamp(&card.filed_at))) " UTC"
            }
            @if card.state != CardState::Waiting {
                p class="small" { (shown.plain(&answer_line(card))) }
            } @else {
                // Approve from the list; turning down asks for a reason, on the card's page.
                div class="actions" {
                    form method="post" action={ (href) "/approve" } class="approve inline" {
                        input type="hidden" name="csrf" value=(csrf);
                        button type="submit" class="primary" { "Approve #" (card.id) }
                    }
                    a class="button" href=(href) { "Read it, or turn it down" }
                }
            }
        }
    }
}

/// How a card was answered, in a sentence (plain text).
fn answer_line(card: &Card) -> String {
    let what = match card.state {
        CardState::Waiting => return "Waiting for you.".to_string(),
        CardState::Applied => "Approved",
        CardState::Rejected => "Turned down",
        CardState::Refused => "Approved, but it could not be applied",
    };
    let mut line = format!(
        "{what} by {} at {} UTC",
        card.answered_by.as_deref().unwrap_or("?"),
        card.answered_at.as_deref().map(stamp).unwrap_or_default()
    );
    if let Some(outcome) = &card.outcome {
        let _ = write!(line, ": {outcome}");
    }
    if let Some(reason) = &card.reason {
        let _ = write!(line, ". Your reason: “{reason}”");
    }
    line
}

#[derive(Debug, Default, Deserialize)]
struct InboxQuery {
    /// After an answer: the workspace and the card the notice is about.
    #[serde(default)]
    ws: Option<String>,
    #[serde(default)]
    card: Option<String>,
}

/// One workspace's section of the Inbox, with the notice of a card just answered in it, and
/// how many of its cards wait.
fn workspace_section(
    workspace: &Workspace,
    shown: &Shown,
    notice_card: Option<i64>,
    csrf: &str,
) -> (Markup, usize) {
    let key = &workspace.key;
    let cards =
        Playbooks::open(&workspace.path).and_then(|playbooks| playbooks.ledger().cards(false));
    let (cards, problem) = match cards {
        Ok(cards) => (cards, None),
        Err(err) => {
            let message = match &err {
                PlaybookError::Io { .. } | PlaybookError::Ledger { .. } => {
                    tracing::error!("the playbook workspace {}: {err}", workspace.path.display());
                    "This workspace could not be read; the server log has the details.".to_string()
                }
                _ => format!("This workspace could not be opened: {err}"),
            };
            (Vec::new(), Some(message))
        }
    };
    let waiting: Vec<&Card> = cards
        .iter()
        .filter(|card| card.state == CardState::Waiting)
        .collect();
    let answered: Vec<&Card> = cards
        .iter()
        .filter(|card| card.state != CardState::Waiting)
        .take(RECENTLY_ANSWERED)
        .collect();
    let notice = notice_card.and_then(|id| cards.iter().find(|card| card.id == id));
    let section = html! {
        section class="card workspace" aria-labelledby={ "ws-" (key) } {
            h2 id={ "ws-" (key) } { (shown.plain(&workspace.name)) }
            p class="small muted fingerprint" { (shown.plain(&workspace.path.display().to_string())) }
            @if let Some(problem) = &problem {
                p class="error" role="alert" { (shown.plain(problem)) }
            } @else {
                @if let Some(card) = notice { (notice_html(key, card, shown)) }
                @if waiting.is_empty() {
                    p class="muted" { "Nothing waits for you here." }
                } @else {
                    ul class="inbox-cards" { @for card in &waiting { (card_row(key, card, shown, csrf)) } }
                }
                @if !answered.is_empty() {
                    details class="answered" {
                        summary { "Answered lately (" (answered.len()) ")" }
                        ul class="inbox-cards" { @for card in &answered { (card_row(key, card, shown, csrf)) } }
                    }
                }
            }
        }
    };
    (section, waiting.len())
}

/// The notice of a card just answered: what became of it.
fn notice_html(key: &str, card: &Card, shown: &Shown) -> Markup {
    let (class, what) = match card.state {
        CardState::Applied => ("notice", format!("Card #{} approved: ", card.id)),
        CardState::Rejected => ("notice", format!("Card #{} turned down: ", card.id)),
        CardState::Refused => (
            "error",
            format!("Card #{} was approved but could not be applied: ", card.id),
        ),
        // An approval that could not be applied to a draft: the card waits, saying why.
        CardState::Waiting if card.outcome.is_some() => (
            "error",
            format!("Card #{} was approved but could not go live: ", card.id),
        ),
        CardState::Waiting => return html! {},
    };
    html! {
        p class=(class) role="status" {
            (shown.plain(&what)) (shown.plain(card.outcome.as_deref().unwrap_or_default()))
            " " a href=(card_path(key, card.id)) { "Show the card" }
        }
    }
}

async fn inbox_page(
    State(state): State<AppState>,
    OwnerPage(session): OwnerPage,
    query: Result<Query<InboxQuery>, QueryRejection>,
) -> Response {
    // A notice that cannot be read is simply not shown.
    let query = query.map(|Query(query)| query).unwrap_or_default();
    let app = state.clone();
    let answer = state
        .blocking(move || -> Result<Response, ApiError> {
            let mine = mine(&app, session.owner)?;
            if mine.workspaces.is_empty() {
                return Ok(no_inbox());
            }
            let notice_card = query.card.as_deref().and_then(parse_id);
            let mut sections = Vec::new();
            let mut waiting = 0;
            for workspace in &mine.workspaces {
                let notice = notice_card.filter(|_| query.ws.as_deref() == Some(&workspace.key));
                let (section, waits) =
                    workspace_section(workspace, &mine.shown, notice, &session.csrf_token);
                sections.push(section);
                waiting += waits;
            }
            let body = html! {
                h1 { "Inbox" }
                p class="lead" {
                    (html::count(waiting as i64, "card waits", "cards wait")) " from your assistants' playbooks"
                }
                @for section in sections { (section) }
                p class="small muted" {
                    "The same cards as " code { "mindrune inbox" } "; an answer here is the same as "
                    code { "mindrune card approve" } " or " code { "reject" } "."
                }
            };
            Ok(html::respond(
                StatusCode::OK,
                mine.page("Inbox", &session.csrf_token, body),
            ))
        })
        .await;
    match answer {
        Ok(Ok(response)) => response,
        Ok(Err(err)) | Err(err) => error_page(&err),
    }
}

// -------------------------------------------------------------------------------------------
// A card
// -------------------------------------------------------------------------------------------

/// What a card's page shows below its facts.
enum Shows {
    /// A draft: the proposed file.
    File(String),
    /// A revision or revert: the unified diff from the live file to what would land, and why
    /// approving it now would be refused, if it would.
    Diff {
        diff: String,
        refused: Option<String>,
    },
    /// A retirement: nothing but the facts.
    Nothing,
}

/// Everything a card's page shows, read under the workspace (blocking).
struct CardView {
    card: Card,
    report: Option<String>,
    owes: Vec<&'static str>,
    shows: Shows,
}

/// The card as `mindrune card show` prints it: the report it answers, what a draft still owes,
/// and for a revision or revert the diff against the live file of the text as it would land
/// (the engine's `cards::preview`), so the owner approves exactly what goes live.
fn card_view(playbooks: &Playbooks, card: Card) -> Result<CardView, PlaybookError> {
    let report = match card.report_id {
        Some(id) => Some(match playbooks.ledger().report(id)? {
            Some(line) => format!(
                "Answers report #{id}: step {} of v{} went wrong",
                line.step.unwrap_or(0),
                line.revision.unwrap_or(0)
            ),
            None => format!("Answers report #{id}"),
        }),
        None => None,
    };
    let proposal = card.proposal.clone().unwrap_or_default();
    let mut owes = Vec::new();
    let shows = match card.kind {
        CardKind::Create => {
            if let Ok((skill, _)) = parse_skill_file(&proposal) {
                owes = owed_fields(&skill);
            }
            Shows::File(proposal)
        }
        CardKind::Revise | CardKind::Revert => {
            let live = read_skill_text(&live_dir(playbooks.workspace(), &card.skill))
                .ok()
                .flatten()
                .unwrap_or_default();
            let mut refused = None;
            let landing = if card.state == CardState::Waiting {
                match preview_card(playbooks, &card) {
                    Ok(text) => text,
                    Err(err) => {
                        refused = Some(err.to_string());
                        proposal
                    }
                }
            } else {
                proposal
            };
            let label = match card.restore_version {
                Some(version) => format!("v{version} (kept)"),
                None => "proposed".to_string(),
            };
            let diff = similar::TextDiff::from_lines(live.as_str(), landing.as_str())
                .unified_diff()
                .context_radius(3)
                .header("live SKILL.md", &label)
                .to_string();
            Shows::Diff { diff, refused }
        }
        CardKind::Retire => Shows::Nothing,
    };
    Ok(CardView {
        card,
        report,
        owes,
        shows,
    })
}

/// What approving a card of this kind does, in a sentence.
fn approving_does(kind: CardKind) -> &'static str {
    match kind {
        CardKind::Create => {
            "Approving makes it live as v1 under skills/ and carries it on every turn."
        }
        CardKind::Revise | CardKind::Revert => {
            "Approving makes the text above live as the next version and keeps the current one in history/. It is refused if the live file changed since the card was written."
        }
        CardKind::Retire => {
            "Approving marks it retired and takes it off the carried list; its file stays."
        }
    }
}

/// A card's page body. `problem` is why the last answer was not taken (plain text); `reason`
/// what the owner had typed as the reason.
fn card_body(
    key: &str,
    view: &CardView,
    csrf: &str,
    shown: &Shown,
    problem: Option<&str>,
    reason: &str,
) -> Markup {
    let card = &view.card;
    html! {
        p class="small" { a href="/dashboard/inbox" { "← Your Inbox" } }
        h1 { "Card #" (card.id) " · " span class="skill" { (shown.plain(&card.skill)) } }
        p class="lead" { span class="tag kind" { (card.kind.as_str()) } " " (shown.plain(&proposes(card))) }
        (card_facts(view, shown))
        @match &view.shows {
            Shows::File(text) => section class="card" aria-labelledby="proposal-title" {
                h2 id="proposal-title" { "The proposed SKILL.md" }
                pre { code { (shown.plain(text)) } }
            },
            Shows::Diff { diff, refused } => section class="card" aria-labelledby="proposal-title" {
                h2 id="proposal-title" { "The change to the live SKILL.md" }
                @if let Some(refused) = refused {
                    p class="error" role="alert" { "Approving it now would be refused: " (shown.plain(refused)) }
                }
                @if diff.is_empty() {
                    p class="muted" { "No change against the live file." }
                } @else {
                    (diff_html(diff, shown))
                }
            },
            Shows::Nothing => {},
        }
        @if card.state == CardState::Waiting {
            (answer_forms(&card_path(key, card.id), card.kind, csrf, shown, problem, reason))
        }
    }
}

/// The card's facts: its state, who filed it and when, what it is written against and why.
fn card_facts(view: &CardView, shown: &Shown) -> Markup {
    let card = &view.card;
    html! {
        section class="card" aria-label="About this card" {
            ul class="facts card-facts" {
                li { (card.state.as_str()) }
                li { "Filed by " (shown.plain(&card.filed_by)) ", " (shown.plain(&stamp(&card.filed_at))) " UTC" }
                @if let Some(version) = card.base_version { li { "Against v" (version) } }
            }
            @if let Some(fingerprint) = &card.fingerprint {
                p class="small muted fingerprint" { "Written against " (shown.plain(fingerprint)) }
            }
            @if let Some(report) = &view.report { p { (shown.plain(report)) } }
            @if let Some(why) = card.why.as_deref().filter(|why| !why.trim().is_empty()) {
                p class="why" { span class="muted" { "Why:" } " " (shown.plain(why)) }
            }
            @if !view.owes.is_empty() {
                p class="owes" { span class="muted" { "Still owes:" } " " (shown.plain(&view.owes.join(", "))) }
            }
            @if card.state != CardState::Waiting {
                p class="answered-line" { (shown.plain(&answer_line(card))) }
            }
        }
    }
}

/// The two answers to a waiting card: approve, or turn down with a reason.
fn answer_forms(
    action: &str,
    kind: CardKind,
    csrf: &str,
    shown: &Shown,
    problem: Option<&str>,
    reason: &str,
) -> Markup {
    html! {
        section class="card answer" aria-labelledby="answer-title" {
            h2 id="answer-title" { "Your answer" }
            @if let Some(problem) = problem {
                p class="error" role="alert" { (shown.plain(problem)) }
            }
            form method="post" action={ (action) "/approve" } class="approve" {
                input type="hidden" name="csrf" value=(csrf);
                p class="small muted" { (approving_does(kind)) }
                button type="submit" class="primary" { "Approve" }
            }
            form method="post" action={ (action) "/reject" } class="reject" {
                input type="hidden" name="csrf" value=(csrf);
                label for="reason" { "Or turn it down, saying why" }
                textarea id="reason" name="reason" rows="3" required maxlength=(MAX_REASON_CHARS) {
                    (shown.plain(reason))
                }
                p class="small muted" {
                    "Your reason is kept with the card; for a new skill, the door repeats it if the \
                    same name is proposed again."
                }
                button type="submit" { "Turn down" }
            }
        }
    }
}

/// Finds the card `id` of the workspace `key` among the session owner's and shows it, or says
/// what is missing. Blocking.
fn card_response(
    mine: &Mine,
    key: &str,
    id: i64,
    csrf: &str,
    status: StatusCode,
    problem: Option<&str>,
    reason: &str,
) -> Response {
    let Some(workspace) = mine.workspace(key) else {
        return no_card();
    };
    let back = card_path(key, id);
    let playbooks = match Playbooks::open(&workspace.path) {
        Ok(playbooks) => playbooks,
        Err(err) => return playbook_error(err, &mine.shown, &back),
    };
    let card = match playbooks.ledger().card(id) {
        Ok(Some(card)) => card,
        Ok(None) => return no_card(),
        Err(err) => return playbook_error(err, &mine.shown, &back),
    };
    let view = match card_view(&playbooks, card) {
        Ok(view) => view,
        Err(err) => return playbook_error(err, &mine.shown, &back),
    };
    let body = card_body(key, &view, csrf, &mine.shown, problem, reason);
    let title = format!(
        "Card #{} · {}",
        view.card.id,
        mine.shown.plain(&view.card.skill)
    );
    html::respond(status, mine.page(&title, csrf, body))
}

async fn card_page(
    State(state): State<AppState>,
    OwnerPage(session): OwnerPage,
    Path((key, raw)): Path<(String, String)>,
) -> Response {
    let Some(id) = parse_id(&raw) else {
        return no_card();
    };
    let app = state.clone();
    let answer = state
        .blocking(move || -> Result<Response, ApiError> {
            let mine = mine(&app, session.owner)?;
            Ok(card_response(
                &mine,
                &key,
                id,
                &session.csrf_token,
                StatusCode::OK,
                None,
                "",
            ))
        })
        .await;
    match answer {
        Ok(Ok(response)) => response,
        Ok(Err(err)) | Err(err) => error_page(&err),
    }
}

// -------------------------------------------------------------------------------------------
// Answering a card
// -------------------------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
struct RejectForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
}

impl CarriesCsrf for RejectForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// Where an answer goes back to: the Inbox, with the notice of the card just answered.
fn answered(key: &str, id: i64) -> Response {
    Redirect::to(&format!("/dashboard/inbox?ws={key}&card={id}")).into_response()
}

/// One answer to a card, once the session, its CSRF token and the card's id were checked:
/// everything an answer needs to act and to show the card again.
struct Answering<F> {
    mine: Mine,
    key: String,
    id: i64,
    /// The session's CSRF token, for a card shown again with a problem.
    csrf: String,
    form: F,
}

impl<F> Answering<F> {
    /// Where the card is shown, for a notice's way back.
    fn back(&self) -> String {
        card_path(&self.key, self.id)
    }

    /// The card's workspace, opened, or the response that says why not.
    fn open(&self) -> Result<Playbooks, Box<Response>> {
        let Some(workspace) = self.mine.workspace(&self.key) else {
            return Err(Box::new(no_card()));
        };
        Playbooks::open(&workspace.path)
            .map_err(|err| Box::new(playbook_error(err, &self.mine.shown, &self.back())))
    }

    /// The engine's answer to the card: back to the Inbox when it was taken, else the error.
    fn done<T>(&self, done: Result<T, PlaybookError>) -> Response {
        match done {
            Ok(_) => answered(&self.key, self.id),
            Err(err) => playbook_error(err, &self.mine.shown, &self.back()),
        }
    }
}

/// Answers a card with `act`, off the async threads: the session and its CSRF token are
/// checked before anything is looked up or changed, the workspace is found only among the
/// session owner's own, and a store failure is an error page.
async fn answer_card<F, A>(
    state: AppState,
    session: Result<OwnerSession, ApiError>,
    (key, raw): (String, String),
    form: Result<Form<F>, FormRejection>,
    act: A,
) -> Response
where
    F: CarriesCsrf + Send + 'static,
    A: FnOnce(Answering<F>) -> Response + Send + 'static,
{
    let (session, form) = match checked_form(session, form) {
        Ok(checked) => checked,
        Err(response) => return *response,
    };
    let Some(id) = parse_id(&raw) else {
        return no_card();
    };
    let app = state.clone();
    let answer = state
        .blocking(move || -> Result<Response, ApiError> {
            let mine = mine(&app, session.owner)?;
            Ok(act(Answering {
                mine,
                key,
                id,
                csrf: session.csrf_token,
                form,
            }))
        })
        .await;
    match answer {
        Ok(Ok(response)) => response,
        Ok(Err(err)) | Err(err) => error_page(&err),
    }
}

async fn approve(
    State(state): State<AppState>,
    session: Result<OwnerSession, ApiError>,
    Path(card): Path<(String, String)>,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    answer_card(state, session, card, form, |answering| {
        // The same calls as `mindrune card approve`: the door's rules, the workspace lock
        // and the fingerprint binding all apply. A change that can no longer be applied is
        // answered `refused`, which the notice says.
        match answering.open() {
            Ok(playbooks) => answering.done(playbooks.approve(answering.id)),
            Err(response) => *response,
        }
    })
    .await
}

async fn reject(
    State(state): State<AppState>,
    session: Result<OwnerSession, ApiError>,
    Path(card): Path<(String, String)>,
    form: Result<Form<RejectForm>, FormRejection>,
) -> Response {
    answer_card(state, session, card, form, |answering| {
        let playbooks = match answering.open() {
            Ok(playbooks) => playbooks,
            Err(response) => return *response,
        };
        match playbooks.ledger().card(answering.id) {
            Ok(Some(_)) => {}
            Ok(None) => return no_card(),
            Err(err) => return answering.done::<()>(Err(err)),
        }
        let reason = answering.form.reason.trim();
        let problem = if reason.is_empty() {
            Some(
                "Say why you turn it down: the reason is kept with the card, and for a new skill the door repeats it when the same name is proposed again. Nothing was changed.".to_string(),
            )
        } else if reason.chars().count() > MAX_REASON_CHARS {
            Some(format!(
                "The reason is over {MAX_REASON_CHARS} characters; shorten it. Nothing was changed."
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            return card_response(
                &answering.mine,
                &answering.key,
                answering.id,
                &answering.csrf,
                StatusCode::BAD_REQUEST,
                Some(&problem),
                &answering.form.reason,
            );
        }
        // The same call as `mindrune card reject --reason`.
        answering.done(playbooks.reject(answering.id, reason))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_keys_are_short_hex_and_stable() {
        let key = workspace_key(FsPath::new("/home/ada/assistant"));
        assert_eq!(key.len(), 16);
        assert!(key.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(key, workspace_key(FsPath::new("/home/ada/assistant")));
        assert_ne!(key, workspace_key(FsPath::new("/home/bob/assistant")));
    }

    #[test]
    fn card_times_read_as_the_dashboards_times() {
        assert_eq!(stamp("2026-11-28T10:00:00Z"), "2026-11-28 10:00");
        assert_eq!(stamp("not a time"), "not a time");
    }

    #[test]
    fn diff_lines_are_escaped_and_marked() {
        let shown = Shown::new(&[]);
        let html =
            diff_html("--- a\n+++ b\n@@ -1 +1 @@\n-<old>\n+<new>\n same\n", &shown).into_string();
        assert!(
            html.contains("<span class=\"del\">-&lt;old&gt;\n</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"add\">+&lt;new&gt;\n</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"hunk\">@@ -1 +1 @@\n</span>"),
            "{html}"
        );
        assert!(html.contains(" same\n"), "{html}");
    }
}
