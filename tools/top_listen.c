#include "tools/top_listen.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reject(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

static int parse_port(const char *s, unsigned *port)
{
    if (!*s || strlen(s) > 5)
        return -1;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return -1;
    unsigned long v = strtoul(s, NULL, 10);
    if (v > 65535)
        return -1;
    *port = (unsigned)v;
    return 0;
}

/* HOST to an address of either family; numeric forms need no resolver. */
static int resolve(const char *host, unsigned port, struct sockaddr_storage *out, socklen_t *len)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    hints.ai_flags = AI_NUMERICSERV;
    if (getaddrinfo(host, service, &hints, &res) != 0 || !res)
        return -1;
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int top_listen_parse(const char *arg, struct sockaddr_storage *out, socklen_t *len, char *why, size_t whylen)
{
    char host[256];
    const char *port_s;
    memset(out, 0, sizeof *out);
    if (arg[0] == '[') {
        const char *close = strchr(arg, ']');
        if (!close || close[1] != ':' || (size_t)(close - arg - 1) >= sizeof host)
            return reject(why, whylen, "invalid address '%s': expected [IPv6]:PORT", arg);
        snprintf(host, sizeof host, "%.*s", (int)(close - arg - 1), arg + 1);
        port_s = close + 2;
    } else {
        const char *colon = strrchr(arg, ':');
        if (colon && strchr(arg, ':') != colon)
            return reject(why, whylen, "invalid address '%s': write an IPv6 address as [ADDR]:PORT", arg);
        if (!colon || colon == arg)
            snprintf(host, sizeof host, "127.0.0.1");
        else if ((size_t)(colon - arg) >= sizeof host)
            return reject(why, whylen, "invalid address '%s': host name too long", arg);
        else
            snprintf(host, sizeof host, "%.*s", (int)(colon - arg), arg);
        port_s = colon ? colon + 1 : arg;
    }
    unsigned port;
    if (parse_port(port_s, &port) != 0)
        return reject(why, whylen, "invalid port in '%s': expected 0 to 65535", arg);
    if (resolve(host, port, out, len) != 0)
        return reject(why, whylen, "cannot resolve '%s'", host);
    return 0;
}

void top_listen_format(const struct sockaddr *sa, char *out, size_t len)
{
    char addr[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof addr);
        snprintf(out, len, "[%s]:%u", addr, ntohs(s6->sin6_port));
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof addr);
        snprintf(out, len, "%s:%u", addr, ntohs(s4->sin_port));
    }
}
