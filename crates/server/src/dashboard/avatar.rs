//! An avatar's page: its stats beside its scripts.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use mindrune_core::SharingBar;
use mindrune_store::{Agent, AgentId, AvatarState, Owner, SkillEntry, Store, WealthPoint};

use super::family::attention_html;
use super::script::{SPARK_RUNS, ScriptView, script_html, sharing_html};
use crate::chart_range::{self, ChartRange, RangeQuery};
use crate::charts::{self, TimeAxis, TimedPoint};
use crate::error::ApiError;
use crate::html::{self, Markup, Shown, count, grouped, html, when};
use crate::pages::{OwnerPage, not_found, owner_nav, page_or_not_found, parse_id};
use crate::scripts::shown_index;
use crate::state::AppState;
use crate::wire::AvatarStats;

/// How far back the wealth chart reaches unless the owner picks another range.
pub(super) const WEALTH_CHART_RANGE: ChartRange = ChartRange::Month;

/// What the stats column shows, beside the state itself.
pub(super) struct StatsView<'a> {
    pub(super) state: Option<&'a AvatarState>,
    /// How many quests there are in all, when the library's vocabulary knows (it was built
    /// from rs-sdk's list): the compiled-in one holds only a few, so no total is better.
    pub(super) quests_in_all: Option<usize>,
    /// The avatar's coins, one point per hour, over `range` up to `now`.
    pub(super) wealth: &'a [WealthPoint],
    pub(super) range: ChartRange,
    pub(super) now: mindrune_store::Millis,
    /// The avatar's page, for the range picker's links.
    pub(super) href: String,
}

/// The quests the library's vocabulary holds, or `None` when the vocabulary was never built
/// (`mindrune tags build`) and only the compiled-in quests are known.
pub(super) fn quests_in_all(store: &dyn Store) -> Result<Option<usize>, ApiError> {
    if store.vocabulary_digest()?.is_none() {
        return Ok(None);
    }
    let vocabulary = mindrune_engine::load_vocabulary(store)?;
    Ok(vocabulary.counts_by_kind().get("quest").copied())
}

/// The avatar's coins over the picked time, with the range picker.
fn wealth_chart(view: &StatsView<'_>) -> Markup {
    let picker = chart_range::picker(view.range, &view.href, "wealth-chart");
    if view.wealth.len() < 2 {
        return html! {
            (picker)
            p class="small muted" id="wealth-chart" {
                "Not enough reports in " (view.range.words()) " for a chart."
            }
        };
    }
    let from = view
        .range
        .start(view.now, view.wealth.first().map(|p| p.hour));
    let axis = TimeAxis::until_now(from, view.now);
    let points: Vec<TimedPoint> = view
        .wealth
        .iter()
        .map(|p| TimedPoint {
            at: p.hour,
            label: when(Some(p.hour)),
            value: p.coins,
        })
        .collect();
    let chart = charts::amount_line(
        "wealth-chart",
        &format!("Coins over {}", view.range.words()),
        &points,
        "coins",
        &axis,
    );
    html! {
        (picker)
        (chart)
    }
}

pub(super) fn stats_html(view: &StatsView<'_>, shown_text: &Shown) -> Markup {
    let stats = view
        .state
        .map(|state| (state, serde_json::from_str::<AvatarStats>(&state.state)));
    html! {
        aside class="card stats" aria-labelledby="stats-title" {
            h2 id="stats-title" { "Stats" }
            @match stats {
                None => p class="muted" {
                    "No state reported yet: its runner sends the avatar's levels, quests, \
                     wealth, gear and bank as it plays."
                },
                Some((_, Err(_))) => p class="muted" {
                    "The last reported state could not be read; the runner's next report \
                     replaces it."
                },
                Some((state, Ok(stats))) => (reported_html(view, state, &stats, shown_text)),
            }
        }
    }
}

/// The stats column of a state that could be read.
fn reported_html(
    view: &StatsView<'_>,
    state: &AvatarState,
    stats: &AvatarStats,
    shown_text: &Shown,
) -> Markup {
    let reported = shown_text.plain(&when(Some(state.reported_at)));
    html! {
        @if stats.printed {
            // No state file: what the run printed is all there is, and it shows no bank or
            // quests.
            p class="small muted state-source" {
                "From the last run's printed state, " (reported) " UTC; bank and quests not \
                 printed: as last reported."
            }
        } @else {
            p class="small muted" { "As its runner last reported it, " (reported) " UTC." }
        }
        (levels_html(stats, shown_text))
        (quests_html(view, stats, shown_text))
        // Wealth, now and over the last days.
        h3 { "Wealth" }
        @match stats.wealth {
            Some(coins) => p class="wealth" {
                (grouped(coins)) " coins " span class="muted small" { "(carried and banked)" }
            },
            None => p class="muted" { "Not reported." },
        }
        (wealth_chart(view))
        h3 { "Gear" }
        @if stats.gear.is_empty() {
            p class="muted" { "Nothing equipped." }
        } @else {
            ul class="gear" {
                @for item in &stats.gear { li { (shown_text.plain(item)) } }
            }
        }
        h3 { "Bank" }
        @if stats.bank.is_empty() {
            p class="muted" { "Empty, or not seen yet." }
        } @else {
            div class="table-scroll" { table class="bank" {
                thead { tr {
                    th scope="col" { "Item" }
                    th scope="col" class="num" { "Count" }
                } }
                tbody {
                    @for (item, n) in &stats.bank {
                        tr { td { (shown_text.plain(item)) } td class="num" { (grouped(*n)) } }
                    }
                }
            } }
        }
    }
}

/// Levels, as the game's skills panel shows them.
fn levels_html(stats: &AvatarStats, shown_text: &Shown) -> Markup {
    let total: u64 = stats.levels.values().map(|l| u64::from(*l)).sum();
    html! {
        @if stats.levels.is_empty() {
            h3 { "Skills" }
            p class="muted" { "None reported." }
        } @else {
            h3 { "Skills " span class="muted small" { "Total level " (total) } }
            ul class="skills-grid" aria-label="Levels" {
                @for (skill, level) in &stats.levels {
                    @let name = shown_text.plain(skill);
                    li {
                        span class="skill-name" title=(name) { (name) }
                        span class="level" { (level) }
                        // Runners older than the XP field send levels only.
                        @if let Some(xp) = stats.xp.get(skill) {
                            span class="xp small muted" {
                                (grouped(i64::try_from(*xp).unwrap_or(i64::MAX))) " XP"
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Quests, of all there are when the library knows how many.
fn quests_html(view: &StatsView<'_>, stats: &AvatarStats, shown_text: &Shown) -> Markup {
    let done = stats.quests.len();
    html! {
        h3 {
            "Quests "
            span class="muted small" {
                (done)
                // A vocabulary built without rs-sdk's list may know fewer quests than were done.
                @if let Some(all) = view.quests_in_all { " of " (all.max(done)) }
                " done"
            }
        }
        @if stats.quests.is_empty() {
            p class="muted" { "None done yet." }
        } @else {
            ul class="quests" {
                @for quest in &stats.quests { li { (shown_text.plain(quest)) } }
            }
        }
        @if view.quests_in_all.is_none() {
            p class="small muted quests-hint" {
                "Run " code { "mindrune tags build" } " with the rs-sdk checkout to see how \
                 many quests there are in all."
            }
        }
    }
}

/// What an avatar's page shows beside its scripts and stats: what needs attention for it, at
/// the page's clock.
pub(super) struct AvatarExtras<'a> {
    pub(super) attention: &'a [mindrune_engine::AttentionItem],
    pub(super) now: i64,
}

pub(super) fn avatar_html(
    owner: &Owner,
    agent: &Agent,
    scripts: &[ScriptView],
    stats: &StatsView<'_>,
    extras: &AvatarExtras<'_>,
    csrf: &str,
    shown_text: &Shown,
) -> Markup {
    let bar = SharingBar::for_family(owner.eager_sharing);
    let family = scripts.iter().filter(|s| s.entry.family).count();
    // Counted as the family tile counts them: the scripts whose file is there.
    let gone = scripts.iter().filter(|s| s.gone).count();
    let name = shown_text.plain(&agent.name);
    html! {
        p class="small" { a href="/dashboard" { "← Your family" } }
        h1 { (name) }
        p class="lead" {
            (count((scripts.len() - gone) as i64, "script", "scripts")) " · " (family) " family"
            @if gone > 0 { " · " (gone) " whose file is gone" }
        }
        // Its own part of the family's "Needs attention", when there is any.
        @if !extras.attention.is_empty() {
            (attention_html(extras.attention, extras.now, shown_text))
        }
        div class="avatar-layout" {
            section aria-labelledby="scripts-title" {
                h2 id="scripts-title" { "Scripts" }
                @if scripts.is_empty() {
                    p class="card muted" {
                        "No scripts yet. A script in " code { "bots/" (name) "/" }
                        " shows here after its first recorded run."
                    }
                } @else {
                    ul class="scripts" {
                        @for view in scripts { (script_html(view, bar, shown_text)) }
                    }
                }
            }
            (stats_html(stats, shown_text))
        }
        (sharing_html(owner, csrf, &format!("/dashboard/avatars/{}", agent.id.0)))
    }
}

pub(super) async fn avatar_page(
    State(state): State<AppState>,
    OwnerPage(session): OwnerPage,
    Path(raw): Path<String>,
    query: Result<Query<RangeQuery>, QueryRejection>,
) -> Response {
    let Some(id) = parse_id(&raw) else {
        return not_found("avatar");
    };
    let back = format!("/dashboard/avatars/{id}");
    let range = match RangeQuery::read(query, WEALTH_CHART_RANGE, (&back, "The avatar")) {
        Ok(range) => range,
        Err(page) => return *page,
    };
    let store = state.store();
    let owner_id = session.owner;
    let csrf = session.csrf_token.clone();
    let app = state.clone();
    let runners = state.health().runners_seen(owner_id);
    let page = state
        .blocking(move || -> Result<Option<Markup>, ApiError> {
            let owner = store.owner(owner_id)?;
            // The avatar is looked for among the session owner's own: another family's id is
            // simply not there.
            let Some(agent) = store
                .agents(owner_id)?
                .into_iter()
                .find(|a| a.id == AgentId(id))
            else {
                return Ok(None);
            };
            let bar = SharingBar::for_family(owner.eager_sharing);
            let mut scripts = Vec::new();
            let mut entries = store.skills(owner_id, Some(agent.id))?;
            entries.sort_by(|a, b| {
                b.family
                    .cmp(&a.family)
                    .then_with(|| a.skill.name.cmp(&b.skill.name))
            });
            let now = mindrune_engine::now_millis();
            for entry in entries {
                let mut versions = store.versions(owner_id, entry.skill.id)?;
                let Some(shown) = shown_index(&entry.skill, &versions, entry.family, bar) else {
                    continue;
                };
                // Scores as of now (chosen above on their stored standing): freshness ages
                // with the clock, so a script left unused drifts back to the middle.
                for version in &mut versions {
                    version.score = version.score_at(now);
                }
                let last_failure = store
                    .recent_failures(owner_id, entry.skill.id, 1)?
                    .into_iter()
                    .next();
                let recent = store.script_runs(owner_id, entry.skill.id, SPARK_RUNS)?;
                scripts.push(ScriptView {
                    entry,
                    versions,
                    shown,
                    last_failure,
                    recent,
                    gone: false,
                });
            }
            // Scripts whose file is gone: private now, listed last with their history.
            for id in store.gone_skills(owner_id, agent.id)? {
                let skill = store.skill(owner_id, id)?;
                let mut versions = store.versions(owner_id, id)?;
                let Some(shown) = shown_index(&skill, &versions, false, bar) else {
                    continue;
                };
                for version in &mut versions {
                    version.score = version.score_at(now);
                }
                let last_failure = store.recent_failures(owner_id, id, 1)?.into_iter().next();
                let recent = store.script_runs(owner_id, id, SPARK_RUNS)?;
                let entry = SkillEntry {
                    version: versions[shown].clone(),
                    version_count: versions.len() as i64,
                    total_runs: versions.iter().map(|v| v.uses).sum(),
                    best: None,
                    family: false,
                    skill,
                };
                scripts.push(ScriptView {
                    entry,
                    versions,
                    shown,
                    last_failure,
                    recent,
                    gone: true,
                });
            }
            let avatar_state = store.avatar_state(owner_id, agent.id)?;
            let wealth = store.wealth_history(owner_id, agent.id, range.start(now, Some(0)))?;
            let stats = StatsView {
                state: avatar_state.as_ref(),
                quests_in_all: quests_in_all(store)?,
                wealth: &wealth,
                range,
                now,
                href: format!("/dashboard/avatars/{}", agent.id.0),
            };
            let shown_text = Shown::new(&[]);
            let attention =
                mindrune_engine::needs_attention(store, owner_id, Some(agent.id), now, &runners)?;
            let extras = AvatarExtras {
                attention: &attention,
                now,
            };
            let body = avatar_html(
                &owner,
                &agent,
                &scripts,
                &stats,
                &extras,
                &csrf,
                &shown_text,
            );
            Ok(Some(html::page(
                &shown_text.plain(&agent.name),
                owner_nav(&app, &owner, &csrf),
                body,
            )))
        })
        .await
        .and_then(|page| page);
    page_or_not_found(page, "avatar")
}
