#!/bin/sh
# expect_exit.sh CODE REGEX COMMAND...: passes when COMMAND exits with CODE and its output
# (stdout and stderr together) matches the extended regular expression REGEX. ctest's
# PASS_REGULAR_EXPRESSION ignores the exit code, which is half of what these tests check.
code=$1
re=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$code" ]; then
  echo "expect_exit: exit code $rc, expected $code"
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$re"; then
  echo "expect_exit: output does not match: $re"
  exit 1
fi
