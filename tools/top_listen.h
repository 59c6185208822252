/* --serve's ADDR:PORT. Loopback unless told otherwise: a bare port (or
 * ":PORT") listens on 127.0.0.1 only; 0.0.0.0:PORT or [::]:PORT on every
 * interface. */
#ifndef SPILLWAY_TOOLS_TOP_LISTEN_H
#define SPILLWAY_TOOLS_TOP_LISTEN_H
#include <stddef.h>
#include <sys/socket.h>

/* Parses "PORT", ":PORT", "HOST:PORT" (an IPv4 address or a name, resolved
 * to its first address) or "[IPv6]:PORT"; PORT 0 lets the system pick one.
 * 0, or -1 with why. */
int top_listen_parse(const char *arg, struct sockaddr_storage *out, socklen_t *len, char *why, size_t whylen);

/* "127.0.0.1:9402" or "[::1]:9402". */
void top_listen_format(const struct sockaddr *sa, char *out, size_t len);
#endif
