#!/bin/sh
# A stand-in for `d2k run REQ --out TRACES` in the service tests (the queue, not the pipeline):
# sleeps $D2K_STUB_SLEEP seconds (default 0.05), appends "<job id> <pid>" to $D2K_STUB_LOG (so a
# test counts how often each job ran) and writes one PASSED trace. Exits $D2K_STUB_EXIT (default 0).
[ "$1" = run ] && [ "$3" = --out ] || { echo "usage: stub run REQ --out TRACES" >&2; exit 2; }
job=$(basename "$(dirname "$PWD")")
[ -n "$D2K_STUB_LOG" ] && echo "$job start $$" >> "$D2K_STUB_LOG"
echo "stub: evaluating $job"
sleep "${D2K_STUB_SLEEP:-0.05}"
printf '{"task":"stub","target":"solution","workload":{"uuid":"w0","role":"bench"},"status":"PASSED","message":"%s"}\n' "$job" > "$4"
[ -n "$D2K_STUB_LOG" ] && echo "$job end $$" >> "$D2K_STUB_LOG"
exit "${D2K_STUB_EXIT:-0}"
