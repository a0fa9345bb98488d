// Runs the browser half of `cargo bench --bench remote` in headless Chromium:
//   node benches/browser/run.mjs PAGE_URL PLAN_JSON_FILE
// PLAN is [{name, kind: "decode" | "gather", args}, ...]; prints one JSON
// array of {name, ...result} on stdout.

import { readFileSync } from 'node:fs';
import { launch } from '../../scripts/chromium.mjs';

const [pageUrl, planFile] = process.argv.slice(2);
if (!pageUrl || !planFile) {
  console.error('usage: node benches/browser/run.mjs PAGE_URL PLAN_JSON_FILE');
  process.exit(2);
}
const plan = JSON.parse(readFileSync(planFile, 'utf8'));

const browser = await launch();
try {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(pageUrl);
  await page.waitForFunction(() => window.zrBenchReady || null, null, { timeout: 60_000 }).catch(() => {
    throw new Error(`the bench page did not start: ${errors.join('; ') || 'no page error'}`);
  });
  const version = browser.version();
  const results = [];
  for (const task of plan) {
    process.stderr.write(`  chromium ${version}: ${task.name}\n`);
    const r = await page.evaluate(([kind, args]) => window.zrBench[kind](args), [task.kind, task.args]);
    results.push({ name: task.name, chromium: version, ...r });
  }
  process.stdout.write(JSON.stringify(results));
} finally {
  await browser.close();
}
