#!/usr/bin/env bash
# Install the LLM Planner desktop entry, icon and scenario-file type for the current user,
# so that the app appears in the launcher and double-clicking a *.llmplan.json opens it.
# Usage: packaging/linux/install-desktop.sh [PATH_TO_EXECUTABLE]
#   PATH_TO_EXECUTABLE: the frozen bundle's llm-planner-gui (default: the one on PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
exe=${1:-$(command -v llm-planner-gui || true)}
if [ -z "$exe" ]; then
  echo "install-desktop: no llm-planner-gui found; pass the executable's path" >&2; exit 2
fi
exe=$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")
mkdir -p "$data/applications" "$data/mime/packages"
sed -e "s|^Exec=.*|Exec=\"$exe\" %f|" -e "s|^TryExec=.*|TryExec=$exe|" \
  "$here/io.github.llm_planner.LLMPlanner.desktop" \
  > "$data/applications/io.github.llm_planner.LLMPlanner.desktop"
cp "$here/llm-planner-mime.xml" "$data/mime/packages/llm-planner.xml"
for png in "$root"/resources/icons/llm-planner-*.png; do
  size=$(basename "$png" .png); size=${size##*-}
  mkdir -p "$data/icons/hicolor/${size}x${size}/apps"
  cp "$png" "$data/icons/hicolor/${size}x${size}/apps/llm-planner.png"
  mkdir -p "$data/icons/hicolor/${size}x${size}/mimetypes"
  cp "$png" "$data/icons/hicolor/${size}x${size}/mimetypes/application-x-llmplan+json.png"
done
mkdir -p "$data/icons/hicolor/scalable/apps"
cp "$root/resources/llm-planner.svg" "$data/icons/hicolor/scalable/apps/llm-planner.svg"
command -v update-mime-database >/dev/null && update-mime-database "$data/mime" || true
command -v update-desktop-database >/dev/null && update-desktop-database "$data/applications" || true
command -v xdg-mime >/dev/null && \
  xdg-mime default io.github.llm_planner.LLMPlanner.desktop application/x-llmplan+json || true
echo "installed LLM Planner for ${USER:-$(id -un)} (launcher entry, icon, *.llmplan.json type) -> $exe"
