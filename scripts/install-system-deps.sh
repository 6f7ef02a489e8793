#!/usr/bin/env bash
# Installs the system tools qoelab's tests and tools use, if missing: tshark (reads our pcaps and
# runs the TFD Wireshark dissector) and Chromium (the browser test of index.html drives it with Playwright;
# Playwright's own browser download needs its CDN, Debian's package needs only apt); for emulation
# (`qoelab emulate`, `qoelab verify --kernel`): iproute2 (ip, ss, nstat), ethtool, ping, iperf3 and
# mptcpize (kernel MPTCP for unmodified programs). Needs root (as on the project's machines) for apt-get.
set -euo pipefail
need=()
command -v tshark >/dev/null 2>&1 || need+=(tshark)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v ip >/dev/null 2>&1 && command -v ss >/dev/null 2>&1 && command -v nstat >/dev/null 2>&1 || need+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
command -v iperf3 >/dev/null 2>&1 || need+=(iperf3)
command -v mptcpize >/dev/null 2>&1 || need+=(mptcpize)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-system-deps: missing ${need[*]}; run as root or install them (apt-get install ${need[*]})" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing ${need[*]} (apt-get)…" >&2
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
