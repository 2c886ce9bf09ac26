#!/bin/bash
# tests/install/setup.sh - install the build tree into $INSTALL_PREFIX (fixture install.setup)
# SPDX-License-Identifier: MIT
set -eu
case_name=install.setup
. "$HEAPTAP_SRC/tests/lib/case.sh"
case $INSTALL_PREFIX in */tests/install/prefix) ;; *) fail "refusing to clear INSTALL_PREFIX=$INSTALL_PREFIX" ;; esac
rm -rf "$INSTALL_PREFIX"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cmake --install "$HEAPTAP_BUILD" --prefix "$INSTALL_PREFIX" >"$log" 2>&1 || { show "cmake --install" "$log"; fail "cmake --install failed"; }
[ -x "$HEAPTAP" ] || fail "no $HEAPTAP after cmake --install"
echo "installed into $INSTALL_PREFIX: $(grep -c '^-- Installing' "$log") files"
