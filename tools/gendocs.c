/* gendocs: the documentation parts that shim/options.def and
 * tools/launch_flags.def generate, written to stdout (scripts/gen-docs.sh
 * splices them between markers; `make check-docs` fails on drift):
 *   gendocs readme-options   the README's table of variables (markdown)
 *   gendocs man-options      spillway(1)'s entries for run's flags (roff)
 *   gendocs man-environment  spillway(1)'s entries for the variables (roff)
 *   gendocs man-top-environment
 *                            spillway-top(1)'s entries for the variables the
 *                            monitor reads too (roff)
 * Built from the same X-macros as the parser, `spillway options` and the
 * launcher's help, so that every doc is the same bytes everywhere. */
#include "tools/launch_flags.h"

#include <stdio.h>
#include <string.h>

struct option_row {
    const char *name, *def, *doc;
};

static const struct option_row options[] = {
#define SPW_OPTION(name, field, type, def, doc) {#name, def, doc},
#include "shim/options.def"
#undef SPW_OPTION
};
#define OPTION_COUNT (sizeof options / sizeof options[0])

/* A cell of a markdown table: '|' would end it. */
static void put_markdown(const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', stdout);
        fputc(*s, stdout);
    }
}

/* The README's table; the default is shown as `spillway options` shows it
 * ("(none)" for an empty one), in code type when there is one. */
static void readme_options(void)
{
    printf("| variable | default | meaning |\n|---|---|---|\n");
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        printf("| `%s` | ", options[i].name);
        if (*options[i].def)
            printf("`%s`", options[i].def);
        else
            printf("(none)");
        printf(" | ");
        put_markdown(options[i].doc);
        printf(" |\n");
    }
}

/* Text for roff, within one line: backslashes escaped, `code` in bold,
 * and a leading '.' or '\'' (a request) defused. */
static void put_roff(const char *s)
{
    int bold = 0;
    if (*s == '.' || *s == '\'')
        fputs("\\&", stdout);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", stdout);
        else if (*s == '`')
            fputs((bold = !bold) ? "\\fB" : "\\fR", stdout);
        else
            fputc(*s, stdout);
    }
    if (bold)
        fputs("\\fR", stdout);
}

/* A flag's or option's name in roff: '-' as a minus sign, so that it can
 * be searched for and copied. */
static void put_roff_name(const char *s)
{
    for (; *s; s++) {
        if (*s == '-')
            fputs("\\-", stdout);
        else
            fputc(*s, stdout);
    }
}

static void man_flag_head(const struct spw_run_flag *fl)
{
    printf(".TP\n");
    if (fl->short_name)
        printf("\\fB\\-%c\\fR, ", fl->short_name);
    printf("\\fB\\-\\-");
    put_roff_name(fl->name);
    printf("\\fR");
    if (fl->arg)
        printf(" \\fI%s\\fR", fl->arg);
    printf("\n");
}

/* A doc as a sentence of the man page: its first letter capitalized. */
static void put_roff_sentence(const char *doc)
{
    char sentence[1024];
    snprintf(sentence, sizeof sentence, "%s", doc);
    if (sentence[0] >= 'a' && sentence[0] <= 'z')
        sentence[0] = (char)(sentence[0] - 'a' + 'A');
    put_roff(sentence);
    printf(".\n");
}

/* What a flag does: an own flag's doc; else the variable it sets, with
 * that variable's doc when the flag's argument is the value (a flag that
 * turns something off points to the variable's entry instead). */
static void man_flag_text(const struct spw_run_flag *fl)
{
    if (!fl->var) {
        put_roff_sentence(fl->doc);
    } else if (!fl->value) {
        printf("Sets \\fB%s\\fR=\\fI%s\\fR: ", fl->var, fl->arg);
        put_roff(fl->doc);
        printf(".\n");
    } else {
        printf("Sets \\fB%s\\fR=%s (the default is %s; see \\fBENVIRONMENT\\fR).\n", fl->var,
               fl->value, *fl->var_default ? fl->var_default : "none");
    }
}

static void man_options(void)
{
    for (size_t i = 0; i < SPW_RUN_FLAG_COUNT; i++) {
        man_flag_head(&spw_run_flags[i]);
        man_flag_text(&spw_run_flags[i]);
    }
}

static void man_variable(const struct option_row *o)
{
    printf(".TP\n\\fB%s\\fR (default: ", o->name);
    if (*o->def)
        put_roff(o->def);
    else
        printf("none");
    printf(")\n");
    put_roff_sentence(o->doc);
}

static void man_environment(void)
{
    for (size_t i = 0; i < OPTION_COUNT; i++)
        man_variable(&options[i]);
}

/* The variables spillway-top reads as well as the library: where the
 * segments are. */
static void man_top_environment(void)
{
    for (size_t i = 0; i < OPTION_COUNT; i++)
        if (strcmp(options[i].name, "SPILLWAY_STATS_DIR") == 0)
            man_variable(&options[i]);
}

int main(int argc, char **argv)
{
    const char *what = argc == 2 ? argv[1] : "";
    if (strcmp(what, "readme-options") == 0)
        readme_options();
    else if (strcmp(what, "man-options") == 0)
        man_options();
    else if (strcmp(what, "man-environment") == 0)
        man_environment();
    else if (strcmp(what, "man-top-environment") == 0)
        man_top_environment();
    else {
        fprintf(stderr, "usage: gendocs readme-options|man-options|man-environment|"
                        "man-top-environment\n");
        return 2;
    }
    return ferror(stdout) ? 1 : 0;
}
