#!/usr/bin/env bash
# Is the load generator the bottleneck? Against one secantusd-rs, in one run: mongo-stress
# against the bare-driver baseline (examples/baseline.rs: same profile, documents, setup, users
# and pool; nothing measured but a counter) for insert and find at 50 and 500 users, alternating
# ROUNDS times, with throughput, client CPU seconds per 10,000 operations, and peak RSS; then RSS
# with 10,000 virtual users at 500/s, and the cost of the sample log, of the resource sampler and
# of the interval log and of --server-metrics (a real node_exporter, a hanging endpoint); then (scripts/bench-merge.py) merging 100 synthetic parts of a one-hour,
# 4-group run with 1 s intervals, against its targets (10 s, 500 MB).
# Every number it prints is a ratio or reading from this run. See docs/performance.md.
# and a template profile (scripts/bench-template.toml) against the baseline sending the same
# generated commands.
# Usage: scripts/bench.sh [ROUNDS] [DURATION] [all|template|costs|hlog|monitor|live|merge]   (defaults: 3 10s all)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cargo build --release --quiet --bin mongo-stress --example baseline --example synth_parts --example exporter_cost
if [ "${3:-all}" != merge ]; then python3 scripts/bench.py "$@"; fi
if [ "${3:-all}" = merge ] || [ "${3:-all}" = all ]; then python3 scripts/bench-merge.py; fi
