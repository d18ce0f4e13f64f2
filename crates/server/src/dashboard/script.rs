//! What a script entry shows: its code, versions, runs and sharing.

use std::fmt::Write as _;

use mindrune_core::avatars::sharing::SharingBar;
use mindrune_store::{HeaderState, Owner, SkillEntry, Version};

use crate::html::{Shown, count, escape, points, when};
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

pub(super) fn script_html(
    out: &mut String,
    view: &ScriptView,
    bar: SharingBar,
    shown_text: &Shown,
) {
    let skill = &view.entry.skill;
    let version = view.shown();
    let id = skill.id.0;
    let file = file_name(skill);
    // A headed script that has not cleared the bar is "not shared yet", the spec's words and
    // the CLI's (`mindrune skills`, `skill show`, the wrap-up); a file that is gone is private.
    let tag = tag(skill, view.entry.family).into_string();
    let _ = write!(
        out,
        "<li class=\"card script{gone}\" id=\"skill-{id}\"><h3><a class=\"open-script\" href=\"/dashboard/skills/{id}\"><span class=\"file\">{file}</span></a>{tag}</h3>\
         <ul class=\"facts\"><li class=\"version\">v{number} · {versions}</li>\
         <li class=\"score\">score {score}</li><li class=\"runs\">{runs}</li>",
        gone = if skill.deleted_at.is_some() {
            " gone"
        } else {
            ""
        },
        file = shown_text.text(&file),
        number = version.number,
        versions = count(view.versions.len() as i64, "version", "versions"),
        score = points(version.score),
        runs = count(version.uses, "run", "runs"),
    );
    if view.entry.total_runs > version.uses {
        let _ = write!(
            out,
            "<li>{} in all versions</li>",
            count(view.entry.total_runs, "run", "runs")
        );
    }
    if !view.recent.is_empty() {
        let ok = view.recent.iter().filter(|r| r.outcome.ok).count();
        let history = score_history(skill, &view.versions, &view.recent);
        let values: Vec<f64> = history.iter().map(|p| p.value).collect();
        let _ = write!(
            out,
            "<li class=\"trend\">{spark}</li><li class=\"success-rate\">{rate}% ok of the last {n}</li>",
            spark =
                crate::charts::sparkline(&format!("{file}: score"), &values, 1000.0).into_string(),
            rate = (ok as f64 * 100.0 / view.recent.len() as f64).round(),
            n = count(view.recent.len() as i64, "run", "runs"),
        );
    }
    out.push_str("</ul>");
    if let Some(gone) = skill.deleted_at {
        let _ = write!(
            out,
            "<p class=\"gone small\">Its file is gone since {} UTC: private now; its history stays.</p>",
            shown_text.text(&when(Some(gone)))
        );
    }
    match (view.entry.family, skill.header.state) {
        (true, _) => {
            // A newer draft of a shared skill is not what siblings get until it is shared too.
            if let Some(current) = view
                .versions
                .iter()
                .find(|v| Some(v.id) == skill.current_version)
                .filter(|v| v.number > version.number && v.shared_at.is_none())
            {
                let _ = write!(
                    out,
                    "<p class=\"progress\">Newer draft v{}, {}</p>",
                    current.number,
                    shown_text.text(&progress_line(&file, current.uses, current.score, bar))
                );
            }
        }
        (false, HeaderState::Skill) if skill.deleted_at.is_some() => {}
        (false, HeaderState::Skill) => {
            let _ = write!(
                out,
                "<p class=\"progress\">{}</p>",
                shown_text.text(&progress_line(&file, version.uses, version.score, bar))
            );
        }
        (false, HeaderState::Private) => {
            out.push_str(
                "<p class=\"small muted\">Private: <code>@private</code> in its header.</p>",
            );
        }
        (false, HeaderState::None) => {
            // A proven script without a header: the one step to sharing it.
            if let Some(way) =
                sharing_way(skill, version, false, bar).filter(|_| skill.deleted_at.is_none())
            {
                let _ = write!(out, "<p class=\"share-hint\">{}</p>", shown_text.text(&way));
            }
        }
    }
    if let Some(goal) = skill
        .header
        .goal
        .as_deref()
        .filter(|g| !g.trim().is_empty())
    {
        let _ = write!(
            out,
            "<p class=\"goal\"><span class=\"muted\">Goal:</span> {}</p>",
            shown_text.text(goal)
        );
    }
    if let Some(failed) = &view.last_failure {
        let _ = write!(
            out,
            "<p class=\"failure small\"><span class=\"muted\">Last failure (v{number}, {when}):</span> {cause}</p>",
            number = failed.version,
            when = shown_text.text(&when(Some(failed.at))),
            cause = shown_text.text(failed.failure.as_deref().unwrap_or("no cause recorded")),
        );
    }
    // View (a disclosure: it works without JS), Copy (needs JS, so hidden until the script
    // shows it) and Download, in one row; opened, the code takes the row's whole width and
    // Copy and Download move below it.
    let _ = write!(
        out,
        "<div class=\"actions\">\
         <details class=\"code\"><summary>View code</summary>\
         <p class=\"small muted\">v{number}, as recorded (without its <code>@skill</code> header).</p>\
         <pre><code id=\"code-{id}\">{code}</code></pre></details>\
         <button type=\"button\" class=\"copy\" data-copy=\"code-{id}\" hidden>Copy</button>\
         <a class=\"button download\" href=\"/dashboard/skills/{id}/code?download=1\" download>Download</a>\
         <a class=\"button open\" href=\"/dashboard/skills/{id}\">Runs and versions</a>\
         </div>",
        number = version.number,
        code = shown_text.text(&version.code),
    );
    versions_html(out, view, shown_text);
    out.push_str("</li>");
}

pub(super) fn versions_html(out: &mut String, view: &ScriptView, shown_text: &Shown) {
    let skill = &view.entry.skill;
    let shown = view.shown();
    let _ = write!(
        out,
        "<details class=\"versions\"><summary>Versions ({})</summary>",
        view.versions.len()
    );
    if let Some(best) = mindrune_engine::display::best_other(&view.versions, shown) {
        let (number, score) = (best.number, best.score);
        let _ = write!(
            out,
            "<p class=\"best\">best: v{number}, {}</p>",
            points(score)
        );
    }
    out.push_str(
        "<div class=\"table-scroll\"><table class=\"stack\"><thead><tr><th scope=\"col\">Version</th>\
         <th scope=\"col\" class=\"num\">Runs</th><th scope=\"col\" class=\"num\">OK</th>\
         <th scope=\"col\" class=\"num\">Score</th><th scope=\"col\">Last used (UTC)</th>\
         <th scope=\"col\">Shared</th><th scope=\"col\">Code</th></tr></thead><tbody>",
    );
    for v in &view.versions {
        let mut notes = Vec::new();
        if Some(v.id) == skill.current_version {
            notes.push("the file now");
        }
        if v.id == shown.id && view.entry.family {
            notes.push("siblings get it");
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"muted small\">({})</span>", notes.join(", "))
        };
        let _ = write!(
            out,
            "<tr><td data-label=\"Version\">v{number}{notes}</td><td data-label=\"Runs\" class=\"num\">{runs}</td>\
             <td data-label=\"OK\" class=\"num\">{ok}</td><td data-label=\"Score\" class=\"num\">{score}</td>\
             <td data-label=\"Last used\">{last}</td><td data-label=\"Shared\">{shared}</td>\
             <td data-label=\"Code\"><a href=\"/dashboard/skills/{id}/code?version={number}\">view</a></td></tr>",
            number = v.number,
            runs = v.uses,
            ok = v.ok,
            score = points(v.score),
            last = shown_text.text(&when(v.last_used_at)),
            shared = if v.shared_at.is_some() { "yes" } else { "–" },
            id = skill.id.0,
        );
    }
    out.push_str("</tbody></table></div></details>");
}

/// The sharing bar and the Eager family sharing switch, together, in one compact line at the
/// foot of the family and avatar pages: flipping the switch moves the bar and every progress
/// line of the page at once.
pub(super) fn sharing_html(out: &mut String, owner: &Owner, csrf: &str, back: &str) {
    let bar = SharingBar::for_family(owner.eager_sharing);
    let sentence = if owner.eager_sharing {
        format!(
            "Eager family sharing is on: a script with an <code>@skill</code> header is shared after {} of its current version and a score of {}.",
            count(bar.runs, "run", "runs"),
            points(bar.score)
        )
    } else {
        format!(
            "A script with an <code>@skill</code> header is shared after {} of its current version and a score of {}.",
            count(bar.runs, "run", "runs"),
            points(bar.score)
        )
    };
    let _ = write!(
        out,
        "<aside class=\"sharing-line\" aria-label=\"Sharing bar\">\
         <p class=\"bar\" id=\"sharing-bar\"><strong>Sharing bar:</strong> {sentence}</p>\
         <form method=\"post\" action=\"/dashboard/eager\" class=\"switch\" data-autosubmit>\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <input type=\"hidden\" name=\"back\" value=\"{back}\">\
         <label title=\"{help}\"><input type=\"checkbox\" name=\"eager\" value=\"on\" id=\"eager\"{checked}> Eager family sharing</label>\
         <button type=\"submit\" class=\"save\">Save</button></form></aside>",
        csrf = escape(csrf),
        back = escape(back),
        checked = if owner.eager_sharing { " checked" } else { "" },
        help = if owner.eager_sharing {
            "Switched off, the bar is 5 runs and a score of 600 again; what is shared stays shared."
        } else {
            "Eager family sharing lowers the bar to 3 runs and a score of 500. Sharing stays each avatar's choice: only scripts with the header are shared."
        },
    );
}
