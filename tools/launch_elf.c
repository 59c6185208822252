#include "tools/launch_elf.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
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
static int inside(size_t len, uint64_t off, uint64_t n, uint64_t size)
{
    return off <= len && (size == 0 || n <= (len - off) / size);
}

/* The search over a mapped image of len bytes. */
static int image_defines(const unsigned char *b, size_t len, const char *symbol)
{
    const ElfW(Ehdr) *h = (const ElfW(Ehdr) *)b;
    if (len < sizeof *h || !header_ok(h) || h->e_shentsize != sizeof(ElfW(Shdr)) ||
        !inside(len, h->e_shoff, h->e_shnum, sizeof(ElfW(Shdr))))
        return 0;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(b + h->e_shoff);
    size_t want = strlen(symbol);
    for (unsigned i = 0; i < h->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_entsize != sizeof(ElfW(Sym)) ||
            sh[i].sh_link >= h->e_shnum)
            continue;
        const ElfW(Shdr) *str = &sh[sh[i].sh_link];
        uint64_t count = sh[i].sh_size / sizeof(ElfW(Sym));
        if (!inside(len, sh[i].sh_offset, count, sizeof(ElfW(Sym))) ||
            !inside(len, str->sh_offset, str->sh_size, 1))
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)(b + sh[i].sh_offset);
        const char *names = (const char *)(b + str->sh_offset);
        for (uint64_t k = 0; k < count; k++) {
            /* Defined here (an undefined entry is an import: a program
             * linked against spillway.h names it too), a function. */
            if (sym[k].st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym[k].st_info) /* ELF32_ST_TYPE is the same */ != STT_FUNC ||
                sym[k].st_name >= str->sh_size || str->sh_size - sym[k].st_name <= want)
                continue;
            if (memcmp(names + sym[k].st_name, symbol, want + 1) == 0)
                return 1;
        }
    }
    return 0;
}

int spw_elf_defines(const char *path, const char *symbol)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        close(fd);
        return 0;
    }
    size_t len = (size_t)st.st_size;
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 0;
    int found = image_defines(m, len, symbol);
    munmap(m, len);
    return found;
}
