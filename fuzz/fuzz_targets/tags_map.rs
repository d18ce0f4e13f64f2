//! Mapping free text to topic tags never panics, and what it gives is sound: normalised,
//! unique tags that are exact tags of the text or tags the vocabulary knows; mapping its own
//! answer gives the answer back; a tagged lesson is tagged no further.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{exact_tags, normalize_tag};
use mindrune_core::Vocabulary;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let vocabulary = Vocabulary::builtin();
    let tags: Vec<String> = vocabulary
        .map(&text)
        .into_iter()
        .map(|t| t.into_owned())
        .collect();
    let exact = exact_tags(&text);
    for tag in &tags {
        assert_eq!(normalize_tag(tag).as_ref(), Some(tag), "{tags:?}");
        assert!(
            vocabulary.contains_tag(tag) || exact.contains(tag),
            "{tag} is neither known nor written: {text:?}"
        );
        assert_eq!(tags.iter().filter(|t| *t == tag).count(), 1, "{tags:?}");
    }
    for tag in &exact {
        assert!(tags.contains(tag), "the exact tag {tag} was lost");
    }
    assert_eq!(vocabulary.map(&tags.join(" ")), tags);
    let tagged = vocabulary.tag_lesson(&text);
    assert_eq!(vocabulary.tag_lesson(&tagged), tagged);
    // A header's Tags: entry is one word.
    for word in text.split_whitespace().take(32) {
        if let Some(tag) = vocabulary.tag_for_word(word) {
            assert_eq!(normalize_tag(&tag), Some(tag));
        }
    }
});
