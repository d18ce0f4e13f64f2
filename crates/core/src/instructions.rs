//! The short text an agent is told about its skills and its family, at every start.
//!
//! It follows the spec's "Agents are told, in short" paragraph, with the family's bar (the
//! owner may have lowered it), the eager line when eager family sharing is on, and the line
//! about siblings' feedback. Changing the setting changes the text an agent gets the next time
//! it starts.

use crate::sharing::SharingBar;

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
        "What your siblings shared is in {mirror}/ (read only): grep -ri oak {mirror}/ before you write a new script. Siblings' feedback on your shared skills is in {mirror}/ (INDEX.md, LESSONS.md); tag feedback on a sibling's skill as Share: [skill:<sibling>/<name>] ….\n",
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
        assert!(text.starts_with("Your scripts and notes are private."));
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
    fn eager_sharing_lowers_the_bar_and_adds_its_line() {
        let text = text("buzz", SharingBar::EAGER, true, "family-skills");
        assert!(text.contains("at least 3 recorded runs and a score of at least 500"));
        assert!(text.contains(
            "Your owner wants proven routines shared: when a script of yours works reliably, give it the @skill header so your siblings can use it."
        ));
    }
}
