"""MosaicML Streaming (MDS) as the peer of zrecord's node-local cache bench.

The peer of `cargo bench --bench cache` (benches/cache.rs): 100,000 records
of 512 int32 tokens (2 KiB each, the same Zipf-like ids as benches/common's
`Workload::DenseTokens`, drawn with NumPy's SFC64, so not byte-identical),
written with MDS's `MDSWriter` (column `ndarray:int32:512`, compression
`zstd`, default shard size limit 1 << 26 = 64 MiB of raw samples), served from
moto's S3 server (`moto_server`, in-memory) behind a counting HTTP proxy in
this process that sleeps 20 ms before forwarding each request. The installed
MDS (0.13.0) downloads from s3, sftp, gs, oci, hf, azure, azure-dl, dbfs,
dbfs-uc, alipan and local paths only (streaming/base/storage/download.py):
there is no plain-HTTP downloader, hence S3 through `S3_ENDPOINT_URL`, with
dummy credentials (moto checks no signature here).

Each row is an epoch read by 4 processes at once (multiprocessing spawn),
each `StreamingDataset(remote=s3://..., local=<one shared cache dir>,
shuffle=True, batch_size=64)` as rank r of 4 on one node (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE set in each process; no torch.distributed
group), iterated through a torch DataLoader (batch 64, 2 workers; or directly
with --no-torch). 4 x 64 = 256 records per global step, 391 steps per epoch.
Every process hashes each record it receives (XXH3-64); the sums over the 4
processes are compared with the whole dataset's, so a row is marked verified
when the epoch delivered each record exactly once.

Rows: cold first epoch (empty cache), the second and later epochs of the same
processes (median of --rounds), the same cache read by new processes, MDS's
local dataset with no remote (the local-disk reference: its second epochs,
median), and `cache_limit` at half the dataset: first with the default shards
(MDS refuses a limit below 4 x the largest shard) and then with 8 MiB shards
(cold epoch and second epoch, against the same shards without a limit).

    python3 -m venv ~/.cache/zrecord/venv-mds
    ~/.cache/zrecord/venv-mds/bin/pip install mosaicml-streaming==0.13.0 \
        numpy==2.1.3 torch==2.15.0 'moto[server]==5.2.5' xxhash==3.8.2
    ~/.cache/zrecord/venv-mds/bin/python benches/cache_mds.py \
        --epoch-timeout 120 --json benches/results/cache-mds.json   # the recorded run
    ~/.cache/zrecord/venv-mds/bin/python benches/cache_mds.py --no-torch \
        --epoch-timeout 240 --json benches/results/cache-mds-no-torch.json
    ~/.cache/zrecord/venv-mds/bin/python benches/cache_mds.py --quick  # 10,000 records

The DataLoader's workers are forked (multiprocessing_context='fork'), as they
are under torchrun: the 4 readers are spawned, so their default start method
is spawn, and 8 spawned workers importing torch at every epoch stalled each
epoch's first batch ~53 s on this 2-core machine.

(boto3 1.44.8 / botocore 1.44.8 came with mosaicml-streaming.) Results:
benches/results/cache-mds.md.
"""

import argparse
import http.client
import json
import multiprocessing as mp
import os
import queue
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import xxhash

SEED = 20_261_202
WORLD = 4
BATCH = 64  # per process; 4 x 64 = the global batch of 256
LATENCY = 0.020
BUCKET = 'mds-bench'
SMALL_SHARDS = 8 << 20  # size_limit of the dataset for the cache_limit rows
MASK = (1 << 64) - 1
EPOCH_TIMEOUT = 300.0  # seconds; --epoch-timeout


# ---------------------------------------------------------------- records

def tokens(n: int) -> np.ndarray:
    """n x 512 int32 Zipf-like ids: a discretised Pareto tail, exponent 1.3, mod GPT-2's 50,257."""
    rng = np.random.Generator(np.random.SFC64(SEED))
    out = np.empty((n, 512), np.int32)
    step = 10_000
    for a in range(0, n, step):
        b = min(n, a + step)
        u = ((rng.integers(0, 1 << 64, (b - a, 512), dtype=np.uint64, endpoint=False) >> np.uint64(11))
             + np.uint64(1)).astype(np.float64) / float(1 << 53)
        x = np.minimum(u ** (-1.0 / 0.3), 1e18).astype(np.uint64)
        out[a:b] = (x % np.uint64(50_257)).astype(np.int32)
    return out


def write_mds(out: str, data: np.ndarray, size_limit) -> dict:
    from streaming import MDSWriter
    kw = {} if size_limit is None else {'size_limit': size_limit}
    t0 = time.perf_counter()
    with MDSWriter(out=out, columns={'tokens': 'ndarray:int32:512'}, compression='zstd', **kw) as w:
        for row in data:
            w.write({'tokens': row})
    secs = time.perf_counter() - t0
    index = json.load(open(os.path.join(out, 'index.json')))
    shards = index['shards']
    return {
        'size_limit': size_limit if size_limit is not None else 1 << 26,
        'shards': len(shards),
        'raw_bytes': sum(s['raw_data']['bytes'] for s in shards),
        'zip_bytes': sum(s['zip_data']['bytes'] for s in shards),
        'max_shard_raw_plus_zip': max(s['raw_data']['bytes'] + s['zip_data']['bytes'] for s in shards),
        'write_secs': secs,
    }


# ---------------------------------------------------------------- server

def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Proxy:
    """Forwards every request to moto after LATENCY seconds; counts them by method."""

    def __init__(self, upstream_port: int):
        self.lock = threading.Lock()
        self.counts = {}
        self.bytes = 0
        local = threading.local()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *a):
                pass

            def forward(self):
                with proxy.lock:
                    proxy.counts[self.command] = proxy.counts.get(self.command, 0) + 1
                time.sleep(LATENCY)
                n = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(n) if n else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ('connection', 'keep-alive')}
                for attempt in range(2):
                    conn = getattr(local, 'conn', None)
                    if conn is None:
                        conn = local.conn = http.client.HTTPConnection('127.0.0.1', upstream_port, timeout=120)
                    try:
                        conn.request(self.command, self.path, body=body, headers=headers)
                        resp = conn.getresponse()
                        data = resp.read()
                        break
                    except (http.client.HTTPException, OSError):
                        conn.close()
                        local.conn = None
                        if attempt:
                            raise
                with proxy.lock:
                    proxy.bytes += len(data)
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ('transfer-encoding', 'connection', 'keep-alive', 'content-length'):
                        self.send_header(k, v)
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                if self.command != 'HEAD':
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = forward

        self.server = ThreadingHTTPServer(('127.0.0.1', free_port()), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def snapshot(self):
        with self.lock:
            return dict(self.counts), self.bytes

    def close(self):
        self.server.shutdown()


def start_moto(venv_bin: str):
    port = free_port()
    proc = subprocess.Popen([os.path.join(venv_bin, 'moto_server'), '-H', '127.0.0.1', '-p', str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(('127.0.0.1', port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError('moto_server did not start')


def aws_env(endpoint: str):
    for k in ('AWS_PROFILE', 'AWS_SESSION_TOKEN', 'AWS_CONFIG_FILE', 'AWS_ENDPOINT_URL'):
        os.environ.pop(k, None)
    os.environ.update({'AWS_ACCESS_KEY_ID': 'testing', 'AWS_SECRET_ACCESS_KEY': 'testing',
                       'AWS_DEFAULT_REGION': 'us-east-1', 'S3_ENDPOINT_URL': endpoint})


def upload(moto_port: int, src: str, prefix: str):
    import boto3
    s3 = boto3.client('s3', endpoint_url=f'http://127.0.0.1:{moto_port}')
    try:
        s3.create_bucket(Bucket=BUCKET)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    for name in sorted(os.listdir(src)):
        s3.upload_file(os.path.join(src, name), BUCKET, f'{prefix}/{name}')


# ---------------------------------------------------------------- workers

def worker(rank, remote, local, cache_limit, epochs, use_torch, start, end, results, master_port):
    # MDS's own env:// rendezvous: with WORLD_SIZE > 1 and no process group, StreamingDataset
    # starts a gloo group for its set-up barrier and destroys it after.
    os.environ.update({'RANK': str(rank), 'WORLD_SIZE': str(WORLD), 'LOCAL_RANK': str(rank),
                       'LOCAL_WORLD_SIZE': str(WORLD), 'MASTER_ADDR': '127.0.0.1',
                       'MASTER_PORT': str(master_port)})
    import warnings
    warnings.filterwarnings('ignore', message='The given NumPy array is not writable')
    from streaming import StreamingDataset
    try:
        ds = StreamingDataset(remote=remote, local=local, shuffle=True, batch_size=BATCH,
                              cache_limit=cache_limit)
    except Exception as e:  # reported as the row's error
        start.abort()
        results.put({'rank': rank, 'error': f'{type(e).__name__}: {e}'})
        return
    if use_torch:
        import torch
        from torch.utils.data import DataLoader
        torch.set_num_threads(1)
        # fork, as under torchrun: this process was spawned, so multiprocessing's default here is
        # spawn, and 8 spawned workers importing torch per epoch stall ~50 s on 2 cores.
        loader = DataLoader(ds, batch_size=BATCH, num_workers=2, multiprocessing_context='fork')
    for epoch in range(epochs):
        try:
            start.wait()
        except Exception:
            return
        records, total = 0, 0
        t0 = time.perf_counter()
        try:
            if use_torch:
                for batch in loader:
                    a = batch['tokens'].numpy()
                    for row in a:
                        total += xxhash.xxh3_64_intdigest(row.tobytes())
                    records += len(a)
            else:
                for sample in ds:
                    total += xxhash.xxh3_64_intdigest(sample['tokens'].tobytes())
                    records += 1
            err = None
        except Exception as e:
            err = f'{type(e).__name__}: {e}'
        secs = time.perf_counter() - t0
        results.put({'rank': rank, 'epoch': epoch, 'records': records, 'secs': secs,
                     'hash': total & MASK, 'error': err})
        try:
            end.wait()
        except Exception:
            return
        if err:
            return


def run(name, remote, local, epochs, use_torch, proxy, want, cache_limit=None):
    """4 processes reading `epochs` epochs; one dict per epoch."""
    from streaming.base.util import clean_stale_shared_memory
    clean_stale_shared_memory()
    ctx = mp.get_context('spawn')
    start, end = ctx.Barrier(WORLD + 1, timeout=900), ctx.Barrier(WORLD + 1, timeout=900)
    results = ctx.Queue()
    master_port = free_port()
    procs = [ctx.Process(target=worker, args=(r, remote, local, cache_limit, epochs, use_torch, start, end,
                                               results, master_port)) for r in range(WORLD)]
    first = proxy.snapshot() if proxy else ({}, 0)  # the first epoch counts the index reads at the start
    for p in procs:
        p.start()
    out = []
    for e in range(epochs):
        try:
            start.wait()
        except Exception as ex:
            print(f'  {name}: start barrier: {type(ex).__name__} {ex}', flush=True)
            break
        before = first if e == 0 else proxy.snapshot() if proxy else ({}, 0)
        t0 = time.perf_counter()
        got = []
        try:
            for _ in range(WORLD):
                got.append(results.get(timeout=max(1.0, t0 + EPOCH_TIMEOUT - time.perf_counter())))
        except queue.Empty:
            got.append({'error': f'did not finish in {EPOCH_TIMEOUT:.0f} s (stopped)'})
            for p in procs:
                p.kill()
        wall = time.perf_counter() - t0
        after = proxy.snapshot() if proxy else ({}, 0)
        errors = [g['error'] for g in got if g.get('error')]
        try:
            if not errors:
                end.wait()
            else:
                end.abort()
        except Exception:
            pass
        requests = {k: v - before[0].get(k, 0) for k, v in after[0].items() if v - before[0].get(k, 0)}
        records = sum(g.get('records', 0) for g in got)
        row = {
            'name': name, 'epoch': e + 1, 'records': records, 'wall_secs': wall,
            'records_per_s': sum(g['records'] / g['secs'] for g in got if g.get('secs')),
            'ranks_reported': sum(1 for g in got if 'rank' in g),
            'records_per_s_wall': records / wall,
            'server_requests': sum(requests.values()), 'requests_by_method': requests,
            'mib_served': (after[1] - before[1]) / (1 << 20),
            'verified': not errors and records == want[0] and sum(g['hash'] for g in got) & MASK == want[1],
            'errors': errors,
        }
        print(f"  {name}, epoch {e + 1}: {row['records_per_s']:.0f} records/s, {wall:.2f} s, "
              f"{row['server_requests']} requests {requests}, verified {row['verified']}"
              + (f', errors {errors[:1]}' if errors else ''), flush=True)
        out.append(row)
        if errors:
            break
    if not out:  # the dataset could not be built
        got = []
        for p in procs:
            p.join(timeout=60)
        while not results.empty():
            got.append(results.get())
        errors = sorted({g['error'] for g in got if g.get('error')})
        print(f'  {name}: failed to start: {errors[:1]}', flush=True)
        out.append({'name': name, 'epoch': 1, 'errors': errors, 'verified': False})
    for p in procs:
        p.join(timeout=120)
        if p.is_alive():
            p.kill()
    return out


def median_row(rows, name):
    ok = [r for r in rows if not r.get('errors')]
    if not ok:
        return dict(rows[0] if rows else {'errors': ['no epoch ran']}, name=name, verified=False)
    rates = [r['records_per_s'] for r in ok]
    mid = sorted(ok, key=lambda r: r['records_per_s'])[len(ok) // 2]
    mid = dict(mid, name=f'{name} (median of {len(ok)})', rounds_records_per_s=rates,
               rounds_server_requests=[r['server_requests'] for r in ok],
               verified=all(r['verified'] for r in rows))
    return mid


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


# ---------------------------------------------------------------- main

def main():
    global EPOCH_TIMEOUT
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--records', type=int, default=100_000)
    ap.add_argument('--rounds', type=int, default=5, help='timed later epochs per run (median)')
    ap.add_argument('--quick', action='store_true', help='10,000 records, 2 rounds')
    ap.add_argument('--no-torch', action='store_true', help='iterate the datasets without a DataLoader')
    ap.add_argument('--json')
    ap.add_argument('--workdir', help='where to write (default: a temporary directory)')
    ap.add_argument('--epoch-timeout', type=float, default=EPOCH_TIMEOUT,
                    help='stop an epoch still running after this many seconds (its row says so)')
    args = ap.parse_args()
    EPOCH_TIMEOUT = args.epoch_timeout
    if args.quick:
        args.records, args.rounds = 10_000, 2
    load_start = os.getloadavg()
    import streaming
    use_torch = not args.no_torch
    if use_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            use_torch = False
    versions = {'mosaicml-streaming': streaming.__version__, 'numpy': np.__version__,
                'python': sys.version.split()[0]}
    if use_torch:
        import torch
        versions['torch'] = torch.__version__
    import boto3
    import moto
    versions.update({'boto3': boto3.__version__, 'moto': moto.__version__})
    command = 'python ' + ' '.join([os.path.relpath(sys.argv[0])] + sys.argv[1:])
    n = args.records
    steps = -(-n // (WORLD * BATCH))
    print(f'# MDS cache bench: {n} records of 2 KiB int32 tokens (zstd), {WORLD} processes x batch {BATCH}, '
          f'{steps} steps per epoch, {LATENCY * 1000:.0f} ms per request, '
          f'{"torch DataLoader (2 workers)" if use_torch else "no DataLoader"}, '
          f'load average at start {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}, {versions}',
          flush=True)

    root = tempfile.mkdtemp(prefix='mds-bench-', dir=args.workdir)
    moto_proc = None
    proxy = None
    try:
        data = tokens(n)
        want = (n, sum(xxhash.xxh3_64_intdigest(r.tobytes()) for r in data) & MASK)
        big, small = os.path.join(root, 'mds'), os.path.join(root, 'mds-8mib')
        datasets = {'default': write_mds(big, data, None), '8mib': write_mds(small, data, SMALL_SHARDS)}
        del data
        print(f'  written: {datasets}', flush=True)

        moto_proc, moto_port = start_moto(os.path.dirname(sys.executable))
        aws_env('')
        upload(moto_port, big, 'mds')
        upload(moto_port, small, 'mds-8mib')
        proxy = Proxy(moto_port)
        os.environ['S3_ENDPOINT_URL'] = f'http://127.0.0.1:{proxy.port}'
        remote, remote_small = f's3://{BUCKET}/mds', f's3://{BUCKET}/mds-8mib'
        epochs = 1 + args.rounds
        rows, extra = [], {}

        cache = os.path.join(root, 'cache')
        a = run('cache', remote, cache, epochs, use_torch, proxy, want)
        rows.append(dict(a[0], name='cache, first epoch (cold)'))
        rows.append(median_row(a[1:], 'cache, second epoch'))
        extra['cache_dir_bytes'] = dir_bytes(cache)

        local = os.path.join(root, 'local')
        shutil.copytree(big, local)
        b = run('local', None, local, epochs, use_torch, None, want)
        rows.append(median_row(b[1:], 'local disk (no remote), second epoch'))
        extra['local_first_epoch'] = b[0]

        c = run('cache, warm, new processes', remote, cache, 1, use_torch, proxy, want)
        rows.append(c[0])

        half = datasets['default']['raw_bytes'] // 2
        d = run('cache_limit = half, default shards', remote, os.path.join(root, 'cache-lim'), 1, use_torch,
                proxy, want, cache_limit=half)
        rows.append(dict(d[0], cache_limit=half))

        half_small = datasets['8mib']['raw_bytes'] // 2
        e = run('8 MiB shards', remote_small, os.path.join(root, 'cache-small'), 2, use_torch, proxy, want)
        rows.append(dict(e[0], name='8 MiB shards, no limit, first epoch (cold)'))
        if len(e) > 1:
            rows.append(dict(e[1], name='8 MiB shards, no limit, second epoch'))
        f = run('8 MiB shards, cache_limit = half', remote_small, os.path.join(root, 'cache-small-lim'), 2,
                use_torch, proxy, want, cache_limit=half_small)
        rows.append(dict(f[0], name='8 MiB shards, cache_limit = half, first epoch (cold)', cache_limit=half_small))
        if len(f) > 1:
            rows.append(dict(f[1], name='8 MiB shards, cache_limit = half, second epoch', cache_limit=half_small))
        extra['cache_small_lim_dir_bytes_end'] = dir_bytes(os.path.join(root, 'cache-small-lim'))
    finally:
        if proxy:
            proxy.close()
        if moto_proc:
            moto_proc.terminate()
            moto_proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)

    print(f'\n| epoch, 4 processes | records/s | wall s | server requests | MiB served | verified |')
    print('|---|---:|---:|---:|---:|---|')
    for r in rows:
        if r.get('records_per_s') is None:
            print(f"| {r['name']} | — | — | — | — | failed: {r['errors'][0][:160] if r['errors'] else '?'} |")
            continue
        by = ', '.join(f'{k} {v}' for k, v in sorted(r['requests_by_method'].items()))
        print(f"| {r['name']} | {r['records_per_s']:.0f} | {r['wall_secs']:.2f} | {r['server_requests']}"
              f"{f' ({by})' if by else ''} | {r['mib_served']:.1f} | "
              f"{'yes' if r['verified'] else 'NO: ' + '; '.join(r['errors'])[:160] if r['errors'] else 'NO'} |")
    load_end = os.getloadavg()
    print(f'\nload average: start {load_start}, end {load_end}; command: {command}')
    if args.json:
        doc = {'command': command, 'records': n, 'world': WORLD, 'batch_per_process': BATCH, 'steps': steps,
               'latency_ms': LATENCY * 1000, 'dataloader': 'torch, 2 workers' if use_torch else 'none',
               'versions': versions, 'load_average_start': load_start, 'load_average_end': load_end,
               'datasets': datasets, 'rows': rows, 'extra': extra}
        with open(args.json, 'w') as fh:
            json.dump(doc, fh, indent=2)
        print(f'results written to {args.json}')


if __name__ == '__main__':
    main()
