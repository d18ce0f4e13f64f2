//! The alerts' ledger on both backends: an alert opens once however often it is raised, its
//! deliveries wait for their time and are noted, a gone alert resolves once to the webhooks its
//! opening went to, and another family sees none of it.

// The support module serves `store_story.rs` too; this file uses only its libraries.
#[allow(dead_code, unused_imports)]
mod support;

use mindrune_core::secret_digest;
use mindrune_store::{AlertEvent, AlertTarget, DeliveryAttempt, RaisedAlert};
use support::{Backend, on_every_backend};

const HOOK: &str = "http://127.0.0.1:9/hook";

fn target(not_before: i64) -> AlertTarget {
    AlertTarget {
        webhook: HOOK.into(),
        format: "json".into(),
        not_before,
    }
}

fn raised(id: &str, not_before: i64) -> RaisedAlert {
    RaisedAlert {
        id: id.into(),
        kind: "failing".into(),
        subject: "buzz/chop.ts".into(),
        body: "{\"title\":\"buzz/chop.ts failed its last 3 runs\"}".into(),
        targets: vec![target(not_before)],
    }
}

fn an_alert_opens_once_is_delivered_once_and_resolves_once(backend: Backend) {
    let library = backend.open();
    let ada = library
        .create_owner("ada", &secret_digest("mrk_ada"), 0)
        .unwrap();
    let bob = library
        .create_owner("bob", &secret_digest("mrk_bob"), 0)
        .unwrap();

    let first = library
        .sync_alerts(ada.id, &[raised("a1", 1_000)], &[target(1_000)], 1_000)
        .unwrap();
    assert_eq!(first.opened, vec!["a1".to_string()]);
    // Raised again (a restart re-derives it): nothing new.
    let again = library
        .sync_alerts(ada.id, &[raised("a1", 2_000)], &[target(2_000)], 2_000)
        .unwrap();
    assert!(again.opened.is_empty() && again.resolved.is_empty());
    assert!(
        library
            .due_alert_deliveries(bob.id, 9_999, 10)
            .unwrap()
            .is_empty()
    );

    let due = library.due_alert_deliveries(ada.id, 2_000, 10).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].event, AlertEvent::Open);
    assert_eq!(
        due[0].next_attempt_at, 1_000,
        "the first raise's time stands"
    );
    assert_eq!(due[0].subject, "buzz/chop.ts");
    // A failed attempt waits for its next try, and keeps why.
    library
        .note_alert_attempt(
            ada.id,
            "a1",
            AlertEvent::Open,
            HOOK,
            &DeliveryAttempt {
                delivered_at: None,
                status: Some(500),
                error: Some("500 Internal Server Error".into()),
                next_attempt_at: 5_000,
            },
        )
        .unwrap();
    assert!(
        library
            .due_alert_deliveries(ada.id, 4_999, 10)
            .unwrap()
            .is_empty()
    );
    let pending = library.alert_deliveries(ada.id, true).unwrap();
    assert_eq!(pending[0].attempts, 1);
    assert_eq!(pending[0].last_status, Some(500));
    // The streak ends before the opening got through: the resolve waits for it.
    let ended = library
        .sync_alerts(ada.id, &[], &[target(6_000)], 6_000)
        .unwrap();
    assert_eq!(ended.resolved, vec!["a1".to_string()]);
    let due = library.due_alert_deliveries(ada.id, 6_000, 10).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].event, AlertEvent::Open);
    assert_eq!(due[0].resolved_at, Some(6_000));
    library
        .note_alert_attempt(
            ada.id,
            "a1",
            AlertEvent::Open,
            HOOK,
            &DeliveryAttempt {
                delivered_at: Some(6_100),
                status: Some(200),
                error: None,
                next_attempt_at: 6_100,
            },
        )
        .unwrap();
    let due = library.due_alert_deliveries(ada.id, 6_200, 10).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].event, AlertEvent::Resolve);
    // Resolved once: syncing again resolves nothing more.
    let quiet = library
        .sync_alerts(ada.id, &[], &[target(7_000)], 7_000)
        .unwrap();
    assert!(quiet.resolved.is_empty());
    assert_eq!(library.alert_deliveries(ada.id, false).unwrap().len(), 2);
    assert!(library.alert_deliveries(bob.id, false).unwrap().is_empty());
}

fn a_resolve_in_quiet_hours_is_held_to_their_end(backend: Backend) {
    let library = backend.open();
    let ada = library
        .create_owner("ada", &secret_digest("mrk_ada"), 0)
        .unwrap();
    library
        .sync_alerts(ada.id, &[raised("a1", 0)], &[target(0)], 0)
        .unwrap();
    library
        .note_alert_attempt(
            ada.id,
            "a1",
            AlertEvent::Open,
            HOOK,
            &DeliveryAttempt {
                delivered_at: Some(10),
                status: Some(204),
                error: None,
                next_attempt_at: 10,
            },
        )
        .unwrap();
    library
        .sync_alerts(ada.id, &[], &[target(50_000)], 20)
        .unwrap();
    assert!(
        library
            .due_alert_deliveries(ada.id, 49_999, 10)
            .unwrap()
            .is_empty()
    );
    let due = library.due_alert_deliveries(ada.id, 50_000, 10).unwrap();
    assert_eq!(due[0].event, AlertEvent::Resolve);
}

on_every_backend!(
    an_alert_opens_once_is_delivered_once_and_resolves_once,
    a_resolve_in_quiet_hours_is_held_to_their_end,
);
