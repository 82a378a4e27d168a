#ifndef C_LINUX_H
#define C_LINUX_H

// epoll and eventfd, which Swift's Glibc module does not import (sys/epoll.h is not part of
// it, and `struct epoll_event` is packed on x86-64). `SocketWatcher` uses epoll; the cluster's
// tailer (`ClusterShared`) waits on an eventfd that wakes it. And malloc.h's `mallopt`.

#include <stdint.h>

/// A new epoll instance (close-on-exec), or -1 with errno set.
int clinux_epoll_create(void);

/// Watches `fd` for its peer hanging up: EPOLLRDHUP (the peer closed its side), EPOLLHUP and
/// EPOLLERR (reset, timed out), once (EPOLLONESHOT), never for incoming data. `token` comes back
/// from `clinux_epoll_wait`. Returns 0, or -1 with errno set.
int clinux_epoll_watch_hangup(int epfd, int fd, uint64_t token);

/// Watches `fd` for room to write (EPOLLOUT; EPOLLHUP and EPOLLERR come too), once (EPOLLONESHOT).
int clinux_epoll_watch_writable(int epfd, int fd, uint64_t token);

/// Watches `fd` for becoming readable, level-triggered (an eventfd that interrupts waits).
int clinux_epoll_watch_readable(int epfd, int fd, uint64_t token);

/// Stops watching `fd`. Returns 0, or -1 with errno set.
int clinux_epoll_unwatch(int epfd, int fd);

/// Blocks until something watched is ready (no timeout), then writes up to `max` tokens.
/// Returns how many, or -1 with errno set (EINTR: call again).
int clinux_epoll_wait(int epfd, uint64_t *_Nonnull tokens, int max);

/// Makes every thread allocate from glibc's main arena (`mallopt(M_ARENA_MAX, 1)`); call it
/// before any other thread starts. Returns 1, or 0 when glibc refused.
int clinux_use_one_malloc_arena(void);

/// A new eventfd (close-on-exec, non-blocking), or -1 with errno set.
int clinux_eventfd(void);

#endif
