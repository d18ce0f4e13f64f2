//! The secrets the server issues and compares: random, prefixed by what they are, stored only
//! as digests, compared in constant time. Free of the web layer, so the cookie helpers and the
//! extractors can both use them.

use subtle::ConstantTimeEq as _;

/// A new random secret with a prefix that says what it is (`mr_runner_…`).
pub fn new_secret(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source works");
    let mut out = String::with_capacity(prefix.len() + 64);
    out.push_str(prefix);
    for byte in bytes {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The stored form of a secret: the library's one rule, shared with the owner's key.
pub use mindrune_core::secret_digest;

/// Whether `secret` is the one whose stored digest is `digest`, in time that does not depend on
/// where they differ (the dashboard's login against the owner's stored key digest).
pub(crate) fn matches_digest(secret: &str, digest: &str) -> bool {
    bool::from(secret_digest(secret).as_bytes().ct_eq(digest.as_bytes()))
}

/// Whether two secrets are equal, in time that does not depend on where they differ.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (secret_digest(a), secret_digest(b));
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_prefixed_random_and_long() {
        let a = new_secret("mr_runner_");
        let b = new_secret("mr_runner_");
        assert!(a.starts_with("mr_runner_"));
        assert_eq!(a.len(), "mr_runner_".len() + 64);
        assert_ne!(a, b);
    }

    #[test]
    fn only_the_same_secret_matches() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
    }

    #[test]
    fn a_secret_matches_its_stored_digest_and_nothing_else_does() {
        let digest = secret_digest("mrk_abc");
        assert!(matches_digest("mrk_abc", &digest));
        assert!(!matches_digest("mrk_abd", &digest));
        assert!(
            !matches_digest(&digest, &digest),
            "the digest itself is not the key"
        );
    }
}
