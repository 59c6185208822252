/* The writer's suite's shared helpers (writer_rig.h). */
#include "tests/unit/stats/writer_rig.h"
#include "stats/procinfo.h"

#include <time.h>

char segdir[256];

struct spw_stats_writer *open_writer_cmd(uint32_t ndev, const char *cmdline, const char *config)
{
    struct spw_stats_params p = {.dir = segdir, .device_count = ndev, .cmdline = cmdline, .config = config};
    struct spw_stats_writer *w = NULL;
    char err[256] = "";
    int rc = spw_stats_open(&w, &p, err, sizeof err);
    ck_assert_msg(rc == 0, "open failed: %s", err);
    return w;
}

struct spw_stats_writer *open_writer(uint32_t ndev, const char *config)
{
    return open_writer_cmd(ndev, "python3 train.py --big", config);
}

void read_own(struct spw_stats_snapshot *s)
{
    char name[64], why[256] = "";
    int removed = 0;
    snprintf(name, sizeof name, "spillway.%u.%d", (unsigned)geteuid(), (int)getpid());
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    enum spw_read_result r = spw_stats_read_at(dfd, name, 0, s, &removed, why, sizeof why);
    close(dfd);
    ck_assert_msg(r == SPW_READ_OK, "read %s: %d %s", name, r, why);
}

double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

void plant(const char *name, const void *data, size_t len, mode_t mode)
{
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, mode);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    close(dfd);
}

void expect_qualified(const struct spw_stats_writer *w, const char *name, size_t len)
{
    char want[512];
    snprintf(want, sizeof want, "%s/%s.%llu", segdir, name, (unsigned long long)spw_proc_self_pid_ns());
    ck_assert_str_eq(spw_stats_path(w), want);
    struct stat st;
    char planted[512];
    snprintf(planted, sizeof planted, "%s/%s", segdir, name);
    ck_assert_int_eq(stat(planted, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, len);
}
