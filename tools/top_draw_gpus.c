/* The list's GPU lines: spillway's sums for each GPU (limit, pool, in
 * use as a bar, spilled, pinned host memory, processes, and those not
 * under spillway), and under each its oversubscription and NVML's own
 * figures. */
#include "tools/top_draw.h"
#include "tools/top_format.h"
#include "tools/top_text.h"

#include <stdio.h>

int ui_draw_gpus(const struct ui *u, int y)
{
    const struct top_model *m = u->m;
    int barw = COLS - 58;
    if (barw > 40)
        barw = 40;
    /* Processes not under spillway on a device: how many, after spillway's
     * count; every bar makes room for the longest, so that they line up. */
    int others_w = 0;
    for (size_t i = 0; i < m->ndevices; i++) {
        char n[24];
        int w = m->devices[i].others ? snprintf(n, sizeof n, " +%u other", m->devices[i].others) : 0;
        others_w = w > others_w ? w : others_w;
    }
    barw -= others_w;
    for (size_t i = 0; i < m->ndevices && y < LINES - 4; i++, y++) {
        const struct top_device *d = &m->devices[i];
        char lim[8], pool[8], sp[8], host[8];
        top_fmt_bytes(lim, sizeof lim, d->limit);
        top_fmt_bytes(pool, sizeof pool, d->pool);
        top_fmt_bytes(sp, sizeof sp, d->spilled);
        top_fmt_bytes(host, sizeof host, d->host);
        char others[24] = "";
        if (d->others)
            snprintf(others, sizeof others, " +%u other", d->others);
        ui_put(y, 0, ui_color(u, UI_CYAN) | A_BOLD, "GPU%-2u", d->index);
        int x = 6;
        if (barw >= 8) {
            if (d->procs)
                ui_draw_bar(u, y, x, barw, d->in_use, d->limit);
            x += barw + 1;
        }
        /* A GPU with only processes not under spillway has no sums of
         * spillway's: a bar and "lim 0B" would read as a limit of nothing.
         * Its counts stay in the column of the others'. */
        enum { FIGURES = 44 }; /* "lim %-5s pool %-5s spill %-5s host %-5s " */
        if (d->procs)
            ui_put(y, x, A_NORMAL, "lim %-5s pool %-5s spill %-5s host %-5s ", lim, pool, sp, host);
        else
            ui_put(y, 6, A_DIM, "no process under spillway");
        ui_put(y, x + FIGURES, A_NORMAL, "%2up%s", d->procs, others);
        /* Oversubscribed: what the processes are told, where their bytes
         * are and how fast they move, under the figures they are told of. */
        if (d->told > d->limit && y + 1 < LINES - 4) {
            char line[256];
            top_fmt_oversub(line, sizeof line, COLS - 6, d, true);
            ui_put(++y, 6, A_NORMAL, "%s", line);
        }
        /* The device's own view under spillway's, as nvitop shows it. */
        if (d->hw && y + 1 < LINES - 4) {
            char line[256];
            top_fmt_gpu_hw(line, sizeof line, COLS - 6, d->hw);
            ui_put(++y, 6, ui_color(u, UI_CYAN), "%s", line);
        }
    }
    return y;
}
