// A dataset written from an Arrow table (tests/fixtures/dataset-arrow: a
// `string` column "text" and a `binary` column "blob", both Ragged uint8, 3
// records; made by `zrecord.write_dataset(path, pa.table({"text": [f"héllo {i}"
// for i in range(3)], "blob": pa.array([b"hi" + bytes([i]) for i in range(3)],
// pa.binary())}), codec="raw")`): the manifest's `arrow` attribute makes the
// string column text and leaves the binary one as byte values.

import { test } from 'node:test';
import { assert, env, withPage, noPageErrors } from './helpers.mjs';

let page;
withPage((p) => (page = p));

test('a string column shows text, a binary column its bytes', async () => {
  await page.goto('about:blank');
  await page.goto(`${env.viewer}#url=${encodeURIComponent(`${env.cors}/dataset-arrow/`)}`);
  for (let i = 0; i < 3; i++) {
    await page.waitForSelector(`.ds-row[data-index="${i}"] .cell[data-stream="text"] .text`);
    await page.waitForSelector(`.ds-row[data-index="${i}"] .cell[data-stream="blob"] .ids`);
    const cells = await page.$eval(`.ds-row[data-index="${i}"]`, (r) => [
      r.querySelector('.cell[data-stream="text"]').textContent.trim(),
      r.querySelector('.cell[data-stream="blob"]').textContent.trim(),
    ]);
    assert.deepEqual(cells, [`héllo ${i}`, `104 105 ${i}`]);
  }
  noPageErrors(page);
});
