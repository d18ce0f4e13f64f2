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

/// The stored form of a secret.
pub fn secret_digest(secret: &str) -> String {
    mindrune_core::digest::sha256(secret.as_bytes())
}

/// Whether two secrets are equal, in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
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
}
