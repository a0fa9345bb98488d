// moto's S3 server for the viewer tests, with signatures checked (as
// tests/common/moto.rs starts it for the Rust tests; CORS as S3 does it:
// tests/moto/cors_server.py): a private bucket, its
// access key, objects put and replaced through boto3, a CORS rule or none.
// Stopped by its PID.

import { spawn, execFileSync } from 'node:child_process';
import { before, after } from 'node:test';
import { createServer, connect } from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { homedir } from 'node:os';

const repo = join(dirname(fileURLToPath(import.meta.url)), '../..');
const venv = process.env.ZRECORD_MOTO_VENV || join(homedir(), '.cache/zrecord/venv-moto');

function freePort() {
  return new Promise((ok) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
  });
}

/** boto3, signing with the bucket's key: `code` runs with `s3` and `bucket` bound. */
function boto(m, code, input) {
  const py = `import sys, json, boto3
s3 = boto3.client("s3", endpoint_url=${JSON.stringify(m.endpoint)}, region_name="us-east-1",
  aws_access_key_id=${JSON.stringify(m.key)}, aws_secret_access_key=${JSON.stringify(m.secret)})
bucket = ${JSON.stringify(m.bucket)}
${code}`;
  return execFileSync(join(venv, 'bin/python'), ['-c', py], { input, encoding: 'utf8' });
}

/** Start moto on a free port with a private bucket; `await m.stop()` when done. */
export async function startMoto() {
  const port = await freePort();
  // moto with CORS as S3 does it (see tests/moto/cors_server.py).
  const child = spawn(join(venv, 'bin/python'), [join(repo, 'tests/moto/cors_server.py'), '-H', '127.0.0.1', '-p', String(port)], {
    env: { ...process.env, INITIAL_NO_AUTH_ACTION_COUNT: '3' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const endpoint = `http://127.0.0.1:${port}`;
  for (let k = 0; ; k++) {
    // A TCP connect only: an HTTP request would spend one of the three
    // unauthenticated actions setup.py needs.
    const up = await new Promise((ok) => {
      const c = connect(port, '127.0.0.1', () => { c.destroy(); ok(true); });
      c.on('error', () => ok(false));
    });
    if (up) break;
    if (k > 100 || child.exitCode != null) throw new Error(`moto did not start: ${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const bucket = 'zrecord-test';
  const out = execFileSync(join(venv, 'bin/python'), [join(repo, 'tests/moto/setup.py'), endpoint, bucket], { encoding: 'utf8' });
  const { key, secret } = JSON.parse(out);
  const m = {
    endpoint, bucket, key, secret,
    /** `s3://bucket/path` */
    url: (path) => `s3://${bucket}/${path}`,
    /** The environment a zrecord process reads the bucket with. */
    env: (sec = secret) => {
      const e = { ...process.env, AWS_ACCESS_KEY_ID: key, AWS_SECRET_ACCESS_KEY: sec, AWS_ENDPOINT_URL: endpoint, AWS_ALLOW_HTTP: 'true', AWS_REGION: 'us-east-1' };
      for (const v of ['AWS_PROFILE', 'AWS_SESSION_TOKEN', 'AWS_DEFAULT_REGION', 'AWS_CONFIG_FILE']) delete e[v];
      return e;
    },
    /** Upload every file below local `dir` under `prefix/`. */
    putDir: (prefix, dir) => boto(m, `import os
root = ${JSON.stringify(dir)}
for d, _, names in os.walk(root, followlinks=True):
    for n in names:
        p = os.path.join(d, n)
        s3.upload_file(p, bucket, ${JSON.stringify(prefix)} + "/" + os.path.relpath(p, root))`),
    /** Put `bytes` (a Buffer) at `path`. */
    put: (path, bytes) => boto(m, `s3.put_object(Bucket=bucket, Key=${JSON.stringify(path)}, Body=sys.stdin.buffer.read())`, bytes),
    /** Set (or with null, delete) the bucket's CORS rules. */
    cors: (rules) => boto(m, rules
      ? `s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": json.loads(${JSON.stringify(JSON.stringify(rules))})})`
      : 's3.delete_bucket_cors(Bucket=bucket)'),
    /** Presigned GET URL of `path`, valid `expires` seconds. */
    presign: (path, expires) => boto(m, `print(s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": ${JSON.stringify(path)}}, ExpiresIn=${expires}))`).trim(),
    /** moto's log so far. */
    log: () => log,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode != null ? r() : child.once('exit', r)));
    },
  };
  return m;
}

/** The CORS rule a bucket needs for the viewer (docs/PRIVATE_BUCKETS.md). */
export const VIEWER_CORS = [{
  AllowedOrigins: ['*'],
  AllowedMethods: ['GET', 'HEAD'],
  // Listed: a `*` does not cover Authorization in browsers.
  AllowedHeaders: ['Authorization', 'Range', 'If-Match', 'X-Amz-Date', 'X-Amz-Content-Sha256', 'X-Amz-Security-Token'],
  ExposeHeaders: ['Content-Range', 'Content-Length', 'ETag'],
  MaxAgeSeconds: 3600,
}];

/**
 * Run `zrecord ARGS` with `env` until it prints its `viewer: URL` line;
 * returns {link, proc, stop}.
 */
export async function startZrecord(zrecord, args, env) {
  const proc = spawn(zrecord, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const link = await new Promise((ok, fail) => {
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /^viewer: (\S+)/m.exec(out);
      if (m) ok(m[1]);
    });
    proc.once('exit', (code) => fail(new Error(`zrecord ${args.join(' ')} exited ${code}: ${err}`)));
  });
  return {
    link, proc, output: () => out, errors: () => err,
    stop: async () => {
      if (proc.exitCode == null) {
        proc.kill('SIGTERM');
        await new Promise((r) => proc.once('exit', r));
      }
    },
  };
}

/** Fill and submit the viewer's "Open private bucket…" form (the page loaded). */
export async function openBucket(page, fields) {
  await page.click('#open-bucket');
  for (const [name, value] of Object.entries(fields)) await page.fill(`#bucket-form [name="${name}"]`, value);
  await page.click('#bucket-form button[type=submit]');
}

/**
 * The dataset fixture (tests/fixtures/dataset-v1) as the page shows it once
 * opened: its header, and rows `indices` with exactly its x and tokens.
 */
export async function assertDatasetRows(page, indices, assert) {
  await page.waitForSelector('.ds-row[data-index="0"] .cell[data-stream="tokens"] .ids');
  assert.match(await page.textContent('#records .table-bar h2'), /2 streams · 10 rows · 3 shards · version 1/);
  const x = (i) => [i, -i * 0.5].map((v) => v + 0);
  const tokens = (i) => Array.from({ length: (i % 7) + 1 }, (_, k) => i * 31 + k);
  for (const i of indices) {
    await page.waitForSelector(`.ds-row[data-index="${i}"] .cell[data-stream="tokens"] .ids`);
    await page.waitForSelector(`.ds-row[data-index="${i}"] .cell[data-stream="x"] .ids`);
    const r = await page.$eval(`.ds-row[data-index="${i}"]`, (e) => ({
      x: e.querySelector('.cell[data-stream="x"]').textContent.trim().split(/\s+/).map((v) => Number(v) + 0),
      tokens: e.querySelector('.cell[data-stream="tokens"]').textContent.trim().split(/\s+/).map(Number),
    }));
    assert.deepEqual(r.x, x(i), `x of row ${i}`);
    assert.deepEqual(r.tokens, tokens(i), `tokens of row ${i}`);
  }
}

/**
 * moto for one test file: started before its tests with a store
 * (`stores/img`: the dense-u8-img-raw fixture) and a dataset (`datasets/v1`)
 * in its bucket, given to `setup`, stopped after them.
 */
export function withMoto(fixtures, setup) {
  let m;
  before(async () => {
    m = await startMoto();
    m.putDir('stores/img', join(fixtures, 'dense-u8-img-raw'));
    m.putDir('datasets/v1', join(fixtures, '../dataset-v1'));
    setup(m);
  });
  after(async () => { await m?.stop(); });
}
