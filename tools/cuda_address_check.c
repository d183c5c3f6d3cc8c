/*
 * gpuledger-cuda-address-check: does every pointer the CUDA driver hands out
 * through cuGetProcAddress start an exported symbol that gpuledger probes?
 *
 * The CUDA runtime (libcudart, static or shared) reaches the driver through
 * cuGetProcAddress, not through the dynamic linker. gpuledger's uprobes sit on
 * the exported symbols of libcuda.so.1, so a returned pointer that is not the
 * start of a probed symbol is a call path the agent cannot see. This tool asks
 * the driver for every entry-point family the agent probes (the plan printed by
 * `gpuledger probe-plan --cuda-lib LIB`), with the default, legacy-stream and
 * per-thread-stream flags at several CUDA versions, and classifies each pointer
 * with dlsym and dladdr1 on the same library. It prints JSON on stdout.
 *
 * With --all-exports it asks instead for every entry point the library
 * exports: each dynamic function symbol named cu<Upper>..., reduced to its base
 * name (the _vN, _ptds and _ptsz suffixes stripped; a runtime asks by base name
 * and the flags and version pick the form), deduplicated. There every pointer
 * found must start an exported symbol, and every one asked for under the name
 * of a planned (billable) family must start a probed one; other exports may be
 * unprobed.
 *
 * No CUDA headers: the few prototypes are declared here and the library is
 * dlopen'ed, so this builds on a machine without the toolkit.
 *
 * Exit status: 0 every pointer found starts a probed symbol (--all-exports: an
 * exported one, and a probed one for a planned family); 1 some do not; 2 the
 * library or the plan could not be used.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef CUresult (*cu_init_fn)(unsigned flags);
typedef CUresult (*cu_driver_version_fn)(int *version);
typedef CUresult (*cu_get_proc_v2_fn)(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
                                      int *symbol_status);
typedef CUresult (*cu_get_proc_v1_fn)(const char *symbol, void **pfn, int cuda_version, uint64_t flags);

/* CUdriverProcAddress_flags, as cuda.h (11.3+) defines them. */
static const struct {
    const char *name;
    uint64_t value;
} k_flags[] = {
    {"default", 0},                   /* CU_GET_PROC_ADDRESS_DEFAULT */
    {"legacy_stream", 1},             /* CU_GET_PROC_ADDRESS_LEGACY_STREAM */
    {"per_thread_default_stream", 2}, /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
};
static const int k_default_versions[] = {11040, 12000, 12080, 13000};

#define MAX_FAMILIES 256
#define MAX_PROBED 1024
#define MAX_VERSIONS 16
#define MAX_EXPORTS 8192

struct probed {
    char name[128];
    void *address;
};
static char g_families[MAX_FAMILIES][128];
static int g_nfamilies;
static struct probed g_probed[MAX_PROBED];
static int g_nprobed;
/* --all-exports: the base names of the library's exported entry points. */
static char g_exports[MAX_EXPORTS][128];
static int g_nexports, g_nexported_symbols;

static void json_string(const char *s)
{
    if (!s) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            printf("\\u%04x", c); /* symbol names are ASCII; anything else is shown, not trusted */
        else
            putchar(c);
    }
    putchar('"');
}

static int read_plan(const char *path, void *lib)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        char *save = NULL;
        char *word = strtok_r(line, " \t\r\n", &save);
        if (!word)
            continue;
        if (g_nfamilies < MAX_FAMILIES)
            snprintf(g_families[g_nfamilies++], sizeof g_families[0], "%s", word);
        while ((word = strtok_r(NULL, " \t\r\n", &save)) && g_nprobed < MAX_PROBED) {
            snprintf(g_probed[g_nprobed].name, sizeof g_probed[0].name, "%s", word);
            g_probed[g_nprobed++].address = dlsym(lib, word);
        }
    }
    fclose(f);
    return 0;
}

static const char *probed_name_at(void *address)
{
    for (int i = 0; i < g_nprobed; i++)
        if (g_probed[i].address && g_probed[i].address == address)
            return g_probed[i].name;
    return NULL;
}

static int is_family(const char *name)
{
    for (int i = 0; i < g_nfamilies; i++)
        if (!strcmp(g_families[i], name))
            return 1;
    return 0;
}

/* cuFoo_v2_ptsz -> cuFoo: the rule of the agent's entry-point forms
 * (base ( "_v" digits )? ( "_ptds" | "_ptsz" )?). */
static void base_name(const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s", name);
    size_t n = strlen(out);
    if (n > 5 && (!strcmp(out + n - 5, "_ptds") || !strcmp(out + n - 5, "_ptsz")))
        out[n -= 5] = 0;
    size_t d = n;
    while (d > 0 && out[d - 1] >= '0' && out[d - 1] <= '9')
        d--;
    if (d < n && d >= 2 && out[d - 1] == 'v' && out[d - 2] == '_')
        out[d - 2] = 0;
}

static int compare_names(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* Symbols in .dynsym: from DT_HASH's chain count, or the end of DT_GNU_HASH's last chain. */
static size_t dynsym_count(const ElfW(Word) *hash, const uint32_t *gnu_hash)
{
    if (hash)
        return hash[1];
    if (!gnu_hash)
        return 0;
    uint32_t nbuckets = gnu_hash[0], symoffset = gnu_hash[1], bloom_size = gnu_hash[2];
    const uint32_t *buckets = gnu_hash + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t i = 0; i < nbuckets; i++)
        if (buckets[i] > last)
            last = buckets[i];
    if (last < symoffset)
        return symoffset;
    while (!(chain[last - symoffset] & 1))
        last++;
    return last + 1;
}

/* The base names of the driver API functions the loaded library exports, sorted, unique. */
static int read_exports(void *lib)
{
    struct link_map *map = NULL;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_ld)
        return -1;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Word) *hash = NULL;
    const uint32_t *gnu_hash = NULL;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++) {
        /* ld.so relocates these in place on most targets; not on all. */
        uintptr_t p = d->d_un.d_ptr < map->l_addr ? d->d_un.d_ptr + map->l_addr : d->d_un.d_ptr;
        if (d->d_tag == DT_SYMTAB)
            symtab = (const ElfW(Sym) *)p;
        else if (d->d_tag == DT_STRTAB)
            strtab = (const char *)p;
        else if (d->d_tag == DT_HASH)
            hash = (const ElfW(Word) *)p;
        else if (d->d_tag == DT_GNU_HASH)
            gnu_hash = (const uint32_t *)p;
    }
    size_t count = dynsym_count(hash, gnu_hash);
    if (!symtab || !strtab || count == 0)
        return -1;
    for (size_t i = 0; i < count && g_nexports < MAX_EXPORTS; i++) {
        const ElfW(Sym) *sym = &symtab[i];
        int type = ELF64_ST_TYPE(sym->st_info), bind = ELF64_ST_BIND(sym->st_info);
        const char *name = strtab + sym->st_name;
        if (sym->st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC) ||
            (bind != STB_GLOBAL && bind != STB_WEAK) || strncmp(name, "cu", 2) || name[2] < 'A' || name[2] > 'Z')
            continue;
        g_nexported_symbols++;
        base_name(name, g_exports[g_nexports], sizeof g_exports[0]);
        g_nexports++;
    }
    qsort(g_exports, (size_t)g_nexports, sizeof g_exports[0], compare_names);
    int unique = 0;
    for (int i = 0; i < g_nexports; i++)
        if (unique == 0 || strcmp(g_exports[i], g_exports[unique - 1]))
            memmove(g_exports[unique++], g_exports[i], sizeof g_exports[0]);
    g_nexports = unique;
    return 0;
}

/* Where a returned pointer lands, relative to the library's exported symbols. */
struct landing {
    const char *verdict; /* probed, exported_unprobed, inside_symbol, hidden, other_object */
    const char *symbol;  /* the nearest exported symbol at or below it, if any */
    uintptr_t offset;    /* from that symbol's start */
    const char *probed_as;
};

static struct landing classify(void *lib, void *lib_base, void *pfn)
{
    struct landing l = {"hidden", NULL, 0, NULL};
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1(pfn, &info, (void **)&sym, RTLD_DL_SYMENT)) {
        l.verdict = "other_object";
        return l;
    }
    if (info.dli_fbase != lib_base) {
        l.verdict = "other_object";
        l.symbol = info.dli_sname;
        return l;
    }
    l.symbol = info.dli_sname;
    if (info.dli_saddr)
        l.offset = (uintptr_t)pfn - (uintptr_t)info.dli_saddr;
    if (info.dli_sname && info.dli_saddr == pfn && dlsym(lib, info.dli_sname) == pfn) {
        l.probed_as = probed_name_at(pfn);
        l.verdict = l.probed_as ? "probed" : "exported_unprobed";
    } else if (info.dli_sname && sym && l.offset < sym->st_size) {
        l.verdict = "inside_symbol";
    }
    return l;
}

static int parse_versions(const char *arg, int *out)
{
    int n = 0;
    char *copy = strdup(arg), *save = NULL;
    for (char *w = strtok_r(copy, ",", &save); w && n < MAX_VERSIONS; w = strtok_r(NULL, ",", &save))
        out[n++] = atoi(w);
    free(copy);
    return n;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: gpuledger-cuda-address-check --plan FILE [--library PATH] [--versions 11040,12000,...]\n"
                "                                    [--all-exports]\n"
                "  --plan FILE      output of `gpuledger probe-plan --cuda-lib LIB` (families and probed symbols)\n"
                "  --library PATH   the driver library to dlopen (default libcuda.so.1)\n"
                "  --versions LIST  CUDA versions to ask for (default 11040,12000,12080,13000)\n"
                "  --all-exports    ask for every entry point the library exports (by base name), not the plan's\n"
                "                   families; planned families must land on probed symbols, the rest on exported ones\n"
                "Prints JSON; exits 0 when every pointer found starts a probed symbol (--all-exports: as said),\n"
                "1 when not, 2 on errors.\n");
}

int main(int argc, char **argv)
{
    const char *library = "libcuda.so.1", *plan = NULL;
    int versions[MAX_VERSIONS], nversions = 0, all_exports = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--all-exports"))
            all_exports = 1;
        else if (!strcmp(argv[i], "--plan") && i + 1 < argc)
            plan = argv[++i];
        else if (!strcmp(argv[i], "--library") && i + 1 < argc)
            library = argv[++i];
        else if (!strcmp(argv[i], "--versions") && i + 1 < argc)
            nversions = parse_versions(argv[++i], versions);
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!plan) {
        usage(stderr);
        return 2;
    }
    if (nversions == 0) {
        nversions = (int)(sizeof k_default_versions / sizeof k_default_versions[0]);
        memcpy(versions, k_default_versions, sizeof k_default_versions);
    }

    void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("{\"library\": ");
        json_string(library);
        printf(", \"error\": ");
        json_string(dlerror());
        printf("}\n");
        return 2;
    }
    cu_init_fn cu_init = (cu_init_fn)dlsym(lib, "cuInit");
    cu_driver_version_fn cu_version = (cu_driver_version_fn)dlsym(lib, "cuDriverGetVersion");
    cu_get_proc_v2_fn get_v2 = (cu_get_proc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
    cu_get_proc_v1_fn get_v1 = (cu_get_proc_v1_fn)dlsym(lib, "cuGetProcAddress");
    Dl_info self;
    void *anchor = cu_init ? (void *)cu_init : (void *)get_v1;
    if (!anchor || !(get_v2 || get_v1) || !dladdr(anchor, &self) || read_plan(plan, lib) != 0) {
        printf("{\"library\": ");
        json_string(library);
        printf(", \"error\": \"no cuInit/cuGetProcAddress in the library, or the plan is unreadable\"}\n");
        return 2;
    }
    if (all_exports && read_exports(lib) != 0) {
        printf("{\"library\": ");
        json_string(library);
        printf(", \"error\": \"cannot read the library's dynamic symbols\"}\n");
        return 2;
    }
    CUresult init_rc = cu_init ? cu_init(0) : -1;
    int driver_version = 0;
    if (cu_version)
        cu_version(&driver_version);

    char(*names)[128] = all_exports ? g_exports : g_families;
    int nnames = all_exports ? g_nexports : g_nfamilies;
    printf("{\"library\": ");
    json_string(self.dli_fname);
    printf(", \"mode\": \"%s\", \"api\": \"%s\", \"cu_init\": %d, \"driver_version\": %d, \"probed_symbols\": %d,",
           all_exports ? "all_exports" : "plan", get_v2 ? "cuGetProcAddress_v2" : "cuGetProcAddress", init_rc,
           driver_version, g_nprobed);
    if (all_exports)
        printf(" \"exported_symbols\": %d, \"base_names\": %d,", g_nexported_symbols, g_nexports);
    printf("\n \"queries\": [");
    int queries = 0, found = 0, probed = 0, exported = 0, billable_found = 0, billable_probed = 0;
    for (int f = 0; f < nnames; f++) {
        int billable = is_family(names[f]);
        for (int v = 0; v < nversions; v++) {
            for (size_t k = 0; k < sizeof k_flags / sizeof k_flags[0]; k++) {
                void *pfn = NULL;
                int status = -1;
                CUresult rc = get_v2 ? get_v2(names[f], &pfn, versions[v], k_flags[k].value, &status)
                                     : get_v1(names[f], &pfn, versions[v], k_flags[k].value);
                printf("%s\n  {\"entry\": ", queries++ ? "," : "");
                json_string(names[f]);
                printf(", \"cuda_version\": %d, \"flags\": \"%s\", \"result\": %d, \"symbol_status\": %d", versions[v],
                       k_flags[k].name, rc, status);
                if (all_exports)
                    printf(", \"billable\": %s", billable ? "true" : "false");
                if (rc != 0 || !pfn) {
                    printf(", \"verdict\": \"not_found\"}");
                    continue;
                }
                found++;
                struct landing l = classify(lib, self.dli_fbase, pfn);
                if (l.probed_as)
                    probed++;
                if (!strcmp(l.verdict, "probed") || !strcmp(l.verdict, "exported_unprobed"))
                    exported++;
                if (billable) {
                    billable_found++;
                    billable_probed += l.probed_as != NULL;
                }
                printf(", \"verdict\": \"%s\", \"symbol\": ", l.verdict);
                json_string(l.symbol);
                printf(", \"offset\": %lu, \"probed_as\": ", (unsigned long)l.offset);
                json_string(l.probed_as);
                printf("}");
            }
        }
    }
    if (!all_exports) {
        printf("\n ],\n \"summary\": {\"queries\": %d, \"found\": %d, \"probed\": %d, \"missed\": %d}}\n", queries,
               found, probed, found - probed);
        return found == probed ? 0 : 1;
    }
    printf("\n ],\n \"summary\": {\"queries\": %d, \"found\": %d, \"exported\": %d, \"not_exported\": %d, "
           "\"probed\": %d, \"billable_found\": %d, \"billable_probed\": %d, \"billable_missed\": %d}}\n",
           queries, found, exported, found - exported, probed, billable_found, billable_probed,
           billable_found - billable_probed);
    return exported == found && billable_found == billable_probed ? 0 : 1;
}
