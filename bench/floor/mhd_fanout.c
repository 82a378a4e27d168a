// The floor of issue 46: the least a libmicrohttpd 0.9.75 server does to serve the shared bench's
// ObsServer adapter, with ObsServer's daemon flags and options and its way of delivering: an SSE
// stream is a callback response whose connection is suspended once it has sent its opening, and a
// write sends each event with one send(2) straight on the subscriber's socket (BENCHMARKS.md, "Issue 46").
//
//   mhd_fanout --host 127.0.0.1 --port N [--threads N] [--heartbeat-interval S]   (other --flags ignored)
//
// Routes: GET /healthz; POST /v1/objects {"id":…}; POST /v1/observers; POST /v1/observers/{id}/observations
// {"object":…,"keyPath":…}; GET /v1/observers/{id}/events; PUT /v1/objects/{id}/values/{keyPath} {"value":…}.
// Not done: no event log (an event for an observer without a live stream is dropped), no replay, no
// persistence, no JSON validation, no auth; a subscriber whose socket does not take a whole event is cut off.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_ID 64                        // longest object id or key path (bytes, the NUL included)
#define TABLE 32768                      // object slots (a power of 2): 10,000 objects leave it under a third full
#define BODY_MAX 4096                    // largest request body
#define HEAD_ROOM 128                    // room before an event's shared tail for its size line and its own head
#define EVENT_MAX (HEAD_ROOM + BODY_MAX + 3 * MAX_ID + 128)

struct reg { uint32_t observer, id; uint8_t kplen; char keypath[MAX_ID]; };
struct object { uint8_t len; char id[MAX_ID]; uint32_t nregs, cap; struct reg *regs; };
enum { IDLE, OPENING, OPENED, LIVE, ENDING };  // an observer's stream: none, queued, opening sent, parked, ending
struct observer { int fd; uint8_t state, chunked; struct MHD_Connection *conn; uint64_t events; };
struct req { struct req *next; size_t len; char body[BODY_MAX + 1]; };

// Recursive: destroying a response that failed to queue calls its free callback, which takes it again.
static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static struct object *objects;           // TABLE slots; len 0 is an empty one
static uint32_t nobjects, nobservers, capobservers, nregs, nstreams;
static struct observer *observers;       // by index: obs_<index>
static uint64_t revision;
static struct req *free_reqs;            // body buffers reused: no allocation per request once warm
static int stopping;
static char no_body;                     // the request context of a GET or DELETE (streams keep no buffer)
static char event[EVENT_MAX];            // one event at a time is built (under the lock)

static char *put(char *p, const char *s) { size_t n = strlen(s); memcpy(p, s, n); return p + n; }
static char *put_mem(char *p, const char *s, size_t n) { memcpy(p, s, n); return p + n; }

static char *put_u64(char *p, uint64_t v) {
    char digits[20], *d = digits + sizeof digits;
    do { *--d = (char)('0' + v % 10); v /= 10; } while (v);
    return put_mem(p, d, (size_t)(digits + sizeof digits - d));
}

static char *put_hex(char *p, size_t v) {
    char digits[16], *d = digits + sizeof digits;
    do { *--d = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
    return put_mem(p, d, (size_t)(digits + sizeof digits - d));
}

// The object with this id (created when `create`), or NULL: open addressing, FNV-1a, linear probing.
static struct object *find_object(const char *id, size_t len, int create) {
    if (len == 0 || len >= MAX_ID) return NULL;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)id[i]) * 16777619u;
    for (uint32_t i = h & (TABLE - 1);; i = (i + 1) & (TABLE - 1)) {
        struct object *o = &objects[i];
        if (o->len == len && memcmp(o->id, id, len) == 0) return o;
        if (o->len == 0) {
            if (!create || nobjects >= TABLE * 3 / 4) return NULL;
            o->len = (uint8_t)len;
            memcpy(o->id, id, len);
            nobjects++;
            return o;
        }
    }
}

// The string member `name` of a body (no escapes: ids are [A-Za-z0-9._~-]): its length, -1 if absent.
static int member_string(const char *body, const char *name, const char **out) {
    const char *p = strstr(body, name);
    if (!p) return -1;
    p += strlen(name);
    while (*p == ' ' || *p == ':') p++;
    if (*p != '"') return -1;
    const char *end = strchr(++p, '"');
    if (!end) return -1;
    *out = p;
    return (int)(end - p);
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *body, size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json; charset=utf-8");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}
#define ANSWER(c, status, literal) answer(c, status, literal, sizeof literal - 1)

// Ends a live stream now: the socket shut down, the connection resumed so that its reader ends it.
static void end_stream(struct observer *ob) {
    shutdown(ob->fd, SHUT_RDWR);
    ob->fd = -1;
    ob->state = ENDING;
    MHD_resume_connection(ob->conn);
}

// Sends `len` bytes at `p` on a live stream's socket; a socket that does not take them all ends it.
static void transmit(struct observer *ob, const char *p, size_t len) {
    if (send(ob->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len) end_stream(ob);
}

// One event per registration of (object, key path), each in one send() on its subscriber's socket.
static void fan_out(struct object *o, const char *kp, size_t kplen, const char *value, size_t vlen, uint64_t rev) {
    // The tail every subscriber's event shares, written once; each one's head goes right in front of it.
    char *tail = event + HEAD_ROOM, *p = tail;
    p = put(p, "\",\"object\":\"");
    p = put_mem(p, o->id, o->len);
    p = put(p, "\",\"keyPath\":\"");
    p = put_mem(p, kp, kplen);
    p = put(p, "\",\"kind\":\"setting\",\"new\":");
    p = put_mem(p, value, vlen);
    p = put(p, ",\"revision\":");
    p = put_u64(p, rev);
    p = put(p, "}\n\n\r\n");  // the CRLF closes a chunk (HTTP/1.1); an HTTP/1.0 stream gets the bytes before it
    size_t tail_len = (size_t)(p - tail);
    for (uint32_t i = 0; i < o->nregs; i++) {
        struct reg *r = &o->regs[i];
        struct observer *ob = &observers[r->observer];
        if (ob->state != LIVE || r->kplen != kplen || memcmp(r->keypath, kp, kplen) != 0) continue;
        char head[HEAD_ROOM], *h = head + 24;  // room for the chunk's size line before the event's head
        char *e = put(h, "id: ");
        e = put_u64(e, ++ob->events);
        e = put(e, "\nevent: change\ndata: {\"observation\":\"reg_");
        e = put_u64(e, r->id);
        size_t payload = (size_t)(e - h) + tail_len - 2;
        if (ob->chunked) {  // "<size in hex>\r\n" before the payload, as libmicrohttpd frames a chunk
            char line[24], *l = put(put_hex(line, payload), "\r\n");
            h -= l - line;
            memcpy(h, line, (size_t)(l - line));
        }
        char *start = tail - (e - h);
        memcpy(start, h, (size_t)(e - h));
        transmit(ob, start, (size_t)(tail - start) + tail_len - (ob->chunked ? 0 : 2));
    }
}

// Called by libmicrohttpd when a stream's socket can take more: the opening first, then the connection parks.
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    pthread_mutex_lock(&lock);
    struct observer *ob = &observers[(uintptr_t)cls];
    ssize_t n = 0;
    if (stopping || ob->state == ENDING) {
        n = MHD_CONTENT_READER_END_WITH_ERROR;
    } else if (ob->state == OPENING) {  // as ObsServer opens a stream: `retry:`, then `synced` (nothing to replay)
        int len = snprintf(buf, max, "retry: 3000\n\nevent: synced\ndata: {\"lastEventId\":%llu,\"revision\":%llu}\n\n",
                           (unsigned long long)ob->events, (unsigned long long)revision);
        n = len > 0 && (size_t)len < max ? len : MHD_CONTENT_READER_END_WITH_ERROR;
        ob->state = OPENED;
    } else {  // all sent: libmicrohttpd leaves the socket alone until resumed, writes go to it directly
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(ob->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        ob->fd = info ? info->connect_fd : -1;
        MHD_suspend_connection(ob->conn);
        ob->state = LIVE;
        if (ob->fd < 0) end_stream(ob);
    }
    pthread_mutex_unlock(&lock);
    return n;
}

// Called once when a stream's connection is done with it, before its socket is closed: forget the socket.
static void stream_freed(void *cls) {
    pthread_mutex_lock(&lock);
    struct observer *ob = &observers[(uintptr_t)cls];
    ob->state = IDLE;
    ob->fd = -1;
    ob->conn = NULL;
    nstreams--;
    pthread_mutex_unlock(&lock);
}

static enum MHD_Result open_stream(struct MHD_Connection *c, uint32_t i, const char *version) {
    struct observer *ob = &observers[i];
    if (ob->state != IDLE) return ANSWER(c, 409, "{\"error\":\"streamOpen\"}");
    ob->chunked = strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
    // HTTP/1.1: libmicrohttpd reads a chunk straight into the connection's buffer (block size 1, as ObsServer).
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, ob->chunked ? 1 : 256,
                                                               stream_reader, (void *)(uintptr_t)i, stream_freed);
    if (!r) return MHD_NO;
    ob->state = OPENING;
    ob->conn = c;
    nstreams++;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result observe(struct MHD_Connection *c, uint32_t i, const char *body) {
    const char *id, *kp = "name";
    int len = member_string(body, "\"object\"", &id), kplen = member_string(body, "\"keyPath\"", &kp);
    struct object *o = len > 0 ? find_object(id, (size_t)len, 0) : NULL;
    if (kplen < 0) kplen = 4;  // "name"
    if (!o || kplen == 0 || kplen >= MAX_ID) return ANSWER(c, 404, "{\"error\":\"objectNotFound\"}");
    if (o->nregs == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 4;
        o->regs = realloc(o->regs, o->cap * sizeof *o->regs);
        if (!o->regs) abort();
    }
    struct reg *r = &o->regs[o->nregs++];
    r->observer = i;
    r->id = ++nregs;
    r->kplen = (uint8_t)kplen;
    memcpy(r->keypath, kp, (size_t)kplen);
    char out[256];
    int n = snprintf(out, sizeof out, "{\"observations\":[{\"id\":\"reg_%u\",\"object\":\"%.*s\",\"keyPath\":\"%.*s\"}],"
                     "\"revision\":%llu}", r->id, o->len, o->id, kplen, kp, (unsigned long long)++revision);
    return answer(c, 201, out, (size_t)n);
}

static enum MHD_Result write_value(struct MHD_Connection *c, const char *path, const char *body) {
    const char *slash = strchr(path, '/');
    struct object *o = slash ? find_object(path, (size_t)(slash - path), 0) : NULL;
    if (!o || strncmp(slash, "/values/", 8) != 0) return ANSWER(c, 404, "{\"error\":\"objectNotFound\"}");
    const char *kp = slash + 8, *value = strstr(body, "\"value\"");
    size_t kplen = strlen(kp);
    if (!value || kplen == 0 || kplen >= MAX_ID) return ANSWER(c, 400, "{\"error\":\"invalidBody\"}");
    value += 7;
    while (*value == ' ' || *value == ':') value++;
    const char *end = strrchr(value, '}');  // the value is what lies between `"value":` and the body's last brace
    while (end && end > value && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == '\r' || end[-1] == '\t')) end--;
    if (!end || end == value) return ANSWER(c, 400, "{\"error\":\"invalidBody\"}");
    fan_out(o, kp, kplen, value, (size_t)(end - value), ++revision);
    char out[40], *p = put_u64(put(out, "{\"revision\":"), revision);
    p = put(p, "}");
    return answer(c, 200, out, (size_t)(p - out));
}

static enum MHD_Result route(struct MHD_Connection *c, const char *url, const char *method, const char *version,
                             struct req *rq) {
    const char *body = rq ? rq->body : "";
    if (rq && rq->len > BODY_MAX) return ANSWER(c, 413, "{\"error\":\"payloadTooLarge\"}");
    if (!strcmp(method, "GET") && !strcmp(url, "/healthz")) return ANSWER(c, 200, "{\"status\":\"ok\"}");
    if (!strcmp(method, "POST") && !strcmp(url, "/v1/objects")) {
        const char *id;
        int len = member_string(body, "\"id\"", &id);
        struct object *o = len > 0 ? find_object(id, (size_t)len, 1) : NULL;
        if (!o) return ANSWER(c, 400, "{\"error\":\"invalidId\"}");
        char out[128];
        int n = snprintf(out, sizeof out, "{\"id\":\"%.*s\",\"revision\":%llu}", o->len, o->id,
                         (unsigned long long)++revision);
        return answer(c, 201, out, (size_t)n);
    }
    if (!strcmp(method, "POST") && !strcmp(url, "/v1/observers")) {
        if (nobservers == capobservers) {
            capobservers = capobservers ? 2 * capobservers : 1024;
            observers = realloc(observers, capobservers * sizeof *observers);
            if (!observers) abort();
        }
        observers[nobservers] = (struct observer){.fd = -1, .state = IDLE};
        char out[64];
        int n = snprintf(out, sizeof out, "{\"id\":\"obs_%u\",\"token\":\"t\"}", nobservers++);
        return answer(c, 201, out, (size_t)n);
    }
    if (!strncmp(url, "/v1/observers/obs_", 18)) {
        char *rest;
        unsigned long i = strtoul(url + 18, &rest, 10);
        if (rest == url + 18 || i >= nobservers) return ANSWER(c, 404, "{\"error\":\"observerNotFound\"}");
        if (!strcmp(method, "GET") && !strcmp(rest, "/events")) return open_stream(c, (uint32_t)i, version);
        if (!strcmp(method, "POST") && !strcmp(rest, "/observations")) return observe(c, (uint32_t)i, body);
    }
    if (!strcmp(method, "PUT") && !strncmp(url, "/v1/objects/", 12)) return write_value(c, url + 12, body);
    return ANSWER(c, 404, "{\"error\":\"notFound\"}");
}

// Called by libmicrohttpd for the headers, each piece of the body, then once more to answer.
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **ctx) {
    (void)cls;
    if (*ctx == NULL) {  // the headers: a body buffer for POST and PUT only
        if (method[0] != 'P') { *ctx = &no_body; return MHD_YES; }
        pthread_mutex_lock(&lock);
        struct req *rq = free_reqs;
        if (rq) free_reqs = rq->next;
        pthread_mutex_unlock(&lock);
        if (!rq && !(rq = malloc(sizeof *rq))) return MHD_NO;
        rq->len = 0;
        rq->body[0] = '\0';
        *ctx = rq;
        return MHD_YES;
    }
    struct req *rq = *ctx == &no_body ? NULL : *ctx;
    if (*upload_size) {  // a piece of the body (libmicrohttpd's 8 KiB per connection may cut it)
        if (rq && rq->len + *upload_size <= BODY_MAX) {
            memcpy(rq->body + rq->len, upload, *upload_size);
            rq->body[rq->len + *upload_size] = '\0';
        }
        if (rq) rq->len += *upload_size;
        *upload_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&lock);
    enum MHD_Result ok = route(c, url, method, version, rq);
    pthread_mutex_unlock(&lock);
    return ok;
}

// Called when a request ends (answered, or its connection gone): its body buffer goes back to the pool.
static void completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode code) {
    (void)cls, (void)c, (void)code;
    if (*ctx && *ctx != &no_body) {
        pthread_mutex_lock(&lock);
        ((struct req *)*ctx)->next = free_reqs;
        free_reqs = *ctx;
        pthread_mutex_unlock(&lock);
    }
    *ctx = NULL;
}

static size_t keep_escaped(void *cls, struct MHD_Connection *c, char *s) { (void)cls, (void)c; return strlen(s); }
static void quiet(void *cls, const char *fmt, va_list ap) { (void)cls, (void)fmt, (void)ap; }

int main(int argc, char **argv) {
    const char *host = "127.0.0.1";
    unsigned port = 8080, heartbeat = 15;
    cpu_set_t cpus;
    int threads = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;  // as ObsServer
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0 ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--host") && value) host = value;
        else if (!strcmp(argv[i], "--port") && value) port = (unsigned)atoi(value);
        else if (!strcmp(argv[i], "--threads") && value) threads = atoi(value);
        else if (!strcmp(argv[i], "--heartbeat-interval") && value) heartbeat = (unsigned)atoi(value);
        i += value != NULL;  // any other flag (--log-level warning, --data-dir DIR) is taken and ignored
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) return fprintf(stderr, "not an IPv4 address: %s\n", host), 2;
    // SIGTERM and SIGINT wait for the main thread (sigtimedwait); every thread started from here inherits the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    objects = calloc(TABLE, sizeof *objects);
    // ObsServer's flags and options (Sources/CMicroHTTPD/shim.c, HTTPDaemon.start): one epoll thread per CPU.
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, 19000, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 8 * 1024, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, 60, NULL},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096, NULL},
        {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)keep_escaped, NULL},
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)quiet, NULL},
        {MHD_OPTION_SOCK_ADDR, 0, &addr},
        {threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads, NULL},  // 0.9.75 warns on 0 or 1
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO |
                                            MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL, handle, NULL,
                                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    if (!d) return fprintf(stderr, "cannot listen on %s:%u\n", host, port), 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "mhd_fanout listening on http://%s:%u/ (%d thread(s))\n", host, info ? info->port : port, threads);
    // The main thread sends the heartbeat round (a comment on every live stream) until a signal comes.
    struct timespec every = {.tv_sec = heartbeat ? heartbeat : 15};
    while (sigtimedwait(&signals, NULL, &every) < 0) {
        if (errno != EAGAIN) continue;
        static const char chunk[] = "e\r\n: keep-alive\n\n\r\n";
        pthread_mutex_lock(&lock);
        for (uint32_t i = 0; i < nobservers; i++) {
            struct observer *ob = &observers[i];
            if (ob->state != LIVE) continue;
            if (ob->chunked) transmit(ob, chunk, sizeof chunk - 1);
            else transmit(ob, chunk + 3, sizeof chunk - 6);
        }
        pthread_mutex_unlock(&lock);
    }
    // libmicrohttpd must not be stopped with suspended connections: end every stream, wait (2 s at most), stop.
    pthread_mutex_lock(&lock);
    stopping = 1;
    for (uint32_t i = 0; i < nobservers; i++)
        if (observers[i].state == LIVE) end_stream(&observers[i]);
    pthread_mutex_unlock(&lock);
    for (int waited = 0; waited < 200; waited++) {
        pthread_mutex_lock(&lock);
        uint32_t open = nstreams;
        pthread_mutex_unlock(&lock);
        if (!open) break;
        usleep(10000);
    }
    MHD_stop_daemon(d);
    return 0;
}
