#!/usr/bin/env bash
# Installs spillway's build dependencies with apt when they are missing.
# Idempotent and silent when everything is already there.
set -euo pipefail

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in gcc make pkg-config check libncurses-dev libmicrohttpd-dev tmux; do
    have_pkg "$pkg" || need+=("$pkg")
done
[ ${#need[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
    echo "spillway setup: missing packages (${need[*]}) and no apt-get to install them" >&2
    exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "spillway setup: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
