//! What a script entry shows: its code, versions, runs and sharing.

use mindrune_core::SharingBar;
use mindrune_store::{HeaderState, Owner, SkillEntry, Version};

use crate::html::{Markup, Shown, count, html, points, when};
use crate::scripts::{file_name, progress_line, score_history, sharing_way, tag};

/// One entry of an avatar's page, with everything it shows.
pub(super) struct ScriptView {
    pub(super) entry: SkillEntry,
    /// Newest first.
    pub(super) versions: Vec<Version>,
    pub(super) shown: usize,
    /// The latest failed run, when the script has one: its version, time and cause.
    pub(super) last_failure: Option<mindrune_store::FailedRun>,
    /// Its latest runs, newest first (at most [`SPARK_RUNS`]), for its sparkline and success
    /// rate.
    pub(super) recent: Vec<mindrune_store::ScriptRun>,
    /// Its file is gone (deleted or renamed): listed with its history, not counted as one of
    /// the avatar's scripts.
    pub(super) gone: bool,
}

/// How many of a script's latest runs its sparkline and success rate on the avatar page cover.
pub(super) const SPARK_RUNS: usize = 30;

impl ScriptView {
    pub(super) fn shown(&self) -> &Version {
        &self.versions[self.shown]
    }
}

pub(super) fn script_html(view: &ScriptView, bar: SharingBar, shown_text: &Shown) -> Markup {
    let skill = &view.entry.skill;
    let version = view.shown();
    let id = skill.id.0;
    let file = file_name(skill);
    let class = if skill.deleted_at.is_some() {
        "card script gone"
    } else {
        "card script"
    };
    html! {
        li class=(class) id={ "skill-" (id) } {
            h3 {
                a class="open-script" href={ "/dashboard/skills/" (id) } {
                    span class="file" { (shown_text.plain(&file)) }
                }
                // A headed script that has not cleared the bar is "not shared yet", the
                // spec's words and the CLI's (`mindrune skills`, `skill show`, the wrap-up); a
                // file that is gone is private.
                (tag(skill, view.entry.family))
            }
            (facts_html(view, &file))
            @if let Some(gone) = skill.deleted_at {
                p class="gone small" {
                    "Its file is gone since " (shown_text.plain(&when(Some(gone))))
                    " UTC: private now; its history stays."
                }
            }
            (progress_html(view, &file, bar, shown_text))
            @if let Some(goal) = skill.header.goal.as_deref().filter(|g| !g.trim().is_empty()) {
                p class="goal" { span class="muted" { "Goal:" } " " (shown_text.plain(goal)) }
            }
            @if let Some(failed) = &view.last_failure {
                p class="failure small" {
                    span class="muted" {
                        "Last failure (v" (failed.version) ", "
                        (shown_text.plain(&when(Some(failed.at)))) "):"
                    }
                    " "
                    (shown_text.plain(failed.failure.as_deref().unwrap_or("no cause recorded")))
                }
            }
            // View (a disclosure: it works without JS), Copy (needs JS, so hidden until the
            // script shows it) and Download, in one row; opened, the code takes the row's whole
            // width and Copy and Download move below it.
            div class="actions" {
                details class="code" {
                    summary { "View code" }
                    p class="small muted" {
                        "v" (version.number) ", as recorded (without its "
                        code { "@skill" } " header)."
                    }
                    pre { code id={ "code-" (id) } { (shown_text.plain(&version.code)) } }
                }
                button type="button" class="copy" data-copy={ "code-" (id) } hidden { "Copy" }
                a class="button download" href={ "/dashboard/skills/" (id) "/code?download=1" }
                    download { "Download" }
                a class="button open" href={ "/dashboard/skills/" (id) } { "Runs and versions" }
            }
            (versions_html(view, shown_text))
        }
    }
}

/// The entry's facts: its version, score and runs, and its trend over its latest runs.
fn facts_html(view: &ScriptView, file: &str) -> Markup {
    let version = view.shown();
    html! {
        ul class="facts" {
            li class="version" {
                "v" (version.number) " · "
                (count(view.versions.len() as i64, "version", "versions"))
            }
            li class="score" { "score " (points(version.score)) }
            li class="runs" { (count(version.uses, "run", "runs")) }
            @if view.entry.total_runs > version.uses {
                li { (count(view.entry.total_runs, "run", "runs")) " in all versions" }
            }
            @if !view.recent.is_empty() {
                @let ok = view.recent.iter().filter(|r| r.outcome.ok).count();
                @let history = score_history(&view.entry.skill, &view.versions, &view.recent);
                @let values: Vec<f64> = history.iter().map(|p| p.value).collect();
                @let spark = crate::charts::sparkline(&format!("{file}: score"), &values, 1000.0);
                li class="trend" {
                    (spark)
                }
                li class="success-rate" {
                    ((ok as f64 * 100.0 / view.recent.len() as f64).round()) "% ok of the last "
                    (count(view.recent.len() as i64, "run", "runs"))
                }
            }
        }
    }
}

/// Where the entry stands on its way to being shared (or why it is not).
fn progress_html(view: &ScriptView, file: &str, bar: SharingBar, shown_text: &Shown) -> Markup {
    let skill = &view.entry.skill;
    let version = view.shown();
    match (view.entry.family, skill.header.state) {
        (true, _) => {
            // A newer draft of a shared skill is not what siblings get until it is shared too.
            let draft = view
                .versions
                .iter()
                .find(|v| Some(v.id) == skill.current_version)
                .filter(|v| v.number > version.number && v.shared_at.is_none());
            html! {
                @if let Some(current) = draft {
                    p class="progress" {
                        "Newer draft v" (current.number) ", "
                        (shown_text.plain(&progress_line(file, current.uses, current.score, bar)))
                    }
                }
            }
        }
        (false, HeaderState::Skill) if skill.deleted_at.is_some() => html! {},
        (false, HeaderState::Skill) => html! {
            p class="progress" {
                (shown_text.plain(&progress_line(file, version.uses, version.score, bar)))
            }
        },
        (false, HeaderState::Private) => html! {
            p class="small muted" { "Private: " code { "@private" } " in its header." }
        },
        (false, HeaderState::None) => {
            // A proven script without a header: the one step to sharing it.
            let way =
                sharing_way(skill, version, false, bar).filter(|_| skill.deleted_at.is_none());
            html! {
                @if let Some(way) = way {
                    p class="share-hint" { (shown_text.plain(&way)) }
                }
            }
        }
    }
}

pub(super) fn versions_html(view: &ScriptView, shown_text: &Shown) -> Markup {
    let skill = &view.entry.skill;
    let shown = view.shown();
    html! {
        details class="versions" {
            summary { "Versions (" (view.versions.len()) ")" }
            @if let Some(best) = mindrune_engine::best_other(&view.versions, shown) {
                p class="best" { "best: v" (best.number) ", " (points(best.score)) }
            }
            div class="table-scroll" { table class="stack" {
                thead { tr {
                    th scope="col" { "Version" }
                    th scope="col" class="num" { "Runs" }
                    th scope="col" class="num" { "OK" }
                    th scope="col" class="num" { "Score" }
                    th scope="col" { "Last used (UTC)" }
                    th scope="col" { "Shared" }
                    th scope="col" { "Code" }
                } }
                tbody {
                    @for v in &view.versions {
                        tr {
                            td data-label="Version" {
                                "v" (v.number)
                                (version_notes(v, shown, skill.current_version, view.entry.family))
                            }
                            td data-label="Runs" class="num" { (v.uses) }
                            td data-label="OK" class="num" { (v.ok) }
                            td data-label="Score" class="num" { (points(v.score)) }
                            td data-label="Last used" { (shown_text.plain(&when(v.last_used_at))) }
                            td data-label="Shared" {
                                @if v.shared_at.is_some() { "yes" } @else { "–" }
                            }
                            td data-label="Code" {
                                a href={
                                    "/dashboard/skills/" (skill.id.0) "/code?version=" (v.number)
                                } { "view" }
                            }
                        }
                    }
                }
            } }
        }
    }
}
/// What a version is to the page besides its number: ` (the file now, siblings get it)`.
fn version_notes(
    v: &Version,
    shown: &Version,
    current: Option<mindrune_store::VersionId>,
    family: bool,
) -> Markup {
    let mut notes = Vec::new();
    if Some(v.id) == current {
        notes.push("the file now");
    }
    if v.id == shown.id && family {
        notes.push("siblings get it");
    }
    html! {
        @if !notes.is_empty() {
            " " span class="muted small" { "(" (notes.join(", ")) ")" }
        }
    }
}

/// The sharing bar and the Eager family sharing switch, together, in one compact line at the
/// foot of the family and avatar pages: flipping the switch moves the bar and every progress
/// line of the page at once.
pub(super) fn sharing_html(owner: &Owner, csrf: &str, back: &str) -> Markup {
    let bar = SharingBar::for_family(owner.eager_sharing);
    let help = if owner.eager_sharing {
        "Switched off, the bar is 5 runs and a score of 600 again; what is shared stays shared."
    } else {
        "Eager family sharing lowers the bar to 3 runs and a score of 500. Sharing stays each avatar's choice: only scripts with the header are shared."
    };
    html! {
        aside class="sharing-line" aria-label="Sharing bar" {
            p class="bar" id="sharing-bar" {
                strong { "Sharing bar:" } " "
                @if owner.eager_sharing { "Eager family sharing is on: a" } @else { "A" }
                " script with an " code { "@skill" } " header is shared after "
                (count(bar.runs, "run", "runs")) " of its current version and a score of "
                (points(bar.score)) "."
            }
            form method="post" action="/dashboard/eager" class="switch" data-autosubmit {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="back" value=(back);
                label title=(help) {
                    input type="checkbox" name="eager" value="on" id="eager"
                        checked[owner.eager_sharing];
                    " Eager family sharing"
                }
                button type="submit" class="save" { "Save" }
            }
        }
    }
}
