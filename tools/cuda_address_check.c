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
 * No CUDA headers: the few prototypes are declared here and the library is
 * dlopen'ed, so this builds on a machine without the toolkit.
 *
 * Exit status: 0 every pointer found starts a probed symbol; 1 some do not;
 * 2 the library or the plan could not be used.
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

struct probed {
    char name[128];
    void *address;
};
static char g_families[MAX_FAMILIES][128];
static int g_nfamilies;
static struct probed g_probed[MAX_PROBED];
static int g_nprobed;

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
                "  --plan FILE      output of `gpuledger probe-plan --cuda-lib LIB` (families and probed symbols)\n"
                "  --library PATH   the driver library to dlopen (default libcuda.so.1)\n"
                "  --versions LIST  CUDA versions to ask for (default 11040,12000,12080,13000)\n"
                "Prints JSON; exits 0 when every pointer found starts a probed symbol, 1 when not, 2 on errors.\n");
}

int main(int argc, char **argv)
{
    const char *library = "libcuda.so.1", *plan = NULL;
    int versions[MAX_VERSIONS], nversions = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plan") && i + 1 < argc)
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
    CUresult init_rc = cu_init ? cu_init(0) : -1;
    int driver_version = 0;
    if (cu_version)
        cu_version(&driver_version);

    printf("{\"library\": ");
    json_string(self.dli_fname);
    printf(", \"api\": \"%s\", \"cu_init\": %d, \"driver_version\": %d, \"probed_symbols\": %d,\n \"queries\": [",
           get_v2 ? "cuGetProcAddress_v2" : "cuGetProcAddress", init_rc, driver_version, g_nprobed);
    int queries = 0, found = 0, probed = 0;
    for (int f = 0; f < g_nfamilies; f++) {
        for (int v = 0; v < nversions; v++) {
            for (size_t k = 0; k < sizeof k_flags / sizeof k_flags[0]; k++) {
                void *pfn = NULL;
                int status = -1;
                CUresult rc = get_v2 ? get_v2(g_families[f], &pfn, versions[v], k_flags[k].value, &status)
                                     : get_v1(g_families[f], &pfn, versions[v], k_flags[k].value);
                printf("%s\n  {\"entry\": ", queries++ ? "," : "");
                json_string(g_families[f]);
                printf(", \"cuda_version\": %d, \"flags\": \"%s\", \"result\": %d, \"symbol_status\": %d", versions[v],
                       k_flags[k].name, rc, status);
                if (rc != 0 || !pfn) {
                    printf(", \"verdict\": \"not_found\"}");
                    continue;
                }
                found++;
                struct landing l = classify(lib, self.dli_fbase, pfn);
                if (l.probed_as)
                    probed++;
                printf(", \"verdict\": \"%s\", \"symbol\": ", l.verdict);
                json_string(l.symbol);
                printf(", \"offset\": %lu, \"probed_as\": ", (unsigned long)l.offset);
                json_string(l.probed_as);
                printf("}");
            }
        }
    }
    printf("\n ],\n \"summary\": {\"queries\": %d, \"found\": %d, \"probed\": %d, \"missed\": %d}}\n", queries, found,
           probed, found - probed);
    return found == probed ? 0 : 1;
}
