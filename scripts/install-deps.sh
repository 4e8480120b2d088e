#!/usr/bin/env bash
# Installs the Debian packages tinfer builds with (only those missing). Needs root or sudo.
set -euo pipefail
pkgs=(cmake make gcc pkg-config libcjson-dev libpcre2-dev libstb-dev python3 python3-pip python3-venv unzip
      clang libclang-rt-dev libmicrohttpd-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
