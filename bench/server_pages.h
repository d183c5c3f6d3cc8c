#pragma once
// Whether the bench's PostgreSQL got its shared memory in huge pages. Each
// new backend (every report is one) maps the shared buffers it touches a page
// at a time: with 4 KiB pages that was most of a day's read of a 1,000-node
// month (330-567 ms in a new backend, 83-115 ms in one that had touched the
// pages), with 2 MiB pages 88-150 ms (docs/performance.md, "Huge pages").
#include <string>

namespace gpuledger::bench {

// MiB of the postmaster's (postmaster.pid in `data_dir`) mappings backed by
// huge pages (/proc/PID/smaps: KernelPageSize over 4 KiB); 0 when none or
// when the server is not running.
long server_huge_page_mib(const std::string& data_dir);
// "huge pages (N MiB)", or "4 KiB pages" and what to set to get them.
std::string describe_server_pages(const std::string& data_dir);

}  // namespace gpuledger::bench
