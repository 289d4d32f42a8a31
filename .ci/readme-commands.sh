#!/usr/bin/env bash
# Runs the README's commands the way a newcomer types them, from the repository root, each bounded
# to a few seconds: the Hello sample, the Pipeline sample, the hosted Server sample (started, loaded by the Load sample
# over one connection, stopped with SIGTERM as a service manager would, and checked to drain and
# exit 0), the Telemetry sample (one trace across client and server), the Browser sample (its page,
# script and bundle served, 400 to a plain request to its Mux endpoint), and the Install section's steps
# (`dotnet pack -c Release -o FOLDER`, then a fresh application that adds the packages from it and
# builds the Example section's Program.cs). The test command, the Load sample alone, the packages and
# the load runner are run by .ci/run itself. The last check fails when the README gains a
# `--project` that no CI script runs, so a new README command cannot go unexercised.
set -uo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL -- "-$server_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

status=0
fail() {
  echo "readme: $*" >&2
  status=1
}

# Waits up to $2 seconds for the regular expression $3 to appear in the file $1.
wait_for_line() {
  local file=$1 seconds=$2 pattern=$3 i
  for ((i = 0; i < seconds * 10; i++)); do
    grep -qE "$pattern" "$file" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# dotnet run -c Release --project samples/Mux.Samples.Hello
hello_log="$work/hello.log"
if timeout 300 dotnet run -c Release --project samples/Mux.Samples.Hello >"$hello_log" 2>&1 && grep -qx 'Hello, world!' "$hello_log"; then
  echo "readme: Hello sample printed 'Hello, world!'"
else
  cat "$hello_log"
  fail "the Hello sample did not print 'Hello, world!'"
fi

# dotnet run -c Release --project samples/Mux.Samples.Pipeline: Authenticate, a server interceptor refusing a
# call without a tenant, a client interceptor's correlation id, and a refused unknown token.
pipeline_log="$work/pipeline.log"
if timeout 300 dotnet run -c Release --project samples/Mux.Samples.Pipeline >"$pipeline_log" 2>&1 \
  && grep -q '^without a tenant: PermissionDenied: ' "$pipeline_log" \
  && grep -qE '^order for tea placed by alice for tenant acme \(correlation id [0-9a-f]{12}\)$' "$pipeline_log" \
  && grep -q '^unknown token: .*refused the connection (Unauthenticated)' "$pipeline_log"; then
  echo "readme: Pipeline sample refused the call without a tenant and the unknown token, and served alice's call for acme"
else
  cat "$pipeline_log"
  fail "the Pipeline sample did not show the refusal, alice's call for acme with a correlation id, and the refused token"
fi

# dotnet run -c Release --project samples/Mux.Samples.Server, then the Load sample against it.
# Port 0 instead of appsettings.json's 5000 (a command-line key overrides the file), so CI never
# collides with anything on the machine; the server logs the port it got. setsid puts `dotnet run`
# and the server in a process group of their own, so SIGTERM reaches the server itself.
server_log="$work/server.log"
if dotnet build -c Release samples/Mux.Samples.Server >"$server_log" 2>&1; then
  setsid dotnet run -c Release --no-build --project samples/Mux.Samples.Server -- --Mux:Server:Listen=127.0.0.1:0 >"$server_log" 2>&1 &
  server_pid=$!
  if wait_for_line "$server_log" 60 'Mux server listening on 127\.0\.0\.1:[0-9]+'; then
    port=$(grep -oE 'listening on 127\.0\.0\.1:[0-9]+' "$server_log" | head -n 1 | grep -oE '[0-9]+$')
    load_log="$work/load.log"
    if timeout 120 dotnet run -c Release --project samples/Mux.Samples.Load -- --connect "127.0.0.1:$port" --seconds 2 >"$load_log" 2>&1; then
      last=$(tail -n 1 "$load_log")
      echo "readme: Load sample against the Server sample: $last"
      if ! grep -q '"errors":0,' <<<"$last" || ! grep -q '"connections":1[,}]' <<<"$last"; then
        fail "Load sample against the Server sample: expected errors 0 and connections 1"
      fi
    else
      cat "$load_log"
      fail "the Load sample could not load the Server sample"
    fi
  else
    fail "the Server sample did not log 'Mux server listening on' within 60 s"
  fi

  kill -TERM -- "-$server_pid" 2>/dev/null
  server_exit=""
  for ((i = 0; i < 300; i++)); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      wait "$server_pid"
      server_exit=$?
      break
    fi
    sleep 0.1
  done
  if [ -z "$server_exit" ]; then
    fail "the Server sample did not stop within 30 s of SIGTERM"
  # 143 is the `dotnet run` host itself ending on the same SIGTERM (it sometimes does, before it
  # can report the server's own exit code); the server's clean stop is what its log says.
  elif { [ "$server_exit" -ne 0 ] && [ "$server_exit" -ne 143 ]; } || ! grep -q 'Mux server on .* stopped\.' "$server_log"; then
    fail "the Server sample did not stop cleanly (exit code $server_exit)"
  else
    echo "readme: Server sample served, drained on SIGTERM and exited 0"
  fi
  server_pid=""
  [ "$status" -eq 0 ] || cat "$server_log"
else
  cat "$server_log"
  fail "the Server sample did not build"
fi

# dotnet run -c Release --project samples/Mux.Samples.Telemetry: OpenTelemetry's console exporter
# prints the spans and metrics; the sample's own last line says whether every server span is the
# child of a client span in the same trace.
telemetry_log="$work/telemetry.log"
if timeout 300 dotnet run -c Release --project samples/Mux.Samples.Telemetry >"$telemetry_log" 2>&1 \
  && grep -qx 'one trace across client and server: ok' "$telemetry_log" \
  && grep -q 'Activity.Kind: *Server' "$telemetry_log" && grep -q 'Metric Name: rpc.client.call.duration' "$telemetry_log"; then
  echo "readme: Telemetry sample exported one trace across client and server, and the call metrics"
else
  cat "$telemetry_log"
  fail "the Telemetry sample did not export one trace across client and server"
fi

# dotnet run -c Release --project samples/Mux.Samples.Browser (after the TypeScript client's
# `npm run build`): the sample serves its page and script, answers a plain request to its Mux
# endpoint with 400, serves the client's browser bundle when it has been built (the browser test
# of clients/typescript drives a real page), and stops on SIGTERM. Port 0 instead of its 5080.
browser_log="$work/browser.log"
bundle=clients/typescript/dist/mux-rpc.browser.js
if dotnet build -c Release samples/Mux.Samples.Browser >"$browser_log" 2>&1; then
  setsid dotnet run -c Release --no-build --project samples/Mux.Samples.Browser -- --urls http://127.0.0.1:0 >"$browser_log" 2>&1 &
  server_pid=$!
  if wait_for_line "$browser_log" 60 'Now listening on: http://127\.0\.0\.1:[0-9]+'; then
    base=$(grep -oE 'Now listening on: http://127\.0\.0\.1:[0-9]+' "$browser_log" | head -n 1 | grep -oE 'http://.*$')
    page=$(curl -s "$base/" || true)
    script=$(curl -s "$base/app.js" || true)
    mux_status=$(curl -s -o /dev/null -w '%{http_code}' "$base/mux" || true)
    if ! grep -q 'IUserService over WebSocket' <<<"$page" || ! grep -q 'Mux.Samples.Contracts.IUserService' <<<"$script"; then
      fail "the Browser sample did not serve its page and script at $base"
    elif [ "$mux_status" != "400" ]; then
      fail "the Browser sample answered a plain request to /mux with $mux_status, not 400"
    elif [ -f "$bundle" ] && ! cmp -s "$bundle" <(curl -s "$base/mux-rpc.js"); then
      fail "the Browser sample did not serve $bundle as /mux-rpc.js"
    else
      echo "readme: Browser sample served its page, its script$([ -f "$bundle" ] && echo ", the client's bundle") and 400 to a plain request to /mux"
    fi
  else
    fail "the Browser sample did not log 'Now listening on' within 60 s"
  fi

  kill -TERM -- "-$server_pid" 2>/dev/null
  for ((i = 0; i < 300; i++)); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$server_pid" 2>/dev/null; then
    fail "the Browser sample did not stop within 30 s of SIGTERM"
  fi
  wait "$server_pid" 2>/dev/null
  server_pid=""
  [ "$status" -eq 0 ] || cat "$browser_log"
else
  cat "$browser_log"
  fail "the Browser sample did not build"
fi

# The Install section: `dotnet pack -c Release -o FOLDER` (both packages, each with the README at
# its root), then its steps in a fresh application outside the repository (a nuget.config naming
# that folder, `dotnet add package` of each package), which builds the Example section's Program.cs.
# The application restores into a package folder of its own, so no build of an earlier run that
# had the same version can stand in for this one.
feed="$work/feed"
pack_log="$work/pack.log"
if timeout 300 dotnet pack -c Release -o "$feed" >"$pack_log" 2>&1; then
  for package in Mux Mux.Hosting Mux.AspNetCore; do
    nupkg=$(ls "$feed/$package".[0-9]*.nupkg 2>/dev/null | head -n 1)
    if [ -z "$nupkg" ]; then
      fail "dotnet pack -c Release -o $feed made no $package package"
    elif ! python3 -c 'import sys, zipfile; sys.exit("README.md" not in zipfile.ZipFile(sys.argv[1]).namelist())' "$nupkg"; then
      fail "$nupkg has no README.md"
    fi
  done
  echo "readme: dotnet pack -c Release -o FOLDER made the three packages"

  install_log="$work/install.log"
  readme="$PWD/README.md"
  mkdir -p "$work/app"
  if (
    cd "$work/app" && export NUGET_PACKAGES="$work/packages" \
      && dotnet new console \
      && dotnet new nugetconfig \
      && dotnet nuget add source "$feed" --name mux --configfile nuget.config \
      && dotnet add package Mux \
      && dotnet add package Mux.Hosting \
      && dotnet add package Microsoft.Extensions.Hosting --version 10.0.14 \
      && awk '/^## Example/ { example = 1 } example && /^```csharp/ { code = 1; next } code && /^```$/ { exit } code' "$readme" >Program.cs \
      && grep -q 'MuxClient.ConnectAsync' Program.cs \
      && timeout 300 dotnet build -warnaserror
  ) >"$install_log" 2>&1; then
    echo "readme: the Install steps made an application that builds the Example against the packages"
  else
    cat "$install_log"
    fail "the Install steps or the Example's Program.cs failed in a fresh application"
  fi
else
  cat "$pack_log"
  fail "dotnet pack -c Release -o $feed failed"
fi

# Every project the README tells people to run must be run by CI.
while read -r project; do
  if ! grep -qF -- "$project" .ci/run .ci/readme-commands.sh .ci/package-check.sh .ci/aot-check.sh; then
    fail "the README runs '--project $project' but no CI script does"
  fi
done < <(grep -oE -- '--project [A-Za-z0-9_./-]+' README.md | awk '{print $2}' | sort -u)

exit "$status"
