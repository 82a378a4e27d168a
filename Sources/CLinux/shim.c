#include "CLinux.h"

#include <malloc.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

int clinux_epoll_create(void) {
    // Why: epoll_create1 and EPOLL_CLOEXEC are not in Swift's Glibc module.
    return epoll_create1(EPOLL_CLOEXEC);
}

int clinux_epoll_watch_hangup(int epfd, int fd, uint64_t token) {
    // Why: struct epoll_event is packed on x86-64, which Swift cannot lay out itself.
    struct epoll_event event = {.events = EPOLLRDHUP | EPOLLONESHOT, .data.u64 = token};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

int clinux_epoll_watch_writable(int epfd, int fd, uint64_t token) {
    // Why: as above.
    struct epoll_event event = {.events = EPOLLOUT | EPOLLONESHOT, .data.u64 = token};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

int clinux_epoll_watch_readable(int epfd, int fd, uint64_t token) {
    // Why: as above.
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = token};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

int clinux_epoll_unwatch(int epfd, int fd) {
    // Why: as above (kernels before 2.6.9 wanted a non-NULL event even for EPOLL_CTL_DEL).
    struct epoll_event unused = {0};
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &unused);
}

int clinux_epoll_wait(int epfd, uint64_t *tokens, int max) {
    // Why: epoll_wait fills packed epoll_event structs; only their tokens go back to Swift.
    struct epoll_event events[64];
    if (max > 64) {
        max = 64;
    }
    int count = epoll_wait(epfd, events, max, -1);
    for (int index = 0; index < count; index++) {
        tokens[index] = events[index].data.u64;
    }
    return count;
}

int clinux_eventfd(void) {
    // Why: sys/eventfd.h is not in Swift's Glibc module.
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int clinux_use_one_malloc_arena(void) {
    // Why: M_ARENA_MAX is a malloc.h macro, not in Swift's Glibc module.
    return mallopt(M_ARENA_MAX, 1);
}
