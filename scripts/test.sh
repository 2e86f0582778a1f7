#!/usr/bin/env bash
# Runs the whole test suite: unit tests, binary tests, and live tests against a real server.
# Installs the server first if it is missing (idempotent; see scripts/install-server.sh).
# MONGO_STRESS_TEST_URI=mongodb://... runs the live tests against that server instead;
# MONGO_STRESS_SKIP_LIVE=1 skips them (they fail, never skip, without one of the two).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MONGO_STRESS_TEST_URI:-}" ] && [ "${MONGO_STRESS_SKIP_LIVE:-}" != "1" ]; then
  scripts/install-server.sh
fi
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
# The second reader of latency.hlog in tests/live_intervals.rs.
python3 -c "import hdrh" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check hdrhistogram
cargo test --all-targets "$@"
