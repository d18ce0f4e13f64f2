//! The family page: a tile per avatar, the runs chart, and what changed since the last visit.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use mindrune_engine::now_millis;
use mindrune_store::{Agent, DAY_MILLIS, Owner, SkillEntry, SkillId};

use super::script::sharing_html;
use crate::chart_range::{self, ChartRange, RangeQuery};
use crate::error::ApiError;
use crate::html::{self, Markup, Shown, count, grouped, html, points};
use crate::icons;
use crate::pages::{OwnerPage, error_page, owner_nav};
use crate::scripts::file_name;
use crate::state::AppState;
use crate::wire::AvatarStats;

/// The cookie that remembers when the owner last looked at the family page, so the next visit
/// can say what changed since (a time in milliseconds; nothing secret).
pub(super) const SEEN_COOKIE: &str = "mindrune_seen";

/// How far back the family's runs chart reaches unless the owner picks another range.
pub(super) const CHART_RANGE: ChartRange = ChartRange::Month;

/// What one avatar's tile shows.
pub(super) struct Tile<'a> {
    pub(super) agent: &'a Agent,
    pub(super) stats: Option<AvatarStats>,
    pub(super) runs_today: i64,
    pub(super) failed_today: i64,
    /// Its best-scoring script (file name, points) and its newest (file name).
    pub(super) best: Option<(String, i64)>,
    pub(super) newest: Option<String>,
    pub(super) last_ran: Option<i64>,
    pub(super) scripts: usize,
    pub(super) family: usize,
}

/// What changed in the family since the owner's last visit.
#[derive(Default)]
pub(super) struct Changes {
    pub(super) shared: Vec<mindrune_store::SharingChange>,
    pub(super) unshared: Vec<mindrune_store::SharingChange>,
    /// Scripts whose latest run failed since then: (skill, `<avatar>/<file>`, cause).
    pub(super) failing: Vec<(SkillId, String, Option<String>)>,
}

/// The runs of the period "since your last visit" and of the period of the same length before
/// it, and the family's wealth at its start and now.
#[derive(Default)]
pub(super) struct Period {
    pub(super) runs: i64,
    pub(super) failed: i64,
    pub(super) runs_before: i64,
    pub(super) failed_before: i64,
    /// The family's coins at the period's start and now, summed over the avatars that
    /// reported both.
    pub(super) wealth: Option<(i64, i64)>,
    /// The family's XP (all skills) and total level then and now, likewise.
    pub(super) xp: Option<(i64, i64)>,
    pub(super) level: Option<(i64, i64)>,
}

/// Adds one avatar's `then` and `now` to a family sum that is `None` until one adds to it.
fn add_to(sum: &mut Option<(i64, i64)>, then: Option<i64>, now: Option<i64>) {
    if let (Some(then), Some(now)) = (then, now) {
        let (sum_then, sum_now) = sum.unwrap_or((0, 0));
        *sum = Some((sum_then + then, sum_now + now));
    }
}

/// How far back a first visit looks: a new owner sees the last day, not "nothing new".
pub(super) const FIRST_VISIT_MILLIS: i64 = DAY_MILLIS;

/// Everything the family page shows.
pub(super) struct FamilyView<'a> {
    pub(super) owner: &'a Owner,
    pub(super) tiles: Vec<Tile<'a>>,
    pub(super) entries: &'a [SkillEntry],
    /// The runs chart: its range, its bars, and what one bar is (`hour`, `day`, `week`).
    pub(super) range: ChartRange,
    pub(super) bars: Vec<crate::charts::Bar>,
    pub(super) bar_unit: &'static str,
    /// The start of what "since your last visit" covers: the last visit, or on a first visit
    /// (no cookie yet) a day ago.
    pub(super) since: i64,
    pub(super) first_visit: bool,
    pub(super) now: i64,
    pub(super) period: Period,
    pub(super) changes: Changes,
    /// What needs attention, most harmful first.
    pub(super) attention: Vec<mindrune_engine::AttentionItem>,
}

pub(super) fn family_html(view: &FamilyView<'_>, csrf: &str, shown_text: &Shown) -> Markup {
    let family_total = view.entries.iter().filter(|e| e.family).count();
    let orphans = view
        .entries
        .iter()
        .filter(|e| e.skill.agent.is_none())
        .count();
    html! {
        h1 { "Your family" }
        p class="lead" {
            (count(view.tiles.len() as i64, "avatar", "avatars")) " · "
            (count(view.entries.len() as i64, "script", "scripts")) " · "
            (count(family_total as i64, "family skill", "family skills"))
        }
        @if view.tiles.is_empty() {
            section class="card" {
                h2 { "No avatars yet" }
                p {
                    "Add one with " code { "mindrune agent add NAME --owner OWNER --workspace DIR" }
                    ", or set up an rs-sdk checkout with " code { "mindrune setup" }
                    ". Its scripts show here after their first recorded run."
                }
            }
        } @else {
            (attention_html(&view.attention, view.now, shown_text))
            (changes_html(view, shown_text))
            h2 { "Avatars" }
            ul class="avatars" {
                @for tile in &view.tiles { (tile_html(tile, view.now, shown_text)) }
            }
            (runs_chart(view))
        }
        @if orphans > 0 {
            p class="small muted" {
                (count(orphans as i64, "skill", "skills"))
                " of deleted avatars stay with the family."
            }
        }
        (sharing_html(view.owner, csrf, "/dashboard"))
    }
}

/// The family's runs per hour, day or week, with the range picker.
fn runs_chart(view: &FamilyView<'_>) -> Markup {
    let chart = crate::charts::runs_bars(
        "family-runs",
        &format!(
            "The family's runs per {}, {} (UTC)",
            view.bar_unit,
            view.range.words()
        ),
        &view.bars,
    );
    html! {
        section class="card" aria-labelledby="runs-title" {
            h2 id="runs-title" { "Runs per " (view.bar_unit) }
            (chart_range::picker(view.range, "/dashboard", "runs-title"))
            (chart)
        }
    }
}

/// One fact of a tile: `<div class="wealth"><dt>Wealth</dt><dd>…</dd></div>`.
fn fact(label: &str, value: Markup, class: &str) -> Markup {
    html! { div class=(class) { dt { (label) } dd { (value) } } }
}

pub(super) fn tile_html(tile: &Tile<'_>, now: i64, shown_text: &Shown) -> Markup {
    let name = shown_text.plain(&tile.agent.name);
    let stats = tile.stats.as_ref();
    let level = stats
        .filter(|s| !s.levels.is_empty())
        .map(|s| grouped(s.levels.values().map(|l| i64::from(*l)).sum()));
    let wealth = stats.and_then(|s| s.wealth);
    html! {
        li { a class="card tile" href={ "/dashboard/avatars/" (tile.agent.id.0) }
            data-avatar=(name) {
            span class="name" { (name) }
            dl class="tile-facts" {
                (fact("Total level", html! { (level.as_deref().unwrap_or("–")) }, "total-level"))
                (fact("Wealth", html! {
                    @match wealth { Some(coins) => { (grouped(coins)) " coins" }, None => "–", }
                }, "wealth"))
                (fact("Today", html! {
                    (count(tile.runs_today, "run", "runs"))
                    @if tile.failed_today > 0 {
                        ", " span class="failed-count" { (tile.failed_today) " failed" }
                    }
                }, "today"))
                (fact("Best", html! {
                    @match &tile.best {
                        Some((file, score)) => {
                            span class="file" { (shown_text.plain(file)) } " (" (score) ")"
                        },
                        None => "–",
                    }
                }, "best"))
                (fact("Newest", html! {
                    @match &tile.newest {
                        Some(file) => span class="file" { (shown_text.plain(file)) },
                        None => "–",
                    }
                }, "newest"))
                (fact("Last ran", html::time_ago(tile.last_ran, now), "last-ran"))
            }
            p class="counts small muted" {
                (count(tile.scripts as i64, "script", "scripts")) " · " (tile.family) " family"
            }
        } }
    }
}

/// "Needs attention", first on the page: each item with its facts, its links and what to do.
pub(super) fn attention_html(
    items: &[mindrune_engine::AttentionItem],
    now: i64,
    shown_text: &Shown,
) -> Markup {
    html! {
        section class="card attention" aria-labelledby="attention-title" {
            h2 id="attention-title" { "Needs attention" }
            @if items.is_empty() {
                p class="muted" {
                    "Nothing: no script is failing now and no avatar is quieter than usual."
                }
            } @else {
                ul class="attention-list" {
                    @for item in items { (attention_item(item, now, shown_text)) }
                }
            }
        }
    }
}

/// One item of "Needs attention".
fn attention_item(item: &mindrune_engine::AttentionItem, now: i64, shown_text: &Shown) -> Markup {
    use mindrune_engine::AttentionItem;
    let class = match item {
        AttentionItem::Failing(_) => "failing-now",
        AttentionItem::Quiet(_) => "quiet",
        AttentionItem::RunnerStopped(_) => "runner-stopped",
    };
    html! {
        li class=(class) {
            @match item {
                AttentionItem::Failing(f) => (failing_html(f, now, shown_text)),
                AttentionItem::Quiet(q) => {
                    a href={ "/dashboard/avatars/" (q.agent.0) } {
                        (shown_text.plain(&q.agent_name))
                    }
                    " has been quiet since " (html::time_ago(Some(q.last_run), now))
                },
                AttentionItem::RunnerStopped(r) => {
                    @let name = shown_text.plain(&r.agent_name);
                    (icons::warning()) " "
                    a href={ "/dashboard/avatars/" (r.agent.0) } { (name) }
                    "'s runner stopped " (html::time_ago(Some(r.last_contact), now)) " with "
                    (count(r.backlog as i64, "event", "events"))
                    " still in its spool: nothing of " (name) " is recorded until it runs again"
                },
            }
            br;
            span class="next small" { "Next: " (shown_text.plain(&item.next_step())) }
        }
    }
}

/// A failing script's item: how long it has failed, why, and the version that broke it.
fn failing_html(f: &mindrune_engine::Failing, now: i64, shown_text: &Shown) -> Markup {
    let id = f.skill.0;
    html! {
        (icons::warning()) " "
        a href={ "/dashboard/skills/" (id) } { (shown_text.plain(&f.label)) }
        " failed "
        @if f.streak == 1 { "its last run" } @else { "its last " (f.streak) " runs" }
        @if f.family { ", a family skill" }
        " (since " (html::time_ago(Some(f.first_seen), now)) ", "
        a href={ "/dashboard/runs/" (f.last_failure) } { "the latest" }
        " " (html::time_ago(Some(f.last_seen), now)) "): "
        span class="cause" { (shown_text.plain(&f.cause)) }
        @if f.streak != 1 { " (" (f.cause_count) " of " (f.streak) ")" }
        @if !f.failing_for.is_empty() {
            "; failing for " (f.failing_for.len()) " sibling(s) too"
        }
        @if let Some(s) = f.suspect {
            br;
            span class="suspect" {
                "Suspect: v" (s.version) ", the change before the streak. "
                a href={
                    "/dashboard/skills/" (id) "/diff?from=" (s.last_good) "&to=" (s.version)
                } {
                    "What changed (v" (s.last_good) " → v" (s.version) ")"
                }
                " · "
                a href={ "/dashboard/skills/" (id) "/code?version=" (s.last_good) } {
                    "v" (s.last_good) "'s code"
                }
                " · "
                a href={
                    "/dashboard/skills/" (id) "/code?version=" (s.last_good) "&download=1"
                } download {
                    "download v" (s.last_good)
                }
            }
        }
    }
}

pub(super) fn changes_html(view: &FamilyView<'_>, shown_text: &Shown) -> Markup {
    let since = html::time_ago(Some(view.since), view.now);
    let c = &view.changes;
    html! {
        section class="card changes" aria-labelledby="changes-title" {
            h2 id="changes-title" { "Since your last visit" }
            @if view.first_visit {
                p class="small muted" {
                    "Your first visit: the last 24 hours (since " (since) "). From your next \
                     visit on, this covers what happened since then."
                }
            } @else {
                p class="small muted" { "Since " (since) "." }
            }
            (period_html(&view.period))
            @if c.shared.is_empty() && c.unshared.is_empty() && c.failing.is_empty() {
                p class="muted" { "No script was shared, un-shared or started failing." }
            } @else {
                ul class="change-list" {
                    @for change in &c.shared {
                        li class="newly-shared" {
                            (icons::family()) " "
                            a href={ "/dashboard/skills/" (change.skill.0) } {
                                (shown_text.plain(&change.label))
                            }
                            @if let Some(v) = change.version { " v" (v) }
                            " is a family skill now: " (shown_text.plain(&change.reason))
                        }
                    }
                    @for (skill, label, cause) in &c.failing {
                        li class="newly-failing" {
                            (icons::warning()) " "
                            a href={ "/dashboard/skills/" (skill.0) } { (shown_text.plain(label)) }
                            " failed on its latest run: "
                            (shown_text.plain(cause.as_deref().unwrap_or("no cause recorded")))
                        }
                    }
                    @for change in &c.unshared {
                        li class="un-shared" {
                            (icons::lock()) " "
                            a href={ "/dashboard/skills/" (change.skill.0) } {
                                (shown_text.plain(&change.label))
                            }
                            " is no longer shared: " (shown_text.plain(&change.reason))
                        }
                    }
                }
            }
        }
    }
}

/// The period's numbers against the period before it: `111 runs (+12)`, `12 failed (−3)`, and
/// the family's standing against the period's start: `1,234,567 XP (+12,345)`, `total level 231
/// (+3)`, `wealth 1,250,000 coins (+40,000)`.
fn period_html(period: &Period) -> Markup {
    let delta = |now: i64, before: i64| match now - before {
        0 => "±0".to_string(),
        d if d > 0 => format!("+{}", grouped(d)),
        d => format!("−{}", grouped(-d)),
    };
    html! {
        ul class="period" {
            li class="period-runs" {
                (count(period.runs, "run", "runs")) " ("
                (delta(period.runs, period.runs_before)) " on the period before)"
            }
            li class="period-failed" {
                (grouped(period.failed)) " failed ("
                (delta(period.failed, period.failed_before)) ")"
            }
            @if let Some((then, now)) = period.xp {
                li class="period-xp" { (grouped(now)) " XP (" (delta(now, then)) ")" }
            }
            @if let Some((then, now)) = period.level {
                li class="period-levels" {
                    "total level " (grouped(now)) " (" (delta(now, then)) ")"
                }
            }
            @if let Some((then, now)) = period.wealth {
                li class="period-wealth" {
                    "wealth " (grouped(now)) " coins (" (delta(now, then)) ")"
                }
            }
        }
    }
}

/// What one look at the family page asks: when the owner last looked (from the cookie), the
/// chart's range, the clock, and the runners' last requests as this server saw them.
pub(super) struct Visit<'a> {
    pub(super) last_visit: Option<i64>,
    pub(super) range: ChartRange,
    pub(super) now: i64,
    pub(super) runners: &'a [mindrune_engine::RunnerSeen],
}

/// Reads everything the family page shows.
pub(super) fn family_view<'a>(
    store: &dyn mindrune_store::Store,
    owner: &'a Owner,
    agents: &'a [Agent],
    entries: &'a [SkillEntry],
    visit: &Visit<'_>,
) -> Result<FamilyView<'a>, ApiError> {
    let Visit {
        last_visit,
        range,
        now,
        runners,
    } = *visit;
    let first_visit = last_visit.is_none();
    let since = last_visit.unwrap_or(now - FIRST_VISIT_MILLIS).min(now);
    let mut period = Period::default();
    for runs in store.runs_between(owner.id, since, now.saturating_add(1))? {
        period.runs += runs.ok + runs.failed;
        period.failed += runs.failed;
    }
    let length = now - since;
    for runs in store.runs_between(owner.id, since - length, since)? {
        period.runs_before += runs.ok + runs.failed;
        period.failed_before += runs.failed;
    }
    let today = now.div_euclid(DAY_MILLIS);
    let per_day = store.runs_per_day(owner.id, today * DAY_MILLIS)?;
    let (bars, bar_unit) = chart_range::family_runs(store, owner.id, range, now)?;
    let mut changes = Changes::default();
    let mut tiles = Vec::with_capacity(agents.len());
    for agent in agents {
        let own: Vec<&SkillEntry> = entries
            .iter()
            .filter(|e| e.skill.agent == Some(agent.id))
            .collect();
        let (runs_today, failed_today) = per_day
            .iter()
            .filter(|d| d.day == today && d.agent == Some(agent.id))
            .fold((0, 0), |(all, failed), d| {
                (all + d.ok + d.failed, failed + d.failed)
            });
        let mut last_ran = None;
        for entry in &own {
            let Some(latest) = store
                .script_runs(owner.id, entry.skill.id, 1)?
                .into_iter()
                .next()
            else {
                continue;
            };
            last_ran = last_ran.max(Some(latest.outcome.at));
            if !latest.outcome.ok && latest.outcome.at >= since {
                changes.failing.push((
                    entry.skill.id,
                    format!("{}/{}", agent.name, file_name(&entry.skill)),
                    latest.outcome.failure,
                ));
            }
        }
        let stats = store
            .avatar_state(owner.id, agent.id)?
            .and_then(|state| serde_json::from_str::<AvatarStats>(&state.state).ok());
        for change in store.sharing_changes(owner.id, agent.id, since)? {
            match change.kind {
                mindrune_store::SharingKind::Shared => changes.shared.push(change),
                mindrune_store::SharingKind::Unshared => changes.unshared.push(change),
            }
        }
        // The avatar's coins, XP and total level at the period's start (its first hourly
        // point since) and now (its state).
        if let Some(then) = store
            .wealth_history(owner.id, agent.id, since)?
            .into_iter()
            .next()
            && let Some(stats) = stats.as_ref()
        {
            let now = mindrune_store::Standing::of_report(0, &stats.levels, &stats.xp);
            add_to(&mut period.wealth, Some(then.coins), stats.wealth);
            add_to(&mut period.xp, then.total_xp, now.total_xp);
            add_to(&mut period.level, then.total_level, now.total_level);
        }
        tiles.push(Tile {
            agent,
            stats,
            runs_today,
            failed_today,
            // Entries come best score first.
            best: own
                .first()
                .map(|e| (file_name(&e.skill), points(e.version.score))),
            newest: own
                .iter()
                .max_by_key(|e| (e.skill.created_at, e.skill.id.0))
                .map(|e| file_name(&e.skill)),
            last_ran,
            scripts: own.len(),
            family: own.iter().filter(|e| e.family).count(),
        });
    }
    Ok(FamilyView {
        owner,
        tiles,
        entries,
        range,
        bars,
        bar_unit,
        since,
        first_visit,
        now,
        period,
        changes,
        attention: mindrune_engine::needs_attention(store, owner.id, None, now, runners)?,
    })
}

pub(super) async fn family_page(
    State(state): State<AppState>,
    OwnerPage(session): OwnerPage,
    headers: HeaderMap,
    query: Result<Query<RangeQuery>, QueryRejection>,
) -> Response {
    let range = match RangeQuery::read(query, CHART_RANGE, ("/dashboard", "Your family")) {
        Ok(range) => range,
        Err(page) => return *page,
    };
    let since = html::cookie_value(&headers, SEEN_COOKIE, state.config().cookies_secure())
        .and_then(|v| v.parse::<i64>().ok());
    let store = state.store();
    let owner_id = session.owner;
    let csrf = session.csrf_token.clone();
    let app = state.clone();
    let now = now_millis();
    let runners = state.health().runners_seen(owner_id);
    let page = state
        .blocking(move || -> Result<Markup, ApiError> {
            let owner = store.owner(owner_id)?;
            let agents = store.agents(owner_id)?;
            let entries = mindrune_engine::skills_as_of(store, owner_id, None, now)?;
            let visit = Visit {
                last_visit: since,
                range,
                now,
                runners: &runners,
            };
            let view = family_view(store, &owner, &agents, &entries, &visit)?;
            let shown_text = Shown::new(&[]);
            let body = family_html(&view, &csrf, &shown_text);
            Ok(html::page(
                "Your family",
                owner_nav(&app, &owner, &csrf),
                body,
            ))
        })
        .await
        .and_then(|page| page);
    match page {
        Ok(page) => {
            let mut response = html::respond(StatusCode::OK, page);
            // A year: the next visit, however late, still knows what it has not seen.
            html::set_cookies(
                &mut response,
                [html::cookie(
                    SEEN_COOKIE,
                    &now.to_string(),
                    "/dashboard",
                    365 * 24 * 3600,
                    state.config().cookies_secure(),
                )],
            );
            response
        }
        Err(err) => error_page(&err),
    }
}
