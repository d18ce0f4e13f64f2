#!/bin/sh
# An example skill fixer for MindRune's playbook skills, and the one the tests use.
#
# MindRune starts the fixer in the background once per report (`fixer = "…/fixer.sh"` in the
# workspace's playbooks.toml). It is handed pointers only, in its environment:
#
#   MINDRUNE_SKILL_DIR    the skill's folder (SKILL.md, history/)
#   MINDRUNE_SKILL        the skill's name
#   MINDRUNE_REVISION     the revision the assistant reported
#   MINDRUNE_STEP         the step reported
#   MINDRUNE_TURN_RECORD  where the record of that turn is on disk (may be empty)
#   MINDRUNE_REPORT       the report's id
#   MINDRUNE_WORKSPACE    the workspace
#   MINDRUNE_BIN          the mindrune program
#   MINDRUNE_FIXER_TOKEN  the report's token; `mindrune refine revise` reads it from here, and a
#                         revision without it is refused (the assistant never sees it)
#
# It reads the record itself and ends in one of two ways: it stops and says why (`mindrune
# refine stop`), or it files one corrected SKILL.md with the fingerprint of the exact file it
# read (`mindrune refine revise`). It never writes into skills/ itself.
#
# A real fixer is usually an LLM CLI given these pointers. This one stands in for it with a
# fixed convention for what it reads in the turn record (a text file):
#
#   followed: 1 2 3            the steps the assistant actually followed, in order
#   correct step N: TEXT       what step N should have said (the human's correction)
#
# If the reported step is not among the followed ones, the procedure was not followed: it stops.
# If the record says nothing about the step, it cannot decide: it stops. Otherwise it rewrites
# that step's `do:` line and files the revision.
set -eu

bin=${MINDRUNE_BIN:-mindrune}
skill_file=$MINDRUNE_SKILL_DIR/SKILL.md
record=${MINDRUNE_TURN_RECORD:-}

stop() {
  "$bin" refine --workspace "$MINDRUNE_WORKSPACE" stop --report "$MINDRUNE_REPORT" --reason "$1"
  exit 0
}

# The fingerprint first: the revision is bound to exactly the file read here.
fingerprint="sha256:$(sha256sum "$skill_file" | cut -d' ' -f1)"

if [ -z "$record" ] || [ ! -f "$record" ]; then
  stop "there is no record of the turn to read, so a wrong procedure cannot be told from one that was not followed"
fi

followed=$(sed -n 's/^followed: *//p' "$record" | tail -n 1)
case " $followed " in
  *" $MINDRUNE_STEP "*) ;;
  *) stop "the record shows step $MINDRUNE_STEP was not followed (followed: ${followed:-none}); the procedure was not the problem" ;;
esac

fix=$(sed -n "s/^correct step $MINDRUNE_STEP: *//p" "$record" | tail -n 1)
if [ -z "$fix" ]; then
  stop "the record does not show what step $MINDRUNE_STEP should have done"
fi

revision=$(mktemp)
trap 'rm -f "$revision"' EXIT
# Rewrite the do: line of the reported step (the Nth `- do:` line of the frontmatter), quoting
# the new text for YAML.
awk -v n="$MINDRUNE_STEP" -v fix="$fix" '
  BEGIN { gsub(/\\/, "\\\\", fix); gsub(/"/, "\\\"", fix) }
  /^---[[:space:]]*$/ { fences++ }
  fences == 1 && /^[[:space:]]*- do:/ {
    count++
    if (count == n) {
      match($0, /^[[:space:]]*- do:/)
      print substr($0, 1, RLENGTH) " \"" fix "\""
      next
    }
  }
  { print }
' "$skill_file" >"$revision"

"$bin" refine --workspace "$MINDRUNE_WORKSPACE" revise --report "$MINDRUNE_REPORT" \
  --file "$revision" --fingerprint "$fingerprint"
