#!/bin/sh
# Test helper: with_keys.sh KEYS_TOOL "KEY..." COMMAND... runs COMMAND (live_camera) and types the
# keys into its window, one a second, with ks-sample-x11-keys. Exit status: COMMAND's, or 1 if
# the keys could not be sent.
keys_tool=$1
keys=$2
shift 2
"$@" &
pid=$!
# shellcheck disable=SC2086 # the key list is split on purpose
"$keys_tool" "Kestrel live camera" 1000 $keys
keys_rc=$?
wait "$pid"
rc=$?
[ "$keys_rc" -eq 0 ] || exit 1
exit "$rc"
