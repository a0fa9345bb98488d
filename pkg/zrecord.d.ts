/* tslint:disable */
/* eslint-disable */

/** Options of `Store.open` (all optional). */
export interface OpenOptions {
    /** Extra headers sent with every request (a CORS preflight follows for non-safelisted ones). */
    headers?: Record<string, string> | Headers;
    /** A fetch-compatible function used instead of the global fetch. */
    fetch?: (url: string, init: RequestInit) => Promise<Response>;
    /** Aborts the open. */
    signal?: AbortSignal;
    /** Per-request time limit in ms (default 30000; 0 for none). */
    timeoutMs?: number;
    /** Merge record ranges at most this many bytes apart (default 65536). */
    maxGap?: number;
    /** Largest merged request in bytes (default 8 MiB). */
    maxRequest?: number;
    /** Requests in flight (default 6). */
    concurrency?: number;
    /** Location pages (64 KiB, 4096 records) kept cached (default 64). */
    cachePages?: number;
    /** Retries of transient failures (default 3). */
    retries?: number;
    /** First retry delay in ms, doubled each time (default 200). */
    backoffMs?: number;
    /** Send If-Match with the first ETag (default false; costs a CORS preflight). */
    ifMatch?: boolean;
    /** Check every gathered record against the store's sums.zr sidecar: true or "always" (an unsealed
     * store fails to open), "if-sealed" (only when it has one), false or "off" (default). */
    verify?: boolean | "off" | "if-sealed" | "always";
}
/** Options of a single call. */
export interface CallOptions { signal?: AbortSignal; }
/** Local files: a FileList / File[] named meta.zr, data.zr (dict.zr), or Blobs by role. */
export type LocalFiles = FileList | File[] | { meta: Blob; data: Blob; dict?: Blob; sums?: Blob };
export type Elements = Uint8Array | Int8Array | Int16Array | Uint16Array | Int32Array |
Uint32Array | Float32Array | Float64Array | BigInt64Array | BigUint64Array;
/** A gathered Dense batch: `data` holds `shape` in C order (raw bytes for dtypes JS has no array for). */
export interface DenseBatch { data: Elements; shape: number[]; dtype: string; }
/** A gathered Ragged batch: record k is `values.subarray(offsets[k], offsets[k + 1])` of shape `shapes[k]`. */
export interface RaggedBatch { values: Elements; offsets: Uint32Array; shapes: number[][]; dtype: string; }
/** One record. */
export interface StoreRecord { data: Elements; shape: number[]; dtype: string; }
/** Record locations: byte offset in data.zr, stored and decoded lengths. */
export interface Locs { offset: Float64Array; phys: Uint32Array; logic: Uint32Array; }
export interface FileSizes { meta: number; data: number | null; dict: number | null; }
export interface StoreStats {
    requests: number; bytes: number; retries: number; metaRequests: number; dataRequests: number;
    dictRequests: number; sumsRequests: number; pageHits: number; pageMisses: number; cachedPages: number;
}
export interface StoreInfo {
    url: string; len: number; kind: "dense" | "ragged"; dtype: string; itemShape: number[] | null;
    codec: "raw" | "zstd" | "zstd_dict"; tailOffset: number; schemaLength: number;
    schema: Uint8Array; fileSizes: FileSizes;
}



export interface DatasetColumnInfo {
    name: string; kind: "dense" | "ragged"; dtype: string; itemShape: number[] | null;
    codec: "raw" | "zstd" | "zstd_dict";
}
export interface DatasetShard { path: string; length: number; start: number; }



/**
 * A dataset opened over HTTP(S): its manifest, and its columns.
 */
export class Dataset {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Column `name` (or its position) as a `DatasetColumn`.
     */
    column(which: string | number): DatasetColumn;
    /**
     * Open the dataset at `url` (its root, or its `zrecord.json`): reads
     * the manifest and looks for a newer version (two requests); shards
     * open on first touch. Options as for `Store.open`, plus `version` (a
     * committed version to read instead of the newest).
     */
    static open(url: string, options?: OpenOptions & { version?: number }): Promise<Dataset>;
    /**
     * The position (in `shards`) of the shard holding global record `index`.
     */
    shardOf(index: number): number;
    /**
     * Requests and bytes spent reading the manifest: `{requests, bytes}`
     * (each column counts its own).
     */
    stats(): { requests: number; bytes: number };
    /**
     * The columns: `[{name, kind, dtype, itemShape, codec}]`.
     */
    readonly columns: DatasetColumnInfo[];
    /**
     * Records in all shards.
     */
    readonly length: number;
    /**
     * The shards in order: `[{path, length, start}]` (`start`: the global
     * index of the shard's first record).
     */
    readonly shards: DatasetShard[];
    /**
     * The dataset root's URL (ending in `/`).
     */
    readonly url: string;
    /**
     * The committed version read.
     */
    readonly version: number;
}

/**
 * One column of a [`JsDataset`], read like a `Store`.
 */
export class DatasetColumn {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Gather records by global index, as `Store.gather` (shards opened on
     * first touch). Options: `signal`.
     */
    gather(indices: ArrayLike<number | bigint> | Iterable<number | bigint>, options?: CallOptions): Promise<DenseBatch | RaggedBatch>;
    /**
     * `{url, name, len, kind, dtype, itemShape, codec, shards}`.
     */
    info(): object;
    /**
     * Requests and bytes this column's shards cost: `{requests, bytes}`.
     */
    stats(): { requests: number; bytes: number };
    /**
     * The Arrow type the column was written from (`string`, `binary`, ...),
     * when it was: the viewer shows a `string` column's records as text.
     */
    readonly arrow: string | undefined;
    /**
     * Whether gathers check records against the shards' checksum sidecars.
     */
    readonly checked: boolean;
    /**
     * `"raw"`, `"zstd"` or `"zstd_dict"`.
     */
    readonly codec: string;
    /**
     * NumPy dtype string.
     */
    readonly dtype: string;
    /**
     * `item_shape` of a Dense column, `null` for Ragged.
     */
    readonly itemShape: number[] | null;
    /**
     * `"dense"` or `"ragged"`.
     */
    readonly kind: string;
    /**
     * Records in all shards.
     */
    readonly len: number;
    /**
     * The column's name.
     */
    readonly name: string;
    /**
     * How many of its shards are open.
     */
    readonly openShards: number;
}

/**
 * A store, opened over HTTP(S) or from local files.
 */
export class Store {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    /**
     * File sizes `{meta, data, dict}` (`data` is `null` until a record was
     * read; `dict` is `null` without a dictionary).
     */
    fileSizes(): FileSizes;
    /**
     * Gather records (Array or typed array of indices, any order, repeats
     * allowed). Dense: `{data, shape, dtype}` with `data` a TypedArray of
     * `shape` in C order. Ragged: `{values, offsets, shapes, dtype}`: record
     * `k` is `values.subarray(offsets[k], offsets[k + 1])` of shape
     * `shapes[k]`. Options: `signal`.
     */
    gather(indices: ArrayLike<number | bigint> | Iterable<number | bigint>, options?: CallOptions): Promise<DenseBatch | RaggedBatch>;
    /**
     * One record: `{data, shape, dtype}`. Options: `signal`.
     */
    get(index: number, options?: CallOptions): Promise<StoreRecord>;
    /**
     * Everything known about the store: `{url, len, kind, dtype, itemShape,
     * codec, tailOffset, schemaLength, schema (Uint8Array), fileSizes}`.
     */
    info(): StoreInfo;
    /**
     * Locations of records `start .. start + count`: `{offset (Float64Array),
     * phys (Uint32Array), logic (Uint32Array)}` (stored and decoded bytes).
     * Options: `signal`.
     */
    locs(start: number, count: number, options?: CallOptions): Promise<Locs>;
    /**
     * Open a store from local files: a `FileList` or an Array of `File`s
     * named `meta.zr`, `data.zr` (and `dict.zr`, `sums.zr`), e.g. from
     * `<input type=file webkitdirectory>`, or an object
     * `{meta, data, dict?, sums?}` of Blobs. Options as for `open` (minus fetch).
     */
    static openFiles(files: LocalFiles, options?: OpenOptions): Promise<Store>;
    /**
     * Open the store at `url` (its directory, or its `meta.zr`). Options:
     * `headers` (object or Headers sent with every request), `fetch` (a
     * fetch-compatible function), `signal` (AbortSignal), `timeoutMs`
     * (per request, default 30000), `maxGap`, `maxRequest`, `concurrency`,
     * `cachePages`, `retries`, `backoffMs`, `ifMatch`, `verify` (`true`,
     * `"always"`, `"if-sealed"`: check records against `sums.zr`).
     */
    static open(url: string, options?: OpenOptions): Promise<Store>;
    /**
     * Requests and bytes spent so far: `{requests, bytes, retries,
     * metaRequests, dataRequests, dictRequests, sumsRequests, pageHits, pageMisses, cachedPages}`.
     */
    stats(): StoreStats;
    /**
     * Whether gathers check records against the store's checksum sidecar
     * (opened with `verify` and sealed); a changed record then fails with
     * code `ChecksumMismatch`.
     */
    readonly checked: boolean;
    /**
     * `"raw"`, `"zstd"` or `"zstd_dict"`.
     */
    readonly codec: string;
    /**
     * NumPy dtype string, e.g. `"<f4"`.
     */
    readonly dtype: string;
    /**
     * `item_shape` of a Dense store (Array of numbers), `null` for Ragged.
     */
    readonly itemShape: number[] | null;
    /**
     * `"dense"` or `"ragged"`.
     */
    readonly kind: string;
    /**
     * Number of records.
     */
    readonly len: number;
    /**
     * The store's directory URL (`local:NAME/` for local files).
     */
    readonly url: string;
}

export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

export interface InitOutput {
    readonly memory: WebAssembly.Memory;
    readonly __wbg_dataset_free: (a: number, b: number) => void;
    readonly __wbg_datasetcolumn_free: (a: number, b: number) => void;
    readonly __wbg_store_free: (a: number, b: number) => void;
    readonly dataset_column: (a: number, b: number, c: any) => void;
    readonly dataset_columns: (a: number) => any;
    readonly dataset_length: (a: number) => number;
    readonly dataset_open: (a: number, b: number, c: number) => any;
    readonly dataset_shardOf: (a: number, b: number, c: number) => void;
    readonly dataset_shards: (a: number) => any;
    readonly dataset_stats: (a: number) => any;
    readonly dataset_url: (a: number, b: number) => void;
    readonly dataset_version: (a: number) => number;
    readonly datasetcolumn_arrow: (a: number, b: number) => void;
    readonly datasetcolumn_checked: (a: number) => number;
    readonly datasetcolumn_codec: (a: number, b: number) => void;
    readonly datasetcolumn_dtype: (a: number, b: number) => void;
    readonly datasetcolumn_gather: (a: number, b: any, c: number) => any;
    readonly datasetcolumn_info: (a: number) => any;
    readonly datasetcolumn_itemShape: (a: number) => any;
    readonly datasetcolumn_kind: (a: number, b: number) => void;
    readonly datasetcolumn_len: (a: number) => number;
    readonly datasetcolumn_name: (a: number, b: number) => void;
    readonly datasetcolumn_openShards: (a: number) => number;
    readonly datasetcolumn_stats: (a: number) => any;
    readonly store_checked: (a: number) => number;
    readonly store_codec: (a: number, b: number) => void;
    readonly store_dtype: (a: number, b: number) => void;
    readonly store_fileSizes: (a: number) => any;
    readonly store_gather: (a: number, b: any, c: number) => any;
    readonly store_get: (a: number, b: number, c: number) => any;
    readonly store_info: (a: number) => any;
    readonly store_itemShape: (a: number) => any;
    readonly store_kind: (a: number, b: number) => void;
    readonly store_len: (a: number) => number;
    readonly store_locs: (a: number, b: number, c: number, d: number) => any;
    readonly store_open: (a: number, b: number, c: number) => any;
    readonly store_openFiles: (a: any, b: number) => any;
    readonly store_stats: (a: number) => any;
    readonly store_url: (a: number, b: number) => void;
    readonly __wasm_bindgen_func_elem_860: (a: number, b: number, c: number, d: any) => void;
    readonly __wasm_bindgen_func_elem_873: (a: number, b: number, c: any, d: any) => void;
    readonly __wbindgen_export: (a: number, b: number) => number;
    readonly __wbindgen_export2: (a: number, b: number, c: number, d: number) => number;
    readonly __wbindgen_export3: (a: number, b: number, c: number) => void;
    readonly __wbindgen_export4: (a: number) => void;
    readonly __wbindgen_export5: () => number;
    readonly __wbindgen_externrefs: WebAssembly.Table;
    readonly __wbindgen_export6: (a: number, b: number) => void;
    readonly __wbindgen_add_to_stack_pointer: (a: number) => number;
    readonly __wbindgen_export7: (a: number) => void;
    readonly __wbindgen_start: () => void;
}

export type SyncInitInput = BufferSource | WebAssembly.Module;

/**
 * Instantiates the given `module`, which can either be bytes or
 * a precompiled `WebAssembly.Module`.
 *
 * @param {{ module: SyncInitInput }} module - Passing `SyncInitInput` directly is deprecated.
 *
 * @returns {InitOutput}
 */
export function initSync(module: { module: SyncInitInput } | SyncInitInput): InitOutput;

/**
 * If `module_or_path` is {RequestInfo} or {URL}, makes a request and
 * for everything else, calls `WebAssembly.instantiate` directly.
 *
 * @param {{ module_or_path: InitInput | Promise<InitInput> }} module_or_path - Passing `InitInput` directly is deprecated.
 *
 * @returns {Promise<InitOutput>}
 */
export default function __wbg_init (module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>): Promise<InitOutput>;
