//! Inputs the fuzz targets (`fuzz/`) once broke, kept as tests so they stay fixed.

use std::sync::mpsc;
use std::time::Duration;

use mindrune_core::{ShellContext, ShellRuns, classify_shell_line};

/// Classifies on another thread and fails (instead of hanging) if it takes too long.
fn classify_in_time(line: &'static str) -> ShellRuns {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let roots = ["/work"];
        let runs = classify_shell_line(
            line,
            &ShellContext {
                cwd: None,
                workspace_roots: &roots,
            },
        );
        let _ = send.send(runs);
    });
    receive
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("classifying {line:?} did not finish"))
}

#[test]
fn a_heredoc_whose_delimiter_is_only_white_space_is_refused_not_looped_on() {
    // brush-parser 0.4 trims the delimiter to nothing and then pushes empty tokens forever.
    for line in [
        "<<\x0c<#<<a'",
        "<<\x0c<#",
        "x<<\x0c<#<<a'",
        "<<\u{a0}<#",
        "cat <<\x0b<#",
        // Inside an open `${`, where the scanner does not cut heredocs out.
        "G|&${<<\x0c\t",
        "${<<\x0c\t",
        "${<<'\x0c'\t",
        "${<<\u{a0}\t",
        // A carriage return after `<<` is the tag's word for brush-parser, trimmed to nothing.
        "!<\n<\n <<\r  \x1c<\r   ",
        "${<<\r x",
    ] {
        let runs = classify_in_time(line);
        assert!(runs.runs.is_empty(), "{line:?}: {runs:?}");
    }
}

#[test]
fn a_mirrored_skill_file_gives_back_code_whose_file_had_cr_cr_lf_line_ends() {
    use mindrune_core::code_without_header;
    use mindrune_core::{SkillFileHeader, render_skill_file};

    // The `mirror_text` target's round trip fails on this input (its last part is the code).
    let code = code_without_header("a\r\r\nb");
    assert_eq!(code_without_header(&code), code);
    let file = render_skill_file(
        &SkillFileHeader {
            name: "x",
            from: "pickles/x",
            ..SkillFileHeader::default()
        },
        &code,
    );
    assert_eq!(code_without_header(&file), code);
}

/// Tokenizes a snippet on another thread and fails (instead of hanging) if it takes too long.
fn analyze_in_time(code: &'static str) -> Option<mindrune_core::NearRepeatAnalysis> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(mindrune_core::analyze_near_repeat(code));
    });
    receive
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("tokenizing {code:?} did not finish"))
}

#[test]
fn a_template_whose_code_point_escape_is_never_closed_does_not_tokenize_and_does_not_hang() {
    // ress 0.11.7 skips to the escape's `}` one byte at a time and never stops at the end of
    // the text; the `near_repeat` target found it in a snippet cut by its `\x01` separator.
    for code in [
        "c sdks\\u88529b7b`0d5c8aa3c.fii =s\\U88520b7b21\0;aa\x01(bot.wiee\\u{a\0%,s\\u880bb29527d5c8a // c\n",
        "(bot.wiee\\u{a\0%,s\\u880bb29527d5c8a // c\n",
        "`\\u{a",
    ] {
        assert_eq!(analyze_in_time(code), None, "{code:?}");
    }
}

#[test]
fn a_code_point_escape_of_more_than_eight_digits_does_not_tokenize_and_does_not_panic() {
    // ress 0.11.7 multiplies the code point in a `u32` without a check, which panics in debug
    // builds, in templates, strings and identifiers alike.
    for code in ["`\\u{123456789}`", "'\\u{123456789}'", "x = \\u{123456789}"] {
        assert_eq!(analyze_in_time(code), None, "{code:?}");
    }
}

#[test]
fn an_html_like_comment_opened_and_closed_at_once_does_not_tokenize_and_does_not_panic() {
    // ress 0.11.7 finds the `-->` of `<!-->` inside its own `<!--` and slices backwards.
    for code in [
        "<vu<vu<.<!-->>=u<.<!--6\r\r\r\r+\rdk\r\r`\rdk<.<!--6\r\x07\0\0\0\ru<.<!--6\r\r\r\r`\rdk\r\r`\rdk",
        "<!-->>=u<.<!--6",
        "<!-->",
        "a <!--> b",
    ] {
        assert_eq!(analyze_in_time(code), None, "{code:?}");
    }
}

#[test]
fn parentheses_brush_parser_sees_outside_the_scanner_s_quotes_are_refused_in_time() {
    // brush-parser took minutes on this line: it reads the run of `(` as nested subshells and
    // arithmetic, which the scanner took for quoted text.
    let line = "p[\x12pV[/[$``\x22d\x00\x04\x00$[Tz[\x00k0['1['''A'<'-\x00 \x00\x00\x00\x00\x00\x008~]=#k{[\x03\x00r\x22$'\x22\x00\x00\x00\x00\x00\x00k$(&>((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((+((>:)[[<[ ~]]] \x0e^()(|)|^<'-\x00\x00\x00d\x00\x04\x00$[To[\x00k0\x00\x00\x00\x008~]=#\x09";
    let runs = classify_in_time(line);
    assert!(runs.runs.is_empty(), "{runs:?}");
    assert!(!runs.diagnostics.is_empty(), "{runs:?}");
}

#[test]
fn nested_array_subscripts_and_parameter_expansions_are_refused_in_time() {
    // brush-parser tries several readings of each `w[${` level: the first took a second, the
    // others tens of seconds.
    for line in [
        "w[w[${w[w[${w[w[${Y[}}\\\"g}|",
        "w[${w[${w[${w[${w[${Y[}}}}\\\"g}|",
        "w[w[w[w[${w[w[w[w[${w[w[w[w[${Y[}}}}}}\\\"g}|",
        // Closers inside quotes, which brush-parser does not take as closers.
        "k[\"?${p[}\"]$(\"\"\"?${Z[\"?\"w?${pZ[}ut}&\"}ut}&dW)]])]",
        // Arithmetic in the subscripts.
        "k[k$((>[)()o[k$((>[)($)k[k$((>[)([)()o[k$((>[)($)k[k$((>[)())k[k",
        "Y[b\"\"\"k[k$((>[)())$((>[i())!)i>r(]k$((>[)())$((>[i())i>r(], _)\"if w))$((>[",
    ] {
        let runs = classify_in_time(line);
        assert!(!runs.diagnostics.is_empty(), "{line:?}: {runs:?}");
    }
    // A line with up to four subscripts or `$((` is still read (one with more gets a
    // diagnostic: the price of a bound that holds whatever the quoting).
    let runs = classify_in_time(
        "i=${idx[${pos[0]}]}; a[$((i + 1))]=1; [[ -f x ]] && [ -d y ] && bun bots/buzz/chop.ts",
    );
    assert_eq!(runs.runs, ["bots/buzz/chop.ts"], "{runs:?}");
}

#[test]
fn a_shift_inside_arithmetic_is_refused_not_tokenized_as_a_heredoc() {
    // brush-parser's tokenizer took this `<<` for a heredoc and pushed tokens for seconds.
    let runs = classify_in_time("$(($(())<<\t\t\x13|\t\t");
    assert!(runs.runs.is_empty(), "{runs:?}");
    assert!(
        runs.diagnostics
            .iter()
            .any(|d| d.contains("inside `$((…))`")),
        "{runs:?}"
    );
}

#[test]
fn a_heredoc_operator_the_scanner_cannot_place_is_refused_in_time() {
    // Inside backquotes inside double quotes the scanner does not see this `<<` as code;
    // brush-parser's tokenizer took it for a heredoc and looped for seconds.
    let runs = classify_in_time("\"`'`\"<<'\"' ");
    assert!(runs.runs.is_empty(), "{runs:?}");
    assert!(!runs.diagnostics.is_empty(), "{runs:?}");
    // Real heredocs and shifts in arithmetic commands are still read.
    let runs = classify_in_time("cat <<EOF\nhi\nEOF\n((x = 1 << 2))\nbun bots/buzz/chop.ts");
    assert_eq!(runs.runs, ["bots/buzz/chop.ts"], "{runs:?}");
}
