#ifndef C_MICRO_HTTPD_H
#define C_MICRO_HTTPD_H

// Fixed-argument wrappers over libmicrohttpd's variadic entry points, which
// Swift cannot import. Only `HTTPDaemon.swift` in the ObsServer target uses
// this module.

#include <microhttpd.h>
#include <stdint.h>

/// Everything `MHD_start_daemon` needs, as a plain struct.
typedef struct {
    /// `MHD_USE_*` flags.
    unsigned int flags;
    /// Numeric IPv4 or IPv6 address to bind; NULL binds every IPv4 address.
    const char *_Nullable host;
    /// TCP port; 0 lets the kernel choose (read it back with `cmhd_bound_port`).
    uint16_t port;
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    unsigned int connection_memory_limit;
    unsigned int connection_timeout;
    /// Most simultaneous connections from one client address (0: no limit).
    unsigned int per_ip_connection_limit;
    unsigned int listen_backlog;
    MHD_AccessHandlerCallback _Nonnull handler;
    void *_Nullable handler_context;
    MHD_RequestCompletedCallback _Nonnull completed;
    void *_Nullable completed_context;
    /// Receives libmicrohttpd's log messages, already formatted (NULL: its default, stderr).
    void (*_Nullable log_sink)(void *_Nullable context, const char *_Nonnull message);
    void *_Nullable log_context;
} cmhd_daemon_config;

/// Starts a daemon from `config`. Returns NULL on failure, with `*error_out`
/// set to a short static description (bad address, or the bind failed).
struct MHD_Daemon *_Nullable cmhd_start_daemon(const cmhd_daemon_config *_Nonnull config,
                                               const char *_Nullable *_Nonnull error_out);

/// The socket of a connection (for watching it and setting TCP options on it), or -1.
int cmhd_connection_socket(struct MHD_Connection *_Nonnull connection);

/// Bytes queued on the connection's socket and not yet acknowledged by the peer (SIOCOUTQ), or
/// -1: a peer that does not read lets them pile up.
int cmhd_connection_unsent_bytes(struct MHD_Connection *_Nonnull connection);

/// What the daemon keeps for a connection as long as its socket is open (zeroed when it is
/// accepted, freed when it closes). Touched by the thread serving the connection only.
typedef struct {
    /// At least the bytes queued unsent on the socket: what was written since they were last
    /// counted, plus that count (0 when accepted: a new socket has nothing queued).
    int64_t unsent_bound;
} cmhd_connection_state;

/// The connection's state, or NULL (no memory when it was accepted).
cmhd_connection_state *_Nullable cmhd_connection_state_of(struct MHD_Connection *_Nonnull connection);

/// The port the daemon listens on (useful after binding port 0).
uint16_t cmhd_bound_port(struct MHD_Daemon *_Nonnull daemon);

/// The daemon's listening socket (-1 if it has none).
int cmhd_listen_socket(struct MHD_Daemon *_Nonnull daemon);

/// Creates a response whose body is produced by `reader` (an event stream).
struct MHD_Response *_Nullable cmhd_create_stream_response(size_t block_size,
                                                           MHD_ContentReaderCallback _Nonnull reader,
                                                           void *_Nullable context,
                                                           MHD_ContentReaderFreeCallback _Nonnull free_callback);

/// Calls `iterator` for each header and each query argument of a request, in the order
/// they came (one pass over libmicrohttpd's list); returns how many there were.
int cmhd_request_fields(struct MHD_Connection *_Nonnull connection, MHD_KeyValueIteratorN _Nonnull iterator,
                        void *_Nullable context);

/// The number of CPUs in this process's affinity mask (what taskset, cpusets and
/// container CPU pinning allow), at least 1. Sizes the worker pool.
int cmhd_usable_cpus(void);

#endif
