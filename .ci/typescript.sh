#!/usr/bin/env bash
# The TypeScript client (clients/typescript): installs what it needs on a fresh machine (Node.js and
# Chromium from Debian when missing, the npm packages with npm ci), builds the client, its browser
# bundle and the .NET test server, and runs its three test layers (unit, against a real Mux server
# over TCP and WebSocket, headless Chromium through MapMux). Ends with the plain line
# "typescript: N passed, N failed, N skipped" and exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

fail() {
  echo "typescript: $1" >&2
  echo "typescript: 0 passed, 1 failed, 0 skipped"
  exit 1
}

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "typescript: installing Node.js and npm (Debian)"
  apt_install nodejs npm || fail "could not install Node.js"
fi
node --version

chromium_start=$SECONDS
if [ -z "${CHROMIUM_PATH:-}" ] && ! [ -x /usr/bin/chromium ]; then
  echo "typescript: installing Chromium (Debian) for the browser tests"
  apt_install chromium || fail "could not install chromium"
fi
echo "typescript: Chromium ready in $((SECONDS - chromium_start)) s ($(${CHROMIUM_PATH:-/usr/bin/chromium} --version 2>/dev/null))"

cd clients/typescript
npm ci --no-audit --no-fund --loglevel=error || fail "npm ci failed"
npm run build --silent || fail "the build failed (tsc, or the browser bundle)"
dotnet build -c Release --nologo -v q test-server || fail "the .NET test server did not build"

# The test runner prints "typescript: N passed, N failed, N skipped" last (its own plain line, renamed).
node scripts/test-all.mjs --no-dotnet-build | sed -u 's/^\([0-9]* passed, [0-9]* failed\)/typescript: \1/'
exit "${PIPESTATUS[0]}"
