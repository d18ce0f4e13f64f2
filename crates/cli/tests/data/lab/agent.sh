#!/bin/sh
# A scripted Skill Lab agent for the `mindrune lab` integration tests.
#
# Usage (as --agent-cmd): sh agent.sh ANSWERS_DIR [REQUESTS_DIR]
#
# `mindrune lab` runs this once per agent act, with the act's JSON request on stdin and
# MINDRUNE_LAB_ACT naming the act (skill-lab-architecture or skill-lab-author). The script
# prints ANSWERS_DIR/<act>.json, the canned answer ({"architecture_decision": ...} or
# {"change_draft": ...}); with no answer file for the act it prints nothing, which the lab
# reads as "no answer" (the run stops as needs_agent). When REQUESTS_DIR is given, the request
# is kept there as <act>.request.json, so a test can check what the agent was asked.
set -eu
answers=$1
requests=${2:-}
act=${MINDRUNE_LAB_ACT:?MINDRUNE_LAB_ACT is not set}
case $act in
skill-lab-architecture | skill-lab-author) ;;
*)
    echo "agent.sh: unknown act $act" >&2
    exit 64
    ;;
esac
if [ -n "$requests" ]; then
    cat >"$requests/$act.request.json"
else
    cat >/dev/null
fi
if [ -f "$answers/$act.json" ]; then
    cat "$answers/$act.json"
fi
