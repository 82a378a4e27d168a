/*
 * obsclient — single-threaded epoll load client for "set a value -> observers
 * get notified" HTTP services.  Part of the bench harness in ../README.md.
 *
 * It opens N long-lived subscriber connections (SSE or etcd grpc-gateway
 * watch streams), waits until all are ready, optionally holds them idle, then
 * runs a writer (W keep-alive connections, paced at R writes/s for C writes,
 * or closed-loop at max rate for D seconds).  Every written value embeds its
 * send time (CLOCK_MONOTONIC ns) after a marker ("bts" by default); every
 * delivery is timestamped on receipt and latency = receipt - send.
 *
 * Everything target-specific (paths, bodies, headers, framing) comes from the
 * command line, which the Python adapters build.  Only loopback targets are
 * accepted.  All phases are bounded in time.
 *
 * Output: one line "READY {...}" on stdout after the connect phase, then a
 * final JSON object on stdout.  Progress/errors on stderr.
 *
 * ObsServer's copy (bench/obsclient.c, built by `make bench-queries` into
 * build/obsclient) of ../shared/bench/client/obsclient.c, which is read-only
 * here. One addition: --write-cycle writes the keys in order (write n goes to
 * key (n - 1) mod --write-keys) instead of at random, so a benchmark can know
 * which object each write reaches (bench/queries.py, W5). Two more for bench/presence.py:
 * --write-script FILE takes write n from line n of FILE (KIND, TAG, METHOD, PATH, BODY,
 * tab-separated; {TS} in PATH or BODY is the send time), and --tag-marker STR matches a
 * delivery to its write by the integer TAG after STR in the event (a subscriber's j-th event
 * of tag t is the j-th write of tag t), for events that carry no send time (a removal). Every
 * mode also reports, per write, when its last delivery arrived ("last_*"), and the script
 * mode reports each KIND apart ("kinds").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}
static void die(const char *m) { fprintf(stderr, "obsclient: %s\n", m); exit(2); }

/* ------------------------------------------------------------------ config */
enum { FR_SSE = 0, FR_ETCD = 1, FR_NDJSON = 2 };
enum { READY_HEADERS = 0, READY_MESSAGE = 1 };
#define MAXH 16
static struct {
    const char *host; int port;
    int subs, sub_keys;
    const char *key_pattern;
    const char *sub_method, *sub_path, *sub_body; const char *sub_hdr[MAXH]; int n_sub_hdr;
    int framing, ready_mode;
    const char *marker, *marker_after;
    char **vars; int nvars;
    int connect_window; double connect_timeout;
    double hold, settle;
    int writers, write_keys;
    const char *w_method, *w_path, *w_body; const char *w_hdr[MAXH]; int n_w_hdr;
    double rate; long count; double duration;
    double drain_max, drain_idle;
    int value_pad;
    unsigned seed;
    int write_cycle;
    const char *write_script, *tag_marker;
} C = {
    .host = "127.0.0.1", .port = 0, .subs = 0, .sub_keys = 1, .key_pattern = "key/{I}",
    .sub_method = "GET", .sub_path = "/", .sub_body = "", .framing = FR_SSE, .ready_mode = READY_HEADERS,
    .marker = "bts", .connect_window = 256, .connect_timeout = 60, .hold = 0, .settle = 0.5,
    .writers = 1, .write_keys = 0, .w_method = "POST", .w_path = "/", .w_body = "{VALUE}",
    .rate = 0, .count = 0, .duration = 0, .drain_max = 15, .drain_idle = 3, .value_pad = 0, .seed = 12345,
};

/* ------------------------------------------------------------------ base64 */
static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static int b64enc(const unsigned char *in, int n, char *out) {
    int o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (in[i] << 16) | (in[i + 1] << 8) | in[i + 2];
        out[o++] = B64[v >> 18]; out[o++] = B64[(v >> 12) & 63]; out[o++] = B64[(v >> 6) & 63]; out[o++] = B64[v & 63];
    }
    if (i < n) {
        uint32_t v = in[i] << 16; if (i + 1 < n) v |= in[i + 1] << 8;
        out[o++] = B64[v >> 18]; out[o++] = B64[(v >> 12) & 63];
        out[o++] = (i + 1 < n) ? B64[(v >> 6) & 63] : '='; out[o++] = '=';
    }
    out[o] = 0; return o;
}
static signed char D64[256];
static void b64init(void) { memset(D64, -1, 256); for (int i = 0; i < 64; i++) D64[(unsigned char)B64[i]] = i; }
static int b64dec(const char *in, int n, char *out) {
    uint32_t acc = 0; int bits = 0, o = 0;
    for (int i = 0; i < n; i++) {
        int d = D64[(unsigned char)in[i]]; if (d < 0) continue;
        acc = (acc << 6) | d; bits += 6;
        if (bits >= 8) { bits -= 8; out[o++] = (acc >> bits) & 0xff; }
    }
    out[o] = 0; return o;
}

/* --------------------------------------------------------------- templates */
typedef struct { char *p; int len, cap; } sbuf;
static void sb_put(sbuf *b, const char *s, int n) {
    if (b->len + n + 1 > b->cap) { b->cap = (b->len + n + 1) * 2 + 64; b->p = realloc(b->p, b->cap); }
    memcpy(b->p + b->len, s, n); b->len += n; b->p[b->len] = 0;
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static int64_t cur_ts; /* {TS}: the send time of the write being built */

/* expand {I} {S} {V} {KEY} {KEY_B64} {VALUE} {VALUE_B64} {VALUE_JSTR} {TS} */
static void expand(sbuf *out, const char *tpl, int idx, int sidx, const char *key, const char *val) {
    char tmp[4096];
    for (const char *p = tpl; *p;) {
        if (*p == '{') {
            if (!strncmp(p, "{TS}", 4)) { int n = snprintf(tmp, sizeof tmp, "%lld", (long long)cur_ts); sb_put(out, tmp, n); p += 4; continue; }
            if (!strncmp(p, "{I}", 3)) { int n = snprintf(tmp, sizeof tmp, "%d", idx); sb_put(out, tmp, n); p += 3; continue; }
            if (!strncmp(p, "{S}", 3)) { int n = snprintf(tmp, sizeof tmp, "%d", sidx); sb_put(out, tmp, n); p += 3; continue; }
            if (!strncmp(p, "{V}", 3)) { if (sidx >= 0 && sidx < C.nvars) sb_str(out, C.vars[sidx]); p += 3; continue; }
            if (!strncmp(p, "{KEY}", 5)) { sb_str(out, key); p += 5; continue; }
            if (!strncmp(p, "{KEY_B64}", 9)) { int n = b64enc((const unsigned char *)key, strlen(key), tmp); sb_put(out, tmp, n); p += 9; continue; }
            if (val && !strncmp(p, "{VALUE}", 7)) { sb_str(out, val); p += 7; continue; }
            if (val && !strncmp(p, "{VALUE_B64}", 11)) { int n = b64enc((const unsigned char *)val, strlen(val), tmp); sb_put(out, tmp, n); p += 11; continue; }
            if (val && !strncmp(p, "{VALUE_JSTR}", 12)) {
                sb_put(out, "\"", 1);
                for (const char *v = val; *v; v++) { if (*v == '"' || *v == '\\') sb_put(out, "\\", 1); sb_put(out, v, 1); }
                sb_put(out, "\"", 1); p += 12; continue;
            }
        }
        sb_put(out, p, 1); p++;
    }
}
static void key_for(sbuf *out, int idx) { out->len = 0; expand(out, C.key_pattern, idx, idx, "", NULL); }

/* idx = key index ({I}), sidx = subscriber index ({S}; for writes = key index) */
static void build_req(sbuf *out, const char *method, const char *path, const char **hdr, int nh, const char *body,
                      int idx, int sidx, const char *val) {
    sbuf key = {0}, p = {0}, b = {0};
    key_for(&key, idx);
    expand(&p, path, idx, sidx, key.p, val);
    expand(&b, body, idx, sidx, key.p, val);
    out->len = 0;
    char line[256];
    sb_str(out, method); sb_str(out, " "); sb_put(out, p.p, p.len); sb_str(out, " HTTP/1.1\r\n");
    snprintf(line, sizeof line, "Host: %s:%d\r\n", C.host, C.port); sb_str(out, line);
    for (int i = 0; i < nh; i++) { sbuf h = {0}; expand(&h, hdr[i], idx, sidx, key.p, val); sb_put(out, h.p, h.len); sb_str(out, "\r\n"); free(h.p); }
    if (b.len || strcmp(method, "GET")) { snprintf(line, sizeof line, "Content-Length: %d\r\n", b.len); sb_str(out, line); }
    sb_str(out, "\r\n");
    if (b.len) sb_put(out, b.p, b.len);
    free(key.p); free(p.p); free(b.p);
}

/* -------------------------------------------------------------- latencies */
typedef struct { int64_t *v; size_t n, cap; } vec;
static void vpush(vec *a, int64_t x) {
    if (a->n == a->cap) { a->cap = a->cap ? a->cap * 2 : 1 << 16; a->v = realloc(a->v, a->cap * sizeof(int64_t)); if (!a->v) die("oom"); }
    a->v[a->n++] = x;
}
static int cmp64(const void *a, const void *b) { int64_t x = *(const int64_t *)a, y = *(const int64_t *)b; return x < y ? -1 : x > y; }
static double pct(vec *a, double q) { if (!a->n) return -1; size_t i = (size_t)(q * (a->n - 1) + 0.5); return a->v[i] / 1e6; }
static double vmean(vec *a) { if (!a->n) return -1; double s = 0; for (size_t i = 0; i < a->n; i++) s += a->v[i]; return s / a->n / 1e6; }

/* ------------------------------------------------------------ connections */
enum { K_SUB = 0, K_WRITER = 1 };
enum { S_CONNECTING = 0, S_HDRS, S_BODY, S_CLOSED };
enum { CS_SIZE = 0, CS_DATA, CS_DATA_END, CS_TRAILER };
typedef struct conn {
    int fd, idx, kind, state;
    sbuf out; int woff;
    sbuf hb;            /* header accumulation */
    sbuf fb;            /* decoded-body framing buffer */
    int chunked, status; int64_t cl;
    int cs; int64_t crem; int cline; int64_t csize; int chex;
    int ready, busy, pend;
    int64_t t_start, t_ready, t_sent;
    long events;
    long wi;            /* writers: the index of the write in flight */
} conn;

static conn *conns; static int nconns;
static int epfd;
static vec lat, wlat, clat;
static long pending, sub_failed, n_reads, n_read_bytes, n_epoll;
static long deliveries, stale, unmarked, control_msgs, sub_errors, sub_closed, sub_ready, writes_sent, writes_ok,
    writes_err, writer_late, expected, bad_status;
static int64_t t_write_start, t_write_end, t_first_deliv, t_last_deliv, t_first_send, t_last_send;
static long seq_counter;
static unsigned rng;
static inline unsigned xr(void) { rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5; return rng; }

/* per write (index = seq - 1): send time, KIND, answered 2xx, deliveries, last receipt */
#define MAXKIND 8
static int64_t *w_ts, *w_last; static int *w_kind, *w_n; static char *w_ok; static long w_cap;
static vec klat[MAXKIND];
/* --write-script lines, and --tag-marker's state */
typedef struct { int kind, tag; char *method, *path, *body; } wline;
static wline *script; static long nscript;
static int ntags; static long **tag_w; static int *tag_nw, *tag_cap; /* per tag: its writes in send order */
static unsigned short *seen; /* [sub * ntags + tag]: events of that tag the subscriber got */
static long tag_unmatched;

static void w_grow(long wi) {
    if (wi < w_cap) return;
    long cap = w_cap ? w_cap * 2 : 4096; while (cap <= wi) cap *= 2;
    w_ts = realloc(w_ts, cap * sizeof *w_ts); w_last = realloc(w_last, cap * sizeof *w_last);
    w_kind = realloc(w_kind, cap * sizeof *w_kind); w_n = realloc(w_n, cap * sizeof *w_n); w_ok = realloc(w_ok, cap);
    if (!w_ts || !w_last || !w_kind || !w_n || !w_ok) die("oom");
    for (long i = w_cap; i < cap; i++) { w_ts[i] = 0; w_last[i] = 0; w_kind[i] = 0; w_n[i] = 0; w_ok[i] = 0; }
    w_cap = cap;
}
static void w_delivered(long wi, int64_t t) { w_n[wi]++; if (t > w_last[wi]) w_last[wi] = t; }
/* the write whose send time is ts (sends are sequential: w_ts is increasing), or -1 */
static long w_find(int64_t ts) {
    long lo = 0, hi = writes_sent - 1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        if (w_ts[mid] == ts) return mid;
        if (w_ts[mid] < ts) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}
static void load_script(const char *path) {
    FILE *f = fopen(path, "r"); if (!f) die("cannot open --write-script file");
    static char line[65536]; long cap = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        char *fld[5]; int nf = 0; char *p = line;
        while (nf < 5) { fld[nf++] = p; char *tab = strchr(p, '\t'); if (!tab) break; *tab = 0; p = tab + 1; }
        if (nf != 5) die("--write-script: a line is KIND<TAB>TAG<TAB>METHOD<TAB>PATH<TAB>BODY");
        if (nscript == cap) { cap = cap ? cap * 2 : 1024; script = realloc(script, cap * sizeof *script); }
        wline *L = &script[nscript++];
        L->kind = atoi(fld[0]); L->tag = atoi(fld[1]);
        if (L->kind < 0 || L->kind >= MAXKIND || L->tag < 0 || L->tag > 1000000) die("--write-script: KIND 0-7, TAG 0-1000000");
        L->method = strdup(fld[2]); L->path = strdup(fld[3]); L->body = strdup(strcmp(fld[4], "-") ? fld[4] : "");
        if (L->tag >= ntags) ntags = L->tag + 1;
    }
    fclose(f);
    if (!nscript) die("--write-script: no writes");
    tag_w = calloc(ntags, sizeof *tag_w); tag_nw = calloc(ntags, sizeof *tag_nw); tag_cap = calloc(ntags, sizeof *tag_cap);
}

static long subs_on_key(int k) { /* subscriber i watches key i % sub_keys */
    if (C.subs == 0) return 0;
    long base = C.subs / C.sub_keys; return base + (k < C.subs % C.sub_keys ? 1 : 0);
}

static void conn_close(conn *c) {
    if (c->state == S_CLOSED) return;
    if (c->kind == K_SUB && c->pend) { c->pend = 0; pending--; }
    if (c->kind == K_SUB && !c->ready) sub_failed++;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd); c->state = S_CLOSED;
}

static void mark_ready(conn *c, int64_t t) {
    if (c->ready) return;
    c->ready = 1; c->t_ready = t;
    if (c->kind == K_SUB && c->pend) { c->pend = 0; pending--; }
    if (c->kind == K_SUB) { sub_ready++; vpush(&clat, t - c->t_start); }
}

static void on_event_payload(conn *c, const char *p, int n, int64_t t) {
    if (C.tag_marker) { /* the j-th event of tag T on this subscriber is the j-th write of tag T */
        if (!t_write_start) { stale++; return; } /* before the first write */
        const char *m = memmem(p, n, C.tag_marker, strlen(C.tag_marker));
        if (!m) { unmarked++; return; }
        const char *q = m + strlen(C.tag_marker), *e = p + n;
        if (q >= e || *q < '0' || *q > '9') { unmarked++; return; }
        long tag = 0;
        while (q < e && *q >= '0' && *q <= '9' && tag <= 1000000) tag = tag * 10 + (*q++ - '0');
        if (tag >= ntags) { unmarked++; return; }
        unsigned short *s = &seen[(long)c->idx * ntags + tag];
        if (*s >= tag_nw[tag]) { tag_unmatched++; return; } /* more events of that tag than writes */
        long wi = tag_w[tag][(*s)++];
        vpush(&lat, t - w_ts[wi]); vpush(&klat[w_kind[wi]], t - w_ts[wi]);
        w_delivered(wi, t);
        deliveries++; c->events++;
        if (!t_first_deliv) t_first_deliv = t;
        t_last_deliv = t;
        return;
    }
    if (C.marker_after) { /* e.g. '"new"': skip an "old" value that also carries a marker */
        const char *a = memmem(p, n, C.marker_after, strlen(C.marker_after));
        if (a) { n -= a - p; p = a; }
    }
    const char *m = memmem(p, n, C.marker, strlen(C.marker));
    if (!m) { unmarked++; return; }
    const char *q = m + strlen(C.marker), *e = p + n;
    int skip = 0;
    while (q < e && skip < 8 && (*q < '0' || *q > '9')) { q++; skip++; }
    if (q >= e || *q < '0' || *q > '9') { unmarked++; return; }
    int64_t ts = 0;
    while (q < e && *q >= '0' && *q <= '9') ts = ts * 10 + (*q++ - '0');
    if (!t_write_start || ts < t_write_start) { stale++; return; }
    vpush(&lat, t - ts);
    long wi = w_find(ts);
    if (wi >= 0) w_delivered(wi, t);
    deliveries++; c->events++;
    if (!t_first_deliv) t_first_deliv = t;
    t_last_deliv = t;
}

/* framing over the decoded body stream */
static void frame_feed(conn *c, const char *p, int n, int64_t t) {
    if (c->kind == K_WRITER) return;
    if (C.framing == FR_SSE) { /* drop CRs so frames end with \n\n */
        for (int i = 0; i < n;) {
            int j = i; while (j < n && p[j] != '\r') j++;
            if (j > i) sb_put(&c->fb, p + i, j - i);
            i = j + 1;
        }
    } else sb_put(&c->fb, p, n);
    char *buf = c->fb.p; int len = c->fb.len, off = 0;
    if (C.framing == FR_SSE) {
        for (;;) {
            char *end = memmem(buf + off, len - off, "\n\n", 2);
            if (!end) break;
            int flen = end - (buf + off);
            /* collect data: lines */
            static sbuf data; data.len = 0; int has_data = 0;
            char *l = buf + off, *fe = buf + off + flen;
            while (l < fe) {
                char *nl = memchr(l, '\n', fe - l); if (!nl) nl = fe;
                if (nl - l >= 5 && !memcmp(l, "data:", 5)) {
                    char *d = l + 5; if (d < nl && *d == ' ') d++;
                    if (has_data) sb_put(&data, "\n", 1);
                    sb_put(&data, d, nl - d); has_data = 1;
                }
                l = nl + 1;
            }
            if (has_data) { mark_ready(c, t); on_event_payload(c, data.p, data.len, t); }
            else { control_msgs++; if (C.ready_mode == READY_MESSAGE) mark_ready(c, t); }
            off += flen + 2;
        }
    } else { /* line framed: etcd gateway JSON stream or NDJSON */
        for (;;) {
            char *nl = memchr(buf + off, '\n', len - off);
            if (!nl) break;
            char *l = buf + off; int ll = nl - l;
            if (C.framing == FR_ETCD) {
                int nev = 0;
                char *s = l, *le = l + ll;
                for (;;) {
                    char *v = memmem(s, le - s, "\"value\":\"", 9);
                    if (!v) break;
                    v += 9; char *ve = memchr(v, '"', le - v); if (!ve) break;
                    static char dec[65536];
                    int dn = (ve - v) < 80000 ? b64dec(v, ve - v, dec) : 0;
                    on_event_payload(c, dec, dn, t); nev++;
                    s = ve + 1;
                }
                if (!nev) {
                    control_msgs++;
                    if (memmem(l, ll, "\"canceled\":true", 15) || memmem(l, ll, "\"error\"", 7)) sub_errors++;
                }
                mark_ready(c, t);
            } else if (ll > 0) { mark_ready(c, t); on_event_payload(c, l, ll, t); }
            off += ll + 1;
        }
    }
    if (off) { memmove(buf, buf + off, len - off); c->fb.len = len - off; }
    if (c->fb.len > (1 << 22)) { fprintf(stderr, "frame buffer overflow conn %d\n", c->idx); c->fb.len = 0; }
}

static void writer_done(conn *c, int64_t t);

/* body bytes (after headers); returns 1 if the response is complete (writers) */
static int body_feed(conn *c, const char *p, int n, int64_t t) {
    if (!c->chunked) {
        if (c->kind == K_WRITER) {
            if (c->cl < 0) return 0; /* close-delimited; unsupported for writers */
            c->cl -= n; return c->cl <= 0;
        }
        frame_feed(c, p, n, t); return 0;
    }
    for (int i = 0; i < n;) {
        switch (c->cs) {
        case CS_SIZE: {
            char ch = p[i++];
            if (ch == '\n') {
                c->cs = c->csize ? CS_DATA : CS_TRAILER; c->crem = c->csize; c->cline = 0;
            } else if (c->chex) {
                int d = (ch >= '0' && ch <= '9') ? ch - '0' : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10 : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10 : -1;
                if (d >= 0) c->csize = c->csize * 16 + d; else c->chex = 0; /* ';' ext or '\r' */
            }
            break;
        }
        case CS_DATA: {
            int take = n - i < c->crem ? n - i : (int)c->crem;
            frame_feed(c, p + i, take, t); i += take; c->crem -= take;
            if (!c->crem) c->cs = CS_DATA_END;
            break;
        }
        case CS_DATA_END:
            if (p[i++] == '\n') { c->cs = CS_SIZE; c->csize = 0; c->chex = 1; }
            break;
        case CS_TRAILER: {
            char ch = p[i++];
            if (ch == '\n') {
                if (c->cline == 0) { c->cs = CS_SIZE; c->csize = 0; c->chex = 1; return 1; }
                c->cline = 0;
            } else if (ch != '\r') c->cline++;
            break;
        }
        }
    }
    return 0;
}

static void reset_resp(conn *c) {
    c->state = S_HDRS; c->hb.len = 0; c->chunked = 0; c->cl = -1; c->status = 0;
    c->cs = CS_SIZE; c->csize = 0; c->chex = 1; c->cline = 0;
}

static void process_input(conn *c, const char *p, int n, int64_t t) {
    while (n > 0 && c->state != S_CLOSED) {
        if (c->state == S_HDRS) {
            int old = c->hb.len;
            sb_put(&c->hb, p, n);
            char *e = memmem(c->hb.p, c->hb.len, "\r\n\r\n", 4);
            if (!e) { if (c->hb.len > 65536) { sub_errors++; conn_close(c); } return; }
            int hlen = e + 4 - c->hb.p;
            int used = hlen - old; p += used; n -= used;
            c->status = atoi(c->hb.p + 9);
            c->hb.p[hlen - 2] = 0;
            for (char *l = strstr(c->hb.p, "\r\n"); l; l = strstr(l + 2, "\r\n")) {
                char *h = l + 2;
                if (!strncasecmp(h, "transfer-encoding:", 18) && strcasestr(h, "chunked")) c->chunked = 1;
                if (!strncasecmp(h, "content-length:", 15)) c->cl = atoll(h + 15);
            }
            c->state = S_BODY;
            if (c->kind == K_SUB) {
                if (c->status != 200) {
                    bad_status++; sub_errors++;
                    if (bad_status <= 5) fprintf(stderr, "subscriber %d: HTTP %d\n", c->idx, c->status);
                    conn_close(c); return;
                }
                if (C.ready_mode == READY_HEADERS) mark_ready(c, t);
            } else if ((!c->chunked && c->cl == 0) || c->status == 204 || c->status == 304) {
                writer_done(c, t); continue; /* no body (RFC 9112 6.3: 204 and 304 have none) */
            }
        } else {
            int done = body_feed(c, p, n, t);
            if (c->kind == K_WRITER && done) {
                /* writers: bytes beyond the response are not expected (no pipelining) */
                writer_done(c, t); return;
            }
            return;
        }
    }
}


static struct sockaddr_in addr;
static int open_conn(conn *c, int64_t t) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0) { perror("socket"); return -1; }
    int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd; c->state = S_CONNECTING; c->t_start = t; c->woff = 0;
    int r = connect(fd, (struct sockaddr *)&addr, sizeof addr);
    if (r < 0 && errno != EINPROGRESS) { perror("connect"); close(fd); c->state = S_CLOSED; return -1; }
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    return 0;
}

static void try_send(conn *c) {
    while (c->woff < c->out.len) {
        ssize_t w = write(c->fd, c->out.p + c->woff, c->out.len - c->woff);
        if (w < 0) {
            if (errno == EAGAIN) break;
            if (c->kind == K_SUB) sub_errors++; else writes_err++;
            conn_close(c); return;
        }
        c->woff += w;
    }
    struct epoll_event ev = {.events = EPOLLIN | (c->woff < c->out.len ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static sbuf padbuf;
static void writer_send(conn *c, int64_t unused) {
    (void)unused;
    long seq = ++seq_counter, wi = seq - 1;
    int k = C.write_keys > 1 ? (C.write_cycle ? (int)((seq - 1) % C.write_keys) : (int)(xr() % C.write_keys)) : 0;
    if (script) k = 0;
    int64_t ts = now_ns();
    if (!t_first_send) t_first_send = ts;
    t_last_send = ts;
    cur_ts = ts;
    w_grow(wi); w_ts[wi] = ts;
    char v[512];
    snprintf(v, sizeof v, "{\"name\":\"v%ld\",\"seq\":%ld,\"bts\":%lld%s%s%s}", seq, seq, (long long)ts,
             C.value_pad ? ",\"pad\":\"" : "", C.value_pad ? padbuf.p : "", C.value_pad ? "\"" : "");
    if (script) {
        wline *L = &script[wi % nscript];
        build_req(&c->out, L->method, L->path, C.w_hdr, C.n_w_hdr, L->body, k, k, v);
        w_kind[wi] = L->kind;
        if (tag_nw[L->tag] == tag_cap[L->tag]) {
            tag_cap[L->tag] = tag_cap[L->tag] ? tag_cap[L->tag] * 2 : 4;
            tag_w[L->tag] = realloc(tag_w[L->tag], tag_cap[L->tag] * sizeof(long));
        }
        tag_w[L->tag][tag_nw[L->tag]++] = wi;
    } else
        build_req(&c->out, C.w_method, C.w_path, C.w_hdr, C.n_w_hdr, C.w_body, k, k, v);
    c->busy = 1; c->t_sent = ts; c->idx = k; c->wi = wi; reset_resp(c);
    writes_sent++;
    c->woff = 0;
    try_send(c);
}
static void writer_done(conn *c, int64_t t) {
    if (!c->busy) return;
    c->busy = 0;
    vpush(&wlat, t - c->t_sent);
    if (c->status >= 200 && c->status < 300) { writes_ok++; w_ok[c->wi] = 1; expected += subs_on_key(c->idx); }
    else { writes_err++; if (writes_err <= 5) fprintf(stderr, "write HTTP %d\n", c->status); }
    reset_resp(c);
}

static void usage(void) {
    fprintf(stderr,
            "obsclient --port P [--subs N --sub-keys K --key-pattern 'obj/{I}/name' --sub-method M --sub-path P\n"
            "  --sub-header H (repeat) --sub-body B --framing sse|etcd|ndjson --ready headers|message --marker bts\n"
            "  --marker-after STR --sub-vars FILE]\n"
            "  [--connect-window 256 --connect-timeout 60 --hold S --settle S]\n"
            "  [--writers W --write-keys K --write-method M --write-path P --write-header H --write-body B\n"
            "   --rate R --count C --duration D --drain-max S --drain-idle S --value-pad N --write-cycle]\n"
            "  [--write-script FILE: write n is line n, KIND<TAB>TAG<TAB>METHOD<TAB>PATH<TAB>BODY (BODY - = none);\n"
            "   --tag-marker STR: match deliveries to writes by the integer TAG after STR in the event]\n"
            "templates: {I}=key index {S}=subscriber index {V}=line S of --sub-vars {KEY} {KEY_B64} {VALUE} {VALUE_B64} {VALUE_JSTR}\n"
            "  {TS}=the write's send time (CLOCK_MONOTONIC ns)\n");
    exit(2);
}

int main(int argc, char **argv) {
    static struct option o[] = {
        {"host", 1, 0, 'H'}, {"port", 1, 0, 'p'}, {"subs", 1, 0, 's'}, {"sub-keys", 1, 0, 'k'},
        {"key-pattern", 1, 0, 'K'}, {"sub-method", 1, 0, 1}, {"sub-path", 1, 0, 2}, {"sub-header", 1, 0, 3},
        {"sub-body", 1, 0, 4}, {"framing", 1, 0, 5}, {"ready", 1, 0, 6}, {"marker", 1, 0, 7},
        {"connect-window", 1, 0, 8}, {"connect-timeout", 1, 0, 9}, {"hold", 1, 0, 10}, {"settle", 1, 0, 11},
        {"writers", 1, 0, 12}, {"write-keys", 1, 0, 13}, {"write-method", 1, 0, 14}, {"write-path", 1, 0, 15},
        {"write-header", 1, 0, 16}, {"write-body", 1, 0, 17}, {"rate", 1, 0, 18}, {"count", 1, 0, 19},
        {"duration", 1, 0, 20}, {"drain-max", 1, 0, 21}, {"drain-idle", 1, 0, 22}, {"value-pad", 1, 0, 23},
        {"seed", 1, 0, 24}, {"marker-after", 1, 0, 25}, {"sub-vars", 1, 0, 26},
        {"write-cycle", 0, 0, 27}, {"write-script", 1, 0, 28}, {"tag-marker", 1, 0, 29}, {"help", 0, 0, 30},
        {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", o, NULL)) != -1) {
        switch (ch) {
        case 'H': C.host = optarg; break;
        case 'p': C.port = atoi(optarg); break;
        case 's': C.subs = atoi(optarg); break;
        case 'k': C.sub_keys = atoi(optarg); break;
        case 'K': C.key_pattern = optarg; break;
        case 1: C.sub_method = optarg; break;
        case 2: C.sub_path = optarg; break;
        case 3: if (C.n_sub_hdr < MAXH) C.sub_hdr[C.n_sub_hdr++] = optarg; break;
        case 4: C.sub_body = optarg; break;
        case 5: C.framing = !strcmp(optarg, "etcd") ? FR_ETCD : !strcmp(optarg, "ndjson") ? FR_NDJSON : FR_SSE; break;
        case 6: C.ready_mode = !strcmp(optarg, "message") ? READY_MESSAGE : READY_HEADERS; break;
        case 7: C.marker = optarg; break;
        case 8: C.connect_window = atoi(optarg); break;
        case 9: C.connect_timeout = atof(optarg); break;
        case 10: C.hold = atof(optarg); break;
        case 11: C.settle = atof(optarg); break;
        case 12: C.writers = atoi(optarg); break;
        case 13: C.write_keys = atoi(optarg); break;
        case 14: C.w_method = optarg; break;
        case 15: C.w_path = optarg; break;
        case 16: if (C.n_w_hdr < MAXH) C.w_hdr[C.n_w_hdr++] = optarg; break;
        case 17: C.w_body = optarg; break;
        case 18: C.rate = atof(optarg); break;
        case 19: C.count = atol(optarg); break;
        case 20: C.duration = atof(optarg); break;
        case 21: C.drain_max = atof(optarg); break;
        case 22: C.drain_idle = atof(optarg); break;
        case 23: C.value_pad = atoi(optarg); break;
        case 24: C.seed = atoi(optarg); break;
        case 25: C.marker_after = optarg; break;
        case 26: { /* one value per line: {V} for subscriber s is line s (server-assigned ids) */
            FILE *f = fopen(optarg, "r"); if (!f) die("cannot open --sub-vars file");
            char line[4096]; int cap = 0;
            while (fgets(line, sizeof line, f)) {
                line[strcspn(line, "\r\n")] = 0;
                if (C.nvars == cap) { cap = cap ? cap * 2 : 1024; C.vars = realloc(C.vars, cap * sizeof(char *)); }
                C.vars[C.nvars++] = strdup(line);
            }
            fclose(f); break;
        }
        case 27: C.write_cycle = 1; break;
        case 28: C.write_script = optarg; break;
        case 29: C.tag_marker = optarg; break;
        default: usage();
        }
    }
    if (!C.port) usage();
    if (strncmp(C.host, "127.", 4)) die("only loopback (127.x.x.x) targets are allowed");
    if (C.sub_keys < 1) C.sub_keys = 1;
    if (!C.write_keys) C.write_keys = C.sub_keys;
    if (C.write_script) {
        load_script(C.write_script);
        if (C.sub_keys != 1) die("--write-script: every subscriber gets every write (--sub-keys 1)");
        if (C.count <= 0 || C.count > nscript) C.count = nscript;
    }
    if (C.tag_marker) {
        if (!script) die("--tag-marker needs --write-script");
        seen = calloc((size_t)(C.subs > 0 ? C.subs : 1) * ntags, sizeof *seen);
        if (!seen) die("oom");
    }
    int do_write = (C.count > 0 || C.duration > 0) && C.writers > 0;
    if (!do_write) C.writers = 0;
    if (C.count <= 0 && C.duration <= 0 && C.hold <= 0 && C.subs <= 0) usage();
    if (C.duration <= 0 && C.count > 0) C.duration = 600; /* hard cap */
    if (C.duration > 600) C.duration = 600;
    if (C.hold > 600) C.hold = 600;
    b64init(); rng = C.seed ? C.seed : 1;
    signal(SIGPIPE, SIG_IGN);
    if (C.value_pad > 0) { for (int i = 0; i < C.value_pad && i < 400; i++) sb_put(&padbuf, "x", 1); }

    struct rlimit rl; getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t need = C.subs + C.writers + 64;
    if (rl.rlim_cur < need) {
        rl.rlim_cur = need; if (rl.rlim_max < need) rl.rlim_max = need;
        if (setrlimit(RLIMIT_NOFILE, &rl)) { perror("setrlimit NOFILE"); die("raise ulimit -n"); }
    }
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET; addr.sin_port = htons(C.port); inet_pton(AF_INET, C.host, &addr.sin_addr);
    epfd = epoll_create1(0);
    nconns = C.subs + C.writers;
    conns = calloc(nconns > 0 ? nconns : 1, sizeof(conn));
    for (int i = 0; i < nconns; i++) {
        conns[i].idx = i < C.subs ? i : 0; conns[i].kind = i < C.subs ? K_SUB : K_WRITER;
        conns[i].state = S_CLOSED; conns[i].fd = -1; conns[i].cl = -1;
    }
    /* pre-build subscribe requests lazily at connect */
    int64_t t0 = now_ns();
    double cpu0 = cpu_s();
    int next_sub = 0;
    enum { P_CONNECT, P_HOLD, P_SETTLE, P_WRITE, P_DRAIN, P_DONE } phase = P_CONNECT;
    int64_t phase_t = t0, t_connect_done = 0, t_hold_end = 0;
    double cpu_connect_end = 0, cpu_hold_end = 0, cpu_write_start = 0, cpu_write_end = 0;
    int64_t interval = C.rate > 0 ? (int64_t)(1e9 / C.rate) : 0, next_tick = 0;
    int64_t last_progress_t = 0; long last_deliv_seen = 0;
    /* writers connect right away */
    for (int i = C.subs; i < nconns; i++) {
        conn *c = &conns[i];
        reset_resp(c); c->out.len = 0;
        if (open_conn(c, t0) != 0) die("writer connect failed");
    }
    struct epoll_event evs[1024];
    static char rbuf[1 << 16];
    while (phase != P_DONE) {
        int64_t t = now_ns();
        /* ---- phase control */
        if (phase == P_CONNECT) {
            while (next_sub < C.subs && pending < C.connect_window) {
                conn *c = &conns[next_sub];
                build_req(&c->out, C.sub_method, C.sub_path, C.sub_hdr, C.n_sub_hdr, C.sub_body, next_sub % C.sub_keys, next_sub, NULL);
                reset_resp(c);
                if (open_conn(c, t) == 0) { pending++; c->pend = 1; } else { sub_errors++; sub_failed++; }
                next_sub++;
            }
            int writers_up = 1;
            for (int i = C.subs; i < nconns; i++) if (conns[i].state == S_CLOSED || !conns[i].ready) writers_up = 0;
            if ((next_sub >= C.subs && sub_ready + sub_failed >= C.subs && writers_up) || t - t0 > C.connect_timeout * 1e9) {
                phase = P_HOLD; phase_t = t; t_connect_done = t; cpu_connect_end = cpu_s();
                printf("READY {\"subs_ready\":%ld,\"sub_errors\":%ld,\"connect_wall_ms\":%.1f}\n", sub_ready, sub_errors,
                       (t - t0) / 1e6);
                fflush(stdout);
                fprintf(stderr, "obsclient: %ld/%d subscribers ready in %.1f ms\n", sub_ready, C.subs, (t - t0) / 1e6);
                if (C.hold > 0) { printf("HOLD_START\n"); fflush(stdout); }
            }
        }
        if (phase == P_HOLD && t - phase_t >= C.hold * 1e9) {
            phase = P_SETTLE; phase_t = t; t_hold_end = t; cpu_hold_end = cpu_s();
            if (C.hold > 0) { printf("HOLD_END\n"); fflush(stdout); }
        }
        if (phase == P_SETTLE && t - phase_t >= C.settle * 1e9) {
            if (!do_write) { phase = P_DONE; break; }
            phase = P_WRITE; phase_t = t; t_write_start = t; next_tick = t; cpu_write_start = cpu_s();
            printf("WRITE_START\n"); fflush(stdout);
        }
        if (phase == P_WRITE) {
            int time_up = t - t_write_start >= C.duration * 1e9;
            int count_up = C.count > 0 && writes_sent >= C.count;
            if (!time_up && !count_up) {
                if (interval) {
                    while (next_tick <= t && !(C.count > 0 && writes_sent >= C.count)) {
                        conn *w = NULL;
                        for (int i = C.subs; i < nconns; i++) if (conns[i].state != S_CLOSED && conns[i].ready && !conns[i].busy) { w = &conns[i]; break; }
                        if (!w) { writer_late++; break; }
                        writer_send(w, t); next_tick += interval;
                        if (next_tick < t - 1000000000LL) next_tick = t; /* don't burst after long stalls */
                    }
                } else {
                    for (int i = C.subs; i < nconns; i++)
                        if (conns[i].state != S_CLOSED && conns[i].ready && !conns[i].busy) writer_send(&conns[i], t);
                }
            }
            int inflight = 0, alive = 0;
            for (int i = C.subs; i < nconns; i++) { if (conns[i].busy && conns[i].state != S_CLOSED) inflight++; if (conns[i].state != S_CLOSED) alive++; }
            if (((time_up || count_up) && !inflight) || !alive || t - t_write_start > (C.duration + 30) * 1e9) {
                phase = P_DRAIN; phase_t = t; t_write_end = t; cpu_write_end = cpu_s();
                printf("WRITE_END\n"); fflush(stdout);
                last_progress_t = t; last_deliv_seen = deliveries;
            }
        }
        if (phase == P_DRAIN) {
            if (deliveries != last_deliv_seen) { last_deliv_seen = deliveries; last_progress_t = t; }
            if (deliveries >= expected || t - phase_t > C.drain_max * 1e9 || t - last_progress_t > C.drain_idle * 1e9) { phase = P_DONE; break; }
        }
        /* ---- wait */
        int timeout = 50;
        if (phase == P_WRITE) {
            int more = !(C.count > 0 && writes_sent >= C.count) && t - t_write_start < C.duration * 1e9;
            int idle_writer = 0;
            for (int i = C.subs; i < nconns; i++)
                if (conns[i].state != S_CLOSED && conns[i].ready && !conns[i].busy) { idle_writer = 1; break; }
            if (more && idle_writer && interval) {
                /* sleep until the next tick; never spin: a due tick with no idle writer waits for a response */
                int64_t d = (next_tick - t + 999999) / 1000000;
                timeout = d < 0 ? 0 : d > 50 ? 50 : (int)d;
            } else if (more) timeout = 5; /* responses wake us; 5 ms bounds the time-up check */
        }
        int n = epoll_wait(epfd, evs, 1024, timeout);
        n_epoll++;
        for (int e = 0; e < n; e++) {
            conn *c = evs[e].data.ptr;
            if (c->state == S_CLOSED) continue;
            if (c->state == S_CONNECTING) {
                int err = 0; socklen_t el = sizeof err;
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
                if (err) {
                    if (c->kind == K_SUB) sub_errors++; else writes_err++;
                    if (sub_errors <= 5) fprintf(stderr, "connect error: %s\n", strerror(err));
                    conn_close(c); continue;
                }
                if (!(evs[e].events & (EPOLLOUT | EPOLLIN))) continue;
                c->state = S_HDRS;
                if (c->kind == K_WRITER) { c->ready = 1; struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c}; epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev); continue; }
                try_send(c);
                continue;
            }
            if (evs[e].events & EPOLLOUT) try_send(c);
            if (c->state == S_CLOSED) continue;
            if (evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                for (int rd = 0; rd < 4; rd++) {
                    ssize_t r = read(c->fd, rbuf, sizeof rbuf);
                    n_reads++;
                    if (r > 0) {
                        n_read_bytes += r;
                        process_input(c, rbuf, r, now_ns());
                        if (c->state == S_CLOSED || r < (ssize_t)sizeof rbuf) break;
                        continue;
                    }
                    if (r == 0 || (r < 0 && errno != EAGAIN)) {
                        if (c->kind == K_SUB) { sub_closed++; if (!c->ready) sub_errors++; }
                        else { if (c->busy) writes_err++; }
                        if (sub_closed <= 5 && c->kind == K_SUB) fprintf(stderr, "subscriber %d closed by server\n", c->idx);
                        conn_close(c);
                    }
                    break;
                }
            }
        }
    }
    int64_t t_end = now_ns();
    double cpu_end = cpu_s();
    if (!t_write_end) { t_write_end = t_end; cpu_write_end = cpu_end; }
    if (!t_connect_done) t_connect_done = t_end;
    qsort(lat.v, lat.n, sizeof(int64_t), cmp64);
    qsort(wlat.v, wlat.n, sizeof(int64_t), cmp64);
    qsort(clat.v, clat.n, sizeof(int64_t), cmp64);
    long per_min = -1, per_max = -1; long subs_alive = 0;
    for (int i = 0; i < C.subs; i++) {
        conn *c = &conns[i];
        if (c->state != S_CLOSED) subs_alive++;
        if (per_min < 0 || c->events < per_min) per_min = c->events;
        if (c->events > per_max) per_max = c->events;
    }
    double wdur = (t_write_end - t_write_start) / 1e9;
    double ddur = t_first_deliv && t_last_deliv > t_write_start ? (t_last_deliv - t_write_start) / 1e9 : 0;
    printf("{\"subs\":%d,\"subs_ready\":%ld,\"subs_alive_at_end\":%ld,\"sub_errors\":%ld,\"sub_closed\":%ld,"
           "\"connect_wall_ms\":%.1f,\"connect_p50_ms\":%.2f,\"connect_p99_ms\":%.2f,\"connect_max_ms\":%.2f,"
           "\"client_cpu_connect_pct\":%.1f,\"hold_s\":%.2f,\"client_cpu_hold_pct\":%.1f,",
           C.subs, sub_ready, subs_alive, sub_errors, sub_closed, (t_connect_done - t0) / 1e6, pct(&clat, .5),
           pct(&clat, .99), pct(&clat, 1.0), 100 * cpu_connect_end / ((t_connect_done - t0) / 1e9 + 1e-9),
           t_hold_end ? (t_hold_end - t_connect_done) / 1e9 : 0,
           t_hold_end && C.hold > 0 ? 100 * (cpu_hold_end - cpu_connect_end) / ((t_hold_end - t_connect_done) / 1e9) : 0);
    printf("\"writers\":%d,\"writes_sent\":%ld,\"writes_ok\":%ld,\"writes_err\":%ld,\"writer_late_ticks\":%ld,"
           "\"write_phase_s\":%.3f,\"send_rate\":%.1f,\"write_rate\":%.1f,\"write_lat_p50_ms\":%.3f,\"write_lat_p99_ms\":%.3f,"
           "\"write_lat_max_ms\":%.3f,\"client_cpu_write_pct\":%.1f,",
           C.writers, writes_sent, writes_ok, writes_err, writer_late, do_write ? wdur : 0,
           writes_sent > 1 && t_last_send > t_first_send ? (writes_sent - 1) / ((t_last_send - t_first_send) / 1e9) : 0,
           do_write && wdur > 0 ? writes_ok / wdur : 0, pct(&wlat, .5), pct(&wlat, .99), pct(&wlat, 1.0),
           do_write && wdur > 0 ? 100 * (cpu_write_end - cpu_write_start) / wdur : 0);
    printf("\"expected_deliveries\":%ld,\"deliveries\":%ld,\"stale_events\":%ld,\"unmarked_events\":%ld,"
           "\"control_msgs\":%ld,\"per_sub_min\":%ld,\"per_sub_max\":%ld,\"delivery_rate\":%.1f,"
           "\"lat_p50_ms\":%.3f,\"lat_p90_ms\":%.3f,\"lat_p99_ms\":%.3f,\"lat_p999_ms\":%.3f,\"lat_max_ms\":%.3f,"
           "\"lat_mean_ms\":%.3f,\"client_cpu_total_s\":%.3f,\"wall_s\":%.3f,"
           "\"reads\":%ld,\"read_bytes\":%ld,\"epoll_waits\":%ld,",
           expected, deliveries, stale, unmarked, control_msgs, per_min, per_max, ddur > 0 ? deliveries / ddur : 0,
           pct(&lat, .5), pct(&lat, .9), pct(&lat, .99), pct(&lat, .999), pct(&lat, 1.0), vmean(&lat), cpu_end - cpu0,
           (t_end - t0) / 1e9, n_reads, n_read_bytes, n_epoll);
    /* per write: the time to its last delivery, over the writes answered 2xx */
    int first_kind = 1;
    for (int kind = -1; kind < (script ? MAXKIND : 0); kind++) {
        vec last = {0}; long nw = 0, nok = 0, nmin = -1, nmax = -1, complete = 0;
        for (long i = 0; i < writes_sent; i++) {
            if (kind >= 0 && w_kind[i] != kind) continue;
            nw++;
            if (!w_ok[i]) continue;
            nok++;
            if (nmin < 0 || w_n[i] < nmin) nmin = w_n[i];
            if (w_n[i] > nmax) nmax = w_n[i];
            if (w_n[i] >= C.subs) complete++;
            if (w_n[i]) vpush(&last, w_last[i] - w_ts[i]);
        }
        if (kind >= 0 && !nw) continue;
        qsort(last.v, last.n, sizeof(int64_t), cmp64);
        if (kind >= 0) {
            vec *k = &klat[kind];
            qsort(k->v, k->n, sizeof(int64_t), cmp64);
            printf("%s{\"kind\":%d,\"writes\":%ld,\"writes_ok\":%ld,\"deliveries\":%zu,\"lat_p50_ms\":%.3f,"
                   "\"lat_p99_ms\":%.3f,\"lat_p999_ms\":%.3f,\"lat_max_ms\":%.3f,",
                   first_kind ? "\"kinds\":[" : ",", kind, nw, nok, k->n,
                   pct(k, .5), pct(k, .99), pct(k, .999), pct(k, 1.0));
        }
        printf("\"last_p50_ms\":%.3f,\"last_p99_ms\":%.3f,\"last_max_ms\":%.3f,\"per_write_min\":%ld,"
               "\"per_write_max\":%ld,\"writes_complete\":%ld%s",
               pct(&last, .5), pct(&last, .99), pct(&last, 1.0), nmin, nmax, complete, kind >= 0 ? "}" : ",");
        if (kind >= 0) first_kind = 0;
        free(last.v);
    }
    if (script) printf("%s],", first_kind ? "\"kinds\":[" : "");
    if (C.tag_marker) { /* subscribers that got exactly one event per write of every tag */
        long exact = 0;
        for (int i = 0; i < C.subs; i++) {
            int ok = 1;
            for (int g = 0; g < ntags && ok; g++) if (seen[(long)i * ntags + g] != tag_nw[g]) ok = 0;
            exact += ok;
        }
        printf("\"tag_unmatched\":%ld,\"subs_one_per_write\":%ld,", tag_unmatched, exact);
    }
    printf("\"write_script\":%s}\n", script ? "true" : "false");
    fflush(stdout);
    for (int i = 0; i < nconns; i++) conn_close(&conns[i]);
    return 0;
}
