//! A bot's `bot.env`, read for the secrets every word recorded of the bot is scrubbed of.

use mindrune_core::secrets_in_bot_env_bytes;

use crate::workspace::{AgentFiles, MAX_SCRIPT_BYTES, ReadError};

/// The largest `bot.env` read for its secrets; one larger is refused, not read in part.
pub(crate) const MAX_BOT_ENV_BYTES: u64 = MAX_SCRIPT_BYTES;

/// A bot's `bot.env` that exists but cannot be read: nothing of the bot's may be stored or
/// sent until it can, since its password could not be scrubbed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error(
    "cannot read {relative} ({reason}): MindRune will not record {bot}'s runs until it can read it to scrub the bot's password; {fix}"
)]
pub struct UnreadableBotEnv {
    pub(crate) relative: String,
    pub(crate) bot: String,
    pub(crate) reason: ReadError,
    pub(crate) fix: &'static str,
}

/// The secrets in `bots/<bot>/bot.env` (see [`secrets_in_bot_env_bytes`]): read as
/// bytes, so no encoding turns the scrub off. A missing file has none; one that exists but
/// cannot be read (a folder, a symlink, no permission, too large) is an error.
pub fn bot_env_secrets(files: &dyn AgentFiles, bot: &str) -> Result<Vec<String>, UnreadableBotEnv> {
    let relative = format!("bots/{bot}/bot.env");
    match files.read_bytes(&relative, MAX_BOT_ENV_BYTES) {
        Ok(Some(bytes)) => Ok(secrets_in_bot_env_bytes(&bytes)),
        Ok(None) => Ok(Vec::new()),
        Err(reason) => {
            let fix = match reason {
                ReadError::TooLarge { .. } => {
                    "keep it under 1 MiB (it holds a few variables) or remove it"
                }
                ReadError::Symlink(_) | ReadError::NotAFile(_) => {
                    "make it a plain file in the bot's folder or remove it"
                }
                _ => "fix its permissions or remove it",
            };
            Err(UnreadableBotEnv {
                relative,
                bot: bot.to_string(),
                reason,
                fix,
            })
        }
    }
}
