#!/usr/bin/env bash
# Is the load generator the bottleneck? Against one secantusd-rs, in one run: mongo-stress
# against the bare driver (examples/driver.rs: the driver's own calls on the same commands,
# documents built with rawdoc!, one task per user, nothing measured) for insert and find at 50
# and 500 users and the template profile (scripts/bench-template.toml), alternating ROUNDS times,
# with throughput (medians), client CPU seconds per 10,000 operations and peak RSS; then
# instructions per operation under callgrind (valgrind; repeatable whatever else the machine
# does) for insert, find, the template mix and the open loop, every log on, with the per-second
# costs (and the resource sampler's) measured apart, and for a coordinated part against the same
# part alone (`part`); then open loop at 10,000/s with 10^4, 10^5
# and 10^6 virtual users (peak RSS, counts against samples.tsv and the server); then the cost of
# the sample log, of the resource sampler, of the interval log, of --server-metrics (a real
# node_exporter, a hanging endpoint), of the live metrics and of the live page (no viewer and 5);
# then (scripts/bench-merge.py)
# merging 100 synthetic parts of a one-hour, 4-group run with 1 s intervals (10 s, 500 MB).
# Every number it prints is a ratio or reading from this run. See docs/performance.md.
# Usage: scripts/bench.sh [ROUNDS] [DURATION] [all|parity|template|instructions|genny|part|users|costs|hlog|monitor|live|page|merge]
#        (defaults: 3 10s all)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cargo build --release --quiet --bin mongo-stress --example driver --example synth_parts --example exporter_cost --example live_cost
if [ "${3:-all}" != merge ]; then python3 scripts/bench.py "$@"; fi
if [ "${3:-all}" = merge ] || [ "${3:-all}" = all ]; then python3 scripts/bench-merge.py; fi
