#!/usr/bin/env bash
# Build the Debian/Ubuntu package from the frozen bundle (packaging/build.sh makes it).
# Usage: packaging/deb/build-deb.sh [BUNDLE_DIR]   (default dist/llm-planner)
#   prints the path of dist/llm-planner_VERSION_amd64.deb
# Layout: the bundle in /opt/llm-planner; /usr/bin/llm-planner and llm-planner-gui link to
# it; the launcher entry, the icons (app and scenario-file type) and the shared-mime-info
# type of *.llmplan.json under /usr/share. No maintainer scripts: dpkg's triggers of
# shared-mime-info, desktop-file-utils and the icon theme refresh their caches on install
# and removal. User data (scenarios, library, settings: platformdirs under $HOME) is never
# in the package, so `apt remove` leaves it alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bundle=$(cd "${1:-$root/dist/llm-planner}" && pwd)
linux="$root/packaging/linux"
version=$(LLM_PLANNER_HOME=$(mktemp -d) "$bundle/llm-planner" --version | awk '{print $2}')
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg="$stage/llm-planner"
mkdir -p "$pkg/DEBIAN" "$pkg/opt" "$pkg/usr/bin" "$pkg/usr/share/applications" \
  "$pkg/usr/share/mime/packages" "$pkg/usr/share/doc/llm-planner"
cp -a "$bundle" "$pkg/opt/llm-planner"
ln -s /opt/llm-planner/llm-planner "$pkg/usr/bin/llm-planner"
ln -s /opt/llm-planner/llm-planner "$pkg/usr/bin/llm-planner-gui"
install -m 644 "$linux/io.github.llm_planner.LLMPlanner.desktop" "$pkg/usr/share/applications/"
install -m 644 "$linux/llm-planner-mime.xml" "$pkg/usr/share/mime/packages/llm-planner.xml"
for png in "$root"/resources/icons/llm-planner-*.png; do
  size=$(basename "$png" .png); size=${size##*-}
  for kind in apps mimetypes; do
    mkdir -p "$pkg/usr/share/icons/hicolor/${size}x${size}/$kind"
  done
  install -m 644 "$png" "$pkg/usr/share/icons/hicolor/${size}x${size}/apps/llm-planner.png"
  install -m 644 "$png" \
    "$pkg/usr/share/icons/hicolor/${size}x${size}/mimetypes/application-x-llmplan+json.png"
done
mkdir -p "$pkg/usr/share/icons/hicolor/scalable/apps"
install -m 644 "$root/resources/llm-planner.svg" "$pkg/usr/share/icons/hicolor/scalable/apps/"
printf 'LLM Planner %s\nLicense: MIT\n' "$version" > "$pkg/usr/share/doc/llm-planner/copyright"
size_kb=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@SIZE_KB@/$size_kb/" "$here/control.in" \
  > "$pkg/DEBIAN/control"
chmod -R u+rwX,go+rX,go-w "$pkg"
out="$root/dist/llm-planner_${version}_amd64.deb"
# gzip: every dpkg reads it, and it packs 140 MB in seconds (xz takes a minute here)
dpkg-deb --root-owner-group -Zgzip -z6 --build "$pkg" "$out" >/dev/null
echo "$out"
