#!/usr/bin/env bash
# Install the .deb, run the installed app, remove it; fail on any step.
# Usage: packaging/deb/test-deb.sh PACKAGE.deb [--system]
#   default: a throwaway root (dpkg --root, no root rights needed, nothing on this machine
#            changes; the package's Depends are not checked there)
#   --system: on this machine with apt (as root, CI): Depends resolved, /usr/bin on PATH
# Checks: the files land under /opt and /usr/share (launcher entry, icon, MIME type); the
# installed app's --version, report --json and --smoke-test (offscreen); removal deletes
# the app and keeps the user's scenarios.
set -euo pipefail
deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mode=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export QT_QPA_PLATFORM=offscreen HOME="$work/home" LLM_PLANNER_HOME="$work/home/planner"
mkdir -p "$LLM_PLANNER_HOME"
scenario="$LLM_PLANNER_HOME/mine.llmplan.json"
if [ "$mode" = "--system" ]; then
  target=""
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >/dev/null
  app=llm-planner
  [ "$(command -v llm-planner)" = /usr/bin/llm-planner ]
else
  target="$work/root"
  mkdir -p "$target/var/lib/dpkg/info" "$target/var/lib/dpkg/updates"
  touch "$target/var/lib/dpkg/status"
  dpkg --root="$target" --force-not-root --force-depends --log=/dev/null -i "$deb" >/dev/null
  app="$target/opt/llm-planner/llm-planner"
fi
for f in /opt/llm-planner/llm-planner /usr/share/applications/io.github.llm_planner.LLMPlanner.desktop \
  /usr/share/mime/packages/llm-planner.xml /usr/share/icons/hicolor/48x48/apps/llm-planner.png \
  /usr/share/icons/hicolor/scalable/apps/llm-planner.svg; do
  [ -e "$target$f" ] || { echo "test-deb: $f not installed" >&2; exit 1; }
done
grep -q '^MimeType=application/x-llmplan+json;' \
  "$target/usr/share/applications/io.github.llm_planner.LLMPlanner.desktop"
[ "$(readlink "$target/usr/bin/llm-planner-gui")" = /opt/llm-planner/llm-planner ]
(cd "$work" && "$app" --version | grep -q '^llm-planner ')
(cd "$work" && "$app" report --json > report.json && grep -q '"params_total"' report.json)
(cd "$work" && "$app" report --save "$scenario" >/dev/null)
(cd "$work" && timeout 120 "$app" --smoke-test)
(cd "$work" && timeout 120 "$app" "$scenario" --smoke-test)  # a double-clicked file
if [ "$mode" = "--system" ]; then
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq llm-planner >/dev/null
else
  dpkg --root="$target" --force-not-root --log=/dev/null -r llm-planner >/dev/null
fi
for f in /opt/llm-planner /usr/bin/llm-planner /usr/share/applications/io.github.llm_planner.LLMPlanner.desktop; do
  [ ! -e "$target$f" ] || { echo "test-deb: $f left after removal" >&2; exit 1; }
done
[ -s "$scenario" ] || { echo "test-deb: the user's scenario was removed" >&2; exit 1; }
echo "deb test passed (${mode:-throwaway root}): $(basename "$deb") installs, runs, uninstalls"
