//! The SKILL.md reader never panics, a file it accepts goes through the blocking checks, and
//! it renders to a file that reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{CheckContext, SkillFile, parse_skill_file, blocking_checks, render_skill};
use mindrune_core::Scrubber;

/// Step lines say where the steps were in the text that was read, so they are left out of the
/// comparison between a file and its rendering.
fn without_lines(mut skill: SkillFile) -> SkillFile {
    for step in skill.steps.iter_mut().flatten() {
        step.line = 0;
    }
    skill
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse_skill_file(&text) {
        Ok((skill, _diagnostics)) => {
            let tools = ["workspace_read".to_owned(), "file_write".to_owned()];
            let scrubber = Scrubber::new(&[]);
            let ctx = CheckContext {
                runtime_tools: &tools,
                home: "/home/alice",
                workspace: "/home/alice/workspace",
                scrubber: &scrubber,
            };
            let _ = blocking_checks(&text, &skill, &ctx);
            let rendered = render_skill(&skill);
            let back = parse_skill_file(&rendered).map(|(skill, _)| without_lines(skill));
            assert_eq!(back, Ok(without_lines(skill)), "{rendered}");
        }
        Err(err) => {
            let message = err.to_string();
            assert!(message.starts_with("SKILL.md"), "{message}");
            assert!(!message.ends_with('.'), "{message}");
        }
    }
});
