#!/usr/bin/env bash
# Build the frozen one-folder bundle from a clean clone, then smoke-test it offscreen.
# Usage: packaging/build.sh        -> dist/llm-planner/llm-planner (exit 0 when all passed)
# Uses its own virtual environment (build/venv) so the bundle holds only what the app needs.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
python3 -m venv build/venv
build/venv/bin/pip install -q . "pyinstaller>=6.6"
build/venv/bin/pyinstaller --noconfirm --clean --log-level WARN \
  --distpath dist --workpath build/pyinstaller packaging/llm-planner.spec
exe=dist/llm-planner/llm-planner
echo "bundle: $(du -sh dist/llm-planner | cut -f1) in dist/llm-planner"
# Smoke tests of the frozen executable, from outside the source tree, offscreen:
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LLM_PLANNER_HOME="$tmp/home" QT_QPA_PLATFORM=offscreen
(cd "$tmp" && "$OLDPWD/$exe" --version)
(cd "$tmp" && "$OLDPWD/$exe" report --json > report.json && grep -q '"params_total"' report.json)
(cd "$tmp" && "$OLDPWD/$exe" report --save s.llmplan.json >/dev/null 2>&1 || true)
(cd "$tmp" && timeout 120 "$OLDPWD/$exe" --smoke-test)
# with an unusable display the frozen app must print the report, not abort in Qt
(cd "$tmp" && env -u QT_QPA_PLATFORM -u WAYLAND_DISPLAY DISPLAY=:93 timeout 120 \
  "$OLDPWD/$exe" > no-display.txt 2>&1 && grep -q "Compute budget" no-display.txt)
echo "frozen smoke test passed: $exe"
