/*
 * libgpuledger-proc-address-recorder.so: an LD_PRELOAD library that records
 * which driver entry points a CUDA runtime obtains, and where each pointer
 * lands, so a test can check them against the agent's probes on the real
 * NVIDIA runtime and driver (no GPU needed: the runtime fetches its entry
 * points before cuInit fails).
 *
 * The runtime (libcudart, shared or static) dlopens libcuda.so.1, takes a few
 * symbols with dlsym (cuGetProcAddress, cuDriverGetVersion, cuInit,
 * cuGetExportTable) and asks cuGetProcAddress for everything else. This
 * library interposes dlsym and dlvsym: a lookup of cuGetProcAddress[_v2] or
 * cuGetExportTable gets a wrapper that forwards to the real function and logs
 * each request; a request through the wrapper for cuGetProcAddress itself gets
 * the wrapper again, so no lookup escapes the log. Every pointer is classified
 * in-process with dladdr1: the object it lies in, the nearest dynamic symbol,
 * the offset from its start, and whether dlsym on that object gives exactly
 * this address for that name (the start of an exported symbol).
 *
 * Output: one JSON object per line, appended to the file named by
 * GPULEDGER_PROC_ADDRESS_LOG (nothing is written without it):
 *   {"event":"dlsym","symbol":...,"version":...,"pointer":...,"landing":{...}}
 *   {"event":"cuGetProcAddress"|"cuGetProcAddress_v2","symbol":...,"cuda_version":N,
 *    "flags":N,"result":N,"symbol_status":N|null,"pointer":...,"landing":{...}}
 *   {"event":"cuGetExportTable","uuid":"<32 hex>","result":N,"table":...}
 *
 * Known limit: a dlsym(RTLD_NEXT, ...) by the program is answered relative to
 * this library (the next object after it), and is logged with "rtld_next".
 *
 * C, no CUDA headers: the prototypes are the driver API's (cuda.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef CUresult (*get_proc_v1_fn)(const char *symbol, void **pfn, int cuda_version, uint64_t flags);
typedef CUresult (*get_proc_v2_fn)(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
                                   int *symbol_status);
typedef CUresult (*get_export_table_fn)(const void **table, const void *uuid);
/* glibc's own lookups. This library defines dlsym and dlvsym under both
 * versions a program may import them at (proc_address_recorder.map):
 * GLIBC_2.2.5, which NVIDIA's shared runtimes are linked against, and
 * GLIBC_2.34, which a program linked with the static runtime (nvcc's default)
 * on glibc 2.34 or later imports. So glibc's are found by name and version in
 * libc.so.6's own symbol table (find_glibc_lookups), never through a lookup
 * that would come back here. */
typedef void *(*dlsym_fn)(void *handle, const char *name);
typedef void *(*dlvsym_fn)(void *handle, const char *name, const char *version);
static dlsym_fn libc_dlsym;
static dlvsym_fn libc_dlvsym;

/* The real driver functions behind the wrappers (the last ones seen). */
static get_proc_v1_fn g_get_proc_v1;
static get_proc_v2_fn g_get_proc_v2;
static get_export_table_fn g_get_export_table;

/* ---- glibc's lookups, from libc.so.6's dynamic symbol table */

struct wanted {
    const char *name, *version;
    void *found;
};

/* A dynamic entry's address: glibc's loader relocates them in place on
 * x86-64; an unrelocated one is an offset from the object's base. */
static uintptr_t dyn_address(ElfW(Addr) base, ElfW(Addr) value)
{
    return value < base ? base + value : value;
}

static const char *version_name(const ElfW(Verdef) *verdef, const char *strtab, ElfW(Half) index)
{
    for (const ElfW(Verdef) *d = verdef; d; d = d->vd_next ? (const ElfW(Verdef) *)((const char *)d + d->vd_next) : NULL)
        if ((d->vd_ndx & 0x7fff) == index)
            return strtab + ((const ElfW(Verdaux) *)((const char *)d + d->vd_aux))->vda_name;
    return NULL;
}

static int find_in_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct wanted *want = data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "/libc.so.6"))
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Half) *versym = NULL;
    const ElfW(Verdef) *verdef = NULL;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t at = dyn_address(info->dlpi_addr, dyn->d_un.d_ptr);
        if (dyn->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym) *)at;
        else if (dyn->d_tag == DT_STRTAB) strtab = (const char *)at;
        else if (dyn->d_tag == DT_VERSYM) versym = (const ElfW(Half) *)at;
        else if (dyn->d_tag == DT_VERDEF) verdef = (const ElfW(Verdef) *)at;
    }
    if (!symtab || !strtab || !versym || !verdef || (const char *)symtab >= strtab)
        return 0;
    /* The symbol table ends where the string table begins (as laid out by
     * every linker glibc is built with). */
    size_t count = (size_t)(strtab - (const char *)symtab) / sizeof(ElfW(Sym));
    for (size_t i = 0; i < count; i++) {
        const ElfW(Sym) *sym = &symtab[i];
        if (sym->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym->st_info) != STT_FUNC)
            continue;
        for (struct wanted *w = want; w->name; w++) {
            if (w->found || strcmp(strtab + sym->st_name, w->name))
                continue;
            const char *version = version_name(verdef, strtab, versym[i] & 0x7fff);
            if (version && !strcmp(version, w->version))
                w->found = (void *)(info->dlpi_addr + sym->st_value);
        }
    }
    return 1;
}

__attribute__((constructor)) static void find_glibc_lookups(void)
{
    struct wanted want[] = {{"dlsym", "GLIBC_2.34", NULL}, {"dlvsym", "GLIBC_2.34", NULL}, {NULL, NULL, NULL}};
    dl_iterate_phdr(find_in_object, want);
    libc_dlsym = (dlsym_fn)want[0].found;
    libc_dlvsym = (dlvsym_fn)want[1].found;
    if (!libc_dlsym || !libc_dlvsym) {
        static const char msg[] = "gpuledger proc-address recorder: glibc's dlsym@GLIBC_2.34 was not found\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        abort();
    }
}

/* ---- output: each record is built in a buffer and written with one write(2) */

struct line {
    char text[2048];
    size_t len;
};

static void put(struct line *l, const char *s)
{
    for (; *s && l->len + 1 < sizeof l->text; s++)
        l->text[l->len++] = *s;
}

static void putf(struct line *l, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct line *l, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(l->text + l->len, sizeof l->text - l->len, format, ap);
    va_end(ap);
    if (n > 0)
        l->len += (size_t)n < sizeof l->text - l->len ? (size_t)n : sizeof l->text - l->len - 1;
}

/* A JSON string; names come from the program, so anything odd is escaped. */
static void put_string(struct line *l, const char *s)
{
    if (!s) {
        put(l, "null");
        return;
    }
    put(l, "\"");
    for (size_t i = 0; s[i] && i < 256; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            putf(l, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            putf(l, "\\u%04x", c);
        else
            putf(l, "%c", c);
    }
    put(l, "\"");
}

static void emit(struct line *l)
{
    const char *path = getenv("GPULEDGER_PROC_ADDRESS_LOG");
    if (!path || !*path)
        return;
    put(l, "}\n");
    if (l->len + 1 >= sizeof l->text) /* truncated: keep the line parseable */
        memcpy(l->text + sizeof l->text - 4, "}\n", 3), l->len = sizeof l->text - 2;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    ssize_t ignored = write(fd, l->text, l->len);
    (void)ignored;
    close(fd);
}

/* Where a pointer lands: object, nearest dynamic symbol, offset, and whether it
 * is exactly the address dlsym gives for that name in that object. */
static void put_landing(struct line *l, void *pointer)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    putf(l, ",\"pointer\":\"%p\",\"landing\":", pointer);
    if (!pointer || !dladdr1(pointer, &info, (void **)&sym, RTLD_DL_SYMENT)) {
        put(l, "null");
        return;
    }
    int exported_start = 0;
    if (info.dli_sname && info.dli_saddr == pointer) {
        void *object = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (object) {
            exported_start = libc_dlsym(object, info.dli_sname) == pointer;
            dlclose(object);
        }
    }
    put(l, "{\"object\":");
    put_string(l, info.dli_fname);
    put(l, ",\"symbol\":");
    put_string(l, info.dli_sname);
    putf(l, ",\"offset\":%lu,\"symbol_size\":%lu,\"exported_start\":%s}",
         info.dli_saddr ? (unsigned long)((uintptr_t)pointer - (uintptr_t)info.dli_saddr) : 0UL,
         sym ? (unsigned long)sym->st_size : 0UL, exported_start ? "true" : "false");
}

/* ---- the wrappers */

static CUresult wrap_get_proc_v1(const char *symbol, void **pfn, int cuda_version, uint64_t flags);
static CUresult wrap_get_proc_v2(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
                                 int *symbol_status);
static CUresult wrap_get_export_table(const void **table, const void *uuid);

/* The wrapper standing in for a real entry point this library watches (by the
 * name of the exported symbol it starts), or NULL. Remembers the real one. */
static void *wrapper_for(void *real)
{
    Dl_info info;
    if (!real || !dladdr(real, &info) || !info.dli_sname || info.dli_saddr != real)
        return NULL;
    if (!strcmp(info.dli_sname, "cuGetProcAddress")) {
        g_get_proc_v1 = (get_proc_v1_fn)real;
        return (void *)wrap_get_proc_v1;
    }
    if (!strcmp(info.dli_sname, "cuGetProcAddress_v2")) {
        g_get_proc_v2 = (get_proc_v2_fn)real;
        return (void *)wrap_get_proc_v2;
    }
    if (!strcmp(info.dli_sname, "cuGetExportTable")) {
        g_get_export_table = (get_export_table_fn)real;
        return (void *)wrap_get_export_table;
    }
    return NULL;
}

static void record_request(const char *api, const char *symbol, int cuda_version, uint64_t flags, CUresult rc,
                           const int *symbol_status, void *pointer)
{
    struct line l = {.len = 0};
    put(&l, "{\"event\":");
    put_string(&l, api);
    put(&l, ",\"symbol\":");
    put_string(&l, symbol);
    putf(&l, ",\"cuda_version\":%d,\"flags\":%llu,\"result\":%d,\"symbol_status\":", cuda_version,
         (unsigned long long)flags, rc);
    if (symbol_status)
        putf(&l, "%d", *symbol_status);
    else
        put(&l, "null");
    put_landing(&l, rc == 0 ? pointer : NULL);
    emit(&l);
}

/* After a successful request: the pointer the runtime keeps, wrapped when it is
 * one of the entry points this library watches. */
static void substitute(CUresult rc, void **pfn)
{
    if (rc != 0 || !pfn || !*pfn)
        return;
    void *wrapper = wrapper_for(*pfn);
    if (wrapper)
        *pfn = wrapper;
}

static CUresult wrap_get_proc_v1(const char *symbol, void **pfn, int cuda_version, uint64_t flags)
{
    CUresult rc = g_get_proc_v1(symbol, pfn, cuda_version, flags);
    record_request("cuGetProcAddress", symbol, cuda_version, flags, rc, NULL, pfn ? *pfn : NULL);
    substitute(rc, pfn);
    return rc;
}

static CUresult wrap_get_proc_v2(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
                                 int *symbol_status)
{
    CUresult rc = g_get_proc_v2(symbol, pfn, cuda_version, flags, symbol_status);
    record_request("cuGetProcAddress_v2", symbol, cuda_version, flags, rc, symbol_status, pfn ? *pfn : NULL);
    substitute(rc, pfn);
    return rc;
}

static CUresult wrap_get_export_table(const void **table, const void *uuid)
{
    CUresult rc = g_get_export_table(table, uuid);
    struct line l = {.len = 0};
    put(&l, "{\"event\":\"cuGetExportTable\",\"uuid\":\"");
    for (int i = 0; uuid && i < 16; i++)
        putf(&l, "%02x", ((const unsigned char *)uuid)[i]);
    putf(&l, "\",\"result\":%d,\"table\":\"%p\"", rc, rc == 0 && table ? (void *)*table : NULL);
    emit(&l);
    return rc;
}

/* ---- the interposed lookups */

static void record_lookup(const char *api, void *handle, const char *name, const char *version, void *result)
{
    struct line l = {.len = 0};
    put(&l, "{\"event\":");
    put_string(&l, api);
    put(&l, ",\"symbol\":");
    put_string(&l, name);
    put(&l, ",\"version\":");
    put_string(&l, version);
    if (handle == RTLD_NEXT)
        put(&l, ",\"rtld_next\":true");
    put_landing(&l, result);
    emit(&l);
}

/* Only the driver API's names are logged (and wrapped): "cu" then an upper-case letter. */
static int is_driver_name(const char *name)
{
    return name && name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

static void *recorded_dlsym(void *handle, const char *name)
{
    void *result = libc_dlsym(handle, name);
    if (!is_driver_name(name))
        return result;
    record_lookup("dlsym", handle, name, NULL, result);
    void *wrapper = wrapper_for(result);
    return wrapper ? wrapper : result;
}

static void *recorded_dlvsym(void *handle, const char *name, const char *version)
{
    void *result = libc_dlvsym(handle, name, version);
    if (!is_driver_name(name))
        return result;
    record_lookup("dlvsym", handle, name, version, result);
    void *wrapper = wrapper_for(result);
    return wrapper ? wrapper : result;
}

/* Both versions of each (see libc_dlsym above). The caller's RTLD_NEXT is
 * answered relative to this library (the known limit at the top). */
void *dlsym_2_2_5(void *handle, const char *name) { return recorded_dlsym(handle, name); }
void *dlsym_2_34(void *handle, const char *name) { return recorded_dlsym(handle, name); }
void *dlvsym_2_2_5(void *handle, const char *name, const char *version)
{
    return recorded_dlvsym(handle, name, version);
}
void *dlvsym_2_34(void *handle, const char *name, const char *version)
{
    return recorded_dlvsym(handle, name, version);
}
__asm__(".symver dlsym_2_2_5,dlsym@GLIBC_2.2.5");
__asm__(".symver dlsym_2_34,dlsym@@GLIBC_2.34");
__asm__(".symver dlvsym_2_2_5,dlvsym@GLIBC_2.2.5");
__asm__(".symver dlvsym_2_34,dlvsym@@GLIBC_2.34");
