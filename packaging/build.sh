#!/usr/bin/env bash
# Build the frozen one-folder bundle from a clean clone, then smoke-test it offscreen.
# Usage: packaging/build.sh [--deb]
#   -> dist/llm-planner/llm-planner (exit 0 when all passed)
#   --deb: also dist/llm-planner_VERSION_amd64.deb (packaging/deb/build-deb.sh), tested in
#          a throwaway root (packaging/deb/test-deb.sh)
# Uses its own virtual environment (build/venv) so the bundle holds only what the app needs.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
python3 -m venv build/venv
build/venv/bin/pip install -q . "pyinstaller>=6.6"
build/venv/bin/pyinstaller --noconfirm --clean --log-level WARN \
  --distpath dist --workpath build/pyinstaller packaging/llm-planner.spec
exe=dist/llm-planner/llm-planner
# libpython and the standard library's extensions come with their debug sections (18 of
# libpython's 22.5 MB); only files that have a .debug_info section lose it (--strip-debug:
# symbols stay). The wheels' libraries are already stripped and are left untouched.
find dist/llm-planner -type f -name '*.so*' -print0 | while IFS= read -r -d '' lib; do
  if readelf -S -W "$lib" 2>/dev/null | grep -q '\.debug_info'; then strip --strip-debug "$lib"; fi
done
# ICU's data library (32 MB) replaced by the part Qt can use here (packaging/icu_data.py);
# the same Qt calls must give the same answers with it (packaging/icu_check.py)
build/venv/bin/python packaging/icu_data.py dist/llm-planner/_internal
icu=$(ls dist/llm-planner/_internal/PySide6/Qt/lib/libicudata.so.* 2>/dev/null | head -1 || true)
if [ -n "$icu" ]; then
  QT_QPA_PLATFORM=offscreen build/venv/bin/python packaging/icu_check.py > build/icu-full.txt
  LD_PRELOAD="$PWD/$icu" QT_QPA_PLATFORM=offscreen build/venv/bin/python packaging/icu_check.py \
    > build/icu-reduced.txt
  diff build/icu-full.txt build/icu-reduced.txt
  echo "icu check: the reduced ICU data answers Qt's calls as the full data does"
fi
echo "bundle: $(du -sh dist/llm-planner | cut -f1) in dist/llm-planner"
echo "largest files:"
find dist/llm-planner -type f -size +1M -printf '%s %P\n' | sort -rn | head -15 \
  | awk '{printf "  %6.1f MB  %s\n", $1 / 1e6, $2}'
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
if [ "${1:-}" = "--deb" ]; then
  deb=$(bash packaging/deb/build-deb.sh dist/llm-planner)
  bash packaging/deb/test-deb.sh "$deb"
fi
