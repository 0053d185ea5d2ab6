#!/usr/bin/env bash
# Headless Chromium and its WebDriver for the history dashboard's browser test
# (tests/history/test_dashboard_browser.py skips without them). Debian packages; run as root.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    echo "chromium and chromedriver already installed"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver
chromium --version
chromedriver --version
