#!/usr/bin/env bash
# Serving throughput: starts build/bin/tinfer-server on a free loopback port and drives it with
# build/bin/tinfer-loadgen at 1, 8, 32 and 64 concurrent streams (each client sends 2 streamed
# requests of 64 tokens by default, ignore_eos so every request is the same length). Prints a markdown
# table (aggregate generated tok/s, time to first token p50 / p99, per-stream decode tok/s) and
# writes the loadgen JSON of each point under <build>/bench-server/.
#   bash scripts/bench-server.sh [MODEL_DIR] [--backend cpu|cuda|auto] [--streams "1 8 32 64"]
#                                [--random-weights] (a directory with config.json + tokenizer.json
#                                                    is enough: speed without the weights)
#                                [--requests N] [--max-tokens N] (per client; default 2 x 64)
#                                [--update-readme]   (the table between examples/server/README.md's
#                                                     server-table markers; server-table-gpu for
#                                                     the CUDA backend)
# TINFER_BUILD_DIR (default build) holds bin/ and models/; TINFER_BIN_DIR and TINFER_BENCH_OUT
# override where the two programs are and where the results go (scripts/gpu/run.sh runs this on
# the device with the pack's binaries). Needs bash and python3; curl is not needed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TINFER_BUILD_DIR:-build}
bin=${TINFER_BIN_DIR:-$build/bin}
model=$build/models/smollm2-135m-instruct
backend=auto
streams="1 8 32 64"
update=0
requests=2
max_tokens=64
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --update-readme) update=1; shift ;;
    --random-weights) extra+=(--random-weights); shift ;;
    --backend) backend=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --max-tokens) max_tokens=$2; shift 2 ;;
    *) model=$1; shift ;;
  esac
done
max=0
for c in $streams; do [ "$c" -gt "$max" ] && max=$c; done
out=${TINFER_BENCH_OUT:-$build/bench-server}
mkdir -p "$out"
log=$out/server.log
"$bin/tinfer-server" -m "$model" --port 0 --parallel "$max" --ctx 256 --queue 256 \
  --backend "$backend" --quiet "${extra[@]}" 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1200); do # up to 120 s: the "ready:" line follows the model's load
  if grep -q 'ready: ' "$log"; then
    port=$(grep -o 'listening on http://[^:]*:[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    break
  fi
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
[ -n "$port" ] || { echo "bench-server: the server did not start:" >&2; cat "$log" >&2; exit 1; }
url=http://127.0.0.1:$port
desc=$(grep -o "ready: .*" "$log" | head -1 | sed 's/^ready: //')
"$bin/tinfer-loadgen" --url "$url" -c 1 -n 1 --max-tokens 8 >/dev/null # warm-up
table=$out/table.md
{
echo "$desc; $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo
echo "| streams | requests | aggregate tok/s | TTFT p50 (ms) | TTFT p99 (ms) | per-stream tok/s p50 |"
echo "|---|---|---|---|---|---|"
for c in $streams; do
  "$bin/tinfer-loadgen" --url "$url" -c "$c" -n "$requests" --max-tokens "$max_tokens" --ignore-eos \
    --json "$out/streams-$c.json" >/dev/null
  python3 - "$out/streams-$c.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("| %d | %d | %.1f | %.1f | %.1f | %.1f |" % (j["clients"], j["requests"], j["aggregate_tok_s"],
      j["ttft_ms_p50"], j["ttft_ms_p99"], j["stream_tok_s_p50"]))
PY
done
} > "$table"
cat "$table"
if [ "$update" = 1 ]; then
  marker=server-table
  case $desc in *", cuda "*) marker=server-table-gpu ;; esac # the GPU's table beside the CPU's
  python3 - "$table" "$marker" <<'PY'
import re, sys
p = "examples/server/README.md"
doc = open(p).read()
m = sys.argv[2]
new = "<!-- %s:begin -->\n" % m + open(sys.argv[1]).read().strip() + "\n<!-- %s:end -->" % m
doc, n = re.subn(r"<!-- %s:begin -->.*?<!-- %s:end -->" % (m, m), new, doc, flags=re.S)
if n != 1:
    sys.exit("bench-server: no %s markers in %s" % (m, p))
open(p, "w").write(doc)
PY
fi
kill -TERM $pid
wait $pid
trap - EXIT
