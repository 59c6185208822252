/* A valid segment image made by the real writer, for tests that then break
 * it: the bytes of a 2-device segment of this process with known counters
 * (device 1: in_use_bytes 4242, peak_bytes 5000, allocs 1, frees 1). */
#ifndef SPILLWAY_TEST_IMAGE_H
#define SPILLWAY_TEST_IMAGE_H
#include "stats/writer.h"
#include "tests/unit/stats/segdir.h"

#define IMAGE_DEVICES 2u

/* Returns a malloc'd copy of a fresh segment; *len gets its size. */
static inline unsigned char *valid_image(size_t *len)
{
    struct spw_stats_params p = {.dir = segdir, .device_count = IMAGE_DEVICES, .cmdline = "worker --id 7",
                                 .config = "mem_limit=1G\n"};
    struct spw_stats_writer *w;
    char err[256];
    if (spw_stats_open(&w, &p, err, sizeof err) != 0) {
        fprintf(stderr, "valid_image: %s\n", err);
        abort();
    }
    spw_stats_set(w, 0, SPW_C_LIMIT, 1u << 30);
    /* In use 4242 as base + lanes: the free's lane, the last, is below zero. */
    spw_stats_set(w, 1, SPW_C_IN_USE, 1000);
    spw_stats_alloc(w, 1, 2, 4000, 5000);
    spw_stats_free(w, 1, SPW_STATS_LANES - 1, 758);
    *len = (size_t)spw_stats_total_size(IMAGE_DEVICES);
    unsigned char *img = malloc(*len);
    memcpy(img, w->hdr, *len);
    spw_stats_close(w);
    return img;
}

/* The name the reader expects for a segment of this process. */
static inline const char *own_name(void)
{
    static char name[64];
    snprintf(name, sizeof name, "spillway.%u.%d", (unsigned)geteuid(), (int)getpid());
    return name;
}

/* Writes data as dir/name with mode, replacing what was there. */
static inline void plant_file(const char *name, const void *data, size_t len, mode_t mode)
{
    int dfd = open(segdir, O_RDONLY | O_DIRECTORY);
    unlinkat(dfd, name, 0);
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, mode);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len || fchmod(fd, mode) != 0) {
        perror("plant_file");
        abort();
    }
    close(fd);
    close(dfd);
}
#endif
