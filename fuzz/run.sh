#!/usr/bin/env bash
# Fuzzes one Mux target with AFL++ through SharpFuzz. Not part of CI's run (it takes as long as you
# give it); see fuzz/README.md.
#   bash fuzz/run.sh frames|server|client [minutes, default 30]
# Installs what it needs: afl++ from the Debian packages, the sharpfuzz tool into fuzz/.tools.
set -euo pipefail
target=${1:?"usage: fuzz/run.sh frames|server|client [minutes]"}
minutes=${2:-30}
fuzz=$(cd "$(dirname "$0")" && pwd)
out="$fuzz/out"

if ! command -v afl-fuzz >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq afl++
fi
if [ ! -x "$fuzz/.tools/sharpfuzz" ]; then
  dotnet tool install --tool-path "$fuzz/.tools" SharpFuzz.CommandLine --version 2.3.0
fi

# Publish the harness, then instrument Mux.dll (only Mux: coverage of the framework and of
# MessagePack would drown Mux's own paths).
rm -rf "$out" # a fresh copy: sharpfuzz refuses an already instrumented Mux.dll
dotnet publish "$fuzz/Mux.Fuzz" -c Release -o "$out" --nologo -v quiet
"$fuzz/.tools/sharpfuzz" "$out/Mux.dll"

corpus="$fuzz/corpus"
if [ "$target" = client ]; then
  corpus="$fuzz/corpus-client" # what a server sends: a HelloAck, then answers and calls of its own
fi
findings="$fuzz/findings/$target"
mkdir -p "$findings"
export AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_SKIP_BIN_CHECK=1
# -t: per-input time limit in ms (the server target allows itself 5 s before it reports a hang).
timeout --signal=INT "$((minutes * 60))" \
  afl-fuzz -i "$corpus" -o "$findings" -t 10000 -m none -- "$out/Mux.Fuzz" "$target" || true

stats="$findings/default/fuzzer_stats"
[ -f "$stats" ] && grep -E '^(run_time|execs_done|execs_per_sec|corpus_count|saved_crashes|saved_hangs|bitmap_cvg)' "$stats"
echo "Crashes and hangs, if any: $findings/default/crashes, $findings/default/hangs."
echo "Reproduce one: dotnet run -c Release --project fuzz/Mux.Fuzz -- replay $target FILE; then copy it to fuzz/regressions/ (tests replay that folder)."
