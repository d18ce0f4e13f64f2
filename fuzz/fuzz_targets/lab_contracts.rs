//! What an agent or a file hands the Skill Lab never panics it: any JSON read as each of the
//! contracts (`architecture_decision`, `change_draft`, `architecture_plan`, `change_bundle`),
//! planned and bound when it parses, admitted in every mode; and any JSON checked as a
//! `runx.receipt.v1` receipt.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{Mode, admit_change, bind_change, plan_change, validate_change_contract};
use mindrune_core::{ArchitectureDecision, ArchitecturePlan, ChangeBundle, ChangeDraft, parse_contract};
use mindrune_core::{VerifyOptions, check_receipt_integrity, verify_receipt};
use serde_json::Value;

const BASE: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let _ = check_receipt_integrity(&value);
    let _ = verify_receipt(&value, &VerifyOptions::default());
    if let Ok(decision) = parse_contract::<ArchitectureDecision>("architecture_decision", &value) {
        let _ = plan_change(BASE, decision);
    }
    if let Ok(plan) = parse_contract::<ArchitecturePlan>("architecture_plan", &value) {
        if let Some(draft) = value.get("draft") {
            if let Ok(draft) = parse_contract::<ChangeDraft>("change_draft", draft) {
                let _ = bind_change(&plan, draft);
            }
        }
    }
    if let Ok(bundle) = parse_contract::<ChangeBundle>("change_bundle", &value) {
        for mode in [Mode::Build, Mode::Improve, Mode::Harness] {
            let _ = validate_change_contract(&bundle, mode, BASE);
            let _ = admit_change(&bundle, mode, |path| path.len() % 2 == 0);
        }
    }
});
