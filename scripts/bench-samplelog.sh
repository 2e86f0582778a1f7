#!/usr/bin/env bash
# What the per-operation sample log costs: throughput of the same insert workload with and
# without it (--no-samples), alternated ROUNDS times against one server, in one run.
# Usage: scripts/bench-samplelog.sh [ROUNDS] [DURATION] [THREADS]   (defaults: 3 10s 50)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"; DURATION="${2:-10s}"; THREADS="${3:-50}"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cargo build --release --quiet
BIN=target/release/mongo-stress
SERVER="${MONGO_STRESS_SERVER_BIN:-$(command -v secantusd-rs)}"

work=$(mktemp -d)
trap 'kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT
"$SERVER" --host 127.0.0.1 --port 0 --storage-path "$work/data" --log-level WARNING >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/server.log" && break; sleep 0.1; done
addr=$(grep -o "listening on [0-9.:]*" "$work/server.log" | awk '{print $3}')
uri="mongodb://$addr/?directConnection=true"
echo "server: $("$SERVER" --version | head -1) at $addr (pid $server_pid); insert, $THREADS threads, $DURATION per run, $ROUNDS rounds"

throughput() { # $1 = run directory, extra args after
  local dir=$1; shift
  "$BIN" run insert --uri "$uri" --threads "$THREADS" --duration "$DURATION" --quiet --out "$dir" "$@" >/dev/null
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print([r for r in s["runs"][0]["rows"] if r["label"]=="TOTAL"][0]["throughput"])' "$dir/summary.json"
}

printf '%-6s %14s %14s %8s\n' round "with log/s" "without/s" ratio
with_sum=0; without_sum=0
for i in $(seq "$ROUNDS"); do
  # Alternate the order so neither side always runs on a warmer server.
  if (( i % 2 )); then
    w=$(throughput "$work/with-$i"); n=$(throughput "$work/without-$i" --no-samples)
  else
    n=$(throughput "$work/without-$i" --no-samples); w=$(throughput "$work/with-$i")
  fi
  lines=$(( $(wc -l < "$work/with-$i/samples.tsv") - 1 ))
  printf '%-6s %14.1f %14.1f %8.3f   (%d lines logged)\n' "$i" "$w" "$n" "$(python3 -c "print($w/$n)")" "$lines"
  with_sum=$(python3 -c "print($with_sum+$w)"); without_sum=$(python3 -c "print($without_sum+$n)")
done
python3 -c "w=$with_sum/$ROUNDS; n=$without_sum/$ROUNDS; print(f'mean   {w:14.1f} {n:14.1f} {w/n:8.3f}  -> the sample log costs {100*(1-w/n):.1f} % of throughput')"
