//! Topic tags on disk and in the library: reading rs-sdk's wiki folder into vocabulary
//! entries, writing the vocabulary into the store, and the compiled vocabulary each process
//! maps text with.
//!
//! The wiki is outside input: a folder may hold odd file names, the same slug twice, empty or
//! binary pages, symlinks or 100,000 pages. Each such file is skipped with a note naming it,
//! and the build finishes; only a folder that is no wiki at all, or one without a single
//! readable page, is refused (writing it would remove every wiki tag).

use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mindrune_core::normalize_tag;
use mindrune_core::{Entry, Source, Vocabulary};
use mindrune_store::{Millis, Recording, Store, StoreError, VocabularyChange};

/// The wiki's page folders and the kind of tag each page becomes (rs-sdk's `wiki/search.ts`
/// and its generators: slug = file name, title = first heading).
pub const WIKI_FOLDERS: [(&str, &str); 5] = [
    ("quests", "quest"),
    ("skills", "skill"),
    ("items", "item"),
    ("npcs", "npc"),
    ("shops", "shop"),
];

/// The most pages read from one folder. rs-sdk's largest (items) holds one or two thousand; a
/// folder of 100,000 is not a wiki's, and reading it all would make the vocabulary (and every
/// process that compiles it) slow.
pub(crate) const MAX_PAGES_PER_FOLDER: usize = 10_000;

/// How much of a page is read: its title is its first `# ` heading, at the top, and a large
/// page must not cost its whole size.
pub(crate) const PAGE_READ_BYTES: u64 = 64 * 1024;

/// How many compiled vocabularies a process keeps (one per library it has opened, usually 1).
const CACHED_VOCABULARIES: usize = 4;

#[derive(Debug, thiserror::Error)]
pub enum TagsError {
    #[error(
        "{0} is not an rs-sdk wiki folder: it has none of quests/, skills/, items/, npcs/, shops/ (nor a wiki/ folder that has them); nothing was changed"
    )]
    NotAWiki(String),
    #[error("cannot read {path}: {message}; nothing was changed")]
    Read { path: String, message: String },
    #[error(
        "{0}: not a single page could be read, so the vocabulary was left as it is (writing it would remove every wiki tag)"
    )]
    NoPages(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What reading a wiki folder found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct WikiRead {
    /// The folder read: DIR, or DIR/wiki when DIR is an rs-sdk checkout.
    pub folder: String,
    /// One entry per page read, by folder then file name.
    pub entries: Vec<Entry>,
    /// Files (and folders) left out, each naming the file and why.
    pub skipped: Vec<String>,
    /// Page folders the wiki does not have (`skills`): no tags of their kind come from it.
    pub missing: Vec<String>,
}

/// Reads the pages of an rs-sdk wiki: `{quests,skills,items,npcs,shops}/*.md` of `dir`, or of
/// `dir/wiki` when `dir` is an rs-sdk checkout. Each page becomes an entry of its folder's
/// kind, its slug the file name (ASCII lower-cased, `.md` dropped), its title the page's first
/// `# ` heading, else the slug's words. Hidden files are passed over silently; anything else
/// that is not a page is skipped with a note naming it.
pub fn build_from_wiki(dir: &Path) -> Result<WikiRead, TagsError> {
    let folder = wiki_folder(dir)?;
    let mut read = WikiRead {
        folder: folder.display().to_string(),
        ..WikiRead::default()
    };
    for (name, kind) in WIKI_FOLDERS {
        let path = folder.join(name);
        let shown = format!("{}/{name}/", folder.display());
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                read.skipped.push(format!(
                    "{shown}: a symlink; the wiki's folders must be plain folders; skipped"
                ));
                continue;
            }
            Ok(meta) if !meta.is_dir() => {
                read.skipped.push(format!("{shown}: not a folder; skipped"));
                continue;
            }
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                read.missing.push(name.to_string());
                continue;
            }
            Err(err) => {
                read.skipped
                    .push(format!("{shown}: cannot be read ({err}); skipped"));
                continue;
            }
        }
        read_folder(&path, kind, &mut read);
    }
    Ok(read)
}

/// DIR itself when it holds one of the page folders, else DIR/wiki when that does.
fn wiki_folder(dir: &Path) -> Result<PathBuf, TagsError> {
    let has_pages = |folder: &Path| {
        WIKI_FOLDERS
            .iter()
            .any(|(name, _)| folder.join(name).is_dir())
    };
    if !dir.is_dir() {
        return Err(TagsError::Read {
            path: dir.display().to_string(),
            message: "no such folder".into(),
        });
    }
    if has_pages(dir) {
        return Ok(dir.to_path_buf());
    }
    let nested = dir.join("wiki");
    if has_pages(&nested) {
        return Ok(nested);
    }
    Err(TagsError::NotAWiki(dir.display().to_string()))
}

/// Reads one page folder into entries of `kind`, noting every file it skips.
fn read_folder(path: &Path, kind: &str, read: &mut WikiRead) {
    let shown = |name: &str| format!("{}/{name}", path.display());
    let listing = match std::fs::read_dir(path) {
        Ok(listing) => listing,
        Err(err) => {
            read.skipped.push(format!(
                "{}/: cannot be listed ({err}); skipped",
                path.display()
            ));
            return;
        }
    };
    let mut files: Vec<(String, std::fs::FileType)> = Vec::new();
    for item in listing {
        let item = match item {
            Ok(item) => item,
            Err(err) => {
                read.skipped.push(format!(
                    "{}/: an entry cannot be read ({err}); skipped",
                    path.display()
                ));
                continue;
            }
        };
        let Ok(name) = item.file_name().into_string() else {
            read.skipped.push(format!(
                "{}: a file name that is not UTF-8; skipped",
                item.path().display()
            ));
            continue;
        };
        // `file_type` does not follow symlinks, so a link is seen as a link.
        match item.file_type() {
            Ok(file_type) => files.push((name, file_type)),
            Err(err) => read
                .skipped
                .push(format!("{}: cannot be read ({err}); skipped", shown(&name))),
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));

    let mut pages: Vec<(String, String)> = Vec::new();
    let mut first_with_slug: HashMap<String, String> = HashMap::new();
    for (name, file_type) in files {
        // Hidden files are editors' and tools' (`.DS_Store`, `.page.md.swp`), never pages.
        if name.starts_with('.') {
            continue;
        }
        let why = if file_type.is_symlink() {
            Some("a symlink; pages must be plain files".to_string())
        } else if file_type.is_dir() {
            Some("a folder".to_string())
        } else if !file_type.is_file() {
            Some("not a regular file".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            read.skipped
                .push(format!("{}: {why}; skipped", shown(&name)));
            continue;
        }
        let stem = match name.len().checked_sub(3) {
            Some(at) if name.is_char_boundary(at) && name[at..].eq_ignore_ascii_case(".md") => {
                &name[..at]
            }
            _ => {
                read.skipped
                    .push(format!("{}: not a .md page; skipped", shown(&name)));
                continue;
            }
        };
        let slug = stem.to_ascii_lowercase();
        let tag = format!("{kind}:{slug}");
        if normalize_tag(&tag).as_deref() != Some(tag.as_str()) {
            read.skipped.push(format!(
                "{}: the name is not a slug (letters, digits and single hyphens, as rs-sdk's generators name pages); skipped",
                shown(&name)
            ));
            continue;
        }
        if let Some(first) = first_with_slug.get(&slug) {
            read.skipped.push(format!(
                "{}: the same slug `{slug}` as {first}; skipped",
                shown(&name)
            ));
            continue;
        }
        first_with_slug.insert(slug.clone(), name.clone());
        pages.push((name, slug));
    }
    if pages.len() > MAX_PAGES_PER_FOLDER {
        let over = pages.split_off(MAX_PAGES_PER_FOLDER);
        read.skipped.push(format!(
            "{}: {} pages, over the {MAX_PAGES_PER_FOLDER} a folder may have; the {} from {} on were skipped",
            path.display(),
            MAX_PAGES_PER_FOLDER + over.len(),
            over.len(),
            shown(&over[0].0)
        ));
    }
    for (name, slug) in pages {
        match page_title(&path.join(&name)) {
            Ok(title) => read.entries.push(Entry::new(
                kind,
                &slug,
                &title.unwrap_or_default(),
                Source::Wiki,
            )),
            Err(why) => read
                .skipped
                .push(format!("{}: {why}; skipped", shown(&name))),
        }
    }
}

/// A page's title: its first `# ` heading (`None` without one), read from its first
/// [`PAGE_READ_BYTES`]. An empty, binary or non-UTF-8 page is no page.
fn page_title(path: &Path) -> Result<Option<String>, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(PAGE_READ_BYTES).read_to_end(&mut bytes))
        .map_err(|err| format!("cannot be read ({err})"))?;
    if bytes.contains(&0) {
        return Err("a binary file, not a page".into());
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        // The read may have cut a character in two at its end; the rest is text.
        Err(err) if err.error_len().is_none() => {
            std::str::from_utf8(&bytes[..err.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return Err("not UTF-8 text".into()),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err("an empty page".into());
    }
    let title = text
        .lines()
        .find_map(|line| line.trim_start().strip_prefix("# "))
        .map(|title| title.trim().trim_end_matches('#').trim().to_string())
        .filter(|title| !title.is_empty());
    Ok(title)
}

/// What writing a vocabulary into the library did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Written {
    pub change: VocabularyChange,
    /// Tags per kind in the vocabulary now.
    pub counts: BTreeMap<String, usize>,
    /// Tags per source (`wiki`, `losthq`, `places`).
    pub sources: BTreeMap<String, usize>,
    /// Entries the vocabulary could not take, each naming it.
    pub skipped: Vec<String>,
}

/// Writes the vocabulary into the library: the wiki's pages plus the compiled-in places and
/// LostHQ pages (merged by tag, a wiki page first), replacing what was there in one
/// transaction. Refused when the wiki gave no page at all.
pub fn write_vocabulary(
    store: &dyn Store,
    wiki: &WikiRead,
    now: Millis,
) -> Result<Written, TagsError> {
    if wiki.entries.is_empty() {
        return Err(TagsError::NoPages(wiki.folder.clone()));
    }
    let (vocabulary, notes) = Vocabulary::from_entries(wiki.entries.iter().cloned());
    let change = store.replace_vocabulary(vocabulary.entries(), now)?;
    let mut sources = BTreeMap::new();
    for entry in vocabulary.entries() {
        *sources
            .entry(entry.source.as_str().to_string())
            .or_insert(0) += 1;
    }
    let written = Written {
        change,
        counts: vocabulary.counts_by_kind(),
        sources,
        skipped: notes.iter().map(ToString::to_string).collect(),
    };
    // This process maps with what it just wrote, without compiling it again.
    if let Some(digest) = store.vocabulary_digest()? {
        remember(digest, Arc::new(vocabulary));
    }
    Ok(written)
}

/// Compiled vocabularies by the digest of what the library held when they were compiled.
static COMPILED: Mutex<Vec<(String, Arc<Vocabulary>)>> = Mutex::new(Vec::new());

fn remember(digest: String, vocabulary: Arc<Vocabulary>) {
    let mut compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    compiled.retain(|(known, _)| *known != digest);
    if compiled.len() >= CACHED_VOCABULARIES {
        compiled.remove(0);
    }
    compiled.push((digest, vocabulary));
}

/// The library's vocabulary, compiled once per process: one read of the library's digest
/// tells whether the compiled one is still current (another process may have rebuilt it).
/// A library whose vocabulary was never built maps with the compiled-in one: exact tags,
/// places and the LostHQ pages.
pub fn vocabulary(store: &dyn Recording) -> Result<Arc<Vocabulary>, StoreError> {
    let Some(digest) = store.vocabulary_digest()? else {
        return Ok(Vocabulary::builtin());
    };
    {
        let compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, vocabulary)) = compiled.iter().find(|(known, _)| *known == digest) {
            return Ok(vocabulary.clone());
        }
    }
    // The compiled-in places and LostHQ pages are this binary's own: their rows in the library
    // record what a build wrote, and a newer MindRune's lists replace them.
    let entries = store.vocabulary()?;
    let (vocabulary, notes) = Vocabulary::from_entries(
        entries
            .into_iter()
            .filter(|entry| entry.source == Source::Wiki),
    );
    for note in notes {
        tracing::warn!("the library's vocabulary: {note}");
    }
    let vocabulary = Arc::new(vocabulary);
    // Another process may have rebuilt it while it was read: keep it only if it is current.
    if store.vocabulary_digest()?.as_deref() == Some(digest.as_str()) {
        remember(digest, vocabulary.clone());
    }
    Ok(vocabulary)
}

/// The written-out tags (`quest:restles-ghost`) among `tags` that the library's vocabulary
/// lacks, each with the known tag of the same kind it most likely meant. Writing a tag exactly
/// always works, so a typo would otherwise pass silently as a tag nothing else carries. Only
/// kinds the library knows pages of are checked: a library whose wiki was never read knows no
/// quests, so every quest tag would be "unknown".
pub(crate) fn unknown_tags(
    store: &dyn Store,
    vocabulary: &Vocabulary,
    tags: &[String],
) -> Result<Vec<(String, Option<String>)>, StoreError> {
    let mut unknown = Vec::new();
    let mut wiki_read = None;
    for tag in tags {
        let Some(tag) = mindrune_core::normalize_tag(tag) else {
            continue;
        };
        if vocabulary.contains_tag(&tag) || unknown.iter().any(|(t, _)| *t == tag) {
            continue;
        }
        let (kind, slug) = tag.split_once(':').unwrap_or((&tag, ""));
        // Places are MindRune's own fixed list; the other kinds come from the wiki.
        let known_kind =
            kind == "place" || *wiki_read.get_or_insert(store.vocabulary_digest()?.is_some());
        if !known_kind {
            continue;
        }
        let meant = vocabulary
            .entries()
            .iter()
            .filter(|entry| entry.kind == kind)
            .map(|entry| (strsim::levenshtein(&entry.slug, slug), entry))
            .filter(|(distance, _)| *distance <= 2.max(slug.len() / 5))
            .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.slug.cmp(&b.1.slug)))
            .map(|(_, entry)| entry.tag());
        unknown.push((tag, meant));
    }
    Ok(unknown)
}

/// The diagnostic for one unknown tag, naming where it was written.
pub(crate) fn describe_unknown_tag(place: &str, tag: &str, meant: Option<&str>) -> String {
    match meant {
        Some(meant) => format!(
            "{place}: tag `{tag}` is not in the vocabulary; did you mean `{meant}`? (a tag nothing else carries finds nothing)"
        ),
        None => format!(
            "{place}: tag `{tag}` is not in the vocabulary (rs-sdk's wiki pages and MindRune's places); a tag nothing else carries finds nothing"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mindrune_store::SqliteStore;

    fn page(dir: &Path, folder: &str, name: &str, text: &[u8]) {
        let path = dir.join(folder);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join(name), text).unwrap();
    }

    #[test]
    fn pages_become_entries_with_their_first_heading_as_title() {
        let dir = tempfile::tempdir().unwrap();
        page(
            dir.path(),
            "quests",
            "cooks-assistant.md",
            b"intro\n# Cook's Assistant\n\n| Detail |\n# Later\n",
        );
        page(dir.path(), "items", "bronze-pickaxe.md", b"*A pickaxe.*\n");
        page(
            dir.path(),
            "npcs",
            "Father-Aereck.MD",
            "\u{feff}#  Father Aereck ##\n".as_bytes(),
        );
        let read = build_from_wiki(dir.path()).unwrap();
        let got: Vec<(String, &str)> = read
            .entries
            .iter()
            .map(|e| (e.tag(), e.title.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("quest:cooks-assistant".to_string(), "Cook's Assistant"),
                ("item:bronze-pickaxe".to_string(), ""),
                ("npc:father-aereck".to_string(), "Father Aereck"),
            ]
        );
        assert!(read.skipped.is_empty(), "{:?}", read.skipped);
        assert_eq!(read.missing, ["skills", "shops"]);
    }

    #[test]
    fn an_rs_sdk_checkout_is_read_through_its_wiki_folder() {
        let dir = tempfile::tempdir().unwrap();
        page(
            &dir.path().join("wiki"),
            "shops",
            "general-store.md",
            b"# General Store\n",
        );
        let read = build_from_wiki(dir.path()).unwrap();
        assert_eq!(read.folder, dir.path().join("wiki").display().to_string());
        assert_eq!(read.entries.len(), 1);
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            build_from_wiki(empty.path()),
            Err(TagsError::NotAWiki(_))
        ));
        assert!(matches!(
            build_from_wiki(&empty.path().join("missing")),
            Err(TagsError::Read { .. })
        ));
    }

    #[test]
    fn bad_pages_are_skipped_with_a_note_naming_each_file() {
        let dir = tempfile::tempdir().unwrap();
        let items = dir.path().join("items");
        page(dir.path(), "items", "logs.md", b"# Logs\n");
        page(dir.path(), "items", "Logs.md", b"# Logs again\n");
        page(dir.path(), "items", "Cook's Stew.md", b"# Stew\n");
        page(dir.path(), "items", "empty.md", b"  \n\n");
        page(dir.path(), "items", "binary.md", b"# B\0\x01");
        page(dir.path(), "items", "latin1.md", b"# Caf\xe9\n");
        page(dir.path(), "items", "notes.txt", b"# Notes\n");
        page(dir.path(), "items", ".hidden.md", b"# Hidden\n");
        std::fs::create_dir_all(items.join("sub.md")).unwrap();
        std::os::unix::fs::symlink(items.join("logs.md"), items.join("link.md")).unwrap();
        let read = build_from_wiki(dir.path()).unwrap();
        assert_eq!(read.entries.len(), 1, "{:?}", read.entries);
        let at = |name: &str| format!("{}/{name}", items.display());
        let expected = [
            format!(
                "{}: the name is not a slug (letters, digits and single hyphens, as rs-sdk's generators name pages); skipped",
                at("Cook's Stew.md")
            ),
            format!(
                "{}: the same slug `logs` as Logs.md; skipped",
                at("logs.md")
            ),
            format!("{}: a binary file, not a page; skipped", at("binary.md")),
            format!("{}: an empty page; skipped", at("empty.md")),
            format!("{}: not UTF-8 text; skipped", at("latin1.md")),
        ];
        for note in &expected {
            assert!(
                read.skipped.contains(note),
                "missing {note:?} in {:#?}",
                read.skipped
            );
        }
        for (name, why) in [
            ("link.md", "a symlink; pages must be plain files; skipped"),
            ("sub.md", "a folder; skipped"),
            ("notes.txt", "not a .md page; skipped"),
        ] {
            assert!(
                read.skipped.contains(&format!("{}: {why}", at(name))),
                "{name}: {:#?}",
                read.skipped
            );
        }
        assert!(!read.skipped.iter().any(|note| note.contains(".hidden")));
    }

    #[test]
    fn a_folder_over_the_page_limit_is_cut_with_one_note() {
        let dir = tempfile::tempdir().unwrap();
        let npcs = dir.path().join("npcs");
        std::fs::create_dir_all(&npcs).unwrap();
        for n in 0..MAX_PAGES_PER_FOLDER + 5 {
            std::fs::write(npcs.join(format!("npc-{n:06}.md")), "").unwrap();
        }
        let read = build_from_wiki(dir.path()).unwrap();
        // Every page is empty: each one read is skipped, the ones over the limit are not read.
        assert!(read.entries.is_empty());
        let over: Vec<&String> = read
            .skipped
            .iter()
            .filter(|n| n.contains("over the"))
            .collect();
        assert_eq!(over.len(), 1);
        assert!(
            over[0].contains("10005 pages, over the 10000 a folder may have; the 5 from"),
            "{}",
            over[0]
        );
        assert!(
            over[0].ends_with("npc-010000.md on were skipped"),
            "{}",
            over[0]
        );
    }

    #[test]
    fn writing_refuses_a_wiki_without_pages_and_reuses_the_compiled_vocabulary() {
        let store = SqliteStore::open_in_memory().unwrap();
        let nothing = WikiRead {
            folder: "/w".into(),
            ..WikiRead::default()
        };
        assert!(matches!(
            write_vocabulary(&store, &nothing, 1),
            Err(TagsError::NoPages(_))
        ));
        assert_eq!(store.vocabulary_digest().unwrap(), None);
        // Never built: the compiled-in vocabulary.
        let builtin = vocabulary(&store).unwrap();
        assert!(Arc::ptr_eq(&builtin, &Vocabulary::builtin()));
        assert_eq!(builtin.map("fight in lumby"), ["place:lumbridge"]);

        let mut wiki = WikiRead {
            folder: "/w".into(),
            ..WikiRead::default()
        };
        wiki.entries.push(Entry::new(
            "quest",
            "cooks-assistant",
            "Cook's Assistant",
            Source::Wiki,
        ));
        let written = write_vocabulary(&store, &wiki, 2).unwrap();
        assert_eq!(written.counts["quest"], 1 + 17);
        assert_eq!(written.sources["wiki"], 1);
        assert_eq!(written.sources["places"], 73);
        assert_eq!(written.change.added.len(), 1 + 73 + 58);
        let first = vocabulary(&store).unwrap();
        assert_eq!(
            first.map("Cook's Assistant in lumby"),
            ["quest:cooks-assistant", "place:lumbridge"]
        );
        assert!(
            Arc::ptr_eq(&first, &vocabulary(&store).unwrap()),
            "compiled once"
        );
    }
}
