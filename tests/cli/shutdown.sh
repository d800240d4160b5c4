#!/usr/bin/env bash
# SIGTERM with a request in flight (issue 17 item 6; docs/serve.md "Stopping"), run by ctest from the
# repository root:
#   bash tests/cli/shutdown.sh path/to/tally
# tests/live/shutdown.py: during the grace period a new client is refused at once, the request
# already in flight is answered 200, and serve exits 0. Without the shutdown() of the listening
# socket the new client is accepted into the kernel's backlog and hangs instead (checked).
set -u
TALLY=$(realpath "${1:?usage: shutdown.sh path/to/tally}")
for tool in python3 openssl; do
  command -v "$tool" >/dev/null || { echo "shutdown.sh: $tool is missing (scripts/deps.sh test)"; exit 1; }
done
timeout 90 python3 tests/live/shutdown.py "$TALLY"
