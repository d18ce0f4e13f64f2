//! The short text an agent is told about its skills and its family, at every start.
//!
//! It starts with rs-sdk's own session workflow (its `claude.md`: check world state first, write
//! `bots/<bot>/<name>.ts`, run it with `bun`, record observations in `lab_log.md`), with the
//! family's shared skills read where rs-sdk reads its `learnings/`, because the method is
//! rs-sdk's and MindRune only adds the family. Then the spec's "Agents are told, in short"
//! paragraph, with the family's bar (the owner may have lowered it), the eager line when eager
//! family sharing is on, and the line about siblings' feedback. Changing the setting changes the
//! text an agent gets the next time it starts.

use crate::avatars::sharing::SharingBar;

/// The instruction text for the agent of bot `bot`, whose family's skills are in `mirror`
/// (relative to its workspace: `family-skills` in a sandbox of its own, `bots/<bot>/family-skills`
/// when several bots share one rs-sdk checkout).
pub fn text(bot: &str, bar: SharingBar, eager: bool, mirror: &str) -> String {
    let mirror = mirror.trim_end_matches('/');
    let mut text = String::new();
    // In one checkout every bot's folder is on the same disk: MindRune shares only what the
    // header and Share: lines share, but it cannot keep a sibling's agent from reading the
    // folder, and the agent is told so rather than promised a privacy it does not have.
    let private = if mirror.starts_with("bots/") {
        format!(
            "MindRune shares nothing of yours without the @skill header, but this checkout holds every bot of your family: a sibling's agent can read bots/{bot}/ directly, and you can read theirs (read only what they share, in {mirror}/). "
        )
    } else {
        "Your scripts and notes are private. ".to_string()
    };
    text.push_str(&format!(
        "How to work (rs-sdk's own method):\n\
1. Check World State First: before writing a new script, look once with bun sdk/cli.ts {bot} (position, inventory, skills, what is nearby). Skip it right after the bot was created; on Tutorial Island call bot.skipTutorial() first.\n\
2. Look for what already works: your own bots/{bot}/lab_log.md and scripts, then what your siblings shared in {mirror}/ (read-only, like rs-sdk's shared notes in learnings/): grep -ri oak {mirror}/ learnings/.\n\
3. Copy and adapt: copy a family skill into bots/{bot}/<name>.ts (standalone scripts import runScript from '../../sdk/runner'), check it with a short run (bun bots/{bot}/<name>.ts, about 10 s for a new script), then let it run longer once it works. Fail fast and start simple.\n\
4. Observe and note: write what worked and what didn't in bots/{bot}/lab_log.md. The game is the source of truth.\n\
5. Improve: a changed file is a new version that must prove itself again. MindRune measures every run from what it prints (errors, XP, items, deaths); there is nothing to report.\n\n"
    ));
    text.push_str(&format!(
        "{private}Share a skill with your family by adding the @skill header to bots/{bot}/<name>.ts; remove it (or write @private in it) to stop sharing. \
The header shares a script only once it has proven itself: at least {} recorded runs and a score of at least {}. \
Until then it stays private and no sibling sees it in {mirror}/; MindRune shares it by itself as soon as it qualifies (the wrap-up shows how far it is). \
Inline execute_code code never becomes a skill: save code that works as bots/{bot}/<slug>.ts and run the file from then on. \
Read state (position, inventory, skills) inside the script that acts on it instead of spending a call only to look. \
Share a lesson by writing it as Share: … in bots/{bot}/lab_log.md. There is no pressure to share.\n",
        bar.runs,
        bar.score.round() as i64
    ));
    if eager {
        text.push_str(
            "Your owner wants proven routines shared: when a script of yours works reliably, give it the @skill header so your siblings can use it.\n",
        );
    }
    text.push_str(&format!(
        "Siblings' feedback on your shared skills is in {mirror}/ (INDEX.md, LESSONS.md); tag feedback on a sibling's skill as Share: [skill:<sibling>/<name>] ….\n",
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_text_names_the_standard_bar_and_no_eager_line() {
        let text = text("buzz", SharingBar::STANDARD, false, "family-skills");
        assert!(text.contains("at least 5 recorded runs and a score of at least 600"));
        assert!(text.contains("bots/buzz/lab_log.md"));
        assert!(!text.contains("Your owner wants proven routines shared"));
        assert!(text.contains("Share: [skill:<sibling>/<name>]"));
        assert!(text.contains("\n\nYour scripts and notes are private. Share a skill"));
        assert!(text.contains("grep -ri oak family-skills/"));
    }

    #[test]
    fn in_a_shared_checkout_the_text_names_the_bot_s_own_mirror_and_says_siblings_can_read_its_folder()
     {
        let text = text(
            "buzz",
            SharingBar::STANDARD,
            false,
            "bots/buzz/family-skills",
        );
        assert!(
            !text.contains("Your scripts and notes are private."),
            "{text}"
        );
        assert!(
            text.contains("a sibling's agent can read bots/buzz/ directly"),
            "{text}"
        );
        assert!(
            text.contains("no sibling sees it in bots/buzz/family-skills/"),
            "{text}"
        );
        assert!(
            text.contains("grep -ri oak bots/buzz/family-skills/"),
            "{text}"
        );
        assert!(!text.contains(" family-skills/ ("), "{text}");
    }

    #[test]
    fn the_text_follows_rs_sdk_s_workflow_with_one_look_first() {
        let text = text("woody", SharingBar::STANDARD, false, "family-skills");
        let steps = [
            "Check World State First",
            "bun sdk/cli.ts woody",
            "family-skills/",
            "learnings/",
            "bun bots/woody/<name>.ts",
            "bots/woody/lab_log.md",
            "Your scripts and notes are private.",
        ];
        let mut at = 0;
        for step in steps {
            let found = text[at..]
                .find(step)
                .unwrap_or_else(|| panic!("`{step}` missing or out of order in:\n{text}"));
            at += found;
        }
        // One look before a new script, not a look before every act.
        assert!(text.contains("Read state (position, inventory, skills) inside the script"));
    }

    #[test]
    fn eager_sharing_lowers_the_bar_and_adds_its_line() {
        let text = text("buzz", SharingBar::EAGER, true, "family-skills");
        assert!(text.contains("at least 3 recorded runs and a score of at least 500"));
        assert!(text.contains(
            "Your owner wants proven routines shared: when a script of yours works reliably, give it the @skill header so your siblings can use it."
        ));
    }
}
