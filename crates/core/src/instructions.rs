//! The short text an agent is told about its skills and its family, at every start.
//!
//! It follows the spec's "Agents are told, in short" paragraph, with the family's bar (the
//! owner may have lowered it), the eager line when eager family sharing is on, and the line
//! about siblings' feedback. Changing the setting changes the text an agent gets the next time
//! it starts.

use crate::sharing::SharingBar;

/// The instruction text for the agent of bot `bot`.
pub fn text(bot: &str, bar: SharingBar, eager: bool) -> String {
    let mut text = String::new();
    text.push_str(&format!(
        "Your scripts and notes are private. Share a skill with your family by adding the @skill header to bots/{bot}/<name>.ts; remove it (or write @private in it) to stop sharing. \
The header shares a script only once it has proven itself: at least {} recorded runs and a score of at least {}. \
Until then it stays private and no sibling sees it in family-skills/; MindRune shares it by itself as soon as it qualifies (the wrap-up shows how far it is). \
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
    text.push_str(
        "Siblings' feedback on your shared skills is in family-skills/ (INDEX.md, LESSONS.md); tag feedback on a sibling's skill as Share: [skill:<sibling>/<name>] ….\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_text_names_the_standard_bar_and_no_eager_line() {
        let text = text("buzz", SharingBar::STANDARD, false);
        assert!(text.contains("at least 5 recorded runs and a score of at least 600"));
        assert!(text.contains("bots/buzz/lab_log.md"));
        assert!(!text.contains("Your owner wants proven routines shared"));
        assert!(text.contains("Share: [skill:<sibling>/<name>]"));
    }

    #[test]
    fn eager_sharing_lowers_the_bar_and_adds_its_line() {
        let text = text("buzz", SharingBar::EAGER, true);
        assert!(text.contains("at least 3 recorded runs and a score of at least 500"));
        assert!(text.contains(
            "Your owner wants proven routines shared: when a script of yours works reliably, give it the @skill header so your siblings can use it."
        ));
    }
}
