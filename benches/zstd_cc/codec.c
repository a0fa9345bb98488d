/* One thread of libzstd on loaderx's images: compress (level 3, or 19 with
 * a dictionary, as loaderx's zstd and zstd_dict codecs) and decompress the
 * same frames. Built from the same libzstd sources with different C
 * compilers by run.sh, to see what the compiler alone changes.
 *
 *   codec IMAGES DICT RECORD_BYTES ROUNDS LABEL
 *
 * Prints one line per codec: best-of-ROUNDS MB/s compressing and
 * decompressing every record once, and the frames' total size (which must
 * not depend on the compiler). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zstd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END)) { perror(path); exit(2); }
    *len = (size_t)ftell(f);
    rewind(f);
    char *buf = malloc(*len);
    if (!buf || fread(buf, 1, *len, f) != *len) { perror(path); exit(2); }
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: codec IMAGES DICT RECORD_BYTES ROUNDS LABEL\n"); return 2; }
    size_t n_in, n_dict, rec = strtoul(argv[3], 0, 10);
    int rounds = atoi(argv[4]);
    char *in = slurp(argv[1], &n_in), *dict = slurp(argv[2], &n_dict);
    size_t n = n_in / rec, cap = ZSTD_compressBound(rec);
    char *frames = malloc(cap * n), *out = malloc(rec);
    size_t *sizes = malloc(n * sizeof *sizes);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    for (int with_dict = 0; with_dict < 2; with_dict++) {
        int level = with_dict ? 19 : 3;
        ZSTD_CDict *cd = with_dict ? ZSTD_createCDict(dict, n_dict, level) : NULL;
        ZSTD_DDict *dd = with_dict ? ZSTD_createDDict(dict, n_dict) : NULL;
        double best_c = 1e30, best_d = 1e30;
        size_t total = 0;
        for (int r = 0; r < rounds; r++) {
            double t = now();
            total = 0;
            for (size_t i = 0; i < n; i++) {
                size_t z = cd ? ZSTD_compress_usingCDict(cctx, frames + i * cap, cap, in + i * rec, rec, cd)
                              : ZSTD_compressCCtx(cctx, frames + i * cap, cap, in + i * rec, rec, level);
                if (ZSTD_isError(z)) { fprintf(stderr, "%s\n", ZSTD_getErrorName(z)); return 1; }
                sizes[i] = z;
                total += z;
            }
            if (now() - t < best_c) best_c = now() - t;
            t = now();
            for (size_t i = 0; i < n; i++) {
                size_t z = dd ? ZSTD_decompress_usingDDict(dctx, out, rec, frames + i * cap, sizes[i], dd)
                              : ZSTD_decompressDCtx(dctx, out, rec, frames + i * cap, sizes[i]);
                if (z != rec) { fprintf(stderr, "frame %zu does not decode\n", i); return 1; }
            }
            if (now() - t < best_d) best_d = now() - t;
        }
        printf("| %s | %s | %.1f | %.0f | %zu |\n", argv[5], with_dict ? "zstd_dict (19)" : "zstd (3)",
               n * rec / best_c / 1e6, n * rec / best_d / 1e6, total);
        ZSTD_freeCDict(cd);
        ZSTD_freeDDict(dd);
    }
    return 0;
}
