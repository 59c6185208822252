/* The exporter's side of legacy IPC of pool memory (shim/ipc.h): one
 * detached thread serving an abstract unix socket named by a random token,
 * started by the process's first cuIpcGetMemHandle of pool memory, and the
 * importer's request to it.
 *
 * A request names an allocation (secret, BUFFER_ID, base, size); the server
 * checks the peer's uid (SO_PEERCRED: the same user, or root), the secret,
 * that the program exported that allocation (not a neighbour on its
 * pages), and that the allocation at base is still that live one, then exports
 * each page's handle as a POSIX file descriptor under the device lock
 * (policy's sw_export_handles) and sends a header and the descriptors
 * (SCM_RIGHTS, at most 253 a message), closing its own copies. Not
 * pidfd_getfd: it needs ptrace rights (Yama ptrace_scope 1, container
 * seccomp profiles). The server never dies on a request: every receive has
 * a timeout and anything malformed closes that connection only. It holds
 * no lock between requests, so a fork finds none held; a forked child
 * (shim/fork.h) has no server thread and never serves (spillway's handlers
 * stand aside there), and closes its copy of the listening socket. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "policy/policy.h"
#include "shim/backend.h"
#include "shim/driver.h"
#include "shim/ipc.h"
#include "shim/log.h"
#include "shim/pool_setup.h"

#define REQ_MAGIC 0x52575053u /* "SPWR" */
#define FDS_PER_MSG SPW_IPC_FDS_PER_MSG
/* The server gives a peer SERVE_TIMEOUT_S per send or receive; an asker
 * waits longer, so that a request queued behind a peer that says nothing
 * (served one at a time) is still answered. */
#define SERVE_TIMEOUT_S 2
#define ASK_TIMEOUT_S 10

typedef struct request {
    uint32_t magic, version;
    uint64_t secret, buffer, base, size;
} request;

/* The process's server: started once, under its lock; the token and secret
 * are read lock-free once started is set. */
static struct {
    pthread_mutex_t lock;
    _Atomic bool started;
    uint64_t token, secret;
    int fd; /* the listening socket */
    /* The BUFFER_IDs the program exported (never reused, so never stale in
     * a way that matters): only those are served, not a neighbour that
     * happens to share their exported pages. Under lock. */
    uint64_t *ids;
    size_t nids, capids;
} srv = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* Under srv.lock. */
static bool exported_locked(uint64_t id)
{
    for (size_t i = 0; i < srv.nids; i++)
        if (srv.ids[i] == id)
            return true;
    return false;
}

static bool was_exported(uint64_t id)
{
    pthread_mutex_lock(&srv.lock);
    bool yes = exported_locked(id);
    pthread_mutex_unlock(&srv.lock);
    return yes;
}

/* Under srv.lock; false when out of memory. */
static bool note_export_locked(uint64_t id)
{
    if (exported_locked(id))
        return true;
    if (srv.nids == srv.capids) {
        size_t cap = srv.capids ? 2 * srv.capids : 64;
        uint64_t *ids = realloc(srv.ids, cap * sizeof *ids);
        if (!ids)
            return false;
        srv.ids = ids;
        srv.capids = cap;
    }
    srv.ids[srv.nids++] = id;
    return true;
}

/* A forked child has no server thread: its copy of the listening socket
 * would keep the name bound after the exporter exits, and askers would
 * wait out their timeout instead of being refused at once. */
static void child_closes(void)
{
    if (srv.fd >= 0)
        close(srv.fd);
    srv.fd = -1;
}

static void sock_name(uint64_t token, struct sockaddr_un *a, socklen_t *len)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "spillway-ipc-%016llx",
                     (unsigned long long)token);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void timeouts(int fd, int seconds)
{
    struct timeval tv = {.tv_sec = seconds};
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static uint64_t random64(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v && v)
        return v;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    v = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
        (uint64_t)(uintptr_t)&v;
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdull;
    v ^= v >> 33;
    return v ? v : 1;
}

/* ---- serving ---------------------------------------------------------------- */

/* One message's worth of descriptors: pages [from, from + n). */
typedef struct collected {
    size_t from, n;
    int fds[FDS_PER_MSG];
} collected;

/* Under the device lock: one descriptor per page. */
static CUresult collect(void *ctx, size_t i, CUmemGenericAllocationHandle h)
{
    collected *c = ctx;
    int fd = -1;
    CUresult r = spw_backend_export_fd(h, &fd);
    if (r != CUDA_SUCCESS)
        return r;
    c->fds[i - c->from] = fd;
    c->n = i - c->from + 1;
    return CUDA_SUCCESS;
}

static CUresult check_only(void *ctx, size_t i, CUmemGenericAllocationHandle h)
{
    (void)ctx;
    (void)i;
    (void)h;
    return CUDA_SUCCESS;
}

static bool send_all(int s, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t k = send(s, p, len, MSG_NOSIGNAL);
        if (k <= 0) {
            if (k < 0 && errno == EINTR)
                continue;
            return false;
        }
        p += k;
        len -= (size_t)k;
    }
    return true;
}

/* One message: a byte and n (at most FDS_PER_MSG) descriptors. */
static bool send_fds(int s, const int *fds, size_t n)
{
    char byte = 0;
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(FDS_PER_MSG * sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                       .msg_controllen = CMSG_SPACE(n * sizeof(int))};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(n * sizeof(int));
    memcpy(CMSG_DATA(c), fds, n * sizeof(int));
    ssize_t r;
    while ((r = sendmsg(s, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return r == 1;
}

static void reply_status(int s, CUresult r)
{
    spw_ipc_reply rep = {.status = (int32_t)r};
    (void)send_all(s, &rep, sizeof rep);
}

static void serve_one(int s)
{
    timeouts(s, SERVE_TIMEOUT_S);
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 ||
        (cred.uid != geteuid() && cred.uid != 0)) {
        reply_status(s, CUDA_ERROR_NOT_PERMITTED);
        return;
    }
    request q;
    ssize_t k = recv(s, &q, sizeof q, MSG_WAITALL);
    if (k != (ssize_t)sizeof q || q.magic != REQ_MAGIC || q.version != 1)
        return; /* short, garbage or too slow: this connection only */
    if (q.secret != srv.secret || !was_exported(q.buffer)) {
        reply_status(s, CUDA_ERROR_INVALID_VALUE);
        return;
    }
    sw_policy *p = spw_pool_policy();
    sw_export x = {.base = q.base, .size = q.size, .buffer = q.buffer};
    CUresult r = p && q.size ? sw_export_handles(p, &x, 0, 0, check_only, NULL) : CUDA_ERROR_INVALID_VALUE;
    spw_ipc_reply rep = {.status = (int32_t)r};
    if (r == CUDA_SUCCESS) {
        CUuuid u;
        if (!spw_drv.cuDeviceGetUuid_v2 || spw_drv.cuDeviceGetUuid_v2(&u, (CUdevice)x.dev) != CUDA_SUCCESS)
            rep.status = CUDA_ERROR_INVALID_DEVICE;
        else
            memcpy(rep.uuid, u.bytes, sizeof rep.uuid);
        rep.page = x.page;
        rep.npages = x.npages;
        rep.offset = x.offset;
    }
    if (!send_all(s, &rep, sizeof rep) || rep.status != CUDA_SUCCESS)
        return;
    /* A message of descriptors at a time, each exported just before it is
     * sent and closed after: never more open than one message's, however
     * large the allocation (the open-file limit is often 1024). A free
     * meanwhile ends the connection short, which the asker reads as one. */
    for (size_t from = 0; from < x.npages; from += FDS_PER_MSG) {
        collected c = {.from = from};
        r = sw_export_handles(p, &x, from, FDS_PER_MSG, collect, &c);
        bool sent = r == CUDA_SUCCESS && c.n && send_fds(s, c.fds, c.n);
        for (size_t i = 0; i < c.n; i++)
            close(c.fds[i]);
        if (!sent)
            return;
    }
}

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    for (;;) {
        int s = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (s < 0) {
            if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN) {
                struct timespec ts = {0, 10 * 1000 * 1000}; /* EMFILE and the like: later */
                nanosleep(&ts, NULL);
            }
            continue;
        }
        serve_one(s);
        close(s);
    }
    return NULL;
}

uint64_t spw_ipc_own_token(void)
{
    return atomic_load_explicit(&srv.started, memory_order_acquire) ? srv.token : 0;
}

/* Starts the server (under srv.lock): CUDA_ERROR_OPERATING_SYSTEM when the
 * socket or the thread cannot be made (one warning). */
static CUresult start_locked(void)
{
    CUresult r = CUDA_ERROR_OPERATING_SYSTEM;
    uint64_t tok = random64();
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    socklen_t len;
    sock_name(tok, &a, &len);
    pthread_attr_t at;
    pthread_t th;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, len) == 0 && listen(fd, 64) == 0 &&
        pthread_attr_init(&at) == 0) {
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        srv.token = tok;
        srv.secret = random64();
        srv.fd = fd;
        if (pthread_atfork(NULL, NULL, child_closes) == 0 &&
            pthread_create(&th, &at, serve, (void *)(intptr_t)fd) == 0) {
            atomic_store_explicit(&srv.started, true, memory_order_release);
            r = CUDA_SUCCESS;
        } else {
            srv.fd = -1;
        }
        pthread_attr_destroy(&at);
    }
    if (r != CUDA_SUCCESS) {
        spw_warn("legacy IPC: the socket serving this process's exports could not be made (%s)",
                 strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    return r;
}

CUresult spw_ipc_serve(uint64_t buffer, uint64_t *token, uint64_t *secret)
{
    pthread_mutex_lock(&srv.lock);
    CUresult r = atomic_load_explicit(&srv.started, memory_order_relaxed) ? CUDA_SUCCESS : start_locked();
    if (r == CUDA_SUCCESS && !note_export_locked(buffer))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    *token = srv.token;
    *secret = srv.secret;
    pthread_mutex_unlock(&srv.lock);
    return r;
}

/* ---- asking ------------------------------------------------------------------ */

/* Whether a reply describes a span the handle's allocation could have:
 * a power-of-two page from 4 KiB to 1 GiB, base's offset inside the first,
 * exactly the pages that offset and the size take, with no overflow. Any
 * other is a peer's nonsense (never trusted: it sizes what is mapped). */
static bool reply_sane(const spw_ipc_handle *h, const spw_ipc_reply *rep)
{
    uint64_t page = rep->page;
    if (page < 4096 || page > (1ull << 30) || (page & (page - 1)) || rep->offset >= page || !h->size ||
        h->size > UINT64_MAX - rep->offset - page)
        return false;
    return rep->npages == (rep->offset + h->size + page - 1) / page;
}

int spw_ipc_ask(const spw_ipc_handle *h, spw_ipc_reply *rep, CUresult *r)
{
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        *r = CUDA_ERROR_OPERATING_SYSTEM;
        return -1;
    }
    timeouts(s, ASK_TIMEOUT_S);
    struct sockaddr_un a;
    socklen_t len;
    sock_name(h->token, &a, &len);
    *r = CUDA_ERROR_INVALID_VALUE; /* the exporter is gone, or answers nonsense */
    request q = {REQ_MAGIC, 1, h->secret, h->buffer, h->base, h->size};
    if (connect(s, (struct sockaddr *)&a, len) == 0 && send_all(s, &q, sizeof q) &&
        recv(s, rep, sizeof *rep, MSG_WAITALL) == (ssize_t)sizeof *rep) {
        if (rep->status != CUDA_SUCCESS)
            *r = (CUresult)rep->status;
        else if (reply_sane(h, rep))
            *r = CUDA_SUCCESS;
    }
    if (*r == CUDA_SUCCESS)
        return s;
    close(s);
    return -1;
}

size_t spw_ipc_next_fds(int s, int *fds, size_t max)
{
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(FDS_PER_MSG * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                       .msg_controllen = sizeof u.buf};
    ssize_t r;
    while ((r = recvmsg(s, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (r != 1)
        return 0;
    size_t got = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int tmp[FDS_PER_MSG];
        memcpy(tmp, CMSG_DATA(c), (k < FDS_PER_MSG ? k : FDS_PER_MSG) * sizeof(int));
        for (size_t i = 0; i < k && i < FDS_PER_MSG; i++) {
            if (got < max)
                fds[got++] = tmp[i];
            else
                close(tmp[i]); /* more than asked for: not kept */
        }
    }
    if (m.msg_flags & MSG_CTRUNC) {
        for (size_t i = 0; i < got; i++)
            close(fds[i]);
        return 0;
    }
    return got;
}
