/* spillway-top --serve: the Prometheus exposition over HTTP, served by
 * libmicrohttpd (when the build found it; see top_serve_available).
 *
 * GET or HEAD /metrics answers what --prometheus prints, / a link to it;
 * other paths 404, other methods 405. Bounded against slow or malicious
 * clients: at most TOP_SERVE_MAX_CONNECTIONS connections, of which
 * TOP_SERVE_MAX_PER_IP from one address, each closed after
 * TOP_SERVE_TIMEOUT_S idle seconds and given TOP_SERVE_CONN_MEMORY bytes
 * for its request (a larger request line or header is refused). One
 * rendering serves every request for TOP_SERVE_FRESH_MS, so a flood of
 * scrapes costs one scan of the segments per period, not one each. */
#ifndef SPILLWAY_TOOLS_TOP_SERVE_H
#define SPILLWAY_TOOLS_TOP_SERVE_H
#include "tools/top_model.h"

#include <stdbool.h>
#include <sys/socket.h>

#define TOP_SERVE_MAX_CONNECTIONS 256
#define TOP_SERVE_MAX_PER_IP 16
#define TOP_SERVE_TIMEOUT_S 10
#define TOP_SERVE_CONN_MEMORY (32 * 1024)
#define TOP_SERVE_FRESH_MS 500

/* Whether this spillway-top was built with libmicrohttpd. */
bool top_serve_available(void);

/* Serves on addr until SIGINT, SIGTERM or SIGHUP; says where on stderr
 * ("spillway-top: serving http://ADDR:PORT/metrics"). Returns the exit
 * status: 0 after a signal, 1 when it cannot listen (with the reason).
 * Each rendering shows the processes filter keeps (NULL or "": all). */
int top_serve(struct top_model *m, const char *filter, const struct sockaddr *addr, socklen_t addrlen);
#endif
