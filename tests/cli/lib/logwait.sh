# tests/cli/lib/logwait.sh: waiting for a line of `tally serve`'s log, sourced by the tests that read it.
# serve's log thread writes a line a few milliseconds after the event (src/logq.c; at once when the
# log is quiet), so a check that follows a request polls for it instead of reading the file once.
#   log_has FILE PATTERN: grep -q PATTERN FILE succeeds within 5 s.
log_has() {
  local i
  for i in $(seq 50); do
    grep -q -- "$2" "$1" && return 0
    sleep 0.1
  done
  return 1
}
