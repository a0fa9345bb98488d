// Headless Chromium for the viewer tests and the browser benchmark, through
// playwright-core and Debian's /usr/bin/chromium (no browser download).

import { chromium } from 'playwright-core';

// Flags from TOOLCHAIN.md: no sandbox in containers, and nothing that
// reaches for the network on its own.
const ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
];

export async function launch() {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: ARGS, timeout: 60_000 });
}
