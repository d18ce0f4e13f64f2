//! An avatar's page: its stats beside its scripts.

use std::fmt::Write as _;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use mindrune_core::avatars::sharing::SharingBar;
use mindrune_store::{Agent, AgentId, AvatarState, Owner, SkillEntry, Store, WealthPoint};

use super::family::attention_html;
use super::script::{SPARK_RUNS, ScriptView, script_html, sharing_html};
use crate::chart_range::{self, ChartRange, RangeQuery};
use crate::charts::{self, TimeAxis, TimedPoint};
use crate::error::ApiError;
use crate::html::{self, Shown, count, grouped, when};
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
    let vocabulary = mindrune_engine::avatars::tags::vocabulary(store)?;
    Ok(vocabulary.counts_by_kind().get("quest").copied())
}

/// The avatar's coins over the picked time, with the range picker.
fn wealth_chart(out: &mut String, view: &StatsView<'_>) {
    out.push_str(&chart_range::picker(view.range, &view.href, "wealth-chart").into_string());
    if view.wealth.len() < 2 {
        let _ = write!(
            out,
            "<p class=\"small muted\" id=\"wealth-chart\">Not enough reports in {} for a chart.</p>",
            view.range.words()
        );
    } else {
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
        out.push_str(
            &charts::amount_line(
                "wealth-chart",
                &format!("Coins over {}", view.range.words()),
                &points,
                "coins",
                &axis,
            )
            .into_string(),
        );
    }
}

pub(super) fn stats_html(out: &mut String, view: &StatsView<'_>, shown_text: &Shown) {
    out.push_str(
        "<aside class=\"card stats\" aria-labelledby=\"stats-title\"><h2 id=\"stats-title\">Stats</h2>",
    );
    let Some(state) = view.state else {
        out.push_str(
            "<p class=\"muted\">No state reported yet: its runner sends the avatar's levels, \
             quests, wealth, gear and bank as it plays.</p></aside>",
        );
        return;
    };
    let stats: AvatarStats = match serde_json::from_str(&state.state) {
        Ok(stats) => stats,
        Err(_) => {
            out.push_str(
                "<p class=\"muted\">The last reported state could not be read; the runner's next report replaces it.</p></aside>",
            );
            return;
        }
    };
    if stats.printed {
        // No state file: what the run printed is all there is, and it shows no bank or quests.
        let _ = write!(
            out,
            "<p class=\"small muted state-source\">From the last run's printed state, {} UTC; \
             bank and quests not printed: as last reported.</p>",
            shown_text.text(&when(Some(state.reported_at)))
        );
    } else {
        let _ = write!(
            out,
            "<p class=\"small muted\">As its runner last reported it, {} UTC.</p>",
            shown_text.text(&when(Some(state.reported_at)))
        );
    }
    // Levels, as the game's skills panel shows them.
    if stats.levels.is_empty() {
        out.push_str("<h3>Skills</h3><p class=\"muted\">None reported.</p>");
    } else {
        let total: u64 = stats.levels.values().map(|l| u64::from(*l)).sum();
        let _ = write!(
            out,
            "<h3>Skills <span class=\"muted small\">Total level {total}</span></h3><ul class=\"skills-grid\" aria-label=\"Levels\">"
        );
        for (skill, level) in &stats.levels {
            let _ = write!(
                out,
                "<li><span class=\"skill-name\" title=\"{name}\">{name}</span><span class=\"level\">{level}</span>",
                name = shown_text.text(skill)
            );
            // Runners older than the XP field send levels only.
            if let Some(xp) = stats.xp.get(skill) {
                let _ = write!(
                    out,
                    "<span class=\"xp small muted\">{} XP</span>",
                    grouped(i64::try_from(*xp).unwrap_or(i64::MAX))
                );
            }
            out.push_str("</li>");
        }
        out.push_str("</ul>");
    }
    // Quests, of all there are when the library knows how many.
    let done = stats.quests.len();
    match view.quests_in_all {
        // A vocabulary built without rs-sdk's list may know fewer quests than were done.
        Some(all) => {
            let _ = write!(
                out,
                "<h3>Quests <span class=\"muted small\">{done} of {} done</span></h3>",
                all.max(done)
            );
        }
        None => {
            let _ = write!(
                out,
                "<h3>Quests <span class=\"muted small\">{done} done</span></h3>"
            );
        }
    }
    if stats.quests.is_empty() {
        out.push_str("<p class=\"muted\">None done yet.</p>");
    } else {
        out.push_str("<ul class=\"quests\">");
        for quest in &stats.quests {
            let _ = write!(out, "<li>{}</li>", shown_text.text(quest));
        }
        out.push_str("</ul>");
    }
    if view.quests_in_all.is_none() {
        out.push_str(
            "<p class=\"small muted quests-hint\">Run <code>mindrune tags build</code> with the \
             rs-sdk checkout to see how many quests there are in all.</p>",
        );
    }
    // Wealth, now and over the last days.
    out.push_str("<h3>Wealth</h3>");
    match stats.wealth {
        Some(coins) => {
            let _ = write!(
                out,
                "<p class=\"wealth\">{} coins <span class=\"muted small\">(carried and banked)</span></p>",
                grouped(coins)
            );
        }
        None => out.push_str("<p class=\"muted\">Not reported.</p>"),
    }
    wealth_chart(out, view);
    // Gear.
    out.push_str("<h3>Gear</h3>");
    if stats.gear.is_empty() {
        out.push_str("<p class=\"muted\">Nothing equipped.</p>");
    } else {
        out.push_str("<ul class=\"gear\">");
        for item in &stats.gear {
            let _ = write!(out, "<li>{}</li>", shown_text.text(item));
        }
        out.push_str("</ul>");
    }
    // Bank.
    out.push_str("<h3>Bank</h3>");
    if stats.bank.is_empty() {
        out.push_str("<p class=\"muted\">Empty, or not seen yet.</p>");
    } else {
        out.push_str(
            "<div class=\"table-scroll\"><table class=\"bank\"><thead><tr><th scope=\"col\">Item</th>\
             <th scope=\"col\" class=\"num\">Count</th></tr></thead><tbody>",
        );
        for (item, n) in &stats.bank {
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td></tr>",
                shown_text.text(item),
                grouped(*n)
            );
        }
        out.push_str("</tbody></table></div>");
    }
    out.push_str("</aside>");
}

/// What an avatar's page shows beside its scripts and stats: what needs attention for it, at
/// the page's clock.
pub(super) struct AvatarExtras<'a> {
    pub(super) attention: &'a [mindrune_engine::avatars::attention::Item],
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
) -> String {
    let bar = SharingBar::for_family(owner.eager_sharing);
    let family = scripts.iter().filter(|s| s.entry.family).count();
    // Counted as the family tile counts them: the scripts whose file is there.
    let gone = scripts.iter().filter(|s| s.gone).count();
    let mut body = String::new();
    let _ = write!(
        body,
        "<p class=\"small\"><a href=\"/dashboard\">← Your family</a></p>\
         <h1>{name}</h1><p class=\"lead\">{scripts} · {family} family{gone}</p>",
        name = shown_text.text(&agent.name),
        scripts = count((scripts.len() - gone) as i64, "script", "scripts"),
        gone = if gone > 0 {
            format!(" · {gone} whose file is gone")
        } else {
            String::new()
        },
    );
    // Its own part of the family's "Needs attention", when there is any.
    if !extras.attention.is_empty() {
        attention_html(&mut body, extras.attention, extras.now, shown_text);
    }
    body.push_str("<div class=\"avatar-layout\"><section aria-labelledby=\"scripts-title\"><h2 id=\"scripts-title\">Scripts</h2>");
    if scripts.is_empty() {
        let _ = write!(
            body,
            "<p class=\"card muted\">No scripts yet. A script in <code>bots/{}/</code> shows here after its first recorded run.</p>",
            shown_text.text(&agent.name)
        );
    } else {
        body.push_str("<ul class=\"scripts\">");
        for view in scripts {
            script_html(&mut body, view, bar, shown_text);
        }
        body.push_str("</ul>");
    }
    body.push_str("</section>");
    stats_html(&mut body, stats, shown_text);
    body.push_str("</div>");
    sharing_html(
        &mut body,
        owner,
        csrf,
        &format!("/dashboard/avatars/{}", agent.id.0),
    );
    body
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
        .blocking(move || -> Result<Option<String>, ApiError> {
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
            let now = mindrune_engine::avatars::ingest::now_millis();
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
            let attention = mindrune_engine::avatars::attention::needs_attention(
                store,
                owner_id,
                Some(agent.id),
                now,
                &runners,
            )?;
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
            Ok(Some(html::legacy_page(
                &shown_text.text(&agent.name),
                owner_nav(&app, &owner, &csrf),
                &body,
            )))
        })
        .await
        .and_then(|page| page);
    page_or_not_found(page, "avatar")
}
