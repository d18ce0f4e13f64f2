//! The secret corpus (`tests/data/secret_corpus.txt`): credential shapes the scrubber must catch
//! and look-alikes it must leave alone. Prints the detection and false-positive rates
//! (`cargo test -p mindrune-core --test secret_corpus -- --nocapture`) and fails on any missed
//! secret or any false positive not marked `benign-fp-accepted`.

use mindrune_core::secrets::Scrubber;

/// The known secrets the corpus is scrubbed with (also named in the corpus file's header).
pub const OWNER_KEY: &str = "mrk_e330ccb17b3f6f8b137ddda52a76d045cc89778fb6167222";
pub const BOT_PASSWORD: &str = "trout-Fisher-lumbridge";

const CORPUS: &str = include_str!("data/secret_corpus.txt");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Secret,
    Benign,
    BenignFpAccepted,
}

struct Case {
    line_no: usize,
    expect: Expect,
    kind: String,
    /// The text with `\n` decoded and the `⟦ ⟧` marks removed.
    text: String,
    /// The marked values; each must be gone from the scrubbed text (a value over several
    /// lines is checked line by line).
    values: Vec<String>,
}

/// `\n` is a line break, `\\` a backslash; any other backslash stays as it is.
fn decode(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('n') => {
                    chars.next();
                    out.push('\n');
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Removes the `⟦ ⟧` marks, returning the text and the marked values.
fn unmark(line: &str) -> (String, Vec<String>) {
    let mut text = String::with_capacity(line.len());
    let mut values = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find('⟦') {
        text.push_str(&rest[..open]);
        let after = &rest[open + '⟦'.len_utf8()..];
        let close = after.find('⟧').expect("every ⟦ has its ⟧");
        text.push_str(&after[..close]);
        values.push(after[..close].to_owned());
        rest = &after[close + '⟧'.len_utf8()..];
    }
    assert!(!rest.contains('⟧'), "a ⟧ without its ⟦ in {line:?}");
    text.push_str(rest);
    (text, values)
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (i, raw) in CORPUS.lines().enumerate() {
        let line_no = i + 1;
        if raw.is_empty() || raw.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = raw.split('\t').collect();
        let expect = match cols[0] {
            "secret" => Expect::Secret,
            "benign" => Expect::Benign,
            "benign-fp-accepted" => Expect::BenignFpAccepted,
            other => panic!("line {line_no}: unknown case type {other:?}"),
        };
        match expect {
            Expect::BenignFpAccepted => assert!(
                cols.len() == 4 && !cols[3].trim().is_empty(),
                "line {line_no}: an accepted false positive needs a reason column"
            ),
            _ => assert_eq!(cols.len(), 3, "line {line_no}: three columns expected"),
        }
        let (text, values) = unmark(&decode(cols[2]));
        match expect {
            Expect::Secret => assert!(
                !values.is_empty() && values.iter().all(|v| !v.is_empty()),
                "line {line_no}: a secret line marks its value with ⟦ ⟧"
            ),
            _ => assert!(
                values.is_empty(),
                "line {line_no}: a benign line has no ⟦ ⟧"
            ),
        }
        out.push(Case {
            line_no,
            expect,
            kind: cols[1].to_owned(),
            text,
            values,
        });
    }
    out
}

fn scrubber() -> Scrubber {
    Scrubber::new(&[OWNER_KEY, BOT_PASSWORD])
}

#[test]
fn the_corpus_is_large_and_names_its_known_secrets() {
    let cases = cases();
    let secrets = cases.iter().filter(|c| c.expect == Expect::Secret).count();
    let benign = cases.len() - secrets;
    assert!(secrets >= 150, "only {secrets} secret cases");
    assert!(benign >= 150, "only {benign} look-alikes");
    let accepted = cases
        .iter()
        .filter(|c| c.expect == Expect::BenignFpAccepted)
        .count();
    assert!(
        accepted <= 5,
        "{accepted} accepted false positives: keep them few"
    );
    assert!(CORPUS.contains(OWNER_KEY) && CORPUS.contains(BOT_PASSWORD));
    // `mrk_` and 48 hex digits, as `mindrune owner add` makes them.
    assert_eq!(OWNER_KEY.len(), 4 + 48);
    assert!(OWNER_KEY[4..].bytes().all(|b| b.is_ascii_hexdigit()));
}

#[test]
fn every_planted_secret_is_caught_and_look_alikes_stay_unchanged() {
    let sc = scrubber();
    let cases = cases();
    let mut missed = Vec::new();
    let mut changed = Vec::new();
    let (mut secrets, mut caught, mut benign, mut fps) = (0, 0, 0, 0);
    for case in &cases {
        let out = sc.scrub(&case.text);
        assert_eq!(
            out.text.matches('\n').count(),
            case.text.matches('\n').count(),
            "line {}: line breaks changed",
            case.line_no
        );
        // Scrubbing is idempotent on every case.
        assert_eq!(
            sc.scrub(&out.text).text,
            out.text,
            "line {}: not idempotent",
            case.line_no
        );
        match case.expect {
            Expect::Secret => {
                secrets += 1;
                let survived: Vec<&str> = case
                    .values
                    .iter()
                    .flat_map(|v| v.lines())
                    .filter(|piece| !piece.is_empty() && out.text.contains(piece))
                    .collect();
                if survived.is_empty() {
                    caught += 1;
                } else {
                    missed.push(format!(
                        "line {} ({}): {:?} survived in {:?}",
                        case.line_no, case.kind, survived, out.text
                    ));
                }
            }
            Expect::Benign | Expect::BenignFpAccepted => {
                benign += 1;
                if out.text != case.text {
                    fps += 1;
                    if case.expect == Expect::Benign {
                        changed.push(format!(
                            "line {} ({}): {:?} -> {:?}",
                            case.line_no, case.kind, case.text, out.text
                        ));
                    }
                }
            }
        }
    }
    let pct = |n: usize, d: usize| 100.0 * n as f64 / d.max(1) as f64;
    println!(
        "secret corpus: {caught}/{secrets} caught ({:.1} %), {fps}/{benign} look-alikes changed ({:.1} %)",
        pct(caught, secrets),
        pct(fps, benign)
    );
    assert!(
        missed.is_empty() && changed.is_empty(),
        "{} secrets missed:\n{}\n{} look-alikes changed:\n{}",
        missed.len(),
        missed.join("\n"),
        changed.len(),
        changed.join("\n")
    );
}

#[test]
fn accepted_false_positives_are_still_false_positives() {
    // A case marked `benign-fp-accepted` that the scrubber no longer changes should become a
    // plain `benign` case, so the accepted list never hides a fixed trade-off.
    let sc = scrubber();
    for case in cases()
        .iter()
        .filter(|c| c.expect == Expect::BenignFpAccepted)
    {
        assert_ne!(
            sc.scrub(&case.text).text,
            case.text,
            "line {}: no longer a false positive; mark it `benign`",
            case.line_no
        );
    }
}

/// A Runx package is an output path too: every credential shape of the corpus that needs no
/// known secret (the bot's password and the owner's key are only known to an avatar's
/// library) is refused when a Skill Lab draft would write it into a package file.
#[test]
fn every_credential_shape_is_refused_in_a_skill_package_write() {
    use mindrune_core::runx::admission::reject_secret_material;
    let mut missed = Vec::new();
    let mut checked = 0;
    for case in cases().iter().filter(|c| c.expect == Expect::Secret) {
        if case.text.contains(OWNER_KEY) || case.text.contains(BOT_PASSWORD) {
            continue;
        }
        checked += 1;
        let contents = format!("# Notes\n\nExample:\n{}\n", case.text);
        if reject_secret_material("SKILL.md", &contents).is_ok() {
            missed.push(format!("line {} ({})", case.line_no, case.kind));
        }
    }
    println!(
        "package writes: {checked} credential shapes planted, {} missed",
        missed.len()
    );
    assert!(checked >= 140, "{checked}");
    assert!(missed.is_empty(), "written into a package: {missed:#?}");
}
