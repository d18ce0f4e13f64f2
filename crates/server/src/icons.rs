//! The dashboard's badges as inline SVG, drawn in the text's colour.
//!
//! The spec's badges are emoji (👪 Family, 🔒 Private), and a browser without an emoji font
//! draws them as empty boxes (headless Chromium on a plain Debian does). These need no font,
//! no request and no script, so the strict CSP stays as it is; the words beside them carry the
//! meaning, and the icons are hidden from screen readers.
//!
//! SVG inside HTML closes no element by itself, so every shape is written with `{}` (an end
//! tag), never as maud's void `;`.

use maud::{Markup, html};

/// A family: two grown-ups and a child.
pub(crate) fn family() -> Markup {
    html! {
        svg.icon.icon-family viewBox="0 0 16 16" aria-hidden="true" focusable="false" {
            circle cx="4.5" cy="3.5" r="2" {}
            circle cx="11.5" cy="3.5" r="2" {}
            circle cx="8" cy="8.5" r="1.5" {}
            path d="M1.5 15v-5.5a3 3 0 0 1 6 0V15zM8.5 15v-5.5a3 3 0 0 1 6 0V15z" {}
            path d="M6 15v-2.5a2 2 0 0 1 4 0V15z" {}
        }
    }
}

/// A padlock.
pub(crate) fn lock() -> Markup {
    html! {
        svg.icon.icon-lock viewBox="0 0 16 16" aria-hidden="true" focusable="false" {
            path d="M4.5 7V5a3.5 3.5 0 0 1 7 0v2h-1.75V5a1.75 1.75 0 0 0-3.5 0v2z" {}
            rect x="3" y="7" width="10" height="8" rx="1.5" {}
        }
    }
}

/// A warning triangle.
pub(crate) fn warning() -> Markup {
    html! {
        svg.icon.icon-warning viewBox="0 0 16 16" aria-hidden="true" focusable="false" {
            path d="M8 1 15.5 14.5H.5zM7.2 6v4.5h1.6V6zm0 5.6v1.6h1.6v-1.6z" fill-rule="evenodd" {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_badge_is_svg_hidden_from_screen_readers_with_no_text_of_its_own() {
        for icon in [family(), lock(), warning()] {
            let icon = icon.into_string();
            assert!(
                icon.starts_with("<svg ") && icon.ends_with("</svg>"),
                "{icon}"
            );
            assert!(icon.contains("aria-hidden=\"true\""), "{icon}");
            assert!(!icon.contains("<text"), "{icon}");
            assert!(!icon.chars().any(|c| c as u32 > 0x7f), "{icon}");
        }
    }

    #[test]
    fn every_shape_is_closed_by_an_end_tag() {
        for icon in [family(), lock(), warning()] {
            let icon = icon.into_string();
            for shape in ["circle", "path", "rect"] {
                assert_eq!(
                    icon.matches(&format!("<{shape} ")).count(),
                    icon.matches(&format!("</{shape}>")).count(),
                    "{icon}"
                );
            }
        }
    }
}
