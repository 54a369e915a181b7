#!/bin/sh
# Remove Nocturne as install.sh installed it: the app folder this script is in, and the files
# install.sh listed in it (the command, the applications-menu entry, the icons, the metadata).
#
# Your memory, settings and logs (~/.local/share/Nocturne, ~/.config/Nocturne,
# ~/.local/state/Nocturne) are not part of the install and are left exactly as they are.
set -eu

app=$(cd "$(dirname "$0")" && pwd)
list="$app/installed-files"
if [ ! -f "$list" ] || [ ! -x "$app/Nocturne" ]; then
    echo "uninstall.sh: $app is not a Nocturne installed by install.sh; nothing removed." >&2
    exit 1
fi

while IFS= read -r file; do
    case "$file" in
        /*) rm -f "$file" ;;
    esac
done < "$list"
cd /
rm -rf "$app"

data_home=${XDG_DATA_HOME:-"$HOME/.local/share"}
if command -v update-desktop-database >/dev/null 2>&1 && [ -d "$data_home/applications" ]; then
    update-desktop-database -q "$data_home/applications" 2>/dev/null || true
fi
echo "Nocturne is removed. Your memory in $data_home/Nocturne was left as it is."
