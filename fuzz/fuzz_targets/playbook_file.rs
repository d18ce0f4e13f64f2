//! The SKILL.md reader never panics, a file it accepts goes through the blocking checks, and
//! it renders to a file that reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::playbook::skill_file::{self, CheckContext, SkillFile};
use mindrune_core::secrets::Scrubber;

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
    match skill_file::parse(&text) {
        Ok((skill, _diagnostics)) => {
            let tools = ["workspace_read".to_owned(), "file_write".to_owned()];
            let scrubber = Scrubber::new(&[]);
            let ctx = CheckContext {
                runtime_tools: &tools,
                home: "/home/alice",
                workspace: "/home/alice/workspace",
                scrubber: &scrubber,
            };
            let _ = skill_file::blocking_checks(&text, &skill, &ctx);
            let rendered = skill_file::render(&skill);
            let back = skill_file::parse(&rendered).map(|(skill, _)| without_lines(skill));
            assert_eq!(back, Ok(without_lines(skill)), "{rendered}");
        }
        Err(err) => {
            let message = err.to_string();
            assert!(message.starts_with("SKILL.md"), "{message}");
            assert!(!message.ends_with('.'), "{message}");
        }
    }
});
