#!/usr/bin/env bash
# Remove what install-desktop.sh installed for the current user. Scenarios are untouched.
set -euo pipefail
data=${XDG_DATA_HOME:-$HOME/.local/share}
rm -f "$data/applications/io.github.llm_planner.LLMPlanner.desktop" \
      "$data/mime/packages/llm-planner.xml"
find "$data/icons/hicolor" \( -name 'llm-planner.png' -o -name 'llm-planner.svg' \
  -o -name 'application-x-llmplan+json.png' \) -delete 2>/dev/null || true
command -v update-mime-database >/dev/null && update-mime-database "$data/mime" || true
command -v update-desktop-database >/dev/null && update-desktop-database "$data/applications" || true
echo "removed LLM Planner's launcher entry, icon and file type (scenarios are kept)"
