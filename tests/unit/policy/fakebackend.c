/* The fake backend (see fakebackend.h): made and destroyed, its counts and
 * violations, failures injected and calls hooked, its modes, and the table
 * of its calls, which fakebackend_memory.c, fakebackend_work.c and
 * fakebackend_events.c answer (fakebackend_state.h). */
#include "tests/unit/policy/fakebackend_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void fb_violate(fake_backend *fb, const char *fmt, unsigned long long a)
{
    if (!fb->st.violations++)
        snprintf(fb->violation, sizeof fb->violation, fmt, a);
}

void (*fb_hook_due(fake_backend *fb, const char *op))(void *)
{
    if (!fb->on_fn || strcmp(fb->on_op, op) != 0 || ++fb->on_calls != fb->on_nth)
        return NULL;
    void (*fn)(void *) = fb->on_fn;
    fb->on_fn = NULL;
    return fn;
}

bool fb_injected(fake_backend *fb, const char *op, CUresult *r)
{
    for (int i = 0; i < 3; i++) {
        struct fail *f = &fb->fail[i];
        if (!f->op[0] || strcmp(f->op, op) != 0)
            continue;
        if (f->skip > 0) {
            f->skip--;
            return false;
        }
        if (--f->times <= 0)
            f->op[0] = 0;
        *r = f->r;
        return true;
    }
    return false;
}

static void set_fail(fake_backend *fb, int slot, const char *op, int skip, CUresult r, int times)
{
    pthread_mutex_lock(&fb->lock);
    if (slot == 1 && fb->fail[1].op[0])
        slot = 2; /* a third op, beside the two set before */
    struct fail *f = &fb->fail[slot];
    snprintf(f->op, sizeof f->op, "%s", op);
    f->r = r;
    f->times = times;
    f->skip = skip;
    if (slot == 0)
        fb->fail[1].op[0] = fb->fail[2].op[0] = 0;
    pthread_mutex_unlock(&fb->lock);
}

void fake_fail_after(fake_backend *fb, const char *op, int skip, CUresult r, int times)
{
    set_fail(fb, 0, op, skip, r, times);
}

void fake_fail_also(fake_backend *fb, const char *op, CUresult r, int times)
{
    set_fail(fb, 1, op, 0, r, times);
}

void fake_fail_also_after(fake_backend *fb, const char *op, int skip, CUresult r, int times)
{
    set_fail(fb, 1, op, skip, r, times);
}

void fake_fail_times(fake_backend *fb, const char *op, CUresult r, int times)
{
    fake_fail_after(fb, op, 0, r, times);
}

void fake_fail_clear(fake_backend *fb)
{
    fake_fail_after(fb, "", 0, CUDA_SUCCESS, 0);
}

void fake_fail_next(fake_backend *fb, const char *op, CUresult r)
{
    fake_fail_times(fb, op, r, 1);
}

fake_backend *fake_create(size_t page, size_t dev_limit_pages)
{
    fake_backend *fb = calloc(1, sizeof *fb);
    if (!fb)
        return NULL;
    pthread_mutex_init(&fb->lock, NULL);
    pthread_cond_init(&fb->sync_release, NULL);
    fb->page = page;
    fb->dev_limit = dev_limit_pages;
    fb->fd = memfd_create("fake-vram", 0);
    if (fb->fd < 0 || ftruncate(fb->fd, (off_t)(MAX_PAGES * page)) != 0) {
        free(fb);
        return NULL;
    }
    for (uint32_t i = 0; i < MAX_PAGES; i++)
        fb->free_idx[i] = MAX_PAGES - 1 - i;
    fb->nfree_idx = MAX_PAGES;
    return fb;
}

void fake_destroy(fake_backend *fb)
{
    for (int i = 0; i < fb->nres; i++) {
        if (!fb->no_bytes)
            munmap(fb->res[i].raw, fb->res[i].raw_size);
        free(fb->res[i].mapped);
    }
    close(fb->fd);
    while (fb->events) {
        fake_event *n = fb->events->next;
        free(fb->events);
        fb->events = n;
    }
    free(fb);
}

void fake_get_stats(fake_backend *fb, fake_stats *out)
{
    pthread_mutex_lock(&fb->lock);
    *out = fb->st;
    pthread_mutex_unlock(&fb->lock);
}

const char *fake_violation(fake_backend *fb)
{
    return fb->violation;
}

void fake_on_call(fake_backend *fb, const char *op, uint64_t nth, void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&fb->lock);
    snprintf(fb->on_op, sizeof fb->on_op, "%s", op);
    fb->on_nth = nth;
    fb->on_calls = 0;
    fb->on_fn = fn;
    fb->on_arg = arg;
    pthread_mutex_unlock(&fb->lock);
}

static bool b_capturing(void *ctx)
{
    fake_backend *fb = ctx;
    pthread_mutex_lock(&fb->lock);
    bool c = fb->capturing;
    pthread_mutex_unlock(&fb->lock);
    return c;
}

void fake_no_bytes(fake_backend *fb)
{
    fb->no_bytes = true;
}

void fake_set_capturing(fake_backend *fb, bool on)
{
    pthread_mutex_lock(&fb->lock);
    fb->capturing = on;
    pthread_mutex_unlock(&fb->lock);
}

sw_backend fake_ops(fake_backend *fb)
{
    sw_backend ops = {.ctx = fb, .capturing = b_capturing};
    fb_memory_ops(&ops);
    fb_work_ops(&ops);
    fb_event_ops(&ops);
    return ops;
}
