//! The lab log's `Share:` lines and the lesson view never panic, and every lesson stays one
//! bounded line: as read, as viewed and as rendered into `LESSONS.md`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{LessonView, MAX_LESSON_CHARS, lesson_view, render_line, share_lines};

/// A character that would start a new line in a mirror file (or in an editor).
fn breaks_a_line(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

/// Views a lesson and renders it, checking both are one line.
fn view_and_render(text: &str, is_shared: &dyn Fn(&str) -> bool) {
    let view: LessonView = lesson_view(text, is_shared);
    assert!(!view.text.contains(breaks_a_line), "{view:?}");
    for tag in &view.tags {
        assert!(!tag.contains(breaks_a_line), "{view:?}");
        if let Some(reference) = tag.strip_prefix("skill:").filter(|t| t.contains('/')) {
            assert!(
                is_shared(reference),
                "an unshared reference became a tag: {view:?}"
            );
        }
    }
    if let Some(reference) = &view.feedback_on {
        assert!(is_shared(reference), "{view:?}");
        assert!(
            view.tags.contains(&format!("skill:{reference}")),
            "{view:?}"
        );
    }
    let line = render_line(&view, "pickles");
    assert!(!line.contains(breaks_a_line), "{line:?}");
    assert!(
        line.starts_with("- ") && line.ends_with("(pickles)"),
        "{line:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Some references are shared family skills, some are not.
    let is_shared = |reference: &str| reference.len().is_multiple_of(2);
    let (shared, diagnostics) = share_lines(&text);
    let line_count = text.lines().count();
    let mut previous = 0;
    for lesson in &shared {
        assert!(
            lesson.line > previous && lesson.line <= line_count,
            "{lesson:?}"
        );
        previous = lesson.line;
        assert!(!lesson.text.is_empty());
        assert!(!lesson.text.contains(['\n', '\r']), "{lesson:?}");
        assert!(
            lesson.text.chars().count() <= MAX_LESSON_CHARS,
            "{lesson:?}"
        );
        view_and_render(&lesson.text, &is_shared);
    }
    for diagnostic in &diagnostics {
        assert!(diagnostic.line >= 1 && diagnostic.line <= line_count);
    }
    // Any line, not only a `Share:` line, as a caller might pass it.
    for line in text.lines().take(64) {
        view_and_render(line, &is_shared);
    }
    view_and_render(&text, &is_shared);
});
