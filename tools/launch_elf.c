#include "tools/launch_elf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The ELF identity of this build, which the library shares. */
#if __SIZEOF_POINTER__ == 8
#define SPW_ELF_CLASS ELFCLASS64
#else
#define SPW_ELF_CLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SPW_ELF_DATA ELFDATA2LSB
#else
#define SPW_ELF_DATA ELFDATA2MSB
#endif
#if defined(__x86_64__)
#define SPW_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define SPW_ELF_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define SPW_ELF_MACHINE EM_PPC64
#else
#define SPW_ELF_MACHINE EM_NONE /* not checked: the class, order and type still are */
#endif

static int header_ok(const ElfW(Ehdr) *h)
{
    return memcmp(h->e_ident, ELFMAG, SELFMAG) == 0 && h->e_ident[EI_CLASS] == SPW_ELF_CLASS &&
           h->e_ident[EI_DATA] == SPW_ELF_DATA &&
           (SPW_ELF_MACHINE == EM_NONE || h->e_machine == SPW_ELF_MACHINE) && h->e_type == ET_DYN;
}

/* The loader skips any other preload with an error line ("cannot be
 * preloaded ... ignored") and runs the program without spillway: unlimited. */
int spw_elf_loadable(const char *path)
{
    ElfW(Ehdr) h;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, &h, sizeof h) == (ssize_t)sizeof h;
    close(fd);
    return ok && header_ok(&h);
}

/* Whether [off, off + n * size) lies inside a file of len bytes. */
static int inside(uint64_t len, uint64_t off, uint64_t n, uint64_t size)
{
    return off <= len && (size == 0 || n <= (len - off) / size);
}

/* The library being searched: read with pread into buffers of our own,
 * never mapped, so that a file truncated meanwhile (a reinstall) makes a
 * read come back short, not the launcher die of SIGBUS. */
struct elf_file {
    int fd;
    uint64_t size; /* when it was opened (fstat) */
    char *why;
    size_t whylen;
};

static void say(struct elf_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct elf_file *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->why, f->whylen, fmt, ap);
    va_end(ap);
}

/* 0 when n items of size bytes at off lie inside the file as it was when
 * opened; else -1 with why (what: what they are, for the message): the
 * file says they are where it has no bytes. */
static int within(struct elf_file *f, uint64_t off, uint64_t n, size_t size, const char *what)
{
    if (inside(f->size, off, n, size))
        return 0;
    uint64_t end = n <= (UINT64_MAX - off) / (size ? size : 1) ? off + n * size : UINT64_MAX;
    say(f, "the file ends at byte %llu, before the end of its %s (byte %llu): truncated or corrupt",
        (unsigned long long)f->size, what, (unsigned long long)end);
    return -1;
}

/* Reads n items of size bytes at off into buf. 0, or -1 with why: they lie
 * past the end, or the file ended (or failed) while they were read. */
static int read_at(struct elf_file *f, void *buf, uint64_t off, uint64_t n, size_t size, const char *what)
{
    if (within(f, off, n, size, what) != 0)
        return -1;
    size_t len = (size_t)(n * size), got = 0;
    while (got < len) {
        ssize_t r = pread(f->fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            say(f, "cannot read its %s: %s", what, strerror(errno));
            return -1;
        }
        if (r == 0) {
            off_t now = lseek(f->fd, 0, SEEK_END);
            say(f, "reading its %s: the file has %lld bytes now, %llu when opened: truncated meanwhile "
                   "(being reinstalled?)",
                what, (long long)now, (unsigned long long)f->size);
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

/* Whether the dynamic symbol table described by section sh (and its string
 * table, section str) defines the function symbol: 1, 0, or -1 with why.
 * Symbols are read a batch at a time, a candidate's name alone. */
static int table_defines(struct elf_file *f, const ElfW(Shdr) *sh, const ElfW(Shdr) *str, const char *symbol)
{
    uint64_t count = sh->sh_size / sizeof(ElfW(Sym));
    size_t want = strlen(symbol);
    char name[256];
    if (want + 1 > sizeof name) {
        say(f, "cannot look for a symbol name of %zu bytes", want);
        return -1;
    }
    /* Both tables where the file has them, before any is read: one that
     * lies past the end is a file cut short, not a library without the
     * symbol. */
    if (within(f, sh->sh_offset, count, sizeof(ElfW(Sym)), "dynamic symbols") != 0 ||
        within(f, str->sh_offset, str->sh_size, 1, "dynamic symbols' names") != 0)
        return -1;
    ElfW(Sym) batch[128];
    for (uint64_t k = 0; k < count;) {
        uint64_t n = count - k < 128 ? count - k : 128;
        if (read_at(f, batch, sh->sh_offset + k * sizeof(ElfW(Sym)), n, sizeof(ElfW(Sym)), "dynamic symbols") != 0)
            return -1;
        for (uint64_t i = 0; i < n; i++) {
            const ElfW(Sym) *y = &batch[i];
            /* Defined here (an undefined entry is an import: a program
             * linked against spillway.h names it too), a function. */
            if (y->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(y->st_info) /* ELF32_ST_TYPE is the same */ != STT_FUNC ||
                y->st_name >= str->sh_size || str->sh_size - y->st_name <= want)
                continue;
            if (read_at(f, name, str->sh_offset + y->st_name, want + 1, 1, "dynamic symbols' names") != 0)
                return -1;
            if (memcmp(name, symbol, want + 1) == 0)
                return 1;
        }
        k += n;
    }
    return 0;
}

/* The search, a section header at a time. */
static int file_defines(struct elf_file *f, const char *symbol)
{
    ElfW(Ehdr) h;
    if (read_at(f, &h, 0, 1, sizeof h, "ELF header") != 0)
        return -1;
    if (!header_ok(&h)) {
        say(f, "not a shared library for this machine (any more: replaced while read?)");
        return -1;
    }
    if (h.e_shnum == 0)
        return 0; /* no section headers (stripped of them): no .dynsym to look in */
    if (h.e_shentsize != sizeof(ElfW(Shdr))) {
        say(f, "section headers of %u bytes, not %zu: corrupt", (unsigned)h.e_shentsize, sizeof(ElfW(Shdr)));
        return -1;
    }
    if (within(f, h.e_shoff, h.e_shnum, sizeof(ElfW(Shdr)), "section headers") != 0)
        return -1;
    for (unsigned i = 0; i < h.e_shnum; i++) {
        ElfW(Shdr) sh, str;
        if (read_at(f, &sh, h.e_shoff + (uint64_t)i * sizeof sh, 1, sizeof sh, "section headers") != 0)
            return -1;
        if (sh.sh_type != SHT_DYNSYM)
            continue;
        if (sh.sh_entsize != sizeof(ElfW(Sym)) || sh.sh_link == 0 || sh.sh_link >= h.e_shnum) {
            say(f, "its dynamic symbol table (section %u) has entries of %llu bytes and names in section %u: "
                   "corrupt", i, (unsigned long long)sh.sh_entsize, (unsigned)sh.sh_link);
            return -1;
        }
        if (read_at(f, &str, h.e_shoff + (uint64_t)sh.sh_link * sizeof str, 1, sizeof str, "section headers") != 0)
            return -1;
        int found = table_defines(f, &sh, &str, symbol);
        if (found != 0)
            return found;
    }
    return 0;
}

int spw_elf_defines(const char *path, const char *symbol, char *why, size_t whylen)
{
    struct stat st;
    struct elf_file f = {.fd = open(path, O_RDONLY | O_CLOEXEC), .why = why, .whylen = whylen};
    if (whylen)
        why[0] = '\0';
    if (f.fd < 0) {
        say(&f, "cannot open it: %s", strerror(errno));
        return -1;
    }
    int found;
    if (fstat(f.fd, &st) != 0) {
        say(&f, "cannot stat it: %s", strerror(errno));
        found = -1;
    } else if (!S_ISREG(st.st_mode)) {
        say(&f, "not a regular file");
        found = -1;
    } else {
        f.size = (uint64_t)st.st_size;
        found = file_defines(&f, symbol);
    }
    close(f.fd);
    return found;
}
