//! Alerts that reach the owner: which attention items alert (a script failing `failing_streak`
//! runs in a row, an avatar quiet for `quiet_factor` of its usual gaps), each alert's stable id,
//! when a delivery may go (quiet hours hold it; a failed one backs off), and the bodies a
//! webhook gets (generic JSON, Slack's `text`, Discord's `content`). Pure: the server's alert
//! loop reads the items and the store, and sends.

use std::fmt;
use std::str::FromStr;

use mindrune_core::Scrubber;
use mindrune_store::{AlertDelivery, AlertEvent, Millis};
use serde::Deserialize;

use super::attention::{Item, QUIET_AT_LEAST, hours};

/// A failing streak alerts from this many failed runs in a row, unless configured.
pub const DEFAULT_FAILING_STREAK: usize = 3;
/// A quiet avatar alerts when its last run is this many usual gaps ago (as on the pages).
pub const DEFAULT_QUIET_FACTOR: i64 = 3;
/// A failed delivery is tried again after this, doubled with each attempt …
#[cfg(test)]
pub(crate) const RETRY_BASE: Millis = 30_000;
/// … up to this.
pub(crate) const RETRY_CAP: Millis = 3_600_000;
/// Discord refuses a message's `content` over this many characters.
const DISCORD_LIMIT: usize = 2_000;

/// How a webhook wants its body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertFormat {
    /// `{"id","event","owner","kind","title","detail","next_step","url","opened_at","resolved_at"}`.
    #[default]
    Json,
    /// `{"text": "..."}` (Slack's incoming webhooks).
    Slack,
    /// `{"content": "..."}`, at most 2,000 characters (Discord's webhooks).
    Discord,
}

impl AlertFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertFormat::Json => "json",
            AlertFormat::Slack => "slack",
            AlertFormat::Discord => "discord",
        }
    }

    pub fn parse(text: &str) -> AlertFormat {
        match text {
            "slack" => AlertFormat::Slack,
            "discord" => AlertFormat::Discord,
            _ => AlertFormat::Json,
        }
    }
}

/// Quiet hours, `"22:00-07:00"` (UTC): deliveries due in them wait until they end. A span whose
/// end is before its start runs over midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct QuietHours {
    /// Minutes after midnight UTC.
    start: i64,
    end: i64,
}

const DAY: Millis = 86_400_000;
const MINUTE: Millis = 60_000;

impl QuietHours {
    /// Whether `at` falls in the quiet hours.
    pub fn contains(self, at: Millis) -> bool {
        let minute = at.rem_euclid(DAY) / MINUTE;
        if self.start <= self.end {
            (self.start..self.end).contains(&minute)
        } else {
            minute >= self.start || minute < self.end
        }
    }

    /// When a delivery due at `at` may go: `at`, or the end of the quiet hours it falls in.
    pub(crate) fn release(self, at: Millis) -> Millis {
        if !self.contains(at) {
            return at;
        }
        let day = at - at.rem_euclid(DAY);
        let end = day + self.end * MINUTE;
        if end > at { end } else { end + DAY }
    }
}

impl TryFrom<String> for QuietHours {
    type Error = String;

    fn try_from(text: String) -> Result<QuietHours, String> {
        text.parse()
    }
}

impl FromStr for QuietHours {
    type Err = String;

    fn from_str(text: &str) -> Result<QuietHours, String> {
        let wrong =
            || format!("quiet hours {text:?} are not HH:MM-HH:MM (UTC), e.g. \"22:00-07:00\"");
        let minute = |part: &str| -> Option<i64> {
            let (h, m) = part.trim().split_once(':')?;
            let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
            ((0..24).contains(&h) && (0..60).contains(&m) && m.to_string().len() <= 2)
                .then_some(h * 60 + m)
        };
        let (start, end) = text.split_once('-').ok_or_else(wrong)?;
        let (start, end) = (
            minute(start).ok_or_else(wrong)?,
            minute(end).ok_or_else(wrong)?,
        );
        if start == end {
            return Err(format!(
                "quiet hours {text:?} start and end at the same minute"
            ));
        }
        Ok(QuietHours { start, end })
    }
}

impl fmt::Display for QuietHours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:02}:{:02}-{:02}:{:02}",
            self.start / 60,
            self.start % 60,
            self.end / 60,
            self.end % 60
        )
    }
}

/// Which items alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// A failing script alerts from this many failed runs in a row.
    pub failing_streak: usize,
    /// A quiet avatar alerts (false: never).
    pub quiet: bool,
    /// … when its last run is this many of its usual gaps ago (and at least 6 h).
    pub quiet_factor: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            failing_streak: DEFAULT_FAILING_STREAK,
            quiet: true,
            quiet_factor: DEFAULT_QUIET_FACTOR,
        }
    }
}

/// An alert raised by an attention item: its stable id and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// `ada/failing/<skill>/<first failed run>` or `ada/quiet/<agent>/<last run>`: the same
    /// streak or quiet spell has the same id on every pass and across restarts.
    pub id: String,
    pub kind: &'static str,
    /// The script (`buzz/chop.ts`) or the avatar.
    pub subject: String,
    pub(crate) title: String,
    pub(crate) detail: String,
    pub(crate) next_step: String,
    /// The dashboard page: a path, or an address when the dashboard's is configured.
    pub(crate) url: String,
}

impl Alert {
    /// What the store keeps of it (JSON), read back by [`body`].
    pub fn stored(&self) -> String {
        serde_json::json!({
            "title": self.title,
            "detail": self.detail,
            "next_step": self.next_step,
            "url": self.url,
        })
        .to_string()
    }
}

/// The alert `item` raises for `owner` under `thresholds`, if it alerts. Every text is scrubbed
/// of secrets (a failure's cause can quote one); `dashboard` prefixes the page's path.
pub fn alert_for(
    owner: &str,
    item: &Item,
    thresholds: &Thresholds,
    dashboard: Option<&str>,
) -> Option<Alert> {
    let scrubber = Scrubber::new(&[]);
    let clean = |text: &str| scrubber.scrub(text).text.into_owned();
    let base = dashboard.unwrap_or("").trim_end_matches('/');
    match item {
        Item::Failing(f) if f.streak >= thresholds.failing_streak => {
            let mut detail = format!(
                "cause: {} ({} of {} runs)",
                clean(&f.cause),
                f.cause_count,
                f.streak
            );
            if f.family {
                detail.push_str("; a family skill");
            }
            if !f.failing_for.is_empty() {
                detail.push_str(&format!(
                    "; failing for {} sibling(s) too",
                    f.failing_for.len()
                ));
            }
            if let Some(s) = f.suspect {
                detail.push_str(&format!(
                    "; suspect: v{}, the change before the streak (v{} ran well)",
                    s.version, s.last_good
                ));
            }
            Some(Alert {
                id: format!("{owner}/failing/{}/after-{}", f.skill.0, f.streak_after),
                kind: "failing",
                subject: clean(&f.label),
                title: if f.streak == 1 {
                    format!("{} failed its last run", clean(&f.label))
                } else {
                    format!("{} failed its last {} runs", clean(&f.label), f.streak)
                },
                detail,
                next_step: clean(&item.next_step()),
                url: format!("{base}/dashboard/skills/{}", f.skill.0),
            })
        }
        Item::Quiet(q)
            if thresholds.quiet
                && q.quiet_for > (q.usual_gap * thresholds.quiet_factor).max(QUIET_AT_LEAST) =>
        {
            Some(Alert {
                id: format!("{owner}/quiet/{}/{}", q.agent.0, q.last_run),
                kind: "quiet",
                subject: clean(&q.agent_name),
                title: format!(
                    "{} has been quiet for {}",
                    clean(&q.agent_name),
                    hours(q.quiet_for)
                ),
                detail: format!("it usually runs again within {}", hours(q.usual_gap)),
                next_step: clean(&item.next_step()),
                url: format!("{base}/dashboard/avatars/{}", q.agent.0),
            })
        }
        Item::RunnerStopped(r) => Some(Alert {
            id: format!("{owner}/runner-stopped/{}/{}", r.agent.0, r.last_contact),
            kind: "runner-stopped",
            subject: clean(&r.agent_name),
            title: format!(
                "{}'s runner stopped with {} event(s) still in its spool",
                clean(&r.agent_name),
                r.backlog
            ),
            detail: "nothing of the avatar is recorded until its runner runs again".into(),
            next_step: clean(&item.next_step()),
            url: format!("{base}/dashboard/avatars/{}", r.agent.0),
        }),
        _ => None,
    }
}

/// When a delivery first due at `now` may go.
pub fn first_attempt_at(now: Millis, quiet: Option<QuietHours>) -> Millis {
    quiet.map_or(now, |q| q.release(now))
}

/// When a delivery that has failed `attempts` times (this one counted) is tried again:
/// `base` doubled per earlier failure, at most an hour, held past the quiet hours.
pub fn retry_at(now: Millis, attempts: i64, base: Millis, quiet: Option<QuietHours>) -> Millis {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 20)).unwrap_or(20);
    let wait = base.saturating_mul(1_i64 << doublings).min(RETRY_CAP);
    first_attempt_at(now.saturating_add(wait), quiet)
}

/// The body a webhook gets for one delivery, in its format.
pub fn body(owner: &str, delivery: &AlertDelivery, format: AlertFormat) -> String {
    let stored: serde_json::Value = serde_json::from_str(&delivery.body).unwrap_or_default();
    let field = |key: &str| stored[key].as_str().unwrap_or("").to_string();
    let (title, detail, next_step, url) = (
        field("title"),
        field("detail"),
        field("next_step"),
        field("url"),
    );
    let event = delivery.event.as_str();
    let text = || match delivery.event {
        AlertEvent::Open => {
            format!("MindRune alert for {owner}: {title}. {detail}. Next: {next_step}. {url}")
        }
        AlertEvent::Resolve => {
            format!("MindRune resolved for {owner}: {title} — it is over. {url}")
        }
    };
    match format {
        AlertFormat::Json => serde_json::json!({
            "id": delivery.alert_id,
            "event": event,
            "owner": owner,
            "kind": delivery.kind,
            "title": title,
            "detail": detail,
            "next_step": next_step,
            "url": url,
            "opened_at": delivery.opened_at,
            "resolved_at": delivery.resolved_at,
        })
        .to_string(),
        AlertFormat::Slack => serde_json::json!({ "text": text() }).to_string(),
        AlertFormat::Discord => {
            let text = text();
            let cut: String = if text.chars().count() > DISCORD_LIMIT {
                let mut cut: String = text.chars().take(DISCORD_LIMIT - 1).collect();
                cut.push('…');
                cut
            } else {
                text
            };
            serde_json::json!({ "content": cut }).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatars::attention::{Failing, Quiet, Suspect};
    use mindrune_store::{AgentId, SkillId};

    fn failing(streak: usize) -> Item {
        Item::Failing(Failing {
            skill: SkillId(7),
            label: "buzz/chop.ts".into(),
            agent: Some(AgentId(1)),
            family: false,
            streak,
            cause: "Error: no axe".into(),
            cause_count: streak,
            first_seen: 0,
            last_seen: 0,
            last_failure: 40,
            first_failure: 21,
            streak_after: 20,
            failing_for: vec![],
            suspect: Some(Suspect {
                version: 3,
                last_good: 2,
            }),
        })
    }

    #[test]
    fn a_streak_alerts_from_its_threshold_with_an_id_of_the_run_before_it() {
        let rules = Thresholds::default();
        assert_eq!(alert_for("ada", &failing(2), &rules, None), None);
        let alert = alert_for("ada", &failing(3), &rules, None).unwrap();
        assert_eq!(alert.id, "ada/failing/7/after-20");
        // A longer streak is the same alert.
        assert_eq!(
            alert_for("ada", &failing(5), &rules, None).unwrap().id,
            alert.id
        );
        assert_eq!(alert.title, "buzz/chop.ts failed its last 3 runs");
        assert!(alert.detail.contains("suspect: v3"), "{}", alert.detail);
        assert!(alert.next_step.contains("v3 likely broke it"));
        assert_eq!(alert.url, "/dashboard/skills/7");
        let strict = Thresholds {
            failing_streak: 5,
            ..rules
        };
        assert_eq!(alert_for("ada", &failing(4), &strict, None), None);
        let linked = alert_for("ada", &failing(3), &rules, Some("https://mr.example/")).unwrap();
        assert_eq!(linked.url, "https://mr.example/dashboard/skills/7");
    }

    #[test]
    fn a_quiet_avatar_alerts_past_its_factor_unless_turned_off() {
        let quiet = Item::Quiet(Quiet {
            agent: AgentId(3),
            agent_name: "pickles".into(),
            last_run: 99,
            quiet_for: 40 * 3_600_000,
            usual_gap: 10 * 3_600_000,
        });
        let alert = alert_for("ada", &quiet, &Thresholds::default(), None).unwrap();
        assert_eq!(alert.id, "ada/quiet/3/99");
        assert_eq!(alert.title, "pickles has been quiet for 40 h");
        let patient = Thresholds {
            quiet_factor: 5,
            ..Thresholds::default()
        };
        assert_eq!(alert_for("ada", &quiet, &patient, None), None);
        let off = Thresholds {
            quiet: false,
            ..Thresholds::default()
        };
        assert_eq!(alert_for("ada", &quiet, &off, None), None);
    }

    #[test]
    fn quiet_hours_hold_a_delivery_to_their_end_also_over_midnight() {
        let hours: QuietHours = "22:00-07:00".parse().unwrap();
        let day = 20 * DAY;
        let at = |h: i64, m: i64| day + h * 3_600_000 + m * MINUTE;
        assert!(hours.contains(at(23, 0)) && hours.contains(at(3, 0)));
        assert!(!hours.contains(at(7, 0)) && !hours.contains(at(12, 0)));
        assert_eq!(hours.release(at(23, 0)), at(24 + 7, 0));
        assert_eq!(hours.release(at(3, 0)), at(7, 0));
        assert_eq!(hours.release(at(12, 0)), at(12, 0));
        let lunch: QuietHours = "12:00-13:30".parse().unwrap();
        assert_eq!(lunch.release(at(12, 10)), at(13, 30));
        assert_eq!(lunch.to_string(), "12:00-13:30");
        for wrong in [
            "22-07",
            "25:00-07:00",
            "22:00",
            "22:00-22:00",
            "ab:cd-07:00",
        ] {
            assert!(wrong.parse::<QuietHours>().is_err(), "{wrong}");
        }
    }

    #[test]
    fn a_failed_delivery_backs_off_doubling_up_to_an_hour() {
        assert_eq!(retry_at(0, 1, RETRY_BASE, None), 30_000);
        assert_eq!(retry_at(0, 2, RETRY_BASE, None), 60_000);
        assert_eq!(retry_at(0, 4, RETRY_BASE, None), 240_000);
        assert_eq!(retry_at(0, 60, RETRY_BASE, None), RETRY_CAP);
        let night: QuietHours = "00:00-06:00".parse().unwrap();
        assert_eq!(retry_at(0, 1, RETRY_BASE, Some(night)), 6 * 3_600_000);
    }

    #[test]
    fn bodies_follow_the_webhooks_format() {
        let alert = alert_for("ada", &failing(3), &Thresholds::default(), None).unwrap();
        let delivery = AlertDelivery {
            alert_id: alert.id.clone(),
            event: AlertEvent::Open,
            webhook: "http://127.0.0.1:1/".into(),
            format: "json".into(),
            attempts: 0,
            next_attempt_at: 0,
            last_status: None,
            last_error: None,
            delivered_at: None,
            kind: "failing".into(),
            subject: alert.subject.clone(),
            body: alert.stored(),
            opened_at: 5,
            resolved_at: None,
        };
        let json: serde_json::Value =
            serde_json::from_str(&body("ada", &delivery, AlertFormat::Json)).unwrap();
        assert_eq!(json["id"], "ada/failing/7/after-20");
        assert_eq!(json["event"], "open");
        assert_eq!(json["title"], "buzz/chop.ts failed its last 3 runs");
        assert_eq!(json["resolved_at"], serde_json::Value::Null);
        let slack: serde_json::Value =
            serde_json::from_str(&body("ada", &delivery, AlertFormat::Slack)).unwrap();
        assert!(
            slack["text"]
                .as_str()
                .unwrap()
                .contains("v3 likely broke it")
        );
        let long = AlertDelivery {
            body: serde_json::json!({ "title": "x".repeat(5_000) }).to_string(),
            event: AlertEvent::Resolve,
            ..delivery
        };
        let discord: serde_json::Value =
            serde_json::from_str(&body("ada", &long, AlertFormat::Discord)).unwrap();
        assert_eq!(discord["content"].as_str().unwrap().chars().count(), 2_000);
    }
}
