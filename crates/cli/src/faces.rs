//! `mindrune --help` lists its subcommands by face. clap 4 has no heading per subcommand, so
//! the top-level help template is built here from the real `Command` tree: each line's name
//! and text come from the subcommand itself, and only which face it belongs to is written down.

use clap::Command;

/// The faces, in the order the help shows them, with their subcommands in that order.
const FACES: &[(&str, &[&str])] = &[
    (
        "Avatars (rs-sdk script skills, their families and runners)",
        &[
            "owner",
            "agent",
            "record",
            "skills",
            "skill",
            "attention",
            "turn-end",
            "start",
            "wrapup",
            "instructions",
            "mirror",
            "tags",
            "runner",
        ],
    ),
    (
        "Playbooks (an assistant's skills)",
        &["mcp", "inbox", "card", "refine", "playbook"],
    ),
    ("Skill Lab (Runx skill packages)", &["lab"]),
    (
        "Shared (setup, the library, the server)",
        &[
            "init", "setup", "doctor", "hook", "serve", "token", "migrate", "bench", "help",
        ],
    ),
];

/// The heading of subcommands no face names yet; the test below keeps it from being needed.
const UNSORTED: &str = "Other commands";

/// `command` with a help template that lists its subcommands under their faces' headings.
pub(crate) fn grouped_help(command: Command) -> Command {
    // Building adds clap's own `help` subcommand, so it is listed like the others.
    let mut built = command.clone();
    built.build();
    let subcommands: Vec<(String, String)> = built
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| {
            let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
            (sub.get_name().to_owned(), about)
        })
        .collect();
    let width = subcommands
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    let line = |(name, about): &(String, String)| {
        format!("  {name:<width$}  {about}").trim_end().to_owned() + "\n"
    };

    let mut listing = String::new();
    for (heading, names) in FACES {
        listing.push_str(&format!("{heading}:\n"));
        for name in *names {
            if let Some(sub) = subcommands.iter().find(|(sub, _)| sub == name) {
                listing.push_str(&line(sub));
            }
        }
        listing.push('\n');
    }
    let unsorted: Vec<&(String, String)> = subcommands
        .iter()
        .filter(|(name, _)| face_of(name).is_none())
        .collect();
    if !unsorted.is_empty() {
        listing.push_str(&format!("{UNSORTED}:\n"));
        for sub in unsorted {
            listing.push_str(&line(sub));
        }
        listing.push('\n');
    }
    command.help_template(format!(
        "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{listing}Options:\n{{options}}{{after-help}}"
    ))
}

/// The heading a subcommand is listed under.
fn face_of(name: &str) -> Option<&'static str> {
    FACES
        .iter()
        .find(|(_, names)| names.contains(&name))
        .map(|(heading, _)| *heading)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built() -> Command {
        use clap::CommandFactory as _;
        let mut command = crate::Cli::command();
        command.build();
        command
    }

    #[test]
    fn every_subcommand_is_under_exactly_one_face_and_every_face_names_real_ones() {
        let command = built();
        let real: Vec<&str> = command.get_subcommands().map(Command::get_name).collect();
        for name in &real {
            let headings: Vec<&str> = FACES
                .iter()
                .filter(|(_, names)| names.contains(name))
                .map(|(heading, _)| *heading)
                .collect();
            assert_eq!(headings.len(), 1, "`{name}` is under {headings:?}");
        }
        for (heading, names) in FACES {
            for name in *names {
                assert!(
                    real.contains(name),
                    "{heading} names `{name}`, no subcommand"
                );
            }
        }
    }

    #[test]
    fn the_help_lists_every_subcommand_once_under_its_face() {
        let help = grouped_help(built()).render_help().to_string();
        // (heading, first word) of every indented line, under the heading above it.
        let mut listed = Vec::new();
        let mut heading = "";
        for line in help.lines() {
            if let Some(title) = line.strip_suffix(':').filter(|_| !line.starts_with(' ')) {
                heading = title;
            } else if let Some(word) = line.strip_prefix("  ").and_then(|l| l.split(' ').next()) {
                listed.push((heading, word));
            }
        }
        for sub in built().get_subcommands() {
            let name = sub.get_name();
            let under: Vec<&str> = listed
                .iter()
                .filter(|(_, word)| *word == name)
                .map(|(heading, _)| *heading)
                .collect();
            assert_eq!(under, [face_of(name).unwrap()], "`{name}` in:\n{help}");
        }
    }
}
