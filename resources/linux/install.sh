#!/bin/sh
# Install Nocturne for this user, without root: the app goes to ~/.local/lib/nocturne, the
# command to ~/.local/bin/nocturne, the applications-menu entry, the icons and the AppStream
# metadata under ~/.local/share (or $XDG_DATA_HOME).
#
#     ./install.sh               install, or update an earlier install in place
#     ./install.sh --uninstall   remove it again (the same as ~/.local/lib/nocturne/uninstall.sh)
#
# Your memory, settings and logs (~/.local/share/Nocturne, ~/.config/Nocturne,
# ~/.local/state/Nocturne) are separate folders: neither installing nor uninstalling touches them.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
prefix=${NOCTURNE_PREFIX:-"$HOME/.local"}
app="$prefix/lib/nocturne"
bindir="$prefix/bin"
data_home=${XDG_DATA_HOME:-"$HOME/.local/share"}

if [ "${1:-}" = "--uninstall" ]; then
    if [ ! -x "$app/uninstall.sh" ]; then
        echo "Nocturne is not installed in $app." >&2
        exit 1
    fi
    exec "$app/uninstall.sh"
fi
if [ "$#" -gt 0 ]; then
    echo "usage: $0 [--uninstall]" >&2
    exit 2
fi
if [ ! -x "$here/Nocturne/Nocturne" ]; then
    echo "install.sh: $here/Nocturne/Nocturne is missing; run install.sh from the unpacked archive." >&2
    exit 1
fi
case "$app" in
    *[\"\`\$\\]*)
        echo "install.sh: cannot install into $app (a desktop entry cannot name that path)." >&2
        exit 1 ;;
esac

# the app: copied beside the old one, then swapped in, so a failed copy leaves the old one
mkdir -p "$prefix/lib"
rm -rf "$app.new" "$app.old"
cp -RPp "$here/Nocturne" "$app.new"
cp -p "$here/uninstall.sh" "$app.new/uninstall.sh"
chmod 755 "$app.new/uninstall.sh"
if [ -d "$app" ]; then
    mv "$app" "$app.old"
fi
mv "$app.new" "$app"
rm -rf "$app.old"

# everything written outside the app folder is listed, so uninstall removes exactly that
list="$app/installed-files"
: > "$list"
put() {  # put SOURCE DEST MODE
    mkdir -p "$(dirname "$2")"
    cp "$1" "$2"
    chmod "$3" "$2"
    echo "$2" >> "$list"
}

mkdir -p "$bindir"
launcher=$(mktemp)
printf '#!/bin/sh\nexec "%s/Nocturne" "$@"\n' "$app" > "$launcher"
put "$launcher" "$bindir/nocturne" 755
rm -f "$launcher"

entry=$(mktemp)
sed -e "s|^Exec=.*|Exec=\"$app/Nocturne\"|" -e "s|^TryExec=.*|TryExec=$app/Nocturne|" \
    "$here/share/applications/nocturne.desktop" > "$entry"
put "$entry" "$data_home/applications/nocturne.desktop" 644
rm -f "$entry"

for icon in "$here"/share/icons/hicolor/*/apps/*; do
    rel=${icon#"$here/share/"}
    put "$icon" "$data_home/$rel" 644
done
for meta in "$here"/share/metainfo/*.xml; do
    put "$meta" "$data_home/metainfo/$(basename "$meta")" 644
done

# let the desktop notice (each is optional: a desktop without them rescans on its own)
touch "$data_home/icons/hicolor" 2>/dev/null || true
if command -v update-desktop-database >/dev/null 2>&1; then
    update-desktop-database -q "$data_home/applications" 2>/dev/null || true
fi
if command -v gtk-update-icon-cache >/dev/null 2>&1 && [ -f "$data_home/icons/hicolor/index.theme" ]; then
    gtk-update-icon-cache -q -t "$data_home/icons/hicolor" 2>/dev/null || true
fi

echo "Nocturne is installed in $app; it is in the applications menu, and the command is $bindir/nocturne."
case ":${PATH:-}:" in
    *":$bindir:"*) ;;
    *) echo "($bindir is not on your PATH: add it, or start Nocturne from the menu.)" ;;
esac
echo "To remove it: $app/uninstall.sh (your memory in $data_home/Nocturne stays)."
