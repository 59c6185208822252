#include "tools/top_serve.h"

#include <stdio.h>

#ifndef SPW_HAVE_MHD

bool top_serve_available(void)
{
    return false;
}

int top_serve(struct top_model *m, const char *filter, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)m, (void)filter, (void)addr, (void)addrlen;
    fprintf(stderr, "spillway-top: --serve is not available: built without libmicrohttpd\n");
    return 2;
}

#else

#include "tools/top_listen.h"
#include "tools/top_prom.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result mhd_result;
#else
typedef int mhd_result;
#endif

static const char index_page[] =
    "<!DOCTYPE html>\n<html><head><title>spillway</title></head><body>\n"
    "<h1>spillway</h1>\n<p><a href=\"/metrics\">Metrics</a></p>\n</body></html>\n";
static const char not_found_text[] = "404 not found: spillway serves /metrics\n";
static const char not_allowed_text[] = "405 method not allowed: GET or HEAD\n";

struct server {
    struct top_model *m;
    const char *filter;           /* --filter: the processes shown */
    struct MHD_Response *index, *not_found, *not_allowed;
    struct MHD_Response *metrics; /* the latest rendering, shared by requests */
    double metrics_at;            /* monotonic seconds */
    int metrics_status;
};

/* MHD speaks only while the daemon starts (why it cannot listen); later
 * its complaints are about clients, and a fuzzing client must not be able
 * to fill the log. */
static volatile int starting;

static void start_logger(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (!starting)
        return;
    fputs("spillway-top: ", stderr);
    vfprintf(stderr, fmt, ap);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void no_free(void *p)
{
    (void)p;
}

static struct MHD_Response *static_response(const char *text, const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(strlen(text), (void *)text, no_free);
    if (r)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    return r;
}

static struct MHD_Response *buffer_response(char *buf, size_t len, const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, buf, free);
    if (!r) {
        free(buf);
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return r;
}

/* A fresh scan rendered; a directory that cannot be read is a 500 with
 * the reason, so that Prometheus marks the target down. */
static struct MHD_Response *render(struct server *s, int *status)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    *status = MHD_HTTP_OK;
    if (top_model_sample(s->m, mono_now(), NULL, NULL) != 0) {
        fprintf(f, "spillway-top: %s\n", s->m->error);
        *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    } else {
        top_model_arrange(s->m, TOP_SORT_PID, false, s->filter);
        top_print_prometheus(f, s->m);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buffer_response(buf, len, *status == MHD_HTTP_OK ? TOP_PROM_CONTENT_TYPE : "text/plain; charset=utf-8");
}

static mhd_result serve_metrics(struct server *s, struct MHD_Connection *c)
{
    double now = mono_now();
    if (!s->metrics || now - s->metrics_at >= TOP_SERVE_FRESH_MS / 1000.0) {
        int status;
        struct MHD_Response *r = render(s, &status);
        if (!r)
            return MHD_NO; /* out of memory: drop this connection */
        /* Connections still sending the old one keep it alive. */
        if (s->metrics)
            MHD_destroy_response(s->metrics);
        s->metrics = r;
        s->metrics_status = status;
        s->metrics_at = now;
    }
    return MHD_queue_response(c, (unsigned)s->metrics_status, s->metrics);
}

/* Answered at the first call, before any body is read: nothing here takes
 * a body, and MHD closes a connection whose body was not read. */
static mhd_result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                             const char *version, const char *upload_data, size_t *upload_size, void **state)
{
    struct server *s = cls;
    (void)version, (void)upload_data, (void)upload_size, (void)state;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, s->not_allowed);
    if (strcmp(url, "/metrics") == 0)
        return serve_metrics(s, c);
    if (strcmp(url, "/") == 0)
        return MHD_queue_response(c, MHD_HTTP_OK, s->index);
    return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, s->not_found);
}

static void destroy_responses(struct server *s)
{
    struct MHD_Response **all[] = {&s->index, &s->not_found, &s->not_allowed, &s->metrics};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (*all[i])
            MHD_destroy_response(*all[i]);
        *all[i] = NULL;
    }
}

static int make_responses(struct server *s)
{
    s->index = static_response(index_page, "text/html; charset=utf-8");
    s->not_found = static_response(not_found_text, "text/plain; charset=utf-8");
    s->not_allowed = static_response(not_allowed_text, "text/plain; charset=utf-8");
    if (s->not_allowed)
        MHD_add_response_header(s->not_allowed, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    return s->index && s->not_found && s->not_allowed ? 0 : -1;
}

static struct MHD_Daemon *start(struct server *s, const struct sockaddr *addr)
{
    /* poll(), not epoll: with epoll, MHD 0.9.75 misses the end of a
     * connection that sent only blank lines, and holds it until the
     * timeout. 256 descriptors are nothing for poll. */
    unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    uint16_t port;
    if (addr->sa_family == AF_INET6) {
        /* Dual stack: with MHD_USE_IPv6 alone MHD sets IPV6_V6ONLY, and
         * [::]:PORT, documented as every interface, refused IPv4 scrapers
         * (a Prometheus reaching a pod by its IPv4 address). */
        flags |= MHD_USE_DUAL_STACK;
        port = ntohs(((const struct sockaddr_in6 *)addr)->sin6_port);
    } else {
        port = ntohs(((const struct sockaddr_in *)addr)->sin_port);
    }
    starting = 1;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, port, NULL, NULL, on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, start_logger, NULL, /* first, or MHD logs the rest itself */
        MHD_OPTION_SOCK_ADDR, addr,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)TOP_SERVE_MAX_CONNECTIONS,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)TOP_SERVE_MAX_PER_IP,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)TOP_SERVE_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)TOP_SERVE_CONN_MEMORY,
        MHD_OPTION_STRICT_FOR_CLIENT, (int)1,
        MHD_OPTION_END);
    starting = 0;
    return d;
}

/* The address actually bound (the port the system chose for port 0). */
static void bound_address(struct MHD_Daemon *d, const struct sockaddr *addr, char *out, size_t len)
{
    struct sockaddr_storage ss;
    memcpy(&ss, addr, addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (info && info->port) {
        if (ss.ss_family == AF_INET6)
            ((struct sockaddr_in6 *)&ss)->sin6_port = htons(info->port);
        else
            ((struct sockaddr_in *)&ss)->sin_port = htons(info->port);
    }
    top_listen_format((const struct sockaddr *)&ss, out, len);
}

bool top_serve_available(void)
{
    return true;
}

int top_serve(struct top_model *m, const char *filter, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)addrlen;
    struct server s = {.m = m, .filter = filter};
    /* The daemon's thread inherits this mask: the signals that stop us
     * reach sigwait below and nothing else. A peer that hangs up must not
     * kill us either. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (make_responses(&s) != 0) {
        fprintf(stderr, "spillway-top: out of memory\n");
        destroy_responses(&s);
        return 1;
    }
    struct MHD_Daemon *d = start(&s, addr);
    char where[80];
    top_listen_format(addr, where, sizeof where);
    if (!d) {
        fprintf(stderr, "spillway-top: cannot serve on %s\n", where);
        destroy_responses(&s);
        return 1;
    }
    bound_address(d, addr, where, sizeof where);
    fprintf(stderr, "spillway-top: serving http://%s/metrics\n", where);
    fflush(stderr);
    int sig;
    while (sigwait(&stop, &sig) != 0)
        ;
    MHD_stop_daemon(d);
    destroy_responses(&s);
    return 0;
}
#endif
