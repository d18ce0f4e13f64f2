//! Runx's static checks of a package's JavaScript modules, made at load
//! (`runx-parser/src/package/javascript.rs`, `javascript/lexer.rs`, `path.rs`,
//! `validate/modules.rs`), in Runx's order and words:
//!
//! - from each declared module (a runner's or graph step's `module`), breadth first in path
//!   order: the module must be present and text; its tokens must not call `fetch(` or
//!   `require(`, name `RUNX_INPUTS_JSON`/`RUNX_INPUTS_PATH` or reach `process.env`/`stdout`/
//!   `stderr`; it must not use `import(`; every `import`/`export … from` specifier must be a
//!   relative `./` or `../` path that stays in the package, ends in `.js`/`.mjs` and names a
//!   file that is there;
//! - then every `.js`/`.mjs` file of the package (but `*.test.js`/`*.test.mjs`, files under a
//!   `fixtures`, `harness`, `tests` or `tools` folder, and files of a nested package) must be
//!   reached that way or be a script a `cli-tool` runs.
//!
//! The lexer is Runx's: it knows comments, strings, template literals and regular expression
//! literals well enough to find identifiers and string specifiers, nothing more.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::PackageError;

/// One token and the byte it starts at.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    String { value: String, escaped: bool },
    Punct(char),
}

/// A refusal about one module: Runx's words, and the line it points at.
pub(super) struct ModuleRefusal {
    /// The file Runx names (the module, or the unreachable file).
    pub path: String,
    /// Runx's message after `<path>: `.
    pub message: String,
    /// The 1-based line in that file, when there is one.
    pub line: Option<usize>,
}

fn refusal(path: &str, message: impl Into<String>, line: Option<usize>) -> ModuleRefusal {
    ModuleRefusal {
        path: path.to_owned(),
        message: message.into(),
        line,
    }
}

impl ModuleRefusal {
    /// As a package refusal: Runx's text first, MindRune's `at file:line` second.
    pub(super) fn into_error(self, declared_at: Option<(String, usize, String)>) -> PackageError {
        let runx = format!("{}: {}", self.path, self.message);
        let (file, line, field, message) = match (self.line, declared_at) {
            (Some(line), _) => (
                self.path.clone(),
                line,
                "module".to_owned(),
                module_hint(&self.message),
            ),
            (None, Some((file, line, field))) => (file, line, field, module_hint(&self.message)),
            (None, None) => (
                self.path.clone(),
                1,
                "module".to_owned(),
                module_hint(&self.message),
            ),
        };
        PackageError::Invalid {
            file,
            line,
            field,
            message,
            runx: Some(runx),
        }
    }
}

fn module_hint(message: &str) -> String {
    if message.contains("cannot own") {
        "a deterministic module computes from its inputs only; move network, process and \
         environment access to a native tool or a cli-tool runner"
            .to_owned()
    } else if message.contains("not reachable") {
        "import it from a declared module, declare it as a runner's module, or remove it".to_owned()
    } else if message.contains("import") {
        "import only relative .js/.mjs files of the package that exist".to_owned()
    } else if message.contains("missing") {
        "add the module or fix the path".to_owned()
    } else {
        "fix the module so Runx can read it".to_owned()
    }
}

fn line_of(source: &str, byte: usize) -> usize {
    1 + source.as_bytes()[..byte.min(source.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
}

/// Runx's `validate_modules`: the modules reached from `roots` (with their imports), then the
/// unreachable-module check. `files` maps each package path to its bytes; `execution_files`
/// are the scripts a `cli-tool` runs.
pub(super) fn validate_modules(
    files: &BTreeMap<&str, &[u8]>,
    roots: &BTreeSet<String>,
    execution_files: &BTreeSet<String>,
) -> Result<(), ModuleRefusal> {
    let mut queue: VecDeque<String> = roots.iter().cloned().collect();
    let mut modules = BTreeSet::new();
    while let Some(path) = queue.pop_front() {
        if modules.contains(&path) {
            continue;
        }
        let contents = files
            .get(path.as_str())
            .ok_or_else(|| refusal(&path, "declared JavaScript module is missing", None))?;
        let text = std::str::from_utf8(contents).map_err(|_| {
            refusal(
                &path,
                "package file must be UTF-8 text",
                Some(line_of(&String::from_utf8_lossy(contents), contents.len())),
            )
        })?;
        let imports = module_imports(&path, text)?;
        for (specifier, byte) in &imports {
            let resolved = normalize_module_import(&path, specifier)
                .map_err(|message| refusal(&path, message, Some(line_of(text, *byte))))?;
            if !files.contains_key(resolved.as_str()) {
                return Err(refusal(
                    &path,
                    format!("JavaScript import {specifier:?} resolves to missing file {resolved}"),
                    Some(line_of(text, *byte)),
                ));
            }
            queue.push_back(resolved);
        }
        modules.insert(path);
    }
    for path in files.keys().filter(|path| is_package_module(path, files)) {
        if !modules.contains(*path) && !execution_files.contains(*path) {
            return Err(refusal(
                path,
                "executable JavaScript module is not reachable from a declared package source",
                None,
            ));
        }
    }
    Ok(())
}

fn is_package_module(path: &str, files: &BTreeMap<&str, &[u8]>) -> bool {
    if (!path.ends_with(".js") && !path.ends_with(".mjs"))
        || path.ends_with(".test.js")
        || path.ends_with(".test.mjs")
    {
        return false;
    }
    if path
        .split('/')
        .any(|segment| matches!(segment, "fixtures" | "harness" | "tests" | "tools"))
    {
        return false;
    }
    !has_nested_manual_boundary(path, files)
}

pub(super) fn has_nested_manual_boundary(path: &str, files: &BTreeMap<&str, &[u8]>) -> bool {
    let Some((directory, _)) = path.rsplit_once('/') else {
        return false;
    };
    let mut prefix = String::new();
    for segment in directory.split('/') {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(segment);
        if files.contains_key(format!("{prefix}/SKILL.md").as_str()) {
            return true;
        }
    }
    false
}

/// Runx's `validate_package_path`: the message when `path` is not a package path.
pub(super) fn package_path_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() || path.starts_with('/') || path.contains('\\') {
        return Some("package paths must be non-empty relative POSIX paths");
    }
    if path
        .split('/')
        .any(|segment| segment.is_empty() || matches!(segment, "." | ".."))
    {
        return Some("package paths must not contain empty, '.' or '..' segments");
    }
    None
}

/// Runx's `normalize_module_import`: the package path an import names, or Runx's message.
fn normalize_module_import(importer: &str, specifier: &str) -> Result<String, String> {
    if !(specifier.starts_with("./") || specifier.starts_with("../")) {
        return Err(format!(
            "unsupported JavaScript import {specifier:?}; deterministic modules may import only relative package .js/.mjs files"
        ));
    }
    if specifier.contains('\\') {
        return Err(format!(
            "JavaScript import {specifier:?} must use POSIX separators"
        ));
    }
    let mut segments = importer
        .rsplit_once('/')
        .map(|(parent, _)| parent.split('/').collect::<Vec<_>>())
        .unwrap_or_default();
    for segment in specifier.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(format!(
                        "JavaScript import {specifier:?} escapes the skill package"
                    ));
                }
            }
            value => segments.push(value),
        }
    }
    let resolved = segments.join("/");
    if let Some(problem) = package_path_problem(&resolved) {
        return Err(problem.to_owned());
    }
    if !matches!(resolved.rsplit_once('.'), Some((_, "js" | "mjs"))) {
        return Err(format!(
            "JavaScript import {specifier:?} must resolve to an explicit .js or .mjs file"
        ));
    }
    Ok(resolved)
}

/// The static imports of a deterministic module (with the byte each starts at), after the
/// effect checks.
fn module_imports(path: &str, source: &str) -> Result<Vec<(String, usize)>, ModuleRefusal> {
    let tokens = tokenize(path, source)?;
    reject_effectful_module_tokens(path, source, &tokens)?;
    imports_from_tokens(path, source, &tokens)
}

/// The static dependencies of a process-backed (tool) module, with the line of each: its
/// imports and its `require("…")` calls, which must name a plain string (Runx's
/// `process_module_imports`). A process may use Node's APIs, so no effect is refused.
pub(super) fn process_module_imports(
    path: &str,
    source: &str,
) -> Result<Vec<(String, usize)>, ModuleRefusal> {
    let tokens = tokenize(path, source)?;
    let mut imports = imports_from_tokens(path, source, &tokens)?;
    for (index, (token, byte)) in tokens.iter().enumerate() {
        if !matches!(token, Token::Ident(name) if name == "require")
            || (index > 0 && punct(&tokens, index - 1) == Some('.'))
            || punct(&tokens, index + 1) != Some('(')
        {
            continue;
        }
        let line = Some(line_of(source, *byte));
        match (tokens.get(index + 2), punct(&tokens, index + 3)) {
            (
                Some((
                    Token::String {
                        value,
                        escaped: false,
                    },
                    _,
                )),
                Some(')'),
            ) => imports.push((value.clone(), line_of(source, *byte))),
            (Some((Token::String { escaped: true, .. }, _)), _) => {
                return Err(refusal(
                    path,
                    "CommonJS require specifiers must not use string escapes",
                    line,
                ));
            }
            _ => {
                return Err(refusal(
                    path,
                    "process-backed JavaScript may use only static require(\"specifier\") dependencies",
                    line,
                ));
            }
        }
    }
    imports.sort();
    imports.dedup_by(|a, b| a.0 == b.0);
    Ok(imports)
}

fn ident(tokens: &[(Token, usize)], index: usize) -> Option<&str> {
    match tokens.get(index) {
        Some((Token::Ident(value), _)) => Some(value),
        _ => None,
    }
}

fn punct(tokens: &[(Token, usize)], index: usize) -> Option<char> {
    match tokens.get(index) {
        Some((Token::Punct(value), _)) => Some(*value),
        _ => None,
    }
}

fn reject_effectful_module_tokens(
    path: &str,
    source: &str,
    tokens: &[(Token, usize)],
) -> Result<(), ModuleRefusal> {
    for (index, (token, byte)) in tokens.iter().enumerate() {
        let Token::Ident(identifier) = token else {
            continue;
        };
        let called = matches!(identifier.as_str(), "fetch" | "require")
            && punct(tokens, index + 1) == Some('(');
        let boundary =
            if called || matches!(identifier.as_str(), "RUNX_INPUTS_JSON" | "RUNX_INPUTS_PATH") {
                Some(identifier.as_str())
            } else if identifier == "process"
                && punct(tokens, index + 1) == Some('.')
                && matches!(ident(tokens, index + 2), Some("env" | "stdout" | "stderr"))
            {
                Some("process runtime plumbing")
            } else {
                None
            };
        if let Some(boundary) = boundary {
            return Err(refusal(
                path,
                format!(
                    "deterministic JavaScript modules cannot own {boundary}; compose a native tool or declare a cli-tool boundary"
                ),
                Some(line_of(source, *byte)),
            ));
        }
    }
    Ok(())
}

fn imports_from_tokens(
    path: &str,
    source: &str,
    tokens: &[(Token, usize)],
) -> Result<Vec<(String, usize)>, ModuleRefusal> {
    let mut imports = Vec::new();
    let mut index = 0usize;
    while index < tokens.len() {
        match ident(tokens, index) {
            Some("import") => {
                if index > 0 && punct(tokens, index - 1) == Some('.') {
                    index += 1;
                    continue;
                }
                index = parse_import(path, source, tokens, index, &mut imports)?;
            }
            Some("export") => {
                index = match punct(tokens, index + 1) {
                    Some('{' | '*') => {
                        parse_from_clause(path, source, tokens, index + 1, &mut imports)?
                    }
                    _ => index + 1,
                };
            }
            _ => index += 1,
        }
    }
    imports.sort();
    imports.dedup_by(|a, b| a.0 == b.0);
    Ok(imports)
}

fn parse_import(
    path: &str,
    source: &str,
    tokens: &[(Token, usize)],
    index: usize,
    imports: &mut Vec<(String, usize)>,
) -> Result<usize, ModuleRefusal> {
    let line = Some(line_of(source, tokens[index].1));
    match tokens.get(index + 1) {
        Some((Token::Punct('('), _)) => Err(refusal(
            path,
            "dynamic import() is not available in deterministic JavaScript modules",
            line,
        )),
        Some((
            Token::String {
                value,
                escaped: false,
            },
            byte,
        )) => {
            imports.push((value.clone(), *byte));
            Ok(index + 2)
        }
        Some((Token::String { escaped: true, .. }, _)) => Err(refusal(
            path,
            "JavaScript module specifiers must not use string escapes",
            line,
        )),
        _ => parse_from_clause(path, source, tokens, index + 1, imports),
    }
}

fn parse_from_clause(
    path: &str,
    source: &str,
    tokens: &[(Token, usize)],
    start: usize,
    imports: &mut Vec<(String, usize)>,
) -> Result<usize, ModuleRefusal> {
    let limit = start.saturating_add(64).min(tokens.len());
    let mut index = start;
    while index < limit {
        match &tokens[index].0 {
            Token::Punct(';') => return Ok(index + 1),
            Token::Ident(value) if value == "from" => {
                let line = Some(line_of(source, tokens[index].1));
                return match tokens.get(index + 1) {
                    Some((
                        Token::String {
                            value,
                            escaped: false,
                        },
                        byte,
                    )) => {
                        imports.push((value.clone(), *byte));
                        Ok(index + 2)
                    }
                    Some((Token::String { escaped: true, .. }, _)) => Err(refusal(
                        path,
                        "JavaScript module specifiers must not use string escapes",
                        line,
                    )),
                    _ => Err(refusal(
                        path,
                        "JavaScript import/export from must be followed by a plain string literal",
                        line,
                    )),
                };
            }
            Token::Ident(value) if matches!(value.as_str(), "import" | "export") => {
                return Ok(index);
            }
            _ => index += 1,
        }
    }
    Ok(index.max(start + 1))
}

fn tokenize(path: &str, source: &str) -> Result<Vec<(Token, usize)>, ModuleRefusal> {
    let bytes = source.as_bytes();
    let fail = |message: String, at: usize| refusal(path, message, Some(line_of(source, at)));
    let mut tokens: Vec<(Token, usize)> = Vec::new();
    let mut index = 0usize;
    while index < bytes.len() {
        match bytes[index] {
            b'#' if index == 0 && bytes.get(1) == Some(&b'!') => {
                index = 2;
                while index < bytes.len() && bytes[index] != b'\n' {
                    index += 1;
                }
            }
            byte if byte.is_ascii_whitespace() => index += 1,
            b'/' if bytes.get(index + 1) == Some(&b'/') => {
                index += 2;
                while index < bytes.len() && bytes[index] != b'\n' {
                    index += 1;
                }
            }
            b'/' if bytes.get(index + 1) == Some(&b'*') => {
                let start = index;
                index += 2;
                while index + 1 < bytes.len() && !(bytes[index] == b'*' && bytes[index + 1] == b'/')
                {
                    index += 1;
                }
                if index + 1 >= bytes.len() {
                    return Err(fail(
                        format!("unterminated JavaScript block comment at byte {start}"),
                        start,
                    ));
                }
                index += 2;
            }
            b'/' if regex_can_start_after(tokens.last().map(|(token, _)| token)) => {
                index = skip_regex(bytes, index).map_err(|start| {
                    fail(
                        format!("unterminated JavaScript regular expression at byte {start}"),
                        start,
                    )
                })?;
            }
            quote @ (b'\'' | b'"') => {
                let start = index;
                let mut end = index + 1;
                let mut escaped = false;
                loop {
                    match bytes.get(end) {
                        Some(b'\\') => {
                            escaped = true;
                            end = end.saturating_add(2);
                        }
                        Some(byte) if *byte == quote => break,
                        Some(b'\n' | b'\r') | None => {
                            return Err(fail(
                                format!("unterminated JavaScript string at byte {start}"),
                                start,
                            ));
                        }
                        Some(_) => end += 1,
                    }
                }
                let value = String::from_utf8_lossy(&bytes[start + 1..end]).into_owned();
                tokens.push((Token::String { value, escaped }, start));
                index = end + 1;
            }
            b'`' => {
                let start = index;
                index += 1;
                loop {
                    match bytes.get(index) {
                        Some(b'\\') => index = index.saturating_add(2),
                        Some(b'`') => {
                            index += 1;
                            break;
                        }
                        Some(_) => index += 1,
                        None => {
                            return Err(fail(
                                format!("unterminated JavaScript template literal at byte {start}"),
                                start,
                            ));
                        }
                    }
                }
            }
            byte if is_ident_start(byte) => {
                let start = index;
                index += 1;
                while index < bytes.len() && is_ident_continue(bytes[index]) {
                    index += 1;
                }
                tokens.push((Token::Ident(source[start..index].to_owned()), start));
            }
            byte => {
                tokens.push((Token::Punct(char::from(byte)), index));
                index += 1;
            }
        }
    }
    Ok(tokens)
}

fn regex_can_start_after(previous: Option<&Token>) -> bool {
    const PUNCTUATION: &[char] = &[
        '(', '[', '{', ',', ';', ':', '=', '!', '?', '&', '|', '+', '-', '*', '%', '^', '~', '<',
        '>',
    ];
    const KEYWORDS: &[&str] = &[
        "await",
        "case",
        "delete",
        "do",
        "else",
        "in",
        "instanceof",
        "new",
        "of",
        "return",
        "throw",
        "typeof",
        "void",
        "yield",
    ];
    match previous {
        None => true,
        Some(Token::Punct(character)) => PUNCTUATION.contains(character),
        Some(Token::Ident(keyword)) => KEYWORDS.contains(&keyword.as_str()),
        Some(Token::String { .. }) => false,
    }
}

/// The byte after a regular expression literal, or the byte it started at when unterminated.
fn skip_regex(bytes: &[u8], start: usize) -> Result<usize, usize> {
    let mut index = start + 1;
    let mut in_character_class = false;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index = index.saturating_add(2),
            b'[' if !in_character_class => {
                in_character_class = true;
                index += 1;
            }
            b']' if in_character_class => {
                in_character_class = false;
                index += 1;
            }
            b'/' if !in_character_class => {
                index += 1;
                while index < bytes.len() && is_ident_continue(bytes[index]) {
                    index += 1;
                }
                return Ok(index);
            }
            b'\n' | b'\r' => return Err(start),
            _ => index += 1,
        }
    }
    Err(start)
}

const fn is_ident_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || matches!(byte, b'_' | b'$')
}

const fn is_ident_continue(byte: u8) -> bool {
    is_ident_start(byte) || byte.is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(files: &[(&str, &str)], roots: &[&str]) -> Result<(), String> {
        let files: BTreeMap<&str, &[u8]> = files
            .iter()
            .map(|(path, text)| (*path, text.as_bytes()))
            .collect();
        let roots = roots.iter().map(|root| (*root).to_owned()).collect();
        validate_modules(&files, &roots, &BTreeSet::new())
            .map_err(|refusal| format!("{}: {}", refusal.path, refusal.message))
    }

    #[test]
    fn runx_module_rules() {
        assert_eq!(
            check(
                &[("m.mjs", "import x from './h.mjs';"), ("h.mjs", "")],
                &["m.mjs"]
            ),
            Ok(())
        );
        assert_eq!(
            check(&[("m.mjs", "import fs from 'node:fs';")], &["m.mjs"]).unwrap_err(),
            "m.mjs: unsupported JavaScript import \"node:fs\"; deterministic modules may import only relative package .js/.mjs files"
        );
        assert_eq!(
            check(&[("m.mjs", "import '../o.mjs';")], &["m.mjs"]).unwrap_err(),
            "m.mjs: JavaScript import \"../o.mjs\" escapes the skill package"
        );
        assert_eq!(
            check(
                &[("m.mjs", "export const f = () => fetch('x');")],
                &["m.mjs"]
            )
            .unwrap_err(),
            "m.mjs: deterministic JavaScript modules cannot own fetch; compose a native tool or declare a cli-tool boundary"
        );
        assert_eq!(
            check(&[("m.mjs", "const k = process.env.K;")], &["m.mjs"]).unwrap_err(),
            "m.mjs: deterministic JavaScript modules cannot own process runtime plumbing; compose a native tool or declare a cli-tool boundary"
        );
        assert_eq!(
            check(
                &[("m.mjs", "const m = await import('./h.mjs');")],
                &["m.mjs"]
            )
            .unwrap_err(),
            "m.mjs: dynamic import() is not available in deterministic JavaScript modules"
        );
        assert_eq!(
            check(
                &[(
                    "m.mjs",
                    "// fetch(x)\nconst s = 'fetch(';\nconst r = /fetch(/;"
                )],
                &["m.mjs"]
            ),
            Ok(())
        );
        assert_eq!(
            check(
                &[
                    ("m.mjs", ""),
                    ("helper.mjs", ""),
                    ("a.test.mjs", ""),
                    ("tools/t.js", "")
                ],
                &["m.mjs"]
            )
            .unwrap_err(),
            "helper.mjs: executable JavaScript module is not reachable from a declared package source"
        );
        assert_eq!(
            check(&[("m.mjs", "import './gone.mjs';")], &["m.mjs"]).unwrap_err(),
            "m.mjs: JavaScript import \"./gone.mjs\" resolves to missing file gone.mjs"
        );
    }
}
