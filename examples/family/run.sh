#!/usr/bin/env bash
# Records a day of tool calls of an example family of three rs-sdk avatars (buzz, pickles,
# rnchk; owner ada) into a fresh library and prints what MindRune made of them: which runs
# counted, which version each ran, and the 0–1000 score that follows; then the turn ends, and
# rnchk's family-skills/ shows what its siblings shared with it.
#
# With `serve` (`./examples/family/run.sh serve`), it then starts the server on that library
# (`mindrune serve`, embedded SQLite) and prints how to log in to the owner's dashboard and the
# operator's console; Ctrl-C stops it. Set ADDR to listen elsewhere than 127.0.0.1:7878.
#
# The example files are copied to a temporary folder first, so the repository is never changed.
# Set MINDRUNE to a built binary to skip `cargo run`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${MINDRUNE:-}" ]; then
  mindrune() { "$MINDRUNE" "$@"; }
else
  # The first build takes minutes: cargo's own progress shows on the terminal.
  (cd "$here/../.." && cargo build -p mindrune)
  bin="$here/../../target/debug/mindrune"
  mindrune() { "$bin" "$@"; }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -R "$here/workspace" "$work/workspace"
export MINDRUNE_HOME="$work/library"

mindrune init >/dev/null
owner_key=$(mindrune owner add ada | sed -n 's/.*: \(mrk_[0-9a-f]*\)$/\1/p')
for bot in buzz pickles rnchk; do
  mindrune agent add "$bot" --owner ada --workspace "$work/workspace/$bot" >/dev/null
done

echo "== Morning: $(wc -l <"$here/morning.jsonl" | tr -d ' ') tool calls"
mindrune record "$here/morning.jsonl" 2> >(sed "s|$here/||" >&2)
echo
echo "== Noon: buzz edits chop-oaks.ts (a new version); pickles copies mine-iron.ts to mine-iron-fast.ts;"
echo "   buzz and rnchk write Share: lines in their lab logs"
cp -R "$here/afternoon/." "$work/workspace/"
echo
echo "== Afternoon: $(wc -l <"$here/afternoon.jsonl" | tr -d ' ') tool calls"
mindrune record "$here/afternoon.jsonl" 2> >(sed "s|$here/||" >&2)
echo
echo "== mindrune skills"
mindrune skills
echo
echo "== mindrune skill show buzz/chop-oaks"
mindrune skill show buzz/chop-oaks
echo
echo "== The turn ends for each avatar"
for bot in buzz pickles rnchk; do
  mindrune turn-end "$bot" | sed "s|$work/||"
done
echo
echo "== What rnchk's siblings shared with it: workspace/rnchk/family-skills/"
(cd "$work/workspace/rnchk/family-skills" && find . -type f ! -name '.*' | sed 's|^\./|  |' | sort)
echo
echo "== family-skills/INDEX.md"
cat "$work/workspace/rnchk/family-skills/INDEX.md"
echo
echo "== family-skills/LESSONS.md"
cat "$work/workspace/rnchk/family-skills/LESSONS.md"

if [ "${1:-}" = serve ]; then
  addr=${ADDR:-127.0.0.1:7878}
  operator=$(mindrune token operator)
  echo
  echo "== mindrune serve"
  echo "   dashboard  http://$addr/dashboard   owner: ada   key: $owner_key"
  echo "   console    http://$addr/console     operator token: $operator"
  echo "   runners    mindrune runner --server http://$addr --agent buzz --workspace … --token \"\$(mindrune token issue buzz)\""
  echo "   (MINDRUNE_HOME=$MINDRUNE_HOME; Ctrl-C stops the server and removes this example library)"
  mindrune serve --addr "$addr"
fi
