// Turns a reader error into plain words and a fix. The wasm reader's messages
// name the cause (see src/wasm.rs); each rule here recognises one cause.

const NGINX_CORS = `location / {
  add_header Access-Control-Allow-Origin "*" always;
  add_header Access-Control-Allow-Headers "Range" always;
  add_header Access-Control-Expose-Headers "Content-Range, Content-Length, ETag, Accept-Ranges" always;
  if ($request_method = OPTIONS) { return 204; }
}`;

const S3_CORS = `[{"AllowedOrigins": ["*"], "AllowedMethods": ["GET", "HEAD"],
  "AllowedHeaders": ["Range"],
  "ExposeHeaders": ["Content-Range", "Content-Length", "ETag", "Accept-Ranges"]}]`;

// What a bucket read with signed or presigned requests needs (docs/PRIVATE_BUCKETS.md).
const S3_SIGNED_CORS = `{"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET", "HEAD"],
  "AllowedHeaders": ["Authorization", "Range", "If-Match", "X-Amz-Date", "X-Amz-Content-Sha256", "X-Amz-Security-Token"],
  "ExposeHeaders": ["Content-Range", "Content-Length", "ETag"], "MaxAgeSeconds": 3600}]}`;

// The reader's error codes (JS Error `code`, from the Rust error variant)
// that name their cause outright; `Remote` errors are told apart by message.
const BY_CODE = {
  CorruptRecord: 'corrupt',
  ChecksumMismatch: 'checksum',
  Unpublished: 'unpublished',
  StoreChanged: 'changed',
  NotFound: 'notfound',
  BadFormat: 'badformat',
  Busy: 'busy',
};

/**
 * {kind, title, text, fix: [string], code?} for a reader error (an Error
 * with `message` and maybe `code`). `ctx` holds `url` (the store, when
 * remote) and `local` (opened from disk).
 */
export function explain(err, ctx = {}) {
  const msg = String(err?.message ?? err ?? '');
  const kind = BY_CODE[err?.code];
  const host = hostOf(ctx.url);
  const here = location.origin;
  const rules = [
    // A private bucket's refusals (worker.js, s3Answer): each names its fix.
    ['expired', /\[s3: AccessDenied\] Request has expired|\[s3: (ExpiredToken|TokenRefreshRequired)\]/, () => ({
      kind: 'expired',
      title: 'This link has expired',
      text: 'Its presigned URLs (or the session token) are no longer valid, so the bucket refuses every read.',
      fix: ['Ask for a fresh link: `zrecord presign s3://BUCKET/STORE --expires 1h`.', 'With keys, get a new session token and open the bucket again.', 'Or look at it through `zrecord view s3://BUCKET/STORE`, which signs with your own credentials.'],
    })],
    ['keys', /\[s3: (SignatureDoesNotMatch|InvalidAccessKeyId|AuthorizationHeaderMalformed|InvalidToken)\]/, () => ({
      kind: 'keys',
      title: 'The bucket refused these keys',
      text: `${host || 'The bucket'} says the access key ID, the secret or the session token is wrong (${/\[s3: (\w+)\]/.exec(msg)?.[1]}).`,
      fix: ['Open the bucket again with the right access key ID and secret (and the session token that goes with temporary keys).', 'Check the region: a signature is made for one region.'],
    })],
    ['nobucket', /\[s3: NoSuchBucket\]/, () => ({
      kind: 'nobucket',
      title: 'There is no such bucket',
      text: `${host || 'The endpoint'} has no bucket by the name in the address.`,
      fix: ['Check the bucket name, the endpoint and the region.'],
    })],
    ['denied', /\[s3: AccessDenied\]/, () => ({
      kind: 'denied',
      title: 'These keys may not read this bucket',
      text: `${host || 'The bucket'} accepted the keys but refused the read (AccessDenied).`,
      fix: ['Give the keys s3:GetObject on the store\'s prefix (an IAM or bucket policy).'],
    })],
    ['bucketcors', /\[s3: NoCorsRule\]/, () => ({
      kind: 'bucketcors',
      title: 'The bucket has no CORS rule for this page (or no such bucket)',
      text: `${host || 'The endpoint'} answered without CORS headers, so this page (${here}) may not read the answer. Either the bucket has no CORS rule allowing this origin and the headers a signed request carries, or there is no bucket by this name there: S3 sends no CORS headers for a missing bucket either, so a page cannot tell the two apart.`,
      fix: ['Check the bucket name and the endpoint.', 'Add the CORS rule below to the bucket (docs/PRIVATE_BUCKETS.md), e.g. `aws s3api put-bucket-cors --bucket BUCKET --cors-configuration file://cors.json`.', 'Or use `zrecord view s3://BUCKET/STORE`: no CORS rule needed, and a missing bucket is named as such.'],
      code: [['S3 bucket CORS (cors.json)', S3_SIGNED_CORS]],
    })],
    ['nowasm', /unpublished viewer build|pkg\/zrecord\.js/i, () => ({
      kind: 'nowasm',
      title: 'The viewer was built without its wasm reader',
      text: 'This page loads a small WebAssembly module (pkg/zrecord_bg.wasm) to read stores, and it is missing from this build.',
      fix: ['Build it: `scripts/build-pkg.sh` (wasm-pack build --target web).', 'Then rebuild and restart zrecord (`cargo build`), so it embeds pkg/.'],
    })],
    ['cors', /cors|cross-origin|access-control/i, () => ({
      kind: 'cors',
      title: 'The server does not allow this page to read the store (CORS)',
      text: `The store is on ${host || 'another server'}, and this page comes from ${here}. Browsers only let a page read files from another server when that server says so with CORS headers, and ${host || 'this server'} sends none.`,
      fix: [
        `Add CORS headers on ${host || 'the server'}: Access-Control-Allow-Origin, Access-Control-Allow-Headers: Range, and Access-Control-Expose-Headers: Content-Range, Content-Length, ETag.`,
        'Or serve the stores with `zrecord serve DIR`, which sends them, and open the viewer it serves.',
        'If CORS is set up, check the server sends the files as stored: with Content-Encoding (gzip) the browser cannot decode a byte range and the read fails the same way.',
      ],
      code: [['nginx', NGINX_CORS], ['S3 bucket CORS', S3_CORS]],
    })],
    ['gzip', /gzip|content-encoding|compress(ed|es) the/i, () => ({
      kind: 'gzip',
      title: 'The server compresses the store files on the fly',
      text: 'The server answers with Content-Encoding (gzip or similar). Byte ranges then no longer point at the stored bytes, so records cannot be read. Store records are already compressed; transfer compression only gets in the way.',
      fix: ['Turn off compression for the store files: `gzip off;` in nginx (or leave `.zr` out of gzip_types).',
        'On S3 or a CDN, upload without a Content-Encoding header and disable automatic compression.'],
    })],
    ['norange', /does not support (http )?range|ignores? (the )?range|whole file to a range/i, () => ({
      kind: 'norange',
      title: 'The server ignores Range requests',
      text: `The viewer reads only the bytes it needs with HTTP Range requests (206 Partial Content), but ${host || 'the server'} answered with the whole file (200). Reading a large store that way would download all of it for every record.`,
      fix: [
        'Use a server that supports byte ranges: nginx, Apache, S3, GCS, or `zrecord serve DIR`.',
        'Python\'s `python -m http.server` does not; in nginx, remove `max_ranges 0`.',
        'A proxy or CDN in front of the server may drop the Range header: let it pass through.',
      ],
    })],
    ['changed', /changed|modified|etag|precondition/i, () => ({
      kind: 'changed',
      title: 'The store changed on the server while it was open',
      text: 'Its files now have a different version (ETag) than when the viewer opened them, so the record table read earlier no longer matches the data. Someone rewrote or appended to the store.',
      fix: ['Reopen the store to read the new version.', 'Publish new versions under a new path instead of rewriting a store in place.'],
    })],
    ['unpublished', /unpublished|never (closed|published)|length\s*=?\s*0 .*data/i, () => ({
      kind: 'unpublished',
      title: 'This store was never published',
      text: 'Its header still says it has 0 records, but its files hold data: the program that wrote it stopped before closing the store, so none of the records were published. loaderx opens it as an empty store.',
      fix: ['Run the writer again to completion (the store is published only when the writer closes it).'],
    })],
    ['checksum', /checksum mismatch/i, () => {
      const rec = /record\s+#?(\d+)/i.exec(msg);
      return {
        kind: 'checksum',
        title: rec ? `Record ${rec[1]} changed after the store was sealed` : 'The store changed after it was sealed',
        text: `${rec ? `Record ${rec[1]}'s stored bytes do` : 'Some bytes do'} not match the store's checksum sidecar (sums.zr): they changed silently (bit rot, a bad copy or sync), and would decode to wrong data. ${checkOf(msg)}`,
        fix: ['Restore the store from a good copy.', 'Run `zrecord verify STORE` on a copy to list every damaged record.'],
      };
    }],
    ['corrupt', /corrupt/i, () => {
      const rec = /record\s+#?(\d+)/i.exec(msg);
      return {
        kind: 'corrupt',
        title: rec ? `Record ${rec[1]} is corrupt` : 'The store is corrupt',
        text: `${rec ? `Record ${rec[1]}` : 'A record'} failed a check while decoding: ${checkOf(msg)} The rest of the store may still be readable.`,
        fix: ['Rebuild the store from its source data.', 'If it was copied, copy it again and compare the file sizes: a truncated or partial copy looks like this.'],
      };
    }],
    ['badformat', /bad format|not a (zrecord )?store|invalid (header|schema)|bad header|magic|schema/i, () => ({
      kind: 'badformat',
      title: 'This is not a readable zrecord store',
      text: `The files were found, but meta.zr does not hold a valid store header: ${msg}`,
      fix: ['Check the URL points at the store directory (the one holding meta.zr and data.zr).', 'The store may be damaged or written by an incompatible tool.'],
    })],
    ['notfound', /\b404\b|not found|no such/i, () => ({
      kind: 'notfound',
      title: 'No store at this address',
      text: ctx.local ? 'The chosen folder does not hold a store.' : `${host || 'The server'} answered "not found" (404) for the store's files.`,
      fix: ctx.local ? ['Pick the store directory itself: the folder that holds meta.zr and data.zr.']
        : ['Check the URL: it must name the store directory (the folder holding meta.zr and data.zr), e.g. https://host/stores/train/.',
          'A zstd_dict store also needs its dict.zr.'],
    })],
    ['forbidden', /\b403\b|forbidden|denied|\b401\b|unauthori[sz]ed/i, () => ({
      kind: 'forbidden',
      title: 'The server refused access to the store',
      text: `${host || 'The server'} answered "forbidden" (403/401).`,
      fix: ['Make the files readable to this client (bucket policy, file permissions).', 'A signed URL may have expired: get a fresh one.'],
    })],
    ['busy', /busy/i, () => ({
      kind: 'busy',
      title: 'The store is being written',
      text: 'A writer holds the store open, so it cannot be read yet.',
      fix: ['Wait for the writer to finish, then reopen.'],
    })],
  ];
  const rule = rules.find(([k]) => k === kind) || rules.find(([, re]) => re.test(msg));
  if (rule) return { ...rule[2](), message: msg };
  return {
    kind: 'other',
    title: 'The store could not be read',
    text: msg || 'Unknown error.',
    fix: ['Reload the page and try again. If it persists, open the browser console for details.'],
    message: msg,
  };
}

/**
 * A fetch that fails in the browser looks the same whether CORS blocked it,
 * the server is down or the page is https and the store http. Tell them
 * apart: an opaque (no-cors) request succeeds only if the server answered.
 */
export async function refine(x, ctx = {}) {
  if (x.kind !== 'cors' || !ctx.url) return x;
  const url = new URL(ctx.url, location.href);
  if (location.protocol === 'https:' && url.protocol === 'http:') {
    return {
      ...x,
      kind: 'mixed',
      title: 'The browser blocks http:// stores on an https:// page',
      text: `This page was loaded over https, so the browser refuses to read ${url.host} over plain http (mixed content).`,
      fix: ['Serve the store over https, or open the viewer over http (e.g. the one `zrecord serve` starts).'],
      code: null,
    };
  }
  try {
    await fetch(new URL('meta.zr', url), { mode: 'no-cors', cache: 'no-store' });
    return x; // the server answered: it was CORS
  } catch {
    return {
      ...x,
      kind: 'unreachable',
      title: `Could not connect to ${url.host}`,
      text: `No answer from ${url.origin}: the server is not running, the address or port is wrong, or a firewall is in the way.`,
      fix: ['Check the server is running and the URL is right (http or https, host, port).', 'Start one with `zrecord serve DIR` to serve a local directory of stores.'],
      code: null,
    };
  }
}

function checkOf(msg) {
  const m = /corrupt[^:]*:\s*(.*)$/i.exec(msg);
  const detail = m ? m[1] : msg;
  return detail.endsWith('.') ? detail : `${detail}.`;
}

function hostOf(url) {
  try {
    return url ? new URL(url, location.href).host : '';
  } catch {
    return '';
  }
}
