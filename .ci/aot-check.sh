#!/usr/bin/env bash
# Native AOT: publish the Hello sample and the Orders sample (a contract of the user's own
# [MessagePackObject] types) with PublishAot, run both, and fail on any trim/AOT warning that does
# not come from inside the MessagePack package. The publish summarizes each referenced assembly's
# warnings as one IL2104/IL3053 naming it (Mux's own assembly included): only 'MessagePack' may be
# named, and nothing else may warn. MessagePack's own warnings are expected: see the README.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
status=0
for sample in Hello Orders; do
  project="samples/Mux.Samples.$sample"
  log=$(mktemp)
  echo "aot check: publishing $project"
  if ! dotnet publish "$project" -c Release -r linux-x64 -p:PublishAot=true --nologo >"$log" 2>&1; then
    cat "$log"; echo "aot check: publish of $project failed" >&2; status=1; continue
  fi
  ours=$(grep -E 'warning IL[0-9]+' "$log" | grep -v "Assembly 'MessagePack' produced" | sort -u || true)
  theirs=$(grep -E "warning IL[0-9]+: Assembly 'MessagePack' produced" "$log" | sort -u | wc -l)
  if [ -n "$ours" ]; then
    echo "$ours"; echo "aot check: trim/AOT warnings outside MessagePack in $project" >&2; status=1
  fi
  binary="$project/bin/Release/net10.0/linux-x64/publish/Mux.Samples.$sample"
  if output=$("$binary" 2>&1); then
    echo "aot check: $sample ran: $(tail -n 1 <<<"$output") (summary warnings from MessagePack: $theirs; from Mux: 0)"
  else
    echo "$output"; echo "aot check: the native $sample failed" >&2; status=1
  fi
  rm -f "$log"
done
exit $status
