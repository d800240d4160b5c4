#!/usr/bin/env bash
# A SIGHUP reload of --state while upsizes are decided, one replica of --reserve-upsizes (issue 17
# item 3; docs/serve.md "Reservations and reloads"), run by ctest from the repository root:
#   bash tests/cli/reload_race.sh path/to/tally
# Two short rounds of tests/live/reload_race.py: 8 upsizes fill a queue, a state showing them enacted
# arrives with a SIGHUP while 8 large upsize reviews are being decided: none may be admitted (before
# the fix 1-2 of them were, every round). `make ci-extra` runs 30 rounds of 16.
set -u
TALLY=$(realpath "${1:?usage: reload_race.sh path/to/tally}")
for tool in python3 openssl; do
  command -v "$tool" >/dev/null || { echo "reload_race.sh: $tool is missing (scripts/deps.sh test)"; exit 1; }
done
timeout 120 python3 tests/live/reload_race.py "$TALLY" --rounds 2 --inflight 8 --pad 400000
