"""Debian's Chromium as the browser tests and the hub test start it.

Playwright drives it with ``executable_path=CHROMIUM`` (its own browser
download is not used). The flags keep a headless Chromium off the network:
without the background-networking ones it keeps trying to reach Google's hosts.
"""

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
