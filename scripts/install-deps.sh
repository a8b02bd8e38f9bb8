#!/usr/bin/env bash
# Installs every Debian package the project builds, tests or demos with (chromium: the browser the
# report's test opens it in, tests/integration/report.sh). Idempotent: asks apt
# only for what is missing, and refreshes the package lists only then.
set -euo pipefail
packages=(
  build-essential cmake pkg-config clang-14 llvm-14 libclang-rt-14-dev python3 procps
  postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap postgresql-15-cron postgresql-15-plproxy
  libtap-parser-sourcehandler-pgtap-perl
  libpq-dev libpqxx-dev libcurl4-openssl-dev libssl-dev zlib1g-dev libzstd-dev rapidjson-dev libgtest-dev libgmock-dev
  libcpp-httplib-dev libcli11-dev libspdlog-dev prometheus-cpp-dev libboost-dev
  prometheus prometheus-postgres-exporter systemd
  curl jq python3-jsonschema faketime libarchive-tools time
  chromium
)
# warcio.js (npm), the second WARC reader of tests/integration/warc.sh, and the networks' own
# clients and validators that tests/mock_api/spec/spec.sh reads the mock's answers with (npm, each
# pinned by a package-lock.json): Node and npm from Debian,
# unless a Node with its own npm is there already (NodeSource's nodejs conflicts with Debian's npm).
# make deb and its install test (scripts/make-deb.sh, tests/deploy/deb_install.sh): Debian's
# packaging tools, pg_buildext, manual pages from --help, lintian, and debootstrap for a fresh
# Debian 12 to install the packages into.
if [ "${1:-}" = deb ]; then
  packages+=(debhelper dpkg-dev postgresql-server-dev-all help2man lintian debootstrap)
fi
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]} (run as root, or install them)" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
