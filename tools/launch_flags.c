/* The table of launch_flags.def. A flag that sets a variable takes that
 * variable's default and doc from shim/options.def through the X-macro,
 * so the help cannot say something else than `spillway options`; naming
 * a variable the table lacks does not compile. */
#include "tools/launch_flags.h"

#include <string.h>

/* One constant per option of options.def, for the flags to name. */
#define SPW_OPTION(name, field, type, def, doc)     \
    static const char default_##name[] = def;       \
    static const char doc_##name[] = doc;
#include "shim/options.def"
#undef SPW_OPTION

const struct spw_run_flag spw_run_flags[SPW_RUN_FLAG_COUNT] = {
#define SPW_RUN_SET(l, s, a, v, val)                                                     \
    {.name = l, .short_name = s, .arg = a, .var = #v, .value = val,                      \
     .var_default = default_##v, .doc = doc_##v, .own = SPW_RUN_SETS_VARIABLE},
#define SPW_RUN_OWN(l, s, a, id, text)                                                   \
    {.name = l, .short_name = s, .arg = a, .doc = text, .own = SPW_RUN_##id},
#include "tools/launch_flags.def"
#undef SPW_RUN_SET
#undef SPW_RUN_OWN
};

int spw_run_flag_val(size_t i)
{
    return spw_run_flags[i].short_name ? spw_run_flags[i].short_name : 0x100 + (int)i;
}

int spw_run_flag_find(int val)
{
    for (size_t i = 0; i < SPW_RUN_FLAG_COUNT; i++)
        if (spw_run_flag_val(i) == val)
            return (int)i;
    return -1;
}

/* Writes text from column col on, breaking lines at spaces before width;
 * continuation lines start at column indent. */
static void wrap(FILE *f, const char *text, int col, int indent, int width)
{
    while (*text) {
        int room = width - col;
        int n = (int)strlen(text);
        if (n > room) {
            int cut = room;
            while (cut > 0 && text[cut] != ' ')
                cut--;
            if (cut == 0) /* a word longer than the line: break after it */
                cut = (int)strcspn(text, " ");
            n = cut;
        }
        fprintf(f, "%.*s\n", n, text);
        text += n;
        while (*text == ' ')
            text++;
        if (*text)
            fprintf(f, "%*s", indent, "");
        col = indent;
    }
}

void spw_run_flag_help(FILE *f, size_t i, int width)
{
    enum { DOC_COL = 25 }; /* where the text starts, as in most GNU help */
    const struct spw_run_flag *fl = &spw_run_flags[i];
    char lead[64], text[1024];
    int n = fl->short_name ? snprintf(lead, sizeof lead, "  -%c, --%s", fl->short_name, fl->name)
                           : snprintf(lead, sizeof lead, "      --%s", fl->name);
    if (fl->arg)
        snprintf(lead + n, sizeof lead - (size_t)n, " %s", fl->arg);
    if (!fl->var)
        snprintf(text, sizeof text, "%s", fl->doc);
    else if (!fl->value)
        snprintf(text, sizeof text, "%s=%s: %s", fl->var, fl->arg, fl->doc);
    else
        snprintf(text, sizeof text, "%s=%s (the default is %s; see the variables below)",
                 fl->var, fl->value, *fl->var_default ? fl->var_default : "none");
    /* A lead too long for its column puts the text on the next line. */
    if ((int)strlen(lead) >= DOC_COL - 1)
        fprintf(f, "%s\n%*s", lead, DOC_COL, "");
    else
        fprintf(f, "%-*s", DOC_COL, lead);
    wrap(f, text, DOC_COL, DOC_COL, width);
}
