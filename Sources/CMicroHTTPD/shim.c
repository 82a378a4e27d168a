#define _GNU_SOURCE
#include "CMicroHTTPD.h"

#include <sched.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <string.h>

/// The Swift function that receives log lines: the same for every daemon, so one atomic
/// global serves them all; each daemon's own context travels as libmicrohttpd's `cls`.
static void (*cmhd_log_sink)(void *context, const char *message);

static void cmhd_log_trampoline(void *cls, const char *format, va_list arguments) {
    // Why: libmicrohttpd's logger takes a va_list, which Swift cannot receive; format here.
    void (*sink)(void *, const char *) = __atomic_load_n(&cmhd_log_sink, __ATOMIC_ACQUIRE);
    if (sink == NULL) {
        return;
    }
    char message[512];
    vsnprintf(message, sizeof message, format, arguments);
    size_t length = strlen(message);
    while (length > 0 && (message[length - 1] == '\n' || message[length - 1] == '\r')) {
        message[--length] = '\0';
    }
    sink(cls, message);
}

static size_t cmhd_keep_escaped(void *cls, struct MHD_Connection *connection, char *text) {
    // Why: libmicrohttpd percent-decodes the whole path into a C string, so `%00` cut it short and
    // `%2F` became a separator. The path and query arguments stay raw here; the Swift side splits
    // the path at `/` first and decodes each segment (and each query argument) on its own.
    (void)cls;
    (void)connection;
    return strlen(text);
}

static void cmhd_connection_notify(void *cls, struct MHD_Connection *connection, void **socket_context,
                                   enum MHD_ConnectionNotificationCode code) {
    // Why: libmicrohttpd keeps no per-connection state of ours; this gives each socket its own.
    (void)cls;
    (void)connection;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        *socket_context = calloc(1, sizeof(cmhd_connection_state));
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        free(*socket_context);
        *socket_context = NULL;
    }
}

struct MHD_Daemon *cmhd_start_daemon(const cmhd_daemon_config *config, const char **error_out) {
    // Why: MHD_start_daemon is variadic; a fixed option array through
    // MHD_OPTION_ARRAY keeps every option typed on the C side.
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
    const struct sockaddr *address = NULL;
    unsigned int flags = config->flags;
    memset(&v4, 0, sizeof v4);
    memset(&v6, 0, sizeof v6);
    if (config->host != NULL) {
        if (inet_pton(AF_INET, config->host, &v4.sin_addr) == 1) {
            v4.sin_family = AF_INET;
            v4.sin_port = htons(config->port);
            address = (const struct sockaddr *)&v4;
        } else if (inet_pton(AF_INET6, config->host, &v6.sin6_addr) == 1) {
            v6.sin6_family = AF_INET6;
            v6.sin6_port = htons(config->port);
            address = (const struct sockaddr *)&v6;
            flags |= MHD_USE_IPv6;
        } else {
            *error_out = "not a numeric IPv4 or IPv6 address";
            return NULL;
        }
    }
    struct MHD_OptionItem options[13];
    size_t count = 0;
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)config->completed,
                                               config->completed_context};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)cmhd_connection_notify, NULL};
    if (config->thread_pool_size > 1) {
        // Why: a size of 0 or 1 means no pool, and 0.9.75 logs a warning for either.
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, config->thread_pool_size, NULL};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, config->connection_limit, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, config->connection_memory_limit,
                                               NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, config->connection_timeout, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, config->listen_backlog, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)cmhd_keep_escaped, NULL};
    if (config->per_ip_connection_limit > 0) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                                   config->per_ip_connection_limit, NULL};
    }
    if (config->log_sink != NULL) {
        __atomic_store_n(&cmhd_log_sink, config->log_sink, __ATOMIC_RELEASE);
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)cmhd_log_trampoline,
                                                   config->log_context};
    }
    if (address != NULL) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)address};
    }
    options[count] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    struct MHD_Daemon *daemon = MHD_start_daemon(flags, config->port, NULL, NULL, config->handler,
                                                 config->handler_context, MHD_OPTION_ARRAY, options,
                                                 MHD_OPTION_END);
    if (daemon == NULL) {
        *error_out = "could not start (is the port in use, or the address not local?)";
    }
    return daemon;
}

int cmhd_connection_socket(struct MHD_Connection *connection) {
    // Why: MHD_get_connection_info is variadic.
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

int cmhd_connection_unsent_bytes(struct MHD_Connection *connection) {
    // Why: ioctl is variadic.
    int fd = cmhd_connection_socket(connection);
    int queued = 0;
    if (fd < 0 || ioctl(fd, SIOCOUTQ, &queued) != 0) return -1;
    return queued;
}

cmhd_connection_state *cmhd_connection_state_of(struct MHD_Connection *connection) {
    // Why: MHD_get_connection_info is variadic.
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

int cmhd_listen_socket(struct MHD_Daemon *daemon) {
    // Why: MHD_get_daemon_info is variadic.
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_LISTEN_FD);
    return info == NULL ? -1 : info->listen_fd;
}

uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
    // Why: MHD_get_daemon_info is variadic.
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

struct MHD_Response *cmhd_create_stream_response(size_t block_size, MHD_ContentReaderCallback reader,
                                                 void *context, MHD_ContentReaderFreeCallback free_callback) {
    // Why: MHD_SIZE_UNKNOWN is a macro Swift does not import.
    return MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, block_size, reader, context, free_callback);
}

#if MHD_VERSION < 0x00097400
// Why: before 0.9.68, MHD_get_connection_values_n matched the kind exactly, not as a mask:
// headers and query would silently come back empty. Before 0.9.74, an HTTP/1.1 stream was
// not chunked when the client sent `Connection: close`, while a stream's direct writes
// frame chunks for every HTTP/1.1 request (StreamConnection.Framing).
#error "libmicrohttpd 0.9.74 or later is needed"
#endif

int cmhd_request_fields(struct MHD_Connection *connection, MHD_KeyValueIteratorN iterator, void *context) {
    // Why: the kinds are a bitmask, which Swift's import of the enum cannot express.
    return MHD_get_connection_values_n(connection, MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND, iterator, context);
}

int cmhd_usable_cpus(void) {
    // Why: sched_getaffinity and CPU_COUNT need _GNU_SOURCE and a macro, which Swift
    // does not import. Two event loops time-sliced on one pinned core triple p99 latency.
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        return 1;
    }
    int count = CPU_COUNT(&set);
    return count > 0 ? count : 1;
}
