// The weather-forecast finalizer (the graph's `validate` step).
//
// The agent interprets provider evidence; this module decides whether that interpretation may
// be sealed as a forecast packet. It checks the draft against the supplied evidence only: the
// requested location and horizon, the provider, the generation timestamp, the provenance refs
// and every period name must come from the evidence or the request. A draft that invents any of
// them is downgraded to `needs_more_evidence` with no periods and `confidence: not_available`;
// a refusal passes through as a refusal. Provider identity and refs in the result are always
// copied from the evidence, never from the draft. The result holds exactly the declared outputs.
//
// Timestamps are compared as instants through `Date.parse`, the way Runx's worker offers it
// (its clock is pinned at 0, so the module never asks what time it is): a draft may write the
// evidence's generation time in another ISO form, but not another time.

const DECISIONS = new Set(["ready", "needs_input", "needs_more_evidence", "refused"]);

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function text(value) {
  return typeof value === "string" ? value : "";
}

function strings(value) {
  if (!Array.isArray(value)) return [];
  const out = [];
  for (const item of value) {
    if (typeof item === "string" && !out.includes(item)) out.push(item);
  }
  return out;
}

function periods(value) {
  if (!Array.isArray(value)) return [];
  return value.filter(isObject).map((period) => {
    const out = {};
    for (const key of ["name", "label", "forecast", "wind"]) {
      if (typeof period[key] === "string") out[key] = period[key];
    }
    return out;
  });
}

function evidenceProblems(evidence) {
  const problems = [];
  if (text(evidence.provider) === "") problems.push("evidence has no provider");
  if (text(evidence.generated_at) === "") {
    problems.push("evidence has no generated_at");
  } else if (Number.isNaN(Date.parse(evidence.generated_at))) {
    problems.push("evidence generated_at is not a timestamp");
  }
  if (!Array.isArray(evidence.periods) || evidence.periods.length === 0) {
    problems.push("evidence has no forecast periods");
  }
  if (strings(evidence.source_refs).length + strings(evidence.receipt_refs).length === 0) {
    problems.push("evidence has neither a source_ref nor a receipt_ref");
  }
  return problems;
}

function draftProblems(draft, evidence, location, horizon) {
  const problems = [];
  const packet = isObject(draft.forecast_packet) ? draft.forecast_packet : {};
  const provenance = isObject(draft.provider_evidence) ? draft.provider_evidence : {};
  const notes = isObject(draft.receipt_notes) ? draft.receipt_notes : {};
  if (text(draft.location) !== location) problems.push("draft location differs from the request");
  if (text(draft.horizon) !== horizon) problems.push("draft horizon differs from the request");
  if (text(provenance.provider) !== text(evidence.provider)) {
    problems.push("draft provider differs from the evidence");
  }
  const sourceRefs = strings(evidence.source_refs);
  const receiptRefs = strings(evidence.receipt_refs);
  for (const ref of strings(provenance.source_refs)) {
    if (!sourceRefs.includes(ref)) problems.push(`source_ref ${ref} is not in the evidence`);
  }
  for (const ref of strings(provenance.receipt_refs)) {
    if (!receiptRefs.includes(ref)) problems.push(`receipt_ref ${ref} is not in the evidence`);
  }
  const drafted = Date.parse(text(packet.generated_at));
  if (Number.isNaN(drafted) || drafted !== Date.parse(text(evidence.generated_at))) {
    problems.push("draft generated_at differs from the evidence");
  }
  const known = new Set(periods(evidence.periods).map((period) => period.name));
  for (const period of periods(packet.periods)) {
    if (!known.has(period.name)) {
      problems.push(`period ${JSON.stringify(period.name ?? "")} is not in the evidence`);
    }
  }
  if (notes.authority !== "context-only" || notes.mutation !== false) {
    problems.push("draft claims more than context-only authority");
  }
  return problems;
}

export default function validate(inputs) {
  const evidence = isObject(inputs.forecast_evidence) ? inputs.forecast_evidence : {};
  const draft = isObject(inputs.forecast_draft) ? inputs.forecast_draft : {};
  const location = text(inputs.location);
  const horizon = text(inputs.horizon);
  const packet = isObject(draft.forecast_packet) ? draft.forecast_packet : {};
  const claimed = DECISIONS.has(draft.decision) ? draft.decision : "needs_more_evidence";

  const result = {
    decision: claimed,
    location,
    horizon,
    forecast_packet: {
      summary: text(packet.summary),
      periods: periods(packet.periods),
      hazards: strings(packet.hazards),
      confidence: text(packet.confidence),
      generated_at: text(evidence.generated_at),
    },
    provider_evidence: {
      provider: text(evidence.provider),
      source_refs: strings(evidence.source_refs),
      receipt_refs: strings(evidence.receipt_refs),
    },
    safety_notes: strings(draft.safety_notes),
    stop_conditions: strings(draft.stop_conditions),
    receipt_notes: { authority: "context-only", mutation: false },
  };

  if (claimed === "refused") {
    return result;
  }
  const problems =
    claimed === "ready"
      ? [...evidenceProblems(evidence), ...draftProblems(draft, evidence, location, horizon)]
      : [];
  if (claimed !== "ready" || problems.length > 0) {
    result.decision = claimed === "needs_input" ? "needs_input" : "needs_more_evidence";
    result.forecast_packet.periods = [];
    result.forecast_packet.confidence = "not_available";
    result.stop_conditions = [...result.stop_conditions, ...problems];
  }
  return result;
}
